"""TensorDock: GPU prices per deployment location from the v2 API, `GET /api/v2/locations`.

The body is `{"data": {"locations": [...]}}`. A location (`id`, `city`, `stateprovince`,
`country`, `tier`) lists the GPU models deployable there; each GPU entry names the model by its
`v0Name` (`geforcertx4090-pcie-24gb`, the id the create-instance request takes) and
`displayName`, and gives `max_count` (GPUs deployable at the location), `price_per_hr` and the
ceilings `resources.max_vcpus` / `max_ram_gb` / `max_storage_gb`. The provider's documentation
example adds `pricing` (`per_vcpu_hr`, `per_gb_ram_hr`, `per_gb_storage_hr`) and
`network_features` (adapters/snapshots/tensordock/PROVENANCE.md).

Reading rules:
- `price_per_hr` is ONE GPU's hourly price, in USD: vCPUs, RAM and storage are billed on top at
  the `pricing` rates (an H100 at 2.2 with `max_count` 8 cannot be a price for eight). A machine
  price cannot be composed without inventing how many vCPUs and GB come with a GPU, so each entry
  becomes an offer of one GPU priced by the GPU alone, flagged
  `provider_data["price_scope"] = "gpu_component"`; the add-on rates and the resource ceilings go
  into `provider_data`, not into the price.
- Hosts set these prices (TensorDock is a marketplace), so they are observed quotes; the listing
  is of on-demand VMs (spot is a per-VM bid, not listed here).
- `max_count` is the stock: 0 is out of stock. VRAM per GPU is the size the `v0Name` ends with
  ("-24gb"). The region is the location as TensorDock writes it ("Chubbuck, Idaho, United
  States"); the offer key is location id + model.
- The listing is one response (no paging). A GPU entry without a model or a price is a Reject;
  a listing with no location at all is read as incomplete (it closes nothing).
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
    as_dict,
    envelope,
    finite_number,
    is_scalar,
    member,
    newest_wins,
    one_price_per_key,
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
    ProviderData,
    Reject,
)

LOCATIONS_URL = "https://dashboard.tensordock.com/api/v2/locations"
TOKEN_VAR = "TENSORDOCK_API_TOKEN"
PRICE_SCOPE = "gpu_component"

NAME = "tensordock"
SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = (TOKEN_VAR,)

LOCATION_FIELDS = ("id", "gpus")
GPU_FIELDS = ("v0Name", "price_per_hr")
VRAM_SUFFIX = re.compile(r"-(\d+)gb$", re.IGNORECASE)
ADDON_RATES = ("per_vcpu_hr", "per_gb_ram_hr", "per_gb_storage_hr")
CEILINGS = ("max_vcpus", "max_ram_gb", "max_storage_gb")


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    token = creds.get(TOKEN_VAR)
    if not token:
        raise MissingCredentialsError(NAME, TOKEN_VAR)
    return [client.get(LOCATIONS_URL, headers={"Authorization": f"Bearer {token}"})]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _read)


def _read(capture: Capture) -> tuple[list[ParsedOffer], list[Reject], bool]:
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    locations = _locations(capture)
    for location in locations:
        good, bad = _location_offers(location, capture)
        offers += good
        rejects += bad
    offers, twice = one_price_per_key(NAME, offers,
                                      repeat_reason="GPU listed twice at one location")
    # No location at all is no evidence that every offer vanished: read as incomplete.
    return offers, [*rejects, *twice], bool(locations)


# -- body -------------------------------------------------------------------------------------


def _locations(capture: Capture) -> list[Any]:
    _, data = envelope(NAME, capture, "data", dict)
    locations = member(NAME, capture, data, "locations")
    # A renamed field shows as a field that no record has: refuse, don't read an empty listing.
    require_fields(NAME, capture, locations, LOCATION_FIELDS, "location")
    gpus = [g for loc in locations if isinstance(loc, dict) and isinstance(loc.get("gpus"), list)
            for g in loc["gpus"]]
    require_fields(NAME, capture, gpus, GPU_FIELDS, "GPU entry")
    return locations


# -- one location -----------------------------------------------------------------------------


def _location_offers(location: Any, capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    if not isinstance(location, dict):
        return [], [reject(NAME, f"location is not an object: {type(location).__name__}",
                           location)]
    loc_id = location.get("id")
    if not isinstance(loc_id, str) or not loc_id.strip():
        return [], [reject(NAME, "location without an id", location)]
    gpus = location.get("gpus")
    if not isinstance(gpus, list):
        return [], [reject(NAME, f"location {loc_id}: gpus is not a list: {gpus!r}", location)]
    region = _place(location)
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for gpu in gpus:
        result = _offer(gpu, location, loc_id, region, capture)
        if isinstance(result, ParsedOffer):
            offers.append(result)
        else:
            rejects.append(result)
    return offers, rejects


def _place(location: dict[str, Any]) -> str | None:
    parts = [location.get(k) for k in ("city", "stateprovince", "country")]
    text = ", ".join(p.strip() for p in parts if isinstance(p, str) and p.strip())
    return text or None


def _offer(gpu: Any, location: dict[str, Any], loc_id: str, region: str | None,
           capture: Capture) -> ParsedOffer | Reject:
    if not isinstance(gpu, dict):
        return reject(NAME, f"location {loc_id}: GPU entry is not an object", gpu)
    model = gpu.get("v0Name")
    if not isinstance(model, str) or not model.strip():
        return reject(NAME, f"location {loc_id}: GPU entry without a v0Name", gpu)
    key = f"{loc_id}|{model}|{PricingModel.ON_DEMAND.value}"
    price = positive_number(gpu.get("price_per_hr"))
    if price is None:
        return reject(NAME, f"price_per_hr is not a price: {gpu.get('price_per_hr')!r}", gpu, key)
    stock = gpu.get("max_count")
    count = stock if isinstance(stock, int) and not isinstance(stock, bool) and stock >= 0 \
        else None
    if count is None:
        availability = Availability.UNKNOWN
    else:
        availability = Availability.IN_STOCK if count > 0 else Availability.OUT_OF_STOCK
    match = VRAM_SUFFIX.search(model)
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=None, gpu_label=model, gpu_count=1,
            vram_gb_per_gpu=float(match.group(1)) if match else None,
            pricing_model=PricingModel.ON_DEMAND, price_per_hour=price, currency="USD",
            price_kind=PriceKind.OBSERVED, region=region, availability=availability,
            available_count=count, source_url=capture.url, observed_at=capture.fetched_at,
            provider_data=_data(gpu, location, loc_id))
    except ValidationError as exc:
        return reject(NAME, f"invalid offer: {exc.errors()[0]['msg']}", gpu, key)


def _data(gpu: dict[str, Any], location: dict[str, Any], loc_id: str) -> ProviderData:
    data: ProviderData = {"price_scope": PRICE_SCOPE, "price_basis": "per GPU",
                          "location_id": loc_id}
    for field, value in (("display_name", gpu.get("displayName")),
                         ("tier", location.get("tier"))):
        if is_scalar(value):
            data[field] = value
    for field in CEILINGS:
        value = finite_number(as_dict(gpu.get("resources")).get(field))
        if value is not None:
            data[field] = value
    for field in ADDON_RATES:
        value = finite_number(as_dict(gpu.get("pricing")).get(field))
        if value is not None:
            data[f"usd_{field}"] = value
    for field, value in as_dict(gpu.get("network_features")).items():
        if isinstance(value, bool):
            data[field] = value
    return data
