"""fal: GPU prices for custom deployments from the public pricing page, `GET
https://fal.ai/pricing`, the "Serverless & Compute Pricing" table.

Layout (2026-08-22 capture, adapters/snapshots/fal/PROVENANCE.md): server-rendered HTML with
several `<table>`s in the same classes and no ids: the GPU table, headed "GPU | VRAM | List Price
| As low as", one row per GPU (an icon and the name, "288GB", "$8.50/h", "$4.49/h"), and model
API tables priced per output unit ("Model | Unit | Price | Output per $1"), which are not GPU
rentals and are not read.

Reading rules:
- "List Price" is the hourly price of one GPU for your own app on fal's fleet ("Deploy your own
  app on our competitively priced GPU fleet"): an on-demand offer of one GPU.
- "As low as" is a floor reached through sales ("Competitive pricing for custom deployments —
  Contact support@fal.ai"): no price one can rent at, so a reject with its figure, never an
  offer.
- The VRAM cell is the VRAM per GPU. A price cell that is not "$X/h" is a reject.
- No table headed GPU | VRAM | List Price is a format change (ParseError), as is a row with
  another number of cells.
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

PRICING_URL = "https://fal.ai/pricing"

NAME = "fal"
SOURCE_KIND: SourceKind = "html"
CREDENTIALS: tuple[str, ...] = ()

HEADER = ("gpu", "vram", "list price", "as low as")
PRICE_RE = re.compile(r"^\$\s*(\d[\d,]*(?:\.\d+)?)\s*/\s*h(?:r|our)?$", re.IGNORECASE)
VRAM_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*GB$", re.IGNORECASE)
PRODUCT = "serverless custom app deployment on fal's GPU fleet"


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRICING_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _read)


def _read(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    tree = LexborHTMLParser(capture.text())
    results: list[ParsedOffer | Reject] = []
    for row, cells in headed_rows(NAME, capture, tree, HEADER,
                                  "no table headed GPU | VRAM | List Price | As low as",
                                  "List Price"):
        results += _row(capture, row, cells)
    offers, rejects = split_results(results)
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*rejects, *conflicts]


def _row(capture: Capture, row: LexborNode,
         cells: list[LexborNode]) -> list[ParsedOffer | Reject]:
    raw = row.html or ""
    label, vram_text, list_text, floor_text = (node_text(c) for c in cells)
    if not label:
        return [Reject(provider=NAME, reason="GPU row without a GPU name", raw=raw)]
    key = f"{label}|{PricingModel.ON_DEMAND.value}"
    floor = Reject(provider=NAME, raw=raw, reason=f"{label!r}: 'As low as' {floor_text} is a "
                   "floor reached through sales, not a price one can rent at")
    price = PRICE_RE.match(list_text)
    if price is None:
        return [Reject(provider=NAME, offer_key=key, raw=raw,
                       reason=f"{label!r}: no hourly list price: {list_text!r}"), floor]
    vram = VRAM_RE.match(vram_text)
    per_gpu = float(price.group(1).replace(",", ""))
    try:
        offer: ParsedOffer | Reject = ParsedOffer(
            provider=NAME, offer_key=key, gpu_label=label, gpu_count=1,
            vram_gb_per_gpu=float(vram.group(1)) if vram else None,
            pricing_model=PricingModel.ON_DEMAND, price_per_hour=per_gpu,
            source_url=capture.url, observed_at=capture.fetched_at,
            provider_data={"column": "List Price", "price_basis": "per GPU",
                           "product": PRODUCT, "as_low_as": floor_text})
    except ValidationError as exc:
        offer = Reject(provider=NAME, offer_key=key, raw=raw,
                       reason=f"invalid offer: {exc.errors()[0]['msg']}")
    return [offer, floor]
