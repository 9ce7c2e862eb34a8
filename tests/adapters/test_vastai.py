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
from gpuscout.adapters.http import MAX_ATTEMPTS, HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.errors import FetchError, ParseError
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
        # the marketplace's trust figures, for filtering
        "min_ask_reliability2": 0.9700835, "min_ask_score": 190.03429818220016,
        "min_ask_verification": "verified", "verified_ask_count": 1, "min_verified_ask": 0.2,
    }
    assert on_demand.provider_data["min_verified_ask"] == 0.2466759259259259
    assert spot.source_url == "https://console.vast.ai/api/v0/bundles/"


def test_cheapest_verified_ask_beside_a_cheaper_unverified_one() -> None:
    ask = json.loads((FIX / FULL).read_bytes())[0]
    cheaper = {**ask, "id": 1, "dph_total": 0.2, "min_bid": 0.1,
               "verification": "unverified", "reliability2": 0.5, "score": 12.5}
    capture = load_capture(FIX, FULL).model_copy(
        update={"body": json.dumps([ask, cheaper]).encode()})
    offer = _by_key(vastai.parse([capture]).offers)["RTX 4090|1x|24GB|CN|on_demand"]
    assert (offer.price_per_hour, offer.available_count) == (0.2, 2)
    data = offer.provider_data
    assert (data["min_ask_verification"], data["min_ask_reliability2"], data["min_ask_score"]) \
        == ("unverified", 0.5, 12.5)  # the cheapest ask's own figures
    assert (data["verified_ask_count"], data["min_verified_ask"]) == (1, 0.2466759259259259)


def test_envelope_and_bare_list_read_the_same() -> None:
    bare = vastai.parse([load_capture(SNAP, SUBSET)]).offers
    wrapped = vastai.parse([_with_body({"offers": _asks()})]).offers
    assert [o.model_dump() for o in wrapped] == [o.model_dump() for o in bare]


def test_bad_asks_are_rejected_and_left_out_of_the_aggregate() -> None:
    asks = _asks()
    b200 = [i for i, a in enumerate(asks) if a["gpu_name"] == "B200" and a["num_gpus"] == 1]
    asks[b200[0]]["num_gpus"] = 0
    asks[b200[1]]["dph_total"] = None
    result = vastai.parse([_with_body([*asks, "not an offer"])])
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
    seen: list[httpx.Request] = []
    replay = ReplayTransport(SNAPSHOTS_DIR)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return replay.handle_request(request)

    with HttpClient("vastai", transport=httpx.MockTransport(handler)) as client:
        captures = vastai.fetch(client, {})
    assert [c.body for c in captures] == [(SNAP / SUBSET).read_bytes()]
    # 138 asks, under the limit: the first page is the last, one request
    assert [(r.method, json.loads(r.content)) for r in seen] == [("POST", vastai.QUERY)]
    assert captures[0].url == load_capture(SNAP, SUBSET).url
    assert len(vastai.parse(captures).offers) == 37


@pytest.mark.parametrize("creds", [{}, {"VAST_API_KEY": "vk_SECRET_KEY"}])
def test_fetch_request_and_optional_key(creds: dict[str, str]) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"offers": []})

    with HttpClient("vastai", transport=httpx.MockTransport(handler)) as client:
        captures = vastai.fetch(client, creds)
    [request] = seen
    assert (request.method, str(request.url)) == ("POST", "https://console.vast.ai/api/v0/bundles/")
    assert request.headers["content-type"] == "application/json"
    # vastai search offers -n -o dph --limit 3000 rentable=true, as the client sends it
    assert json.loads(request.content) == {
        "rentable": {"eq": True}, "type": "on-demand", "order": [["dph_total", "asc"]],
        "limit": 3000, "allocated_storage": 5.0}
    assert request.headers.get("authorization") == (
        "Bearer vk_SECRET_KEY" if creds else None)
    # The key travels in a header only: the archived URL is the same with or without it.
    assert captures[0].url == load_capture(SNAP, SUBSET).url


# -- paging on the price cursor, against a fake marketplace ------------------------------------


def _ask(ask_id: int, gpu: str, price: float) -> dict[str, Any]:
    return {"id": ask_id, "gpu_name": gpu, "num_gpus": 1, "gpu_ram": 24564, "dph_total": price}


class _Market:
    """The search as the server answers it: the `dph_total` filter, the order, the limit.

    Every answer moves each ask's `duration` on, as a live countdown does between requests."""

    def __init__(self, asks: list[dict[str, Any]], *, ordered: bool = True,
                 fail_page: int | None = None, fail_with: httpx.Response | None = None) -> None:
        self.asks = asks
        self.ordered = ordered
        self.fail_page = fail_page
        self.fail_with = fail_with
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        if self.fail_page is not None and len(self.bodies) >= self.fail_page:
            return self.fail_with or httpx.Response(503)
        floor = body.get("dph_total", {}).get("gte", float("-inf"))
        rows = [a for a in self.asks if (a["dph_total"] or 0) >= floor]
        if self.ordered:
            assert body["order"] == [["dph_total", "asc"]]
            rows.sort(key=lambda a: (a["dph_total"] or 0, a.get("id", 0)))
        page = [{**a, "duration": 1e6 - len(self.bodies)} for a in rows[:body["limit"]]]
        return httpx.Response(200, json={"offers": page})

    def fetch(self) -> list[Capture]:
        with HttpClient("vastai", transport=httpx.MockTransport(self),
                        sleep=lambda _: None) as client:
            return vastai.fetch(client, {})


