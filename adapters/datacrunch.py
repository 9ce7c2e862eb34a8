"""DataCrunch (now "Verda"): per-instance prices from the public products page.

Live path: the products page datacrunch.io/products. It needs no credentials and a real capture
of it is bundled (adapters/snapshots/datacrunch/PROVENANCE.md). The API (`/v1/instance-types`
and its neighbours) answers only after an OAuth client-credentials token exchange, which no
recorded response covers, so it is neither fetched nor parsed.

Page (2025): a `<table>` whose header names the columns: Instance name ("1B200.30V"), GPU model
("B200 SXM6 180GB"), GPU (count), CPU, RAM (GB), VRAM (GB, whole instance), P2P ("/" for one
GPU, "900 GB/s", "1.8 TB/s"), On demand price, Dynamic price, Spot price ("$3.64/h"). Prices are
for the whole instance. Up to three offers per row: on-demand (fixed), on-demand at the dynamic
price (its key carries "dynamic") and spot. The page's footnote says prices are fixed after
deployment "except for dynamically-priced instances, which update daily"; the verda SDK treats
pricing (DYNAMIC_PRICE / FIXED_PRICE) apart from the contract (PAY_AS_YOU_GO / SPOT / LONG_TERM),
so a dynamic price is a pay-as-you-go (on-demand) price, not a spot one. Offer keys are the
instance type and the pricing ("1B200.30V|spot"); the page states no region or availability.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import ValidationError
from selectolax.lexbor import LexborHTMLParser, LexborNode

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import newest_wins, parse_error, positive_decimal, split_results
from gpuscout.core.models import (
    Availability,
    ParsedOffer,
    ParseResult,
    PriceKind,
    PricingModel,
    ProviderData,
    Reject,
)

PRODUCTS_URL = "https://datacrunch.io/products"

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
DYNAMIC = "dynamic"


@dataclass(frozen=True)
class _Shape:
    """One instance type as a table row describes it."""

    instance_type: str
    label: str
    count: int
    vram_per_gpu: float | None
    vcpus: float | None
    ram_gb: float | None
    p2p: str | None
    raw: str


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRODUCTS_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _parse_page)


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
        raise parse_error(NAME, capture, "no price table (a header row with 'Instance name')",
                          "Instance name")
    results: list[ParsedOffer | Reject | None] = []
    for table in tables:
        header = _header(table)
        missing = [c for c in REQUIRED_COLUMNS if c not in header]
        if missing:
            raise parse_error(NAME, capture, f"price table without column {missing[0]!r}",
                              missing[0])
        for row in table.css("tr"):
            cells = [td.text(strip=True) for td in row.css("td")]
            if not cells:
                continue  # the header row
            raw = row.html or ""
            if len(cells) != len(header):
                results.append(Reject(provider=NAME, raw=raw,
                                      reason=f"expected {len(header)} cells, found "
                                             f"{len(cells)}"))
                continue
            values = {COLUMNS[h]: v for h, v in zip(header, cells, strict=True) if h in COLUMNS}
            shape = _page_shape(values, raw)
            if isinstance(shape, Reject):
                results.append(shape)
                continue
            for field, model, variant in (("on_demand", PricingModel.ON_DEMAND, None),
                                          ("dynamic", PricingModel.ON_DEMAND, DYNAMIC),
                                          ("spot", PricingModel.SPOT, None)):
                results.append(_page_price(values.get(field), shape, model, variant, capture))
    return split_results(results)  # None: a price column that is not offered


def _header(table: LexborNode) -> list[str]:
    """Column names in order, lower case; empty unless the table is a price table."""
    names = [" ".join(th.text().split()).lower() for th in table.css("th")]
    return names if "instance name" in names else []


def _page_shape(values: dict[str, str], raw: str) -> _Shape | Reject:
    instance, label = values.get("instance", ""), " ".join(values.get("model", "").split())
    count = positive_decimal(values.get("count"))
    if not instance or not label:
        return Reject(provider=NAME, reason="row without an instance name or GPU model", raw=raw)
    if count is None or count != int(count):
        return Reject(provider=NAME, raw=raw,
                      reason=f"{instance}: GPU count {values.get('count')!r} is not a count")
    vram_total = positive_decimal(values.get("vram"))
    return _Shape(instance_type=instance, label=label, count=int(count),
                  vram_per_gpu=round(vram_total / count, 3) if vram_total else None,
                  vcpus=positive_decimal(values.get("cpu")),
                  ram_gb=positive_decimal(values.get("ram")), p2p=values.get("p2p"), raw=raw)


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
                  CURRENCY[match.group(1)], capture)


# -- one offer --------------------------------------------------------------------------------


def _offer(shape: _Shape, model: PricingModel, variant: str | None, price: float,
           currency: str, capture: Capture) -> ParsedOffer | Reject:
    key = "|".join([shape.instance_type, model.value, *([variant] if variant else [])])
    data: ProviderData = {"source": "products page",
                          "p2p": shape.p2p if shape.p2p not in NOT_OFFERED else None}
    if variant == DYNAMIC:
        data["price_type"] = "dynamic: updates daily; fixed-price otherwise"
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=shape.instance_type,
            gpu_label=shape.label, gpu_count=shape.count, vram_gb_per_gpu=shape.vram_per_gpu,
            pricing_model=model, price_per_hour=price, currency=currency,
            price_kind=PriceKind.LISTED, vcpus=shape.vcpus, ram_gb=shape.ram_gb,
            interconnect_gbps=_bandwidth_gbs(shape.p2p), availability=Availability.UNKNOWN,
            source_url=capture.url, observed_at=capture.fetched_at,
            provider_data={k: v for k, v in data.items() if v is not None},
        )
    except ValidationError as exc:
        return Reject(provider=NAME, reason=f"invalid offer: {exc.errors()[0]['msg']}",
                      raw=shape.raw, offer_key=key)


# -- helpers ----------------------------------------------------------------------------------


def _bandwidth_gbs(text: str | None) -> float | None:
    """'900 GB/s' -> 900, '1.8 TB/s' -> 1800 (GB/s); '/' or None -> None."""
    match = BANDWIDTH_RE.match((text or "").strip())
    if match is None:
        return None
    return float(match.group(1)) * (1000 if match.group(2).upper() == "TB" else 1)
