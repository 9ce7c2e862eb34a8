"""adapters/hyperbolic.py on the marketplace response Hyperbolic committed with its CLI and the
on-demand rental options of 2026-08-29."""

from __future__ import annotations

import copy
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from invariants import OfferInvariants, load_capture

from gpuscout.adapters import hyperbolic
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, load_catalog
from gpuscout.core.clock import now_utc
from gpuscout.core.errors import FetchError, ParseError
from gpuscout.core.models import Availability, ParsedOffer, PriceKind, PricingModel
from gpuscout.pipeline.refresh import Source, collect, load, new_run_id
from gpuscout.pipeline.settings import Settings
from gpuscout.warehouse.connection import connect
from gpuscout.warehouse.load import RunRecord

SNAP = SNAPSHOTS_DIR / "hyperbolic"
FILE = "hyperbolic_cli_example_output_5813b5c.json"
URL = "https://api.hyperbolic.xyz/v1/marketplace"
OPTIONS = "rental_options_gpu_index_f78dfff_2026-08-29.json"
OPTIONS_URL = "https://api.hyperbolic.ai/v2/alpha/on-demand/rental-options"
GPU_IDS = {
    "NVIDIA-H100-80GB-HBM3": "h100-sxm-80gb", "NVIDIA-H200": "h200-sxm-141gb",
    "NVIDIA-A100-SXM4-80GB": "a100-sxm-80gb", "NVIDIA-GeForce-RTX-4090": "rtx-4090-24gb",
    "NVIDIA-L40S": "l40s-48gb", "NVIDIA-GeForce-RTX-3070": "rtx-3070-8gb",
}


def _capture() -> Capture:
    return load_capture(SNAP, FILE)


def _doc() -> dict[str, Any]:
    return json.loads((SNAP / FILE).read_bytes())


def _with(doc: Any) -> Capture:
    return _capture().model_copy(update={"body": json.dumps(doc).encode()})


def _by_key(offers: list[ParsedOffer]) -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in offers}


def _node(node_id: str) -> dict[str, Any]:
    return copy.deepcopy(next(n for n in _doc()["instances"] if n["id"] == node_id))


class TestHyperbolicInvariants(OfferInvariants):
    NAME = "hyperbolic"
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return hyperbolic.parse([_capture(), _options()]).offers


def _options() -> Capture:
    return load_capture(SNAP, OPTIONS)


def _options_doc() -> list[dict[str, Any]]:
    return json.loads((SNAP / OPTIONS).read_bytes())


def _with_options(doc: Any) -> Capture:
    return _options().model_copy(update={"body": json.dumps(doc).encode()})


def test_bundled_listing_counts() -> None:
    result = hyperbolic.parse([_capture()])
    # the marketplace alone is not the whole provider: nothing may be closed for lack of the
    # on-demand options
    assert (len(result.offers), len(result.rejects), result.complete) == (46, 0, False)
    assert {o.pricing_model for o in result.offers} == {PricingModel.SPOT}
    assert {o.price_kind for o in result.offers} == {PriceKind.OBSERVED}
    assert {(o.currency, o.region, o.gpu_count) for o in result.offers} == {
        ("USD", "region-1", 1)}
    in_stock = [o for o in result.offers if o.availability is Availability.IN_STOCK]
    assert len(in_stock) == 20
    assert sum(o.available_count or 0 for o in result.offers) == 145


def test_h100_node_with_free_gpus_exact_values() -> None:
    o = _by_key(hyperbolic.parse([_capture()]).offers)["sfc-016|spot"]
    assert (o.gpu_label, o.gpu_count, o.price_per_hour, o.pricing_model) == (
        "NVIDIA-H100-80GB-HBM3", 1, 0.99, PricingModel.SPOT)
    assert o.vram_gb_per_gpu == round(81559 / 1024)  # whole GiB, as for Vast.ai
    assert (o.region, o.availability, o.available_count) == ("region-1", Availability.IN_STOCK, 6)
    assert (o.vcpus, o.ram_gb, o.disk_gb, o.interconnect) == (None, None, None, None)
    assert o.provider_data == {
        "price_basis": "per GPU", "gpus_total": 8, "gpus_reserved": 2,
        "cluster_name": "coordinated-dracaena-panther", "status": "node_ready",
        "supplier_id": "MMDsHNxVHIh9lKGK6HmrkfKuD9a2", "reserved": False,
        "has_persistent_storage": True, "gpu_interface": "PCIeX16", "price_agent": "platform",
        "node_cpu_model": "Intel Xeon Platinum 8480", "node_vcpus": 224.0,
        "node_ram_gb": 2165.0, "node_storage_gb": 2400.0}
    assert (o.source_url, o.observed_at) == (URL, datetime(2025, 5, 14, 3, 18, 6, tzinfo=UTC))


