"""adapters/seeweb.py on the product page (the bundled 2026-09-15 excerpt, what a replay without
the token reads) and on `GET /ecs/v2/plans` bodies: the bundled one is the Seeweb SDK's recorded
listing (2025-02-20), the fixture gpuhunt's 2026 test payload (see the PROVENANCE files)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from invariants import FIXTURES, OfferInvariants, load_capture, with_replaced

from gpuscout.adapters import seeweb
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR, get_adapter
from gpuscout.core.catalog import Resolved, Unknown, load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import Availability, ParsedOffer, PriceKind, PricingModel
from gpuscout.pipeline.refresh import adapter_credentials

SNAP = SNAPSHOTS_DIR / "seeweb"
FIX = FIXTURES / "seeweb"
ECSAPI = "ecsapi_store_plans_fetch_response_59a3550.json"
GPUHUNT = "gpuhunt_fixture_plans_f20008d.json"
URL = "https://api.seeweb.it/ecs/v2/plans"
PAGE = "cloud_server_gpu_5ff190e_2026-09-15.html"
PAGE_URL = "https://www.seeweb.it/en/products/cloud-server-gpu"
TERMS = ("3 months", "6 months", "12 months")
GRAYSKULL = "Tenstorrent Grayskull e75"
GPU_IDS = {
    "RTX 6000": "quadro-rtx-6000-24gb", "RTX A6000": "rtx-a6000-48gb",
    "A100 80GB": "a100-sxm-80gb", "L4": "l4-24gb", "L40s": "l40s-48gb",
    "H100 80 GB": "h100-sxm-80gb", "AMD MI300X": "mi300x-192gb",
    "L40s 48GB": "l40s-48gb", "MI300X": "mi300x-192gb",
    "NVIDIA H200 SXM": "h200-sxm-141gb", "NVIDIA H100 SXM": "h100-sxm-80gb",
    "NVIDIA A100 SXM": "a100-sxm-80gb",
}


def _capture(folder: Any = SNAP, file: str = ECSAPI) -> Capture:
    return load_capture(folder, file)


def _doc() -> dict[str, Any]:
    return json.loads((SNAP / ECSAPI).read_bytes())


def _with(doc: Any) -> Capture:
    return _capture().model_copy(update={"body": json.dumps(doc).encode()})


def _plan(name: str) -> dict[str, Any]:
    return next(p for p in _doc()["plans"] if p["name"] == name)


def _by_key(offers: list[ParsedOffer]) -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in offers}


class TestSeewebInvariants(OfferInvariants):
    NAME = "seeweb"
    EXPECTED_UNKNOWN = frozenset({GRAYSKULL})

    @pytest.fixture(params=[(SNAP, PAGE), (SNAP, ECSAPI), (FIX, GPUHUNT)],
                    ids=[PAGE, ECSAPI, GPUHUNT])
    def offers(self, request: pytest.FixtureRequest) -> list[ParsedOffer]:
        return seeweb.parse([load_capture(*request.param)]).offers


def test_bundled_listing_counts() -> None:
    result = seeweb.parse([_capture()])
    # 34 plans: 16 CPU plans skipped, 18 accelerator plans, each in it-fr2 only.
    assert (len(result.offers), len(result.rejects), result.complete) == (18, 0, True)
    assert {o.currency for o in result.offers} == {"EUR"}
    assert {o.price_kind for o in result.offers} == {PriceKind.LISTED}
    assert {o.pricing_model for o in result.offers} == {PricingModel.ON_DEMAND}
    assert {o.region for o in result.offers} == {"it-fr2"}
    assert {o.availability for o in result.offers} == {Availability.UNKNOWN}
    assert all(o.source_url == URL for o in result.offers)
    assert all(o.observed_at == datetime(2025, 2, 20, 16, 3, 24, tzinfo=UTC)
               for o in result.offers)


@pytest.mark.parametrize(("key", "label", "count", "vram", "price", "vcpus", "ram", "disk"), [
    ("ECS1GPU7|it-fr2|on_demand", "L40s", 1, None, 0.85, 8, 32.0, 500.0),
    ("ECS3GPU3|it-fr2|on_demand", "A100 80GB", 4, 80.0, 7.56, 64, 480.0, 4000.0),
    ("ECS1GPU8|it-fr2|on_demand", "H100 80 GB", 4, 80.0, 8.4, 64, 1024.0, 6000.0),
    ("ECS8GPU9|it-fr2|on_demand", "AMD MI300X", 8, None, 18.8, 255, 2048.0, 16000.0),
    ("ECS4GPU6|it-fr2|on_demand", "L4", 8, None, 3.04, 32, 256.0, 800.0),
])
def test_bundled_offers_exact_values(key: str, label: str, count: int, vram: float | None,
                                     price: float, vcpus: int, ram: float, disk: float) -> None:
    o = _by_key(seeweb.parse([_capture()]).offers)[key]
    assert (o.instance_type, o.gpu_label, o.gpu_count, o.vram_gb_per_gpu) == (
        key.split("|")[0], label, count, vram)
    assert (o.price_per_hour, o.currency, o.region) == (price, "EUR", "it-fr2")
    assert (o.vcpus, o.ram_gb, o.disk_gb) == (vcpus, ram, disk)


def test_provider_data_keeps_the_plan_facts() -> None:
    o = _by_key(seeweb.parse([_capture()]).offers)["ECS1GPU8|it-fr2|on_demand"]
    assert o.provider_data == {"plan_id": 49, "host_type": "ECSGPU8", "monthly_price": 6048.0,
                               "windows": False, "region_description": "Frosinone"}


def test_labels_resolve_to_the_expected_gpus() -> None:
    catalog = load_catalog()
    offers = [*seeweb.parse([_capture()]).offers,
              *seeweb.parse([_capture(FIX, GPUHUNT)]).offers,
              *seeweb.parse([_capture(SNAP, PAGE)]).offers]
    for o in offers:
        res = catalog.resolve("seeweb", o.gpu_label, o.vram_gb_per_gpu)
        if o.gpu_label == GRAYSKULL:
            assert isinstance(res, Unknown) and "unmapped" in res.reason
        else:
            assert isinstance(res, Resolved) and res.gpu_id == GPU_IDS[o.gpu_label], o.offer_key


def test_gpuhunt_2026_fixture_labels_with_memory() -> None:
    result = seeweb.parse([_capture(FIX, GPUHUNT)])
    assert (len(result.offers), len(result.rejects)) == (4, 0)
    offers = _by_key(result.offers)
    assert set(offers) == {"ECS1GPU7|it-fr2|on_demand", "ECS1GPU7|it-mi2|on_demand",
                           "ECS2GPU3|it-fr2|on_demand", "ECS1GPU9|it-fr2|on_demand"}
    l40s = offers["ECS1GPU7|it-mi2|on_demand"]
    assert (l40s.gpu_label, l40s.gpu_count, l40s.vram_gb_per_gpu, l40s.price_per_hour) == (
        "L40s 48GB", 1, 48.0, 0.85)
    a100 = offers["ECS2GPU3|it-fr2|on_demand"]
    assert (a100.gpu_count, a100.vram_gb_per_gpu, a100.ram_gb, a100.price_per_hour) == (
        2, 80.0, 240.0, 1.98)
    # The fixture's plans carry no montly_price, windows or region description.
    assert a100.provider_data == {"plan_id": None, "host_type": None, "monthly_price": None,
                                  "windows": None, "region_description": None}


def test_bad_plans_are_rejected_and_cpu_or_inactive_plans_skipped() -> None:
    doc = _doc()
    base = _plan("ECS1GPU7")
    doc["plans"] = [
        base,
        {**base, "name": "BADCOUNT", "gpu": "one"},
        {**base, "name": "NOLABEL", "gpu_label": None},
        {**base, "name": "STRPRICE", "hourly_price": "0.85"},
        {**base, "name": "ZEROPRICE", "hourly_price": 0},
        {**base, "name": "NOWHERE", "available_regions": []},
        {**base, "name": "BADREGION", "available_regions": [{"description": "no code"}]},
        {**base, "name": "INACTIVE", "available": False},
        {**base, "name": "", "gpu": "1"},
        "ECS9GPU",
        _plan("eCS1"),
    ]
    result = seeweb.parse([_with(doc)])
    assert sorted(r.reason for r in result.rejects) == [
        "GPU plan without a gpu_label: None",
        "available_regions is not a list of regions with a location: "
        "[{'description': 'no code'}]",
        "gpu is not a GPU count: 'one'",
        "hourly_price is not a price: '0.85'",
        "hourly_price is not a price: 0",
        "plan is not an object: str",
        "plan is offered in no region",
        "plan without a name",
    ]
    assert [o.offer_key for o in result.offers] == ["ECS1GPU7|it-fr2|on_demand"]


def test_repeated_plan_is_one_offer_and_a_price_conflict_rejects_both() -> None:
    base = _plan("ECS1GPU7")
    same = seeweb.parse([_with({"status": "ok", "plans": [base, base]})])
    assert len(same.offers) == 1
    assert [r.reason for r in same.rejects] == ["plan listed twice in one response"]
    clash = seeweb.parse([_with({"status": "ok",
                                 "plans": [base, {**base, "hourly_price": 0.95}]})])
    assert clash.offers == []
    assert len(clash.rejects) == 2


def test_duplicate_regions_give_one_offer_each() -> None:
    base = _plan("ECS1GPU7")
    region = base["available_regions"][0]
    milano = {"id": 2, "location": "it-mi2", "description": "Milano"}
    plan = {**base, "available_regions": [region, region, milano]}
    offers = seeweb.parse([_with({"status": "ok", "plans": [plan]})]).offers
    assert [o.region for o in offers] == ["it-fr2", "it-mi2"]


@pytest.mark.parametrize(("body", "field"), [
    (b"<html><body>502 Bad Gateway</body></html>", None),
    (b'{"status": "ok", "plans": {"ECS1GPU7": {}}}', "plans"),
    (b'{"status": "ok", "servers": []}', "plans"),
    (b'{"status": "KO", "plans": []}', "status"),
    (b'[{"name": "ECS1GPU7"}]', "plans"),
])
def test_wrong_shape_is_a_parse_error(body: bytes, field: str | None) -> None:
    with pytest.raises(ParseError) as err:
        seeweb.parse([_capture().model_copy(update={"body": body})])
    assert err.value.field == field
    assert err.value.provider == "seeweb" and err.value.url == URL


@pytest.mark.parametrize(("old", "new"), [
    ("hourly_price", "price_hourly"),
    ("available_regions", "regions"),
    ("gpu_label", "gpu_model"),
    ('"gpu"', '"gpus"'),
    ('"name"', '"plan"'),
])
def test_renamed_field_is_a_parse_error(old: str, new: str) -> None:
    with pytest.raises(ParseError) as err:
        seeweb.parse([with_replaced(_capture(), old, new)])
    assert err.value.field == old.strip('"')


def test_fetch_without_a_token_reads_the_product_page() -> None:
    with HttpClient("seeweb", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = seeweb.fetch(client, {})
    assert [c.url for c in captures] == [PAGE_URL]
    assert captures[0].body == (SNAP / PAGE).read_bytes()
    assert len(seeweb.parse(captures).offers) == 48


def test_replay_never_passes_the_optional_token(monkeypatch: pytest.MonkeyPatch) -> None:
    # The offline refresh follows the keyless path it has a capture of, token set or not.
    monkeypatch.setenv("SEEWEB_API_TOKEN", "sw-SECRET-TOKEN")
    assert seeweb.OPTIONAL_CREDENTIALS == seeweb.CREDENTIALS == ("SEEWEB_API_TOKEN",)
    adapter = get_adapter("seeweb")
    assert adapter_credentials(adapter, "replay") == {}
    assert adapter_credentials(adapter, "live") == {"SEEWEB_API_TOKEN": "sw-SECRET-TOKEN"}


def test_offline_fetch_serves_the_bundled_listing() -> None:
    with HttpClient("seeweb", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = seeweb.fetch(client, {"SEEWEB_API_TOKEN": "replay-placeholder"})
    assert [c.url for c in captures] == [URL]
    assert captures[0].body == (SNAP / ECSAPI).read_bytes()
    assert len(seeweb.parse(captures).offers) == 18


def test_live_fetch_sends_the_token_header_and_never_keeps_it() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"status": "ok", "plans": [],
                                         "echo": request.headers["x-apitoken"]})

    with HttpClient("seeweb", transport=httpx.MockTransport(handler),
                    secrets=("sw-SECRET-TOKEN",)) as client:
        captures = seeweb.fetch(client, {"SEEWEB_API_TOKEN": "sw-SECRET-TOKEN"})
    assert [str(r.url) for r in seen] == [URL]
    assert seen[0].headers["x-apitoken"] == "sw-SECRET-TOKEN"
    assert b"sw-SECRET-TOKEN" not in captures[0].body
    result = seeweb.parse(captures)
    assert (result.offers, result.rejects, result.complete) == ([], [], True)


# -- product page (2026-09-15 excerpt) --------------------------------------------------------


def _page() -> Capture:
    return _capture(SNAP, PAGE)


def _page_offers(capture: Capture | None = None) -> dict[str, ParsedOffer]:
    return _by_key(seeweb.parse([capture or _page()]).offers)


def test_page_counts() -> None:
    result = seeweb.parse([_page()])
    # 3 cards x 4 GPU counts x (on-demand + 3 terms)
    assert (len(result.offers), len(result.rejects), result.complete) == (48, 0, True)
    assert {o.currency for o in result.offers} == {"EUR"}
    assert {o.price_kind for o in result.offers} == {PriceKind.LISTED}
    assert [o.pricing_model for o in result.offers].count(PricingModel.ON_DEMAND) == 12
    assert [o.pricing_model for o in result.offers].count(PricingModel.RESERVED) == 36
    assert {o.gpu_count for o in result.offers} == {1, 2, 4, 8}
    assert {o.gpu_label for o in result.offers} == {
        "NVIDIA H200 SXM", "NVIDIA H100 SXM", "NVIDIA A100 SXM"}
    # The page names no region, interconnect, VRAM per GPU or machine size.
    assert {(o.region, o.interconnect, o.vram_gb_per_gpu, o.vcpus, o.ram_gb, o.disk_gb)
            for o in result.offers} == {(None, None, None, None, None, None)}
    assert {o.availability for o in result.offers} == {Availability.UNKNOWN}
    assert all(o.source_url == PAGE_URL for o in result.offers)
    assert all(o.observed_at == datetime(2026, 9, 15, tzinfo=UTC) for o in result.offers)


@pytest.mark.parametrize(("card", "on_demand", "terms"), [
    ("NVIDIA H100", 1.89, (1.80, 1.70, 1.61)),
    ("NVIDIA H200", 2.60, (2.47, 2.34, 2.21)),
    ("NVIDIA A100", 1.15, (1.09, 1.03, 0.98)),
])
def test_page_prices_per_gpu_hour(card: str, on_demand: float,
                                  terms: tuple[float, float, float]) -> None:
    offers = _page_offers()
    one = offers[f"{card}|1x|on_demand"]
    assert (one.gpu_count, one.price_per_hour, one.pricing_model) == (
        1, on_demand, PricingModel.ON_DEMAND)
    for term, price in zip(TERMS, terms, strict=True):
        o = offers[f"{card}|1x|reserved|{term}"]
        assert (o.pricing_model, o.price_per_hour) == (PricingModel.RESERVED, price)
        assert (o.provider_data["term"], o.provider_data["price_per_gpu_hour"]) == (term, price)


def test_page_offer_is_the_per_gpu_price_times_the_count() -> None:
    offers = _page_offers()
    assert offers["NVIDIA H100|8x|on_demand"].price_per_hour == 15.12
    assert offers["NVIDIA H100|4x|reserved|12 months"].price_per_hour == 6.44
    assert offers["NVIDIA H200|2x|reserved|3 months"].price_per_hour == 4.94
    assert offers["NVIDIA A100|4x|on_demand"].price_per_hour == 4.6
    h100 = offers["NVIDIA H100|8x|on_demand"]
    assert (h100.gpu_label, h100.gpu_count, h100.provider_data["price_per_gpu_hour"]) == (
        "NVIDIA H100 SXM", 8, 1.89)


def test_page_keeps_the_card_spec_as_printed() -> None:
    offers = _page_offers()
    assert offers["NVIDIA H200|1x|on_demand"].provider_data == {
        "card": "gpu9", "card_gpu_ram_gb": 141.0, "card_cpu_cores": 32.0, "card_ram_gb": 256.0,
        "card_disk": "750 GB", "compare_price_per_gpu_hour": 2.6, "price_per_gpu_hour": 2.6}
    h100 = offers["NVIDIA H100|2x|reserved|6 months"].provider_data
    assert (h100["card"], h100["card_gpu_ram_gb"], h100["card_disk"]) == ("gpu1", 320.0, "6 TB")


def test_page_counts_come_from_the_selector() -> None:
    # The H100 card selling 1 and 2 GPUs only (a repeated option counts once): no 4x or 8x
    # offers of it; the other cards keep theirs.
    options = "".join(f'\n                            <option value="{n}">{n}</option>'
                      for n in (1, 2, 4, 8))
    select = f'<select class="gpu-params" name="card-number" data-os="gpu1">{options}'
    fewer = select.replace('value="4">4', 'value="2">2').replace('"8">8', '"1">1')
    result = seeweb.parse([with_replaced(_page(), select, fewer, exactly_once=True)])
    assert (len(result.offers), result.rejects) == (40, [])
    counts = {o.gpu_count for o in result.offers if o.gpu_label == "NVIDIA H100 SXM"}
    assert counts == {1, 2}
    assert {o.gpu_count for o in result.offers if o.gpu_label == "NVIDIA A100 SXM"} == {
        1, 2, 4, 8}


def test_page_without_the_form_factor_keeps_the_bare_card_name() -> None:
    page = with_replaced(_page(), "GPU SXM | ", "")
    labels = {o.gpu_label for o in seeweb.parse([page]).offers}
    assert labels == {"NVIDIA H200", "NVIDIA H100", "NVIDIA A100"}


@pytest.mark.parametrize(("old", "new", "reason"), [
    ('<span class="cardname">NVIDIA H100</span>', '<span class="card-name">NVIDIA H100</span>',
     "GPU card 'gpu1' without a name"),
    ('<p class="hourly"><span>1.89</span> &euro;</p>',
     '<p class="hourly-price"><span>1.89</span> &euro;</p>',
     "NVIDIA H100: on-demand price is not one 'D.DD €' p.hourly: []"),
    ('<p class="hourly"><span>1.89</span> &euro;</p>', '<p class="hourly"><span>1,89</span> $</p>',
     "NVIDIA H100: on-demand price is not one 'D.DD €' p.hourly: ['1,89 $']"),
    ('class="hourly_12mnths">12 mths: <span>1.61</span>',
     'class="hourly-12mnths">12 mths: <span>1.61</span>',
     "NVIDIA H100: reservation price without one 'hourly_<N>mnths' class: '12 mths: 1.61 €/hr'"),
    ('class="hourly_6mnths">6 mths: <span>1.70</span>',
     'class="hourly_6mnths">6 months: <span>1.70</span>',
     "NVIDIA H100: reservation price is not 'N mths: D.DD €/hr': '6 months: 1.70 €/hr'"),
    ('class="hourly_3mnths">3 mths: <span>1.80</span>',
     'class="hourly_3mnths">6 mths: <span>1.80</span>',
     "NVIDIA H100: reservation price '6 mths: 1.80 €/hr' under the class of 3 months"),
    ('<select class="gpu-params" name="card-number" data-os="gpu1">',
     '<select class="gpu-params" name="gpu-number" data-os="gpu1">',
     "NVIDIA H100: no GPU count in 'select[name=\"card-number\"] option'"),
])
def test_one_bad_card_part_is_a_reject_and_the_page_closes_nothing(old: str, new: str,
                                                                    reason: str) -> None:
    good = _page_offers()
    result = seeweb.parse([with_replaced(_page(), old, new, exactly_once=True)])
    assert [r.reason for r in result.rejects] == [reason]
    assert result.complete is False
    # The other cards are untouched.
    keys = _by_key(result.offers)
    for key in ("NVIDIA H200|8x|on_demand", "NVIDIA A100|1x|reserved|12 months"):
        assert keys[key] == good[key]


def test_a_card_without_on_demand_keeps_its_terms() -> None:
    page = with_replaced(_page(), '<p class="hourly"><span>1.89</span> &euro;</p>', "",
                         exactly_once=True)
    keys = _by_key(seeweb.parse([page]).offers)
    assert "NVIDIA H100|1x|on_demand" not in keys
    assert keys["NVIDIA H100|1x|reserved|12 months"].price_per_hour == 1.61


def test_a_count_option_that_is_not_a_count_is_a_reject() -> None:
    page = with_replaced(_page(), '<select class="gpu-params" name="card-number" data-os="gpu1">'
                         '\n                            <option value="1">1</option>',
                         '<select class="gpu-params" name="card-number" data-os="gpu1">'
                         '\n                            <option value="one">one</option>',
                         exactly_once=True)
    result = seeweb.parse([page])
    assert [r.reason for r in result.rejects] == [
        "NVIDIA H100: GPU-count option 'one' is not a count"]
    assert {o.gpu_count for o in result.offers if o.gpu_label == "NVIDIA H100 SXM"} == {2, 4, 8}


@pytest.mark.parametrize(("old", "new", "field"), [
    ('class="cardname"', 'class="card-name"', "cardname"),
    ('class="hourly"', 'class="price-hourly"', "hourly"),
    ('name="card-number"', 'name="gpu-number"', "card-number"),
    ('class="reservation-prices"', 'class="commitments"', "reservation-prices"),
    ('class="cardType', 'class="gpuCard', "cardType"),
])
def test_page_part_that_no_card_has_is_a_parse_error(old: str, new: str, field: str) -> None:
    with pytest.raises(ParseError) as err:
        seeweb.parse([with_replaced(_page(), old, new)])
    assert err.value.field == field
    assert err.value.provider == "seeweb" and err.value.url == PAGE_URL


@pytest.mark.parametrize("body", [
    b"<html><body>nothing here</body></html>",
    b"",
    b'{"status": "ok", "plans": []}',
])
def test_page_without_cards_is_a_parse_error(body: bytes) -> None:
    with pytest.raises(ParseError) as err:
        seeweb.parse([_page().model_copy(update={"body": body})])
    assert err.value.field == "cardType"


def test_a_page_and_a_listing_parse_together_each_by_its_host() -> None:
    result = seeweb.parse([_page(), _capture()])
    assert len(result.offers) == 48 + 18
    assert {o.source_url for o in result.offers} == {PAGE_URL, URL}
