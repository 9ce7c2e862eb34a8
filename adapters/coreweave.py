"""CoreWeave: GPU component prices from the public pricing page (coreweave.com/gpu-cloud-pricing).

The page of 2023 (adapters/snapshots/coreweave/PROVENANCE.md) is a div table: one
`.table-body-row` per GPU with the name in `a[data-product]`, then four `.w-col-2` cells: VRAM
(GB), max vCPUs per GPU, max RAM per GPU (GB) and `<strong>$4.76</strong>` under the column
header "GPU Component Cost Per Hour".

That price is one GPU's component cost: CPU and RAM are billed on top, at rates the captured page
does not show. An instance price cannot be composed from it without inventing the missing
components, so each row becomes an offer of ONE GPU whose `price_per_hour` is the GPU component
alone, flagged `provider_data["price_scope"] = "gpu_component"`. Consumers that compare
whole-instance prices must treat these as a lower bound (or skip them); the vCPU and RAM columns
are ceilings per GPU, not part of the price, so they stay in `provider_data`. The parser refuses a
page whose price column is not the GPU component column (ParseError), so a future per-instance
table can never be read with this meaning.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from pydantic import ValidationError
from selectolax.lexbor import LexborHTMLParser, LexborNode

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    newest_wins,
    parse_error,
    positive_decimal,
    split_results,
)
from gpuscout.core.models import ParsedOffer, ParseResult, PriceKind, PricingModel, Reject

PRICING_URL = "https://www.coreweave.com/gpu-cloud-pricing"

NAME = "coreweave"
SOURCE_KIND: SourceKind = "html"
CREDENTIALS: tuple[str, ...] = ()

PRICE_SCOPE = "gpu_component"
# The column header that gives the price its meaning; the page breaks it with <br/>.
COMPONENT_HEADER_RE = re.compile(r"GPU\s+Component\s+Cost\s+Per\s+Hour", re.IGNORECASE)
PRICE_RE = re.compile(r"^\$\s*(\d[\d,]*(?:\.\d+)?)$")
ROW_CELLS = 4  # VRAM, max vCPUs/GPU, max RAM/GPU, price


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRICING_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _parse_page)


# -- page -------------------------------------------------------------------------------------


def _parse_page(capture: Capture) -> tuple[list[ParsedOffer], list[Reject], bool]:
    """Offers, rejects, and whether every row could be read (False: the page is cut short)."""
    tree = LexborHTMLParser(capture.text())
    rows = tree.css(".table-body-row")
    if not rows:
        raise parse_error(NAME, capture, "no pricing rows (.table-body-row)", ".table-body-row")
    if not any(r.css_first("a[data-product]") is not None for r in rows):
        raise parse_error(NAME, capture, "no row names its GPU in a[data-product]",
                          "data-product")
    body = tree.body.text(separator=" ") if tree.body is not None else ""
    if not COMPONENT_HEADER_RE.search(body):
        # Without this header the price column could be per instance or per GPU: refuse it.
        raise parse_error(NAME, capture,
                          "price column header 'GPU Component Cost Per Hour' not found",
                          "GPU Component Cost Per Hour")
    # A row without its cells: the page was cut or broken, other rows may be lost.
    complete = all(len(row.css(".w-col-2")) == ROW_CELLS for row in rows)
    offers, rejects = split_results(_row(row, capture) for row in rows)
    return offers, rejects, complete


def _row(row: LexborNode, capture: Capture) -> ParsedOffer | Reject:
    raw = row.html or ""
    link = row.css_first("a[data-product]")
    if link is None:
        return Reject(provider=NAME, reason="row without a[data-product]", raw=raw)
    slug = (link.attributes.get("data-product") or "").strip()
    label = link.text(strip=True)
    if not slug or not label:
        return Reject(provider=NAME, reason="row without a product slug or name", raw=raw)
    cells = row.css(".w-col-2")
    if len(cells) != ROW_CELLS:
        return Reject(provider=NAME, raw=raw,
                      reason=f"incomplete row: expected {ROW_CELLS} value cells, "
                             f"found {len(cells)}")
    vram, vcpus, ram = (positive_decimal(c.text(strip=True)) for c in cells[:3])
    price_node = cells[3].css_first("strong")
    price_text = price_node.text(strip=True) if price_node is not None else ""
    match = PRICE_RE.match(price_text)
    if match is None:
        return Reject(provider=NAME, raw=raw,
                      reason=f"unrecognised GPU component price {price_text!r}")
    if vram is None:
        return Reject(provider=NAME, raw=raw,
                      reason=f"unrecognised VRAM {cells[0].text(strip=True)!r}")
    key = f"{slug}|{PRICE_SCOPE}|{PricingModel.ON_DEMAND.value}"
    reserve = cells[3].css_first("a[href]")
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=slug, gpu_label=label, gpu_count=1,
            vram_gb_per_gpu=vram, pricing_model=PricingModel.ON_DEMAND,
            price_per_hour=float(match.group(1).replace(",", "")),
            price_kind=PriceKind.LISTED, source_url=capture.url,
            observed_at=capture.fetched_at,
            provider_data={k: v for k, v in {
                "price_scope": PRICE_SCOPE,
                "billed_separately": "vCPU and RAM (rates not on the page)",
                "max_vcpus_per_gpu": vcpus, "max_ram_gb_per_gpu": ram,
                "reserve_url": reserve.attributes.get("href") if reserve is not None else None,
            }.items() if v is not None},
        )
    except ValidationError as exc:
        return Reject(provider=NAME, reason=f"invalid offer: {exc.errors()[0]['msg']}", raw=raw,
                      offer_key=key)

