"""DataCrunch (now "Verda"): per-instance prices from the public products page; the API as well.

Live path: the products page datacrunch.io/products. It needs no credentials and a real capture
of it is bundled (adapters/snapshots/datacrunch/PROVENANCE.md). The API (`/v1/instance-types`,
`/v1/locations`, `/v1/instance-availability?isSpot=true`) needs an OAuth client-credentials
token first; we hold no real recorded API response (only third-party fixtures, and no token
exchange), so it is not fetched, but `parse()` reads recorded captures of it.

Page (2025): a `<table>` whose header names the columns: Instance name ("1B200.30V"), GPU model
("B200 SXM6 180GB"), GPU (count), CPU, RAM (GB), VRAM (GB, whole instance), P2P ("/" for one
GPU, "900 GB/s", "1.8 TB/s"), On demand price, Dynamic price, Spot price ("$3.64/h"). Prices are
for the whole instance. Up to three offers per row: on-demand (fixed), on-demand at the dynamic
price (its key carries "dynamic") and spot. The page's footnote says prices are fixed after
deployment "except for dynamically-priced instances, which update daily"; the verda SDK treats
pricing (DYNAMIC_PRICE / FIXED_PRICE) apart from the contract (PAY_AS_YOU_GO / SPOT / LONG_TERM),
so a dynamic price is a pay-as-you-go (on-demand) price, not a spot one.

API `instance-types`: `price_per_hour`, `spot_price` (and `dynamic_price` when present) are
STRINGS, per instance; `gpu.description` is "<n>x <GPU>", `gpu_memory.size_in_gigabytes` is the
whole instance; entries with no GPU are CPU nodes, not offers. Prices are per instance type, not
per location, so offers carry no region; the spot availability list says where spot capacity
exists now (availability in_stock / out_of_stock, locations in `provider_data`). Offer keys are
the same on both paths ("1B200.30V|spot"), so price history survives a switch of live path.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.core.errors import ParseError
from gpuscout.core.models import (
    Availability,
    ParsedOffer,
    ParseResult,
    PriceKind,
    PricingModel,
    ProviderData,
    Reject,
)
from pydantic import ValidationError
from selectolax.lexbor import LexborHTMLParser, LexborNode

PRODUCTS_URL = "https://datacrunch.io/products"
# API paths (verda SDK: INSTANCE_TYPES_ENDPOINT, /locations, get_availabilities); base URL
# https://api.datacrunch.io/v1, now https://api.verda.com/v1.
INSTANCE_TYPES_PATH = "/v1/instance-types"
LOCATIONS_PATH = "/v1/locations"
AVAILABILITY_PATH = "/v1/instance-availability"

NAME = "datacrunch"
SOURCE_KIND: SourceKind = "html"
CREDENTIALS: tuple[str, ...] = ()

# Page column headers (lower case) -> our field; the first five must be there.
COLUMNS = {"instance name": "instance", "gpu model": "model", "gpu": "count", "vram": "vram",
           "on demand price": "on_demand", "cpu": "cpu", "ram": "ram", "p2p": "p2p",
           "dynamic price": "dynamic", "spot price": "spot"}
REQUIRED_COLUMNS = ("instance name", "gpu model", "gpu", "vram", "on demand price")
PRICE_RE = re.compile(r"^([$€])\s*(\d[\d,]*(?:\.\d+)?)\s*/\s*h(?:our|r)?$", re.IGNORECASE)
CURRENCY = {"$": "USD", "€": "EUR"}
NOT_OFFERED = frozenset({"", "-", "–", "—", "/", "n/a"})
BANDWIDTH_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*(GB|TB)/s$", re.IGNORECASE)
COUNT_PREFIX_RE = re.compile(r"^(\d+)\s*x\s+(.+)$", re.IGNORECASE)
API_REQUIRED = ("instance_type", "price_per_hour", "gpu")
DYNAMIC = "dynamic"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class _Shape:
    """One instance type as either source describes it."""

    instance_type: str
    label: str
    count: int
    vram_per_gpu: float | None
    vcpus: float | None
    ram_gb: float | None
    disk_gb: float | None
    p2p: str | None
    raw: str


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRODUCTS_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins.

    Page captures are read one by one; API captures are read together (instance types plus the
    optional locations and spot availability they refer to).
    """
    newest: dict[str, ParsedOffer] = {}
    rejects: list[Reject] = []
    api = [c for c in captures if _api_path(c) is not None]
    batches = [_parse_page(c) for c in captures if _api_path(c) is None]
    if api:
        batches.append(_parse_api(api))
    for offers, bad in sorted(batches, key=_newest_in):
        newest.update((o.offer_key, o) for o in offers)
        rejects.extend(bad)
    return ParseResult(offers=list(newest.values()), rejects=rejects)


