"""Daytona: GPU sandbox rates from the keyless billing rate card, `GET
https://billing.app.daytona.io/gpu-pricing`.

The body (2026-09-23 payload, adapters/snapshots/daytona/PROVENANCE.md) is
`{"generatedAt", "currency": "USD", "gpus": [{"type", "onDemandPricePerHour",
"spotPricePerHour", "onDemandPricePerSecond", "spotPricePerSecond"}], "resources": {"onDemand":
{"vcpuPerHour", "memoryGiBPerHour", "diskGiBPerHour"}, "spot": {...}}, "notes": [...]}`.

Reading rules:
- "GPU rates are per GPU. Sandbox vCPU, memory, and disk are billed separately" (the body's own
  note): there are no machine sizes, so each GPU type becomes one offer of ONE GPU at the GPU rate
  alone, flagged `provider_data["price_scope"] = "gpu_component"` (as TensorDock's), once on
  demand and once spot. The vCPU, memory and disk rates of the same capacity type go into
  `provider_data`, never into the price: composing a machine would mean inventing its size.
- Spot is Daytona's own interruptible capacity type with its own rate card, so it is a listed
  price, not a market quote.
- The card states per-second rates next to the hourly ones: billing is per second.
- The card names no region and no stock.
- `currency` must be USD; a card without `gpus`, or whose GPUs lost the hourly rate fields, is a
  format change (ParseError). A GPU without a usable rate is a reject for that capacity type.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    as_dict,
    envelope,
    finite_number,
    newest_wins,
    one_price_per_key,
    parse_error,
    positive_number,
    require_fields,
    split_results,
    stripped_text,
)
from gpuscout.core.models import (
    ParsedOffer,
    ParseResult,
    PricingModel,
    ProviderData,
    Reject,
)

PRICING_URL = "https://billing.app.daytona.io/gpu-pricing"
PRICE_SCOPE = "gpu_component"

NAME = "daytona"
SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = ()

# capacity type -> (pricing model, the GPU's hourly rate field, its resources block)
CAPACITY: dict[str, tuple[PricingModel, str, str]] = {
    "on_demand": (PricingModel.ON_DEMAND, "onDemandPricePerHour", "onDemand"),
    "spot": (PricingModel.SPOT, "spotPricePerHour", "spot"),
}
RESOURCE_RATES = ("vcpuPerHour", "memoryGiBPerHour", "diskGiBPerHour")


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRICING_URL, headers={"Accept": "application/json"})]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _read)


def _read(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    doc, gpus = envelope(NAME, capture, "gpus")
    currency = doc.get("currency")
    if currency != "USD":
        raise parse_error(NAME, capture, f"currency is {currency!r}, not 'USD'", "currency")
    require_fields(NAME, capture, gpus, ["type", *(f for _, f, _ in CAPACITY.values())], "GPU")
    resources = as_dict(doc.get("resources"))
    offers, rejects = split_results(
        _offer(capture, gpu, capacity, as_dict(resources.get(CAPACITY[capacity][2])))
        for gpu in gpus for capacity in CAPACITY)
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*rejects, *conflicts]


def _offer(capture: Capture, gpu: Any, capacity: str,
           resources: dict[str, Any]) -> ParsedOffer | Reject:
    raw = json.dumps(gpu, sort_keys=True, default=str)
    gpu_type = stripped_text(gpu.get("type")) if isinstance(gpu, dict) else None
    if not isinstance(gpu, dict) or gpu_type is None:
        return Reject(provider=NAME, reason="GPU entry without a type", raw=raw)
    model, field, _ = CAPACITY[capacity]
    key = f"{gpu_type}|{model.value}"
    price = positive_number(gpu.get(field))
    if price is None:
        return Reject(provider=NAME, offer_key=key, raw=raw,
                      reason=f"{field} is not a price: {gpu.get(field)!r}")
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, gpu_label=gpu_type, gpu_count=1,
            pricing_model=model, price_per_hour=price, billing_increment_s=1,
            source_url=capture.url, observed_at=capture.fetched_at,
            provider_data=_data(capacity, resources))
    except ValidationError as exc:
        return Reject(provider=NAME, offer_key=key, raw=raw,
                      reason=f"invalid offer: {exc.errors()[0]['msg']}")


def _data(capacity: str, resources: dict[str, Any]) -> ProviderData:
    data: ProviderData = {"price_scope": PRICE_SCOPE, "price_basis": "per GPU",
                          "capacity_type": capacity}
    for rate in RESOURCE_RATES:
        value = finite_number(resources.get(rate))
        if value is not None:
            data[f"usd_{rate}"] = value
    return data
