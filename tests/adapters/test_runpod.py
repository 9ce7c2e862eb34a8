"""adapters/runpod.py on recorded GraphQL gpuTypes responses and the REST catalog's documented
example, and how the two stand in for each other."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from invariants import FIXTURES, OfferInvariants, load_capture

from gpuscout.adapters import runpod
from gpuscout.adapters.archive import Capture, ReplayTransport, read_manifest, sha256
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import load_catalog
from gpuscout.core.clock import now_utc
from gpuscout.core.errors import FetchError, ParseError
from gpuscout.core.models import Availability, ParsedOffer, ParseResult, PriceKind, PricingModel
from gpuscout.pipeline.refresh import Source, collect, load, new_run_id
from gpuscout.pipeline.settings import Settings
from gpuscout.warehouse.connection import connect
from gpuscout.warehouse.load import RunRecord

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


def test_fetch_without_a_key_sends_the_graphql_query_alone() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"data": {"gpuTypes": []}})

    with HttpClient("runpod", transport=httpx.MockTransport(handler)) as client:
        captures = runpod.fetch(client, {})
    assert [(r.method, str(r.url)) for r in seen] == [("POST", runpod.GRAPHQL_URL)]
    assert json.loads(seen[0].content) == {"query": runpod.GPU_TYPES_QUERY}
    assert "authorization" not in seen[0].headers
    assert runpod.parse(captures).offers == []


def test_fetch_with_a_key_asks_the_rest_catalog_and_graphql_with_it() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"gpus": []} if request.method == "GET"
                              else {"data": {"gpuTypes": []}})

    with HttpClient("runpod", transport=httpx.MockTransport(handler)) as client:
        captures = runpod.fetch(client, {"RUNPOD_API_KEY": "rp_SECRET_KEY"})
    assert [(r.method, str(r.url)) for r in seen] == [
        ("GET", f"{runpod.REST_URL}?include=AVAILABILITY&product=POD"),
        ("POST", runpod.GRAPHQL_URL)]
    assert json.loads(seen[1].content) == {"query": runpod.GPU_TYPES_QUERY}
    assert {r.headers["authorization"] for r in seen} == {"Bearer rp_SECRET_KEY"}
    assert "SECRET" not in json.dumps([c.model_dump_json() for c in captures])
    result = runpod.parse(captures)
    assert (result.offers, result.rejects, result.complete) == ([], [], True)


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


@pytest.mark.parametrize(("status", "says", "transient"), [
    (410, "GraphQL gpuTypes query is gone (HTTP 410): RunPod retired it for the REST catalog, "
          "which this adapter reads when RUNPOD_API_KEY is set", False),
    (429, "set RUNPOD_API_KEY to read the REST catalog, or try again later", True),
])
def test_a_retired_or_rate_limited_query_is_said_in_words(status: int, says: str,
                                                           transient: bool) -> None:
    attempts: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        attempts.append(request)
        return httpx.Response(status, json={"errors": [{"message": "nope"}]})

    with (HttpClient("runpod", transport=httpx.MockTransport(handler),
                     sleep=lambda _: None) as client,
          pytest.raises(FetchError) as caught):
        runpod.fetch(client, {})
    assert says in str(caught.value)
    assert (caught.value.status, caught.value.transient) == (status, transient)
    # 429 is retried before it is reported; 410 is final at once
    assert (len(attempts) > 1) == (status == 429)
    assert not any("authorization" in r.headers for r in attempts)


def test_other_failures_keep_their_own_message() -> None:
    with (HttpClient("runpod", transport=httpx.MockTransport(lambda r: httpx.Response(403)),
                     sleep=lambda _: None) as client,
          pytest.raises(FetchError, match=r"^runpod: HTTP 403")):
        runpod.fetch(client, {})


# -- the REST catalog, and the two sources standing in for each other ----------------------------

REST = "rest_catalog_gpus_docs_example_a900806.json"
REST_URL = "https://api.runpod.io/v2/catalog/gpus?include=AVAILABILITY&product=POD"
RTX4090 = "NVIDIA GeForce RTX 4090"


def _rest() -> Capture:
    return load_capture(FIX, REST)


def _rest_with(doc: Any, url: str = REST_URL) -> Capture:
    return _rest().model_copy(update={"body": json.dumps(doc).encode(), "url": url})


def _rest_doc() -> dict[str, Any]:
    return json.loads((FIX / REST).read_bytes())


def _rest_from_graphql() -> dict[str, Any]:
    """The bundled GraphQL capture's on-demand fields restated in the REST catalog's documented
    schema (no recorded REST body exists): the same GPU types, flags and prices."""
    types = json.loads((SNAP / LIVE).read_bytes())["data"]["gpuTypes"]
    return {"gpus": [{"id": t["id"], "name": t["displayName"], "memory": t["memoryInGb"],
                      "secure": t["secureCloud"], "community": t["communityCloud"],
                      "price": {"secure": t["securePrice"], "community": t["communityPrice"]},
                      "maxCount": {"secure": t["maxGpuCount"], "community": t["maxGpuCount"]},
                      **({"availability": t["lowestPrice"]["stockStatus"].upper()}
                         if (t.get("lowestPrice") or {}).get("stockStatus") else {})}
                     for t in types]}


class TestRunpodRestInvariants(OfferInvariants):
    NAME = "runpod"
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture(params=["docs example", "restated 2026-08-25 capture"])
    def offers(self, request: pytest.FixtureRequest) -> list[ParsedOffer]:
        capture = _rest() if request.param == "docs example" else _rest_with(_rest_from_graphql())
        return runpod.parse([capture]).offers


def test_rest_catalog_example_in_full() -> None:
    result = runpod.parse([_rest()])
    by_key = {o.offer_key: o for o in result.offers}
    assert set(by_key) == {f"{RTX4090}|secure|on_demand", f"{RTX4090}|community|on_demand"}
    secure, community = by_key[f"{RTX4090}|secure|on_demand"], by_key[
        f"{RTX4090}|community|on_demand"]
    assert (secure.price_per_hour, community.price_per_hour) == (0.44, 0.31)
    assert {(o.gpu_label, o.gpu_count, o.vram_gb_per_gpu, o.pricing_model, o.price_kind,
             o.currency, o.region) for o in result.offers} == {
        (RTX4090, 1, 24.0, PricingModel.ON_DEMAND, PriceKind.LISTED, "USD", None)}
    # availability and dataCenters describe the cloud the request names: SECURE by default
    assert secure.availability is Availability.IN_STOCK
    assert secure.provider_data == {"display_name": "RTX 4090", "cloud": "secure",
                                    "price_field": "price.secure", "max_gpu_count": 8,
                                    "stock_status": "HIGH", "datacenters_available": "US-KS-2"}
    assert community.availability is Availability.UNKNOWN
    assert community.provider_data == {"display_name": "RTX 4090", "cloud": "community",
                                       "price_field": "price.community", "max_gpu_count": 4}
    assert (secure.source_url, secure.observed_at) == (
        REST_URL, datetime(2026, 8, 18, 17, 29, 12, tzinfo=UTC))
    # no spot in the REST catalog: said, and nothing may be closed for it
    assert result.complete is False
    (notice,) = result.rejects
    assert (notice.reason, notice.raw, notice.offer_key) == (runpod.SPOT_NOT_READ, REST_URL, None)


def test_rest_stock_of_the_community_cloud_when_the_request_names_it() -> None:
    result = runpod.parse([_rest_with(_rest_doc(), url=REST_URL + "&cloud=COMMUNITY")])
    stock = {o.provider_data["cloud"]: o.availability for o in result.offers}
    assert stock == {"secure": Availability.UNKNOWN, "community": Availability.IN_STOCK}


@pytest.mark.parametrize(("level", "stock", "centres"), [
    ("NONE", Availability.OUT_OF_STOCK, None), ("LOW", Availability.LOW, "US-KS-2"),
    ("MEDIUM", Availability.IN_STOCK, "US-KS-2"), ("SOON", Availability.UNKNOWN, None),
])
def test_rest_availability_levels(level: str, stock: Availability, centres: str | None) -> None:
    doc = _rest_doc()
    doc["gpus"][0]["availability"] = level
    doc["gpus"][0]["dataCenters"][0]["availability"] = level
    secure = next(o for o in runpod.parse([_rest_with(doc)]).offers
                  if o.provider_data["cloud"] == "secure")
    assert secure.availability is stock
    assert secure.provider_data.get("datacenters_available") == centres


def test_rest_keys_are_the_graphql_keys_of_the_same_gpu_types() -> None:
    rest = {o.offer_key: o.price_per_hour
            for o in runpod.parse([_rest_with(_rest_from_graphql())]).offers}
    graphql = {o.offer_key: o.price_per_hour for o in runpod.parse([load_capture(SNAP, LIVE)])
               .offers if o.pricing_model is PricingModel.ON_DEMAND}
    assert rest == graphql  # 15 on-demand offers, MI300X's community placeholder left out
    assert len(rest) == 15


@pytest.mark.parametrize(("edit", "reason", "key"), [
    (lambda g: g.update(secure=False), None, None),  # not offered there: no offer, no reject
    (lambda g: g["price"].update(secure=0), None, None),
    (lambda g: g["price"].update(secure=None), None, None),
    (lambda g: g.pop("secure"), "price.secure without a boolean 'secure' flag: may be a "
                                "placeholder", f"{RTX4090}|secure|on_demand"),
    (lambda g: g["price"].update(secure="0.44"), "price.secure is not a price: '0.44'",
     f"{RTX4090}|secure|on_demand"),
])
def test_rest_entry_rules(edit: Any, reason: str | None, key: str | None) -> None:
    doc = _rest_doc()
    edit(doc["gpus"][0])
    doc["gpus"].append({"name": "no id", "secure": True, "community": True, "price": {}})
    result = runpod.parse([_rest_with(doc)])
    assert [o.offer_key for o in result.offers] == [f"{RTX4090}|community|on_demand"]
    expected = [(key, reason)] if reason else []
    assert [(r.offer_key, r.reason) for r in result.rejects] == [
        *expected, (None, "gpus entry without an id"), (None, runpod.SPOT_NOT_READ)]


@pytest.mark.parametrize(("body", "field"), [
    ({"data": []}, "gpus"), ({"gpus": {}}, "gpus"),
    ({"gpus": [{"id": "x", "secure": True, "community": True, "prices": {}}]}, "price"),
])
def test_a_rest_body_of_another_shape_is_a_parse_error(body: Any, field: str) -> None:
    with pytest.raises(ParseError) as err:
        runpod.parse([_rest_with(body)])
    assert (err.value.field, err.value.url) == (field, REST_URL)


def test_with_both_sources_graphql_wins_a_shared_key_and_the_result_is_complete() -> None:
    rest = _rest()
    doc = _rest_doc()
    doc["gpus"].append({"id": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "memory": 96,
                        "secure": True, "community": False, "price": {"secure": 1.79}})
    graphql = load_capture(SNAP, LIVE)
    result = runpod.parse([rest.model_copy(update={"body": json.dumps(doc).encode()}), graphql])
    by_key = {o.offer_key: o for o in result.offers}
    assert (result.complete, result.rejects) == (True, [])
    assert by_key[f"{RTX4090}|secure|on_demand"].price_per_hour == 0.74  # GraphQL's, not 0.44
    assert by_key[f"{RTX4090}|secure|on_demand"].source_url == runpod.GRAPHQL_URL
    assert len(result.offers) == 30 + 1  # a type only the REST catalog lists is kept


@pytest.mark.parametrize("broken", ["rest", "graphql"])
def test_one_source_that_cannot_be_read_leaves_the_other(broken: str) -> None:
    reshaped = b'{"message": "upstream changed"}'
    rest, graphql = _rest_with(_rest_from_graphql()), load_capture(SNAP, LIVE)
    if broken == "rest":
        rest = rest.model_copy(update={"body": reshaped})
    else:
        graphql = graphql.model_copy(update={"body": reshaped})
    result = runpod.parse([rest, graphql])
    reasons = [r.reason for r in result.rejects]
    if broken == "rest":  # GraphQL is the whole listing: complete
        assert (len(result.offers), result.complete) == (30, True)
        assert len(reasons) == 1 and reasons[0].startswith("REST catalog not read: runpod: ")
    else:  # the REST catalog alone: on-demand only, incomplete, and why
        assert (len(result.offers), result.complete) == (15, False)
        assert {o.pricing_model for o in result.offers} == {PricingModel.ON_DEMAND}
        assert reasons[0].startswith("GraphQL gpuTypes not read: runpod: expected data.gpuTypes")
        assert reasons[1:] == [runpod.SPOT_NOT_READ]


class _Server(httpx.BaseTransport):
    """RunPod as a live server would answer, each source with its status: the REST catalog
    restating the bundled GraphQL capture, GraphQL the capture itself."""

    def __init__(self, rest: int = 200, graphql: int = 200) -> None:
        self.status = {"GET": rest, "POST": graphql}
        self.seen: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        status = self.status[request.method]
        if status != 200:
            return httpx.Response(status, json={"errors": [{"message": "nope"}]},
                                  request=request)
        body = (json.dumps(_rest_from_graphql()).encode() if request.method == "GET"
                else (SNAP / LIVE).read_bytes())
        return httpx.Response(200, content=body, request=request)


KEY = {"RUNPOD_API_KEY": "rp-key"}


@pytest.mark.parametrize("status", [410, 429])
def test_graphql_retired_or_rate_limited_falls_back_to_the_rest_catalog(status: int) -> None:
    server = _Server(graphql=status)
    with HttpClient("runpod", transport=server, sleep=lambda _: None) as client:
        captures = runpod.fetch(client, KEY)
        assert [e.status for e in client.errors] == [status]  # the run log says why
    assert [urlsplit(c.url).path for c in captures] == ["/v2/catalog/gpus"]
    result = runpod.parse(captures)
    assert (len(result.offers), result.complete) == (15, False)
    assert [r.reason for r in result.rejects] == [runpod.SPOT_NOT_READ]


@pytest.mark.parametrize("status", [401, 403, 503])
def test_a_failing_rest_catalog_falls_back_to_graphql(status: int) -> None:
    server = _Server(rest=status)
    with HttpClient("runpod", transport=server, sleep=lambda _: None) as client:
        captures = runpod.fetch(client, KEY)
    assert [c.url for c in captures] == [runpod.GRAPHQL_URL]
    result = runpod.parse(captures)
    assert result == runpod.parse([c.model_copy(update={"fetched_at": captures[0].fetched_at})
                                   for c in [load_capture(SNAP, LIVE)]])
    assert (len(result.offers), result.rejects, result.complete) == (30, [], True)


def test_when_neither_source_answers_the_fetch_says_why_for_each() -> None:
    with (HttpClient("runpod", transport=_Server(rest=403, graphql=410),
                     sleep=lambda _: None) as client,
          pytest.raises(FetchError) as caught):
        runpod.fetch(client, KEY)
    assert str(caught.value).startswith("runpod: no source could be read: REST catalog: "
                                        "runpod: HTTP 403")
    assert "GraphQL gpuTypes: runpod: RunPod's GraphQL gpuTypes query is gone (HTTP 410): " \
           "RunPod retired it for the REST catalog (" in str(caught.value)
    assert caught.value.transient is False


def test_a_rest_only_refresh_closes_no_spot_offer(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNPOD_API_KEY", "rp-key")
    db = tmp_path / "w.duckdb"
    settings = Settings()

    def refreshed(transport: httpx.BaseTransport, settings: Settings = settings) -> RunRecord:
        collected = collect("runpod", source=Source("live"), transport=transport,
                            recorder=None, settings=settings, catalog=load_catalog())
        with connect(db) as con:
            return load(con, collected, run_id=new_run_id(now_utc()), mode="live",
                        settings=settings)

    first = refreshed(_Server())
    assert (first.status, first.complete, first.offers_loaded) == ("ok", True, 30)
    # GraphQL retired: the REST catalog alone states stock for the cloud asked only, so the
    # drift gate holds the night back until the operator accepts the switch once
    held = refreshed(_Server(graphql=410))
    assert (held.status, held.offers_loaded, held.closed_offers) == ("drift", 0, 0)
    assert held.error and "stock empty" in held.error
    accepted = Settings(drift_field_share=0.01)  # GPUSCOUT_DRIFT_FIELD_SHARE=0.01, once
    second = refreshed(_Server(graphql=410), accepted)
    assert (second.status, second.complete, second.offers_loaded) == ("ok", False, 15)
    assert (second.closed_offers, second.unchanged_offers) == (0, 15)
    assert second.error and second.error.startswith("incomplete: ") and "HTTP 410" in second.error
    with connect(db, read_only=True) as con:
        open_now = con.execute("SELECT pricing_model, count(*) FROM current_offers WHERE "
                               "provider = 'runpod' GROUP BY 1 ORDER BY 1").fetchall()
        quarantined = con.execute("SELECT reason FROM quarantine WHERE provider = 'runpod' "
                                  "AND run_id = $1", [second.run_id]).fetchall()
    assert open_now == [("on_demand", 15), ("spot", 15)]
    assert quarantined == [(runpod.SPOT_NOT_READ,)]


def test_nothing_to_read_is_no_offer_and_no_notice() -> None:
    assert runpod.parse([]) == ParseResult()
