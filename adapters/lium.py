"""Lium (Bittensor subnet 51, formerly Celium): marketplace asks from its public nodes feed,
`GET /api/public/v1/nodes`.

Lium documents the feed (docs.lium.io, "public nodes feed") as public and versioned: fields are
only ever added under /public/v1, a breaking change ships as /public/v2. The body is
`{generated_at, count, nodes: [...]}` with one node per rentable machine: `gpu_model` (Lium's
name of the GPU: "RTX 5090", "H200", "A100-SXM4-80GB"), `gpu_count` GPUs in the machine,
`available_gpu_count` of them free, `min_rentable_gpu_count` the smallest order,
`price_per_gpu_hour` (USD, set by the miner) and `price_per_node_hour` (the same times
`gpu_count`), `gpu_memory_gb`, the machine's `cpu_count`, `ram_gb` and `disk_gb`, `tier`
("secure" or "spot"), `country_code`, `region` (the subdivision), `city` and `rent_url`. Only
`id` and `rent_url` are promised non-null. Sources and caveats:
adapters/snapshots/lium/PROVENANCE.md.

Reading rules:
- A marketplace book changes by the minute, one machine at a time, so asks are grouped into one
  offer per (GPU label, GPUs per machine, country code, tier): its price is the cheapest ask's
  whole-machine price (`price_per_gpu_hour` x `gpu_count`), `available_count` the number of
  asks, and the cheapest, median and highest per-GPU asks go into `provider_data`. Prices are
  observed. The offer key is `<gpu_model>|<n>x|<country>|<model>`.
- A machine with no free GPU, or fewer free than its smallest order, is no ask (skipped, not
  rejected). A group whose asks all have some GPUs taken is `low` in stock, else `in_stock`.
- `tier` "secure" is on-demand, "spot" is spot; any other tier is a Reject, as is a node without
  a label, a whole GPU count or a price, or whose `price_per_node_hour` is not its per-GPU price
  times its GPUs (the price basis would be in doubt).
- VRAM is `gpu_memory_gb`. An empty feed, or one whose `count` says more nodes than it holds, is
  incomplete: it closes nothing.

Until 2026-12 the adapter read the undocumented `GET /api/executors` (the site's own listing,
keyed by the driver's GPU name, "NVIDIA GeForce RTX 5090"). The feed names the same machines
without the driver's vendor and brand words ("RTX 5090", and Lium's own "A10 Tensor Core GPU"),
which cannot be turned back into the driver's name reliably, so the first refresh on the feed
closes the executors route's offers once and opens the feed's under its labels.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    envelope,
    finite_number,
    is_scalar,
    newest_wins,
    positive_number,
    reject,
    require_fields,
    split_results,
    stripped_text,
)
from gpuscout.core.models import (
    Availability,
    ParsedOffer,
    ParseResult,
    PriceKind,
    PricingModel,
    ProviderData,
    Reject,
)

NODES_URL = "https://lium.io/api/public/v1/nodes"

NAME = "lium"
SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = ()  # the feed is public

REQUIRED = ("id", "gpu_model", "gpu_count", "price_per_gpu_hour", "tier")
TIERS = {"secure": PricingModel.ON_DEMAND, "spot": PricingModel.SPOT}
NODE_PRICE_TOLERANCE = 0.01  # USD: price_per_node_hour vs price_per_gpu_hour x gpu_count


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(NODES_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _read)


@dataclass(frozen=True)
class _Ask:
    row: dict[str, Any]
    label: str
    gpus: int
    free: int
    per_gpu: float
    model: PricingModel
    country: str

    @property
    def group(self) -> tuple[str, int, str, PricingModel]:
        return self.label, self.gpus, self.country, self.model


def _read(capture: Capture) -> tuple[list[ParsedOffer], list[Reject], bool]:
    doc, rows = envelope(NAME, capture, "nodes")
    # A renamed field shows as a field that no node has: refuse, don't read an empty book.
    require_fields(NAME, capture, rows, REQUIRED, "node")
    asks, rejects = _split_asks(_ask(row) for row in rows)
    groups: dict[tuple[str, int, str, PricingModel], list[_Ask]] = {}
    for ask in asks:
        groups.setdefault(ask.group, []).append(ask)
    offers, bad = split_results(_offer(group, capture) for group in groups.values())
    rejects += bad
    # An empty feed, one cut short of its own count, or one whose every node was refused, is
    # no evidence that offers vanished.
    stated = _whole(doc.get("count"))
    whole = (bool(rows) and (stated is None or stated <= len(rows))
             and (bool(offers) or not rejects))
    return offers, rejects, whole


def _split_asks(results: Iterable[_Ask | Reject | None]) -> tuple[list[_Ask], list[Reject]]:
    """Per-row results as (asks, rejects); a None (a machine that cannot be rented now) is
    dropped."""
    asks: list[_Ask] = []
    rejects: list[Reject] = []
    for result in results:
        if isinstance(result, _Ask):
            asks.append(result)
        elif isinstance(result, Reject):
            rejects.append(result)
    return asks, rejects


# -- one node ---------------------------------------------------------------------------------


def _ask(row: Any) -> _Ask | Reject | None:
    if not isinstance(row, dict):
        return reject(NAME, f"node is not an object: {type(row).__name__}", row)
    label = stripped_text(row.get("gpu_model"))
    if label is None:
        return reject(NAME, "node without a gpu_model", row)
    gpus = _whole(row.get("gpu_count"))
    if gpus is None or gpus < 1:
        return reject(NAME, f"gpu_count is not a GPU count: {row.get('gpu_count')!r}", row)
    per_gpu = positive_number(row.get("price_per_gpu_hour"))
    if per_gpu is None:
        return reject(NAME, "price_per_gpu_hour is not a price: "
                      f"{row.get('price_per_gpu_hour')!r}", row)
    node_price = row.get("price_per_node_hour")
    if node_price is not None and (finite_number(node_price) is None or abs(
            node_price - per_gpu * gpus) > NODE_PRICE_TOLERANCE):
        return reject(NAME, f"price_per_node_hour {node_price!r} is not price_per_gpu_hour "
                      f"{per_gpu:g} x {gpus} GPUs", row)
    tier = row.get("tier")
    model = TIERS.get(tier) if isinstance(tier, str) else None
    if model is None:
        return reject(NAME, f"unknown tier {tier!r}", row)
    stated = row.get("available_gpu_count")
    free = gpus if stated is None else _whole(stated)
    if free is None or free > gpus:
        return reject(NAME, f"available_gpu_count {stated!r} is not a count of the "
                      f"{gpus} GPUs", row)
    smallest = _whole(row.get("min_rentable_gpu_count")) or 1
    if free == 0 or free < smallest:
        return None  # rented out, or too few GPUs free for the smallest order: not an ask now
    country = stripped_text(row.get("country_code"))
    return _Ask(row=row, label=label, gpus=gpus, free=free, per_gpu=per_gpu, model=model,
                country=country.upper() if country else "?")


def _offer(asks: list[_Ask], capture: Capture) -> ParsedOffer | Reject:
    asks = sorted(asks, key=lambda a: a.per_gpu)
    best = asks[0]
    label, gpus, country, model = best.group
    key = f"{label}|{gpus}x|{country}|{model.value}"
    prices = [a.per_gpu for a in asks]
    whole_free = any(a.free == a.gpus for a in asks)
    row = best.row
    data: ProviderData = {
        "price_basis": "cheapest ask: price_per_gpu_hour x gpu_count",
        "price_per_gpu": best.per_gpu,
        "median_price_per_gpu": statistics.median(prices),
        "max_price_per_gpu": prices[-1],
        "asks": len(asks),
        "gpus_free": sum(a.free for a in asks),
        "tier": row.get("tier"),
        "node_id": row.get("id"),
    }
    for field, value in (("city", row.get("city")), ("subdivision", row.get("region")),
                         ("min_rentable_gpu_count", row.get("min_rentable_gpu_count")),
                         ("rent_url", row.get("rent_url"))):
        if is_scalar(value):
            data[field] = value
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=None, gpu_label=label, gpu_count=gpus,
            vram_gb_per_gpu=positive_number(row.get("gpu_memory_gb")), pricing_model=model,
            price_per_hour=round(best.per_gpu * gpus, 6), currency="USD",
            price_kind=PriceKind.OBSERVED, region=None if country == "?" else country,
            vcpus=positive_number(row.get("cpu_count")), ram_gb=positive_number(row.get("ram_gb")),
            disk_gb=positive_number(row.get("disk_gb")),
            availability=Availability.IN_STOCK if whole_free else Availability.LOW,
            available_count=len(asks), source_url=capture.url,
            observed_at=capture.fetched_at, provider_data=data)
    except ValidationError as exc:
        return reject(NAME, f"invalid offer: {exc.errors()[0]['msg']}", row, key)


# -- helpers ----------------------------------------------------------------------------------


def _whole(value: Any) -> int | None:
    """A count as JSON gives it: an int (or a float with no fraction), not a bool; else None."""
    number = finite_number(value)
    if number is None or number < 0 or number != int(number):
        return None
    return int(number)
