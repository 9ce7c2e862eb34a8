"""Prime Intellect: the GPU offers of its compute marketplace, `GET /api/v1/availability/gpus`.

Prime Intellect resells other clouds' machines (`provider`: runpod, hyperstack, lambdalabs,
massedcompute, datacrunch, ... and its own `dc_*` data centres). Each item of the paged listing
(`{"items": [...], "totalCount": N}`, `page`/`page_size` up to 100) is one machine shape in one
data centre: `gpuCount` GPUs of `gpuType` on `socket`, with default vCPUs, RAM and disk, and
one hourly price for the whole machine. One item is one offer.

Reading rules (adapters/snapshots/primeintellect/PROVENANCE.md):
- The underlying cloud is kept (`cloud`, `cloud_instance_type` = `cloudId`, the cloud's own
  plan or GPU id, `cloud_data_center`), so the same machine read from that cloud directly can
  be recognised.
- Price: `prices.communityPrice` when set (community cloud), else `prices.onDemand`, as the
  official CLI (`Prices.price`) reads it; for the whole machine (8 GPUs: 8 x the per-GPU list
  price of the upstream cloud). Currency `prices.currency`, else USD.
- `isSpot` true is a spot offer; anything else on-demand.
- `gpuMemory` is per GPU on one-GPU items; on larger ones it is read only when it equals the
  memory the `gpuType` name states ("H100_80GB") or that times `gpuCount`.
- Label: `gpuType` plus `socket` ("H100_80GB SXM5"), the form factor being part of the GPU.
- `stockStatus` High/Medium/Available: in stock; Low: low; Unavailable: out of stock.
- A listing is complete when its pages hold `totalCount` items; a short page ends the fetch.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pydantic import ValidationError

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    as_dict,
    envelope,
    is_scalar,
    one_price_per_key,
    parse_error,
    positive_number,
    reject,
    require_fields,
    stripped_text,
)
from gpuscout.core.errors import MissingCredentialsError
from gpuscout.core.models import (
    Availability,
    ParsedOffer,
    ParseResult,
    PriceKind,
    PricingModel,
    ProviderData,
    Reject,
)

GPUS_URL = "https://api.primeintellect.ai/api/v1/availability/gpus"
PAGE_SIZE = 100  # the API's maximum
MAX_PAGES = 100  # 10,000 offers: far past the 608 the recorded listing counts

NAME = "primeintellect"
SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = ("PRIME_API_KEY",)

REQUIRED = ("cloudId", "gpuType", "gpuCount", "provider", "prices")
STOCK: dict[str, Availability] = {
    "high": Availability.IN_STOCK, "medium": Availability.IN_STOCK,
    "available": Availability.IN_STOCK, "low": Availability.LOW,
    "unavailable": Availability.OUT_OF_STOCK,
}
STATED_MEMORY = re.compile(r"_(\d+)GB$", re.IGNORECASE)


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    key = creds.get("PRIME_API_KEY")
    if not key:
        raise MissingCredentialsError(NAME, "PRIME_API_KEY")
    headers = {"Authorization": f"Bearer {key}"}
    captures: list[Capture] = []
    seen = 0
    for page in range(1, MAX_PAGES + 1):
        capture = client.get(GPUS_URL, params={"page": page, "page_size": PAGE_SIZE},
                             headers=headers)
        captures.append(capture)
        items, total = _page_counts(capture)
        seen += items
        # A short page is the last one; parse() tells whether the pages held totalCount.
        if items < PAGE_SIZE or total is None or seen >= total:
            break
    return captures


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every page; a page read again (same page number) counts once, the newest
    capture of it winning, as do offer keys repeated across pages."""
    pages: dict[int, tuple[Capture, list[Any], int]] = {}
    for capture in sorted(captures, key=lambda c: c.fetched_at):
        items, total = _listing(capture)
        pages[_page_number(capture)] = (capture, items, total)
    newest: dict[str, ParsedOffer] = {}
    rejects: list[Reject] = []
    for _, (capture, items, _) in sorted(pages.items()):
        offers: list[ParsedOffer] = []
        for item in items:
            result = _offer(item, capture)
            if isinstance(result, ParsedOffer):
                offers.append(result)
            else:
                rejects.append(result)
        offers, twice = one_price_per_key(NAME, offers,
                                          repeat_reason="offer listed twice on one page")
        newest.update((o.offer_key, o) for o in offers)
        rejects += twice
    counted = sum(len(items) for _, items, _ in pages.values())
    total = max((t for _, _, t in pages.values()), default=0)
    return ParseResult(offers=list(newest.values()), rejects=rejects, complete=counted >= total)


# -- body -------------------------------------------------------------------------------------


def _listing(capture: Capture) -> tuple[list[Any], int]:
    doc, items = envelope(NAME, capture, "items")
    total = doc.get("totalCount")
    if isinstance(total, bool) or not isinstance(total, int) or total < 0:
        raise parse_error(NAME, capture, f"totalCount is not a count: {total!r}", "totalCount")
    # A renamed field shows as a field that no item has: refuse, don't emit nothing.
    require_fields(NAME, capture, items, REQUIRED, "availability item")
    return items, total


