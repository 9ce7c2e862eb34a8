"""adapters/gcp.py: Cloud Billing Catalog pages, composition checked against the pricing page."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest
from invariants import FIXTURES, OfferInvariants, load_capture
from selectolax.lexbor import LexborHTMLParser

from gpuscout.adapters import gcp
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, load_catalog
from gpuscout.core.errors import FetchError, MissingCredentialsError, ParseError
from gpuscout.core.models import ParsedOffer, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "gcp"
FIX = FIXTURES / "gcp"
LAST_PAGE = "cloudbilling_skus_a2_last_page_assembled_opencost_42976a2.json"
FIRST_PAGE = "cloudbilling_skus_page_portion_opencost_42976a2.json"
ERROR = "cloudbilling_error_invalid_api_key_opencost.json"
PRICING_PAGE = "gcp_gpu_pricing_ewyluda_1e77fb7.html"
GPU_SKUS_2025 = "cloudbilling_compute_gpu_skus_2025-06-17.json"
TOKEN = json.loads((FIX / FIRST_PAGE).read_bytes())["nextPageToken"]
A2_REGIONS = ("us-central1", "us-east1", "us-west1")
A2_TYPES = ("a2-highgpu-1g", "a2-highgpu-2g", "a2-highgpu-4g", "a2-highgpu-8g", "a2-megagpu-16g")
# Composed vs published whole-instance price: relative tolerance (they agree to 1e-9 today).
TOLERANCE = 1e-4


def _last_page() -> Capture:
    return load_capture(SNAP, LAST_PAGE)


def _with_doc(doc: Any) -> Capture:
    return _last_page().model_copy(update={"body": json.dumps(doc).encode()})


def _skus() -> list[dict[str, Any]]:
    return json.loads(_last_page().body)["skus"]


def _pricing_page() -> dict[str, dict[str, float | None]]:
    """Machine type -> shape and on-demand price, from the pricing page's tables."""
    tree = LexborHTMLParser((FIX / PRICING_PAGE).read_text("utf-8"))
    rows: dict[str, dict[str, float | None]] = {}
    for tr in tree.css("table tr"):
        cells = [" | ".join(p.text(strip=True) for p in td.css("p")) or td.text(strip=True)
                 for td in tr.css("td")]
        if len(cells) < 4 or not re.match(r"^[a-z]\d", cells[0]):
            continue

        def number(pattern: str, text: str) -> float | None:
            m = re.search(pattern, text)
            return float(m.group(1).replace(",", "")) if m else None

        rows[cells[0]] = {
            "gpus": number(r"GPUs:\s*([\d.,]+)(?!\s*/)", cells[2]),
            "vcpus": number(r"vCPUs:\s*([\d,]+)", cells[2]),
            "ram_gib": number(r"Memory:\s*([\d,]+)\s*GiB", cells[2]),
            "price": number(r"^\$\s*([\d.]+)\s*/\s*1 hour", cells[3]),
        }
    return rows


class TestGcpInvariants(OfferInvariants):
    NAME = "gcp"
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture(params=[(SNAP, LAST_PAGE), (FIX, FIRST_PAGE)], ids=[LAST_PAGE, FIRST_PAGE])
    def offers(self, request: pytest.FixtureRequest) -> list[ParsedOffer]:
        return gcp.parse([load_capture(*request.param)]).offers


def test_a2_offers_composed_per_region() -> None:
    result = gcp.parse([_last_page()])
    assert result.rejects == []
    assert sorted(o.offer_key for o in result.offers) == sorted(
        f"{t}|{r}|on_demand" for t in A2_TYPES for r in A2_REGIONS)
    assert {(o.price_kind, o.pricing_model, o.currency) for o in result.offers} == {
        (PriceKind.DERIVED, PricingModel.ON_DEMAND, "USD")}
    offers = {o.offer_key: o for o in result.offers}
    one = offers["a2-highgpu-1g|us-central1|on_demand"]
    assert (one.price_per_hour, one.gpu_label, one.gpu_count, one.vcpus, one.ram_gb) == (
        3.673385, "nvidia-tesla-a100", 1, 12, 91.3)
    assert one.provider_data == {
        "formula": "1 x GPU + 12 x core + 85 GiB x RAM",
        "gpu_sku": "039F-D0DA-4055", "gpu_per_hour": 2.933908,
        "core_sku": "2922-40C5-B19F", "core_per_hour": 0.031611,
        "ram_sku": "2390-DCAF-DA38", "ram_per_gib_hour": 0.004237,
        "ram_gib": 85.0, "location": "Americas",
    }
    assert one.source_url == _last_page().url and "key=REDACTED" in one.source_url
    assert offers["a2-highgpu-8g|us-west1|on_demand"].price_per_hour == 29.38708
    mega = offers["a2-megagpu-16g|us-east1|on_demand"]
    assert (mega.price_per_hour, mega.gpu_count, mega.vcpus) == (55.739504, 16, 96)


