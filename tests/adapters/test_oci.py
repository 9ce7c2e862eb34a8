"""adapters/oci.py on the Cost Estimator shapes and the price list."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from invariants import FIXTURES, OfferInvariants, load_capture

from gpuscout.adapters import oci
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import ParsedOffer, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "oci"
FIX = FIXTURES / "oci"
SHAPES = "shapes_gpu_assembled_gpuhunt_2026-09-18.json"
PRODUCTS = "pricelist_products_gpu_items_ewyluda_1e77fb7.json"
PRODUCTS_2024 = "pricelist_products_usd_opencost_f21a777.json"
# On-demand shape prices: per-GPU price x GPUs (the same figures gpuhunt's test expects).
ON_DEMAND = {
    "BM.GPU.H100.8": 80.0, "BM.GPU4.8": 24.4, "BM.GPU.A100-v2.8": 32.0,
    "BM.GPU.MI300X.8": 48.0, "BM.GPU.MI355X.8": 68.8, "BM.GPU.GB200.4": 64.0,
    "BM.GPU.GB300.4": 72.0, "BM.GPU.B300.8": 120.0, "BM.GPU.RTXPRO.8": 36.0, "VM.GPU3.1": 2.95,
}
GPUS = {
    "BM.GPU.H100.8": "h100-sxm-80gb", "BM.GPU4.8": "a100-sxm-40gb",
    "BM.GPU.A100-v2.8": "a100-sxm-80gb", "BM.GPU.MI300X.8": "mi300x-192gb",
    "BM.GPU.MI355X.8": "mi355x-288gb", "BM.GPU.GB200.4": "gb200-186gb",
    "BM.GPU.B300.8": "b300-sxm-288gb", "BM.GPU.RTXPRO.8": "rtx-pro-6000-96gb",
    "VM.GPU3.1": "v100-sxm2-16gb",
}


def _captures(products: Capture | None = None) -> list[Capture]:
    return [load_capture(SNAP, SHAPES), products or load_capture(SNAP, PRODUCTS)]


def _shapes_with(items: list[dict[str, Any]]) -> Capture:
    return load_capture(SNAP, SHAPES).model_copy(
        update={"body": json.dumps({"items": items}).encode()})


def _shape_items() -> list[dict[str, Any]]:
    return json.loads((SNAP / SHAPES).read_bytes())["items"]


def _products_doc() -> dict[str, Any]:
    return json.loads((SNAP / PRODUCTS).read_bytes())


class TestOciInvariants(OfferInvariants):
    NAME = "oci"
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture(params=[PRODUCTS, PRODUCTS_2024])
    def offers(self, request: pytest.FixtureRequest) -> list[ParsedOffer]:
        folder = SNAP if request.param == PRODUCTS else FIX
        return oci.parse(_captures(load_capture(folder, request.param))).offers


def test_every_gpu_shape_priced_per_gpu_times_count() -> None:
    result = oci.parse(_captures())
    assert result.rejects == []
    on_demand = {o.gpu_label: o.price_per_hour for o in result.offers
                 if o.pricing_model == PricingModel.ON_DEMAND}
    assert on_demand == ON_DEMAND
    assert {o.price_kind for o in result.offers if o.pricing_model == PricingModel.ON_DEMAND} \
        == {PriceKind.LISTED}


def test_known_offers_exact() -> None:
    offers = {o.offer_key: o for o in oci.parse(_captures()).offers}
    h100 = offers["BM.GPU.H100.8|on_demand"]
    assert (h100.gpu_count, h100.ram_gb, h100.region, h100.vram_gb_per_gpu, h100.currency) == (
        8, 2048.0, None, None, "USD")
    assert h100.provider_data["part_number"] == "B98415"
    assert h100.provider_data["price_per_gpu_hour"] == 10.0
    assert h100.provider_data["shape_kind"] == "bare_metal"
    assert h100.provider_data["gpu_memory_qty_raw"] == 640.0
    assert h100.observed_at == datetime(2026, 10, 1, 14, 18, 5, tzinfo=UTC)
    assert h100.source_url == "https://apexapps.oracle.com/pls/apex/cetools/api/v1/products" \
                              "?currencyCode=USD"
    gb200 = offers["BM.GPU.GB200.4|on_demand"]
    assert (gb200.gpu_count, gb200.provider_data["display_name"]) == (4, "BM.GPU.GB200.4 (NVL72)")
    assert offers["BM.GPU.B300.8|on_demand"].ram_gb is None  # bundleMemoryQty null


def test_preemptible_is_half_the_on_demand_price_and_derived() -> None:
    offers = oci.parse(_captures()).offers
    spot = [o for o in offers if o.pricing_model == PricingModel.SPOT]
    assert [(o.offer_key, o.price_per_hour, o.price_kind) for o in spot] == [
        ("VM.GPU3.1|spot", 1.475, PriceKind.DERIVED)]
    assert spot[0].provider_data["preemptible_discount"] == 0.5
    assert "blogs.oracle.com" in str(spot[0].provider_data["discount_source"])
    assert spot[0].provider_data["shape_kind"] == "vm"


def test_every_shape_label_resolves_or_is_known_unknown() -> None:
    catalog = load_catalog()
    labels = {o.gpu_label for o in oci.parse(_captures()).offers}
    assert labels == set(GPUS) | {"BM.GPU.GB300.4"}
    for label, gpu in GPUS.items():
        res = catalog.resolve("oci", label)
        assert isinstance(res, Resolved) and res.gpu_id == gpu, label
    gb300 = catalog.resolve("oci", "BM.GPU.GB300.4")  # four GB300 superchips per shape
    assert isinstance(gb300, Resolved) and (gb300.gpu_id, gb300.gpu_count) == ("gb300-288gb", 4)


def test_older_price_list_rejects_shapes_it_cannot_price() -> None:
    result = oci.parse(_captures(load_capture(FIX, PRODUCTS_2024)))
    assert sorted(o.offer_key for o in result.offers) == [
        "BM.GPU.A100-v2.8|on_demand", "BM.GPU.H100.8|on_demand", "BM.GPU4.8|on_demand",
        "VM.GPU3.1|on_demand", "VM.GPU3.1|spot"]
    assert sorted(r.reason for r in result.rejects) == [
        f"part {p} is not in the price list"
        for p in ("B109485", "B110979", "B111758", "B112140", "B112237", "B112613")]


def test_unpriceable_shapes_are_rejects() -> None:
    items = _shape_items()
    hidden = {**items[2], "hidden": True}
    two_parts = {**items[3], "products": items[3]["products"] + items[0]["products"][:1]}
    result = oci.parse([_shapes_with([hidden, two_parts]), load_capture(SNAP, PRODUCTS)])
    assert result.offers == []
    assert [r.reason for r in result.rejects] == [
        "shape is hidden in the Cost Estimator",
        "part B98202 is not in the price list",
    ]
    doc = _products_doc()
    for item in doc["items"]:
        if item["partNumber"] == "B98415":
            item["metricName"] = "OCPU Per Hour"
    per_ocpu = load_capture(SNAP, PRODUCTS).model_copy(update={"body": json.dumps(doc).encode()})
    result = oci.parse([_shapes_with([items[2]]), per_ocpu])
    assert [r.reason for r in result.rejects] == [
        "expected one part priced 'GPU Per Hour', found ['B98415 (OCPU Per Hour)']"]


def test_a_missing_document_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        oci.parse([load_capture(SNAP, SHAPES)])
    assert err.value.field == "products"


@pytest.mark.parametrize(("which", "body", "field"), [
    ("shapes", (SNAP / PRODUCTS).read_bytes(), "name"),  # the price list where shapes belong
    ("shapes", b"[]", "items"),
    ("products", b"<html>Service Unavailable</html>", None),
])
def test_wrong_shape_is_a_parse_error(which: str, body: bytes, field: str | None) -> None:
    captures = _captures()
    index = 0 if which == "shapes" else 1
    captures[index] = captures[index].model_copy(update={"body": body})
    with pytest.raises(ParseError) as err:
        oci.parse(captures)
    assert err.value.field == field


@pytest.mark.parametrize(("which", "old", "new"), [
    ("shapes", "gpuQty", "gpuCount"), ("products", "partNumber", "partNo")])
def test_renamed_field_is_a_parse_error(which: str, old: str, new: str) -> None:
    captures = _captures()
    index = 0 if which == "shapes" else 1
    doc = json.loads(captures[index].body)
    doc["items"] = [{(new if k == old else k): v for k, v in i.items()} for i in doc["items"]]
    captures[index] = captures[index].model_copy(update={"body": json.dumps(doc).encode()})
    with pytest.raises(ParseError) as err:
        oci.parse(captures)
    assert err.value.field == old


def test_offline_fetch_serves_both_documents() -> None:
    with HttpClient("oci", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = oci.fetch(client, {})
    assert [c.body for c in captures] == [(SNAP / SHAPES).read_bytes(),
                                          (SNAP / PRODUCTS).read_bytes()]
    assert [c.url for c in captures] == [load_capture(SNAP, f).url for f in (SHAPES, PRODUCTS)]
    assert len(oci.parse(captures).offers) == 11


def test_fetch_requests_shapes_then_usd_prices() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, json={"items": []})

    with HttpClient("oci", transport=httpx.MockTransport(handler)) as client:
        oci.fetch(client, {})
    assert seen == [oci.SHAPES_URL, f"{oci.PRODUCTS_URL}?currencyCode=USD"]
