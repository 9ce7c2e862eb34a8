"""Vultr: Cloud GPU (`vcg`) and bare-metal GPU plans from the public plan listings, per location.

`GET /v2/plans?type=all` lists every VM plan; the GPU ones carry `gpu_type` ("NVIDIA_A100") and
`gpu_vram_gb`, the VRAM the plan gets. `GET /v2/plans-metal` lists bare-metal plans, whose GPU
is named only in the plan id (`vbm-112c-2048gb-8-h100-gpu`: 8 GPUs; `vbm-72c-480gb-gh200-gpu`:
one). One offer per plan and location (`locations`), priced by `hourly_cost` in USD for the whole
plan; a bare-metal plan with `hourly_cost_preemptible` also gets a spot offer.

Reading rules (adapters/snapshots/vultr/PROVENANCE.md):
- A Cloud GPU plan is a share of one card when `gpu_vram_gb` is smaller than the card's memory
  (`vcg-a100-1c-6g-4vram`: 4 of the A100's 80 GB). Its GPU count is that share (0.05), honestly
  fractional, and its VRAM per GPU is left unstated. A plan whose VRAM is not a whole number of
  cards, or whose card size is not known here, is rejected with the reason.
- `ram` is MB (6144 = 6 GB), `disk` GB per disk, times `disk_count`.
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
    parse_error,
    positive_number,
    reject,
    require_fields,
)
from gpuscout.core.models import ParsedOffer, ParseResult, PricingModel, ProviderData, Reject

PLANS_URL = "https://api.vultr.com/v2/plans"
METAL_URL = "https://api.vultr.com/v2/plans-metal"
PER_PAGE = 500  # more than Vultr's whole plan list, so one page each (checked with meta.total)

NAME = "vultr"
SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = ()  # plan listings are public

# Memory of one whole card per Cloud GPU `gpu_type`: the nominal VRAM of the GPU that the alias
# table maps the type to (pipeline/data/gpu_aliases.csv). For the A100 the recorded payload
# itself has the whole-card plan `vcg-a100-12c-120g-80vram`.
CARD_VRAM_GB: dict[str, float] = {
    "NVIDIA_A100": 80, "NVIDIA_A40": 48, "NVIDIA_L40S": 48, "NVIDIA_H100": 80,
    "AMD_MI300X": 192,
}
REQUIRED = ("id", "hourly_cost", "locations")
# Bare-metal GPU plan ids: vbm-<cores>c-<ram>gb[-<count>]-<gpu>-gpu
METAL_GPU_ID = re.compile(r"^vbm-\d+c-\d+gb-(?:(?P<count>\d+)-)?(?P<gpu>[a-z0-9]+)-gpu$")
MB_PER_GB = 1024


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PLANS_URL, params={"type": "all", "per_page": PER_PAGE}),
            client.get(METAL_URL, params={"per_page": PER_PAGE})]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every listing; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _read)


def _read(capture: Capture) -> tuple[list[ParsedOffer], list[Reject], bool]:
    metal = _is_metal(capture)
    plans, whole = _plans(capture, metal)
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for plan in plans:
        good, bad = _metal_offers(plan, capture) if metal else _vm_offers(plan, capture)
        offers += good
        rejects += bad
    return offers, rejects, whole


# -- body -------------------------------------------------------------------------------------


def _is_metal(capture: Capture) -> bool:
    path = capture.url.split("?", 1)[0].rstrip("/")
    if path == METAL_URL:
        return True
    if path == PLANS_URL:
        return False
    raise parse_error(NAME, capture, "not a Vultr plan listing URL")


def _plans(capture: Capture, metal: bool) -> tuple[list[Any], bool]:
    """The plan list of a listing, and whether it holds every plan (`meta.total`, if given)."""
    doc, plans = envelope(NAME, capture, "plans_metal" if metal else "plans")
    # A field renamed upstream shows as a field that no plan has: refuse, don't emit nothing.
    gpu_fields = () if metal else ("gpu_type", "gpu_vram_gb")
    require_fields(NAME, capture, plans, REQUIRED + gpu_fields, "plan")
    meta = doc.get("meta")
    total = meta.get("total") if isinstance(meta, dict) else None
    return plans, not (isinstance(total, int) and total > len(plans))


# -- one plan ---------------------------------------------------------------------------------


def _vm_offers(plan: Any, capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    if not isinstance(plan, dict):
        return [], [reject(NAME, f"plan is not an object: {type(plan).__name__}", plan)]
    gpu_type, stated = plan.get("gpu_type"), plan.get("gpu_vram_gb")
    if not gpu_type and not stated:
        return [], []  # a CPU plan
    vram = positive_number(stated)
    if not isinstance(gpu_type, str) or vram is None:
        return [], [reject(NAME, f"GPU plan without gpu_type and gpu_vram_gb: {gpu_type!r}, "
                           f"{stated!r}", plan)]
    card = CARD_VRAM_GB.get(gpu_type)
    if card is None:
        return [], [reject(NAME, f"whole-card VRAM of {gpu_type} unknown: a share cannot be told "
                           "from whole GPUs", plan)]
    share = vram / card
    if share >= 1 and abs(share - round(share)) > 1e-9:
        return [], [reject(NAME, f"gpu_vram_gb {vram:g} is not a whole number of {card:g} GB "
                           f"{gpu_type} cards", plan)]
    fractional = share < 1
    count = share if fractional else round(share)
    data: ProviderData = {"plan_type": plan.get("type"), "gpu_vram_gb": stated,
                          "monthly_cost": positive_number(plan.get("monthly_cost"))}
    return _per_location(
        plan, capture, label=gpu_type, count=count,
        vram_per_gpu=None if fractional else vram / count,
        vcpus=plan.get("vcpu_count"), data=data,
        prices=[(PricingModel.ON_DEMAND, "hourly_cost")])


def _metal_offers(plan: Any, capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    if not isinstance(plan, dict):
        return [], [reject(NAME, f"plan is not an object: {type(plan).__name__}", plan)]
    plan_id = plan.get("id")
    if not isinstance(plan_id, str) or not plan_id.endswith("-gpu"):
        return [], []  # a CPU bare-metal plan
    match = METAL_GPU_ID.match(plan_id)
    if match is None:
        return [], [reject(NAME, f"cannot read the GPU count from plan id {plan_id!r}", plan)]
    count = int(match["count"]) if match["count"] else 1
    if count == 0:
        return [], [reject(NAME, f"plan id {plan_id!r} says 0 GPUs", plan)]
    # On bare metal `type` is the disk type ("NVMe"), not the plan family.
    data: ProviderData = {"disk_type": plan.get("type"), "cpu_model": plan.get("cpu_model"),
                          "cpu_cores": positive_number(plan.get("cpu_cores")),
                          "monthly_cost": positive_number(plan.get("monthly_cost")),
                          "monthly_cost_preemptible": positive_number(
                              plan.get("monthly_cost_preemptible"))}
    prices = [(PricingModel.ON_DEMAND, "hourly_cost")]
    if "hourly_cost_preemptible" in plan:
        prices.append((PricingModel.SPOT, "hourly_cost_preemptible"))
    # vCPUs are hardware threads on bare metal (cpu_count is cores).
    return _per_location(plan, capture, label=plan_id, count=count, vram_per_gpu=None,
                         vcpus=plan.get("cpu_threads"), data=data, prices=prices)


def _per_location(plan: dict[str, Any], capture: Capture, *, label: str, count: float,
                  vram_per_gpu: float | None, vcpus: Any, data: ProviderData,
                  prices: list[tuple[PricingModel, str]],
                  ) -> tuple[list[ParsedOffer], list[Reject]]:
    plan_id = str(plan.get("id") or "")
    if not plan_id:
        return [], [reject(NAME, "plan without an id", plan)]
    locations = plan.get("locations")
    if not isinstance(locations, list) or not all(isinstance(x, str) for x in locations):
        return [], [reject(NAME, f"locations is not a list of codes: {locations!r}", plan)]
    if not locations:
        return [], [reject(NAME, "plan is offered in no location", plan)]
    ram, disk, disks = (positive_number(plan.get(f)) for f in ("ram", "disk", "disk_count"))
    vcpu_count = positive_number(vcpus)
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for model, field in prices:
        price = positive_number(plan.get(field))
        if price is None:
            rejects.append(reject(NAME, f"{field} is not a price: {plan.get(field)!r}", plan))
            continue
        for location in locations:
            key = f"{plan_id}|{location}|{model.value}"
            try:
                offers.append(ParsedOffer(
                    provider=NAME, offer_key=key, instance_type=plan_id, gpu_label=label,
                    gpu_count=count, vram_gb_per_gpu=vram_per_gpu, pricing_model=model,
                    price_per_hour=price, region=location, vcpus=vcpu_count,
                    ram_gb=ram / MB_PER_GB if ram is not None else None,
                    disk_gb=disk * (disks or 1) if disk is not None else None,
                    source_url=capture.url, observed_at=capture.fetched_at,
                    provider_data={**data, "price_field": field},
                ))
            except ValidationError as exc:
                rejects.append(reject(NAME, f"invalid offer: {exc.errors()[0]['msg']}", plan, key))
    return offers, rejects
