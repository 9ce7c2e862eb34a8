"""Cudo Compute: GPU machine types from the public `vms/machine-types` listing, by component.

Cudo sells a VM by the unit: each machine type (a CPU/GPU platform in one data center) prices a
GPU, a vCPU and a GiB of RAM per hour separately, as decimal strings (`{"value": "0.520000"}`),
and bounds how they combine (`minVcpuPerGpu`, `min/maxVcpuPerMemoryGib`). There is no price for a
whole machine, so one is composed here, and marked `derived`:

    1 GPU + minVcpuPerGpu vCPUs + the least whole GiB of RAM those vCPUs allow
    (vCPUs / maxVcpuPerMemoryGib, rounded up; at least minVcpu / minMemoryGib when listed)

Boot disk (`minStorageGibPriceHr` per GiB, size not listed) and IPv4 (`ipv4PriceHr`) are not
included; their unit prices are kept in `provider_data` with the others. One offer per machine
type and data center, on-demand; stock from `maxGpuFree` (GPUs free on one host) and
`totalGpuFree` (GPUs free in the data center).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import ValidationError

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    envelope,
    newest_wins,
    positive_number,
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

MACHINE_TYPES_URL = "https://rest.compute.cudo.org/v1/vms/machine-types"

NAME = "cudo"
SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = ()  # "No authorization required" (cudo-compute SDK docs)

REQUIRED = ("dataCenterId", "machineType", "gpuPriceHr", "vcpuPriceHr", "memoryGibPriceHr")
# Per-hour unit prices -> their provider_data key: the three composed into the offer come first.
UNIT_PRICES = {"gpuPriceHr": "gpu_price_hr", "vcpuPriceHr": "vcpu_price_hr",
               "memoryGibPriceHr": "memory_gib_price_hr",
               "minStorageGibPriceHr": "storage_gib_price_hr", "ipv4PriceHr": "ipv4_price_hr"}
COMPOSED = ("gpuPriceHr", "vcpuPriceHr", "memoryGibPriceHr")


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(MACHINE_TYPES_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, lambda c: split_results(
        _offer(entry, c) for entry in _machine_types(c)))


# -- body -------------------------------------------------------------------------------------


def _machine_types(capture: Capture) -> list[Any]:
    """The machine types from the API envelope {"machineTypes": [...]} or a bare list."""
    _, types = envelope(NAME, capture, "machineTypes", bare_list=True)
    # A field renamed upstream shows as a field that no machine type has.
    require_fields(NAME, capture, types, REQUIRED, "machine type")
    return types


# -- one machine type -------------------------------------------------------------------------


def _offer(entry: Any, capture: Capture) -> ParsedOffer | Reject | None:
    """The composed 1-GPU offer; None for a machine type without GPUs."""
    raw = json.dumps(entry, sort_keys=True)
    if not isinstance(entry, dict):
        return Reject(provider=NAME, reason="machine type is not an object", raw=raw)
    if not entry.get("gpuModel") and not entry.get("gpuModelId"):
        return None  # a CPU-only machine type
    dc, machine, model = entry.get("dataCenterId"), entry.get("machineType"), entry.get("gpuModel")
    key = f"{dc}|{machine}|{entry.get('gpuModelId')}|{PricingModel.ON_DEMAND.value}"

    def reject(reason: str) -> Reject:
        return Reject(provider=NAME, reason=reason, raw=raw, offer_key=key)

    if not (isinstance(dc, str) and dc and isinstance(machine, str) and machine
            and isinstance(model, str) and model):
        return reject("machine type without dataCenterId, machineType or gpuModel")
    prices = {f: _unit_price(entry.get(f)) for f in UNIT_PRICES}
    gpu, vcpu, ram = (prices[f] for f in COMPOSED)
    if gpu is None or vcpu is None or ram is None:
        field = next(f for f in COMPOSED if prices[f] is None)
        return reject(f"{field} is not a unit price: {entry.get(field)!r}")
    if not gpu:
        return reject("gpuPriceHr is 0: no GPU price")
    shape = _smallest_machine(entry)
    if isinstance(shape, str):
        return reject(shape)
    vcpus, memory = shape
    price = gpu + vcpus * vcpu + memory * ram
    max_free, total_free = _count(entry.get("maxGpuFree")), _count(entry.get("totalGpuFree"))
    data: ProviderData = {
        "gpu_model_id": entry.get("gpuModelId"), "cpu_model": entry.get("cpuModel"),
        "composition": f"1 GPU + {vcpus} vCPU + {memory} GiB RAM; no disk, no IPv4",
        **{UNIT_PRICES[f]: float(p) if p is not None else None for f, p in prices.items()},
        "max_gpu_free": max_free,
        "renewable_energy": entry.get("renewableEnergy") if isinstance(
            entry.get("renewableEnergy"), bool) else None,
    }
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=machine, gpu_label=model, gpu_count=1,
            pricing_model=PricingModel.ON_DEMAND, price_per_hour=float(price),
            price_kind=PriceKind.DERIVED, region=dc, vcpus=vcpus, ram_gb=memory,
            availability=(Availability.UNKNOWN if max_free is None
                          else Availability.IN_STOCK if max_free > 0
                          else Availability.OUT_OF_STOCK),
            available_count=total_free,
            source_url=capture.url, observed_at=capture.fetched_at, provider_data=data,
        )
    except ValidationError as exc:
        return reject(f"invalid offer: {exc.errors()[0]['msg']}")


def _smallest_machine(entry: dict[str, Any]) -> tuple[int, int] | str:
    """(vCPUs, GiB RAM) of the smallest 1-GPU VM the ratios allow, or why there is none."""
    per_gpu, max_ratio = (positive_number(entry.get(f))
                          for f in ("minVcpuPerGpu", "maxVcpuPerMemoryGib"))
    min_ratio = positive_number(entry.get("minVcpuPerMemoryGib"))
    if per_gpu is None:
        return f"minVcpuPerGpu is not a positive number: {entry.get('minVcpuPerGpu')!r}"
    if max_ratio is None:
        return ("maxVcpuPerMemoryGib is not a positive number: "
                f"{entry.get('maxVcpuPerMemoryGib')!r}")
    # Whole vCPUs and GiB: what a VM is created with (cudo-compute CreateVMBody vcpus, memory_gib).
    vcpus = max(math.ceil(per_gpu), _ceil(entry.get("minVcpu")))
    memory = max(math.ceil(vcpus / max_ratio - 1e-9), _ceil(entry.get("minMemoryGib")))
    if memory < 1:
        return f"no whole GiB of memory fits maxVcpuPerMemoryGib {entry['maxVcpuPerMemoryGib']!r}"
    if min_ratio is not None and vcpus / memory < min_ratio:
        return (f"{vcpus} vCPU and {memory} GiB break minVcpuPerMemoryGib "
                f"{entry['minVcpuPerMemoryGib']}: no machine can be composed")
    return vcpus, memory


def _ceil(value: Any) -> int:
    """A listed minimum rounded up to a whole unit; 0 when not listed."""
    number = positive_number(value)
    return math.ceil(number) if number is not None else 0


def _unit_price(value: Any) -> Decimal | None:
    """A Cudo decimal `{"value": "0.520000"}` as a Decimal; None when absent or not a number."""
    text = value.get("value") if isinstance(value, dict) else None
    if not isinstance(text, str):
        return None
    try:
        price = Decimal(text)
    except InvalidOperation:
        return None
    return price if price.is_finite() and price >= 0 else None


def _count(value: Any) -> int | None:
    """A GPU count as the API writes it: a non-negative int (not a bool)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
        else None
