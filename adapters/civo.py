"""Civo: whole-instance GPU prices scraped from the public pricing page.

Layout (2026-08, adapters/snapshots/civo/PROVENANCE.md): server-rendered
`<table class="pricing-table">`s, one per GPU model, captioned "NVIDIA <model> GPU pricing"
("NVIDIA L40S 48GB", "NVIDIA H100 SXM", "NVIDIA B200"), whose head names the columns Size, RAM,
vCPU, Storage, Data Transfer, On-demand and Commitment. Tables of the same class price CPU
instances and object storage on the same page, so a GPU table is found by its caption, never by
its class. In a body row the Size cell holds the size name and
`<div class="product-detail">N x NVIDIA <model> - <VRAM>GB ...</div>`; a price cell holds an
hourly print (`data-option="hourly"`, "$1.29 per hour") and a hidden monthly one. The Commitment
cell holds one `<div id="<N>_months">` block per term, each with its own hourly and monthly print
(all terms are in the page; the term picker only shows one).

Reading rules:
- A price is per instance hour: an offer is the whole instance with the N GPUs of its product
  detail (L40S Extra Large: $10.32 = 8 x $1.29).
- On-demand is on-demand; each N-month block is a reserved offer at its listed hourly price, with
  the term in `provider_data`. "N/A" means not offered: no offer, no reject (the B200 has no
  on-demand or 6-month price: it is sold on 12 to 36 month terms only).
- The GPU label is the caption's model; VRAM per GPU comes from the product detail. A product
  detail naming another chip or memory size than its caption is a reject, as is a row without a
  product detail, a cell count that differs from the head, or a price that is not "$D.DD per hour".
- The page prints $ and has no currency switch: prices are USD.
- No region, interconnect, network or billing increment is stated on the page.
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
    header_cells,
    newest_wins,
    node_text,
    one_price_per_key,
    parse_error,
    positive_decimal,
    reject,
    split_results,
)
from gpuscout.core.models import ParsedOffer, ParseResult, PricingModel, ProviderData, Reject

PRICING_URL = "https://www.civo.com/pricing"

NAME = "civo"
SOURCE_KIND: SourceKind = "html"
CREDENTIALS: tuple[str, ...] = ()

CAPTION_RE = re.compile(r"^(NVIDIA\s+.+?)\s+GPU pricing$")
SIZE_COLUMN = "size"
RAM_COLUMN = "ram"
VCPU_COLUMN = "vcpu"
STORAGE_COLUMN = "storage"
ON_DEMAND_COLUMN = "on-demand"
COMMITMENT_COLUMN = "commitment"
REQUIRED_COLUMNS = (SIZE_COLUMN, ON_DEMAND_COLUMN, COMMITMENT_COLUMN)
DETAIL_RE = re.compile(r"^(\d+)\s*x\s+NVIDIA\s+(.+)$")
MEMORY_RE = re.compile(r"(\d+)\s*GB\b")
HOURLY = 'div[data-option="hourly"]'
MONTHLY = 'div[data-option="monthly"]'
TERM_ID_RE = re.compile(r"^(\d+)_months$")
HOURLY_RE = re.compile(r"^\$(\d[\d,]*\.\d+) per hour$")
MONTHLY_RE = re.compile(r"^\$(\d[\d,]*\.\d+) per month$")
NOT_OFFERED = "N/A"
GB_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*GB\b")
VCPU_RE = re.compile(r"^(\d+)(?:\s+cores)?$")


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRICING_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _parse_page)


@dataclass(frozen=True)
class _Row:
    label: str
    size: str
    gpus: int
    vram_gb: float | None
    cells: dict[str, LexborNode]
    raw: str


# -- page -------------------------------------------------------------------------------------


def _parse_page(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    tree = LexborHTMLParser(capture.text())
    tables = [(table, label) for table in tree.css("table")
              if (label := _caption_label(table)) is not None]
    if not tables:
        raise parse_error(NAME, capture, "no GPU price table: no <table> captioned "
                          "'NVIDIA ... GPU pricing'", "caption")
    results: list[ParsedOffer | Reject] = []
    for table, label in tables:
        heads = [c.lower() for c in header_cells(table)]
        for column in REQUIRED_COLUMNS:
            if column not in heads:
                raise parse_error(NAME, capture, f"GPU table {label!r} without a "
                                  f"{column!r} column: {heads}", column)
        rows = table.css("tbody tr")
        if not rows:
            raise parse_error(NAME, capture, f"GPU table {label!r} without rows", "tbody tr")
        for tr in rows:
            row = _row(label, heads, tr)
            results += [row] if isinstance(row, Reject) else _offers(capture, row)
    offers, rejects = split_results(results)
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*rejects, *conflicts]


def _caption_label(table: LexborNode) -> str | None:
    caption = table.css_first("caption")
    match = CAPTION_RE.match(node_text(caption)) if caption is not None else None
    return match.group(1) if match is not None else None


# -- one row ----------------------------------------------------------------------------------


def _row(label: str, heads: list[str], tr: LexborNode) -> _Row | Reject:
    raw = tr.html or ""
    tds = tr.css("td")
    if len(tds) != len(heads):
        return reject(NAME, f"{label}: expected {len(heads)} cells, found {len(tds)}", raw)
    cells = dict(zip(heads, tds, strict=True))
    size_cell = cells[SIZE_COLUMN]
    detail_node = size_cell.css_first("div.product-detail")
    detail = node_text(detail_node) if detail_node is not None else ""
    match = DETAIL_RE.match(detail)
    if match is None:
        return reject(NAME, f"{label}: row without an 'N x NVIDIA <model>' product detail "
                      f"({detail!r})", raw)
    gpus, model = int(match.group(1)), match.group(2)
    if gpus < 1:
        return reject(NAME, f"{label}: product detail states {gpus} GPUs", raw)
    # The A100 40GB and 80GB tables differ only by memory: a row must name its table's GPU.
    caption_words = label.split()
    memories = MEMORY_RE.findall(label)
    if model.split()[0] != caption_words[1] or any(m not in MEMORY_RE.findall(model)
                                                   for m in memories):
        return reject(NAME, f"{label}: product detail {detail!r} names another GPU", raw)
    vram = MEMORY_RE.search(model)
    size = node_text(size_cell).removesuffix(detail).strip()
    return _Row(label=label, size=size, gpus=gpus,
                vram_gb=float(vram.group(1)) if vram is not None else None,
                cells=cells, raw=raw)


def _offers(capture: Capture, row: _Row) -> list[ParsedOffer | Reject]:
    results: list[ParsedOffer | Reject | None] = []
    base = f"{row.label}|{row.gpus}x"
    on_demand = _prints(row.cells[ON_DEMAND_COLUMN])
    if on_demand is None:
        results.append(reject(NAME, f"{row.label} {row.size}: on-demand cell without exactly one "
                              "hourly price", row.raw, f"{base}|on_demand"))
    else:
        results.append(_offer(capture, row, f"{base}|on_demand", PricingModel.ON_DEMAND,
                              on_demand, None))
    terms = _terms(row.cells[COMMITMENT_COLUMN])
    if not terms:
        results.append(reject(NAME, f"{row.label} {row.size}: commitment cell without "
                              "'<N>_months' terms, or with a price outside them", row.raw))
    for months, prints in terms:
        key = f"{base}|reserved|{months} months"
        if prints is None:
            results.append(reject(NAME, f"{row.label} {row.size}: {months}-month term without "
                                  "exactly one hourly price", row.raw, key))
        else:
            results.append(_offer(capture, row, key, PricingModel.RESERVED, prints, months))
    return [r for r in results if r is not None]


def _prints(node: LexborNode) -> tuple[str, str | None] | None:
    """The (hourly, monthly) price texts of a cell or term block; None unless it has exactly
    one hourly print (the monthly one is optional, it only goes into provider_data)."""
    hourly = node.css(HOURLY)
    if len(hourly) != 1:
        return None
    monthly = node.css(MONTHLY)
    return node_text(hourly[0]), node_text(monthly[0]) if len(monthly) == 1 else None


def _terms(cell: LexborNode) -> list[tuple[int, tuple[str, str | None] | None]]:
    """(months, prints) of every term block; empty when a price sits outside every block (it
    could be attributed to no term)."""
    blocks = [(int(m.group(1)), div) for div in cell.css("div")
              if (m := TERM_ID_RE.match(div.attributes.get("id") or "")) is not None]
    if len(cell.css(HOURLY)) != sum(len(div.css(HOURLY)) for _, div in blocks):
        return []
    return [(months, _prints(div)) for months, div in blocks]


def _offer(capture: Capture, row: _Row, key: str, model: PricingModel,
           prints: tuple[str, str | None], months: int | None) -> ParsedOffer | Reject | None:
    hourly, monthly = prints
    if hourly.startswith(NOT_OFFERED):
        return None
    match = HOURLY_RE.match(hourly)
    if match is None:
        return reject(NAME, f"{row.label} {row.size}: unrecognised price {hourly!r}", row.raw, key)
    price = float(match.group(1).replace(",", ""))
    data: ProviderData = {"size": row.size, "price_per_gpu_hour": round(price / row.gpus, 6)}
    if months is not None:
        data["term"] = f"{months} months"
    month = MONTHLY_RE.match(monthly or "")
    if month is not None:
        data["monthly_price"] = float(month.group(1).replace(",", ""))
    ram, vcpus, disk = (node_text(row.cells[c]) if c in row.cells else ""
                        for c in (RAM_COLUMN, VCPU_COLUMN, STORAGE_COLUMN))
    ram_gb = GB_RE.match(ram)
    if ram and ram_gb is None:
        data["ram"] = ram  # "2.5TB": kept as printed, not converted
    vcpu = VCPU_RE.match(vcpus)
    disk_gb = GB_RE.match(disk)
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, gpu_label=row.label, gpu_count=row.gpus,
            vram_gb_per_gpu=row.vram_gb, pricing_model=model, price_per_hour=price,
            currency="USD", vcpus=float(vcpu.group(1)) if vcpu is not None else None,
            ram_gb=positive_decimal(ram_gb.group(1)) if ram_gb is not None else None,
            disk_gb=positive_decimal(disk_gb.group(1)) if disk_gb is not None else None,
            source_url=capture.url, observed_at=capture.fetched_at, provider_data=data)
    except ValidationError as exc:
        return reject(NAME, f"invalid offer: {exc.errors()[0]['msg']}", row.raw, key)
