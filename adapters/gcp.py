"""Google Cloud: accelerator-optimized VM prices composed from the Cloud Billing Catalog.

Compute Engine bills a GPU VM as separate SKUs: the GPUs, the vCPUs and the memory of its
series. `fetch` lists every Compute Engine SKU (`services/6F81-5844-456A/skus`, API key in the
`key` query parameter from `GCP_API_KEY`), following `nextPageToken` through the shared client;
a page that fails is a FetchError, never a shorter list.

`parse` composes each machine type of `gcp_machine_types.csv` (shape and SKU names, a source
per row) per region and pricing model:

    price/hour = gpu_count x GPU SKU + vcpus x "<series> Instance Core" + ram_gib x
                 "<series> Instance Ram"

On-demand uses the OnDemand SKUs ("Nvidia Tesla A100 GPU running in Americas"); spot uses the
Preemptible ones ("... GPU attached to Spot Preemptible VMs ...", "Spot Preemptible A2 Instance
Core ..."). A SKU applies to the regions in its `serviceRegions`. Every composed price is
`derived`. Checked against the whole-instance prices of the GPU pricing page (tests/fixtures/
gcp): a2-highgpu-1g = 2.933908 + 12 x 0.031611 + 85 x 0.004237 = 3.673385, as the page says.
A component that is missing, ambiguous (two SKUs for one region), tiered, in another unit or
in another currency makes that region's offer a Reject; nothing is guessed. Machine types whose
price includes bundled local SSD (a2-ultragpu, a3, a4) are not composed: that SKU's price is
not in any recorded payload yet.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    as_dict,
    as_list,
    json_body,
    member,
    parse_error,
    require_fields,
)
from gpuscout.core.errors import FetchError, MissingCredentialsError
from gpuscout.core.models import ParsedOffer, ParseResult, PriceKind, PricingModel, Reject

COMPUTE_SERVICE = "6F81-5844-456A"  # Compute Engine in the Cloud Billing Catalog
SKUS_URL = f"https://cloudbilling.googleapis.com/v1/services/{COMPUTE_SERVICE}/skus"
PAGE_SIZE = 5000  # the API's maximum
MAX_PAGES = 100
MACHINE_TYPES_CSV = Path(__file__).with_name("gcp_machine_types.csv")
KEY_VAR = "GCP_API_KEY"

NAME = "gcp"
SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = (KEY_VAR,)

SKU_FIELDS = ("skuId", "description", "category", "serviceRegions", "pricingInfo")
GIB_TO_GB = 2**30 / 1e9
# usageType -> (pricing model, GPU SKU name suffix, core/RAM SKU name prefix)
USAGES = {
    "OnDemand": (PricingModel.ON_DEMAND, "", ""),
    "Preemptible": (PricingModel.SPOT, " attached to Spot Preemptible VMs", "Spot Preemptible "),
}
UNITS = {"gpu": "h", "core": "h", "ram": "GiBy.h"}


@dataclass(frozen=True)
class MachineType:
    name: str
    series: str
    accelerator_type: str
    gpu_sku: str
    gpu_count: int
    vcpus: int
    ram_gib: float
    source: str


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    key = creds.get(KEY_VAR)
    if not key:
        raise MissingCredentialsError(NAME, KEY_VAR)
    captures: list[Capture] = []
    tokens: set[str] = set()
    token: str | None = None
    while True:
        params: dict[str, str | int] = {"key": key, "currencyCode": "USD",
                                        "pageSize": PAGE_SIZE}
        if token:
            params["pageToken"] = token
        captures.append(client.get(SKUS_URL, params=params))
        token = _next_token(captures[-1])
        if token is None:
            return captures
        if token in tokens or len(captures) >= MAX_PAGES:
            raise FetchError(f"nextPageToken loops or exceeds {MAX_PAGES} pages", provider=NAME,
                             url=captures[-1].url, transient=False)
        tokens.add(token)


def parse(captures: Sequence[Capture]) -> ParseResult:
    newest: dict[str, _Sku] = {}  # skuId -> newest capture of it
    for capture in sorted(captures, key=lambda c: c.fetched_at):
        for sku in _skus(capture):
            newest[str(sku.get("skuId") or sku.get("description"))] = _Sku(sku, capture)
    # (name, usageType) -> SKUs. A SKU short of a field is only a problem if a machine type
    # needs it, and then its region's offer is a Reject saying which part is missing.
    index: dict[tuple[str, str], list[_Sku]] = {}
    for s in newest.values():
        index.setdefault((s.name, s.usage), []).append(s)
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for machine in machine_types():
        for usage in USAGES:
            made, bad = _compose(machine, usage, index)
            offers.extend(made)
            rejects.extend(bad)
    return ParseResult(offers=offers, rejects=rejects)


@cache
def machine_types() -> tuple[MachineType, ...]:
    with MACHINE_TYPES_CSV.open(newline="", encoding="utf-8") as f:
        return tuple(MachineType(
            name=r["machine_type"], series=r["series"], accelerator_type=r["accelerator_type"],
            gpu_sku=r["gpu_sku"], gpu_count=int(r["gpu_count"]), vcpus=int(r["vcpus"]),
            ram_gib=float(r["ram_gib"]), source=r["source"],
        ) for r in csv.DictReader(f))


def component_names(machine: MachineType, usage: str) -> dict[str, str]:
    """The SKU names (descriptions without location) that price one machine type."""
    _, gpu_suffix, prefix = USAGES[usage]
    return {"gpu": machine.gpu_sku + gpu_suffix,
            "core": f"{prefix}{machine.series} Instance Core",
            "ram": f"{prefix}{machine.series} Instance Ram"}


# -- pages ------------------------------------------------------------------------------------


def _doc(capture: Capture) -> tuple[dict[str, Any], list[Any]]:
    """A page and its SKUs; an API error body is a ParseError with the API's message."""
    doc = json_body(NAME, capture)
    if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
        raise parse_error(NAME, capture, f"API error: {doc['error'].get('message')}", "error")
    return as_dict(doc), member(NAME, capture, doc, "skus")


