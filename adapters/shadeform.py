"""Shadeform: GPU instance types of many clouds through one API, `GET /v1/instances/types`.

Shadeform is an aggregator: each `instance_types[]` entry is one machine of an underlying
`cloud` (massedcompute, hyperstack, lambdalabs, and smaller clouds seen nowhere else in
gpuscout: excesssupply, denvr, boostrun, imwt, ...) under Shadeform's standardized name
(`shade_instance_type`: "A6000", "H100x8", "A100_80G") and the cloud's own
(`cloud_instance_type`: "gpu_1x_a6000"), with `configuration` (GPUs, VRAM, vCPUs, RAM, disk,
interconnect), one `hourly_price` and the regions it is offered in (`availability[]`).

The listing answers without a key (public collectors read it keyless, and Shadeform's own
homepage embeds the same data): `fetch()` sends `SHADEFORM_API_KEY` as `X-API-KEY` only when it
is set.

Reading rules (adapters/snapshots/shadeform/PROVENANCE.md):
- One offer per entry and region, on-demand, priced `hourly_price` US cents for the whole
  instance ("$32.80/hr" for an 8xH100 at 3280). The cloud that sells the machine through
  Shadeform is `provider_data["resold_from"]` (Shadeform's id of it; also kept as `cloud`),
  with its instance type and region (`cloud_instance_type`, `cloud_region`), so that a re-sold
  cloud is visible and the same machine read from that cloud directly can be recognised.
- `availability[].available` is in stock or out of stock in that region.
- Label: `gpu_type` plus `interconnect` ("H100 pcie", "A6000 pcie"): the form factor is part
  of the GPU; where the `gpu_type` names the form itself ("H100_nvl", which Shadeform also calls
  "pcie") the label is the `gpu_type` alone. Shadeform also says "pcie" for GPUs of no PCIe form
  (GH200, Gaudi 2); the catalog refuses those labels as contradictory, so they are reported as
  unknown rather than guessed. An entry whose `shade_instance_type` does not begin with its
  `gpu_type` contradicts itself and is rejected.
- An availability entry carrying a `rental_type` other than "on_demand" is not read (that
  layout is not documented) and is reported.
- The configuration is read from `configuration`; the top level repeats it (in 2024 guides and
  in the 2026 data alike), and older entries lack `deployment_type`, `nvlink` and
  `gpu_manufacturer`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from pydantic import ValidationError

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    as_dict,
    as_list,
    envelope,
    is_scalar,
    newest_wins,
    one_price_per_key,
    positive_number,
    reject,
    require_fields,
    stripped_text,
)
from gpuscout.core.models import (
    Availability,
    Interconnect,
    ParsedOffer,
    ParseResult,
    PriceKind,
    PricingModel,
    ProviderData,
    Reject,
)

TYPES_URL = "https://api.shadeform.ai/v1/instances/types"

NAME = "shadeform"
SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = ("SHADEFORM_API_KEY",)
OPTIONAL_CREDENTIALS = CREDENTIALS  # sent only when set: the listing answers without it

REQUIRED = ("cloud", "shade_instance_type", "configuration", "hourly_price", "availability")
CENTS_PER_DOLLAR = 100
ON_DEMAND = "on_demand"
AVAILABLE = {True: Availability.IN_STOCK, False: Availability.OUT_OF_STOCK}
# gpu_type suffixes that name the card's form (the H100 NVL, a PCIe pair Shadeform calls
# "pcie"): the label is the gpu_type alone, so it does not claim the plain PCIe card.
FORM_NAMED = ("_nvl",)


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    key = creds.get("SHADEFORM_API_KEY")
    # No filter: every type with its availability, available or not (closing what vanished).
    return [client.get(TYPES_URL, headers={"X-API-KEY": key} if key else None)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every listing; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _read)


def _read(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    _, types = envelope(NAME, capture, "instance_types")
    # A renamed field shows as a field that no entry has: refuse, don't emit nothing.
    require_fields(NAME, capture, types, REQUIRED, "instance type")
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for entry in types:
        good, bad = _offers(entry, capture)
        offers += good
        rejects += bad
    offers, twice = one_price_per_key(NAME, offers,
                                      repeat_reason="instance type listed twice in a region")
    return offers, [*rejects, *twice]


class _Entry(NamedTuple):
    """The fields of one instance type that every offer of it needs, checked."""

    cloud: str
    shade_type: str
    config: dict[str, Any]
    gpus: int
    label: str
    form: str | None
    price: float
    regions: list[Any]


def _offers(entry: Any, capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    checked = _check(entry)
    if checked is None:
        return [], []  # a CPU instance
    if isinstance(checked, str):
        return [], [reject(NAME, checked, entry)]
    data = _data(entry, checked.config)
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for place in checked.regions:
        result = _region_offer(checked, as_dict(place), place, data, capture)
        if isinstance(result, ParsedOffer):
            offers.append(result)
        else:
            reason, key = result
            rejects.append(reject(NAME, reason, entry, key))
    return offers, rejects


def _check(entry: Any) -> _Entry | str | None:
    """The entry's checked fields; a reason when it cannot be read; None for a CPU type."""
    if not isinstance(entry, dict):
        return f"instance type is not an object: {type(entry).__name__}"
    cloud, shade_type = entry.get("cloud"), entry.get("shade_instance_type")
    if not (isinstance(cloud, str) and cloud and isinstance(shade_type, str) and shade_type):
        return f"entry without cloud and shade_instance_type: {cloud!r}, {shade_type!r}"
    config = as_dict(entry.get("configuration"))
    gpus = config.get("num_gpus")
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
        return f"configuration.num_gpus is not a count: {gpus!r}"
    if gpus == 0:
        return None
    gpu_type = config.get("gpu_type")
    if not isinstance(gpu_type, str) or not gpu_type.strip():
        return f"configuration.gpu_type is not a name: {gpu_type!r}"
    if not shade_type.lower().startswith(gpu_type.lower()):
        return f"shade_instance_type {shade_type!r} does not name gpu_type {gpu_type!r}"
    cents = positive_number(entry.get("hourly_price"))
    if cents is None:
        return f"hourly_price is not a price: {entry.get('hourly_price')!r}"
    regions = entry.get("availability")
    if not isinstance(regions, list) or not regions:
        return f"offered in no region: {regions!r}"
    form = stripped_text(config.get("interconnect"))
    named = gpu_type.lower().endswith(FORM_NAMED)  # the name settles the form: no "pcie" added
    return _Entry(cloud, shade_type, config, gpus,
                  f"{gpu_type} {form}" if form and not named else gpu_type,
                  form, cents / CENTS_PER_DOLLAR, regions)


