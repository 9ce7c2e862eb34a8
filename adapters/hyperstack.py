"""Hyperstack: per-GPU list prices scraped from the public GPU pricing page.

Layout (2025-07 and 2026-08, the same HubSpot template; adapters/snapshots/hyperstack/PROVENANCE.md
and tests/fixtures/hyperstack/PROVENANCE.md): div "cards", not `<table>`. Each
`.page-price_card_main` holds a head row of `.page-price_card_head_item` cells and data rows
`.page-price_card_row_item`, whose `.page-price_card_row_item_col` cells follow the head. A card
is told by its column headings, not by its title (the 2025 excerpt cuts the first title):
- On-Demand GPU: GPU Model, VRAM (GB), Max pCPUs per GPU, Max RAM (GB) per GPU, Pricing Per Hour.
- Reservation: GPU Model, Starting from, Reserve (a link, or plain text).
- Spot VM: GPU Model, Spot VM.
Cards whose first column is not "GPU Model" (On-Demand CPU, Storage, Other Services, the AI
Studio token and fine-tuning cards) are not GPU rentals and are skipped; GPU names in the
navigation and footer (GB200 NVL72, HGX B200, ...) are outside every card and never read.

Reading rules:
- Prices are per GPU-hour ("per GPU" columns); the page names no machine size, so an offer is
  one GPU at the per-GPU price. The per-GPU pCPU and RAM maxima go into `provider_data`.
- Reservation prices are "Starting from" a price with no stated term: rejected, never guessed.
- Spot VM prices are published prices (no bid, nothing says "current"): listed, spot. The spot
  card has no VRAM column; the on-demand row of the same model on the same page supplies it
  (none for a spot-only label such as 2026's "NVIDIA H100 PCIe").
- "NVLink" in a model name is the page stating the GPUs' link. Prices may carry leading spaces
  or &nbsp;, headings a trailing &nbsp; ("Starting from&nbsp;").
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
    positive_decimal,
    split_results,
)
from gpuscout.core.models import Interconnect, ParsedOffer, ParseResult, PricingModel, Reject

PRICING_URL = "https://www.hyperstack.cloud/gpu-pricing"

NAME = "hyperstack"
SOURCE_KIND: SourceKind = "html"
CREDENTIALS: tuple[str, ...] = ()

GPU_COLUMN = "gpu model"
ON_DEMAND_PRICE = "pricing per hour"
VRAM_COLUMN = "vram (gb)"
PCPU_COLUMN = "max pcpus per gpu"
RAM_COLUMN = "max ram (gb) per gpu"
RESERVATION_PRICE = "starting from"
SPOT_PRICE = "spot vm"
PRICE_RE = re.compile(r"^\$\s*(\d[\d,]*(?:\.\d+)?)$")
NOT_OFFERED = frozenset({"", "-", "–", "—", "n/a"})


@dataclass(frozen=True)
class _Row:
    label: str
    cells: dict[str, str]  # column heading (lower case) -> cell text
    raw: str


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRICING_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _parse_page)


# -- page -------------------------------------------------------------------------------------


def _parse_page(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    tree = LexborHTMLParser(capture.text())
    sections: dict[str, list[list[_Row]]] = {}
    rejects: list[Reject] = []
    for card in tree.css(".page-price_card_main"):
        heads = [node_text(h).lower() for h in card.css(".page-price_card_head_item")]
        if not heads or heads[0] != GPU_COLUMN:
            continue  # a CPU or storage card
        rows, bad = _rows(card, heads)
        rejects.extend(bad)
        section = next((s for s in (ON_DEMAND_PRICE, RESERVATION_PRICE, SPOT_PRICE)
                        if s in heads), None)
        if section is None:
            rejects.extend(Reject(provider=NAME, raw=r.raw,
                                  reason=f"GPU card with unknown columns {heads}") for r in rows)
            continue
        sections.setdefault(section, []).append(rows)
    if ON_DEMAND_PRICE not in sections:
        raise parse_error(NAME, capture, "no on-demand GPU card: no .page-price_card_main with "
                          "'GPU Model' and 'Pricing Per Hour' columns", "Pricing Per Hour")
    on_demand = [r for rows in sections[ON_DEMAND_PRICE] for r in rows]
    if not on_demand:
        raise parse_error(NAME, capture, "on-demand GPU card without rows",
                          "page-price_card_row_item")
    if VRAM_COLUMN not in on_demand[0].cells:
        raise parse_error(NAME, capture, "on-demand GPU card without a 'VRAM (GB)' column",
                          "VRAM (GB)", snippet=on_demand[0].raw)
    vram_by_label = {r.label: positive_decimal(r.cells.get(VRAM_COLUMN)) for r in on_demand}
    results: list[ParsedOffer | Reject | None] = []
    for row in on_demand:
        results.append(_offer(capture, row, PricingModel.ON_DEMAND, ON_DEMAND_PRICE,
                              vram=vram_by_label[row.label], vram_from=None))
    for row in (r for rows in sections.get(RESERVATION_PRICE, []) for r in rows):
        text = row.cells.get(RESERVATION_PRICE, "")
        if text.lower() not in NOT_OFFERED:
            results.append(Reject(provider=NAME, raw=row.raw,
                                  offer_key=_key(row.label, PricingModel.RESERVED.value),
                                  reason=f"reservation price 'Starting from {text}': a lower "
                                         "bound without a stated term"))
    for row in (r for rows in sections.get(SPOT_PRICE, []) for r in rows):
        vram = vram_by_label.get(row.label)
        results.append(_offer(capture, row, PricingModel.SPOT, SPOT_PRICE, vram=vram,
                              vram_from="on-demand card" if vram is not None else None))
    offers, bad = split_results(results)  # None: not offered
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*rejects, *bad, *conflicts]


def _rows(card: LexborNode, heads: list[str]) -> tuple[list[_Row], list[Reject]]:
    rows: list[_Row] = []
    rejects: list[Reject] = []
    for item in card.css(".page-price_card_row_item"):
        cells = [node_text(c) for c in item.css(".page-price_card_row_item_col")]
        raw = item.html or ""
        if len(cells) != len(heads):
            rejects.append(Reject(provider=NAME, raw=raw, reason=f"expected {len(heads)} "
                                  f"cells, found {len(cells)}"))
        elif not cells[0]:
            rejects.append(Reject(provider=NAME, raw=raw, reason="row without a GPU model"))
        else:
            rows.append(_Row(label=cells[0], cells=dict(zip(heads, cells, strict=True)),
                             raw=raw))
    return rows, rejects


def _offer(capture: Capture, row: _Row, model: PricingModel, column: str, *,
           vram: float | None, vram_from: str | None) -> ParsedOffer | Reject | None:
    key = _key(row.label, model.value)
    text = row.cells.get(column, "")
    if text.lower() in NOT_OFFERED:
        return None
    match = PRICE_RE.match(text)
    if match is None:
        return Reject(provider=NAME, raw=row.raw, offer_key=key,
                      reason=f"unrecognised price {text!r} ({column})")
    per_gpu = float(match.group(1).replace(",", ""))
    data: dict[str, str | int | float | bool | None] = {"price_per_gpu_hour": per_gpu}
    for field, name in ((PCPU_COLUMN, "max_pcpus_per_gpu"), (RAM_COLUMN, "max_ram_gb_per_gpu")):
        if (value := positive_decimal(row.cells.get(field))) is not None:
            data[name] = int(value) if value.is_integer() else value
    if vram_from:
        data["vram_from"] = vram_from
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, gpu_label=row.label, gpu_count=1,
            vram_gb_per_gpu=vram, pricing_model=model, price_per_hour=per_gpu,
            interconnect=Interconnect.NVLINK if "nvlink" in row.label.lower() else None,
            source_url=capture.url, observed_at=capture.fetched_at, provider_data=data,
        )
    except ValidationError as exc:
        return Reject(provider=NAME, reason=f"invalid offer: {exc.errors()[0]['msg']}",
                      raw=row.raw, offer_key=key)


def _key(label: str, model: str) -> str:
    return f"{label}|{model}"

