"""Crusoe Cloud: per-GPU list and spot prices scraped from the public pricing page.

Layout (2025-12 and 2026-08, adapters/snapshots/crusoe/PROVENANCE.md): Webflow CMS lists, each
inside a `.pricing-gap` block whose `.pricing-table-heading` names the columns. The GPU price
list is the block whose first heading is "GPU model" (then "On-demand", "Current spot"); each
`.prixing-item` (sic) holds `h4.pricing-item-heading` (the GPU), `.pricing-tag`s (VRAM such as
"80GB", and a system or form-factor tag: "HGX", "NVL72", "SXM", "PCIe", or an empty tag) and
one `.pricing-rich` cell per price column: "$3.90/GPU-hr" or a "Contact sales" link. The 2026
page reuses the same classes for CPU, storage, inference and "Self-Serve Deployments" lists
(the last with the same "NVIDIA H100"/"NVIDIA H200" headings, for a managed product); their
first headings ("CPU Type", "Model", "GPU type", ...) are not "GPU model", so none is read.

Reading rules:
- Prices are per GPU-hour and the page names no machine size, so an offer is one GPU at the
  per-GPU price.
- The system or form-factor tag is part of the GPU label ("NVIDIA H100 HGX", "NVIDIA A100
  SXM"): the heading alone does not fix the form factor (the 2026 page lists an 80GB SXM and
  an 80GB PCIe A100 under the same heading). An empty tag (Webflow's unbound field, as for
  L40S and the AMD GPUs) adds nothing.
- HGX boards and NVL72 racks connect their GPUs all-to-all through NVSwitch.
- "Current spot" is the market price at capture time: a spot offer whose price is observed.
- "Contact sales" is a reject. An item without price cells is a reject too; when it is the
  list's last item the page was cut there, so the result is marked incomplete.
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
from gpuscout.core.models import (
    Interconnect,
    ParsedOffer,
    ParseResult,
    PriceKind,
    PricingModel,
    Reject,
)

PRICING_URL = "https://www.crusoe.ai/cloud/pricing"

NAME = "crusoe"
SOURCE_KIND: SourceKind = "html"
CREDENTIALS: tuple[str, ...] = ()

GPU_COLUMN = "gpu model"  # first column heading of the GPU price list
# price column heading (lower case) -> how that column is sold
COLUMNS: dict[str, tuple[PricingModel, PriceKind]] = {
    "on-demand": (PricingModel.ON_DEMAND, PriceKind.LISTED),
    "current spot": (PricingModel.SPOT, PriceKind.OBSERVED),
}
PRICE_RE = re.compile(r"^\$\s*(\d[\d,]*(?:\.\d+)?)\s*/\s*GPU[- ]?hr$", re.IGNORECASE)
VRAM_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*GB$", re.IGNORECASE)
SYSTEM_INTERCONNECT = {"HGX": Interconnect.NVSWITCH, "NVL72": Interconnect.NVSWITCH}
NOT_OFFERED = frozenset({"", "-", "–", "—", "n/a"})


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRICING_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _parse_page)


# -- page -------------------------------------------------------------------------------------


def _parse_page(capture: Capture) -> tuple[list[ParsedOffer], list[Reject], bool]:
    tree = LexborHTMLParser(capture.text())
    blocks = [(block, _headings(block)) for block in tree.css(".pricing-gap")]
    gpu_blocks = [(b, h) for b, h in blocks if h and h[0].lower() == GPU_COLUMN]
    if not gpu_blocks:
        raise parse_error(NAME, capture, "no GPU price list: no .pricing-gap whose first "
                          "heading is 'GPU model'", "GPU model")
    results: list[ParsedOffer | Reject] = []
    complete = True
    for block, headings in gpu_blocks:
        columns = [c.lower() for c in headings[1:]]
        if "on-demand" not in columns:
            raise parse_error(NAME, capture, f"no 'On-demand' column in {headings}", "On-demand")
        items = block.css(".prixing-item")
        if not items:
            raise parse_error(NAME, capture, "GPU price list without .prixing-item entries",
                              "prixing-item")
        # A renamed cell or tag class leaves every item without it: a format change.
        for part in (".pricing-rich", ".pricing-tag"):
            if not any(item.css_first(part) is not None for item in items):
                raise parse_error(NAME, capture, f"no GPU list item has a {part} element",
                                  part[1:])
        for i, item in enumerate(items):
            item_results, cut = _item(item, columns, capture)
            # Only the list's last item can be a cut: a page truncated in transit or an excerpt.
            complete = complete and not (cut and i == len(items) - 1)
            results += item_results
    offers, rejects = split_results(results)
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*rejects, *conflicts], complete


def _item(item: LexborNode, columns: list[str],
          capture: Capture) -> tuple[list[ParsedOffer | Reject], bool]:
    """The offers and rejects of one list item, and whether it ends before its price cells."""
    raw = item.html or ""
    heading = item.css_first("h4.pricing-item-heading")
    if heading is None or not node_text(heading):
        return [Reject(provider=NAME, reason="item without a GPU heading", raw=raw)], False
    cells = item.css(".pricing-rich")
    if not cells:
        return [Reject(provider=NAME, raw=raw, reason=f"{node_text(heading)!r} has no price "
                       "cells")], True
    if len(cells) != len(columns):
        return [Reject(provider=NAME, raw=raw, reason=f"{node_text(heading)!r}: expected "
                       f"{len(columns)} price cells, found {len(cells)}")], False
    # An empty tag is an unbound CMS field: no part of the label.
    tags = [text for t in item.css(".pricing-tag") if (text := node_text(t))]
    vram = next((float(m.group(1)) for t in tags if (m := VRAM_RE.match(t))), None)
    systems = [t for t in tags if not VRAM_RE.match(t)]
    label = " ".join([node_text(heading), *systems])
    if vram is None:
        return [Reject(provider=NAME, raw=raw, reason=f"no VRAM tag for {label!r}")], False
    results: list[ParsedOffer | Reject] = []
    for column, cell in zip(columns, cells, strict=True):
        text = node_text(cell)
        if text.lower() in NOT_OFFERED:
            continue
        if column not in COLUMNS:
            results.append(Reject(provider=NAME, reason=f"unknown price column {column!r}",
                                  raw=raw))
            continue
        model, kind = COLUMNS[column]
        key = f"{label}|{vram:g}GB|{model.value}"
        if "contact sales" in text.lower():
            results.append(Reject(provider=NAME, reason=f"contact sales ({column})", raw=raw,
                                  offer_key=key))
            continue
        match = PRICE_RE.match(text)
        if match is None:
            results.append(Reject(provider=NAME, reason=f"unrecognised price {text!r} "
                                  f"({column})", raw=raw, offer_key=key))
            continue
        results.append(_offer(capture, key=key, label=label, vram=vram, systems=systems,
                              model=model, kind=kind,
                              per_gpu=float(match.group(1).replace(",", "")), column=column,
                              tags=tags, raw=raw))
    return results, False


def _offer(capture: Capture, *, key: str, label: str, vram: float, systems: list[str],
           model: PricingModel, kind: PriceKind, per_gpu: float, column: str, tags: list[str],
           raw: str) -> ParsedOffer | Reject:
    links = [SYSTEM_INTERCONNECT[s.upper()] for s in systems if s.upper() in SYSTEM_INTERCONNECT]
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, gpu_label=label, gpu_count=1, vram_gb_per_gpu=vram,
            pricing_model=model, price_per_hour=per_gpu, price_kind=kind,
            interconnect=links[0] if links else None, source_url=capture.url,
            observed_at=capture.fetched_at,
            provider_data={"column": column, "tags": ", ".join(tags),
                           "price_per_gpu_hour": per_gpu},
        )
    except ValidationError as exc:
        return Reject(provider=NAME, reason=f"invalid offer: {exc.errors()[0]['msg']}", raw=raw,
                      offer_key=key)


def _headings(block: LexborNode) -> list[str]:
    heading = block.css_first(".pricing-table-heading")
    return [node_text(h) for h in heading.css(".pricing-heading")] if heading is not None else []