def _next_token(capture: Capture) -> str | None:
    token = _doc(capture)[0].get("nextPageToken")
    return token if isinstance(token, str) and token else None


def _skus(capture: Capture) -> list[dict[str, Any]]:
    skus = [s for s in _doc(capture)[1] if isinstance(s, dict)]
    # a field that no SKU has was renamed upstream: refuse the page
    require_fields(NAME, capture, skus, SKU_FIELDS, "SKU")
    return skus


# -- composition ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Sku:
    sku: dict[str, Any]
    capture: Capture

    @property
    def name(self) -> str:
        """The description without its location: "Nvidia Tesla A100 GPU"."""
        return str(self.sku.get("description", "")).rsplit(" running in ", 1)[0]

    @property
    def usage(self) -> str:
        category = self.sku.get("category")
        return str(category.get("usageType")) if isinstance(category, dict) else ""

    @property
    def regions(self) -> list[str]:
        # proto3 JSON omits an empty list, so a SKU without serviceRegions applies nowhere
        regions = self.sku.get("serviceRegions")
        return [str(r) for r in regions] if isinstance(regions, list) else []


def _compose(machine: MachineType, usage: str,
             index: dict[tuple[str, str], list[_Sku]]) -> tuple[list[ParsedOffer], list[Reject]]:
    names = component_names(machine, usage)
    found = {kind: index.get((name, usage), []) for kind, name in names.items()}
    regions = sorted({r for s in found["gpu"] for r in s.regions})
    model = USAGES[usage][0]
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for region in regions:
        key = f"{machine.name}|{region}|{model.value}"
        parts: dict[str, tuple[float, str, _Sku]] = {}
        for kind, skus in found.items():
            here = [s for s in skus if region in s.regions]
            if len(here) != 1:
                what = "no" if not here else f"{len(here)} SKUs named"
                rejects.append(Reject(provider=NAME, offer_key=key, raw=names[kind],
                                      reason=f"{what} '{names[kind]}' ({usage}) in {region}"))
                break
            price = _unit_price(here[0].sku, UNITS[kind])
            if isinstance(price, str):
                rejects.append(Reject(provider=NAME, offer_key=key, reason=price,
                                      raw=json.dumps(here[0].sku, sort_keys=True)[:2000]))
                break
            parts[kind] = (price[0], price[1], here[0])
        else:
            result = _offer(machine, region, model, key, parts)
            if isinstance(result, ParsedOffer):
                offers.append(result)
            else:
                rejects.append(result)
    return offers, rejects


