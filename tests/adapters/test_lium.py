"""adapters/lium.py on `GET /api/public/v1/nodes` bodies: the bundled four-node feed recorded
2026-09-10 (adapters/snapshots/lium/PROVENANCE.md) and edits of it."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from invariants import OfferInvariants, load_capture

from gpuscout.adapters import lium
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import Availability, ParsedOffer, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "lium"
FEED = "public_nodes_v1_gpuhunt_168f678_2026-09-10.json"
URL = "https://lium.io/api/public/v1/nodes"
H200 = "f092246d-5704-4c9e-b57f-7c0710a06deb"  # 8 x H200, 5 free, smallest order 1
SPOT_5090 = "45af0308-a13c-497f-93ea-ab06144eee29"


def _feed() -> dict[str, Any]:
    return json.loads((SNAP / FEED).read_bytes())


def _with(doc: Any) -> Capture:
    return load_capture(SNAP, FEED).model_copy(update={"body": json.dumps(doc).encode()})


def _with_nodes(*nodes: Any, count: int | None = None) -> Capture:
    doc = _feed()
    doc["nodes"] = list(nodes)
    doc["count"] = len(nodes) if count is None else count
    return _with(doc)


def _by_key(offers: list[ParsedOffer]) -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in offers}


def _node(node_id: str, **changes: Any) -> dict[str, Any]:
    node = copy.deepcopy(next(n for n in _feed()["nodes"] if n["id"] == node_id))
    node.update(changes)
    return node


class TestLiumInvariants(OfferInvariants):
    NAME = "lium"

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return lium.parse([load_capture(SNAP, FEED)]).offers


def test_bundled_feed_counts() -> None:
    result = lium.parse([load_capture(SNAP, FEED)])
    assert (len(result.offers), result.rejects, result.complete) == (4, [], True)
    assert {o.currency for o in result.offers} == {"USD"}
    assert {o.price_kind for o in result.offers} == {PriceKind.OBSERVED}
    assert sorted(o.offer_key for o in result.offers) == [
        "A100-SXM4-80GB|8x|US|on_demand", "H200|8x|US|on_demand",
        "RTX 5090|1x|US|spot", "RTX 5090|8x|JP|on_demand"]


def test_pinned_offer_exact_values() -> None:
    o = _by_key(lium.parse([load_capture(SNAP, FEED)]).offers)["RTX 5090|8x|JP|on_demand"]
    assert (o.gpu_label, o.gpu_count, o.vram_gb_per_gpu, o.price_per_hour) == (
        "RTX 5090", 8, 32.0, 4.0)  # 8 x $0.50, the feed's price_per_node_hour
    assert (o.pricing_model, o.region, o.zone) == (PricingModel.ON_DEMAND, "JP", None)
    assert (o.vcpus, o.ram_gb, o.disk_gb) == (384.0, 251.0, 935.0)  # the whole machine
    assert (o.availability, o.available_count) == (Availability.IN_STOCK, 1)
    assert o.provider_data == {
        "price_basis": "cheapest ask: price_per_gpu_hour x gpu_count", "price_per_gpu": 0.5,
        "median_price_per_gpu": 0.5, "max_price_per_gpu": 0.5, "asks": 1, "gpus_free": 8,
        "tier": "secure", "node_id": "ebdfdbe2-875a-4caa-8eea-1ab5c2a763e1",
        "city": "Chiyoda City", "subdivision": "13", "min_rentable_gpu_count": 8,
        "rent_url": "https://lium.io/browse-pods/ebdfdbe2-875a-4caa-8eea-1ab5c2a763e1"}
    assert (o.source_url, o.observed_at) == (
        URL, datetime(2026, 9, 10, 7, 37, 2, 247559, tzinfo=UTC))


def test_a_partly_rented_machine_is_low_in_stock_and_spot_is_the_spot_tier() -> None:
    offers = _by_key(lium.parse([load_capture(SNAP, FEED)]).offers)
    h200 = offers["H200|8x|US|on_demand"]
    assert (h200.price_per_hour, h200.availability, h200.provider_data["gpus_free"]) == (
        31.92, Availability.LOW, 5)
    spot = offers["RTX 5090|1x|US|spot"]
    assert (spot.pricing_model, spot.price_per_hour, spot.provider_data["node_id"]) == (
        PricingModel.SPOT, 0.5, SPOT_5090)


def test_labels_map_to_the_expected_gpus() -> None:
    catalog = load_catalog()
    got = {o.gpu_label: catalog.resolve("lium", o.gpu_label, o.vram_gb_per_gpu).gpu_id
           for o in lium.parse([load_capture(SNAP, FEED)]).offers}
    assert got == {"RTX 5090": "rtx-5090-32gb", "H200": "h200-sxm-141gb",
                   "A100-SXM4-80GB": "a100-sxm-80gb"}


def test_asks_of_one_shape_are_one_offer_at_the_cheapest_price() -> None:
    cheaper = _node(H200, id="n-2", price_per_gpu_hour=3.5, price_per_node_hour=28.0,
                    available_gpu_count=8)
    dearer = _node(H200, id="n-3", price_per_gpu_hour=4.5, price_per_node_hour=None)
    (offer,) = lium.parse([_with_nodes(_node(H200), cheaper, dearer)]).offers
    assert (offer.offer_key, offer.price_per_hour, offer.available_count) == (
        "H200|8x|US|on_demand", 28.0, 3)
    assert offer.availability is Availability.IN_STOCK  # one of the three is wholly free
    assert (offer.provider_data["median_price_per_gpu"], offer.provider_data["max_price_per_gpu"],
            offer.provider_data["gpus_free"], offer.provider_data["node_id"]) == (
        3.99, 4.5, 5 + 8 + 5, "n-2")


@pytest.mark.parametrize("changes", [
    {"available_gpu_count": 0},
    {"available_gpu_count": 3, "min_rentable_gpu_count": 4},  # too few free for one order
])
def test_a_machine_that_cannot_be_rented_now_is_no_ask(changes: dict[str, Any]) -> None:
    result = lium.parse([_with_nodes(_node(H200, **changes), _node(SPOT_5090))])
    assert ([o.offer_key for o in result.offers], result.rejects) == (["RTX 5090|1x|US|spot"], [])


@pytest.mark.parametrize(("changes", "reason"), [
    ({"gpu_model": None}, "node without a gpu_model"),
    ({"gpu_count": 2.5}, "gpu_count is not a GPU count: 2.5"),
    ({"price_per_gpu_hour": None}, "price_per_gpu_hour is not a price: None"),
    ({"price_per_gpu_hour": "3.99"}, "price_per_gpu_hour is not a price: '3.99'"),
    ({"price_per_node_hour": 3.99}, "price_per_node_hour 3.99 is not price_per_gpu_hour 3.99 x "
                                    "8 GPUs"),
    ({"tier": "community"}, "unknown tier 'community'"),
    ({"available_gpu_count": 9}, "available_gpu_count 9 is not a count of the 8 GPUs"),
])
def test_bad_nodes_are_rejected_with_reasons(changes: dict[str, Any], reason: str) -> None:
    result = lium.parse([_with_nodes(_node(H200, **changes), _node(SPOT_5090))])
    assert [o.offer_key for o in result.offers] == ["RTX 5090|1x|US|spot"]
    assert [r.reason for r in result.rejects] == [reason]
    assert json.loads(result.rejects[0].raw)["id"] == H200
    assert result.complete is True


def test_a_node_that_is_no_object_is_rejected() -> None:
    result = lium.parse([_with_nodes("H200", _node(SPOT_5090))])
    assert [r.reason for r in result.rejects] == ["node is not an object: str"]


def test_an_empty_short_or_wholly_refused_feed_closes_nothing() -> None:
    assert lium.parse([_with_nodes()]).complete is False
    # the feed says five nodes, and holds four: cut short
    short = lium.parse([_with_nodes(*_feed()["nodes"], count=5)])
    assert (len(short.offers), short.complete) == (4, False)
    refused = lium.parse([_with_nodes(_node(H200, tier="community"))])
    assert (refused.offers, refused.complete) == ([], False)


@pytest.mark.parametrize(("body", "field"), [
    (b"<html>502</html>", None),
    (b'{"detail": "Not found"}', "nodes"),
    (b"[]", "nodes"),  # the executors route's bare array is not this feed
    (b'{"nodes": {}}', "nodes"),
])
def test_wrong_shape_is_a_parse_error(body: bytes, field: str | None) -> None:
    with pytest.raises(ParseError) as err:
        lium.parse([load_capture(SNAP, FEED).model_copy(update={"body": body})])
    assert (err.value.field, err.value.url) == (field, URL)


@pytest.mark.parametrize(("old", "new"), [
    ("gpu_model", "gpu_name"), ("price_per_gpu_hour", "price_per_gpu"), ("tier", "cloud"),
])
def test_renamed_field_is_a_parse_error(old: str, new: str) -> None:
    doc = _feed()
    doc["nodes"] = [{(new if k == old else k): v for k, v in n.items()} for n in doc["nodes"]]
    with pytest.raises(ParseError) as err:
        lium.parse([_with(doc)])
    assert err.value.field == old


def test_offline_fetch_serves_the_bundled_feed() -> None:
    with HttpClient("lium", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        (capture,) = lium.fetch(client, {})
    assert (capture.url, capture.body) == (URL, (SNAP / FEED).read_bytes())


def test_live_fetch_asks_the_documented_feed_without_a_key() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"generated_at": "2026-12-01T00:00:00Z", "count": 0,
                                         "nodes": []})

    with HttpClient("lium", transport=httpx.MockTransport(handler)) as client:
        (capture,) = lium.fetch(client, {})
    assert [(r.method, str(r.url)) for r in seen] == [("GET", URL)]
    assert "x-api-key" not in seen[0].headers and "authorization" not in seen[0].headers
    assert lium.CREDENTIALS == ()
    assert lium.parse([capture]).complete is False  # an empty feed closes nothing
