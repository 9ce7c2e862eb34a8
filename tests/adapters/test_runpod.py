"""adapters/runpod.py on recorded GraphQL gpuTypes responses."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from invariants import FIXTURES, OfferInvariants, load_capture

from gpuscout.adapters import runpod
from gpuscout.adapters.archive import Capture, ReplayTransport, read_manifest, sha256
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.errors import FetchError, ParseError
from gpuscout.core.models import Availability, ParsedOffer, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "runpod"
FIX = FIXTURES / "runpod"
JUMBO = "gpu_types_list_jumbo2020_2025-06-21.json"
LIVE = "graphql_gpu_types_datacenters_gpu_index_5cf4f70_2026-08-25.json"
ONIQ = "gpu_types_lowestprice_oniq_2026-08-25.json"
FIVE_FIELDS = "graphql_gpu_types_5fields_ewyluda_d789fed.json"
DOCS = "docs_example_gpu_type_by_id_lowestprice.json"
JSON_LD = "runpod_20260810082317.html"  # pricing pages: kept as label evidence, not parsed
NEXT_DATA = "runpod_20230929070808.html"
H100 = "NVIDIA H100 80GB HBM3"


def _prices(offers: list[ParsedOffer], gpu: str) -> dict[str, float]:
    """'tier|model' -> price for one GPU type."""
    return {o.offer_key.removeprefix(f"{gpu}|"): o.price_per_hour
            for o in offers if o.gpu_label == gpu}


def _with_body(doc: Any) -> Capture:
    return load_capture(FIX, JUMBO).model_copy(update={"body": json.dumps(doc).encode()})


def _jumbo() -> list[dict[str, Any]]:
    return json.loads((FIX / JUMBO).read_bytes())


class TestRunpodInvariants(OfferInvariants):
    NAME = "runpod"
    # Every RunPod id resolves now that the catalog has its cards (the RTX 3080 and RTX A2000
    # by the VRAM RunPod reports: each comes in two memory sizes).
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture(params=[(FIX, JUMBO), (FIX, ONIQ), (FIX, DOCS)], ids=[JUMBO, ONIQ, DOCS])
    def offers(self, request: pytest.FixtureRequest) -> list[ParsedOffer]:
        return runpod.parse([load_capture(*request.param)]).offers


def test_jumbo_list_counts_and_h100_prices() -> None:
    result = runpod.parse([load_capture(FIX, JUMBO)])
    assert (len(result.offers), len(result.rejects)) == (103, 0)
    assert _prices(result.offers, H100) == {
        "secure|on_demand": 2.99, "secure|spot": 1.75,
        "community|on_demand": 2.69, "community|spot": 1.5,
    }
    h100 = next(o for o in result.offers if o.offer_key == f"{H100}|secure|spot")
    assert (h100.gpu_count, h100.vram_gb_per_gpu, h100.region) == (1, 80.0, None)
    assert (h100.pricing_model, h100.price_kind) == (PricingModel.SPOT, PriceKind.LISTED)
    assert h100.provider_data == {"display_name": "H100 SXM", "cloud": "secure",
                                  "price_field": "secureSpotPrice", "max_gpu_count": 8}
    assert h100.source_url == "https://api.runpod.io/graphql"
    assert h100.observed_at == datetime(2025, 6, 21, 23, 18, tzinfo=UTC)


def test_a_tier_flagged_off_has_no_offer_whatever_its_price() -> None:
    offers = runpod.parse([load_capture(FIX, JUMBO)]).offers
    # communityCloud false with communityPrice 0.5: a placeholder, not a $0.50 B200.
    assert _prices(offers, "NVIDIA B200") == {"secure|on_demand": 6.39}
    assert _prices(offers, "AMD Instinct MI300X OAM") == {
        "secure|on_demand": 2.49, "secure|spot": 1.49}
    # secureCloud false: only the community tier.
    assert _prices(offers, "NVIDIA A30") == {"community|on_demand": 0.22, "community|spot": 0.11}
    # Zero or null prices everywhere: no offer and no reject.
    assert _prices(offers, "unknown") == {}


def test_oniq_envelope_with_lowest_price() -> None:
    result = runpod.parse([load_capture(FIX, ONIQ)])
    assert (len(result.offers), len(result.rejects)) == (22, 0)
    assert _prices(result.offers, "NVIDIA GeForce RTX 3090") == {
        "secure|on_demand": 0.5, "community|on_demand": 0.22, "any|spot": 0.22}
    # secureCloud false; lowestPrice all null: one offer.
    assert _prices(result.offers, "NVIDIA GeForce RTX 3090 Ti") == {"community|on_demand": 0.27}
    assert _prices(result.offers, "NVIDIA L4") == {"secure|on_demand": 0.49, "any|spot": 0.44}
    spot = next(o for o in result.offers if o.offer_key == "NVIDIA L4|any|spot")
    assert spot.price_kind == PriceKind.OBSERVED
    assert spot.provider_data["price_field"] == "lowestPrice.minimumBidPrice"
    # id is the canonical name, displayName the short one (the _provenance note's regression).
    assert {o.gpu_label for o in result.offers} >= {"NVIDIA RTX 4000 Ada Generation",
                                                    "NVIDIA RTX 4000 SFF Ada Generation"}


def test_docs_example_lowest_price_only() -> None:
    offers = runpod.parse([load_capture(FIX, DOCS)]).offers
    assert _prices(offers, "NVIDIA GeForce RTX 3090") == {
        "any|on_demand": 0.3, "any|spot": 0.163}
    assert {o.price_kind for o in offers} == {PriceKind.OBSERVED}


def test_body_without_cloud_flags_is_a_parse_error() -> None:
    # The 5-field query has no secureCloud/communityCloud, and its prices include 0.5
    # placeholders (H200 NVL community 0.5 next to secure 3.79) that cannot be told apart.
    with pytest.raises(ParseError) as err:
        runpod.parse([load_capture(FIX, FIVE_FIELDS)])
    assert err.value.field == "secureCloud"


def test_bare_list_and_envelope_read_the_same() -> None:
    bare = runpod.parse([load_capture(FIX, JUMBO)]).offers
    wrapped = runpod.parse([_with_body({"data": {"gpuTypes": _jumbo()}})]).offers
    assert [o.model_dump() for o in wrapped] == [o.model_dump() for o in bare]


def test_graphql_errors_body_is_a_parse_error_with_the_message() -> None:
    body = {"errors": [{"message": "Something went wrong", "path": ["gpuTypes"]}],
            "data": None}
    with pytest.raises(ParseError) as err:
        runpod.parse([_with_body(body)])
    assert err.value.field == "errors"
    assert "Something went wrong" in str(err.value)


@pytest.mark.parametrize(("body", "field"), [
    (b"<html><body>502 Bad Gateway</body></html>", None),
    (b'{"data": {}}', "data.gpuTypes"),
    (b'{"data": {"gpuTypes": {"id": "NVIDIA L4"}}}', "data.gpuTypes"),
])
def test_wrong_shape_is_a_parse_error(body: bytes, field: str | None) -> None:
    capture = load_capture(FIX, JUMBO).model_copy(update={"body": body})
    with pytest.raises(ParseError) as err:
        runpod.parse([capture])
    assert err.value.field == field
    assert err.value.url == "https://api.runpod.io/graphql"


@pytest.mark.parametrize(("old", "new", "field"), [
    ("id", "gpuId", "id"),
    ("secureCloud", "isSecureCloud", "secureCloud"),
])
def test_renamed_field_is_a_parse_error(old: str, new: str, field: str) -> None:
    doc = [{(new if k == old else k): v for k, v in e.items()} for e in _jumbo()]
    if old == "secureCloud":  # both flags renamed
        doc = [{("isCommunityCloud" if k == "communityCloud" else k): v for k, v in e.items()}
               for e in doc]
    with pytest.raises(ParseError) as err:
        runpod.parse([_with_body(doc)])
    assert err.value.field == field


def test_bad_rows_are_rejected_with_reasons() -> None:
    doc = _jumbo()
    h100 = next(e for e in doc if e["id"] == H100)
    h100["securePrice"] = "2.99"
    del doc[0]["id"]  # the MI300X entry
    doc[1]["secureCloud"] = None  # A100 PCIe: a secure price without its flag
    result = runpod.parse([_with_body(doc)])
    reasons = sorted(r.reason for r in result.rejects)
    assert reasons == [
        "gpuTypes entry without an id",
        "securePrice is not a price: '2.99'",
        "securePrice without a secureCloud flag: may be a placeholder",
        "secureSpotPrice without a secureCloud flag: may be a placeholder",
    ]
    assert len(result.offers) == 103 - 2 - 1 - 2  # MI300X, H100 secure od, A100 PCIe secure


def test_offline_fetch_serves_the_bundled_2026_capture() -> None:
    with HttpClient("runpod", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = runpod.fetch(client, {})
    assert [c.body for c in captures] == [(SNAP / LIVE).read_bytes()]
    assert captures[0].method == "POST"
    assert captures[0].fetched_at == datetime(2026, 8, 25, tzinfo=UTC)
    assert len(runpod.parse(captures).offers) == 30


def _live() -> list[ParsedOffer]:
    result = runpod.parse([load_capture(SNAP, LIVE)])
    assert result.rejects == [] and result.complete
    return result.offers


def test_2026_capture_prices_per_cloud_and_placeholders() -> None:
    offers = _live()
    # 9 types: 6 on both clouds (4 offers each), MI300X secure only (its community 0.5 sits
    # beside communityCloud false), A100 40GB and RTX 3070 community only (secure price 0)
    assert len(offers) == 6 * 4 + 3 * 2
    assert _prices(offers, "NVIDIA B200") == {
        "secure|on_demand": 6.79, "secure|spot": 6.79,
        "community|on_demand": 5.98, "community|spot": 5.98}
    assert _prices(offers, "AMD Instinct MI300X OAM") == {
        "secure|on_demand": 2.39, "secure|spot": 2.39}
    assert _prices(offers, "NVIDIA A100-SXM4-40GB") == {
        "community|on_demand": 1.0, "community|spot": 1.0}
    assert _prices(offers, "NVIDIA GeForce RTX 3070") == {
        "community|on_demand": 0.13, "community|spot": 0.13}
    assert {o.vram_gb_per_gpu for o in offers if o.gpu_label == "NVIDIA B300 SXM6 AC"} == {288}


def test_2026_capture_stock_and_data_centres() -> None:
    by_gpu = {o.gpu_label: o for o in _live() if o.offer_key.endswith("|on_demand")}
    assert by_gpu["NVIDIA B200"].availability is Availability.LOW
    assert by_gpu["NVIDIA H200"].availability is Availability.IN_STOCK  # "Medium"
    assert by_gpu["AMD Instinct MI300X OAM"].availability is Availability.UNKNOWN  # null
    # listed and available only: B200's unlisted US-TX-6 and H100's unavailable EU-NL-1 are out
    dcs = {g: o.provider_data.get("datacenters_available") for g, o in by_gpu.items()}
    assert dcs["NVIDIA B200"] == "EU-RO-1"
    assert dcs["NVIDIA H100 80GB HBM3"] == "AP-IN-1"
    assert dcs["NVIDIA B300 SXM6 AC"] == "EU-NL-1,EUR-IS-1,US-WA-2"
    assert dcs["NVIDIA GeForce RTX 4090"] == "EU-RO-1,EUR-IS-1"
    assert dcs["AMD Instinct MI300X OAM"] is None  # in the matrix, available nowhere
    assert dcs["NVIDIA GeForce RTX 3070"] is None  # not in the (trimmed) matrix


@pytest.mark.parametrize("block", ["gone", {"EU-RO-1": {}}, [{"name": "no id"}]])
def test_an_unreadable_data_centre_block_costs_no_price(block: Any) -> None:
    doc = json.loads((SNAP / LIVE).read_bytes())
    doc["data"]["dataCenters"] = block
    capture = load_capture(SNAP, LIVE).model_copy(update={"body": json.dumps(doc).encode()})
    result = runpod.parse([capture])
    assert len(result.offers) == 30
    assert len(result.rejects) == 1 and "dataCenters" in result.rejects[0].reason
    assert not any("datacenters_available" in o.provider_data for o in result.offers)


@pytest.mark.parametrize("creds", [{}, {"RUNPOD_API_KEY": "rp_SECRET_KEY"}])
def test_fetch_sends_the_query_and_a_key_only_when_set(creds: dict[str, str]) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"data": {"gpuTypes": []}})

    with HttpClient("runpod", transport=httpx.MockTransport(handler)) as client:
        captures = runpod.fetch(client, creds)
    assert json.loads(seen[0].content) == {"query": runpod.GPU_TYPES_QUERY}
    if creds:
        assert seen[0].headers["authorization"] == "Bearer rp_SECRET_KEY"
    else:
        assert "authorization" not in seen[0].headers
    assert "SECRET" not in captures[0].model_dump_json()
    assert runpod.parse(captures).offers == []


def test_fixtures_match_their_manifest() -> None:
    entries = {e.file: e for e in read_manifest(FIX)}
    for file, url in ((JSON_LD, "https://www.runpod.io/pricing"),
                      (NEXT_DATA, "https://www.runpod.io/gpu-instance/pricing")):
        assert sha256((FIX / file).read_bytes()) == entries[file].sha256
        assert entries[file].url == url
    assert {"gpu_types_lowestprice_oniq_2026-08-25.json", FIVE_FIELDS,
            "docs_example_gpu_type_by_id_lowestprice.json"} <= set(entries)


def test_fetch_never_falls_back_to_the_pricing_page() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(503)

    with (HttpClient("runpod", transport=httpx.MockTransport(handler),
                     sleep=lambda _: None) as client, pytest.raises(FetchError)):
        runpod.fetch(client, {})
    assert seen and {(r.method, str(r.url)) for r in seen} == {("POST", runpod.GRAPHQL_URL)}


@pytest.mark.parametrize(("status", "keyed", "says", "transient"), [
    (410, False, "GraphQL gpuTypes query is gone (HTTP 410)", False),
    (429, False, "set RUNPOD_API_KEY to send it with your key", True),
    (429, True, "rate-limited the GraphQL gpuTypes query (HTTP 429, retried): try again", True),
])
def test_a_retired_or_rate_limited_query_is_said_in_words(status: int, keyed: bool, says: str,
                                                           transient: bool) -> None:
    attempts: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        attempts.append(request)
        return httpx.Response(status, json={"errors": [{"message": "nope"}]})

    creds = {"RUNPOD_API_KEY": "k-123"} if keyed else {}
    with (HttpClient("runpod", transport=httpx.MockTransport(handler),
                     sleep=lambda _: None) as client,
          pytest.raises(FetchError) as caught):
        runpod.fetch(client, creds)
    assert says in str(caught.value)
    assert (caught.value.status, caught.value.transient) == (status, transient)
    # 429 is retried before it is reported; 410 is final at once
    assert (len(attempts) > 1) == (status == 429)
    assert all(("authorization" in r.headers) == keyed for r in attempts)


def test_other_failures_keep_their_own_message() -> None:
    with (HttpClient("runpod", transport=httpx.MockTransport(lambda r: httpx.Response(403)),
                     sleep=lambda _: None) as client,
          pytest.raises(FetchError, match=r"^runpod: HTTP 403")):
        runpod.fetch(client, {})
