"""Together AI: GPU cluster prices from the public pricing page, `GET
https://www.together.ai/pricing`, table "On-demand hourly rates and reserved capacity".

Layout (2026-08-22 capture, adapters/snapshots/together/PROVENANCE.md): a Webflow page whose
products are sections, each after an anchor `<div id="...">` and an `h2.pricing-row_heading`. The
GPU Clusters section (anchor `#gpu-clusters`) holds `table.pricing_table`s; one of them sits in a
`.hide` block (Webflow's display:none utility: an on-demand table the visitor does not see) and
is never read. The visible table has two header rows: "Hardware" | "ON-Demand" | "Reserved"
(spanning four columns), then "Pay as you go" | "7-30 days" | "31-90 days" | "91-180 days" |
"181+ days". Each body row names the hardware ("NVIDIA HGX H100") and gives a price per GPU-hour
("$3.99"), "—" (not offered) or a "Contact us" link, possibly spanning several columns.

Reading rules:
- "All prices are per GPU per hour" (the table's caption) and the page names no cluster size,
  so an offer is one GPU at the per-GPU price (as Crusoe's).
- "Pay as you go" under "ON-Demand" is on demand; a "N-M days" / "N+ days" column under
  "Reserved" is a reserved price for that commitment, the term kept in `provider_data`
  (`reserved_term`, `term_min_days`, `term_max_days`).
- HGX boards and NVL72 racks connect their GPUs through NVSwitch.
- "—" is no offer. "Contact us" is a reject (no price), as is any other cell text. Other sections
  (Dedicated Inference endpoints, sandboxes, storage) are not GPU rentals and are not read.
- No `#gpu-clusters` section, or no visible table with a "Pay as you go" column, is a format
  change (ParseError).
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
from gpuscout.adapters.toolkit import (
    newest_wins,
    node_text,
    one_price_per_key,
    parse_error,
    split_results,
)
from gpuscout.core.models import (
    Interconnect,
    ParsedOffer,
    ParseResult,
    PricingModel,
    ProviderData,
    Reject,
)

PRICING_URL = "https://www.together.ai/pricing"

NAME = "together"
SOURCE_KIND: SourceKind = "html"
CREDENTIALS: tuple[str, ...] = ()

SECTION_ANCHOR = "#gpu-clusters"
HIDDEN_CLASS = "hide"
ON_DEMAND_COLUMN = "pay as you go"
PRICE_RE = re.compile(r"^\$\s*(\d[\d,]*(?:\.\d+)?)$")
TERM_RE = re.compile(r"^(\d+)\s*(?:-\s*(\d+)|\+)\s*days?$", re.IGNORECASE)
NOT_OFFERED = frozenset({"", "-", "–", "—", "n/a"})
SYSTEM_INTERCONNECT = {"HGX": Interconnect.NVSWITCH, "NVL72": Interconnect.NVSWITCH}


@dataclass(frozen=True)
class _Column:
    heading: str  # as the page prints it: "Pay as you go", "7-30 days"
    model: PricingModel
    min_days: int | None = None
    max_days: int | None = None

    @property
    def key(self) -> str:
        if self.model is PricingModel.ON_DEMAND:
            return self.model.value
        return f"{self.model.value}|{self.heading.lower()}"


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRICING_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _read)


def _read(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    anchor = LexborHTMLParser(capture.text()).css_first(SECTION_ANCHOR)
    if anchor is None or anchor.parent is None:
        raise parse_error(NAME, capture, "no GPU Clusters section (#gpu-clusters anchor)",
                          SECTION_ANCHOR)
    tables = [(t, cols) for t in anchor.parent.css("table") if not _hidden(t)
              if (cols := _columns(t)) is not None]
    if not tables:
        raise parse_error(NAME, capture, "no visible GPU Clusters table with a 'Pay as you go' "
                          "column", "Pay as you go")
    results: list[ParsedOffer | Reject] = []
    for table, columns in tables:
        for row in table.css("tbody tr"):
            results += _row(capture, row, columns)
    offers, rejects = split_results(results)
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*rejects, *conflicts]


def _hidden(node: LexborNode) -> bool:
    parent = node.parent
    while parent is not None:
        if HIDDEN_CLASS in (parent.attributes.get("class") or "").split():
            return True
        parent = parent.parent
    return False


def _columns(table: LexborNode) -> list[_Column | str] | None:
    """The price columns after "Hardware", from the two header rows: a _Column for a price
    column, the heading text for one these rules do not know. None: not the cluster table."""
    rows = table.css("thead tr")
    if len(rows) != 2:
        return None
    groups: list[str] = []
    for cell in rows[0].css("th")[1:]:  # the first is "Hardware", spanning both rows
        groups += [node_text(cell).lower()] * _span(cell)
    headings = [node_text(cell) for cell in rows[1].css("th")]
    if ON_DEMAND_COLUMN not in (h.lower() for h in headings) or len(groups) != len(headings):
        return None
    columns: list[_Column | str] = []
    for group, heading in zip(groups, headings, strict=True):
        term = TERM_RE.match(heading)
        if group == "on-demand" and heading.lower() == ON_DEMAND_COLUMN:
            columns.append(_Column(heading, PricingModel.ON_DEMAND))
        elif group == "reserved" and term is not None:
            columns.append(_Column(heading, PricingModel.RESERVED, int(term.group(1)),
                                   int(term.group(2)) if term.group(2) else None))
        else:
            columns.append(f"{group} / {heading}")
    return columns


def _span(cell: LexborNode) -> int:
    text = cell.attributes.get("colspan") or "1"
    return int(text) if text.isdigit() and 0 < int(text) <= 16 else 1


def _row(capture: Capture, row: LexborNode,
         columns: list[_Column | str]) -> list[ParsedOffer | Reject]:
    raw = row.html or ""
    cells = row.css("td")
    if not cells or not node_text(cells[0]):
        return [Reject(provider=NAME, reason="row without a hardware name", raw=raw)]
    label = node_text(cells[0])
    spans = [_span(cell) for cell in cells[1:]]
    if sum(spans) != len(columns):
        return [Reject(provider=NAME, raw=raw, reason=f"{label!r}: {sum(spans)} price cells "
                       f"for {len(columns)} columns")]
    results: list[ParsedOffer | Reject] = []
    start = 0
    for cell, span in zip(cells[1:], spans, strict=True):
        covered, start = columns[start:start + span], start + span
        text = node_text(cell)
        headings = ", ".join(c if isinstance(c, str) else c.heading for c in covered)
        if text.lower() in NOT_OFFERED:
            continue
        match = PRICE_RE.match(text)
        column = covered[0]
        if match is None or span != 1 or isinstance(column, str):
            # "Contact us" (over one column or several), or a price these rules cannot place
            key = f"{label}|{column.key}" if isinstance(column, _Column) and span == 1 else None
            results.append(Reject(provider=NAME, offer_key=key, raw=raw,
                                  reason=f"{label!r}: no price for {headings}: {text!r}"))
            continue
        results.append(_offer(capture, f"{label}|{column.key}", label, column,
                              float(match.group(1).replace(",", "")), raw))
    return results


def _offer(capture: Capture, key: str, label: str, column: _Column, per_gpu: float,
           raw: str) -> ParsedOffer | Reject:
    links = [link for word, link in SYSTEM_INTERCONNECT.items() if word in label.upper().split()]
    data: ProviderData = {"column": column.heading, "price_basis": "per GPU",
                          "product": "GPU Clusters"}
    if column.model is PricingModel.RESERVED:
        data.update(reserved_term=column.heading, term_min_days=column.min_days,
                    term_max_days=column.max_days)
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, gpu_label=label, gpu_count=1,
            pricing_model=column.model, price_per_hour=per_gpu,
            interconnect=links[0] if links else None, source_url=capture.url,
            observed_at=capture.fetched_at, provider_data=data)
    except ValidationError as exc:
        return Reject(provider=NAME, offer_key=key, raw=raw,
                      reason=f"invalid offer: {exc.errors()[0]['msg']}")