def _crowded_market() -> list[dict[str, Any]]:
    """7,000 RTX 3060 asks from $0.05 in steps of $0.001 every 7 asks (so ties straddle the page
    ends), and 5 H100 SXM asks from $9.00, dearer than all of them: listed first, so an
    unordered search capped at 3000 would return no H100 at all."""
    h100 = [_ask(900_000 + i, "H100 SXM", 9.0 + i) for i in range(5)]
    rtx = [_ask(i, "RTX 3060", round(0.05 + (i // 7) * 0.001, 3)) for i in range(7000)]
    return [*h100, *rtx]


def test_a_full_page_is_followed_from_its_last_price_until_a_short_page() -> None:
    market = _Market(_crowded_market())
    captures = market.fetch()
    assert len(captures) == 3
    assert [b.get("dph_total") for b in market.bodies] == [
        None, {"gte": 0.478}, {"gte": 0.906}]  # the last price of pages 1 and 2
    assert [{k: v for k, v in b.items() if k != "dph_total"} for b in market.bodies] \
        == [vastai.QUERY] * 3
    pages = [json.loads(c.body)["offers"] for c in captures]
    assert [len(p) for p in pages] == [3000, 3000, 1013]
    # page 1 ends in the middle of the 7 asks at $0.478 (ids 2996-3002): page 2 opens with all
    # of them, the 4 already seen included
    assert pages[0][-1]["dph_total"] == pages[1][0]["dph_total"] == 0.478
    assert (pages[0][-1]["id"], pages[1][0]["id"]) == (2999, 2996)
    # 7,005 asks in all, 8 of them twice
    assert len({a["id"] for p in pages for a in p}) == 7005


def test_every_ask_and_the_lowest_per_gpu_survive_the_pages() -> None:
    result = vastai.parse(_Market(_crowded_market()).fetch())
    assert result.rejects == []  # repeats at the page ends are one ask, countdowns aside
    offers = _by_key(result.offers)
    rtx, h100 = offers["RTX 3060|1x|24GB|*|on_demand"], offers["H100 SXM|1x|24GB|*|on_demand"]
    assert (rtx.price_per_hour, rtx.available_count, rtx.provider_data["max_ask"]) \
        == (0.05, 7000, 1.049)
    assert (h100.price_per_hour, h100.available_count, h100.provider_data["max_ask"]) \
        == (9.0, 5, 13.0)


def test_an_ask_whose_price_moved_between_pages_is_rejected_not_guessed() -> None:
    captures = _Market(_crowded_market()).fetch()
    second = json.loads(captures[1].body)
    moved = second["offers"][0]
    assert moved["id"] == 2996  # also at the end of page 1, at 0.478
    moved["dph_total"] = 0.5
    captures[1] = captures[1].model_copy(update={"body": json.dumps(second).encode()})
    result = vastai.parse(captures)
    assert [r.reason for r in result.rejects] == [  # both listings, to quarantine
        "ask id 2996 is listed twice, with two different prices or figures"] * 2
    assert _by_key(result.offers)["RTX 3060|1x|24GB|*|on_demand"].available_count == 6999


def test_a_second_page_that_fails_fails_the_fetch() -> None:
    market = _Market(_crowded_market(), fail_page=2)
    with pytest.raises(FetchError) as err:
        market.fetch()
    assert err.value.status == 503
    assert len(market.bodies) == 1 + MAX_ATTEMPTS  # page 1, then page 2's tries


def test_a_second_page_that_is_not_a_listing_fails_the_parse() -> None:
    market = _Market(_crowded_market(), fail_page=2,
                     fail_with=httpx.Response(200, text="<html>busy</html>"))
    captures = market.fetch()
    assert len(captures) == 2  # nothing to page on: the page goes to parse() as it came
    with pytest.raises(ParseError) as err:
        vastai.parse(captures)
    assert err.value.field is None


def test_a_search_that_never_ends_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vastai, "MAX_PAGES", 2)
    market = _Market([_ask(i, "RTX 3060", 0.05 + i / 1000) for i in range(9000)])
    with pytest.raises(FetchError, match="fills 3000 asks a page after 2 pages"):
        market.fetch()
    assert len(market.bodies) == 2


@pytest.mark.parametrize(("market", "message"), [
    (_Market([_ask(i, "RTX 3060", 0.3) for i in range(3500)]),
     "page 2 holds 3000 asks .* every ask is at \\$0.3/h"),
    (_Market(_crowded_market(), ordered=False), "page 1 .* not ordered by dph_total"),
    (_Market([{k: v for k, v in a.items() if k != "id"} for a in _crowded_market()]),
     "page 1 .* not every ask has an id"),
    (_Market([{**a, "dph_total": None} if a["id"] == 7 else a for a in _crowded_market()]),
     "page 1 .* not every ask has a positive dph_total"),
], ids=["all-at-one-price", "unordered", "no-ids", "no-price"])
def test_a_full_page_that_cannot_be_paged_on_is_refused(market: _Market, message: str) -> None:
    with pytest.raises(FetchError, match=message):
        market.fetch()
