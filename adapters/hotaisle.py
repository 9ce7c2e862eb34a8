"""Hot Aisle: AMD GPU virtual machines and bare-metal servers from the team availability lists.

Two listings, both `GET` with `Authorization: Token <key>` and the team handle in the path:
`/api/teams/{team}/virtual_machines/available/` and `/api/teams/{team}/bare_metal/available/`.
Each is a JSON array of available machine types (Hot Aisle's swagger: AvailableVirtualMachineTypes
and AvailableBareMetalTypes): `Quantity` available now, `MinimumReservationMinutes`,
`OnDemandPrice` and `Specs` (`cpu_cores`, `ram_capacity`, `disk_capacity`, `cpus`, `gpus`).
There is no type name, id or location in them; one on-demand offer per listed type.

Reading rules (adapters/snapshots/hotaisle/PROVENANCE.md):
- `OnDemandPrice` is "Price per hour for on-demand usage in US Cents" (swagger), for the whole
  machine: the 8-GPU bare-metal fixture's 2712 is $27.12/h.
- `ram_capacity` and `disk_capacity` are "Total ... in bytes" in binary units (the fixture's
  240 * 1024**3 is the "240" GB gpuhunt reads), so GB = bytes / 2**30.
- `cpu_cores` is "Total CPU Cores": the vCPUs of a VM; on bare metal they are physical cores
  (2 x 52 for two Xeon 8470), so vCPUs stay unstated there and the cores go to provider_data.
- `Specs.gpus` is a list of {count, manufacturer, model}; one entry is the GPU of the offer,
  none is a CPU-only machine (skipped), two different models are rejected.
- A listing whose body is `null` has nothing available (gpuhunt: "The API returns null instead
  of an empty list when nothing is available").
- The API states no region (Hot Aisle has a single location), so `region` is left unstated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import ValidationError

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    as_dict,
    finite_number,
    json_body,
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
    PricingModel,
    ProviderData,
    Reject,
)

API_URL = "https://admin.hotaisle.app/api"
KEY_VAR = "HOTAISLE_API_KEY"
TEAM_VAR = "HOTAISLE_TEAM_HANDLE"

NAME = "hotaisle"
SOURCE_KIND: SourceKind = "api"
# Both required. The team handle is part of the URL and is masked like a secret: a live
# recording keeps /teams/REDACTED/...; the bundled snapshot lists the URLs the offline refresh
# requests without credentials (/teams/replay-placeholder/..., the refresh's placeholder).
CREDENTIALS: tuple[str, ...] = (KEY_VAR, TEAM_VAR)

Kind = Literal["vm", "bare_metal"]
PATHS: dict[Kind, str] = {"vm": "virtual_machines/available/",
                          "bare_metal": "bare_metal/available/"}
REQUIRED = ("OnDemandPrice", "Specs")
REQUIRED_SPECS = ("cpu_cores", "ram_capacity", "gpus")
CENTS = 100
GIB = 2**30


def listing_url(team: str, kind: Kind) -> str:
    return f"{API_URL}/teams/{team}/{PATHS[kind]}"


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    for var in CREDENTIALS:
        if not creds.get(var):
            raise MissingCredentialsError(NAME, var)
    key, team = creds[KEY_VAR], creds[TEAM_VAR]
    headers = {"Authorization": f"Token {key}", "Accept": "application/json"}
    return [client.get(listing_url(team, kind), headers=headers) for kind in PATHS]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from both listings; when captures repeat an offer key, the newest one wins. The
    result is incomplete unless both listings were read."""
    result = newest_wins(captures, _read)
    kinds = {_kind(c) for c in captures}
    return result.model_copy(update={"complete": result.complete and kinds == set(PATHS)})


