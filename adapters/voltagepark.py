"""Voltage Park: on-demand H100 prices scraped from the public pricing page's plan cards.

Layout (2025-07, adapters/snapshots/voltagepark/PROVENANCE.md): Webflow plan cards with no
table. A card is an eyebrow (`.text-eyebrow`: "On-Demand, Ethernet", "On-demand, 3200 Gbps
Infiniband"), a price heading (`.heading-style-h3`: "$1.99/hr") and `.pricing11_feature` lines,
one of which names the GPU and how many can be rented ("8-1016 HGX H100 GPUs for ..."). Cards
are read in document order, each from its eyebrow to the next one, because the excerpt cuts the
first card's container.

Reading rules:
- "$1.99/hr" is per GPU-hour (Voltage Park bills GPUs x hours x the on-demand price per GPU-hour,
  docs.voltagepark.com "How billing works"). The smallest rentable count ("8-1016" -> 8) is the
  offer's GPU count and the price is per-GPU price x that count.
- The eyebrow states the network: Ethernet, or InfiniBand with its speed. "HGX" in the GPU
  name is the page stating an NVSwitch board.
- A card that names no hourly price, or is not on-demand (a long-term reserve without a stated
  term), is a reject. An eyebrow with neither features nor a price is not a plan card.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

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
from gpuscout.core.models import (
    Interconnect,
    NetworkFabric,
    ParsedOffer,
    ParseResult,
    PricingModel,
    Reject,
)

PRICING_URL = "https://www.voltagepark.com/pricing"

NAME = "voltagepark"
SOURCE_KIND: SourceKind = "html"
CREDENTIALS: tuple[str, ...] = ()

EYEBROW = "text-eyebrow"
PRICE_HEADING = "heading-style-h3"
FEATURE = "pricing11_feature"
PRICE_RE = re.compile(r"^\$\s*(\d[\d,]*(?:\.\d+)?)\s*/\s*hr$", re.IGNORECASE)
# "1-1016 HGX H100 GPUs for your bursts": smallest count, largest count, GPU name
GPUS_RE = re.compile(r"^(\d+)\s*-\s*(\d+)\s+(.+?)\s+GPUs?\b", re.IGNORECASE)
INFINIBAND_RE = re.compile(r"(?:(\d+)\s*Gbps\s+)?Infiniband", re.IGNORECASE)


@dataclass
class _Card:
    eyebrow: str
    prices: list[str] = field(default_factory=list)
    features: list[str] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRICING_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _parse_page)


# -- page -------------------------------------------------------------------------------------


def _parse_page(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    cards = [c for c in _cards(LexborHTMLParser(capture.text())) if c.prices or c.features]
    if not cards:
        raise parse_error(NAME, capture, "no plan cards: no .text-eyebrow followed by a price "
                          "heading or features", EYEBROW)
    # A renamed price heading or feature class leaves every card without it: a format change.
    if not any(PRICE_RE.match(p) for c in cards for p in c.prices):
        raise parse_error(NAME, capture, "no plan card has a '$N/hr' price heading",
                          PRICE_HEADING)
    if not any(GPUS_RE.match(f) for c in cards for f in c.features):
        raise parse_error(NAME, capture, "no plan card names its GPUs ('N-M <GPU> GPUs')",
                          FEATURE)
    offers, rejects = split_results(_card(capture, card) for card in cards)
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*rejects, *conflicts]


def _cards(tree: LexborHTMLParser) -> list[_Card]:
    """Eyebrow-delimited segments in document order (a group selector keeps that order)."""
    cards: list[_Card] = []
    for node in tree.css(f".{EYEBROW}, .{PRICE_HEADING}, .{FEATURE}"):
        classes = (node.attributes.get("class") or "").split()
        if EYEBROW in classes:
            cards.append(_Card(eyebrow=node_text(node)))
        elif cards:  # anything before the first eyebrow belongs to no card
            (cards[-1].prices if PRICE_HEADING in classes else cards[-1].features).append(
                node_text(node))
        if cards:
            cards[-1].raw.append(node.html or "")
    return cards


def _card(capture: Capture, card: _Card) -> ParsedOffer | Reject:
    raw = "".join(card.raw)
    prices = [m for p in card.prices if (m := PRICE_RE.match(p))]
    gpus = [m for f in card.features if (m := GPUS_RE.match(f))]
    if not card.eyebrow.lower().startswith("on-demand"):
        return Reject(provider=NAME, raw=raw, reason=f"plan {card.eyebrow!r} is not on-demand "
                      f"and states no term (price {card.prices[0] if card.prices else 'none'})")
    if len(prices) != 1:
        return Reject(provider=NAME, raw=raw, reason=f"plan {card.eyebrow!r} has "
                      f"{len(prices)} hourly prices, expected 1: {card.prices}")
    if len(gpus) != 1:
        return Reject(provider=NAME, raw=raw, reason=f"plan {card.eyebrow!r} names its GPUs "
                      f"{len(gpus)} times, expected 1")
    low, high, label = int(gpus[0].group(1)), int(gpus[0].group(2)), gpus[0].group(3)
    per_gpu = float(prices[0].group(1).replace(",", ""))
    network, gbps = _network(card.eyebrow)
    slug = (network.value.lower() if network else "network-unstated") + (
        f"-{gbps:g}gbps" if gbps else "")
    key = f"{low}x|{label}|{slug}|{PricingModel.ON_DEMAND.value}"
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, gpu_label=label, gpu_count=low,
            pricing_model=PricingModel.ON_DEMAND, price_per_hour=round(per_gpu * low, 6),
            interconnect=Interconnect.NVSWITCH if "HGX" in label.upper().split() else None,
            network=network, network_gbps=gbps, source_url=capture.url,
            observed_at=capture.fetched_at,
            provider_data={"plan": card.eyebrow, "price_per_gpu_hour": per_gpu,
                           "min_gpus": low, "max_gpus": high},
        )
    except ValidationError as exc:
        return Reject(provider=NAME, reason=f"invalid offer: {exc.errors()[0]['msg']}", raw=raw,
                      offer_key=key)


def _network(eyebrow: str) -> tuple[NetworkFabric | None, float | None]:
    if (ib := INFINIBAND_RE.search(eyebrow)) is not None:
        return NetworkFabric.INFINIBAND, float(ib.group(1)) if ib.group(1) else None
    if "ethernet" in eyebrow.lower():
        return NetworkFabric.ETHERNET, None
    return None, None
