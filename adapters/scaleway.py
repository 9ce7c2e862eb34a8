"""Scaleway: GPU Instance types and their stock from the Instance API, per availability zone.

Two paginated listings per zone: `products/servers` (every Instance type with its hardware and
its EUR price for the whole Instance) and `products/servers/availability` (available / scarce /
shortage per type). Only types with `gpu > 0` become offers, one per zone and type, on-demand.

Reading rules, each backed by the recorded pages (adapters/snapshots/scaleway/PROVENANCE.md):
- `hourly_price` is EUR per hour for the whole Instance (H100-SXM-2-80G: 6.6198, which the public
  product catalog prints as 0.11033 EUR per minute for "2 x H100-SXM"); `monthly_price` is kept.
- `gpu_info.gpu_memory` and `ram` are bytes in binary units (85899345920 = 80 GiB, what Scaleway
  prints as "80 GB" VRAM and "240 GiB" RAM), so GB = bytes / 2**30.
- A type with a `mig_profile` is a slice of a GPU whose share is not stated, and a type at
  `end_of_service` is no longer sold: both are rejected with the reason.
- Pages hold 50 types (`per_page=50` in the recorded Link header); the last page is shorter.
  When the response keeps `X-Total-Count`, the pages must add up to it. A page that fails (after
  the client's retries) fails the whole fetch: a partial list is never returned as complete.
"""

from __future__ import annotations

import json
import logging
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from pydantic import ValidationError

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    as_dict,
    envelope,
    parse_error,
    positive_number,
    require_fields,
)
from gpuscout.core.errors import FetchError
from gpuscout.core.models import Availability, ParsedOffer, ParseResult, PricingModel, Reject

SERVERS_URL = "https://api.scaleway.com/instance/v1/zones/{zone}/products/servers"
AVAILABILITY_URL = SERVERS_URL + "/availability"
# GPU Instance zones per Scaleway's product availability table (docs-content,
# pages/account/reference-content/products-availability.mdx, validated 2025-06-17): RENDER-S in
# PAR1; H100, H100-SXM, L40S, L4, 3070 in PAR2; H100, L40S, L4 in WAW2.
ZONES = ("fr-par-1", "fr-par-2", "pl-waw-2")
PAGE_SIZE = 50  # Scaleway's default per_page
MAX_PAGES = 40  # 2,000 types: far above the 135 of a zone; stops a pager that never ends

NAME = "scaleway"
SOURCE_KIND: SourceKind = "api"
# Optional: the recorded requests carried a token (stripped from the cassette); whether these
# listings answer without one is not verified.
CREDENTIALS: tuple[str, ...] = ("SCW_SECRET_KEY",)

AVAILABILITY = {"available": Availability.IN_STOCK, "scarce": Availability.LOW,
                "shortage": Availability.OUT_OF_STOCK}
GIB = 2**30

logger = logging.getLogger(__name__)

Kind = Literal["servers", "availability"]


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    token = creds.get("SCW_SECRET_KEY")
    headers = {"X-Auth-Token": token} if token else None
    captures: list[Capture] = []
    for zone in ZONES:
        url = SERVERS_URL.format(zone=zone)
        try:
            first = client.get(url, params={"page": 1}, headers=headers)
        except FetchError as exc:
            if not _not_recorded(exc):
                raise
            # Offline, only the zones with a recording are read (the bundle has fr-par-2).
            logger.info("%s: no recording of zone %s, skipped", NAME, zone)
            continue
        captures += _pages(client, url, "servers", headers, first)
        captures += _pages(client, AVAILABILITY_URL.format(zone=zone), "availability", headers)
    return captures


