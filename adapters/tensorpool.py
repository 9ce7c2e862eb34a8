"""TensorPool: on-demand GPU prices from the public pricing page, `GET
https://tensorpool.dev/pricing`, the TensorPool column of its "Compare Plans" grid.

Layout (2026-08-22 capture, adapters/snapshots/tensorpool/PROVENANCE.md): a server-rendered
Next.js page. The comparison is a CSS grid, one `<div>` whose class names its column tracks
(`grid-cols-[200px_200px_1fr_1fr_1fr]`: five columns) and whose child `<div>`s are the cells,
row by row: the header "Category" | "GPU Type" | "Lambda Labs" | "TensorPool" | "Traditional
Clouds (GCP, AWS, etc.)", then one row per GPU ("ON-DEMAND" in the category cell of the first
row, empty below it) with a price per column ("$1.99/hr" or "N/A"). The same figures appear
again in per-provider cards for narrow screens; the grid is read, the cards are not.

Reading rules:
- Only the column headed "TensorPool" is TensorPool's price: the other columns are a competitor's
  price and TensorPool's estimate of other clouds, never offers.
- Prices are per GPU-hour (the cards head the same figures "GPU COSTS / HR"): an offer is one
  GPU. The grid's only category is ON-DEMAND (reservations are "contact us"); a row under any
  other category is a reject, never read as on demand.
- "N/A" is no offer; the CPU row is no GPU. Any other cell text is a reject.
- No grid whose header has "GPU Type" and "TensorPool" is a format change (ParseError), as is a
  grid whose cells do not fill whole rows.
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
    node_text,
    one_price_per_key,
    parse_error,
    split_results,
)
from gpuscout.core.models import ParsedOffer, ParseResult, PricingModel, Reject

PRICING_URL = "https://tensorpool.dev/pricing"

NAME = "tensorpool"
SOURCE_KIND: SourceKind = "html"
CREDENTIALS: tuple[str, ...] = ()

GRID_RE = re.compile(r"(?:^|\s)(?:[a-z]+:)*grid-cols-\[([^\]\s]+)\]")
PRICE_RE = re.compile(r"^\$\s*(\d[\d,]*(?:\.\d+)?)\s*/\s*hr$", re.IGNORECASE)
OWN_COLUMN = "TensorPool"
LABEL_COLUMN = "GPU Type"
CATEGORY_COLUMN = "Category"
ON_DEMAND = "ON-DEMAND"
NOT_OFFERED = frozenset({"n/a", "", "-", "—"})
NOT_GPUS = frozenset({"cpu"})


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRICING_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _read)


def _read(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    tree = LexborHTMLParser(capture.text())
    grids = [g for g in tree.css("div[class*='grid-cols-[']") if _header(g) is not None]
    if not grids:
        raise parse_error(NAME, capture, f"no price grid whose header has {LABEL_COLUMN!r} and "
                          f"{OWN_COLUMN!r}", OWN_COLUMN)
    results: list[ParsedOffer | Reject | None] = []
    for grid in grids:
        header = _header(grid)
        assert header is not None
        cells = _cells(grid)
        width = len(header)
        if len(cells) % width:
            raise parse_error(NAME, capture, f"the grid holds {len(cells)} cells, not whole rows "
                              f"of {width}", OWN_COLUMN)
        columns = [node_text(c) for c in header]
        label_at, own_at = columns.index(LABEL_COLUMN), columns.index(OWN_COLUMN)
        category_at = columns.index(CATEGORY_COLUMN) if CATEGORY_COLUMN in columns else None
        category = ""
        for start in range(width, len(cells), width):
            row = cells[start:start + width]
            if category_at is not None and node_text(row[category_at]):
                category = node_text(row[category_at])
            results.append(_offer(capture, node_text(row[label_at]), node_text(row[own_at]),
                                  category, "".join(c.html or "" for c in row)))
    offers, rejects = split_results(results)
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*rejects, *conflicts]


def _cells(grid: LexborNode) -> list[LexborNode]:
    return [child for child in grid.iter() if child.tag == "div"]


def _header(grid: LexborNode) -> list[LexborNode] | None:
    """The grid's header cells (as many as its class names column tracks), when they include
    the GPU Type and TensorPool columns; else None (not the price grid)."""
    match = GRID_RE.search(grid.attributes.get("class") or "")
    if match is None:
        return None
    width = len(match.group(1).split("_"))
    header = _cells(grid)[:width]
    texts = [node_text(c) for c in header]
    if len(header) != width or LABEL_COLUMN not in texts or OWN_COLUMN not in texts:
        return None
    return header


def _offer(capture: Capture, label: str, text: str, category: str,
           raw: str) -> ParsedOffer | Reject | None:
    if not label:
        return Reject(provider=NAME, reason="grid row without a GPU type", raw=raw)
    if label.lower() in NOT_GPUS or text.lower() in NOT_OFFERED:
        return None
    key = f"{label}|{PricingModel.ON_DEMAND.value}"
    if category.upper() != ON_DEMAND:
        return Reject(provider=NAME, raw=raw, reason=f"{label!r} is listed under "
                      f"{category!r}, not {ON_DEMAND}: {text!r}")
    match = PRICE_RE.match(text)
    if match is None:
        return Reject(provider=NAME, offer_key=key, raw=raw,
                      reason=f"{label!r}: no hourly price in the {OWN_COLUMN} column: {text!r}")
    per_gpu = float(match.group(1).replace(",", ""))
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, gpu_label=label, gpu_count=1,
            pricing_model=PricingModel.ON_DEMAND, price_per_hour=per_gpu,
            source_url=capture.url, observed_at=capture.fetched_at,
            provider_data={"column": OWN_COLUMN, "category": category,
                           "price_basis": "per GPU"})
    except ValidationError as exc:
        return Reject(provider=NAME, offer_key=key, raw=raw,
                      reason=f"invalid offer: {exc.errors()[0]['msg']}")
