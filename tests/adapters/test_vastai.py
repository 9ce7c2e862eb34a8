"""adapters/vastai.py on recorded bundles (offer search) responses."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from invariants import FIXTURES, OfferInvariants, load_capture

from gpuscout.adapters import vastai
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.errors import ParseError
from gpuscout.core.models import Availability, ParsedOffer, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "vastai"
FIX = FIXTURES / "vastai"
SUBSET = "bundles_offers_4field_subset_ewyluda_1f5b058.json"
FULL = "search_offers_raw_single_offer_rtx4090.json"


def _asks() -> list[dict[str, Any]]:
    return json.loads((SNAP / SUBSET).read_bytes())


def _with_body(doc: Any) -> Capture:
    return load_capture(SNAP, SUBSET).model_copy(update={"body": json.dumps(doc).encode()})


def _by_key(offers: list[ParsedOffer]) -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in offers}


class TestVastaiInvariants(OfferInvariants):
    NAME = "vastai"
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture(params=[(SNAP, SUBSET), (FIX, FULL)], ids=[SUBSET, FULL])
    def offers(self, request: pytest.FixtureRequest) -> list[ParsedOffer]:
        return vastai.parse([load_capture(*request.param)]).offers


def test_subset_aggregates_138_asks_into_37_offers() -> None:
    result = vastai.parse([load_capture(SNAP, SUBSET)])
    assert (len(result.offers), len(result.rejects)) == (37, 0)
    assert sum(o.available_count or 0 for o in result.offers) == 138
    assert {o.pricing_model for o in result.offers} == {PricingModel.ON_DEMAND}  # no min_bid
    assert {o.region for o in result.offers} == {None}  # no geolocation in the subset


def test_subset_b200_single_gpu() -> None:
    b200 = _by_key(vastai.parse([load_capture(SNAP, SUBSET)]).offers)["B200|1x|179GB|*|on_demand"]
    assert b200.price_per_hour == 6.252083333333333  # the cheapest of 3 asks
    assert b200.available_count == 3
    assert b200.provider_data == {"ask_count": 3, "median_ask": 6.252083,
                                  "max_ask": 8.559722222222222, "min_ask_gpu_ram_mib": 183359}
    assert (b200.gpu_label, b200.gpu_count, b200.vram_gb_per_gpu) == ("B200", 1, 179.0)
    assert (b200.price_kind, b200.availability) == (PriceKind.OBSERVED, Availability.IN_STOCK)
    assert b200.observed_at == datetime(2026, 9, 29, tzinfo=UTC)


def test_subset_a100_sxm4_split_by_reported_vram() -> None:
    offers = _by_key(vastai.parse([load_capture(SNAP, SUBSET)]).offers)
    single = {k: (o.price_per_hour, o.available_count) for k, o in offers.items()
              if k.startswith("A100 SXM4|1x|")}
    assert single == {
        "A100 SXM4|1x|39GB|*|on_demand": (0.6044444444444445, 1),  # 39936 MiB
        "A100 SXM4|1x|40GB|*|on_demand": (0.2962962962962963, 14),
        "A100 SXM4|1x|80GB|*|on_demand": (0.9355555555555555, 5),
    }


def test_full_offer_on_demand_and_spot() -> None:
    offers = _by_key(vastai.parse([load_capture(FIX, FULL)]).offers)
    assert set(offers) == {"RTX 4090|1x|24GB|CN|on_demand", "RTX 4090|1x|24GB|CN|spot"}
    on_demand = offers["RTX 4090|1x|24GB|CN|on_demand"]
    spot = offers["RTX 4090|1x|24GB|CN|spot"]
    assert on_demand.price_per_hour == 0.2466759259259259  # dph_total
    assert spot.price_per_hour == 0.2  # min_bid
    assert spot.pricing_model == PricingModel.SPOT
    for offer in (on_demand, spot):
        assert (offer.vram_gb_per_gpu, offer.region, offer.vcpus, offer.ram_gb, offer.disk_gb) \
            == (24.0, "CN", 24.0, 16.9, 1607.9)  # 64393 MiB x gpu_frac 0.25
    assert spot.provider_data == {
        "ask_count": 1, "median_ask": 0.2, "max_ask": 0.2, "min_ask_id": 11684738,
        "min_ask_gpu_ram_mib": 24564, "min_ask_gpu_frac": 0.25,
        "min_ask_reliability": 0.9700835, "min_ask_inet_down_mbps": 105.9,
        "min_ask_inet_up_mbps": 77.7, "min_ask_geolocation": "Guangxi, CN",
    }
    assert spot.source_url == "https://console.vast.ai/api/v0/bundles/"


def test_envelope_and_bare_list_read_the_same() -> None:
    bare = vastai.parse([load_capture(SNAP, SUBSET)]).offers
    wrapped = vastai.parse([_with_body({"offers": _asks()})]).offers
    assert [o.model_dump() for o in wrapped] == [o.model_dump() for o in bare]


def test_bad_asks_are_rejected_and_left_out_of_the_aggregate() -> None:
    asks = _asks()
    b200 = [i for i, a in enumerate(asks) if a["gpu_name"] == "B200" and a["num_gpus"] == 1]
    asks[b200[0]]["num_gpus"] = 0
    asks[b200[1]]["dph_total"] = None
    asks.append("not an offer")
    result = vastai.parse([_with_body(asks)])
    assert sorted(r.reason for r in result.rejects) == [
        "dph_total is not a positive price: None",
        "num_gpus is not a positive integer: 0",
        "offer is not an object: str",
    ]
    b200_1x = _by_key(result.offers)["B200|1x|179GB|*|on_demand"]
    assert (b200_1x.available_count, b200_1x.price_per_hour) == (1, 8.559722222222222)


@pytest.mark.parametrize(("body", "field"), [
    (b"<html>rate limited</html>", None),
    (b'{"success": false, "error": "invalid_args"}', "offers"),
    (b'{"offers": {"id": 1}}', "offers"),
])
def test_wrong_shape_is_a_parse_error(body: bytes, field: str | None) -> None:
    capture = load_capture(SNAP, SUBSET).model_copy(update={"body": body})
    with pytest.raises(ParseError) as err:
        vastai.parse([capture])
    assert err.value.field == field
    assert err.value.url == load_capture(SNAP, SUBSET).url


@pytest.mark.parametrize("field", ["dph_total", "gpu_ram", "num_gpus", "gpu_name"])
def test_renamed_field_is_a_parse_error(field: str) -> None:
    doc = [{(f"{k}_v2" if k == field else k): v for k, v in a.items()} for a in _asks()]
    with pytest.raises(ParseError) as err:
        vastai.parse([_with_body(doc)])
    assert err.value.field == field


def test_empty_search_is_no_offers_not_an_error() -> None:
    assert vastai.parse([_with_body({"offers": []})]).offers == []


def test_offline_fetch_serves_the_bundled_subset() -> None:
    with HttpClient("vastai", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = vastai.fetch(client, {})
    assert [c.body for c in captures] == [(SNAP / SUBSET).read_bytes()]
    assert captures[0].url == load_capture(SNAP, SUBSET).url
    assert len(vastai.parse(captures).offers) == 37


@pytest.mark.parametrize("creds", [{}, {"VAST_API_KEY": "vk_SECRET_KEY"}])
def test_fetch_query_and_optional_key(creds: dict[str, str]) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"offers": []})

    with HttpClient("vastai", transport=httpx.MockTransport(handler)) as client:
        captures = vastai.fetch(client, creds)
    request = seen[0]
    assert (request.method, request.url.path) == ("GET", "/api/v0/bundles/")
    assert json.loads(request.url.params["q"]) == vastai.QUERY
    assert request.headers.get("authorization") == (
        "Bearer vk_SECRET_KEY" if creds else None)
    # The key travels in a header only: the archived URL is the same with or without it.
    assert captures[0].url == load_capture(SNAP, SUBSET).url
