"""Hugging Face Inference Endpoints: instance prices from Hugging Face's own pricing document,
`GET https://raw.githubusercontent.com/huggingface/hf-endpoints-documentation/main/docs/source/support/pricing.md`,
the Markdown source of <https://huggingface.co/docs/inference-endpoints/support/pricing>.

Layout (2026-08-20 capture, adapters/snapshots/huggingface/PROVENANCE.md): sections headed
`## CPU Instances`, `## GPU Instances`, `## INF2 Instances` and `## Pricing examples`; each
instance section holds one Markdown table. The GPU table's columns are "Provider | Instance Type
| Instance Size | Hourly rate | GPUs | Memory | Architecture" (`| aws | nvidia-a100 | x4 | $10 |
4 | 320 GB | NVIDIA A100 |`); the INF2 table has "Accelerators", "Accelerator Memory" and "RAM"
in place of "GPUs" and "Memory". A row the page marks deprecated is set in italics with the
words in its Architecture cell ("*NVIDIA H100 - Deprecated from December 2025*").

Reading rules:
- An offer is one instance, priced whole ("Hourly rate"), on demand; its GPU count is the
  "GPUs" (or "Accelerators") cell, and the "Instance Size" must say the same ("x4" for 4).
- The label is the page's Instance Type ("nvidia-a100"); the page names no form factor. The
  "Memory" cell is kept in `provider_data` as the page prints it and is not reported as VRAM:
  the page lists 14 GB per T4 on AWS (the usable part of a 16 GB card) and 256 GB per B200.
- "Provider" is the cloud the instance runs on (`aws`, `gcp`), kept in `provider_data`; the
  page names no region.
- The page's sentence "the actual cost is billed per minute" sets 60 s billing; without it the
  increment is left unknown.
- A row deprecated from a month that has begun by the capture's date is a reject; "to be
  deprecated" later is an offer, with the page's words in `provider_data`. The CPU table is not
  read (no GPU).
- No "GPU Instances" table, or one without a column these rules need, is a format change
  (ParseError). A row that does not fit (a price that is not "$N", a count that is no number,
  a size that disagrees with the count) is a reject.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import ValidationError

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    newest_wins,
    one_price_per_key,
    parse_error,
    positive_decimal,
    reject,
    split_results,
)
from gpuscout.core.models import ParsedOffer, ParseResult, PricingModel, ProviderData, Reject

PRICING_URL = ("https://raw.githubusercontent.com/huggingface/hf-endpoints-documentation/main/"
               "docs/source/support/pricing.md")
DOCS_PAGE = "https://huggingface.co/docs/inference-endpoints/support/pricing"
PRODUCT = "Inference Endpoints"

NAME = "huggingface"
SOURCE_KIND: SourceKind = "html"
CREDENTIALS: tuple[str, ...] = ()

PRICE_RE = re.compile(r"^\$\s*(\d[\d,]*(?:\.\d+)?)$")
SIZE_RE = re.compile(r"^x(\d+)$", re.IGNORECASE)
MEMORY_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*GB$", re.IGNORECASE)
PER_MINUTE_RE = re.compile(r"billed\s+per\s+minute", re.IGNORECASE)
DEPRECATED_RE = re.compile(r"deprecated\s+(?:from\s+|in\s+)?([A-Za-z]+)\s+(\d{4})", re.IGNORECASE)
MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"], start=1)}

COMMON_COLUMNS = ("Provider", "Instance Type", "Instance Size", "Hourly rate")


@dataclass(frozen=True)
class _Table:
    section: str  # the heading the table sits under
    count_column: str  # "GPUs" or "Accelerators"
    memory_column: str  # "Memory" or "Accelerator Memory"
    required: bool  # a page without it has changed format


TABLES = (
    _Table("GPU Instances", "GPUs", "Memory", required=True),
    _Table("INF2 Instances", "Accelerators", "Accelerator Memory", required=False),
)


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRICING_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _read)


def _read(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    text = capture.text()
    sections = _sections(text)
    increment = 60 if PER_MINUTE_RE.search(text) else None
    results: list[ParsedOffer | Reject | None] = []
    for table in TABLES:
        lines = sections.get(table.section.lower())
        rows = _table(lines) if lines is not None else None
        if rows is None:
            if table.required:
                raise parse_error(NAME, capture, f"no '{table.section}' table", table.section)
            continue
        header, body = rows
        for column in (*COMMON_COLUMNS, table.count_column):
            if column not in header:
                raise parse_error(NAME, capture, f"the '{table.section}' table has no "
                                  f"'{column}' column", column)
        results += [_row(capture, table, header, cells, raw, increment) for cells, raw in body]
    offers, rejects = split_results(results)
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*rejects, *conflicts]


def _sections(text: str) -> dict[str, list[str]]:
    """The lines under each `## ` heading, by the heading's text in lower case."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            current = sections.setdefault(line[3:].strip().lower(), [])
        elif current is not None:
            current.append(line)
    return sections


