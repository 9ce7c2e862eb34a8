"""adapters/latitude.py on the pricing page's flight data: the bundled excerpt of the live page of
2026-08-22 (adapters/snapshots/latitude/PROVENANCE.md) and edits of it."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from invariants import FIXTURES, OfferInvariants, load_capture, with_replaced
from page_edits import without_members

from gpuscout.adapters import latitude
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.adapters.toolkit import CONFLICT_REASON
from gpuscout.core.errors import ParseError
from gpuscout.core.models import (
    Availability,
    Interconnect,
    NetworkFabric,
    ParsedOffer,
    PriceKind,
    PricingModel,
)

SNAP = SNAPSHOTS_DIR / "latitude"
PAGE = "pricing_gpu_index_055204a_2026-08-22.html"
URL = "https://www.latitude.sh/pricing"
# What the cut-off last plan (a CPU plan) and the plan list lack to end where a whole page does.
LIST_END = b'_lts\\"]}}]}'
B300_USD = '\\"USD\\":{\\"hour\\":128,\\"month\\":46720,\\"year\\":392448}'
H100_REGION = '\\"stock_level\\":\\"unavailable\\",\\"pricing\\":{\\"USD\\":{\\"hour\\":3.37'


def _page() -> Capture:
    return load_capture(SNAP, PAGE)


def _whole() -> Capture:
    """The excerpt with its plan list closed: a page that was read to its end."""
    page = _page()
    return page.model_copy(update={"body": page.body + LIST_END})


def _by_key(offers: list[ParsedOffer]) -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in offers}


class TestLatitudeInvariants(OfferInvariants):
    NAME = "latitude"
    # The page states neither SXM nor PCIe (core/data/aliases/latitude.csv).
    EXPECTED_UNKNOWN = frozenset({"NVIDIA H100 80GB"})

    @pytest.fixture(params=["excerpt", "closed"])
    def offers(self, request: pytest.FixtureRequest) -> list[ParsedOffer]:
        return latitude.parse([_page() if request.param == "excerpt" else _whole()]).offers


def test_bundled_page_counts() -> None:
    result = latitude.parse([_page()])
    # 6 priced (GPU plan, region) pairs x hour / month / year; the 14 CPU plans give nothing.
    assert (len(result.offers), result.rejects) == (18, [])
    assert not result.complete  # the excerpt ends inside the plan list: it closes nothing
    assert {o.gpu_label for o in result.offers} == {
        "NVIDIA HGX B300", "NVIDIA RTX PRO 6000", "NVIDIA H100 80GB"}
    models = [o.pricing_model for o in result.offers]
    assert (models.count(PricingModel.ON_DEMAND), models.count(PricingModel.RESERVED)) == (6, 12)
    assert PricingModel.SPOT not in models
    assert {o.currency for o in result.offers} == {"USD"}


def test_a_closed_plan_list_is_complete() -> None:
    result = latitude.parse([_whole()])
    assert (len(result.offers), result.rejects, result.complete) == (18, [], True)


def test_pinned_b300_offers() -> None:
    offers = _by_key(latitude.parse([_page()]).offers)
    b300 = offers["g4-b300-large|United States|on_demand"]
    assert (b300.gpu_label, b300.gpu_count, b300.vram_gb_per_gpu, b300.price_per_hour) == (
        "NVIDIA HGX B300", 8, 288, 128.0)
    assert (b300.instance_type, b300.region, b300.ram_gb) == ("g4.b300.large", "United States",
                                                              1536)
    assert (b300.pricing_model, b300.price_kind) == (PricingModel.ON_DEMAND, PriceKind.LISTED)
    # Priced but out of stock: the list price stands, the stock is the availability.
    assert b300.availability is Availability.OUT_OF_STOCK
    assert (b300.network, b300.network_gbps) == (NetworkFabric.ROCE, 800)
    assert b300.interconnect is Interconnect.NVSWITCH
    assert b300.provider_data == {
        "plan": "g4-b300-large", "price_brl_per_hour": 640.0, "stock_level": "unavailable",
        "sites": "DAL,LAX,NYC,CHI,ASH,MIA2,LAX2,SJC2,ASH2", "cpu": "2 x AMD Epyc 9555 (64 cores)",
        "drives": "2 x 950GB NVME, 1 x 1.92TB NVME", "nics": "2 x 100 Gbps",
        "gpu_interconnect": "800Gbps Dual Plane RoCE"}
    assert (b300.source_url, b300.observed_at) == (URL, datetime(2026, 8, 22, tzinfo=UTC))
    month = offers["g4-b300-large|United States|reserved|1 month"]
    assert (month.pricing_model, month.price_kind, month.price_per_hour) == (
        PricingModel.RESERVED, PriceKind.DERIVED, 64.0)  # 46720 / 730
    assert (month.provider_data["term_price"], month.provider_data["hours_per_term"],
            month.provider_data["price_brl_per_term"]) == (46720.0, 730, 233600.0)
    year = offers["g4-b300-large|United States|reserved|1 year"]
    assert (year.price_per_hour, year.provider_data["term_price"]) == (44.8, 392448.0)


def test_pinned_rtx_pro_6000_and_h100_offers() -> None:
    offers = _by_key(latitude.parse([_page()]).offers)
    rtx = [o for o in offers.values() if o.gpu_label == "NVIDIA RTX PRO 6000"]
    # United Kingdom prints USD null / BRL 0: not offered there, never a $0 offer.
    assert {o.region for o in rtx} == {"United States", "Australia", "Japan", "Netherlands"}
    assert {o.gpu_count for o in rtx} == {8} and {o.vram_gb_per_gpu for o in rtx} == {96}
    australia = offers["g4-rtx6kpro-large|Australia|on_demand"]
    assert (australia.price_per_hour, australia.availability) == (66.0, Availability.LOW)
    assert (australia.network, australia.interconnect) == (None, None)  # interconnect null
    assert offers["g4-rtx6kpro-large|Netherlands|on_demand"].availability is (
        Availability.OUT_OF_STOCK)
    h100 = offers["g3-h100-small|United States|on_demand"]
    assert (h100.gpu_count, h100.price_per_hour, h100.vram_gb_per_gpu, h100.ram_gb) == (
        1, 3.37, 80, 192)
    assert h100.interconnect is Interconnect.SINGLE
    assert h100.provider_data["price_brl_per_hour"] == 18.54
    assert offers["g3-h100-small|United States|reserved|1 month"].price_per_hour == 1.684932


def test_an_unescaped_plan_list_reads_the_same() -> None:
    page = _whole()
    plain = page.model_copy(update={"body": page.body.replace(b'\\"', b'"')})
    assert _by_key(latitude.parse([plain]).offers) == _by_key(latitude.parse([page]).offers)


def test_replayed_fetch_requests_the_pricing_page() -> None:
    with HttpClient("latitude", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = latitude.fetch(client, {})
    assert [c.url for c in captures] == [URL]
    assert [c.body for c in captures] == [(SNAP / PAGE).read_bytes()]
    assert len(latitude.parse(captures).offers) == 18


# -- faults: a changed layout is a ParseError naming what is missing -------------------------


@pytest.mark.parametrize(("old", "new", "field"), [
    ('\\"plansData\\":', '\\"planData\\":', "plansData"),
    ('\\"servers\\":[', '\\"machines\\":[', "servers"),
    ('\\"regions\\":', '\\"zones\\":', "regions"),
    ('\\"attributes\\":', '\\"attrs\\":', "attributes"),
    ('\\"gpu\\":{\\"count\\":', '\\"gpu\\":{\\"quantity\\":', "count"),
    ('\\"pricing\\":', '\\"prices\\":', "pricing"),
])
def test_renamed_structure_is_a_parse_error(old: str, new: str, field: str) -> None:
    with pytest.raises(ParseError) as err:
        latitude.parse([with_replaced(_page(), old, new)])
    assert err.value.field == field


def test_a_page_without_gpu_plans_is_a_parse_error() -> None:
    page = _page()
    cpu_only = re.sub(rb'\\"gpu\\":\{\\"count[^}]*\}', rb'\\"gpu\\":{}', page.body)
    with pytest.raises(ParseError) as err:
        latitude.parse([page.model_copy(update={"body": cpu_only})])
    assert err.value.field == "specs.gpu"


def test_a_flight_string_that_does_not_decode_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        latitude.parse([with_replaced(_page(), '\\"servers\\":[', '\\"servers\\":\\x[')])
    assert err.value.field == "plansData"


# -- faults: one odd row is a Reject, the rest is read ----------------------------------------


def test_a_price_that_is_no_number_is_a_reject() -> None:
    bad = with_replaced(_whole(), B300_USD, B300_USD.replace('hour\\":128', 'hour\\":\\"128\\"'),
                        exactly_once=True)
    result = latitude.parse([bad])
    assert [r.offer_key for r in result.rejects] == ["g4-b300-large|United States|on_demand"]
    assert "hour price is no number" in result.rejects[0].reason
    assert len(result.offers) == 17
    assert not result.complete  # a region term not read: close nothing


def test_a_price_in_brl_only_is_a_reject() -> None:
    bad = with_replaced(_whole(), B300_USD, B300_USD.replace('hour\\":128', 'hour\\":null'),
                        exactly_once=True)
    result = latitude.parse([bad])
    assert [r.reason for r in result.rejects] == [
        "g4-b300-large/United States: hour priced in ['BRL'] but not in USD"]
    assert "g4-b300-large|United States|reserved|1 month" in _by_key(result.offers)


def test_a_gpu_count_that_is_no_count_is_a_reject_of_the_plan() -> None:
    bad = with_replaced(_whole(), '\\"gpu\\":{\\"count\\":1,', '\\"gpu\\":{\\"count\\":\\"one\\",',
                        exactly_once=True)
    result = latitude.parse([bad])
    assert [r.reason for r in result.rejects] == ["g3-h100-small: GPU count 'one' is not a count"]
    assert {o.gpu_label for o in result.offers} == {"NVIDIA HGX B300", "NVIDIA RTX PRO 6000"}


def test_an_unknown_stock_level_is_unknown_availability() -> None:
    odd = with_replaced(_whole(), H100_REGION, H100_REGION.replace("unavailable", "soon"),
                        exactly_once=True)
    h100 = _by_key(latitude.parse([odd]).offers)["g3-h100-small|United States|on_demand"]
    assert (h100.availability, h100.provider_data["stock_level"]) == (Availability.UNKNOWN,
                                                                      "soon")


def test_a_repeated_plan_is_one_offer_and_a_contradicting_one_is_rejected() -> None:
    page = _whole()
    start = page.body.index(b'{\\"id\\":\\"plan_lnow0Ovwa9x1q\\"')
    end = page.body.index(b'{\\"id\\":\\"plan_jv6m5JADNLPeE\\"')
    blob = page.body[start:end]  # the H100 plan and its trailing comma
    twice = page.model_copy(update={"body": page.body[:end] + blob + page.body[end:]})
    assert len(latitude.parse([twice]).offers) == 18
    other = blob.replace(b'hour\\":3.37', b'hour\\":3.99')
    clash = latitude.parse([page.model_copy(update={"body": page.body[:end] + other
                                                     + page.body[end:]})])
    rejected = {r.offer_key for r in clash.rejects if r.reason == CONFLICT_REASON}
    assert rejected == {"g3-h100-small|United States|on_demand"}
    assert not clash.complete


# -- the 2026-09-22 key spelling (tests/fixtures/latitude, assembled) --------------------------

CAMEL_DIR = FIXTURES / "latitude"
CAMEL = "pricing_2026-09-22_camelcase_keys_assembled.html"
# Compute-Indices@065c263 LATITUDE_KEY_RENAMES: the five keys renamed on 2026-09-22.
RENAMED = {"vram_per_gpu": "vramPerGpu", "deploys_instantly": "deploysInstantly",
           "in_stock": "inStock", "stock_level": "stockLevel",
           "available_operating_systems": "availableOperatingSystems"}


def _camel() -> Capture:
    return load_capture(CAMEL_DIR, CAMEL)


def _as_read(offers: list[ParsedOffer]) -> dict[str, tuple[object, ...]]:
    return {o.offer_key: (o.price_per_hour, o.vram_gb_per_gpu, o.availability,
                          o.provider_data.get("stock_level"),
                          o.provider_data.get("sites_in_stock")) for o in offers}


def test_the_camelcase_page_is_the_bundled_one_with_the_five_keys_renamed() -> None:
    text = _page().body.decode()
    for old, new in RENAMED.items():
        text = text.replace(f'\\"{old}\\"', f'\\"{new}\\"')
    assert _camel().body.decode() == text
    assert all(f'\\"{old}\\"' not in text for old in RENAMED)


def test_the_camelcase_page_loads_vram_and_stock() -> None:
    before, after = latitude.parse([_page()]), latitude.parse([_camel()])
    assert after.rejects == [] and len(after.offers) == 18
    assert _as_read(after.offers) == _as_read(before.offers)  # same prices, VRAM and stock
    b300 = _by_key(after.offers)["g4-b300-large|United States|on_demand"]
    assert (b300.vram_gb_per_gpu, b300.availability) == (288.0, Availability.OUT_OF_STOCK)
    assert {o.vram_gb_per_gpu for o in after.offers} == {288.0, 96.0, 80.0}
    assert Availability.UNKNOWN not in {o.availability for o in after.offers}


def test_a_gpu_plan_without_vram_is_a_reject_not_an_offer_without_it() -> None:
    page = with_replaced(_camel(), '\\"vramPerGpu\\":80,', "", exactly_once=True)  # the H100
    result = latitude.parse([page])
    assert {o.gpu_label for o in result.offers} == {"NVIDIA HGX B300", "NVIDIA RTX PRO 6000"}
    assert {r.reason for r in result.rejects} == {
        "GPU plan without VRAM: g3-h100-small has no positive vram_per_gpu or vramPerGpu "
        "(None)"}
    assert {r.offer_key for r in result.rejects} == {
        "g3-h100-small|United States|on_demand", "g3-h100-small|United States|reserved|1 month",
        "g3-h100-small|United States|reserved|1 year"}  # keyed: each offer stays open
    assert not result.complete


def test_without_the_stock_keys_every_offer_reads_as_unknown_stock() -> None:
    # What the 2026-09-22 rename did to a reader of one spelling: no error, every stock empty.
    result = latitude.parse([without_members(_camel(), "inStock", "stockLevel")])
    assert len(result.offers) == 18 and result.rejects == []
    assert {o.availability for o in result.offers} == {Availability.UNKNOWN}
