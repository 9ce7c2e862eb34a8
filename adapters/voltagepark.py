"""Voltage Park: on-demand H100 nodes from the dashboard's public locations API, and the older
pricing page's plan cards.

Since 2026 the pricing page says "Contact for pricing"; the prices live in the API the logged-out
dashboard reads, `GET https://cloud-api.voltagepark.com/api/v1/bare-metal/locations` (no key).
Its body (2026-08-22 capture, adapters/snapshots/voltagepark/PROVENANCE.md) is
`{"results": [...], "total_result_count", "has_previous", "has_next"}`; one result per
location, with `specs_per_node` (`gpu_model` "h100-sxm5-80gb", `gpu_count` 8, CPU, RAM and
storage per node) and, per network, a price and a count: `gpu_price_ethernet` /
`gpu_count_ethernet`, `gpu_price_infiniband` / `gpu_count_infiniband`.

Reading rules for the API:
- A price is USD per GPU-hour as a decimal string ("1.99"): Voltage Park bills GPUs x hours x
  the on-demand price per GPU-hour (docs "How billing works"), and its own pages print
  "$1.99/GPU/hour". One offer per location x network, for one node: 8 x the per-GPU price.
- The two networks are two on-demand products of the same machine, not two terms: InfiniBand
  at 3200 Gb/s per node (the page's "On-demand, 3200 Gbps Infiniband" card of 2025), or
  Ethernet with no speed stated.
- `gpu_count_<network>` is the GPUs that can be had now (0 in the capture, prices still
  published): whole nodes available, and out of stock at 0. It never gates the price.
- `reserved_*` counts are reserved capacity with no published price: not offers. Any other
  `gpu_price*` field is a price these rules do not know: the body is refused, as is a body with
  more results than it holds (`has_next`, `total_result_count`), so none is dropped unseen.

The page of 2025-07 (tests/fixtures/voltagepark/) is read as before: Webflow plan cards, an
eyebrow (`.text-eyebrow`: "On-Demand, Ethernet", "On-demand, 3200 Gbps Infiniband"), a price
heading (`.heading-style-h3`: "$1.99/hr") and `.pricing11_feature` lines, one naming the GPU and
how many can be rented ("8-1016 HGX H100 GPUs for ..."), read in document order from one eyebrow
to the next. The smallest rentable count is the offer's GPU count; the eyebrow states the
network; "HGX" in the GPU name is an NVSwitch board. A card without an hourly price, or not
on-demand, is a reject; an eyebrow with neither features nor a price is not a plan card.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import ValidationError
from selectolax.lexbor import LexborHTMLParser

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    json_body,
    newest_wins,
    node_text,
    one_price_per_key,
    parse_error,
    positive_decimal,
    positive_number,
    split_results,
)
from gpuscout.core.models import (
    Availability,
    Interconnect,
    NetworkFabric,
    ParsedOffer,
    ParseResult,
    PricingModel,
    Reject,
)

PRICING_URL = "https://www.voltagepark.com/pricing"
LOCATIONS_URL = "https://cloud-api.voltagepark.com/api/v1/bare-metal/locations"

NAME = "voltagepark"
SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = ()

EYEBROW = "text-eyebrow"
PRICE_HEADING = "heading-style-h3"
FEATURE = "pricing11_feature"
PRICE_RE = re.compile(r"^\$\s*(\d[\d,]*(?:\.\d+)?)\s*/\s*hr$", re.IGNORECASE)
# "1-1016 HGX H100 GPUs for your bursts": smallest count, largest count, GPU name
GPUS_RE = re.compile(r"^(\d+)\s*-\s*(\d+)\s+(.+?)\s+GPUs?\b", re.IGNORECASE)
INFINIBAND_RE = re.compile(r"(?:(\d+)\s*Gbps\s+)?Infiniband", re.IGNORECASE)

# network -> (price field, available-GPUs field, fabric, node-to-node Gb/s)
NETWORKS: dict[str, tuple[str, str, NetworkFabric, float | None]] = {
    "ethernet": ("gpu_price_ethernet", "gpu_count_ethernet", NetworkFabric.ETHERNET, None),
    "infiniband": ("gpu_price_infiniband", "gpu_count_infiniband", NetworkFabric.INFINIBAND,
                   3200.0),
}


@dataclass
class _Card:
    eyebrow: str
    prices: list[str] = field(default_factory=list)
    features: list[str] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(LOCATIONS_URL, headers={"Accept": "application/json"})]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture (the API or the older page); when captures repeat an offer
    key, the newest one wins."""
    return newest_wins(captures, _read)


