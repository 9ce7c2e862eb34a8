"""Lium (Bittensor subnet 51, formerly Celium): marketplace asks from `GET /api/executors`.

The body is a bare JSON array with one row per executor (a miner's machine): `machine_name`
(the GPU as the driver names it: "NVIDIA H100 80GB HBM3", "NVIDIA H200 NVL"), `gpu_count` GPUs
in the machine, `available_gpu_count` of them free, `price_per_gpu` (USD per GPU-hour, set by
the miner), `tier` ("secure" or "spot", echoed by `specs.is_spot`), `location` (country,
`country_code`, city, ...), `min_gpu_count_for_rental`, `is_whole_host_free`, `reliability_score`
and a scheduled future price (`pending_price_per_hour`, `price_change_effective_date`) that is
never the current one. Sources and caveats: adapters/snapshots/lium/PROVENANCE.md.

Reading rules:
- A marketplace book changes by the minute, one machine at a time, so asks are grouped into one
  offer per (GPU label, GPUs per machine, country code, tier): its price is the cheapest ask's
  whole-machine price (`price_per_gpu` x `gpu_count`), `available_count` the number of asks, and
  the cheapest, median and highest per-GPU asks go into `provider_data`. Prices are observed.
- A machine with no free GPU is no ask (skipped, not rejected). A group whose asks all have some
  GPUs taken (`available_gpu_count` < `gpu_count`) is `low` in stock, else `in_stock`.
- `tier` "secure" is on-demand, "spot" is spot; any other tier, or a `specs.is_spot` that
  contradicts the tier, is a Reject, as is a row without a label, a whole GPU count or a price.
- The response carries no currency (every price lium.io shows is in $) and no VRAM in the
  recorded excerpt, so VRAM is left to the catalog. An empty book is read as incomplete: it
  closes nothing.
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
    as_dict,
    finite_number,
    is_scalar,
    json_body,
    newest_wins,
    parse_error,
    positive_number,
    reject,
    require_fields,
    split_results,
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

EXECUTORS_URL = "https://lium.io/api/executors"
KEY_VAR = "LIUM_API_KEY"

NAME = "lium"
SOURCE_KIND: SourceKind = "api"
# Optional: the listing answered without a key when it was recorded; the official SDK sends its
# key as X-API-KEY, so one is sent when set.
CREDENTIALS: tuple[str, ...] = (KEY_VAR,)

REQUIRED = ("id", "machine_name", "price_per_gpu", "gpu_count", "tier")
TIERS = {"secure": PricingModel.ON_DEMAND, "spot": PricingModel.SPOT}


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    key = creds.get(KEY_VAR)
    return [client.get(EXECUTORS_URL, headers={"X-API-KEY": key} if key else None)]


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
    rows = _book(capture)
    asks, rejects = _split_asks(_ask(row) for row in rows)
    groups: dict[tuple[str, int, str, PricingModel], list[_Ask]] = {}
    for ask in asks:
        groups.setdefault(ask.group, []).append(ask)
    offers, bad = split_results(_offer(group, capture) for group in groups.values())
    rejects += bad
    # An empty book, or one whose every row was refused, is no evidence that offers vanished.
    whole = bool(rows) and (bool(offers) or not rejects)
    return offers, rejects, whole


def _split_asks(results: Iterable[_Ask | Reject | None]) -> tuple[list[_Ask], list[Reject]]:
    """Per-row results as (asks, rejects); a None (a fully rented machine) is dropped."""
    asks: list[_Ask] = []
    rejects: list[Reject] = []
    for result in results:
        if isinstance(result, _Ask):
            asks.append(result)
        elif isinstance(result, Reject):
            rejects.append(result)
    return asks, rejects


# -- body -------------------------------------------------------------------------------------


def _book(capture: Capture) -> list[Any]:
    doc = json_body(NAME, capture)
    if not isinstance(doc, list):
        detail = doc.get("detail") if isinstance(doc, dict) else None
        hint = f": {detail}" if is_scalar(detail) else ""
        raise parse_error(NAME, capture, "expected a JSON array of executors, got "
                          f"{type(doc).__name__}{hint}")
    # A renamed field shows as a field that no row has: refuse, don't read an empty book.
    require_fields(NAME, capture, doc, REQUIRED, "executor")
    return doc


# -- one row ----------------------------------------------------------------------------------


def _ask(row: Any) -> _Ask | Reject | None:
    if not isinstance(row, dict):
        return reject(NAME, f"executor is not an object: {type(row).__name__}", row)
    label = row.get("machine_name")
    if not isinstance(label, str) or not label.strip():
        return reject(NAME, "executor without a machine_name", row)
    gpus = _whole(row.get("gpu_count"))
    if gpus is None or gpus < 1:
        return reject(NAME, f"gpu_count is not a GPU count: {row.get('gpu_count')!r}", row)
    per_gpu = positive_number(row.get("price_per_gpu"))
    if per_gpu is None:
        return reject(NAME, f"price_per_gpu is not a price: {row.get('price_per_gpu')!r}", row)
    tier = row.get("tier")
    model = TIERS.get(tier) if isinstance(tier, str) else None
    if model is None:
        return reject(NAME, f"unknown tier {tier!r}", row)
    is_spot = as_dict(row.get("specs")).get("is_spot")
    if isinstance(is_spot, bool) and is_spot != (model is PricingModel.SPOT):
        return reject(NAME, f"tier {tier!r} contradicts specs.is_spot {is_spot}", row)
    stated = row.get("available_gpu_count")
    free = gpus if stated is None else _whole(stated)
    if free is None or free > gpus:
        return reject(NAME, f"available_gpu_count {stated!r} is not a count of the "
                      f"{gpus} GPUs", row)
    if free == 0:
        return None  # every GPU of the machine is rented: not an ask now
    country = as_dict(row.get("location")).get("country_code")
    code = country.strip().upper() if isinstance(country, str) and country.strip() else "?"
    return _Ask(row=row, label=label, gpus=gpus, free=free, per_gpu=per_gpu, model=model,
                country=code)


def _offer(asks: list[_Ask], capture: Capture) -> ParsedOffer | Reject:
    asks = sorted(asks, key=lambda a: a.per_gpu)
    best = asks[0]
    label, gpus, country, model = best.group
    key = f"{label}|{gpus}x|{country}|{model.value}"
    prices = [a.per_gpu for a in asks]
    whole_free = any(a.free == a.gpus for a in asks)
    location = as_dict(best.row.get("location"))
    data: ProviderData = {
        "price_basis": "cheapest ask: price_per_gpu x gpu_count",
        "price_per_gpu": best.per_gpu,
        "median_price_per_gpu": statistics.median(prices),
        "max_price_per_gpu": prices[-1],
        "asks": len(asks),
        "gpus_free": sum(a.free for a in asks),
        "tier": best.row.get("tier"),
        "executor_id": best.row.get("id"),
    }
    for field, value in (("city", location.get("city")),
                         ("reliability_score", best.row.get("reliability_score")),
                         ("min_gpu_count_for_rental", best.row.get("min_gpu_count_for_rental")),
                         ("max_cuda_version", best.row.get("max_cuda_version")),
                         ("pending_price_per_hour", best.row.get("pending_price_per_hour")),
                         ("price_change_effective_date",
                          best.row.get("price_change_effective_date"))):
        if is_scalar(value):
            data[field] = value
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=None, gpu_label=label, gpu_count=gpus,
            vram_gb_per_gpu=None, pricing_model=model,
            price_per_hour=round(best.per_gpu * gpus, 6), currency="USD",
            price_kind=PriceKind.OBSERVED, region=None if country == "?" else country,
            availability=Availability.IN_STOCK if whole_free else Availability.LOW,
            available_count=len(asks), source_url=capture.url,
            observed_at=capture.fetched_at, provider_data=data)
    except ValidationError as exc:
        return reject(NAME, f"invalid offer: {exc.errors()[0]['msg']}", best.row, key)


# -- helpers ----------------------------------------------------------------------------------


def _whole(value: Any) -> int | None:
    """A count as JSON gives it: an int (or a float with no fraction), not a bool; else None."""
    number = finite_number(value)
    if number is None or number < 0 or number != int(number):
        return None
    return int(number)
