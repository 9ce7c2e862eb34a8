"""adapters/voltagepark.py on the locations API of 2026-08-22 and the 2025-07 pricing page."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from invariants import FIXTURES, OfferInvariants, load_capture

from gpuscout.adapters import voltagepark
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import (
    Availability,
    Interconnect,
    NetworkFabric,
    ParsedOffer,
    ParseResult,
    PriceKind,
    PricingModel,
)

SNAP = SNAPSHOTS_DIR / "voltagepark"
FIX = FIXTURES / "voltagepark"
PAGE = "voltagepark_20250712040631.html"
API = "bare_metal_locations_gpu_index_055204a_2026-08-22.json"
LOCATION = "a3111bd4-550a-47d0-838a-0a52bff2ae3f"
ETHERNET = "1x|HGX H100|ethernet|on_demand"
INFINIBAND = "8x|HGX H100|infiniband-3200gbps|on_demand"


def _capture() -> Capture:
    return load_capture(FIX, PAGE)


def _api(edit: Any = None) -> Capture:
    capture = load_capture(SNAP, API)
    if edit is None:
        return capture
    doc = json.loads(capture.body)
    edit(doc)
    return capture.model_copy(update={"body": json.dumps(doc).encode()})


def _mutated(old: str, new: str, count: int = -1) -> Capture:
    """The recorded page with a string replaced (every occurrence unless `count`)."""
    capture = _capture()
    assert old.encode() in capture.body
    body = capture.body.replace(old.encode(), new.encode(), count)
    return capture.model_copy(update={"body": body})


def _parse() -> ParseResult:
    return voltagepark.parse([_capture()])


class TestVoltageParkInvariants(OfferInvariants):
    NAME = "voltagepark"
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture(params=["api", "page"])
    def offers(self, request: pytest.FixtureRequest) -> list[ParsedOffer]:
        return voltagepark.parse([_api()]).offers if request.param == "api" else _parse().offers


def test_api_one_node_offer_per_network() -> None:
    result = voltagepark.parse([_api()])
    assert (result.rejects, result.complete) == ([], True)
    got = {o.offer_key: (o.gpu_label, o.gpu_count, o.price_per_hour,
                         o.provider_data["price_per_gpu_hour"], o.network, o.network_gbps,
                         o.availability, o.available_count) for o in result.offers}
    assert got == {
        f"{LOCATION}|h100-sxm5-80gb|ethernet|on_demand": (
            "h100-sxm5-80gb", 8, 15.92, 1.99, NetworkFabric.ETHERNET, None,
            Availability.OUT_OF_STOCK, 0),
        f"{LOCATION}|h100-sxm5-80gb|infiniband|on_demand": (
            "h100-sxm5-80gb", 8, 19.92, 2.49, NetworkFabric.INFINIBAND, 3200.0,
            Availability.OUT_OF_STOCK, 0),
    }
    node = result.offers[0]
    assert (node.ram_gb, node.disk_gb, node.provider_data["cpu_cores"]) == (1024, 18000, 104)
    assert node.observed_at == datetime(2026, 8, 22, tzinfo=UTC)
    res = load_catalog().resolve("voltagepark", "h100-sxm5-80gb")
    assert isinstance(res, Resolved) and res.gpu_id == "h100-sxm-80gb"


def test_api_free_gpus_are_whole_nodes_in_stock() -> None:
    offers = voltagepark.parse([_api(lambda d: d["results"][0].update(
        gpu_count_infiniband=24))]).offers
    ib = next(o for o in offers if o.provider_data["network"] == "infiniband")
    assert (ib.availability, ib.available_count, ib.provider_data["gpus_available"]) == (
        Availability.IN_STOCK, 3, 24)


@pytest.mark.parametrize(("edit", "field"), [
    (lambda d: d["results"][0].pop("gpu_price_infiniband"), "gpu_price_infiniband"),
    (lambda d: d["results"][0].update(gpu_price_spot="0.99"), "gpu_price_spot"),
    (lambda d: d.update(has_next=True), "total_result_count"),
    (lambda d: d.update(total_result_count=2), "total_result_count"),
    (lambda d: d.pop("results"), "results"),
])
def test_api_reshaped_or_half_read_is_a_parse_error(edit: Any, field: str) -> None:
    with pytest.raises(ParseError) as err:
        voltagepark.parse([_api(edit)])
    assert err.value.field == field


def test_api_a_price_that_is_not_one_is_a_reject_and_the_other_network_loads() -> None:
    result = voltagepark.parse([_api(lambda d: d["results"][0].update(
        gpu_price_ethernet="contact us"))])
    assert [o.provider_data["network"] for o in result.offers] == ["infiniband"]
    assert [r.reason for r in result.rejects] == [
        "gpu_price_ethernet is not a price: 'contact us'"]


def test_api_a_number_price_reads_as_the_string_does() -> None:
    offers = voltagepark.parse([_api(lambda d: d["results"][0].update(
        gpu_price_ethernet=1.99))]).offers
    assert {o.price_per_hour for o in offers} == {15.92, 19.92}


def test_every_offer() -> None:
    got = {o.offer_key: (o.gpu_count, o.price_per_hour, o.provider_data["price_per_gpu_hour"],
                         o.network, o.network_gbps) for o in _parse().offers}
    assert got == {
        ETHERNET: (1, 1.99, 1.99, NetworkFabric.ETHERNET, None),
        # "8-1016 HGX H100 GPUs": the smallest rentable count, 8 x $2.49.
        INFINIBAND: (8, 19.92, 2.49, NetworkFabric.INFINIBAND, 3200),
    }


def test_infiniband_offer_in_full() -> None:
    offer = next(o for o in _parse().offers if o.offer_key == INFINIBAND)
    assert offer.model_dump() == {
        "provider": "voltagepark", "offer_key": INFINIBAND, "instance_type": None,
        "gpu_label": "HGX H100", "gpu_count": 8, "vram_gb_per_gpu": None,
        "pricing_model": PricingModel.ON_DEMAND, "price_per_hour": 19.92, "currency": "USD",
        "price_kind": PriceKind.LISTED, "region": None, "zone": None, "vcpus": None,
        "ram_gb": None, "disk_gb": None, "interconnect": Interconnect.NVSWITCH,
        "interconnect_gbps": None, "network": NetworkFabric.INFINIBAND, "network_gbps": 3200.0,
        "billing_increment_s": None, "availability": "unknown", "available_count": None,
        "source_url": "https://www.voltagepark.com/pricing",
        "observed_at": datetime(2025, 7, 12, 4, 6, 31, tzinfo=UTC),
        "provider_data": {"plan": "On-demand, 3200 Gbps Infiniband", "price_per_gpu_hour": 2.49,
                          "min_gpus": 8, "max_gpus": 1016},
    }


def test_nothing_rejected_and_the_cut_reserve_card_is_not_a_plan() -> None:
    # The excerpt ends at the "Long-Term Reserve" eyebrow: no price, no features, no card.
    result = _parse()
    assert result.rejects == []
    assert result.complete is True


def test_every_raw_label_resolves() -> None:
    res = load_catalog().resolve("voltagepark", "HGX H100")
    assert isinstance(res, Resolved) and res.gpu_id == "h100-sxm-80gb"


def test_a_card_without_a_price_is_rejected() -> None:
    result = voltagepark.parse([_mutated(">$1.99/hr<", ">Contact us<")])
    assert [o.offer_key for o in result.offers] == [INFINIBAND]
    assert [r.reason for r in result.rejects] == [
        "plan 'On-Demand, Ethernet' has 0 hourly prices, expected 1: ['Contact us']"]


def test_a_reserve_card_is_rejected() -> None:
    result = voltagepark.parse([_mutated(">On-Demand, Ethernet<", ">Reserved, Ethernet<")])
    assert [o.offer_key for o in result.offers] == [INFINIBAND]
    assert [r.reason for r in result.rejects] == [
        "plan 'Reserved, Ethernet' is not on-demand and states no term (price $1.99/hr)"]


def test_renamed_feature_class_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        voltagepark.parse([_mutated('class="pricing11_feature"', 'class="plan-feature"')])
    assert err.value.field == "pricing11_feature"
    assert err.value.url == "https://www.voltagepark.com/pricing"


def test_renamed_price_heading_class_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        voltagepark.parse([_mutated('class="heading-style-h3"', 'class="plan-price"')])
    assert err.value.field == "heading-style-h3"


def test_a_body_that_is_not_the_page_is_a_parse_error() -> None:
    capture = Capture(provider="voltagepark", url=voltagepark.PRICING_URL,
                      body=b"<html><body><h1>Pricing</h1></body></html>",
                      fetched_at=datetime(2026, 1, 1, tzinfo=UTC))
    with pytest.raises(ParseError) as err:
        voltagepark.parse([capture])
    assert err.value.field == "text-eyebrow"


def test_offline_fetch_serves_the_locations_api() -> None:
    with HttpClient("voltagepark", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = voltagepark.fetch(client, {})
    assert len(captures) == 1
    capture = captures[0]
    assert capture.body == (SNAP / API).read_bytes()
    assert capture.url == voltagepark.LOCATIONS_URL
    assert capture.fetched_at == datetime(2026, 8, 22, tzinfo=UTC)
    assert len(voltagepark.parse(captures).offers) == 2
