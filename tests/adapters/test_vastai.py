"""adapters/vastai.py on recorded bundles (offer search) responses."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from invariants import FIXTURES, OfferInvariants, load_capture

from gpuscout.adapters import vastai
from gpuscout.adapters.archive import Capture, ReplayTransport, load_captures, read_manifest
from gpuscout.adapters.http import MAX_ATTEMPTS, HttpClient
from gpuscout.adapters.redaction import redact_url
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
    # one answer for the whole marketplace (no slice in its URL): the server clamps those
    assert result.complete is False
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


def _pages_of(captures: list[Capture]) -> list[tuple[dict[str, Any], int]]:
    """(the search, asks in the answer) of each page."""
    return [(json.loads(parse_qs(urlsplit(c.url).query)["q"][0]),
             len(json.loads(c.body)["offers"])) for c in captures]


def test_bundled_pages_are_the_recordings_asks_per_gpu_in_price_order() -> None:
    captures = [load_capture(SNAP, e.file) for e in read_manifest(SNAP) if e.file != SUBSET]
    subset = _asks()
    assert [q["gpu_name"] for q, _ in _pages_of(captures)] \
        == [{"eq": name} for name in vastai.SLICE_NAMES]
    for capture, name in zip(captures, vastai.SLICE_NAMES, strict=True):
        mine = [a for a in subset if a["gpu_name"] == name]
        assert json.loads(capture.body)["offers"] == sorted(mine, key=lambda a: a["dph_total"])
    assert sum(n for _, n in _pages_of(captures)) == len(subset) == 138


def test_offline_fetch_reads_the_eight_recorded_slices_and_marks_the_rest_unread() -> None:
    seen: list[httpx.Request] = []
    replay = ReplayTransport(SNAPSHOTS_DIR)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return replay.handle_request(request)

    with HttpClient("vastai", transport=httpx.MockTransport(handler)) as client:
        captures = vastai.fetch(client, {})
    # eight slices of one page each (all under the limit), then every other GPU: not recorded
    assert [json.loads(parse_qs(r.url.query.decode())["q"][0])["gpu_name"] for r in seen] \
        == vastai.slices()
    assert len(captures) == 8 and [str(e) for e in client.errors] == [
        f"replay: no recorded response for this request in the replay archive {SNAPSHOTS_DIR} "
        f"({redact_url(str(seen[-1].url))})"]
    result = vastai.parse(captures)
    whole = vastai.parse([load_capture(SNAP, SUBSET)])
    assert [o.model_dump(exclude={"source_url"}) for o in result.offers] \
        == [o.model_dump(exclude={"source_url"}) for o in whole.offers]  # every ask, 37 offers
    assert result.complete is False  # the recording holds no other GPU: nothing is closed


@pytest.mark.parametrize("creds", [{}, {"VAST_API_KEY": "vk_SECRET_KEY"}])
def test_fetch_request_and_optional_key(creds: dict[str, str]) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"offers": []})

    with HttpClient("vastai", transport=httpx.MockTransport(handler)) as client:
        captures = vastai.fetch(client, creds)
    assert len(seen) == len(vastai.SLICE_NAMES) + 1  # one empty page per slice
    first = seen[0]
    assert (first.method, first.url.scheme, first.url.host, first.url.path) \
        == ("GET", "https", "console.vast.ai", "/api/v0/bundles/")
    # the client's search body (vastai search offers -n -o dph rentable=true), one GPU name, as q
    assert json.loads(first.url.params["q"]) == {
        "rentable": {"eq": True}, "type": "on-demand", "order": [["dph_total", "asc"]],
        "limit": 50, "allocated_storage": 5.0, "gpu_name": {"eq": "B200"}}
    assert json.loads(seen[-1].url.params["q"])["gpu_name"] \
        == {"notin": ["B200", "H200", "H100 SXM", "H100 NVL", "H100 PCIE", "A100 SXM4",
                      "A100 PCIE", "L40S"]}
    assert {r.headers.get("authorization") for r in seen} == {
        "Bearer vk_SECRET_KEY" if creds else None}
    # The key travels in a header only: the archived URL is the same with or without it.
    assert captures[0].url == load_capture(SNAP, "bundles_b200_assembled_ewyluda_1f5b058.json").url
    assert vastai.parse(captures).complete is True  # every slice ended on a short page


def test_the_page_limit_stays_under_the_clamp() -> None:
    # Above the clamp, a clamped answer would be shorter than the limit and read as the end.
    assert vastai.LIMIT <= vastai.CLAMP == 64


# -- paging under the clamp, against a fake marketplace ----------------------------------------


def _ask(ask_id: int, gpu: str, price: float) -> dict[str, Any]:
    return {"id": ask_id, "gpu_name": gpu, "num_gpus": 1, "gpu_ram": 24564, "dph_total": price}


class _Market:
    """The search as the server answers it: the `gpu_name` and `dph_total` filters, the order,
    the limit, and the clamp (no answer holds more than `clamp` asks, whatever the limit).

    Every answer moves each ask's `duration` on, as a live countdown does between requests."""

    def __init__(self, asks: list[dict[str, Any]], *, ordered: bool = True, clamp: int = 64,
                 fail: Callable[[dict[str, Any], int], httpx.Response | None] | None = None,
                 ) -> None:
        self.asks = asks
        self.ordered = ordered
        self.clamp = clamp
        self.fail = fail
        self.queries: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        assert request.method == "GET"
        query = json.loads(request.url.params["q"])
        self.queries.append(query)
        failed = self.fail(query, len(self.queries)) if self.fail else None
        if failed is not None:
            return failed
        return httpx.Response(200, json={"offers": self.answer(query, len(self.queries))})

    def answer(self, query: dict[str, Any], n: int) -> list[dict[str, Any]]:
        names = query.get("gpu_name", {})
        floor = query.get("dph_total", {}).get("gte", float("-inf"))
        rows = [a for a in self.asks if (a["dph_total"] or 0) >= floor
                and ("eq" not in names or a["gpu_name"] == names["eq"])
                and a["gpu_name"] not in names.get("notin", ())]
        if self.ordered:
            assert query["order"] == [["dph_total", "asc"]]
            rows.sort(key=lambda a: (a["dph_total"] or 0, a.get("id", 0)))
        return [{**a, "duration": 1e6 - n} for a in rows[:min(query["limit"], self.clamp)]]

    def fetch(self) -> tuple[list[Capture], list[str]]:
        with HttpClient("vastai", transport=httpx.MockTransport(self),
                        sleep=lambda _: None) as client:
            return vastai.fetch(client, {}), [str(e) for e in client.errors]

    def slice_queries(self, name: str) -> list[dict[str, Any]]:
        return [q for q in self.queries if q["gpu_name"] == {"eq": name}]