@pytest.mark.parametrize(("key", "label", "price", "free", "vram_mib", "availability"), [
    ("l-hgx-02|spot", "NVIDIA-H200", 2.15, 5, 143771, Availability.IN_STOCK),
    ("sfc-030|spot", "NVIDIA-H100-80GB-HBM3", 1.5, 6, 81559, Availability.IN_STOCK),
    ("gpu-cluster-luxembourg-2-y7323-bf8fc547|spot", "NVIDIA-A100-SXM4-80GB", 1.1, 8, 81920,
     Availability.IN_STOCK),
    ("antalpha-super-server100153|spot", "NVIDIA-GeForce-RTX-4090", 0.5, 0, 24564,
     Availability.OUT_OF_STOCK),
    ("ai-server|spot", "NVIDIA-L40S", 0.6, 0, 46068, Availability.OUT_OF_STOCK),
    ("korea-amd9-17|spot", "NVIDIA-GeForce-RTX-3070", 0.16, 0, 8192, Availability.OUT_OF_STOCK),
])
def test_rows(key: str, label: str, price: float, free: int, vram_mib: int,
              availability: Availability) -> None:
    o = _by_key(hyperbolic.parse([_capture()]).offers)[key]
    assert (o.gpu_label, o.price_per_hour, o.available_count, o.availability) == (
        label, price, free, availability)
    assert o.vram_gb_per_gpu == round(vram_mib / 1024)


def test_every_known_label_resolves_to_its_gpu() -> None:
    catalog = load_catalog()
    for o in hyperbolic.parse([_capture()]).offers:
        res = catalog.resolve("hyperbolic", o.gpu_label, o.vram_gb_per_gpu)
        assert isinstance(res, Resolved) and res.gpu_id == GPU_IDS[o.gpu_label], o.offer_key


def test_bad_nodes_are_rejected_and_cpu_nodes_skipped() -> None:
    doc = _doc()
    base = _node("sfc-016")
    mixed = copy.deepcopy(base)
    mixed["hardware"]["gpus"][1]["model"] = "NVIDIA-H200"
    doc["instances"] = [
        {**base, "id": "daily", "pricing": {"price": {"amount": 99, "period": "daily"}}},
        {**base, "id": "text-price", "pricing": {"price": {"amount": "99", "period": "hourly"}}},
        {**base, "id": "free-node", "pricing": {"price": {"amount": 0, "period": "hourly"}}},
        {**base, "id": "over", "gpus_reserved": 9},
        {**base, "id": "no-total", "gpus_total": "8"},
        {**mixed, "id": "mixed"},
        {**base, "id": ""},
        ["not", "a", "node"],
        {**base, "id": "cpu-only", "gpus_total": 0, "gpus_reserved": 0,
         "hardware": {**base["hardware"], "gpus": []}},
    ]
    result = hyperbolic.parse([_with(doc)])
    assert result.offers == []
    assert [r.reason for r in result.rejects] == [
        "price period is 'daily', not 'hourly'",
        "price amount is not a price: '99'",
        "price amount is not a price: 0",
        "gpus_reserved 9 is not a count of the node's 8 GPUs",
        "gpus_total is not a count: '8'",
        'node does not name one GPU model: "NVIDIA-H100-80GB-HBM3", "NVIDIA-H200"',
        "node without an id",
        "node is not an object: list",
    ]


def test_reserved_node_is_out_of_stock_whatever_its_counts() -> None:
    doc = {"instances": [{**_node("sfc-025"), "reserved": True}]}
    (o,) = hyperbolic.parse([_with(doc)]).offers
    assert (o.availability, o.available_count) == (Availability.OUT_OF_STOCK, 0)
    assert o.provider_data["gpus_reserved"] == 0