def test_composition_matches_the_pricing_page() -> None:
    page = _pricing_page()
    offers = gcp.parse([_last_page()]).offers
    composed = {o.instance_type: o.price_per_hour for o in offers if o.region == "us-central1"}
    assert set(composed) == set(A2_TYPES)
    for machine, price in composed.items():
        listed = page[machine]["price"]
        assert listed is not None
        assert abs(price - listed) <= TOLERANCE * listed, machine


def test_machine_type_table_matches_the_pricing_page_shapes() -> None:
    page = _pricing_page()
    for m in gcp.machine_types():
        assert page[m.name]["gpus"] == m.gpu_count, m.name
        assert page[m.name]["vcpus"] == m.vcpus, m.name
        assert page[m.name]["ram_gib"] == m.ram_gib, m.name
        assert m.source


def test_component_names_are_real_sku_names() -> None:
    descriptions = {s["description"] for s in json.loads((FIX / GPU_SKUS_2025).read_bytes())}
    for m in gcp.machine_types():
        for usage in gcp.USAGES:
            gpu = gcp.component_names(m, usage)["gpu"]
            assert f"{gpu} running in Americas" in descriptions, (m.name, usage)
    assert gcp.component_names(gcp.machine_types()[0], "Preemptible") == {
        "gpu": "Nvidia Tesla A100 GPU attached to Spot Preemptible VMs",
        "core": "Spot Preemptible A2 Instance Core",
        "ram": "Spot Preemptible A2 Instance Ram",
    }


def test_accelerator_labels_resolve() -> None:
    catalog = load_catalog()
    expected = {"nvidia-tesla-a100": "a100-sxm-40gb", "nvidia-l4": "l4-24gb"}
    assert {m.accelerator_type for m in gcp.machine_types()} == set(expected)
    for label, gpu in expected.items():
        res = catalog.resolve("gcp", label)
        assert isinstance(res, Resolved) and res.gpu_id == gpu


def test_first_page_ignores_unrelated_skus_in_other_currencies() -> None:
    # T2D/E2 SKUs priced in IDR are no component of any machine type in the table.
    result = gcp.parse([load_capture(FIX, FIRST_PAGE)])
    assert (len(result.offers), result.rejects) == (15, [])


def test_missing_or_ambiguous_components_are_rejects() -> None:
    gpu, ram, core = _skus()
    no_core = gcp.parse([_with_doc({"skus": [gpu, ram]})])
    assert no_core.offers == []
    assert len(no_core.rejects) == 15
    assert no_core.rejects[0].reason == "no 'A2 Instance Core' (OnDemand) in us-central1"
    twice = {**core, "skuId": "0000-0000-0000", "serviceRegions": ["us-east1"]}
    result = gcp.parse([_with_doc({"skus": [gpu, ram, core, twice]})])
    assert {o.region for o in result.offers} == {"us-central1", "us-west1"}
    assert {r.reason for r in result.rejects} == {
        "2 SKUs named 'A2 Instance Core' (OnDemand) in us-east1"}