def _page_counts(capture: Capture) -> tuple[int, int | None]:
    """Items on a fetched page and its totalCount, leniently (parse() judges the body)."""
    try:
        doc = json.loads(capture.read_bytes())
    except ValueError:
        return 0, None
    items = doc.get("items") if isinstance(doc, dict) else None
    total = doc.get("totalCount") if isinstance(doc, dict) else None
    return (len(items) if isinstance(items, list) else 0,
            total if isinstance(total, int) and not isinstance(total, bool) else None)


def _page_number(capture: Capture) -> int:
    parts = urlsplit(capture.url)
    if f"{parts.scheme}://{parts.netloc}{parts.path}".rstrip("/") != GPUS_URL:
        raise parse_error(NAME, capture, "not a Prime Intellect GPU availability URL")
    page = parse_qs(parts.query).get("page", ["1"])[0]
    if not page.isdigit() or int(page) < 1:
        raise parse_error(NAME, capture, f"page {page!r} in the URL is not a page number",
                          "page")
    return int(page)


# -- one item ---------------------------------------------------------------------------------


def _offer(item: Any, capture: Capture) -> ParsedOffer | Reject:
    if not isinstance(item, dict):
        return reject(NAME, f"item is not an object: {type(item).__name__}", item)
    names: dict[str, str] = {}
    for field in ("provider", "cloudId", "gpuType"):
        value = item.get(field)
        if not isinstance(value, str) or not value.strip():
            return reject(NAME, f"{field} is not a name: {value!r}", item)
        names[field] = value
    cloud, cloud_id, gpu_type = names["provider"], names["cloudId"], names["gpuType"]
    count = item.get("gpuCount")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        return reject(NAME, f"gpuCount is not a GPU count: {count!r}", item)
    prices = as_dict(item.get("prices"))
    field = "communityPrice" if prices.get("communityPrice") is not None else "onDemand"
    price = positive_number(prices.get(field))
    if price is None:
        return reject(NAME, f"prices.{field} is not a price: {prices.get(field)!r}", item)
    currency = prices.get("currency") or "USD"
    if not isinstance(currency, str) or not re.fullmatch(r"[A-Za-z]{3}", currency):
        return reject(NAME, f"prices.currency is not a currency code: {currency!r}", item)
    model = PricingModel.SPOT if item.get("isSpot") is True else PricingModel.ON_DEMAND
    socket = item.get("socket") if isinstance(item.get("socket"), str) else None
    data_center = stripped_text(item.get("dataCenter"))
    region = stripped_text(item.get("region"))
    vcpus, ram, disk = (positive_number(as_dict(item.get(f)).get("defaultCount"))
                        for f in ("vcpu", "memory", "disk"))
    key = "|".join([cloud, cloud_id, f"{count}x", data_center or region or "any",
                    stripped_text(item.get("security")) or "-", f"{vcpus or 0:g}c{ram or 0:g}g",
                    model.value])
    stock = item.get("stockStatus")
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=cloud_id,
            gpu_label=f"{gpu_type} {socket}" if socket else gpu_type, gpu_count=count,
            vram_gb_per_gpu=_vram_per_gpu(item.get("gpuMemory"), count, gpu_type),
            pricing_model=model, price_per_hour=price, currency=currency,
            price_kind=PriceKind.LISTED, region=data_center or region, vcpus=vcpus,
            ram_gb=ram, disk_gb=disk,
            availability=STOCK.get(stock.lower(), Availability.UNKNOWN)
            if isinstance(stock, str) else Availability.UNKNOWN,
            source_url=capture.url, observed_at=capture.fetched_at,
            provider_data=_data(item, prices, field))
    except ValidationError as exc:
        return reject(NAME, f"invalid offer: {exc.errors()[0]['msg']}", item, key)


def _vram_per_gpu(memory: Any, count: int, gpu_type: str) -> float | None:
    total = positive_number(memory)
    if total is None:
        return None
    if count == 1:
        return total
    stated = STATED_MEMORY.search(gpu_type)
    if stated is None:
        return None
    per_gpu = float(stated.group(1))
    return per_gpu if total in (per_gpu, per_gpu * count) else None


def _data(item: dict[str, Any], prices: dict[str, Any], price_field: str) -> ProviderData:
    data: ProviderData = {
        "cloud": item["provider"], "cloud_instance_type": item["cloudId"],
        "cloud_data_center": stripped_text(item.get("dataCenter")), "price_field": price_field,
        "price_basis": "per machine",
    }
    for name, field in (("gpu_type", "gpuType"), ("socket", "socket"),
                        ("prime_region", "region"), ("country", "country"),
                        ("security", "security"), ("stock_status", "stockStatus"),
                        ("gpu_memory_gb", "gpuMemory"), ("interconnect_type",
                                                         "interconnectType"),
                        ("prepaid_time", "prepaidTime"), ("is_spot", "isSpot")):
        if is_scalar(item.get(field)):
            data[name] = item[field]
    if is_scalar(prices.get("isVariable")):
        data["price_is_variable"] = prices["isVariable"]
    disk = as_dict(item.get("disk"))
    if positive_number(disk.get("pricePerUnit")) is not None:
        data["disk_price_per_gb_hour"] = disk["pricePerUnit"]
    if isinstance(disk.get("defaultIncludedInPrice"), bool):
        data["disk_default_included_in_price"] = disk["defaultIncludedInPrice"]
    return data