def _offer(machine: MachineType, region: str, model: PricingModel, key: str,
           parts: dict[str, tuple[float, str, _Sku]]) -> ParsedOffer | Reject:
    raw = json.dumps({k: v[2].sku.get("skuId") for k, v in parts.items()})
    currencies = {currency for _, currency, _ in parts.values()}
    if len(currencies) != 1:
        return Reject(provider=NAME, offer_key=key, raw=raw,
                      reason=f"components in several currencies: {sorted(currencies)}")
    gpu, core, ram = (parts[k][0] for k in ("gpu", "core", "ram"))
    total = machine.gpu_count * gpu + machine.vcpus * core + machine.ram_gib * ram
    gpu_sku = parts["gpu"][2]
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=machine.name,
            gpu_label=machine.accelerator_type, gpu_count=machine.gpu_count,
            pricing_model=model, price_per_hour=round(total, 9), currency=currencies.pop(),
            price_kind=PriceKind.DERIVED, region=region, vcpus=machine.vcpus,
            ram_gb=round(machine.ram_gib * GIB_TO_GB, 1), source_url=gpu_sku.capture.url,
            observed_at=max(p[2].capture.fetched_at for p in parts.values()),
            provider_data={
                "formula": f"{machine.gpu_count} x GPU + {machine.vcpus} x core + "
                           f"{machine.ram_gib:g} GiB x RAM",
                "gpu_sku": str(gpu_sku.sku.get("skuId")), "gpu_per_hour": gpu,
                "core_sku": str(parts["core"][2].sku.get("skuId")), "core_per_hour": core,
                "ram_sku": str(parts["ram"][2].sku.get("skuId")), "ram_per_gib_hour": ram,
                "ram_gib": machine.ram_gib,
                "location": str(gpu_sku.sku.get("description")).rsplit(" running in ", 1)[-1],
            },
        )
    except ValidationError as exc:
        return Reject(provider=NAME, raw=raw, offer_key=key,
                      reason=f"invalid offer: {exc.errors()[0]['msg']}")


def _unit_price(sku: dict[str, Any], unit: str) -> tuple[float, str] | str:
    """(price per unit, currency), or why the SKU cannot price a component."""
    infos = [p for p in as_list(sku.get("pricingInfo")) if isinstance(p, dict)]
    if not infos:
        return f"SKU {sku.get('skuId')} has no pricingInfo"
    info = max(infos, key=lambda p: str(p.get("effectiveTime", "")))
    expr = as_dict(info.get("pricingExpression"))
    if expr.get("usageUnit") != unit:
        return f"SKU {sku.get('skuId')} is priced per {expr.get('usageUnit')!r}, not per {unit!r}"
    rates = as_list(expr.get("tieredRates"))
    if len(rates) != 1 or not isinstance(rates[0], dict):
        return f"SKU {sku.get('skuId')} has {len(rates)} price tiers, not one"
    money = as_dict(rates[0].get("unitPrice"))
    try:
        # Money is units + nanos (10^-9); rounding to nanos drops the float noise
        value = round(int(money.get("units") or 0) + int(money.get("nanos") or 0) / 1e9, 9)
    except (TypeError, ValueError, OverflowError):
        return f"SKU {sku.get('skuId')} unitPrice is not a Money value: {money!r}"
    currency = money.get("currencyCode")
    if not isinstance(currency, str) or value <= 0:
        return f"SKU {sku.get('skuId')} has no positive price with a currency: {money!r}"
    return value, currency

