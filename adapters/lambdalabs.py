"""Lambda Cloud: list prices scraped from the public pricing page.

Two page layouts are known (see adapters/snapshots/lambda/PROVENANCE.md):

- 2026, lambda.ai/pricing: a tab widget ("8x", "4x", "2x", "1x"); each tab panel holds a table of
  `tr[data-plan]` rows with `td[data-label]` cells. The GPU count is the panel's tab label.
- 2024, lambdalabs.com/service/gpu-cloud: one plain table; the first cell says
  "On-demand 8x NVIDIA H100 SXM", the last "$2.99 / GPU / hr" or "CONTACT SALES".

Both print the price per GPU-hour; an offer's price is the whole instance (per-GPU price x count).
Offer keys are built from count, page label and VRAM only, so the same machine shape keeps its key
across layouts and its price history stays linked.
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
    one_price_per_key,
    parse_error,
    positive_decimal,
    split_results,
)
from gpuscout.core.models import ParsedOffer, ParseResult, PricingModel, Reject

PRICING_URL = "https://lambda.ai/pricing"

NAME = "lambda"
SOURCE_KIND: SourceKind = "html"
CREDENTIALS: tuple[str, ...] = ()

# 2026 layout: cell labels (trailing "*" footnote marks dropped) that a row must carry.
VRAM_LABEL = "VRAM/GPU"
PRICE_LABEL = "PRICE/GPU/HR"
PLAN_RE = re.compile(r"^(On-demand|Reserved)\s+(\d+)x\s+(.+)$", re.IGNORECASE)
TAB_RE = re.compile(r"^(\d+)\s*x$", re.IGNORECASE)
PRICE_RE = re.compile(r"^\$\s*(\d[\d,]*(?:\.\d+)?)$")
PRICE_PER_GPU_RE = re.compile(r"^\$\s*(\d[\d,]*(?:\.\d+)?)\s*/\s*GPU\s*/\s*hr\b", re.IGNORECASE)
SIZE_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(GB|GiB|TB|TiB)\b", re.IGNORECASE)
# Bytes per unit, to report RAM and disk in GB (10^9 bytes) as gpuscout.core.models specifies.
UNIT_BYTES = {"gb": 1e9, "gib": 2**30, "tb": 1e12, "tib": 2**40}


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRICING_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _read_page)


def _read_page(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    # A page that prints the same machine twice at two prices says neither: both rows are
    # rejected (a repeat at the same price is the same offer).
    offers, bad = _parse_page(capture)
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*bad, *conflicts]


# -- layouts ----------------------------------------------------------------------------------


def _parse_page(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    tree = LexborHTMLParser(capture.text())
    if tree.css_first("tr[data-plan]") is not None:
        return _parse_tabbed(tree, capture)
    rows = tree.css("tr")
    if not rows and "<tr" in capture.text().lower():
        # An archived excerpt cut inside a <table>: HTML parsing drops <tr>/<td> outside a
        # table, so read the fragment in table context.
        rows = LexborHTMLParser(f"<table>{capture.text()}</table>").css("tr")
    offers, rejects = _parse_plain_table(rows, capture)
    if not offers and not rejects:
        raise parse_error(NAME, capture, "no pricing table: neither tr[data-plan] rows nor "
                          "'On-demand Nx' rows", "pricing table")
    return offers, rejects


def _parse_tabbed(tree: LexborHTMLParser,
                  capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    panels = [p for p in tree.css('[role="tabpanel"]') if p.css_first("tr[data-plan]")]
    in_panels = sum(len(p.css("tr[data-plan]")) for p in panels)
    if in_panels != len(tree.css("tr[data-plan]")):
        raise parse_error(NAME, capture, "price rows outside a tab panel: the GPU count is "
                          "unknown", "tab label")
    results: list[ParsedOffer | Reject] = []
    for panel in panels:
        count = _tab_count(tree, panel, capture)
        rows = panel.css("tr[data-plan]")
        labels = {_cell_label(td) for row in rows for td in row.css("td[data-label]")}
        for required in (VRAM_LABEL, PRICE_LABEL):
            if required not in labels:
                raise parse_error(NAME, capture, f"no '{required}' column in the {count}x panel",
                                  required, snippet=panel.html or "")
        for row in rows:
            cells = {_cell_label(td): td.text(strip=True) for td in row.css("td[data-label]")}
            label = (row.attributes.get("data-plan") or "").strip()
            result = _offer(capture, count=count, label=label, vram=cells.get(VRAM_LABEL),
                            price=cells.get(PRICE_LABEL), per_gpu_re=PRICE_RE,
                            vcpus=cells.get("VCPUS"), ram=cells.get("RAM"),
                            storage=cells.get("STORAGE"), raw=row.html or "",
                            extra={"layout": "2026-tabs", "tab": f"{count}x"})
            results.append(result)
    return split_results(results)


def _parse_plain_table(rows: list[LexborNode],
                       capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    results: list[ParsedOffer | Reject] = []
    for row in rows:
        cells = [td.text(strip=True) for td in row.css("td")]
        match = PLAN_RE.match(cells[0]) if cells else None
        if match is None:
            if cells and "$" in cells[-1]:  # a priced row we cannot read
                results.append(Reject(provider=NAME, reason="unrecognised plan name",
                                      raw=row.html or ""))
            continue  # header or spacer row
        term, count, label = match.groups()
        raw = row.html or ""
        if len(cells) != 6:
            results.append(Reject(provider=NAME, raw=raw,
                                  reason=f"expected 6 cells, found {len(cells)}"))
            continue
        if term.lower() == "reserved":
            reason = ("contact sales" if "contact sales" in cells[5].lower()
                      else "reserved price without a stated term")
            results.append(Reject(provider=NAME, reason=reason, raw=raw))
            continue
        results.append(_offer(capture, count=int(count), label=label.strip(), vram=cells[1],
                              price=cells[5], per_gpu_re=PRICE_PER_GPU_RE, vcpus=cells[2],
                              ram=cells[3], storage=cells[4], raw=raw,
                              extra={"layout": "2024-table", "plan": cells[0]}))
    return split_results(results)


# -- one row ----------------------------------------------------------------------------------


def _offer(capture: Capture, *, count: int, label: str, vram: str | None, price: str | None,
           per_gpu_re: re.Pattern[str], vcpus: str | None, ram: str | None,
           storage: str | None, raw: str,
           extra: dict[str, str]) -> ParsedOffer | Reject:
    if not label:
        return Reject(provider=NAME, reason="row without a plan label", raw=raw)
    text = (price or "").strip()
    if "contact sales" in text.lower():
        return Reject(provider=NAME, reason="contact sales", raw=raw)
    match = per_gpu_re.match(text)
    if match is None:
        return Reject(provider=NAME, reason=f"unrecognised price {text!r}", raw=raw)
    per_gpu = float(match.group(1).replace(",", ""))
    vram_gb = _vram_gb(vram)
    if vram_gb is None:
        return Reject(provider=NAME, reason=f"unrecognised VRAM {vram!r}", raw=raw)
    key = f"{count}x|{label}|{vram_gb:g}GB|{PricingModel.ON_DEMAND.value}"
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, gpu_label=label, gpu_count=count,
            vram_gb_per_gpu=vram_gb, pricing_model=PricingModel.ON_DEMAND,
            price_per_hour=round(per_gpu * count, 6), vcpus=positive_decimal(vcpus),
            ram_gb=_size_gb(ram), disk_gb=_size_gb(storage), source_url=capture.url,
            observed_at=capture.fetched_at,
            provider_data={**extra, "price_per_gpu_hour": per_gpu, "ram": ram,
                           "storage": storage},
        )
    except ValidationError as exc:
        return Reject(provider=NAME, reason=f"invalid offer: {exc.errors()[0]['msg']}", raw=raw,
                      offer_key=key)


def _tab_count(tree: LexborHTMLParser, panel: LexborNode, capture: Capture) -> int:
    tab_id = panel.attributes.get("aria-labelledby") or ""
    # Look in the panel's own tab widget first: ids like "tab-0" repeat across widgets.
    widget = panel.parent
    while widget is not None and widget.css_first('[role="tablist"]') is None:
        widget = widget.parent
    scope = widget if widget is not None else tree
    tab = scope.css_first(f'[id="{tab_id}"]') if tab_id else None
    match = TAB_RE.match(tab.text(strip=True)) if tab is not None else None
    if match is None:
        raise parse_error(NAME, capture, "tab panel without an 'Nx' tab label: the GPU count "
                          "is unknown", "tab label",
                          snippet=(tab.html if tab is not None else panel.html) or "")
    return int(match.group(1))


def _cell_label(td: LexborNode) -> str:
    return (td.attributes.get("data-label") or "").strip().rstrip("*").upper()


def _vram_gb(text: str | None) -> float | None:
    # VRAM stays the nominal number the page prints ("80 GB"), as the GPU catalog records it.
    match = re.match(r"^(\d+(?:\.\d+)?)\s*GB$", (text or "").strip(), re.IGNORECASE)
    return float(match.group(1)) if match else None


def _size_gb(text: str | None) -> float | None:
    match = SIZE_RE.search(text or "")
    if match is None:
        return None
    return round(float(match.group(1)) * UNIT_BYTES[match.group(2).lower()] / 1e9, 1)

