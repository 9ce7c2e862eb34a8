"""adapters/seeweb.py on `GET /ecs/v2/plans` bodies: the bundled one is the Seeweb SDK's recorded
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
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, Unknown, load_catalog
from gpuscout.core.errors import MissingCredentialsError, ParseError
from gpuscout.core.models import Availability, ParsedOffer, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "seeweb"
FIX = FIXTURES / "seeweb"
ECSAPI = "ecsapi_store_plans_fetch_response_59a3550.json"
GPUHUNT = "gpuhunt_fixture_plans_f20008d.json"
URL = "https://api.seeweb.it/ecs/v2/plans"
GRAYSKULL = "Tenstorrent Grayskull e75"
GPU_IDS = {
    "RTX 6000": "quadro-rtx-6000-24gb", "RTX A6000": "rtx-a6000-48gb",
    "A100 80GB": "a100-sxm-80gb", "L4": "l4-24gb", "L40s": "l40s-48gb",
    "H100 80 GB": "h100-sxm-80gb", "AMD MI300X": "mi300x-192gb",
    "L40s 48GB": "l40s-48gb", "MI300X": "mi300x-192gb",
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

    @pytest.fixture(params=[(SNAP, ECSAPI), (FIX, GPUHUNT)], ids=[ECSAPI, GPUHUNT])
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
              *seeweb.parse([_capture(FIX, GPUHUNT)]).offers]
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


def test_fetch_needs_the_token() -> None:
    with (HttpClient("seeweb", transport=ReplayTransport(SNAPSHOTS_DIR)) as client,
          pytest.raises(MissingCredentialsError) as err):
        seeweb.fetch(client, {})
    assert err.value.variable == "SEEWEB_API_TOKEN"


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
