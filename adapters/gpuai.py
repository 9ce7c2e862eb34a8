"""gpu.ai: every offer of the keyless pricing API, `GET https://api.gpu.ai/v1/pricing?limit=200`,
paged by cursor (`&cursor=<next_cursor>`) until the API answers `next_cursor: null`.

A page (2026-08-22 capture, adapters/snapshots/gpuai/PROVENANCE.md) is `{"data": [...],
"next_cursor": "<opaque>" | null}`. One row per offer: `gpu_type` ("h100_sxm", "a100_80gb",
"rtx_pro_6000"), `gpu_count`, `cpu_cores`, `ram_gb`, `storage_gb`, `region` ("us-east",
"asia-pacific"), `tier` ("on_demand" or "spot"), `price_per_hour`, `available`,
`capacity_class` ("secure" or "community", with its boolean twin `community`),
`deployment_type` ("container" or "vm"), `offering_id`, disk terms and the image.

Reading rules:
- `price_per_hour` is the hourly price of the whole configuration, all `gpu_count` GPUs (the
  API schema says so; the page of gpu.ai shows the 2 x H100 row at half of it per GPU).
- `tier` "spot" is a spot offer; any other tier is a reject, never read as on demand.
- `offering_id` is the API's identity of an offer (rows the same for a customer are merged
  server-side); the offer key is GPU, count, region, that id and the tier.
- `available` is the number of such offers free now: 0 is out of stock. The API leaves offers
  with none free out by default.
- The API states no currency: its site prints dollars, so USD; a row with a `currency` other
  than "USD" is a reject.
- Paging is complete when every page's `next_cursor` was followed by a recorded page, ending on
  `null`; otherwise the result is incomplete (it closes nothing). A page without the
  `next_cursor` key, or whose rows lost a field every row had, is a format change (ParseError).
  Rows repeated across pages (the book can shift between requests) count once, the newest.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pydantic import ValidationError

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    envelope,
    is_scalar,
    newest_wins,
    one_price_per_key,
    parse_error,
    positive_number,
    require_fields,
    split_results,
    stripped_text,
)
from gpuscout.core.models import (
    Availability,
    ParsedOffer,
    ParseResult,
    PricingModel,
    ProviderData,
    Reject,
)

PRICING_URL = "https://api.gpu.ai/v1/pricing"
PAGE_LIMIT = 200  # the API's largest page
MAX_PAGES = 50  # 10,000 rows; the live book held 272 on 2026-08-22

NAME = "gpuai"
SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = ()

ROW_FIELDS = ("gpu_type", "gpu_count", "price_per_hour", "tier", "region", "offering_id")
TIERS = {"on_demand": PricingModel.ON_DEMAND, "spot": PricingModel.SPOT}
EXTRA_FIELDS = ("capacity_class", "deployment_type", "instant_boot", "instance_disk_gb",
                "disk_configurable", "disk_price_per_gb_hour", "offering_id")


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    """Every page, following `next_cursor` until it is null (or repeats, or MAX_PAGES: then the
    last page's cursor is left unfollowed and parse() reports the listing incomplete)."""
    captures = [client.get(PRICING_URL, params={"limit": PAGE_LIMIT})]
    seen: set[str] = set()
    while len(captures) < MAX_PAGES:
        cursor = _next_cursor(captures[-1])
        if cursor is None or cursor in seen:
            break
        seen.add(cursor)
        captures.append(client.get(PRICING_URL, params={"limit": PAGE_LIMIT, "cursor": cursor}))
    return captures


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every page; complete when the recorded pages form the whole cursor chain,
    from the first page to a null cursor, without a loop."""
    pages = {id(capture): _read(capture) for capture in captures}
    following = {_cursor_of(c): pages[id(c)][2] for c in sorted(captures,
                                                               key=lambda c: c.fetched_at)}
    whole = _chain_whole(following)

    def read(capture: Capture) -> tuple[list[ParsedOffer], list[Reject], bool]:
        offers, rejects, _ = pages[id(capture)]
        return offers, rejects, whole

    return newest_wins(captures, read)


def _chain_whole(following: Mapping[str | None, str | None]) -> bool:
    """True when the pages, from the first (requested without a cursor), lead along their
    next_cursor to one whose next_cursor is null, every page on the way recorded, none twice."""
    cursor: str | None = None
    seen: set[str | None] = set()
    while cursor in following and cursor not in seen:
        seen.add(cursor)
        cursor = following[cursor]
        if cursor is None:
            return True
    return False


def _next_cursor(capture: Capture) -> str | None:
    """The page's next_cursor for fetch(): None when the body is unreadable (parse says why)."""
    try:
        doc = json.loads(capture.read_bytes())
    except ValueError:
        return None
    return stripped_text(doc.get("next_cursor")) if isinstance(doc, dict) else None


def _cursor_of(capture: Capture) -> str | None:
    """The cursor a page was requested with (None for the first page)."""
    values = parse_qs(urlsplit(capture.url).query).get("cursor")
    return values[0] if values else None


def _read(capture: Capture) -> tuple[list[ParsedOffer], list[Reject], str | None]:
    doc, rows = envelope(NAME, capture, "data")
    if "next_cursor" not in doc:
        raise parse_error(NAME, capture, "page without 'next_cursor': paging changed",
                          "next_cursor")
    cursor = doc["next_cursor"]
    if cursor is not None and stripped_text(cursor) is None:
        raise parse_error(NAME, capture, f"next_cursor is neither null nor a cursor: {cursor!r}",
                          "next_cursor")
    require_fields(NAME, capture, rows, ROW_FIELDS, "row")
    offers, rejects = split_results(_offer(capture, row) for row in rows)
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*rejects, *conflicts], stripped_text(cursor)


