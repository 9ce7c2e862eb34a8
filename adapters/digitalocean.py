"""DigitalOcean GPU Droplets: list prices from the public pricing page; the API's sizes as well.

Live path: the pricing page digitalocean.com/pricing/gpu-droplets. It needs no credentials and a
real capture of it is bundled (adapters/snapshots/digitalocean/PROVENANCE.md). The API
(`GET https://api.digitalocean.com/v2/sizes`, Bearer token) is read by `parse()` too, for
recorded captures of it; the only sample we have is a third-party fixture, so it is not replayed.

Page (2025, styled-components cards, hashed class names; select on the stable name prefixes):
- `h3` names the Droplet ("NVIDIA H100x8"); a `p` under the price says "On-Demand Price" or
  "Reserved Price"; the price spans read "$2.99" + "/GPU/hour".
- A promotion shows two prices: the list price in a strike-through span first, then the price
  charged ("$6.74" struck, "$3.39" + "/GPU/hour*"). The struck price is never the price; the
  promo price is loaded with `promo` and the list price in `provider_data`.
- The spec list gives GPUs per Droplet, GPU memory (whole Droplet), Droplet memory (GiB), vCPUs,
  boot and scratch disk (an SVG dash means none); the size slug is in the "Get started" link
  (`?size=gpu-h100x8-640gb`, or "undefined").
- Reserved cards say "Prices start as low as $1.99/GPU/hour ... contractual commitment of 12
  months ... contact sales": a floor for a negotiated contract, not a price, so they are
  rejected.

API sizes: `price_hourly` is the whole Droplet; `gpu_info{count, vram{amount, unit}, model}` (VRAM
for the whole Droplet); `memory` MiB; `regions` where the size can be created, `available`.
Sizes without `gpu_info` are CPU Droplets and are not offers. One offer per size and region.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import parse_qs, urlsplit

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind, newest_wins
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

PRICING_URL = "https://www.digitalocean.com/pricing/gpu-droplets"
API_HOST = "api.digitalocean.com"
SIZES_PATH = "/v2/sizes"

NAME = "digitalocean"
SOURCE_KIND: SourceKind = "html"
CREDENTIALS: tuple[str, ...] = ()

CARD = 'div[class*="StyledCardPricingCard"]'
PRICE_BOX = 'div[class*="StyledPriceContainer"]'
STRUCK = "StrikeThrough"  # the component that strikes a list price through when promo is on
PRICE_RE = re.compile(r"^\$\s*(\d[\d,]*(?:\.\d+)?)$")
UNIT_RE = re.compile(r"^/\s*GPU\s*/\s*hour\s*(\**)$", re.IGNORECASE)
SIZE_RE = re.compile(r"^(\d[\d,]*(?:\.\d+)?)\s*(GB|GiB|TB|TiB)\b", re.IGNORECASE)
COUNT_SUFFIX_RE = re.compile(r"^(.*?)\s*x(\d+)$")
TERM_RE = re.compile(r"commitment of (\d+) months", re.IGNORECASE)
# Bytes per unit: RAM and disk are reported in GB (10^9 bytes) as gpuscout.core.models specifies;
# VRAM stays the nominal number printed ("80 GB"), as the GPU catalog records it.
UNIT_BYTES = {"gb": 1e9, "gib": 2**30, "tb": 1e12, "tib": 2**40}
MIB = 2**20
API_REQUIRED = ("slug", "price_hourly")


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRICING_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, lambda c: _parse_sizes(c)
                       if urlsplit(c.url).hostname == API_HOST else _parse_page(c))


# -- pricing page -----------------------------------------------------------------------------


def _parse_page(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    tree = LexborHTMLParser(capture.text())
    cards = tree.css(CARD)
    if not cards:
        raise _error(capture, "no GPU Droplet pricing cards", CARD)
    if not any(c.css_first(PRICE_BOX) is not None for c in cards):
        raise _error(capture, "no card has a price container", PRICE_BOX)
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for card in cards:
        result = _card(card, capture)
        (offers if isinstance(result, ParsedOffer) else rejects).append(result)
    return offers, rejects


def _card(card: LexborNode, capture: Capture) -> ParsedOffer | Reject:
    raw = card.html or ""
    title_node = card.css_first("h3")
    title = " ".join(title_node.text().split()) if title_node is not None else ""
    box = card.css_first(PRICE_BOX)
    if not title or box is None:
        return Reject(provider=NAME, reason="card without a name or a price", raw=raw)
    label_node = box.css_first("p")
    kind = " ".join(label_node.text().split()) if label_node is not None else ""
    if kind.lower().startswith("reserved"):
        return _reserved_reject(title, card, raw)
    if kind.lower() != "on-demand price":
        return Reject(provider=NAME, raw=raw, reason=f"{title}: unknown price label {kind!r}")
    prices = [s for s in _child_spans(box) if len(_child_spans(s)) == 2]
    if not prices or len(prices) > 2:
        return Reject(provider=NAME, raw=raw,
                      reason=f"{title}: expected one price or a struck and a promo price, "
                             f"found {len(prices)}")
    if len(prices) == 2 and STRUCK not in (prices[0].attributes.get("class") or ""):
        return Reject(provider=NAME, raw=raw,
                      reason=f"{title}: two prices and neither is struck through")
    current = _price(prices[-1])
    if current is None:
        return Reject(provider=NAME, raw=raw,
                      reason=f"{title}: unrecognised price {prices[-1].text(strip=True)!r}")
    per_gpu, marks = current
    specs = _specs(card)
    gpus = _number(specs.get("gpus per droplet"))
    if gpus is None or gpus != int(gpus):
        return Reject(provider=NAME, raw=raw, reason=f"{title}: no 'GPUs per Droplet'")
    count = int(gpus)
    vram_total = _size_value(specs.get("gpu memory"))
    slug = _slug(card)
    label = _label(title, count)
    vram = round(vram_total / count, 3) if vram_total else None
    key_base = slug or f"{label}|{count}x|{vram or 0:g}GB"
    key = f"{key_base}|{PricingModel.ON_DEMAND.value}"
    data: ProviderData = {"droplet": title, "size_slug": slug,
                          "price_per_gpu_hour": per_gpu,
                          "scratch_disk_gb": _size_gb(specs.get("scratch disk")),
                          "transfer": specs.get("transfer") or None}
    if len(prices) == 2:
        listed = _price(prices[0])
        data |= {"promo": True, "list_price_per_gpu_hour": listed[0] if listed else None}
        if marks:
            data["promo_footnote"] = marks
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=slug, gpu_label=label,
            gpu_count=count, vram_gb_per_gpu=vram, pricing_model=PricingModel.ON_DEMAND,
            price_per_hour=round(per_gpu * count, 6), price_kind=PriceKind.LISTED,
            vcpus=_number(specs.get("droplet vcpus")),
            ram_gb=_size_gb(specs.get("droplet memory")),
            disk_gb=_size_gb(specs.get("boot disk")), source_url=capture.url,
            observed_at=capture.fetched_at,
            provider_data={k: v for k, v in data.items() if v is not None},
        )
    except ValidationError as exc:
        return Reject(provider=NAME, reason=f"invalid offer: {exc.errors()[0]['msg']}", raw=raw,
                      offer_key=key)


def _reserved_reject(title: str, card: LexborNode, raw: str) -> Reject:
    text = " ".join(card.text(separator=" ").split()).lower()
    term = TERM_RE.search(text)
    months = f"{term.group(1)}-month " if term else ""
    if "as low as" in text:
        return Reject(provider=NAME, raw=raw,
                      reason=f"{title}: reserved price for a {months}contract is a floor "
                             "('as low as') quoted by sales, not a price")
    if "contact sales" in text:
        return Reject(provider=NAME, raw=raw,
                      reason=f"{title}: reserved price for a {months}contract quoted by sales")
    return Reject(provider=NAME, raw=raw, reason=f"{title}: reserved price without a stated term")


def _price(span: LexborNode) -> tuple[float, str] | None:
    """'$3.39' + '/GPU/hour*' -> (3.39, '*'); None for anything else (per Droplet, text)."""
    parts = [s.text(strip=True) for s in _child_spans(span)]
    if len(parts) != 2:
        return None
    amount, unit = PRICE_RE.match(parts[0]), UNIT_RE.match(parts[1])
    if amount is None or unit is None:
        return None
    return float(amount.group(1).replace(",", "")), unit.group(1)


def _child_spans(node: LexborNode) -> list[LexborNode]:
    # Not node.css("span"): lexbor's css() matches the node itself too.
    return [c for c in node.iter() if c.tag == "span"]


def _specs(card: LexborNode) -> dict[str, str]:
    specs: dict[str, str] = {}
    for li in card.css("li"):
        spans = _child_spans(li)
        if len(spans) == 2:
            specs[spans[0].text(strip=True).lower()] = spans[1].text(strip=True)
    return specs


def _slug(card: LexborNode) -> str | None:
    """The size slug in the 'Get started' link (activation_redirect=/gpus/new?size=<slug>)."""
    for a in card.css("a[href]"):
        query = parse_qs(urlsplit(a.attributes.get("href") or "").query)
        for redirect in query.get("activation_redirect", []) + query.get("redirect_url", []):
            size = parse_qs(urlsplit(redirect).query).get("size", [""])[0]
            if size and size != "undefined":
                return size
    return None


def _label(title: str, count: int) -> str:
    """'NVIDIA H100x8' with 8 GPUs per Droplet -> 'NVIDIA H100' (the count is its own field)."""
    match = COUNT_SUFFIX_RE.match(title)
    if match is not None and int(match.group(2)) == count:
        return match.group(1)
    return title


# -- API /v2/sizes ----------------------------------------------------------------------------


def _parse_sizes(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    try:
        doc = json.loads(capture.body)
    except ValueError as exc:
        raise _error(capture, f"body is not JSON ({exc})", None) from None
    sizes = doc.get("sizes") if isinstance(doc, dict) else None
    if not isinstance(sizes, list):
        raise _error(capture, "expected {'sizes': [...]}", "sizes")
    entries = [s for s in sizes if isinstance(s, dict)]
    for field in API_REQUIRED:  # a field renamed upstream is missing from every size
        if entries and not any(field in s for s in entries):
            raise _error(capture, f"no size has '{field}'", field)
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for size in sizes:
        if isinstance(size, dict) and size.get("gpu_info") is None:
            continue  # a CPU Droplet: not a GPU offer
        for result in _size_offers(size, capture):
            (offers if isinstance(result, ParsedOffer) else rejects).append(result)
    return offers, rejects


def _size_offers(size: Any, capture: Capture) -> list[ParsedOffer | Reject]:
    raw = json.dumps(size, sort_keys=True)
    if not isinstance(size, dict):
        return [Reject(provider=NAME, reason="size is not an object", raw=raw)]
    gpu = size["gpu_info"]
    slug, price = size.get("slug"), size.get("price_hourly")
    count = gpu.get("count") if isinstance(gpu, dict) else None
    model = gpu.get("model") if isinstance(gpu, dict) else None
    if not isinstance(slug, str) or not slug:
        return [Reject(provider=NAME, reason="GPU size without a slug", raw=raw)]
    if not _is_number(price) or price <= 0:
        return [Reject(provider=NAME, reason=f"{slug}: price_hourly is not a price: {price!r}",
                       raw=raw)]
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        return [Reject(provider=NAME, reason=f"{slug}: gpu_info.count is not a count: {count!r}",
                       raw=raw)]
    if not isinstance(model, str) or not model:
        return [Reject(provider=NAME, reason=f"{slug}: gpu_info without a model", raw=raw)]
    vram = _api_vram_per_gpu(gpu.get("vram"), count)
    listed = size.get("regions")
    regions = [r for r in listed if isinstance(r, str)] if isinstance(listed, list) else []
    regions = regions or [None]
    available = size.get("available")
    availability = (Availability.UNKNOWN if not isinstance(available, bool)
                    else Availability.IN_STOCK if available else Availability.OUT_OF_STOCK)
    data: ProviderData = {"description": size.get("description"), "size_slug": slug,
                          "price_monthly": size.get("price_monthly"),
                          "transfer_tb": size.get("transfer"),
                          "networking_throughput_mbps": size.get("networking_throughput"),
                          "scratch_disk_gb": _api_scratch_gb(size.get("disk_info"))}
    memory = size.get("memory")
    out: list[ParsedOffer | Reject] = []
    for region in regions:
        key = f"{slug}|{region or '*'}|{PricingModel.ON_DEMAND.value}"
        try:
            out.append(ParsedOffer(
                provider=NAME, offer_key=key, instance_type=slug, gpu_label=model,
                gpu_count=count, vram_gb_per_gpu=vram, pricing_model=PricingModel.ON_DEMAND,
                price_per_hour=float(price), price_kind=PriceKind.LISTED, region=region,
                vcpus=_positive(size.get("vcpus")),
                ram_gb=round(memory * MIB / 1e9, 1) if _is_number(memory) and memory > 0
                else None,
                disk_gb=_positive(size.get("disk")), availability=availability,
                source_url=capture.url, observed_at=capture.fetched_at,
                provider_data={k: v for k, v in data.items() if _is_scalar(v)},
            ))
        except ValidationError as exc:
            out.append(Reject(provider=NAME, reason=f"invalid offer: {exc.errors()[0]['msg']}",
                              raw=raw, offer_key=key))
    return out


def _api_vram_per_gpu(vram: Any, count: int) -> float | None:
    """gpu_info.vram is the whole Droplet's ({"amount": 640, "unit": "gib"} for 8 GPUs)."""
    if not isinstance(vram, dict) or not _is_number(vram.get("amount")):
        return None
    if str(vram.get("unit", "")).lower() not in ("gib", "gb"):
        return None
    return round(vram["amount"] / count, 3) or None