def _table(lines: list[str]) -> tuple[list[str], list[tuple[list[str], str]]] | None:
    """The first Markdown table of a section: its header cells and its rows (cells, line).
    None when the section holds no table."""
    block: list[str] = []
    for line in lines:
        if line.lstrip().startswith("|"):
            block.append(line.strip())
        elif block:
            break
    if len(block) < 2 or not re.fullmatch(r"\|[\s:|-]+\|?", block[1]):
        return None
    return _cells(block[0]), [(_cells(line), line) for line in block[2:]]


def _cells(line: str) -> list[str]:
    """A table line's cells, without the italics markers the page sets on deprecated rows."""
    inner = line.strip().removeprefix("|").removesuffix("|")
    return [cell.strip().strip("*").strip() for cell in inner.split("|")]


def _row(capture: Capture, table: _Table, header: list[str], cells: list[str], raw: str,
         increment: int | None) -> ParsedOffer | Reject | None:
    if len(cells) != len(header):
        return reject(NAME, f"{len(cells)} cells for {len(header)} columns", raw)
    row = dict(zip(header, cells, strict=True))
    cloud, itype, size = row["Provider"].lower(), row["Instance Type"], row["Instance Size"]
    if not (cloud and itype and size):
        return reject(NAME, "row without its provider, instance type or size", raw)
    key = f"{cloud}|{itype}|{size}"
    notice = next((c for c in cells if "deprecated" in c.lower()), None)
    if notice is not None and _deprecated_by(notice, capture.fetched_at):
        # no offer key: the instance is withdrawn, so its open offer closes as vanished
        return reject(NAME, f"{itype} {size} on {cloud}: {notice!r}", raw)
    price = PRICE_RE.match(row["Hourly rate"])
    count = positive_decimal(row[table.count_column])
    sized = SIZE_RE.match(size)
    if price is None:
        return reject(NAME, f"Hourly rate is not a price: {row['Hourly rate']!r}", raw, key)
    if count is None:
        return reject(NAME, f"{table.count_column} is not a count: "
                      f"{row[table.count_column]!r}", raw, key)
    if sized is None or int(sized.group(1)) != count:
        return reject(NAME, f"Instance Size {size!r} disagrees with {table.count_column} "
                      f"{row[table.count_column]!r}", raw, key)
    data: ProviderData = {"product": PRODUCT, "cloud": cloud, "instance_size": size,
                          "price_basis": "per instance", "docs_page": DOCS_PAGE}
    if memory := MEMORY_RE.match(row.get(table.memory_column, "")):
        data["listed_memory_gb"] = float(memory.group(1))  # the whole instance's, as printed
    if row.get("Architecture"):
        data["architecture"] = row["Architecture"]
    if notice is not None:
        data["deprecation"] = notice
    ram = MEMORY_RE.match(row.get("RAM", ""))
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=f"{itype} {size}", gpu_label=itype,
            gpu_count=count, pricing_model=PricingModel.ON_DEMAND,
            price_per_hour=float(price.group(1).replace(",", "")),
            ram_gb=float(ram.group(1)) if ram else None, billing_increment_s=increment,
            source_url=capture.url, observed_at=capture.fetched_at, provider_data=data)
    except ValidationError as exc:
        return reject(NAME, f"invalid offer: {exc.errors()[0]['msg']}", raw, key)


def _deprecated_by(notice: str, when: datetime) -> bool:
    """Whether the deprecation the page states has taken effect by `when`: "Deprecated from
    December 2025" has from 2025-12-01 on; "To be deprecated December 2026" is not yet, before.
    A notice without a month the rules can read counts as in effect."""
    match = DEPRECATED_RE.search(notice)
    month = MONTHS.get(match.group(1).lower()) if match else None
    if match is None or month is None:
        return True
    return (when.year, when.month) >= (int(match.group(2)), month)
