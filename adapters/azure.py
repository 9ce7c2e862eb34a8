"""Azure: GPU VM list prices from the public Retail Prices API (prices.azure.com, no key).

One request with an OData `$filter` for the GPU VM series, then every `NextPageLink` until it is
null; each page is one capture. A page that fails is a FetchError from the shared client, so a
list is never partial (429 is retried there, honouring Retry-After).

Reading rules (adapters/snapshots/azure/PROVENANCE.md lists the payloads behind them):
- An item is one meter: `armSkuName` (the VM size) in `armRegionName`, `retailPrice` per
  `unitOfMeasure`. `type` is Consumption (pay as you go), DevTestConsumption or Reservation.
- Dropped without a reject: other services, non-primary meters, sizes outside NC/ND/NV,
  DevTestConsumption rows and Windows meters (`productName` says "Windows": the Linux meter of
  the same size is the GPU price; Windows adds a licence).
- Consumption: a `meterName` ending in "Spot" is the Spot VM price; "Low Priority" meters are
  Azure Batch low-priority prices, not Spot VMs, and are rejected with that reason.
- Reservation: `retailPrice` is the total for the whole `reservationTerm` although the unit says
  "1 Hour" (2022-06-06 page: D64ds v5 3.616/h pay as you go, 18689 for 1 year, 36111 for
  3 years). The offer is reserved at total / hours in the term, a derived price.
- The GPU count comes from the alias table (`load_catalog()`): the VM size implies it, and
  NVads A10 v5 sizes imply a fraction of one GPU (marked fractional). A size in the NC/ND/NV
  series without an alias row is rejected: its GPU count is unknown.
- InfiniBand only for the ND sizes whose Microsoft size page states it (`ND_NETWORK`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    envelope,
    newest_wins,
    positive_number,
    require_fields,
    split_results,
)
from gpuscout.core.catalog import Resolved, load_catalog
from gpuscout.core.errors import FetchError
from gpuscout.core.models import (
    NetworkFabric,
    ParsedOffer,
    ParseResult,
    PriceKind,
    PricingModel,
    ProviderData,
    Reject,
)

RETAIL_PRICES_URL = "https://prices.azure.com/api/retail/prices"
API_VERSION = "2023-01-01-preview"  # filter values are case-sensitive from this version on
GPU_SERIES = ("Standard_NC", "Standard_ND", "Standard_NV")
GPU_FILTER = (
    "serviceName eq 'Virtual Machines' and "
    "(priceType eq 'Consumption' or priceType eq 'Reservation') and ("
    + " or ".join(f"contains(armSkuName, '{s}')" for s in GPU_SERIES) + ")"
)
QUERY = {"api-version": API_VERSION, "meterRegion": "'primary'", "$filter": GPU_FILTER}
MAX_PAGES = 500  # ~1000 items a page: far above the GPU meters, low enough to stop a loop

NAME = "azure"
SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = ()

ITEM_FIELDS = ("armSkuName", "armRegionName", "retailPrice", "unitOfMeasure", "meterName",
               "productName", "type")
HOURS_PER_TERM = {"1 Year": 8760, "3 Years": 26280, "5 Years": 43800}  # 730 h a month
DOCS = "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/"
# VM size -> (network, Gb/s per VM, source): the size pages' own words, nothing inferred.
ND_NETWORK: dict[str, tuple[NetworkFabric, float, str]] = {
    "Standard_ND96isr_H100_v5": (NetworkFabric.INFINIBAND, 3200.0, DOCS + "ndh100v5-series"),
    "Standard_ND96asr_v4": (NetworkFabric.INFINIBAND, 1600.0, DOCS + "ndasra100v4-series"),
    "Standard_ND96amsr_A100_v4": (NetworkFabric.INFINIBAND, 1600.0, DOCS + "ndma100v4-series"),
    "Standard_ND96isr_MI300X_v5": (NetworkFabric.INFINIBAND, 3200.0,
                                   DOCS + "ndmi300xv5-series"),
}


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    captures = [client.get(RETAIL_PRICES_URL, params=QUERY)]
    seen: set[str] = set()
    while (link := _next_link(captures[-1])) is not None:
        if link in seen or len(captures) >= MAX_PAGES:
            raise FetchError(f"NextPageLink loops or exceeds {MAX_PAGES} pages", provider=NAME,
                             url=link, transient=False)
        seen.add(link)
        captures.append(client.get(link))
    return captures


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every page; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _read_page)


def _read_page(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    currency, items = _page(capture)
    return split_results(_read_item(item, currency, capture) for item in items)


# -- page -------------------------------------------------------------------------------------


def _next_link(capture: Capture) -> str | None:
    doc, _ = envelope(NAME, capture, "Items")
    link = doc.get("NextPageLink")
    return link if isinstance(link, str) and link else None


def _page(capture: Capture) -> tuple[str | None, list[Any]]:
    doc, items = envelope(NAME, capture, "Items")
    currency = doc.get("BillingCurrency")
    # a field no item has was renamed upstream: refuse the page, never read it as empty
    require_fields(NAME, capture, items, ITEM_FIELDS, "item")
    return (currency if isinstance(currency, str) else None), items


# -- one item ---------------------------------------------------------------------------------


def _read_item(item: Any, currency: str | None,
               capture: Capture) -> ParsedOffer | Reject | None:
    """An offer, a reject, or None for a meter that is not a Linux GPU VM price."""
    raw = json.dumps(item, sort_keys=True)
    if not isinstance(item, dict) or any(f not in item for f in ITEM_FIELDS):
        return Reject(provider=NAME, reason="item without the Retail Prices fields", raw=raw)
    size = str(item["armSkuName"])
    if (item.get("serviceName", "Virtual Machines") != "Virtual Machines"
            or item.get("isPrimaryMeterRegion") is False or not size.startswith(GPU_SERIES)
            or item["type"] == "DevTestConsumption" or "Windows" in str(item["productName"])):
        return None
    meter = str(item["meterName"])
    if meter.endswith("Low Priority"):
        return Reject(provider=NAME, raw=raw, reason="Low Priority meter: an Azure Batch "
                      "low-priority price, not a Spot VM price")
    price = _price(item)
    if isinstance(price, str):
        return Reject(provider=NAME, reason=price, raw=raw)
    per_hour, model, kind, extra = price
    res = load_catalog().resolve(NAME, size)
    if not isinstance(res, Resolved) or res.gpu_count is None:
        return Reject(provider=NAME, raw=raw, reason=f"no alias row for VM size {size}: "
                      "its GPU count is unknown")
    region = str(item["armRegionName"])
    key = f"{size}|{region}|{model.value}" + (f"|{extra['term']}" if "term" in extra else "")
    data: ProviderData = {"meter_name": meter, "product_name": str(item["productName"]),
                          **extra}
    for field in ("meterId", "skuId", "skuName", "location", "effectiveStartDate"):
        if isinstance(item.get(field), str):
            data[field] = item[field]
    if res.gpu_count < 1:
        data["fractional_gpu"] = True  # a vGPU slice (NVads A10 v5): not a whole card
    network = ND_NETWORK.get(size)
    if network:
        data["network_source"] = network[2]
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=size, gpu_label=size,
            gpu_count=res.gpu_count, pricing_model=model, price_per_hour=per_hour,
            currency=item.get("currencyCode") or currency or "", price_kind=kind,
            region=region, network=network[0] if network else None,
            network_gbps=network[1] if network else None, source_url=capture.url,
            observed_at=capture.fetched_at, provider_data=data,
        )
    except ValidationError as exc:
        return Reject(provider=NAME, raw=raw, offer_key=key,
                      reason=f"invalid offer: {exc.errors()[0]['msg']}")


def _price(item: dict[str, Any]) -> tuple[float, PricingModel, PriceKind, ProviderData] | str:
    """(price per hour, model, kind, extra provider data), or the reason it cannot be read."""
    value = positive_number(item["retailPrice"])
    if value is None:
        return f"retailPrice is not a price: {item['retailPrice']!r}"
    if item["unitOfMeasure"] != "1 Hour":
        return f"unit {item['unitOfMeasure']!r} is not per hour"
    if item["type"] == "Consumption":
        spot = str(item["meterName"]).endswith("Spot")
        return (value, PricingModel.SPOT if spot else PricingModel.ON_DEMAND,
                PriceKind.LISTED, {})
    if item["type"] == "Reservation":
        term = item.get("reservationTerm")
        hours = HOURS_PER_TERM.get(term) if isinstance(term, str) else None
        if hours is None:
            return f"reservation term {term!r} is not one we can spread over hours"
        return (round(value / hours, 6), PricingModel.RESERVED, PriceKind.DERIVED,
                {"term": str(term), "term_total": value, "hours_in_term": hours})
    return f"price type {item['type']!r} is not Consumption or Reservation"