def test_node_listed_twice_is_one_offer_and_two_prices_are_a_conflict() -> None:
    node = _node("sfc-016")
    same = hyperbolic.parse([_with({"instances": [node, node]})])
    assert [o.offer_key for o in same.offers] == ["sfc-016|spot"]
    assert [r.reason for r in same.rejects] == ["node listed twice in one response"]
    other = copy.deepcopy(node)
    other["pricing"]["price"]["amount"] = 150
    conflict = hyperbolic.parse([_with({"instances": [node, other]})])
    assert conflict.offers == []
    assert [r.reason for r in conflict.rejects] == [
        "the source gives this offer two different prices"] * 2


@pytest.mark.parametrize(("body", "field"), [
    (b"<html><body>502 Bad Gateway</body></html>", None),
    (b'{"detail": "Not authenticated"}', "instances"),
    (b'{"instances": {"sfc-016": {}}}', "instances"),
    (b'[{"id": "sfc-016"}]', "instances"),
])
def test_wrong_shape_is_a_parse_error(body: bytes, field: str | None) -> None:
    with pytest.raises(ParseError) as err:
        hyperbolic.parse([_capture().model_copy(update={"body": body})])
    assert err.value.field == field
    assert err.value.url == URL
    assert err.value.provider == "hyperbolic"


@pytest.mark.parametrize(("old", "new"), [
    ("gpus_total", "gpu_count"), ("pricing", "price_info"), ("hardware", "specs"), ("id", "node"),
])
def test_renamed_field_is_a_parse_error(old: str, new: str) -> None:
    doc = _doc()
    doc["instances"] = [{(new if k == old else k): v for k, v in n.items()}
                        for n in doc["instances"]]
    with pytest.raises(ParseError) as err:
        hyperbolic.parse([_with(doc)])
    assert err.value.field == old


def test_offline_fetch_replays_the_post_by_its_body_and_the_options() -> None:
    with HttpClient("hyperbolic", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = hyperbolic.fetch(client, {})
    assert [c.body for c in captures] == [(SNAP / FILE).read_bytes(),
                                          (SNAP / OPTIONS).read_bytes()]
    assert [(c.url, c.method) for c in captures] == [(URL, "POST"), (OPTIONS_URL, "GET")]
    post = next(e for e in json.loads((SNAP / "manifest.json").read_text())
                if e["method"] == "POST")
    assert post["request_sha256"] == hashlib.sha256(b'{"filters":{}}').hexdigest()
    result = hyperbolic.parse(captures)
    assert (len(result.offers), result.rejects, result.complete) == (46 + 13, [], True)


def test_fetch_sends_the_filter_and_the_key_only_when_set() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"instances": []} if request.method == "POST" else [])

    with HttpClient("hyperbolic", transport=httpx.MockTransport(handler)) as client:
        anonymous = hyperbolic.fetch(client, {})
        hyperbolic.fetch(client, {"HYPERBOLIC_API_KEY": "hb-secret"})
    assert [(r.method, str(r.url)) for r in seen] == [("POST", URL), ("GET", OPTIONS_URL)] * 2
    assert [json.loads(r.content) for r in seen if r.method == "POST"] == [{"filters": {}}] * 2
    assert "authorization" not in seen[0].headers
    assert seen[2].headers["authorization"] == "Bearer hb-secret"
    assert all("authorization" not in r.headers for r in seen if r.method == "GET")
    result = hyperbolic.parse(anonymous)
    assert (result.offers, result.rejects, result.complete) == ([], [], True)


# -- on-demand rental options (2026-08-29) ---------------------------------------------------


def _option_offers() -> dict[str, ParsedOffer]:
    result = hyperbolic.parse([_options()])
    assert result.rejects == []
    return _by_key(result.offers)


def test_every_rental_option_is_one_on_demand_offer_priced_for_the_whole_option() -> None:
    offers = _option_offers()
    got = {(o.region, o.gpu_label, o.gpu_count, o.price_per_hour) for o in offers.values()}
    assert got == {
        ("us-east-1", "H100 SXM5", 1, 3.19), ("us-east-2", "H200 SXM5", 1, 3.99),
        ("ca-east-3", "H100 SXM5", 1, 4.85), ("us-east-1", "H200 SXM5", 1, 4.92),
        ("eu-north-6", "H100 SXM5", 1, 3.58), ("eu-north-7", "H100 SXM5", 1, 3.58),
        ("ca-east-1", "H100 PCIE", 1, 2.75), ("uk-southeast-3", "H100 SXM5", 8, 25.52),
        ("eu-west-3", "H100 SXM5", 8, 25.52), ("eu-west-4", "H100 SXM5", 8, 25.52),
        ("eu-north-4", "H100 SXM5", 8, 25.52), ("eu-north-5", "H200 SXM5", 8, 31.92),
        ("jp-east-1", "H100 SXM5", 8, 25.52)}
    assert {(o.pricing_model, o.price_kind, o.currency) for o in offers.values()} == {
        (PricingModel.ON_DEMAND, PriceKind.LISTED, "USD")}


