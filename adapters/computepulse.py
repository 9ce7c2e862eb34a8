"""ComputePulse: an aggregator's listings of other clouds' GPU prices, from its keyless API,
`GET https://compute-pulse.com/api/listings?gpu=<chip>&sort=price_asc&limit=200&offset=<n>`,
one book per chip, paged by `page.next_offset` until it is null.

A page (2026-08-22 captures, adapters/snapshots/computepulse/PROVENANCE.md) is `{"data": [...],
"page": {"total", "limit", "offset", "next_offset"}, "meta": {"catalog_status",
"price_unit": "USD per GPU hour", ...}, "links": {...}}`. One row per listing: `provider` (the
cloud that sells it, "Vast.ai"), `gpu_model` ("H100", "RTX4090"), `gpu_variant` ("SXM", "PCIe"
or null), `gpu_count`, `region`, `price_per_gpu_hour`, `billing_type` ("on_demand", "spot",
"reserved", ...), `min_duration_hours`, `available`, `vram_gb`, `vcpus`, `ram_gb`, `currency` and
`price_native` (the cloud's own currency and amount, when not USD), `source_kind`,
`source_url`, `links.gpu` (the chip page the listing belongs to) and `links.provider`.

Reading rules:
- Every offer is the listed cloud's machine, resold information, not ComputePulse's: the cloud
  is kept in `provider_data["cloud"]` (as ComputePulse spells it) and `resold_from` (the
  warehouse's provider id where gpuscout reads that cloud directly, else ComputePulse's slug).
- `price_per_gpu_hour` is per GPU (`meta.price_unit`); the offer is the listing's `gpu_count`
  GPUs at that price times the count. A listing in another currency (`currency` and
  `price_native`) keeps the cloud's own amount and currency; the aggregator's USD conversion is
  kept in `provider_data`, never taken as the price.
- "on_demand" is on demand, "spot" spot; "reserved" is reserved with its `min_duration_hours`
  as the term, and a reject without one. Any other billing type is a reject.
- The label is the model with its variant ("H100 SXM"); `available` true / false is in or out
  of stock. A listing whose `links.gpu` is another chip's page is a reject.
- A page whose `catalog_status` is not "live_or_cached" (the API's seeded fallback) or whose
  `price_unit` changed is a ParseError, as is a page without `data`, `page` or `meta`.
- A chip's book is complete when its pages, from offset 0 along `next_offset`, are all here and
  hold `page.total` listings; otherwise (a page that could not be read, a trimmed recording) the
  result is incomplete and closes nothing. A page fetch() cannot read is logged and left out.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pydantic import ValidationError

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    as_dict,
    envelope,
    finite_number,
    member,
    one_price_per_key,
    parse_error,
    positive_number,
    require_fields,
    split_results,
    stripped_text,
)
from gpuscout.core.errors import FetchError
from gpuscout.core.models import (
    Availability,
    ParsedOffer,
    ParseResult,
    PricingModel,
    ProviderData,
    Reject,
)

logger = logging.getLogger(__name__)

LISTINGS_URL = "https://compute-pulse.com/api/listings"
# The chip books whose answers are recorded (adapters/snapshots/computepulse/): a chip is added
# here together with a capture of its book.
CHIPS = ("nvidia-h100", "nvidia-b300", "nvidia-rtx-4090", "amd-mi325x")
PAGE_LIMIT = 200  # the API's largest page
MAX_PAGES = 20  # per chip: 4,000 listings (the H100 book held 1,025 on 2026-08-22)

NAME = "computepulse"
SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = ()

LIVE_STATUS = "live_or_cached"
PRICE_UNIT = "USD per GPU hour"
ROW_FIELDS = ("provider", "gpu_model", "gpu_count", "price_per_gpu_hour", "billing_type")
BILLING = {"on_demand": PricingModel.ON_DEMAND, "spot": PricingModel.SPOT,
           "reserved": PricingModel.RESERVED}
CURRENCY_RE = re.compile(r"^[A-Z]{3}$")
# ComputePulse's provider slug (links.provider) -> the warehouse's provider id, for the clouds
# gpuscout also reads directly (Verda is DataCrunch's name since 2025).
DIRECT_PROVIDERS = {"vast-ai": "vastai", "hyperstack": "hyperstack", "verda": "datacrunch",
                    "scaleway": "scaleway", "tensorpool": "tensorpool", "gpu-ai": "gpuai"}
STABLE_FIELDS = ("source_kind", "source_url", "human_verified", "verification_level",
                 "interconnect")


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    """Every page of every chip's book. A page that cannot be read ends that chip's book (the
    listing is then incomplete); only when nothing at all could be read is the error raised."""
    captures: list[Capture] = []
    errors: list[FetchError] = []
    for chip in CHIPS:
        offset: int | None = 0
        pages = 0
        while offset is not None and pages < MAX_PAGES:
            try:
                capture = client.get(LISTINGS_URL, params=_params(chip, offset))
            except FetchError as exc:
                logger.warning("computepulse: %s at offset %s not read: %s", chip, offset, exc)
                errors.append(exc)
                break
            captures.append(capture)
            pages += 1
            following = _next_offset(capture)
            offset = following if following is not None and following > offset else None
    if not captures and errors:
        raise errors[0]
    return captures


def _params(chip: str, offset: int) -> dict[str, str | int]:
    return {"gpu": chip, "sort": "price_asc", "limit": PAGE_LIMIT, "offset": offset}


def _next_offset(capture: Capture) -> int | None:
    """The page's next_offset for fetch(): None when unreadable (parse() says why)."""
    try:
        doc = json.loads(capture.read_bytes())
    except ValueError:
        return None
    value = as_dict(as_dict(doc).get("page")).get("next_offset")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every page; complete when every chip's book is here whole. Pages of one
    request (a chip and offset) repeated: the newest is read."""
    pages: dict[tuple[str, int], _Page] = {}
    for capture in sorted(captures, key=lambda c: c.fetched_at):
        chip, offset = _request_of(capture)
        pages[(chip, offset)] = _read_page(capture, chip)
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for page in pages.values():
        offers += page.offers
        rejects += page.rejects
    offers, conflicts = one_price_per_key(NAME, offers)
    complete = bool(pages) and all(_book_complete(pages, chip)
                                   for chip in {chip for chip, _ in pages})
    return ParseResult(offers=offers, rejects=[*rejects, *conflicts], complete=complete)


@dataclass(frozen=True)
class _Page:
    offers: list[ParsedOffer]
    rejects: list[Reject]
    rows: int  # listings on the page, read or rejected
    total: int  # listings the book says it holds
    next_offset: int | None


def _request_of(capture: Capture) -> tuple[str, int]:
    query = parse_qs(urlsplit(capture.url).query)
    chip = (query.get("gpu") or [""])[0]
    offset = (query.get("offset") or ["0"])[0]
    if not chip or not offset.isdigit():
        raise parse_error(NAME, capture, "not a listings request for one chip "
                          f"(gpu={chip!r}, offset={offset!r})", "gpu")
    return chip, int(offset)


def _book_complete(pages: Mapping[tuple[str, int], _Page], chip: str) -> bool:
    offset: int | None = 0
    rows = 0
    total = None
    seen: set[int] = set()
    while offset is not None:
        if (chip, offset) not in pages or offset in seen:
            return False
        seen.add(offset)
        page = pages[(chip, offset)]
        rows, total, offset = rows + page.rows, page.total, page.next_offset
    return rows == total


def _read_page(capture: Capture, chip: str) -> _Page:
    doc, rows = envelope(NAME, capture, "data")
    meta = member(NAME, capture, doc, "meta", dict)
    page = member(NAME, capture, doc, "page", dict)
    if meta.get("catalog_status") != LIVE_STATUS:
        raise parse_error(NAME, capture, f"catalog_status is {meta.get('catalog_status')!r}, "
                          f"not {LIVE_STATUS!r}: seeded data is no observation",
                          "catalog_status")
    if meta.get("price_unit") != PRICE_UNIT:
        raise parse_error(NAME, capture, f"price_unit is {meta.get('price_unit')!r}, not "
                          f"{PRICE_UNIT!r}", "price_unit")
    total, following = page.get("total"), page.get("next_offset")
    if isinstance(total, bool) or not isinstance(total, int) or total < 0 or not (
            following is None or (isinstance(following, int) and not isinstance(following, bool)
                                  and following > 0)):
        raise parse_error(NAME, capture, f"page.total {total!r} / next_offset {following!r} is "
                          "no paging", "page")
    require_fields(NAME, capture, rows, ROW_FIELDS, "listing")
    offers, rejects = split_results(_offer(capture, chip, row) for row in rows)
    return _Page(offers, rejects, len(rows), total, following)


def _offer(capture: Capture, chip: str, row: Any) -> ParsedOffer | Reject:
    raw = json.dumps(row, sort_keys=True, default=str)
    if not isinstance(row, dict):
        return Reject(provider=NAME, reason="listing is not an object", raw=raw)
    cloud = stripped_text(row.get("provider"))
    model = stripped_text(row.get("gpu_model"))
    count = row.get("gpu_count")
    if cloud is None or model is None or isinstance(count, bool) or not isinstance(count, int) \
            or count < 1:
        return Reject(provider=NAME, raw=raw, reason="listing without a provider, gpu_model and "
                      f"whole gpu_count: {cloud!r}, {model!r}, {count!r}")
    variant = stripped_text(row.get("gpu_variant"))
    label = f"{model} {variant}" if variant else model
    region = stripped_text(row.get("region"))
    region = None if region is None or region.lower() == "unspecified" else region
    billing = row.get("billing_type")
    vcpus, ram = positive_number(row.get("vcpus")), positive_number(row.get("ram_gb"))
    key = "|".join([cloud, label, f"{count}x", region or "-", str(billing),
                    f"{vcpus:g}cpu" if vcpus else "-", f"{ram:g}gb" if ram else "-"])
    page_link = str(as_dict(row.get("links")).get("gpu") or "")
    if not page_link.endswith(f"/gpu/{chip}"):
        return Reject(provider=NAME, offer_key=key, raw=raw,
                      reason=f"listed in the {chip} book but linked to {page_link!r}")
    pricing = BILLING.get(billing) if isinstance(billing, str) else None
    term = positive_number(row.get("min_duration_hours"))
    if pricing is None:
        return Reject(provider=NAME, offer_key=key, raw=raw,
                      reason=f"billing_type {billing!r} is not on_demand, spot or reserved")
    if pricing is PricingModel.RESERVED and term is None:
        return Reject(provider=NAME, offer_key=key, raw=raw,
                      reason="reserved price without a stated term (min_duration_hours)")
    price = _price(row)
    if isinstance(price, str):
        return Reject(provider=NAME, offer_key=key, raw=raw, reason=price)
    amount, currency = price
    available = row.get("available")
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, gpu_label=label, gpu_count=count,
            vram_gb_per_gpu=positive_number(row.get("vram_gb")), pricing_model=pricing,
            price_per_hour=round(amount * count, 6), currency=currency, region=region,
            vcpus=vcpus, ram_gb=ram,
            availability=(Availability.IN_STOCK if available is True else
                          Availability.OUT_OF_STOCK if available is False else
                          Availability.UNKNOWN),
            source_url=capture.url, observed_at=capture.fetched_at,
            provider_data=_data(row, cloud, amount, term))
    except ValidationError as exc:
        return Reject(provider=NAME, offer_key=key, raw=raw,
                      reason=f"invalid offer: {exc.errors()[0]['msg']}")


def _price(row: dict[str, Any]) -> tuple[float, str] | str:
    """(the price of one GPU-hour, its currency), or why there is none: the cloud's own amount
    when the listing names another currency, else the USD price."""
    code = stripped_text(row.get("currency"))
    native = positive_number(row.get("price_native"))
    if code is not None and code.upper() != "USD" and native is not None:
        if CURRENCY_RE.match(code) is None:
            return f"currency {code!r} is no currency code"
        return native, code
    usd = positive_number(row.get("price_per_gpu_hour"))
    if usd is None:
        return f"price_per_gpu_hour is not a price: {row.get('price_per_gpu_hour')!r}"
    return usd, "USD"


def _data(row: dict[str, Any], cloud: str, per_gpu: float, term: float | None) -> ProviderData:
    slug = str(as_dict(row.get("links")).get("provider") or "").rstrip("/").rsplit("/", 1)[-1]
    data: ProviderData = {"cloud": cloud, "resold_from": DIRECT_PROVIDERS.get(slug, slug or cloud),
                          "price_per_gpu_hour": per_gpu}
    usd = finite_number(row.get("price_per_gpu_hour"))
    if usd is not None and usd != per_gpu:
        data["aggregator_usd_per_gpu_hour"] = usd
    if term is not None:
        data["min_duration_hours"] = term
        data["reserved_term"] = f"at least {term:g} hours"
    for field in STABLE_FIELDS:
        value = row.get(field)
        if isinstance(value, str | int | float | bool) and value != "":
            data[field] = value
    return data
