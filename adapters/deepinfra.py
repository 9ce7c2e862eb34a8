"""DeepInfra: dedicated GPU prices from the public pricing page, `GET
https://deepinfra.com/pricing`, the "Custom LLMs" table.

Layout (2026-08-22 capture, adapters/snapshots/deepinfra/PROVENANCE.md): a Material UI page with
many `<table>`s in the same classes: service-tier multipliers ("Tier | Scheduling | Price",
"1x base price"), usage tiers ("Tier | Qualification & Invoicing Threshold | $"), per-token model
prices ("Model | Context | $ per 1M input tokens | ..."), and the Custom LLMs table, the only one
headed "GPU | Memory | Price": one row per GPU ("H100", "80GB", "<b>$2.20</b> / GPU-hour"). The
page's i18n data repeats the labels with a `${{price}}` template and no price; it is not read.

Reading rules:
- The Custom LLMs product is "your own model on our hardware", paid for uptime on "dedicated
  SXM-connected GPUs", "billed in minute granularity": each row is an on-demand offer of one
  dedicated GPU at the per-GPU-hour price, billed per 60 s, `provider_data["product"]` saying
  what it is (a model deployment, not a shell on the machine).
- The Memory cell is the VRAM per GPU ("270GB" for B300, as printed).
- A row whose price cell is not "$X / GPU-hour" ("Contact us") is a reject; a table with the
  header but other cells per row, or no such table at all, is a format change (ParseError).
- Dedicated instances and clusters are "contact us" prose, no price: nothing to read.
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
    headed_rows,
    newest_wins,
    node_text,
    one_price_per_key,
    split_results,
)
from gpuscout.core.models import ParsedOffer, ParseResult, PricingModel, Reject

PRICING_URL = "https://deepinfra.com/pricing"

NAME = "deepinfra"
SOURCE_KIND: SourceKind = "html"
CREDENTIALS: tuple[str, ...] = ()

HEADER = ("gpu", "memory", "price")
PRICE_RE = re.compile(r"^\$\s*(\d[\d,]*(?:\.\d+)?)\s*/\s*GPU[- ]hour$", re.IGNORECASE)
VRAM_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*GB$", re.IGNORECASE)
BILLING_INCREMENT_S = 60  # "Billed in minute granularity"
PRODUCT = "Custom LLMs: a dedicated-GPU model deployment, paid for uptime"


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRICING_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _read)


def _read(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    tree = LexborHTMLParser(capture.text())
    results: list[ParsedOffer | Reject] = [
        _offer(capture, row, cells)
        for row, cells in headed_rows(NAME, capture, tree, HEADER,
                                      "no table headed GPU | Memory | Price", "GPU")]
    offers, rejects = split_results(results)
    # The same table rendered twice (tab panels) is one offer each; two prices are a conflict.
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*rejects, *conflicts]


def _offer(capture: Capture, row: LexborNode, cells: list[LexborNode]) -> ParsedOffer | Reject:
    raw = row.html or ""
    label, memory, price_text = (node_text(c) for c in cells)
    if not label:
        return Reject(provider=NAME, reason="GPU row without a GPU name", raw=raw)
    key = f"{label}|{memory}|{PricingModel.ON_DEMAND.value}"
    price = PRICE_RE.match(price_text)
    if price is None:
        return Reject(provider=NAME, offer_key=key, raw=raw,
                      reason=f"{label!r}: no price per GPU-hour: {price_text!r}")
    vram = VRAM_RE.match(memory)
    per_gpu = float(price.group(1).replace(",", ""))
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, gpu_label=label, gpu_count=1,
            vram_gb_per_gpu=float(vram.group(1)) if vram else None,
            pricing_model=PricingModel.ON_DEMAND, price_per_hour=per_gpu,
            billing_increment_s=BILLING_INCREMENT_S, source_url=capture.url,
            observed_at=capture.fetched_at,
            provider_data={"product": PRODUCT, "price_basis": "per GPU", "memory": memory})
    except ValidationError as exc:
        return Reject(provider=NAME, offer_key=key, raw=raw,
                      reason=f"invalid offer: {exc.errors()[0]['msg']}")
