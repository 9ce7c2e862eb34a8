"""Jarvislabs.ai: per-GPU prices and free capacity from the API catalog `GET /misc/server_meta`.

The official SDK (`jarvislabs`, `ServerMetaGPU` in jarvislabs/models.py) reads this endpoint to
route and admit instances. Each `server_meta` row is one GPU type in one region for one workload
type ("vm", "container", or null on older VM-capable rows) and yields up to two offers of one
GPU each: on-demand (`price_per_hour`) and spot (`spot_price`, when not null).

Reading rules (adapters/snapshots/jarvislabs/PROVENANCE.md):
- Prices are per GPU per hour; an instance of n GPUs (up to `num_gpus`) costs n times that, so
  offers are one GPU and the row's maximum is kept in provider_data.
- On-demand capacity is `effective_num_free_devices` (what the SDK admits on), else
  `num_free_devices`; spot capacity is `spot_num_free_devices`, else `num_free_devices`.
- Spot is sold for GPU containers only (SDK: "Spot instances are only supported for GPU
  containers", and `display_spot_price` hides it on "vm" rows): a `spot_price` on a "vm" row
  is rejected, not offered.
- `vram` is a string of GB ("80"). Prices are USD unless the body names a `currency`.
- `cpu_meta` (CPU-only VMs) has no GPU and is not read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    envelope,
    newest_wins,
    one_price_per_key,
    parse_error,
    positive_number,
    reject,
    require_fields,
)
from gpuscout.core.errors import MissingCredentialsError
from gpuscout.core.models import (
    Availability,
    ParsedOffer,
    ParseResult,
    PriceKind,
    PricingModel,
    Reject,
)

# The SDK's default region host; it lists every region's rows, Europe included.
SERVER_META_URL = "https://backendn.jarvislabs.net/misc/server_meta"
DEFAULT_CURRENCY = "USD"

NAME = "jarvislabs"
SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = ("JL_API_KEY",)

# pricing model -> (price field, capacity fields in order of preference)
PRICE_FIELDS: dict[PricingModel, tuple[str, tuple[str, ...]]] = {
    PricingModel.ON_DEMAND: ("price_per_hour", ("effective_num_free_devices",
                                                "num_free_devices")),
    PricingModel.SPOT: ("spot_price", ("spot_num_free_devices", "num_free_devices")),
}


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    key = creds.get("JL_API_KEY")
    if not key:
        raise MissingCredentialsError(NAME, "JL_API_KEY")
    return [client.get(SERVER_META_URL, headers={"Authorization": f"Bearer {key}"})]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _read)


def _read(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    """One response's offers. A row listed twice is one offer, the repeat reported; an offer
    listed at two prices is rejected (the toolkit's duplicate-key rule)."""
    currency, rows = _server_meta(capture)
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for row in rows:
        good, bad = _offers(row, capture, currency)
        offers += good
        rejects += bad
    offers, twice = one_price_per_key(NAME, offers,
                                      repeat_reason="row listed twice in one response")
    return offers, [*rejects, *twice]


# -- body -------------------------------------------------------------------------------------


def _server_meta(capture: Capture) -> tuple[str, list[Any]]:
    doc, rows = envelope(NAME, capture, "server_meta")
    # A renamed field shows as a field that no row has: refuse, don't emit nothing.
    require_fields(NAME, capture, rows, ("gpu_type", "price_per_hour"), "server_meta row")
    currency = doc.get("currency", DEFAULT_CURRENCY)
    if not isinstance(currency, str) or not re.fullmatch(r"[A-Za-z]{3}", currency):
        raise parse_error(NAME, capture, f"currency {currency!r} is not a currency code",
                          "currency")
    return currency.upper(), rows


# -- one row ----------------------------------------------------------------------------------


def _offers(row: Any, capture: Capture,
            currency: str) -> tuple[list[ParsedOffer], list[Reject]]:
    if not isinstance(row, dict):
        return [], [reject(NAME, "server_meta row is not an object", row)]
    gpu_type, region = row.get("gpu_type"), row.get("region")
    if not isinstance(gpu_type, str) or not gpu_type.strip():
        return [], [reject(NAME, "row without a gpu_type", row)]
    if not isinstance(region, str) or not region.strip():
        return [], [reject(NAME, "row without a region", row)]
    workload = row.get("workload_type")
    workload_key = workload if isinstance(workload, str) and workload else "unspecified"
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for model, (field, capacity_fields) in PRICE_FIELDS.items():
        value = row.get(field)
        key = f"{gpu_type}|{region}|{workload_key}|{model.value}"
        if value is None:
            if model is PricingModel.ON_DEMAND:
                rejects.append(reject(NAME, "price_per_hour is null: no on-demand price", row,
                                      key))
            continue  # a null or absent spot_price: no spot offer
        if model is PricingModel.SPOT and workload == "vm":
            rejects.append(reject(NAME, "spot_price on a VM row: spot is sold for GPU "
                                  "containers only", row, key))
            continue
        price = positive_number(value)
        if price is None:
            rejects.append(reject(NAME, f"{field} is not a price: {value!r}", row, key))
            continue
        free = next((n for n in (_count(row.get(f)) for f in capacity_fields)
                     if n is not None), None)
        try:
            offers.append(_offer(row, capture, key=key, model=model, price=price,
                                 currency=currency, free=free))
        except ValidationError as exc:
            rejects.append(reject(NAME, f"invalid offer: {exc.errors()[0]['msg']}", row, key))
    return offers, rejects


def _offer(row: dict[str, Any], capture: Capture, *, key: str, model: PricingModel,
           price: float, currency: str, free: int | None) -> ParsedOffer:
    data: dict[str, str | int | float | bool | None] = {
        "workload_type": row.get("workload_type") if isinstance(row.get("workload_type"),
                                                                str) else None,
        "price_basis": "per GPU",
    }
    max_gpus = _count(row.get("num_gpus"))
    if max_gpus:
        data["max_gpus_per_instance"] = max_gpus
    if isinstance(row.get("arc"), str):
        data["architecture"] = row["arc"]
    if free is None:
        availability = Availability.UNKNOWN
    else:
        availability = Availability.IN_STOCK if free > 0 else Availability.OUT_OF_STOCK
    return ParsedOffer(
        provider=NAME, offer_key=key, instance_type=None, gpu_label=row["gpu_type"],
        gpu_count=1, vram_gb_per_gpu=_gb(row.get("vram")), pricing_model=model,
        price_per_hour=price, currency=currency, price_kind=PriceKind.LISTED,
        region=row["region"], vcpus=positive_number(row.get("cpus_per_gpu")),
        ram_gb=positive_number(row.get("ram_per_gpu")), availability=availability,
        available_count=free, source_url=capture.url, observed_at=capture.fetched_at,
        provider_data=data,
    )


# -- helpers ----------------------------------------------------------------------------------


def _count(value: Any) -> int | None:
    """A device count as the API writes it: an int, or digits in a string ("8")."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _gb(value: Any) -> float | None:
    """VRAM as written: "80", "141 GB" or a number; None when it holds no positive number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if value > 0 else None
    if not isinstance(value, str):
        return None
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(?:GB)?\s*", value, re.IGNORECASE)
    return float(m.group(1)) if m and float(m.group(1)) > 0 else None