def _api_scratch_gb(disks: Any) -> float | None:
    for disk in disks if isinstance(disks, list) else []:
        size = disk.get("size") if isinstance(disk, dict) else None
        if disk.get("type") == "scratch" and isinstance(size, dict):
            unit = str(size.get("unit", "")).lower()
            if _is_number(size.get("amount")) and unit in UNIT_BYTES:
                return round(size["amount"] * UNIT_BYTES[unit] / 1e9, 1)
    return None


# -- helpers ----------------------------------------------------------------------------------


def _size_value(text: str | None) -> float | None:
    match = SIZE_RE.match(text or "")
    return float(match.group(1).replace(",", "")) if match else None


def _size_gb(text: str | None) -> float | None:
    match = SIZE_RE.match(text or "")
    if match is None:
        return None
    value = float(match.group(1).replace(",", ""))
    return round(value * UNIT_BYTES[match.group(2).lower()] / 1e9, 1)


def _number(text: str | None) -> float | None:
    try:
        value = float((text or "").replace(",", ""))
    except ValueError:
        return None
    return value if value > 0 else None


def _positive(value: Any) -> float | None:
    return float(value) if _is_number(value) and value > 0 else None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) \
        and math.isfinite(value)


def _is_scalar(value: Any) -> bool:
    return value is not None and isinstance(value, str | int | float | bool)


def _error(capture: Capture, message: str, field: str | None) -> ParseError:
    return ParseError(message, provider=NAME, url=capture.url, field=field,
                      snippet=capture.text()[:200])
