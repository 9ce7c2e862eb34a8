"""Nebius AI Cloud: per-GPU list prices scraped from the public prices page.

Layout (2026-07, adapters/snapshots/nebius/PROVENANCE.md): div tables, not `<table>`. In each
`.pc-highlight-table-block__table`, the `__head` row names the columns and every `__body` row
holds `.pc-highlight-table-block__cell > div > p` cells. The GPU table's columns are Item,
vCPUs, "RAM, GB", "Preemptible, GPU-hour" and "On-demand, GPU-hour"; tables without a GPU-hour
column (CPU-only, storage) are skipped.

Reading rules:
- Prices are per GPU-hour; an offer is one GPU at that price. vCPUs and RAM are those of one
  GPU (Nebius presets scale them per GPU: 1 GPU 16 vCPU 200 GB, 8 GPUs 128 vCPU 1600 GB).
- "Preemptible" is Nebius' spot: the VM may be stopped. Its price is a list price.
- "––" means not offered. "Contact us" is a reject. "from $0.90" is the lowest price over a
  range of shapes (vCPUs "16-192"), not the price of one shape: a reject, never guessed.
- "HGX" in an item is the page stating an NVSwitch board; "NVL72" an NVSwitch rack.
- No region is stated on the page.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from pydantic import ValidationError
from selectolax.lexbor import LexborHTMLParser

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
from gpuscout.core.models import Interconnect, ParsedOffer, ParseResult, PricingModel, Reject

PRICING_URL = "https://nebius.com/prices"

NAME = "nebius"
SOURCE_KIND: SourceKind = "html"
CREDENTIALS: tuple[str, ...] = ()

TABLE = ".pc-highlight-table-block__table"
HEAD_ROW = ".pc-highlight-table-block__head .pc-highlight-table-block__row"
BODY_ROW = ".pc-highlight-table-block__body .pc-highlight-table-block__row"
CELL = ".pc-highlight-table-block__cell"
ITEM_COLUMN = "item"
VCPU_COLUMN = "vcpus"
RAM_COLUMN = "ram, gb"
PRICE_UNIT = "gpu-hour"  # a price column's heading ends with it
# price column heading (lower case) -> pricing model
PRICE_COLUMNS = {
    "preemptible, gpu-hour": PricingModel.SPOT,
    "on-demand, gpu-hour": PricingModel.ON_DEMAND,
}
PRICE_RE = re.compile(r"^\$\s*(\d[\d,]*(?:\.\d+)?)$")
FROM_RE = re.compile(r"^from\s+\$\s*\d", re.IGNORECASE)
NUMBER_RE = re.compile(r"^\d+(?:\.\d+)?$")
NOT_OFFERED = frozenset({"", "-", "--", "–", "––", "—", "n/a"})
SYSTEM_INTERCONNECT = {"HGX": Interconnect.NVSWITCH, "NVL72": Interconnect.NVSWITCH}


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRICING_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _parse_page)


# -- page -------------------------------------------------------------------------------------


def _parse_page(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    tree = LexborHTMLParser(capture.text())
    gpu_tables = []
    for table in tree.css(TABLE):
        head = table.css_first(HEAD_ROW)
        heads = [node_text(c).lower() for c in head.css(CELL)] if head is not None else []
        if any(h.endswith(PRICE_UNIT) for h in heads):
            gpu_tables.append((table, heads))
    if not gpu_tables:
        raise parse_error(NAME, capture, "no GPU price table: no div table with a 'GPU-hour' "
                          "column", "GPU-hour")
    results: list[ParsedOffer | Reject] = []
    for table, heads in gpu_tables:
        if heads[0] != ITEM_COLUMN:
            raise parse_error(NAME, capture, f"GPU price table starts with {heads[0]!r}, not "
                              "'Item'", "Item")
        if "on-demand, gpu-hour" not in heads:
            raise parse_error(NAME, capture, "GPU price table without 'On-demand, GPU-hour': "
                              f"{heads}", "On-demand, GPU-hour")
        rows = table.css(BODY_ROW)
        if not rows:
            raise parse_error(NAME, capture, "GPU price table without rows", "row")
        for row in rows:
            cells = [node_text(c) for c in row.css(CELL)]
            raw = row.html or ""
            if len(cells) != len(heads):
                results.append(Reject(provider=NAME, raw=raw, reason=f"expected {len(heads)} "
                                      f"cells, found {len(cells)}"))
                continue
            results += _row(capture, dict(zip(heads, cells, strict=True)), raw)
    offers, rejects = split_results(results)
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*rejects, *conflicts]


def _row(capture: Capture, cells: dict[str, str], raw: str) -> list[ParsedOffer | Reject]:
    item = cells[ITEM_COLUMN]
    if not item:
        return [Reject(provider=NAME, raw=raw, reason="row without an item name")]
    vcpus, ram = cells.get(VCPU_COLUMN, ""), cells.get(RAM_COLUMN, "")
    results: list[ParsedOffer | Reject] = []
    for column, text in cells.items():
        if not column.endswith(PRICE_UNIT) or text.lower() in NOT_OFFERED:
            continue
        model = PRICE_COLUMNS.get(column)
        if model is None:
            results.append(Reject(provider=NAME, raw=raw, reason=f"unknown price column "
                                  f"{column!r}"))
            continue
        key = f"{item}|{model.value}"
        match = PRICE_RE.match(text)
        if "contact us" in text.lower():
            reason = f"contact us ({column})"
        elif FROM_RE.match(text):
            reason = (f"price {text!r} is the lowest over shapes (vCPUs {vcpus}, RAM GB "
                      f"{ram}), not the price of one shape")
        elif match is None:
            reason = f"unrecognised price {text!r} ({column})"
        else:
            results.append(_offer(capture, key=key, item=item, model=model,
                                  per_gpu=float(match.group(1).replace(",", "")), vcpus=vcpus,
                                  ram=ram, raw=raw))
            continue
        results.append(Reject(provider=NAME, raw=raw, offer_key=key, reason=reason))
    return results


def _offer(capture: Capture, *, key: str, item: str, model: PricingModel, per_gpu: float,
           vcpus: str, ram: str, raw: str) -> ParsedOffer | Reject:
    links = [link for word, link in SYSTEM_INTERCONNECT.items() if word in item.upper().split()]
    data: dict[str, str | int | float | bool | None] = {"price_per_gpu_hour": per_gpu}
    # A range ("16-192") is several shapes: kept as text, not as the offer's size.
    data.update({name: text for name, text in (("vcpus", vcpus), ("ram_gb", ram))
                 if text and not NUMBER_RE.match(text)})
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, gpu_label=item, gpu_count=1,
            pricing_model=model, price_per_hour=per_gpu,
            vcpus=float(vcpus) if NUMBER_RE.match(vcpus) else None,
            ram_gb=float(ram) if NUMBER_RE.match(ram) else None,
            interconnect=links[0] if links else None, source_url=capture.url,
            observed_at=capture.fetched_at,
            provider_data=data,
        )
    except ValidationError as exc:
        return Reject(provider=NAME, reason=f"invalid offer: {exc.errors()[0]['msg']}", raw=raw,
                      offer_key=key)