def _offer(capture: Capture, row: Any) -> ParsedOffer | Reject:
    raw = json.dumps(row, sort_keys=True, default=str)
    if not isinstance(row, dict):
        return Reject(provider=NAME, reason="row is not an object", raw=raw)
    gpu_type = stripped_text(row.get("gpu_type"))
    count = row.get("gpu_count")
    if gpu_type is None or isinstance(count, bool) or not isinstance(count, int) or count < 1:
        return Reject(provider=NAME, raw=raw, reason="row without a gpu_type and a whole "
                      f"gpu_count: {row.get('gpu_type')!r} x {count!r}")
    region = stripped_text(row.get("region"))
    offering = stripped_text(row.get("offering_id"))
    tier = row.get("tier")
    key = f"{gpu_type}|{count}x|{region}|{offering}|{tier}"
    if region is None or offering is None:
        return Reject(provider=NAME, offer_key=key, raw=raw,
                      reason="row without a region or an offering_id")
    model = TIERS.get(tier) if isinstance(tier, str) else None
    if model is None:
        return Reject(provider=NAME, offer_key=key, raw=raw,
                      reason=f"tier {tier!r} is neither on_demand nor spot")
    if "currency" in row and row["currency"] != "USD":
        return Reject(provider=NAME, offer_key=key, raw=raw,
                      reason=f"currency {row['currency']!r} is not USD")
    price = positive_number(row.get("price_per_hour"))
    if price is None:
        return Reject(provider=NAME, offer_key=key, raw=raw,
                      reason=f"price_per_hour is not a price: {row.get('price_per_hour')!r}")
    free = row.get("available")
    free = free if isinstance(free, int) and not isinstance(free, bool) and free >= 0 else None
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, gpu_label=gpu_type, gpu_count=count,
            pricing_model=model, price_per_hour=price, region=region,
            vcpus=positive_number(row.get("cpu_cores")), ram_gb=positive_number(row.get("ram_gb")),
            disk_gb=positive_number(row.get("storage_gb")),
            availability=(Availability.UNKNOWN if free is None else
                          Availability.IN_STOCK if free > 0 else Availability.OUT_OF_STOCK),
            available_count=free, source_url=capture.url, observed_at=capture.fetched_at,
            provider_data=_data(row, price, count))
    except ValidationError as exc:
        return Reject(provider=NAME, offer_key=key, raw=raw,
                      reason=f"invalid offer: {exc.errors()[0]['msg']}")


def _data(row: dict[str, Any], price: float, count: int) -> ProviderData:
    data: ProviderData = {"price_per_gpu_hour": round(price / count, 6)}
    for field in EXTRA_FIELDS:
        if is_scalar(row.get(field)):
            data[field] = row[field]
    return data