def test_component_in_another_currency_or_unit_is_a_reject() -> None:
    gpu, ram, core = _skus()
    info = ram["pricingInfo"][0]
    rate = info["pricingExpression"]["tieredRates"][0]
    idr = {**ram, "pricingInfo": [{**info, "pricingExpression": {
        **info["pricingExpression"],
        "tieredRates": [{**rate, "unitPrice": {**rate["unitPrice"], "currencyCode": "IDR"}}]}}]}
    result = gcp.parse([_with_doc({"skus": [gpu, idr, core]})])
    assert result.offers == []
    assert {r.reason for r in result.rejects} == {"components in several currencies: "
                                                  "['IDR', 'USD']"}
    hourly = {**ram, "pricingInfo": [{**info, "pricingExpression": {
        **info["pricingExpression"], "usageUnit": "h"}}]}
    result = gcp.parse([_with_doc({"skus": [gpu, hourly, core]})])
    assert {r.reason for r in result.rejects} == {
        "SKU 2390-DCAF-DA38 is priced per 'h', not per 'GiBy.h'"}


@pytest.mark.parametrize(("file", "field"), [
    (GPU_SKUS_2025, "skus"),  # a real SKU list without the page envelope
    (ERROR, "error"),  # the real API_KEY_INVALID body
    (PRICING_PAGE, None),  # HTML, not JSON
])
def test_wrong_shape_is_a_parse_error(file: str, field: str | None) -> None:
    with pytest.raises(ParseError) as err:
        gcp.parse([_last_page().model_copy(update={"body": (FIX / file).read_bytes()})])
    assert err.value.field == field


@pytest.mark.parametrize("old", ["serviceRegions", "pricingInfo", "description"])
def test_renamed_field_is_a_parse_error(old: str) -> None:
    skus = [{(f"{old}V2" if k == old else k): v for k, v in s.items()} for s in _skus()]
    with pytest.raises(ParseError) as err:
        gcp.parse([_with_doc({"skus": skus})])
    assert err.value.field == old


def test_live_fetch_needs_the_api_key() -> None:
    with HttpClient("gcp", transport=ReplayTransport(SNAPSHOTS_DIR)) as client, \
            pytest.raises(MissingCredentialsError) as err:
        gcp.fetch(client, {})
    assert err.value.variable == "GCP_API_KEY"


def test_offline_fetch_serves_the_bundled_page_with_any_key() -> None:
    with HttpClient("gcp", transport=ReplayTransport(SNAPSHOTS_DIR),
                    secrets=("replay-placeholder",)) as client:
        captures = gcp.fetch(client, {"GCP_API_KEY": "replay-placeholder"})
    assert [c.body for c in captures] == [(SNAP / LAST_PAGE).read_bytes()]
    assert captures[0].url == _last_page().url
    assert "placeholder" not in captures[0].url
    assert len(gcp.parse(captures).offers) == 15


def _client(handler: Any) -> HttpClient:
    return HttpClient("gcp", transport=httpx.MockTransport(handler), sleep=lambda s: None,
                      secrets=("AIzaSECRET",))


def test_fetch_follows_next_page_token_and_masks_the_key() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.params.get("pageToken") == TOKEN:
            return httpx.Response(200, content=(SNAP / LAST_PAGE).read_bytes())
        return httpx.Response(200, content=(FIX / FIRST_PAGE).read_bytes())

    with _client(handler) as client:
        captures = gcp.fetch(client, {"GCP_API_KEY": "AIzaSECRET"})
    assert len(captures) == 2
    assert [r.url.params.get("key") for r in seen] == ["AIzaSECRET", "AIzaSECRET"]
    assert seen[1].url.params["pageSize"] == "5000"
    assert all("AIzaSECRET" not in c.url for c in captures)
    # the same SKUs on both pages count once
    assert len(gcp.parse(captures).offers) == 15


def test_a_page_failing_half_way_is_a_fetch_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if "pageToken" in request.url.params:
            return httpx.Response(500)
        return httpx.Response(200, content=(FIX / FIRST_PAGE).read_bytes())

    with _client(handler) as client, pytest.raises(FetchError) as err:
        gcp.fetch(client, {"GCP_API_KEY": "AIzaSECRET"})
    assert err.value.transient and err.value.status == 500


def test_invalid_key_is_a_terminal_fetch_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, content=(FIX / ERROR).read_bytes(),
                              headers={"content-type": "application/json"})

    with _client(handler) as client, pytest.raises(FetchError) as err:
        gcp.fetch(client, {"GCP_API_KEY": "AIzaSECRET"})
    assert (err.value.transient, err.value.status) == (False, 400)
    assert "AIzaSECRET" not in str(err.value)