def _read(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    kind = _kind(capture)
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for item in _items(capture):
        result = _offer(item, kind, capture)
        if isinstance(result, ParsedOffer):
            offers.append(result)
        elif result is not None:
            rejects.append(result)
    offers, twice = one_price_per_key(NAME, offers,
                                      repeat_reason="machine type listed twice in one response")
    return offers, [*rejects, *twice]


# -- body -------------------------------------------------------------------------------------


def _kind(capture: Capture) -> Kind:
    path = capture.url.split("?", 1)[0]
    if path.startswith(f"{API_URL}/teams/"):
        for kind, tail in PATHS.items():
            if path.endswith("/" + tail):
                return kind
    raise parse_error(NAME, capture, "not a Hot Aisle availability listing URL")


def _items(capture: Capture) -> list[Any]:
    doc = json_body(NAME, capture)
    if doc is None:
        return []  # nothing available
    if not isinstance(doc, list):
        raise parse_error(NAME, capture, "expected a JSON array of available machine types")
    # A field renamed upstream shows as a field that no item has: refuse, don't emit nothing.
    require_fields(NAME, capture, doc, REQUIRED, "machine type")
    specs = [item["Specs"] for item in doc if isinstance(item, dict) and "Specs" in item]
    require_fields(NAME, capture, specs, REQUIRED_SPECS, "Specs")
    return doc


# -- one machine type -------------------------------------------------------------------------


def _offer(item: Any, kind: Kind, capture: Capture) -> ParsedOffer | Reject | None:
    if not isinstance(item, dict):
        return reject(NAME, f"machine type is not an object: {type(item).__name__}", item)
    specs = item.get("Specs")
    if not isinstance(specs, dict):
        return reject(NAME, f"Specs is not an object: {specs!r}", item)
    gpus = specs.get("gpus")
    if gpus is None or gpus == []:
        return None  # a CPU-only machine
    if not isinstance(gpus, list) or not all(isinstance(g, dict) for g in gpus):
        return reject(NAME, f"Specs.gpus is not a list of GPUs: {gpus!r}", item)
    names = [g.get("model") for g in gpus]
    if not all(isinstance(m, str) and m.strip() for m in names):
        return reject(NAME, f"GPU without a model: {names!r}", item)
    models = {" ".join(m.split()) for m in names}
    if len(models) != 1:
        return reject(NAME, f"machine with several GPU models: {sorted(models)}", item)
    model = models.pop()
    counts = [finite_number(g.get("count")) for g in gpus]
    if any(c is None or c <= 0 or c != int(c) for c in counts):
        return reject(NAME, f"GPU count is not a count: {[g.get('count') for g in gpus]!r}", item)
    count = int(sum(c for c in counts if c is not None))
    cents = positive_number(item.get("OnDemandPrice"))
    if cents is None:
        return reject(NAME, f"OnDemandPrice is not a price: {item.get('OnDemandPrice')!r}", item)
    cores = positive_number(specs.get("cpu_cores"))
    ram, disk = (positive_number(specs.get(f)) for f in ("ram_capacity", "disk_capacity"))
    quantity = finite_number(item.get("Quantity"))
    if quantity is not None and (quantity < 0 or quantity != int(quantity)):
        return reject(NAME, f"Quantity is not a count: {item.get('Quantity')!r}", item)
    ram_gb = ram / GIB if ram is not None else None
    disk_gb = disk / GIB if disk is not None else None
    # No type name exists: the key is the machine's shape (kind, GPU, cores, GB of RAM, disk).
    key = "|".join([kind, model, str(count), _shape(cores), _shape(ram_gb), _shape(disk_gb),
                    PricingModel.ON_DEMAND.value])
    data: ProviderData = {
        "kind": kind,
        "gpu_manufacturer": _text(gpus[0].get("manufacturer")),
        "cpu_model": _cpu_model(specs.get("cpus")),
        "cpu_cores": cores,
        "minimum_reservation_minutes": finite_number(item.get("MinimumReservationMinutes")),
        "on_demand_price_cents": cents,
    }
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=None, gpu_label=model,
            gpu_count=count, pricing_model=PricingModel.ON_DEMAND,
            price_per_hour=cents / CENTS, currency="USD",
            vcpus=cores if kind == "vm" else None,
            ram_gb=ram_gb, disk_gb=disk_gb,
            availability=_availability(quantity),
            available_count=int(quantity) if quantity is not None else None,
            source_url=capture.url, observed_at=capture.fetched_at, provider_data=data,
        )
    except ValidationError as exc:
        return reject(NAME, f"invalid offer: {exc.errors()[0]['msg']}", item, key)


def _shape(value: float | None) -> str:
    return "-" if value is None else f"{value:.12g}"


def _availability(quantity: float | None) -> Availability:
    if quantity is None:
        return Availability.UNKNOWN
    return Availability.IN_STOCK if quantity > 0 else Availability.OUT_OF_STOCK


def _cpu_model(cpus: Any) -> str | None:
    """The CPU model: `cpus` is one object on a VM and a list of them on bare metal."""
    entries = cpus if isinstance(cpus, list) else [cpus]
    names = sorted({m for m in (as_dict(c).get("model") for c in entries)
                    if isinstance(m, str) and _text(m)})
    return " + ".join(names) or None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