def _read(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    if capture.url.split("?", 1)[0] == LOCATIONS_URL:
        return _parse_locations(capture)
    return _parse_page(capture)


# -- locations API ----------------------------------------------------------------------------


def _parse_locations(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    doc = json_body(NAME, capture)
    results = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or not isinstance(results, list):
        raise parse_error(NAME, capture, "expected an object with a 'results' list", "results")
    total = doc.get("total_result_count")
    if doc.get("has_next") or (isinstance(total, int) and total != len(results)):
        raise parse_error(NAME, capture, f"the body holds {len(results)} of {total} locations "
                          "(has_next or total_result_count): a page was not read",
                          "total_result_count")
    rows = [r for r in results if isinstance(r, dict)]
    for network, (price_field, _, _, _) in NETWORKS.items():
        if rows and not any(price_field in r for r in rows):
            raise parse_error(NAME, capture, f"no location has '{price_field}' (the {network} "
                              "price): renamed?", price_field)
    known = {f for f, _, _, _ in NETWORKS.values()}
    unknown = sorted({k for r in rows for k in r if "gpu_price" in k and k not in known})
    if unknown:  # a new price (spot, a reserve term) that would be dropped unseen
        raise parse_error(NAME, capture, f"unknown price field {unknown[0]}", unknown[0])
    offers, rejects = split_results(
        _location_offer(capture, r, network) for r in results for network in NETWORKS)
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*rejects, *conflicts]


def _location_offer(capture: Capture, row: object, network: str) -> ParsedOffer | Reject:
    raw = json.dumps(row, sort_keys=True)
    if not isinstance(row, dict):
        return Reject(provider=NAME, raw=raw, reason="location is not an object")
    price_field, count_field, fabric, gbps = NETWORKS[network]
    specs = row.get("specs_per_node")
    label = specs.get("gpu_model") if isinstance(specs, dict) else None
    per_node = positive_number(specs.get("gpu_count")) if isinstance(specs, dict) else None
    if not isinstance(specs, dict) or not isinstance(label, str) or not label.strip() \
            or per_node is None:
        return Reject(provider=NAME, raw=raw,
                      reason="location without specs_per_node.gpu_model and gpu_count")
    key = f"{row.get('id')}|{label}|{network}|{PricingModel.ON_DEMAND.value}"
    per_gpu = positive_decimal(str(row.get(price_field)))
    if per_gpu is None:
        return Reject(provider=NAME, raw=raw, offer_key=key,
                      reason=f"{price_field} is not a price: {row.get(price_field)!r}")
    free = row.get(count_field)
    nodes = int(free // per_node) if isinstance(free, int) and not isinstance(free, bool) \
        and free >= 0 else None
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, gpu_label=label, gpu_count=per_node,
            pricing_model=PricingModel.ON_DEMAND,
            price_per_hour=round(float(per_gpu) * per_node, 6),
            network=fabric, network_gbps=gbps,
            vcpus=None, ram_gb=positive_number(specs.get("ram_gb")),
            disk_gb=positive_number(specs.get("storage_gb")),
            availability=(Availability.UNKNOWN if nodes is None else
                          Availability.IN_STOCK if nodes > 0 else Availability.OUT_OF_STOCK),
            available_count=nodes, source_url=capture.url, observed_at=capture.fetched_at,
            provider_data={"network": network, "price_per_gpu_hour": float(per_gpu),
                           "gpus_available": free if nodes is not None else None,
                           "cpu_model": specs.get("cpu_model") if isinstance(
                               specs.get("cpu_model"), str) else None,
                           "cpu_cores": positive_number(specs.get("cpu_count")),
                           "location_id": str(row.get("id"))},
        )
    except ValidationError as exc:
        return Reject(provider=NAME, reason=f"invalid offer: {exc.errors()[0]['msg']}", raw=raw,
                      offer_key=key)


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
