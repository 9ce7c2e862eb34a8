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

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.core.errors import ParseError
from gpuscout.core.models import (
    Availability,
    ParsedOffer,
    ParseResult,
    PriceKind,
    PricingModel,
    ProviderData,
    Reject,
)
from pydantic import ValidationError

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
    newest: dict[str, ParsedOffer] = {}
    rejects: list[Reject] = []
    for capture in sorted(captures, key=lambda c: c.fetched_at):
        for entry in _machine_types(capture):
            result = _offer(entry, capture)
            if isinstance(result, ParsedOffer):
                newest[result.offer_key] = result
            elif result is not None:
                rejects.append(result)
    return ParseResult(offers=list(newest.values()), rejects=rejects)


# -- body -------------------------------------------------------------------------------------


def _machine_types(capture: Capture) -> list[Any]:
    """The machine types from the API envelope {"machineTypes": [...]} or a bare list."""
    try:
        doc = json.loads(capture.body)
    except ValueError as exc:
        raise _error(capture, f"body is not JSON ({exc})", None) from None
    if isinstance(doc, dict):
        doc = doc.get("machineTypes")
    if not isinstance(doc, list):
        raise _error(capture, "expected {'machineTypes': [...]}", "machineTypes")
    entries = [e for e in doc if isinstance(e, dict)]
    # A field renamed upstream shows as a field that no machine type has.
    for name in REQUIRED:
        if entries and not any(name in e for e in entries):
            raise _error(capture, f"no machine type has '{name}'", name)
    return doc


def _error(capture: Capture, message: str, field: str | None) -> ParseError:
    return ParseError(message, provider=NAME, url=capture.url, field=field,
                      snippet=capture.text()[:200])


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

    if not all(isinstance(v, str) and v for v in (dc, machine, model)):
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
    max_free, total_free = entry.get("maxGpuFree"), entry.get("totalGpuFree")
    data: ProviderData = {
        "gpu_model_id": entry.get("gpuModelId"), "cpu_model": entry.get("cpuModel"),
        "composition": f"1 GPU + {vcpus} vCPU + {memory} GiB RAM; no disk, no IPv4",
        **{UNIT_PRICES[f]: float(p) if p is not None else None for f, p in prices.items()},
        "max_gpu_free": max_free if _count(max_free) else None,
        "renewable_energy": entry.get("renewableEnergy") if isinstance(
            entry.get("renewableEnergy"), bool) else None,
    }
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=machine, gpu_label=model, gpu_count=1,
            pricing_model=PricingModel.ON_DEMAND, price_per_hour=float(price),
            price_kind=PriceKind.DERIVED, region=dc, vcpus=vcpus, ram_gb=memory,
            availability=(Availability.UNKNOWN if not _count(max_free)
                          else Availability.IN_STOCK if max_free > 0
                          else Availability.OUT_OF_STOCK),
            available_count=total_free if _count(total_free) else None,
            source_url=capture.url, observed_at=capture.fetched_at, provider_data=data,
        )
    except ValidationError as exc:
        return reject(f"invalid offer: {exc.errors()[0]['msg']}")


def _smallest_machine(entry: dict[str, Any]) -> tuple[int, int] | str:
    """(vCPUs, GiB RAM) of the smallest 1-GPU VM the ratios allow, or why there is none."""
    per_gpu = entry.get("minVcpuPerGpu")
    max_ratio, min_ratio = entry.get("maxVcpuPerMemoryGib"), entry.get("minVcpuPerMemoryGib")
    if not _positive(per_gpu):
        return f"minVcpuPerGpu is not a positive number: {per_gpu!r}"
    if not _positive(max_ratio):
        return f"maxVcpuPerMemoryGib is not a positive number: {max_ratio!r}"
    # Whole vCPUs and GiB: what a VM is created with (cudo-compute CreateVMBody vcpus, memory_gib).
    vcpus = max(math.ceil(per_gpu), _ceil(entry.get("minVcpu")))
    memory = max(math.ceil(vcpus / max_ratio - 1e-9), _ceil(entry.get("minMemoryGib")))
    if memory < 1:
        return f"no whole GiB of memory fits maxVcpuPerMemoryGib {max_ratio!r}"
    if _positive(min_ratio) and vcpus / memory < min_ratio:
        return (f"{vcpus} vCPU and {memory} GiB break minVcpuPerMemoryGib {min_ratio}: "
                "no machine can be composed")
    return vcpus, memory


def _ceil(value: Any) -> int:
    """A listed minimum rounded up to a whole unit; 0 when not listed."""
    return math.ceil(value) if _positive(value) else 0


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


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0 \
        and math.isfinite(value)