def test_rental_option_machine_and_stock() -> None:
    offers = _option_offers()
    pcie = offers["ca-east-1|h100-pcie|1x|virtual-machine|on_demand"]
    assert (pcie.availability, pcie.available_count) == (Availability.IN_STOCK, 2)
    assert (pcie.vcpus, pcie.ram_gb, pcie.disk_gb) == (28, 180, 850)
    metal = offers["uk-southeast-3|h100-sxm5|8x|bare-metal|on_demand"]
    assert metal.availability is Availability.UNKNOWN  # no totalAvailable: unknown, not zero
    assert metal.vcpus is None and metal.provider_data["cpu_cores"] == 96
    assert metal.provider_data["connection_type"] == "infiniband"
    assert metal.network is None  # no fabric product is stated
    roce = offers["eu-north-4|h100-sxm5|8x|virtual-machine|on_demand"]
    assert roce.provider_data["ethernet_variant"] == "rocev2"


def test_rental_option_labels_resolve() -> None:
    catalog = load_catalog()
    ids = {o.gpu_label: catalog.resolve("hyperbolic", o.gpu_label, o.vram_gb_per_gpu)
           for o in _option_offers().values()}
    assert {label: r.gpu_id for label, r in ids.items() if isinstance(r, Resolved)} == {
        "H100 SXM5": "h100-sxm-80gb", "H100 PCIE": "h100-pcie-80gb",
        "H200 SXM5": "h200-sxm-141gb"}


def test_a_disabled_option_is_out_of_stock_with_its_price() -> None:
    doc = _options_doc()
    doc[6]["enabled"] = False  # the PCIe option with 2 available
    o = _by_key(hyperbolic.parse([_with_options(doc)]).offers)[
        "ca-east-1|h100-pcie|1x|virtual-machine|on_demand"]
    assert (o.availability, o.price_per_hour) == (Availability.OUT_OF_STOCK, 2.75)


def test_the_supplier_cost_is_never_read_nor_kept() -> None:
    doc = _options_doc()
    doc[0]["providerCostPerHourCents"] = 99999
    doc[1]["costPerHourCents"] = "soon"
    result = hyperbolic.parse([_with_options(doc)])
    assert _by_key(result.offers)["us-east-1|h100-sxm5|1x|virtual-machine|on_demand"] \
        .price_per_hour == 3.19
    (reject,) = result.rejects
    assert reject.reason == "costPerHourCents is not a price: 'soon'"
    assert "providerCost" not in reject.raw
    assert "providerCost" not in json.dumps([o.provider_data for o in result.offers])


@pytest.mark.parametrize(("edit", "field"), [
    (lambda d: d[0].update(spotPerHourCents=199), "spotPerHourCents"),
    (lambda d: [o.update(hourlyCents=o.pop("costPerHourCents")) for o in d], "costPerHourCents"),
    (lambda d: [o.pop("gpuCount") for o in d], "gpuCount"),
])
def test_an_unknown_or_renamed_option_field_is_a_parse_error(edit: Any, field: str) -> None:
    doc = _options_doc()
    edit(doc)
    with pytest.raises(ParseError) as err:
        hyperbolic.parse([_with_options(doc)])
    assert err.value.field == field


@pytest.mark.parametrize("body", [b'{"options": []}', b"null", b"[1, 2"])
def test_an_options_body_that_is_not_an_array_is_a_parse_error(body: bytes) -> None:
    with pytest.raises(ParseError):
        hyperbolic.parse([_options().model_copy(update={"body": body})])


def test_an_odd_option_is_a_reject_and_the_others_load() -> None:
    doc = _options_doc()
    doc[3]["gpuCount"] = 0
    doc.append("h100")
    result = hyperbolic.parse([_with_options(doc)])
    assert len(result.offers) == 12
    assert sorted(r.reason for r in result.rejects) == [
        "gpuCount is not a count of GPUs: 0", "rental option is not an object: str"]