def _newest_in(batch: tuple[list[ParsedOffer], list[Reject]]) -> datetime:
    return max((o.observed_at for o in batch[0]), default=_EPOCH)


# -- products page ----------------------------------------------------------------------------


def _parse_page(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    text = capture.text()
    tree = LexborHTMLParser(text)
    if tree.css_first("table") is None and "<th" in text.lower():
        # An archived excerpt cut inside a <table>: HTML parsing drops <tr>/<th>/<td> outside a
        # table, so read the fragment in table context.
        tree = LexborHTMLParser(f"<table>{text}</table>")
    tables = [t for t in tree.css("table") if _header(t)]
    if not tables:
        raise _error(capture, "no price table (a header row with 'Instance name')",
                     "Instance name")
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for table in tables:
        header = _header(table)
        missing = [c for c in REQUIRED_COLUMNS if c not in header]
        if missing:
            raise _error(capture, f"price table without column {missing[0]!r}", missing[0])
        for row in table.css("tr"):
            cells = [td.text(strip=True) for td in row.css("td")]
            if not cells:
                continue  # the header row
            raw = row.html or ""
            if len(cells) != len(header):
                rejects.append(Reject(provider=NAME, raw=raw,
                                      reason=f"expected {len(header)} cells, found "
                                             f"{len(cells)}"))
                continue
            values = {COLUMNS[h]: v for h, v in zip(header, cells, strict=True) if h in COLUMNS}
            shape = _page_shape(values, raw)
            if isinstance(shape, Reject):
                rejects.append(shape)
                continue
            for field, model, variant in (("on_demand", PricingModel.ON_DEMAND, None),
                                          ("dynamic", PricingModel.ON_DEMAND, DYNAMIC),
                                          ("spot", PricingModel.SPOT, None)):
                result = _page_price(values.get(field), shape, model, variant, capture)
                if result is not None:
                    (offers if isinstance(result, ParsedOffer) else rejects).append(result)
    return offers, rejects


def _header(table: LexborNode) -> list[str]:
    """Column names in order, lower case; empty unless the table is a price table."""
    names = [" ".join(th.text().split()).lower() for th in table.css("th")]
    return names if "instance name" in names else []


def _page_shape(values: dict[str, str], raw: str) -> _Shape | Reject:
    instance, label = values.get("instance", ""), " ".join(values.get("model", "").split())
    count = _number(values.get("count"))
    if not instance or not label:
        return Reject(provider=NAME, reason="row without an instance name or GPU model", raw=raw)
    if count is None or count != int(count):
        return Reject(provider=NAME, raw=raw,
                      reason=f"{instance}: GPU count {values.get('count')!r} is not a count")
    vram_total = _number(values.get("vram"))
    return _Shape(instance_type=instance, label=label, count=int(count),
                  vram_per_gpu=round(vram_total / count, 3) if vram_total else None,
                  vcpus=_number(values.get("cpu")), ram_gb=_number(values.get("ram")),
                  disk_gb=None, p2p=values.get("p2p"), raw=raw)


def _page_price(text: str | None, shape: _Shape, model: PricingModel, variant: str | None,
                capture: Capture) -> ParsedOffer | Reject | None:
    if text is None or text.strip().lower() in NOT_OFFERED:
        return None
    match = PRICE_RE.match(text.strip())
    if match is None:
        return Reject(provider=NAME, raw=shape.raw,
                      reason=f"{shape.instance_type}: unrecognised {variant or model.value} "
                             f"price {text!r}")
    return _offer(shape, model, variant, float(match.group(2).replace(",", "")),
                  CURRENCY[match.group(1)], capture, availability=Availability.UNKNOWN,
                  extra={"source": "products page"})


# -- API --------------------------------------------------------------------------------------


def _parse_api(captures: list[Capture]) -> tuple[list[ParsedOffer], list[Reject]]:
    by_path: dict[str, Capture] = {}
    for capture in sorted(captures, key=lambda c: c.fetched_at):
        by_path[_api_path(capture) or ""] = capture  # the newest of each endpoint
    types_capture = by_path.get(INSTANCE_TYPES_PATH)
    if types_capture is None:
        raise _error(captures[0], "API captures without an instance-types response",
                     "instance-types")
    types = _json_list(types_capture, "instance types")
    entries = [t for t in types if isinstance(t, dict)]
    for field in API_REQUIRED:  # a field renamed upstream is missing from every entry
        if entries and not any(field in t for t in entries):
            raise _error(types_capture, f"no instance type has '{field}'", field)
    countries = _countries(by_path.get(LOCATIONS_PATH))
    spot_where = _spot_locations(by_path.get(AVAILABILITY_PATH))
    results: list[ParsedOffer | Reject] = []
    for entry in types:
        shape = _api_shape(entry)
        if shape is None:
            continue  # a CPU node: not a GPU offer
        if isinstance(shape, Reject):
            results.append(shape)
            continue
        currency = str(entry.get("currency") or "usd").upper()
        prices = (("price_per_hour", PricingModel.ON_DEMAND, None),
                  ("dynamic_price", PricingModel.ON_DEMAND, DYNAMIC),
                  ("spot_price", PricingModel.SPOT, None))
        for field, model, variant in prices:
            if entry.get(field) is None:
                continue
            price = _api_price(entry[field])
            if price is None:
                results.append(Reject(provider=NAME, raw=shape.raw,
                                      reason=f"{shape.instance_type}: {field} is not a price: "
                                             f"{entry[field]!r}"))
                continue
            availability, extra = Availability.UNKNOWN, {"source": "api"}
            if model is PricingModel.SPOT and spot_where is not None:
                where = spot_where.get(shape.instance_type, [])
                availability = Availability.IN_STOCK if where else Availability.OUT_OF_STOCK
                extra |= {"spot_locations": ",".join(where) or None,
                          "spot_countries": ",".join(sorted({countries[w] for w in where
                                                             if w in countries})) or None}
            results.append(_offer(shape, model, variant, price, currency, types_capture,
                                  availability=availability, extra=extra))
    return ([r for r in results if isinstance(r, ParsedOffer)],
            [r for r in results if isinstance(r, Reject)])


def _api_shape(entry: Any) -> _Shape | Reject | None:
    raw = json.dumps(entry, sort_keys=True)
    if not isinstance(entry, dict):
        return Reject(provider=NAME, reason="instance type is not an object", raw=raw)
    gpu = entry.get("gpu") if isinstance(entry.get("gpu"), dict) else {}
    count = gpu.get("number_of_gpus")
    if count == 0:
        return None
    instance = entry.get("instance_type")
    if not isinstance(instance, str) or not instance:
        return Reject(provider=NAME, reason="instance type without a name", raw=raw)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        return Reject(provider=NAME, raw=raw,
                      reason=f"{instance}: gpu.number_of_gpus is not a count: {count!r}")
    match = COUNT_PREFIX_RE.match(str(gpu.get("description") or "").strip())
    if match is None or int(match.group(1)) != count:
        return Reject(provider=NAME, raw=raw,
                      reason=f"{instance}: gpu.description {gpu.get('description')!r} does not "
                             f"read '<{count}>x <GPU>'")
    vram_total = _size(entry.get("gpu_memory"))
    return _Shape(instance_type=instance, label=match.group(2).strip(), count=count,
                  vram_per_gpu=round(vram_total / count, 3) if vram_total else None,
                  vcpus=_positive((entry.get("cpu") or {}).get("number_of_cores")),
                  ram_gb=_size(entry.get("memory")), disk_gb=_size(entry.get("storage")),
                  p2p=entry.get("p2p") if isinstance(entry.get("p2p"), str) else None, raw=raw)


def _countries(capture: Capture | None) -> dict[str, str]:
    if capture is None:
        return {}
    return {loc["code"]: loc["country_code"] for loc in _json_list(capture, "locations")
            if isinstance(loc, dict) and isinstance(loc.get("code"), str)
            and isinstance(loc.get("country_code"), str)}


def _spot_locations(capture: Capture | None) -> dict[str, list[str]] | None:
    """instance type -> locations with spot capacity now; None when not captured."""
    if capture is None:
        return None
    where: dict[str, list[str]] = {}
    for loc in _json_list(capture, "availabilities"):
        if not isinstance(loc, dict) or not isinstance(loc.get("availabilities"), list):
            raise _error(capture, "expected [{'location_code', 'availabilities': [...]}]",
                         "availabilities")
        for instance in loc["availabilities"]:
            where.setdefault(str(instance), []).append(str(loc.get("location_code")))
    return where


# -- one offer --------------------------------------------------------------------------------


def _offer(shape: _Shape, model: PricingModel, variant: str | None, price: float,
           currency: str, capture: Capture, *, availability: Availability,
           extra: ProviderData) -> ParsedOffer | Reject:
    key = "|".join([shape.instance_type, model.value, *([variant] if variant else [])])
    data: ProviderData = {**extra, "p2p": shape.p2p if shape.p2p not in NOT_OFFERED else None}
    if variant == DYNAMIC:
        data["price_type"] = "dynamic: updates daily; fixed-price otherwise"
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=shape.instance_type,
            gpu_label=shape.label, gpu_count=shape.count, vram_gb_per_gpu=shape.vram_per_gpu,
            pricing_model=model, price_per_hour=price, currency=currency,
            price_kind=PriceKind.LISTED, vcpus=shape.vcpus, ram_gb=shape.ram_gb,
            disk_gb=shape.disk_gb, interconnect_gbps=_bandwidth_gbs(shape.p2p),
            availability=availability, source_url=capture.url, observed_at=capture.fetched_at,
            provider_data={k: v for k, v in data.items() if v is not None},
        )
    except ValidationError as exc:
        return Reject(provider=NAME, reason=f"invalid offer: {exc.errors()[0]['msg']}",
                      raw=shape.raw, offer_key=key)