def parse(captures: Sequence[Capture]) -> ParseResult:
    zones: dict[str, _Zone] = defaultdict(_Zone)
    for capture in sorted(captures, key=lambda c: c.fetched_at):  # the newest page wins
        zone, kind, page = _locate(capture)
        zones[zone].read(kind, page, capture)
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for zone_name, zone in sorted(zones.items()):
        for type_name, (entry, capture) in sorted(zone.servers.items()):
            if type_name in zone.conflicts:
                rejects.append(Reject(
                    provider=NAME, offer_key=f"{zone_name}|{type_name}|on_demand",
                    raw=json.dumps({type_name: entry}, sort_keys=True),
                    reason="Instance type listed on two pages with two different records "
                           "(the list shifted while it was paged?)"))
                continue
            result = _offer(zone_name, type_name, entry, capture, zone.availability)
            if isinstance(result, ParsedOffer):
                offers.append(result)
            elif result is not None:
                rejects.append(result)
    complete = all(zone.complete() for zone in zones.values())
    return ParseResult(offers=offers, rejects=rejects, complete=complete)


# -- paging -----------------------------------------------------------------------------------


def _pages(client: HttpClient, url: str, kind: Kind, headers: Mapping[str, str] | None,
           first: Capture | None = None) -> list[Capture]:
    """Every page of one listing, from page 1 until the total (or a short page) is reached."""
    captures: list[Capture] = []
    seen = 0
    for page in range(1, MAX_PAGES + 1):
        capture = (first if page == 1 and first is not None
                   else client.get(url, params={"page": page}, headers=headers))
        captures.append(capture)
        count = len(_entries(capture, kind))
        seen += count
        total = _total_count(capture)
        if (count < PAGE_SIZE) if total is None else (seen >= total):
            return captures
        if count == 0:
            raise FetchError(f"page {page} is empty after {seen} of {total} types",
                             provider=NAME, url=capture.url, transient=True)
    raise FetchError(f"more than {MAX_PAGES} pages", provider=NAME, url=url, transient=False)


def _not_recorded(exc: FetchError) -> bool:
    """True for the replay's "no recorded response": terminal, no HTTP status.

    Live, a failed request has a status (HTTP error) or is transient (network), so this never
    skips a zone that the provider failed to serve.
    """
    return exc.provider == "replay" and exc.status is None and not exc.transient


def _total_count(capture: Capture) -> int | None:
    value = capture.headers.get("x-total-count")
    return int(value) if value and value.isdigit() else None


# -- body -------------------------------------------------------------------------------------

_PATH = re.compile(r"/instance/v1/zones/(?P<zone>[a-z]{2}-[a-z]{3}-\d+)/products/servers"
                   r"(?P<availability>/availability)?$")


def _locate(capture: Capture) -> tuple[str, Kind, int]:
    """(zone, listing, page) of a capture, from its URL."""
    parts = urlsplit(capture.url)
    match = _PATH.search(parts.path)
    if match is None:
        raise parse_error(NAME, capture, "not an Instance products/servers listing URL")
    pages = parse_qs(parts.query).get("page", ["1"])
    if not pages[0].isdigit():
        raise parse_error(NAME, capture, f"page {pages[0]!r} is not a number", "page")
    kind: Kind = "availability" if match["availability"] else "servers"
    return match["zone"], kind, int(pages[0])


def _entries(capture: Capture, kind: Kind) -> dict[str, Any]:
    """The `servers` object of a page: Instance type -> its record."""
    _, servers = envelope(NAME, capture, "servers", dict)
    # A field renamed upstream shows as a field that no record has: refuse, don't emit nothing.
    required = ("availability",) if kind == "availability" else ("gpu", "hourly_price")
    require_fields(NAME, capture, servers.values(), required, "Instance type")
    return servers


