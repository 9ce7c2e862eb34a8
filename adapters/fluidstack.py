"""Fluidstack: per-GPU on-demand and 1-year prices scraped from the public pricing page.

Layout (2025-01, adapters/snapshots/fluidstack/PROVENANCE.md): one `<table class="pricing_table">`.
The head names the columns: Model, "VRAM (GB)", "Max vCPUs per GPU", "Max RAM (GB) per GPU",
"On-Demand Price (/hr)", "1 Year price (/hr)". Each body row has the model in `th h2` and one
`td .pricing_cell p` per other column; a price reads "$2.89" or "n/a".

Reading rules:
- The table is per GPU ("per GPU" columns), so an offer is one GPU at the row's price. The
  per-GPU vCPU and RAM maxima go into `provider_data`.
- A column "N Year price" / "N Month price" is a committed term: a reserved offer whose hourly
  price is listed, with the term in `provider_data`.
- "n/a" means not offered under that model: no offer, no reject.
- No region, interconnect or network is stated on the page.
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
    header_cells,
    newest_wins,
    node_text,
    one_price_per_key,
    parse_error,
    split_results,
)
from gpuscout.core.models import ParsedOffer, ParseResult, PricingModel, Reject

PRICING_URL = "https://www.fluidstack.io/pricing"

NAME = "fluidstack"
SOURCE_KIND: SourceKind = "html"
CREDENTIALS: tuple[str, ...] = ()

TABLE = "table.pricing_table"
PRICE_RE = re.compile(r"^\$\s*(\d[\d,]*(?:\.\d+)?)$")
NUMBER_RE = re.compile(r"^\d+(?:\.\d+)?$")
TERM_RE = re.compile(r"^(\d+)\s*(year|month)s?\s+price\b", re.IGNORECASE)
NOT_OFFERED = frozenset({"", "-", "–", "—", "n/a"})


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRICING_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _parse_page)


# -- page -------------------------------------------------------------------------------------


def _parse_page(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    table = LexborHTMLParser(capture.text()).css_first(TABLE)
    if table is None:
        raise parse_error(NAME, capture, "no <table class=\"pricing_table\">", TABLE)
    heads = header_cells(table)
    columns = _columns(heads)
    for required in ("vram", "on_demand"):
        if required not in columns.values():
            raise parse_error(NAME, capture, f"no {required} column in {heads}", required)
    rows = table.css("tbody tr")
    if not rows:
        raise parse_error(NAME, capture, "pricing table without body rows", "tbody tr")
    offers, rejects = split_results(r for row in rows for r in _row(capture, row, heads, columns))
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*rejects, *conflicts]


def _columns(heads: list[str]) -> dict[int, str]:
    """Column index -> role: vram, vcpus, ram, on_demand, 'reserved:<n> <unit>' or price
    (a price column of unknown meaning, whose cells become rejects)."""
    roles: dict[int, str] = {}
    for i, head in enumerate(heads):
        low = head.lower()
        if (term := TERM_RE.match(low)) is not None:
            roles[i] = f"reserved:{term.group(1)} {term.group(2)}"
        elif low.startswith("on-demand"):
            roles[i] = "on_demand"
        elif low.startswith("vram"):
            roles[i] = "vram"
        elif "vcpus per gpu" in low:
            roles[i] = "vcpus"
        elif low.startswith("max ram") and "per gpu" in low:
            roles[i] = "ram"
        elif "price" in low or "/hr" in low:
            roles[i] = "price"
    return roles


def _row(capture: Capture, row: LexborNode, heads: list[str],
         columns: dict[int, str]) -> list[ParsedOffer | Reject]:
    raw = row.html or ""
    model_cell = row.css_first("th")
    label = node_text(model_cell) if model_cell is not None else ""
    cells = [label, *(node_text(td) for td in row.css("td"))]
    if not label:
        return [Reject(provider=NAME, raw=raw, reason="row without a model name")]
    if len(cells) != len(heads):
        return [Reject(provider=NAME, raw=raw, reason=f"expected {len(heads)} cells, "
                       f"found {len(cells)}")]
    values = {role: cells[i] for i, role in columns.items()}
    vram = values["vram"]
    if not NUMBER_RE.match(vram):
        return [Reject(provider=NAME, raw=raw, reason=f"unrecognised VRAM {vram!r}")]
    data: dict[str, str | int | float | bool | None] = {}
    for name, role in (("max_vcpus_per_gpu", "vcpus"), ("max_ram_gb_per_gpu", "ram")):
        if NUMBER_RE.match(values.get(role, "")):
            number = float(values[role])
            data[name] = int(number) if number.is_integer() else number
    results: list[ParsedOffer | Reject] = []
    for i, role in columns.items():
        text = cells[i]
        if role in ("vram", "vcpus", "ram") or text.lower() in NOT_OFFERED:
            continue
        if role == "price":
            results.append(Reject(provider=NAME, raw=raw,
                                  reason=f"unknown price column {heads[i]!r}"))
            continue
        term = role.removeprefix("reserved:") if role.startswith("reserved:") else None
        model = PricingModel.RESERVED if term else PricingModel.ON_DEMAND
        key = f"{label}|{float(vram):g}GB|{model.value}" + (f"|{term}" if term else "")
        match = PRICE_RE.match(text)
        if match is None:
            results.append(Reject(provider=NAME, raw=raw, offer_key=key,
                                  reason=f"unrecognised price {text!r} ({heads[i]})"))
            continue
        per_gpu = float(match.group(1).replace(",", ""))
        extra = {"price_per_gpu_hour": per_gpu, **({"term": term} if term else {}), **data}
        try:
            results.append(ParsedOffer(
                provider=NAME, offer_key=key, gpu_label=label, gpu_count=1,
                vram_gb_per_gpu=float(vram), pricing_model=model, price_per_hour=per_gpu,
                source_url=capture.url, observed_at=capture.fetched_at, provider_data=extra,
            ))
        except ValidationError as exc:
            results.append(Reject(provider=NAME, raw=raw, offer_key=key,
                                  reason=f"invalid offer: {exc.errors()[0]['msg']}"))
    return results