# -- the two sources apart ---------------------------------------------------------------------


class _OnePartFails(httpx.BaseTransport):
    """Both sources answering the bundled bodies as a live server would (fetched now), except
    the one at `failing_url`, which answers `status`."""

    def __init__(self, failing_url: str | None = None, status: int = 404) -> None:
        self.failing_url, self.status = failing_url, status

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if str(request.url) == self.failing_url:
            return httpx.Response(self.status, request=request)
        body = (SNAP / (FILE if str(request.url) == URL else OPTIONS)).read_bytes()
        return httpx.Response(200, content=body, request=request,
                              headers={"content-type": "application/json"})


@pytest.mark.parametrize(("failing", "left", "count"), [
    (URL, OPTIONS_URL, 13),  # the 2025 marketplace gone: the on-demand options still load
    (OPTIONS_URL, URL, 46),
])
def test_a_source_that_does_not_answer_leaves_the_other_to_load(failing: str, left: str,
                                                                  count: int) -> None:
    with HttpClient("hyperbolic", transport=_OnePartFails(failing, 404)) as client:
        captures = hyperbolic.fetch(client, {})
        (error,) = client.errors  # noted for the run log
    assert [c.url for c in captures] == [left]
    assert (error.status, error.url) == (404, failing)
    result = hyperbolic.parse(captures)
    assert (len(result.offers), result.rejects, result.complete) == (count, [], False)


def test_when_neither_source_answers_the_fetch_fails_naming_both() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(403, request=request)

    with HttpClient("hyperbolic", transport=httpx.MockTransport(handler)) as client, \
            pytest.raises(FetchError, match="no source could be read: marketplace: .*403.*"
                                            "; on-demand rental options: .*403") as err:
        hyperbolic.fetch(client, {})
    assert err.value.transient is False


@pytest.mark.parametrize(("broken", "part", "count"), [
    ("marketplace", "marketplace", 13), ("options", "on-demand rental options", 46),
])
def test_a_source_that_cannot_be_read_costs_only_its_own_offers(broken: str, part: str,
                                                                count: int) -> None:
    reshaped = b'{"detail": "Not authenticated"}'  # an answer of another shape
    captures = [_capture(), _options()]
    index = 0 if broken == "marketplace" else 1
    captures[index] = captures[index].model_copy(update={"body": reshaped})
    result = hyperbolic.parse(captures)
    assert (len(result.offers), result.complete) == (count, False)
    (reject,) = result.rejects
    assert reject.reason.startswith(f"{part} not read: hyperbolic: expected ")
    assert (reject.offer_key, reject.raw) == (None, reshaped.decode())


@pytest.mark.parametrize(("failing", "status", "loaded"), [
    # 46 of 59 offers: loaded, incomplete, and the 13 options not read stay open
    (OPTIONS_URL, "ok", 46),
    # 13 of 59 is below the collapse gate's share of the last good count: held back as drift,
    # all kept
    (URL, "drift", 0),
])
def test_a_refresh_with_one_source_down_closes_none_of_its_offers(
        tmp_path: Path, failing: str, status: str, loaded: int) -> None:
    db = tmp_path / "w.duckdb"
    settings = Settings()

    def refreshed(transport: httpx.BaseTransport) -> RunRecord:
        collected = collect("hyperbolic", source=Source("live"), transport=transport,
                            recorder=None, settings=settings, catalog=load_catalog())
        with connect(db) as con:
            return load(con, collected, run_id=new_run_id(now_utc()), mode="live",
                        settings=settings)

    first = refreshed(_OnePartFails())
    assert (first.status, first.complete, first.offers_loaded) == ("ok", True, 59)
    second = refreshed(_OnePartFails(failing, 404))
    assert (second.status, second.complete, second.offers_loaded) == (status, False, loaded)
    assert second.closed_offers == 0
    assert second.error and "HTTP 404" in second.error
    with connect(db, read_only=True) as con:
        open_now = con.execute("SELECT pricing_model, count(*) FROM current_offers WHERE "
                               "provider = 'hyperbolic' GROUP BY 1 ORDER BY 1").fetchall()
    assert open_now == [("on_demand", 13), ("spot", 46)]