def _region_offer(e: _Entry, place: dict[str, Any], raw: Any, data: ProviderData,
                  capture: Capture) -> ParsedOffer | tuple[str, str | None]:
    """The offer of one availability entry, or (reason, offer key) for its reject."""
    region = stripped_text(place.get("region"))
    if region is None:
        return f"availability entry without a region: {raw!r}", None
    rental = place.get("rental_type", ON_DEMAND)
    if rental != ON_DEMAND:
        return f"rental_type {rental!r} in {region} is not read", None
    available = place.get("available")
    key = f"{e.cloud}|{e.shade_type}|{region}|{PricingModel.ON_DEMAND.value}"
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=e.shade_type, gpu_label=e.label,
            gpu_count=e.gpus, vram_gb_per_gpu=positive_number(e.config.get("vram_per_gpu_in_gb")),
            pricing_model=PricingModel.ON_DEMAND, price_per_hour=e.price, currency="USD",
            price_kind=PriceKind.LISTED, region=region,
            vcpus=positive_number(e.config.get("vcpus")),
            ram_gb=positive_number(e.config.get("memory_in_gb")),
            disk_gb=positive_number(e.config.get("storage_in_gb")),
            interconnect=_interconnect(e.gpus, e.form, e.config.get("nvlink")),
            availability=AVAILABLE.get(available, Availability.UNKNOWN)
            if isinstance(available, bool) else Availability.UNKNOWN,
            source_url=capture.url, observed_at=capture.fetched_at,
            provider_data={**data, "cloud_region": region,
                           "region_name": stripped_text(place.get("display_name"))})
    except ValidationError as exc:
        return f"invalid offer: {exc.errors()[0]['msg']}", key


def _interconnect(gpus: int, form: str | None, nvlink: Any) -> Interconnect | None:
    """What the entry states about GPU-to-GPU links; None when it says nothing."""
    if gpus == 1:
        return Interconnect.SINGLE
    if nvlink is True:
        return Interconnect.NVLINK
    if nvlink is False and form is not None and form.lower() == "pcie":
        return Interconnect.PCIE
    return None


def _data(entry: dict[str, Any], config: dict[str, Any]) -> ProviderData:
    data: ProviderData = {"cloud": entry["cloud"], "resold_from": entry["cloud"],
                          "price_basis": "per instance"}
    for name, value in (("cloud_instance_type", entry.get("cloud_instance_type")),
                        ("deployment_type", entry.get("deployment_type")),
                        ("gpu_type", config.get("gpu_type")),
                        ("gpu_interconnect", config.get("interconnect")),
                        ("nvlink", config.get("nvlink")),
                        ("gpu_manufacturer", config.get("gpu_manufacturer"))):
        if is_scalar(value):
            data[name] = value
    boot = as_dict(entry.get("boot_time"))
    for field in ("min_boot_in_sec", "max_boot_in_sec"):
        if positive_number(boot.get(field)) is not None:
            data[field] = boot[field]
    os_options = [o for o in as_list(config.get("os_options")) if isinstance(o, str)]
    if os_options:
        data["os_options"] = ", ".join(os_options)
    return data