@dataclass
class _Zone:
    """What the captures of one zone say: types with their page, stock, and the pages read."""

    servers: dict[str, tuple[Any, Capture]] = field(default_factory=dict)
    # Types two different pages list with different records: neither can be told to be right.
    conflicts: set[str] = field(default_factory=set)
    availability: dict[str, Any] = field(default_factory=dict)
    pages: dict[Kind, set[int]] = field(default_factory=lambda: defaultdict(set))
    totals: dict[Kind, int] = field(default_factory=dict)

    def read(self, kind: Kind, page: int, capture: Capture) -> None:
        entries = _entries(capture, kind)
        self.pages[kind].add(page)
        total = _total_count(capture)
        if total is not None:
            self.totals[kind] = total
        if kind == "servers":
            for name, entry in entries.items():
                held = self.servers.get(name)
                if held is not None and held[0] != entry and _locate(held[1])[2] != page:
                    self.conflicts.add(name)
                self.servers[name] = (entry, capture)
        else:
            self.availability.update(
                (name, entry.get("availability")) for name, entry in entries.items()
                if isinstance(entry, dict))

    def complete(self) -> bool:
        """Pages 1..n with none missing, and as many types as the total says, if it is known."""
        counts = {"servers": len(self.servers), "availability": len(self.availability)}
        for kind, pages in self.pages.items():
            if pages != set(range(1, max(pages) + 1)):
                return False
            if counts[kind] < self.totals.get(kind, 0):
                return False
        return True


# -- one Instance type ------------------------------------------------------------------------


def _offer(zone: str, type_name: str, entry: Any, capture: Capture,
           availability: Mapping[str, Any]) -> ParsedOffer | Reject | None:
    """The offer of one type; None for a type without GPUs (not an offer, not a reject)."""
    key = f"{zone}|{type_name}|{PricingModel.ON_DEMAND.value}"
    raw = json.dumps({type_name: entry}, sort_keys=True)

    def reject(reason: str) -> Reject:
        return Reject(provider=NAME, reason=reason, raw=raw, offer_key=key)

    if not isinstance(entry, dict):
        return reject(f"Instance type record is not an object: {type(entry).__name__}")
    gpus = entry.get("gpu")
    if gpus in (0, None):
        return None
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 0:
        return reject(f"gpu is not a GPU count: {gpus!r}")
    if entry.get("mig_profile") is not None:
        return reject(f"MIG profile {entry['mig_profile']!r}: a GPU slice of unstated size")
    if entry.get("end_of_service") is True:
        return reject("end_of_service: the Instance type is no longer sold")
    info = as_dict(entry.get("gpu_info"))
    label = info.get("gpu_name")
    if not isinstance(label, str) or not label.strip():
        return reject("GPU Instance type without gpu_info.gpu_name")
    price = positive_number(entry.get("hourly_price"))
    if price is None:
        return reject(f"hourly_price is not a price: {entry.get('hourly_price')!r}")
    stock = availability.get(type_name)
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=type_name, gpu_label=label.strip(),
            gpu_count=gpus, vram_gb_per_gpu=_gib(info.get("gpu_memory")),
            pricing_model=PricingModel.ON_DEMAND, price_per_hour=price, currency="EUR",
            region=zone.rsplit("-", 1)[0], zone=zone, vcpus=positive_number(entry.get("ncpus")),
            ram_gb=_gib(entry.get("ram")),
            availability=AVAILABILITY.get(stock, Availability.UNKNOWN) if isinstance(stock, str)
            else Availability.UNKNOWN,
            source_url=capture.url, observed_at=capture.fetched_at,
            provider_data=_provider_data(entry, info, stock),
        )
    except ValidationError as exc:
        return reject(f"invalid offer: {exc.errors()[0]['msg']}")


def _provider_data(entry: dict[str, Any], info: dict[str, Any],
                   stock: Any) -> dict[str, str | int | float | bool | None]:
    internal = positive_number(as_dict(entry.get("network")).get("sum_internal_bandwidth"))
    scratch = positive_number(entry.get("scratch_storage_max_size"))
    return {
        "monthly_price": positive_number(entry.get("monthly_price")),
        "gpu_manufacturer": info.get("gpu_manufacturer"),
        "arch": entry.get("arch"),
        "availability": stock if isinstance(stock, str) else None,
        # Bandwidth to the private network and the internet, not a GPU fabric.
        "internal_bandwidth_gbps": internal / 1e9 if internal is not None else None,
        "scratch_storage_max_gb": scratch / 1e9 if scratch is not None else None,
    }


def _gib(value: Any) -> float | None:
    number = positive_number(value)
    return number / GIB if number is not None else None