def _crowded_market() -> list[dict[str, Any]]:
    """700 RTX 3060 asks from $0.05 in steps of $0.001 every 7 asks (so ties straddle the page
    ends), and 120 H100 SXM asks from $2.00 in steps of $0.01 every 3 asks."""
    h100 = [_ask(900_000 + i, "H100 SXM", round(2.0 + (i // 3) * 0.01, 2)) for i in range(120)]
    rtx = [_ask(i, "RTX 3060", round(0.05 + (i // 7) * 0.001, 3)) for i in range(700)]
    return [*h100, *rtx]


def test_a_full_page_is_followed_from_its_last_price_until_a_short_page() -> None:
    market = _Market(_crowded_market())
    captures, errors = market.fetch()
    assert errors == []
    h100 = market.slice_queries("H100 SXM")
    # page 1: asks 0-49 (the last at 2.00 + 49 // 3 x 0.01); page 2 from there: 48-97 (2.32)
    assert [q.get("dph_total") for q in h100] == [None, {"gte": 2.16}, {"gte": 2.32}]
    assert [{k: v for k, v in q.items() if k != "dph_total"} for q in h100] \
        == [vastai.page_query({"eq": "H100 SXM"})] * 3
    pages = [json.loads(c.body)["offers"] for c, (q, _) in zip(captures, _pages_of(captures),
                                                                 strict=True)
             if q["gpu_name"] == {"eq": "H100 SXM"}]
    assert [len(p) for p in pages] == [50, 50, 24]  # page 3: asks 96-119
    # page 1 ends in the middle of the 3 asks at $2.16 (ids 900048-900050): page 2 opens with
    # all of them, the 2 already seen included
    assert pages[0][-1]["dph_total"] == pages[1][0]["dph_total"] == 2.16
    assert (pages[0][-1]["id"], pages[1][0]["id"]) == (900_049, 900_048)
    # the consumer cards come in the last slice, paged the same way: 700 asks in 15 pages
    assert len([q for q in market.queries if "notin" in q["gpu_name"]]) == 15


def test_every_ask_and_the_lowest_per_gpu_survive_the_pages() -> None:
    captures, _ = _Market(_crowded_market()).fetch()
    result = vastai.parse(captures)
    assert result.rejects == [] and result.complete is True  # repeats at page ends: one ask
    offers = _by_key(result.offers)
    rtx, h100 = offers["RTX 3060|1x|24GB|*|on_demand"], offers["H100 SXM|1x|24GB|*|on_demand"]
    assert (rtx.price_per_hour, rtx.available_count, rtx.provider_data["max_ask"]) \
        == (0.05, 700, 0.149)
    assert (h100.price_per_hour, h100.available_count, h100.provider_data["max_ask"]) \
        == (2.0, 120, 2.39)


def test_an_ask_whose_price_moved_between_pages_is_rejected_not_guessed() -> None:
    captures, _ = _Market(_crowded_market()).fetch()
    firsts = [[a["id"] for a in json.loads(c.body)["offers"][:1]] for c in captures]
    i = firsts.index([900_048])  # page 2 of the H100 slice
    second = json.loads(captures[i].body)
    second["offers"][0]["dph_total"] = 2.5  # also at the end of the page before, at 2.16
    captures[i] = captures[i].model_copy(update={"body": json.dumps(second).encode()})
    result = vastai.parse(captures)
    assert [r.reason for r in result.rejects] == [  # both listings, to quarantine
        "ask id 900048 is listed twice, with two different prices or figures"] * 2
    assert _by_key(result.offers)["H100 SXM|1x|24GB|*|on_demand"].available_count == 119


def test_a_clamp_above_the_limit_is_paged_through_and_a_whole_market_answer_is_not_trusted(
) -> None:
    # Asked for 3000 asks at once, the clamped server returns 64: the old single search.
    market = _Market(_crowded_market())
    whole = market.answer({"order": [["dph_total", "asc"]], "limit": 3000}, 1)
    assert len(whole) == 64 and {a["gpu_name"] for a in whole} == {"RTX 3060"}
    capture = load_capture(SNAP, SUBSET).model_copy(
        update={"body": json.dumps({"offers": whole}).encode()})
    assert vastai.parse([capture]).complete is False  # possibly clamped: closes nothing


def test_a_page_that_fails_cuts_its_slice_and_the_others_are_still_read() -> None:
    def fail(query: dict[str, Any], n: int) -> httpx.Response | None:
        second_h100_page = query["gpu_name"] == {"eq": "H100 SXM"} and "dph_total" in query
        return httpx.Response(503) if second_h100_page else None

    market = _Market(_crowded_market(), fail=fail)
    captures, errors = market.fetch()
    assert len(market.slice_queries("H100 SXM")) == 1 + MAX_ATTEMPTS  # page 1, page 2's tries
    assert len(errors) == 1 and "HTTP 503" in errors[0]
    result = vastai.parse(captures)
    assert result.complete is False  # the H100 slice ends on a full page
    offers = _by_key(result.offers)
    assert offers["H100 SXM|1x|24GB|*|on_demand"].available_count == 50  # page 1 is kept
    assert offers["RTX 3060|1x|24GB|*|on_demand"].available_count == 700  # read to its end


def test_a_slice_that_fails_is_read_as_missing() -> None:
    market = _Market(_crowded_market(), fail=lambda q, n: httpx.Response(
        400) if q["gpu_name"] == {"eq": "B200"} else None)
    captures, errors = market.fetch()
    assert len(errors) == 1 and "HTTP 400" in errors[0]
    assert len(captures) == len(market.queries) - 1
    assert vastai.parse(captures).complete is False


def test_a_search_that_fails_everywhere_fails_the_fetch() -> None:
    market = _Market(_crowded_market(), fail=lambda q, n: httpx.Response(403))
    with pytest.raises(FetchError) as err:
        market.fetch()
    assert err.value.status == 403
    assert len(market.queries) == len(vastai.slices())


def test_a_page_that_is_not_a_listing_fails_the_parse() -> None:
    market = _Market(_crowded_market(), fail=lambda q, n: httpx.Response(
        200, text="<html>busy</html>") if "dph_total" in q else None)
    captures, _ = market.fetch()
    with pytest.raises(ParseError) as err:
        vastai.parse(captures)
    assert err.value.field is None


def test_a_slice_that_never_ends_is_cut_and_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vastai, "MAX_PAGES", 2)
    market = _Market([_ask(i, "RTX 3060", 0.05 + i / 1000) for i in range(900)])
    captures, errors = market.fetch()
    assert len([q for q in market.queries if "notin" in q["gpu_name"]]) == 2
    assert errors == [f"vastai: the other GPUs' slice still fills 50 asks a page after 2 pages: "
                      f"it is read as cut ({captures[-1].url})"]
    assert vastai.parse(captures).complete is False


@pytest.mark.parametrize(("asks", "ordered", "message"), [
    ([_ask(i, "RTX 3060", 0.3) for i in range(80)], True,
     "page 2 of the other GPUs' slice holds 50 asks .* every ask is at \\$0.3/h"),
    (_crowded_market()[::-1], False, "page 1 of the H100 SXM slice .* not ordered by dph_total"),
    ([{k: v for k, v in a.items() if k != "id"} for a in _crowded_market()], True,
     "page 1 of the H100 SXM slice .* not every ask has an id"),
    ([{**a, "dph_total": None} if a["id"] == 7 else a for a in _crowded_market()], True,
     "page 1 of the other GPUs' slice .* not every ask has a positive dph_total"),
], ids=["all-at-one-price", "unordered", "no-ids", "no-price"])
def test_a_full_page_that_cannot_be_paged_on_cuts_its_slice(
        asks: list[dict[str, Any]], ordered: bool, message: str) -> None:
    captures, errors = _Market(asks, ordered=ordered).fetch()
    assert len(errors) >= 1 and re.search(message, errors[0])
    assert vastai.parse(captures).complete is False


# -- the bundled recording behind a server that clamps at 64 asks (tests/fixtures/vastai/clamped64)

CLAMPED = FIX / "clamped64"
CLAMPED_PLAN = ("H100 SXM",)  # one named slice and the rest: 122 asks to page under the clamp


def _clamped_server_answer(query: dict[str, Any]) -> list[dict[str, Any]]:
    """What a server clamping at 64 answers over the recording's asks, each with its position
    as its id (tests/fixtures/vastai/clamped64/PROVENANCE.md)."""
    asks = [{**a, "id": i} for i, a in enumerate(_asks(), start=1)]
    names = query.get("gpu_name", {})
    floor = query.get("dph_total", {}).get("gte", float("-inf"))
    rows = sorted((a for a in asks if a["dph_total"] >= floor
                   and ("eq" not in names or a["gpu_name"] == names["eq"])
                   and a["gpu_name"] not in names.get("notin", ())),
                  key=lambda a: (a["dph_total"], a["id"]))
    return rows[:min(query["limit"], 64)]


def test_the_clamped_replay_is_the_recording_behind_a_64_ask_clamp() -> None:
    captures = load_captures(CLAMPED, "vastai")
    assert [(q["gpu_name"], q.get("dph_total"), n) for q, n in _pages_of(captures)] == [
        ({"eq": "H100 SXM"}, None, 16),
        ({"notin": ["H100 SXM"]}, None, 50),
        ({"notin": ["H100 SXM"]}, {"gte": 1.6014814814814813}, 50),
        ({"notin": ["H100 SXM"]}, {"gte": 4.801481481481481}, 26)]
    for capture, (query, _) in zip(captures, _pages_of(captures), strict=True):
        assert json.loads(capture.body)["offers"] == _clamped_server_answer(query)
    # the search the adapter used to send, all asks at once: the clamp cuts it to 64 of 138
    assert len(_clamped_server_answer({"limit": 3000})) == 64


def test_a_clamped_replay_yields_every_ask_of_the_recording(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vastai, "SLICE_NAMES", CLAMPED_PLAN)
    with HttpClient("vastai", transport=ReplayTransport(CLAMPED)) as client:
        captures = vastai.fetch(client, {})
    assert client.errors == [] and len(captures) == 4
    result = vastai.parse(captures)
    assert result.complete is True and result.rejects == []
    # 142 asks served, 4 of them twice at page ends: every one of the 138 asks, once
    assert sum(o.available_count or 0 for o in result.offers) == 138
    whole = vastai.parse([load_capture(SNAP, SUBSET)]).offers
    assert {(o.offer_key, o.price_per_hour, o.available_count) for o in result.offers} \
        == {(o.offer_key, o.price_per_hour, o.available_count) for o in whole}


def test_a_clamped_replay_with_a_page_missing_is_incomplete(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(vastai, "SLICE_NAMES", CLAMPED_PLAN)
    archive = _without_page(tmp_path, 3)  # the rest's last page: its 26 dearest asks
    with HttpClient("vastai", transport=ReplayTransport(archive)) as client:
        captures = vastai.fetch(client, {})
    assert len(captures) == 3 and len(client.errors) == 1
    assert "no recorded response" in str(client.errors[0])
    result = vastai.parse(captures)
    assert result.complete is False  # the rest ends on a full page: possibly more after it
    assert sum(o.available_count or 0 for o in result.offers) < 138


def _without_page(tmp_path: Path, index: int) -> Path:
    """A copy of the clamped replay without its `index`-th page (0-based)."""
    root = tmp_path / "clamped64"
    shutil.copytree(CLAMPED, root)
    manifest = root / "vastai" / "manifest.json"
    entries = json.loads(manifest.read_text())
    del entries[index]
    manifest.write_text(json.dumps(entries))
    return root
