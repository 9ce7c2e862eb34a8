"""Hyperbolic: the GPU marketplace's nodes and their per-GPU asks (`POST /v1/marketplace`, spot)
and the on-demand rental options (`GET /v2/alpha/on-demand/rental-options`).

The marketplace lists supplier nodes (`instances`): each node has `gpus_total` GPUs of one
model (`hardware.gpus[]`), `gpus_reserved` of them rented out, and one price per GPU per hour
(`pricing.price.amount`, US cents, `period` "hourly"). A renter takes any number of the free
GPUs of a node, so each node yields one offer of one GPU at that price, with the free GPUs as
`available_count` and the node's size in provider_data.

The two sources are fetched and read apart (`toolkit.fetch_apart`, `read_apart`): the
marketplace's format is attested only by 2025 evidence, the rental options' by a capture of
2026-08-29. When one cannot be fetched or read, the other still loads, the result is incomplete
(nothing vanished is closed, the failed part's offers stay as they were), and a failed read is
a Reject naming the part; only when neither answers does the refresh fail.

Reading rules (adapters/snapshots/hyperbolic/PROVENANCE.md):
- Hyperbolic sells these nodes as "spot" ("Spot Instances: rent GPU instances at discounted
  rates", next to "On-Demand Instances ... with guaranteed availability", official CLI), and
  each price is set per node: spot, observed.
- `amount` is cents per GPU per hour: the official CLI divides it by 100 and prints "Prices are
  shown per GPU per hour in USD".
- A node with `reserved` true, or with no free GPU, is out of stock.
- `hardware.gpus[].ram` is MiB as nvidia-smi prints it (81559 for an 80 GB H100, 24564 for a
  24 GB RTX 4090): VRAM is that / 1024. `interface` ("PCIeX16" on SXM H100s too) is the host
  link, not the GPU-to-GPU one, so it is kept in provider_data only.
- CPU, RAM and storage are the whole node's (`virtual_cores`, GB): provider_data, since the
  share a one-GPU rental gets is not stated.

On-demand rental options (capture of 2026-08-29, PROVENANCE.md), a bare JSON array:
- one option per region x GPU x count x machine type; `costPerHourCents` is the WHOLE option's
  price in US cents (8 x H100 at 2552 is $25.52/h, $3.19 per GPU, the single-GPU price of the
  same region family); `gpuCount` GPUs of `gpuType` in `gpuFormFactor` ("sxm5", "pcie").
- `totalAvailable`, when present, is how many can be had now; absent is unknown, not zero.
- `enabled` false is an option that cannot be rented now: out of stock, its price kept.
- `providerCostPerHourCents` is what Hyperbolic pays its supplier, not a customer price: never
  read. Any other `*PerHourCents` field is a price these rules do not know: the body is refused.
- `connectionType` (ethernet / infiniband) and `ethernetVariant` (normal / rocev2) describe the
  machine's network; no bandwidth or multi-machine product is stated, so they stay in
  provider_data and the offer claims no fabric.
- `nodes[0]` gives vCPUs (`vcpuCount`, or `cpuCount` cores on bare metal), RAM and storage (GB).
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
    as_list,
    envelope,
    fetch_apart,
    is_scalar,
    json_body,
    newest_wins,
    one_price_per_key,
    parse_error,
    positive_number,
    read_apart,
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

MARKETPLACE_URL = "https://api.hyperbolic.xyz/v1/marketplace"
RENTAL_OPTIONS_URL = "https://api.hyperbolic.ai/v2/alpha/on-demand/rental-options"
LIST_ALL = {"filters": {}}  # what the official CLI and AgentKit send: every node
MARKETPLACE, OPTIONS = "marketplace", "on-demand rental options"  # the two sources

NAME = "hyperbolic"
SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = ("HYPERBOLIC_API_KEY",)  # optional: the listing is public

REQUIRED = ("id", "hardware", "gpus_total", "pricing")
OPTION_REQUIRED = ("costPerHourCents", "gpuCount", "gpuType", "gpuFormFactor", "region")
CUSTOMER_PRICE = "costPerHourCents"
SUPPLIER_COST = "providerCostPerHourCents"  # never read: not a price anyone pays
CENTS_PER_DOLLAR = 100
MIB_PER_GIB = 1024
HOURLY = "hourly"


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    """The marketplace and the on-demand options, each on its own: one that fails (the
    marketplace's evidence is from 2025) leaves the other to load."""
    key = creds.get("HYPERBOLIC_API_KEY")
    headers = {"Authorization": f"Bearer {key}"} if key else None
    return fetch_apart(NAME, {
        MARKETPLACE: lambda: client.post_json(MARKETPLACE_URL, LIST_ALL, headers=headers),
        OPTIONS: lambda: client.get(RENTAL_OPTIONS_URL, headers={"Accept": "application/json"}),
    })


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers of the marketplace and of the on-demand options, each read on its own (within
    one, when captures repeat an offer key the newest wins). The result is complete only when
    both were read: a part missing or unreadable closes nothing, and the other still loads."""
    parts = {MARKETPLACE: [c for c in captures if not _is_options(c)],
             OPTIONS: [c for c in captures if _is_options(c)]}
    result, read = read_apart(NAME, parts, lambda part: newest_wins(part, _read))
    return result.model_copy(update={"complete": result.complete and len(read) == len(parts)})


def _is_options(capture: Capture) -> bool:
    return capture.url.split("?", 1)[0] == RENTAL_OPTIONS_URL


def _read(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    if _is_options(capture):
        return _read_options(capture)
    _, nodes = envelope(NAME, capture, "instances")
    # A renamed field shows as a field that no node has: refuse, don't emit nothing.
    require_fields(NAME, capture, nodes, REQUIRED, "marketplace node")
    offers, rejects = split_results(_offer(node, capture) for node in nodes)
    offers, twice = one_price_per_key(NAME, offers,
                                      repeat_reason="node listed twice in one response")
    return offers, [*rejects, *twice]


def _offer(node: Any, capture: Capture) -> ParsedOffer | Reject | None:
    if not isinstance(node, dict):
        return reject(NAME, f"node is not an object: {type(node).__name__}", node)
    node_id = node.get("id")
    if not isinstance(node_id, str) or not node_id.strip():
        return reject(NAME, "node without an id", node)
    hardware = as_dict(node.get("hardware"))
    gpus = [g for g in as_list(hardware.get("gpus")) if isinstance(g, dict)]
    total = _count(node.get("gpus_total"))
    if total is None:
        return reject(NAME, f"gpus_total is not a count: {node.get('gpus_total')!r}", node)
    if total == 0 and not gpus:
        return None  # a CPU node
    models = {json.dumps(g.get("model")) for g in gpus}
    label = gpus[0].get("model") if len(models) == 1 else None
    if not isinstance(label, str) or not label.strip():
        named = ", ".join(sorted(models)) or "none"
        return reject(NAME, f"node does not name one GPU model: {named}", node)
    if total == 0:
        return reject(NAME, "gpus_total is 0 on a node with GPUs", node)
    reserved = _count(node.get("gpus_reserved"))
    if reserved is None or reserved > total:
        return reject(NAME, f"gpus_reserved {node.get('gpus_reserved')!r} is not a count of "
                      f"the node's {total} GPUs", node)
    price = as_dict(as_dict(node.get("pricing")).get("price"))
    period = price.get("period")
    if period != HOURLY:
        return reject(NAME, f"price period is {period!r}, not {HOURLY!r}", node)
    cents = positive_number(price.get("amount"))
    if cents is None:
        return reject(NAME, f"price amount is not a price: {price.get('amount')!r}", node)
    free = 0 if node.get("reserved") is True else total - reserved
    region = as_dict(node.get("location")).get("region")
    key = f"{node_id}|{PricingModel.SPOT.value}"
    mib = positive_number(gpus[0].get("ram"))
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=None, gpu_label=label, gpu_count=1,
            # whole GiB, as Vast.ai does: nvidia-smi reports a little under nominal
            vram_gb_per_gpu=round(mib / MIB_PER_GIB) if mib is not None else None,
            pricing_model=PricingModel.SPOT, price_per_hour=cents / CENTS_PER_DOLLAR,
            currency="USD", price_kind=PriceKind.OBSERVED,
            region=region if isinstance(region, str) and region else None,
            availability=Availability.IN_STOCK if free > 0 else Availability.OUT_OF_STOCK,
            available_count=free, source_url=capture.url, observed_at=capture.fetched_at,
            provider_data=_data(node, hardware, gpus, total, reserved, price))
    except ValidationError as exc:
        return reject(NAME, f"invalid offer: {exc.errors()[0]['msg']}", node, key)


def _data(node: dict[str, Any], hardware: dict[str, Any], gpus: list[dict[str, Any]],
          total: int, reserved: int, price: dict[str, Any]) -> ProviderData:
    data: ProviderData = {"price_basis": "per GPU", "gpus_total": total,
                          "gpus_reserved": reserved}
    for field in ("cluster_name", "status", "supplier_id", "reserved",
                  "has_persistent_storage"):
        if is_scalar(node.get(field)):
            data[field] = node[field]
    if is_scalar(gpus[0].get("interface")):
        data["gpu_interface"] = gpus[0]["interface"]
    if is_scalar(price.get("agent")):
        data["price_agent"] = price["agent"]
    cpus = [c for c in as_list(hardware.get("cpus")) if isinstance(c, dict)]
    if cpus and is_scalar(cpus[0].get("model")):
        data["node_cpu_model"] = cpus[0]["model"]
    for name, part, field in (("node_vcpus", cpus, "virtual_cores"),
                              ("node_ram_gb", hardware.get("ram"), "capacity"),
                              ("node_storage_gb", hardware.get("storage"), "capacity")):
        amounts = [positive_number(as_dict(p).get(field)) for p in as_list(part)]
        if amounts and all(a is not None for a in amounts):
            data[name] = sum(a for a in amounts if a is not None)
    return data


# -- on-demand rental options -------------------------------------------------------------------


def _read_options(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    options = json_body(NAME, capture)
    if not isinstance(options, list):
        raise parse_error(NAME, capture, "expected a JSON array of rental options")
    require_fields(NAME, capture, options, OPTION_REQUIRED, "rental option")
    unknown = sorted({k for o in options if isinstance(o, dict) for k in o
                      if k.endswith("PerHourCents") and k not in (CUSTOMER_PRICE, SUPPLIER_COST)})
    if unknown:  # a new price (a tier?) that would be dropped unseen
        raise parse_error(NAME, capture, f"unknown price field {unknown[0]}", unknown[0])
    offers, rejects = split_results(_option(o, capture) for o in options)
    offers, twice = one_price_per_key(NAME, offers,
                                      repeat_reason="rental option listed twice in one response")
    return offers, [*rejects, *twice]


def _option(option: Any, capture: Capture) -> ParsedOffer | Reject:
    if not isinstance(option, dict):
        return reject(NAME, f"rental option is not an object: {type(option).__name__}", option)
    raw = {k: v for k, v in option.items() if k != SUPPLIER_COST}
    gpu, form, region = (option.get(f) for f in ("gpuType", "gpuFormFactor", "region"))
    if not (isinstance(gpu, str) and gpu.strip() and isinstance(form, str) and form.strip()
            and isinstance(region, str) and region.strip()):
        return reject(NAME, "rental option without gpuType, gpuFormFactor and region", raw)
    count = _count(option.get("gpuCount"))
    if not count:
        return reject(NAME, f"gpuCount is not a count of GPUs: {option.get('gpuCount')!r}", raw)
    machine = option.get("machineType") if is_scalar(option.get("machineType")) else None
    key = f"{region}|{gpu}-{form}|{count}x|{machine}|{PricingModel.ON_DEMAND.value}"
    cents = positive_number(option.get(CUSTOMER_PRICE))
    if cents is None:
        return reject(NAME, f"{CUSTOMER_PRICE} is not a price: "
                      f"{option.get(CUSTOMER_PRICE)!r}", raw, key)
    available = _count(option.get("totalAvailable"))
    if option.get("enabled") is False:
        stock = Availability.OUT_OF_STOCK
    elif available is None:
        stock = Availability.UNKNOWN
    else:
        stock = Availability.IN_STOCK if available > 0 else Availability.OUT_OF_STOCK
    node = as_dict(as_list(option.get("nodes"))[0]) if as_list(option.get("nodes")) else {}
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=None,
            gpu_label=f"{gpu.upper()} {form.upper()}", gpu_count=count,
            pricing_model=PricingModel.ON_DEMAND, price_per_hour=cents / CENTS_PER_DOLLAR,
            currency="USD", price_kind=PriceKind.LISTED, region=region,
            vcpus=positive_number(node.get("vcpuCount")),
            ram_gb=positive_number(node.get("ramGb")),
            disk_gb=positive_number(node.get("storageGb")),
            availability=stock, available_count=available, source_url=capture.url,
            observed_at=capture.fetched_at, provider_data=_option_data(option, node))
    except ValidationError as exc:
        return reject(NAME, f"invalid offer: {exc.errors()[0]['msg']}", raw, key)


def _option_data(option: dict[str, Any], node: dict[str, Any]) -> ProviderData:
    data: ProviderData = {"price_basis": "per option"}
    for name, field in (("machine_type", "machineType"), ("enabled", "enabled"),
                        ("connection_type", "connectionType"),
                        ("ethernet_variant", "ethernetVariant")):
        if is_scalar(option.get(field)) and option.get(field) is not None:
            data[name] = option[field]
    for name, field in (("cpu_model", "cpuModel"), ("cpu_cores", "cpuCount")):
        if is_scalar(node.get(field)) and node.get(field) is not None:
            data[name] = node[field]
    return data


def _count(value: Any) -> int | None:
    """A non-negative JSON integer (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value
