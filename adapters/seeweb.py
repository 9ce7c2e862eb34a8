"""Seeweb: Cloud Server GPU plans from the ECS API plan listing `GET /ecs/v2/plans`.

The listing (`{"status": "ok", "plans": [...]}`, the shape of Seeweb's own SDKs: the `ecsapi`
Python package and cloudserver-go-client) holds every Cloud Server plan, CPU-only ones included.
A plan with `gpu` > 0 becomes one on-demand offer per region of `available_regions`, priced by
`hourly_price` for the whole plan. The listing needs a token (`X-APITOKEN` header).

Reading rules (adapters/snapshots/seeweb/PROVENANCE.md):
- `hourly_price` is EUR per hour for the whole plan: Seeweb's product page prints the same
  numbers with "€" (H200, one GPU: "Hourly Cost 2.60 €"); `montly_price` (sic) is kept.
- `cpu`, `ram`, `disk` and `gpu` are strings of numbers: vCPUs, RAM in MB of 1024 ("32768" is
  the 32 GB RAM the page prints), disk in GB, and the GPU count.
- `gpu_label` is the accelerator's name, since 2026 with its memory ("L40s 48GB"; earlier
  "L40s", "H100 80 GB"); a stated memory is the VRAM per GPU, else it is left unstated.
- `available` false marks a plan that is not sold (not a capacity signal): no offer. A plan
  with `gpu` "0" or no `gpu_label` is a CPU plan: skipped.
"""

from __future__ import annotations

import json
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
    positive_decimal,
    positive_number,
    require_fields,
)
from gpuscout.core.errors import MissingCredentialsError
from gpuscout.core.models import ParsedOffer, ParseResult, PricingModel, ProviderData, Reject

PLANS_URL = "https://api.seeweb.it/ecs/v2/plans"
TOKEN_VAR = "SEEWEB_API_TOKEN"
CURRENCY = "EUR"

NAME = "seeweb"
SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = (TOKEN_VAR,)

REQUIRED = ("name", "gpu", "gpu_label", "hourly_price", "available_regions")
MB_PER_GB = 1024
# The memory a label states: "A100 80GB", "H100 80 GB", "RTX PRO 6000 96GB".
LABEL_MEMORY = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*GB\b", re.IGNORECASE)


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    token = creds.get(TOKEN_VAR)
    if not token:
        raise MissingCredentialsError(NAME, TOKEN_VAR)
    return [client.get(PLANS_URL, headers={"X-APITOKEN": token, "Accept": "application/json"})]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every listing; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _read)


def _read(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    plans = _plans(capture)
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for plan in plans:
        good, bad = _plan_offers(plan, capture)
        offers += good
        rejects += bad
    offers, twice = one_price_per_key(NAME, offers,
                                      repeat_reason="plan listed twice in one response")
    return offers, [*rejects, *twice]


# -- body -------------------------------------------------------------------------------------


def _plans(capture: Capture) -> list[Any]:
    doc, plans = envelope(NAME, capture, "plans")
    status = doc.get("status")
    if status is not None and status != "ok":
        raise parse_error(NAME, capture, f"status is {status!r}, not 'ok'", "status")
    # A field renamed upstream shows as a field that no plan has: refuse, don't emit nothing.
    require_fields(NAME, capture, plans, REQUIRED, "plan")
    return plans


# -- one plan ---------------------------------------------------------------------------------


def _plan_offers(plan: Any, capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    if not isinstance(plan, dict):
        return [], [_reject(f"plan is not an object: {type(plan).__name__}", plan)]
    name = plan.get("name")
    if not isinstance(name, str) or not name.strip():
        return [], [_reject("plan without a name", plan)]
    label, gpu = plan.get("gpu_label"), plan.get("gpu")
    if gpu in ("0", 0) or (gpu is None and label is None):
        return [], []  # a CPU plan
    if plan.get("available") is False:
        return [], []  # not sold (the flag is the plan's state, not its stock)
    count = positive_decimal(gpu) if isinstance(gpu, str) else positive_number(gpu)
    if count is None or count != int(count):
        return [], [_reject(f"gpu is not a GPU count: {gpu!r}", plan)]
    if not isinstance(label, str) or not label.strip():
        return [], [_reject(f"GPU plan without a gpu_label: {label!r}", plan)]
    label = " ".join(label.split())
    price = positive_number(plan.get("hourly_price"))
    if price is None:
        return [], [_reject(f"hourly_price is not a price: {plan.get('hourly_price')!r}", plan)]
    regions = _regions(plan.get("available_regions"))
    if regions is None:
        return [], [_reject("available_regions is not a list of regions with a location: "
                            f"{plan.get('available_regions')!r}", plan)]
    if not regions:
        return [], [_reject("plan is offered in no region", plan)]
    memory = LABEL_MEMORY.search(label)
    data: ProviderData = {
        "plan_id": plan.get("id") if isinstance(plan.get("id"), int) else None,
        "host_type": _text(plan.get("host_type")),
        "monthly_price": positive_number(plan.get("montly_price")),
        "windows": plan.get("windows") if isinstance(plan.get("windows"), bool) else None,
    }
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for location, description in regions:
        key = f"{name}|{location}|{PricingModel.ON_DEMAND.value}"
        try:
            offers.append(ParsedOffer(
                provider=NAME, offer_key=key, instance_type=name, gpu_label=label,
                gpu_count=int(count),
                vram_gb_per_gpu=float(memory.group(1)) if memory else None,
                pricing_model=PricingModel.ON_DEMAND, price_per_hour=price, currency=CURRENCY,
                region=location, vcpus=_number(plan.get("cpu")),
                ram_gb=_gb_of_mb(plan.get("ram")), disk_gb=_number(plan.get("disk")),
                source_url=capture.url, observed_at=capture.fetched_at,
                provider_data={**data, "region_description": description},
            ))
        except ValidationError as exc:
            rejects.append(_reject(f"invalid offer: {exc.errors()[0]['msg']}", plan, key))
    return offers, rejects


def _regions(value: Any) -> list[tuple[str, str | None]] | None:
    """(location, description) of each region, in order and once each; None when the value is
    not a list of objects with a location code."""
    if not isinstance(value, list):
        return None
    seen: dict[str, str | None] = {}
    for region in value:
        location = region.get("location") if isinstance(region, dict) else None
        if not isinstance(location, str) or not location.strip():
            return None
        seen.setdefault(location.strip(), _text(region.get("description")))
    return list(seen.items())


def _number(value: Any) -> float | None:
    """A count or size the API prints as a string of digits ("8", "500"), or a JSON number."""
    return positive_decimal(value) if isinstance(value, str) else positive_number(value)


def _gb_of_mb(value: Any) -> float | None:
    mb = _number(value)
    return mb / MB_PER_GB if mb is not None else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _reject(reason: str, raw: Any, key: str | None = None) -> Reject:
    return Reject(provider=NAME, reason=reason, raw=json.dumps(raw, sort_keys=True),
                  offer_key=key)