# -- helpers ----------------------------------------------------------------------------------


def _api_path(capture: Capture) -> str | None:
    path = urlsplit(capture.url).path.rstrip("/")
    return path if path in (INSTANCE_TYPES_PATH, LOCATIONS_PATH, AVAILABILITY_PATH) else None


def _json_list(capture: Capture, what: str) -> list[Any]:
    try:
        doc = json.loads(capture.body)
    except ValueError as exc:
        raise _error(capture, f"body is not JSON ({exc})", None) from None
    if not isinstance(doc, list):
        raise _error(capture, f"expected a list of {what}", what)
    return doc


def _api_price(value: Any) -> float | None:
    """Prices come as strings ("3.95"); a number is accepted too."""
    try:
        price = float(value) if isinstance(value, str | int | float) else None
    except ValueError:
        return None
    return price if price is not None and price > 0 and not isinstance(value, bool) else None


def _bandwidth_gbs(text: str | None) -> float | None:
    """'900 GB/s' -> 900, '1.8 TB/s' -> 1800 (GB/s); '/' or None -> None."""
    match = BANDWIDTH_RE.match((text or "").strip())
    if match is None:
        return None
    return float(match.group(1)) * (1000 if match.group(2).upper() == "TB" else 1)


def _size(block: Any) -> float | None:
    return _positive(block.get("size_in_gigabytes")) if isinstance(block, dict) else None


def _number(text: str | None) -> float | None:
    try:
        value = float((text or "").replace(",", ""))
    except ValueError:
        return None
    return value if value > 0 else None


def _positive(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and value > 0 \
        and math.isfinite(value)
    return float(value) if ok else None


def _error(capture: Capture, message: str, field: str | None) -> ParseError:
    return ParseError(message, provider=NAME, url=capture.url, field=field,
                      snippet=capture.text()[:200])


