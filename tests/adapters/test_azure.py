"""adapters/azure.py on Retail Prices pages (bundled assembled page and real fixture pages)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from invariants import FIXTURES, OfferInvariants, load_capture

from gpuscout.adapters import azure
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, load_catalog
from gpuscout.core.errors import FetchError, ParseError
from gpuscout.core.models import NetworkFabric, ParsedOffer, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "azure"
FIX = FIXTURES / "azure"
GPU_PAGE = "retail_prices_gpu_vms_assembled_ewyluda_1f5b058.json"
PAGE0 = "retail_prices_page0_2022-06-06_subset.json"
BARE_LIST = "retail_prices_gpu_items_fieldsubset_ewyluda_1f5b058.json"
LOW_PRIORITY = "Low Priority meter: an Azure Batch low-priority price, not a Spot VM price"

# Every VM size in the snapshots and the GPU the alias table must give it.
SIZES = {
    "Standard_NC24ads_A100_v4": ("a100-pcie-80gb", 1), "Standard_NC48ads_A100_v4": (
        "a100-pcie-80gb", 2), "Standard_NC96ads_A100_v4": ("a100-pcie-80gb", 4),
    "Standard_NC40ads_H100_v5": ("h100-nvl-94gb", 1),
    "Standard_NC80adis_H100_v5": ("h100-nvl-94gb", 2),
    "Standard_ND96asr_v4": ("a100-sxm-40gb", 8), "Standard_ND96amsr_A100_v4": ("a100-sxm-80gb", 8),
    "Standard_ND96isr_H100_v5": ("h100-sxm-80gb", 8),
    "Standard_ND96isr_H200_v5": ("h200-sxm-141gb", 8),
    "Standard_ND96isr_MI300X_v5": ("mi300x-192gb", 8),
}


def _gpu_page() -> Capture:
    return load_capture(SNAP, GPU_PAGE)


def _by_key(offers: list[ParsedOffer]) -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in offers}


def _with_doc(doc: Any) -> Capture:
    return _gpu_page().model_copy(update={"body": json.dumps(doc).encode()})


def _page0_items() -> list[dict[str, Any]]:
    return json.loads((FIX / PAGE0).read_bytes())["Items"]


class TestAzureInvariants(OfferInvariants):
    NAME = "azure"
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return azure.parse([_gpu_page()]).offers


def test_gpu_page_counts_and_rejects() -> None:
    result = azure.parse([_gpu_page()])
    models = [o.pricing_model for o in result.offers]
    assert (len(result.offers), models.count(PricingModel.ON_DEMAND),
            models.count(PricingModel.SPOT)) == (43, 33, 10)
    assert [r.reason for r in result.rejects] == [LOW_PRIORITY] * 10
    assert {o.currency for o in result.offers} == {"USD"}  # from BillingCurrency
    assert {o.price_kind for o in result.offers} == {PriceKind.LISTED}


def test_known_offers_exact() -> None:
    offers = _by_key(azure.parse([_gpu_page()]).offers)
    h100 = offers["Standard_ND96isr_H100_v5|eastus|on_demand"]
    assert (h100.price_per_hour, h100.gpu_count, h100.region, h100.instance_type) == (
        98.32, 8, "eastus", "Standard_ND96isr_H100_v5")
    assert (h100.network, h100.network_gbps) == (NetworkFabric.INFINIBAND, 3200.0)
    assert h100.provider_data["meter_name"] == "ND96isrH100v5"
    assert h100.provider_data["product_name"] == "Virtual Machines NDsr H100 v5 Series"
    assert h100.observed_at == datetime(2026, 10, 1, tzinfo=UTC)
    assert h100.source_url == _gpu_page().url
    spot = offers["Standard_NC24ads_A100_v4|eastus|spot"]
    assert (spot.price_per_hour, spot.gpu_count, spot.network) == (0.67877, 1, None)
    a100 = offers["Standard_ND96asr_v4|eastus|spot"]
    assert (a100.price_per_hour, a100.network_gbps) == (5.904469, 1600.0)
    assert offers["Standard_NC80adis_H100_v5|malaysiawest|spot"].price_per_hour == 3.650426
    assert offers["Standard_ND96isr_MI300X_v5|northeurope|on_demand"].price_per_hour == 57.6
    # A real quirk kept as listed: this Spot meter costs what on-demand costs elsewhere.
    assert offers["Standard_ND96isr_H200_v5|uksouth|spot"].price_per_hour == 106.0
    assert offers["Standard_ND96isr_H200_v5|japaneast|on_demand"].network is None


def test_windows_devtest_and_other_rows_are_dropped() -> None:
    offers = _by_key(azure.parse([_gpu_page()]).offers)
    # ND96isr H100 v5 in centralus exists only as a Windows meter (125.35): no offer.
    assert not any(k.startswith("Standard_ND96isr_H100_v5|centralus") for k in offers)
    assert not any("Windows" in str(o.provider_data["product_name"]) for o in offers.values())
    # The real 2022 first page: Storage, Data Lake, Cloud Services, licences, D/E/F/M sizes,
    # DevTest and Reservation rows: none is a GPU VM, and none is a reject.
    result = azure.parse([load_capture(FIX, PAGE0)])
    assert (result.offers, result.rejects) == ([], [])


def test_every_size_resolves_through_the_alias_table() -> None:
    items = json.loads(_gpu_page().body)["Items"]
    assert {i["armSkuName"] for i in items} == set(SIZES)
    catalog = load_catalog()
    for size, (gpu, count) in SIZES.items():
        res = catalog.resolve("azure", size)
        assert isinstance(res, Resolved) and (res.gpu_id, res.gpu_count) == (gpu, count), size


def test_reservation_price_is_the_term_total_spread_over_its_hours() -> None:
    items = {(i["type"], i.get("reservationTerm")): i for i in _page0_items()
             if i["armSkuName"] == "Standard_D64ds_v5"}
    assert azure._price(items[("Consumption", None)]) == (
        3.616, PricingModel.ON_DEMAND, PriceKind.LISTED, {})
    one = azure._price(items[("Reservation", "1 Year")])
    assert one == (2.133447, PricingModel.RESERVED, PriceKind.DERIVED,
                   {"term": "1 Year", "term_total": 18689.0, "hours_in_term": 8760})
    three = azure._price(items[("Reservation", "3 Years")])
    assert isinstance(three, tuple) and three[0] == 1.374087  # 36111 / 26280
    odd = {**items[("Reservation", "1 Year")], "reservationTerm": "2 Years"}
    assert azure._price(odd) == "reservation term '2 Years' is not one we can spread over hours"


def test_spot_meter_and_unit_rules_on_real_items() -> None:
    spot = next(i for i in _page0_items() if i["meterName"] == "D64s v5 Spot")
    assert azure._price(spot) == (1.0752, PricingModel.SPOT, PriceKind.LISTED, {})
    disk = next(i for i in _page0_items() if i["meterName"] == "E10 Disks")
    assert azure._price(disk) == "unit '1/Month' is not per hour"


def test_gpu_reservation_and_bad_rows_become_offers_or_rejects() -> None:
    doc = json.loads(_gpu_page().body)
    nc24 = next(i for i in doc["Items"] if i["meterName"] == "NC24ads_A100_v4"
                and i["armRegionName"] == "eastus")
    # No real GPU reservation meter was found: the real eastus NC24ads meter, re-typed.
    reserved = {**nc24, "type": "Reservation", "reservationTerm": "1 Year", "retailPrice": 18689}
    unknown_size = {**nc24, "armSkuName": "Standard_ND40s_v3"}
    free = {**nc24, "armRegionName": "westus", "retailPrice": 0}
    result = azure.parse([_with_doc({**doc, "Items": [reserved, unknown_size, free]})])
    (offer,) = result.offers
    assert (offer.offer_key, offer.price_per_hour, offer.price_kind) == (
        "Standard_NC24ads_A100_v4|eastus|reserved|1 Year", 2.133447, PriceKind.DERIVED)
    assert offer.provider_data["term"] == "1 Year"
    assert [r.reason for r in result.rejects] == [
        "no alias row for VM size Standard_ND40s_v3: its GPU count is unknown",
        "retailPrice is not a price: 0",
    ]


def test_fractional_nvads_a10_size_is_marked() -> None:
    # No real NVads A10 v5 meter was found: a real NC meter with its size swapped.
    doc = json.loads(_gpu_page().body)
    nc24 = next(i for i in doc["Items"] if i["meterName"] == "NC24ads_A100_v4")
    nv6 = {**nc24, "armSkuName": "Standard_NV6ads_A10_v5"}
    (offer,) = azure.parse([_with_doc({**doc, "Items": [nv6]})]).offers
    assert offer.gpu_count == 0.1667
    assert offer.provider_data["fractional_gpu"] is True


@pytest.mark.parametrize(("body", "field"), [
    ((FIX / BARE_LIST).read_bytes(), "Items"),  # real items without the page envelope
    (b"<html><body>503 Service Unavailable</body></html>", None),
    (b'{"BillingCurrency": "USD", "Items": {}}', "Items"),
])
def test_wrong_shape_is_a_parse_error(body: bytes, field: str | None) -> None:
    with pytest.raises(ParseError) as err:
        azure.parse([_gpu_page().model_copy(update={"body": body})])
    assert err.value.field == field
    assert err.value.url == _gpu_page().url


@pytest.mark.parametrize(("old", "new"), [("armSkuName", "armSku"),
                                          ("retailPrice", "unitRetailPrice")])
def test_renamed_field_is_a_parse_error(old: str, new: str) -> None:
    doc = json.loads(_gpu_page().body)
    doc["Items"] = [{(new if k == old else k): v for k, v in i.items()} for i in doc["Items"]]
    with pytest.raises(ParseError) as err:
        azure.parse([_with_doc(doc)])
    assert err.value.field == old


def test_offline_fetch_serves_the_bundled_page() -> None:
    with HttpClient("azure", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = azure.fetch(client, {})
    assert [c.body for c in captures] == [(SNAP / GPU_PAGE).read_bytes()]
    assert captures[0].url == _gpu_page().url
    assert "%24filter=serviceName+eq+'Virtual+Machines'" in captures[0].url
    assert len(azure.parse(captures).offers) == 43


def _client(handler: Any, sleeps: list[float] | None = None) -> HttpClient:
    return HttpClient("azure", transport=httpx.MockTransport(handler),
                      sleep=(sleeps.append if sleeps is not None else lambda s: None))


def test_fetch_follows_next_page_link() -> None:
    page0 = (FIX / PAGE0).read_bytes()
    last = (SNAP / GPU_PAGE).read_bytes()
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, content=last if "skip" in str(request.url) else page0)

    with _client(handler) as client:
        captures = azure.fetch(client, {})
    assert len(captures) == 2
    # NextPageLink is "https://prices.azure.com:443/...?$skip=100"; httpx drops the default port
    assert seen[1] == "https://prices.azure.com/api/retail/prices?$skip=100"
    assert len(azure.parse(captures).offers) == 43


def test_a_page_failing_half_way_is_a_fetch_error() -> None:
    page0 = (FIX / PAGE0).read_bytes()

    def handler(request: httpx.Request) -> httpx.Response:
        if "skip" in str(request.url):
            return httpx.Response(503)
        return httpx.Response(200, content=page0)

    with _client(handler) as client, pytest.raises(FetchError) as err:
        azure.fetch(client, {})
    assert err.value.transient and err.value.status == 503


def test_429_is_retried_after_its_delay() -> None:
    calls: list[int] = []
    sleeps: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        if len(calls) == 1:
            return httpx.Response(429, headers={"Retry-After": "7"})
        return httpx.Response(200, content=(SNAP / GPU_PAGE).read_bytes())

    with _client(handler, sleeps) as client:
        captures = azure.fetch(client, {})
    assert (len(captures), sleeps) == (1, [7.0])


def test_a_next_page_link_loop_is_a_fetch_error() -> None:
    looping = json.dumps({"BillingCurrency": "USD", "Items": [],
                          "NextPageLink": "https://prices.azure.com/api/retail/prices?$skip=1"})

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=looping.encode())

    with _client(handler) as client, pytest.raises(FetchError, match="loops"):
        azure.fetch(client, {})
