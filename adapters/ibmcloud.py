"""IBM Cloud (VPC): GPU profile list prices from the public Global Catalog (no key).

One request: `GET https://globalcatalog.cloud.ibm.com/api/v1/<plan>/pricing/deployment`, the
deployment pricing of the catalog plan of one VPC instance profile. The body is an object
`{"offset", "limit", "count", "resource_count", "resources": [...]}` with one resource per
region the plan is sold in (`deployment_region`, `deployment_location`, `deployment_id`) and
its `metrics` (meters): `metric_id`, `charge_unit` and `charge_unit_quantity` (what one price
buys), `tier_model`, `effective_from` / `effective_until`, and `amounts`, one per country of
the paying account, each with a `currency` and `prices` (`quantity_tier`, `price`). The plan
read is the one of profile `gx3d-160x1792x8h100`; the payload names the profile only inside
its meter ids. Sources and caveats: adapters/snapshots/ibmcloud/PROVENANCE.md.

Reading rules:
- Two meters per region are read: `part-is.instance-hours-<profile>` (on-demand) and
  `part-is.spot-<profile>` (spot). Every other meter is skipped, the reservation meter
  (`part-is.instance-hours-reservation`, a committed term) included: it is never an offer.
- The price is the amount of the `USA` account row, in the currency that row states (USD):
  IBM's own list price in that currency, not a conversion. A meter is read only when its unit
  is `Instance-Hour` for a `charge_unit_quantity` of 1 and it has exactly one quantity tier
  (tier 1): then the price is per hour of the whole instance, all GPUs of the profile together
  (`price_per_hour`; the per-GPU figure is kept in provider_data). Any other unit, quantity or
  tiering, a missing or zero price, no USA row, or a price not in effect when captured is a
  Reject, never a guess.
- GPU label and instance type are the profile name; its GPU count comes from `PROFILES` (the
  payload states none; source in PROVENANCE.md) and the catalog resolves the label through
  core/data/aliases/ibmcloud.csv. A meter of a profile not in `PROFILES` is a Reject.
- A region with no on-demand meter of the profile is a Reject (no spot meter: no spot offer).
  A body without `resources`, with none, or whose regions carry neither meter is a ParseError
  (a reshaped catalog, not an empty market). A `count` beyond the resources received means
  the listing was cut short: the result is incomplete and closes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    as_dict,
    as_list,
    envelope,
    finite_number,
    is_scalar,
    newest_wins,
    one_price_per_key,
    parse_error,
    positive_number,
    reject,
    require_fields,
    split_results,
    stripped_text,
)
from gpuscout.core.models import (
    ParsedOffer,
    ParseResult,
    PriceKind,
    PricingModel,
    ProviderData,
    Reject,
)

PLAN_ID = "99548819-fcbc-486c-8eeb-0355a56b035e"  # the catalog plan of gx3d-160x1792x8h100
PRICING_URL = f"https://globalcatalog.cloud.ibm.com/api/v1/{PLAN_ID}/pricing/deployment"

NAME = "ibmcloud"
SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = ()  # the Global Catalog answers without a token

# profile -> GPUs per instance. IBM's profile documentation lists gx3d-160x1792x8h100 with
# 8x NVIDIA H100 SXM5 (80 GB); the pricing payload carries no GPU count.
PROFILES: dict[str, int] = {"gx3d-160x1792x8h100": 8}

# `part-is.<meter>-<profile>`; a profile name is `<family>-<vcpus>x<memory>x<accelerators>`,
# so "part-is.instance-hours-reservation" is no profile meter.
METER = re.compile(r"part-is\.(?P<meter>instance-hours|spot)-(?P<profile>[a-z0-9]+-\d+x\d+x\w+)")
MODELS = {"instance-hours": PricingModel.ON_DEMAND, "spot": PricingModel.SPOT}
PRICE_COUNTRY = "USA"
INSTANCE_HOUR = "Instance-Hour"

RESOURCE_FIELDS = ("deployment_region", "metrics")
METRIC_FIELDS = ("metric_id", "charge_unit", "charge_unit_quantity", "amounts")
AMOUNT_FIELDS = ("country", "currency", "prices")
PRICE_FIELDS = ("quantity_tier", "price")


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRICING_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _read)


def _read(capture: Capture) -> tuple[list[ParsedOffer], list[Reject], bool]:
    doc, resources = _resources(capture)
    results: list[ParsedOffer | Reject | None] = []
    meters = 0
    for resource in resources:
        region_results, found = _region(resource, capture)
        results += region_results
        meters += found
    if meters == 0:
        raise parse_error(NAME, capture, "no region carries an on-demand or spot meter of a "
                          "GPU profile (part-is.instance-hours-<profile>, part-is.spot-<profile>)",
                          "metric_id")
    offers, rejects = split_results(results)
    offers, conflicts = one_price_per_key(NAME, offers)
    count = finite_number(doc.get("count"))
    offset = finite_number(doc.get("offset")) or 0
    whole = count is None or count <= offset + len(resources)
    return offers, rejects + conflicts, whole


# -- body -------------------------------------------------------------------------------------


def _resources(capture: Capture) -> tuple[dict[str, Any], list[Any]]:
    doc, resources = envelope(NAME, capture, "resources")
    if not resources:
        raise parse_error(NAME, capture, "the plan lists no deployment (region)", "resources")
    # A renamed field shows as a field no record has: refuse, never read it as "no price".
    require_fields(NAME, capture, resources, RESOURCE_FIELDS, "deployment")
    metrics = [m for r in resources for m in as_list(as_dict(r).get("metrics"))]
    require_fields(NAME, capture, metrics, METRIC_FIELDS, "metric")
    amounts = [a for m in metrics for a in as_list(as_dict(m).get("amounts"))]
    require_fields(NAME, capture, amounts, AMOUNT_FIELDS, "amount")
    prices = [p for a in amounts for p in as_list(as_dict(a).get("prices"))]
    require_fields(NAME, capture, prices, PRICE_FIELDS, "price tier")
    return doc, resources


# -- one region -------------------------------------------------------------------------------


def _region(resource: Any, capture: Capture) -> tuple[list[ParsedOffer | Reject | None], int]:
    """The results of one deployment's meters, and how many profile meters it carries."""
    if not isinstance(resource, dict):
        return [reject(NAME, f"deployment is not an object: {type(resource).__name__}",
                       resource)], 0
    region = stripped_text(resource.get("deployment_region"))
    if region is None:
        return [reject(NAME, "deployment without a deployment_region", resource)], 0
    metered = [(m, match) for m in as_list(resource.get("metrics"))
               if (match := _meter(m)) is not None]
    results: list[ParsedOffer | Reject | None] = [
        _offer(resource, region, metric, match, capture) for metric, match in metered]
    if not any(match["meter"] == "instance-hours" for _, match in metered):
        results.append(reject(NAME, f"region {region} has no on-demand price "
                              "(no part-is.instance-hours-<profile> meter)", resource))
    return results, len(metered)


def _meter(metric: Any) -> re.Match[str] | None:
    metric_id = as_dict(metric).get("metric_id")
    return METER.fullmatch(metric_id) if isinstance(metric_id, str) else None


# -- one meter --------------------------------------------------------------------------------


def _offer(resource: dict[str, Any], region: str, metric: Any, match: re.Match[str],
           capture: Capture) -> ParsedOffer | Reject:
    profile, model = match["profile"], MODELS[match["meter"]]
    key = f"{profile}|{region}|{model.value}"
    gpus = PROFILES.get(profile)
    if gpus is None:
        return reject(NAME, f"profile {profile} is not in PROFILES (GPU count unknown)",
                      metric, key)
    problem = _unit_problem(metric) or _effect_problem(metric, capture.fetched_at)
    if problem is not None:
        return reject(NAME, f"{region} {match.string}: {problem}", metric, key)
    amount = _usa_amount(metric)
    if amount is None:
        return reject(NAME, f"{region} {match.string}: no {PRICE_COUNTRY} amount", metric, key)
    price = _single_tier_price(amount)
    if isinstance(price, str):
        return reject(NAME, f"{region} {match.string}: {price}", metric, key)
    data = _provider_data(resource, metric, amount, price, gpus)
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=profile, gpu_label=profile,
            gpu_count=gpus, pricing_model=model, price_per_hour=price,
            currency=str(amount.get("currency")), price_kind=PriceKind.LISTED, region=region,
            source_url=capture.url, observed_at=capture.fetched_at, provider_data=data)
    except ValidationError as exc:
        return reject(NAME, f"invalid offer: {exc.errors()[0]['msg']}", metric, key)


def _unit_problem(metric: dict[str, Any]) -> str | None:
    """Why the meter's price is not the price of one instance-hour, or None when it is."""
    unit, quantity = metric.get("charge_unit"), metric.get("charge_unit_quantity")
    if unit != INSTANCE_HOUR:
        return f"charge_unit {unit!r} is not {INSTANCE_HOUR!r}"
    if finite_number(quantity) != 1:
        return f"price is for charge_unit_quantity {quantity!r} instance-hours, not 1"
    return None


def _effect_problem(metric: dict[str, Any], at: datetime) -> str | None:
    """Why the meter's price was not in effect at `at` (a scheduled or expired price)."""
    start, end = _instant(metric.get("effective_from")), _instant(metric.get("effective_until"))
    if start is not None and start > at:
        return f"price takes effect {metric['effective_from']}, after the capture"
    if end is not None and end <= at:
        return f"price ended {metric['effective_until']}, before the capture"
    return None


def _usa_amount(metric: dict[str, Any]) -> dict[str, Any] | None:
    rows = [a for a in as_list(metric.get("amounts"))
            if isinstance(a, dict) and a.get("country") == PRICE_COUNTRY]
    return rows[0] if len(rows) == 1 else None


def _single_tier_price(amount: dict[str, Any]) -> float | str:
    """The price of the amount's one tier, or why there is none to read."""
    currency = amount.get("currency")
    if not isinstance(currency, str) or len(currency) != 3:
        return f"currency {currency!r} is not a currency code"
    tiers = as_list(amount.get("prices"))
    if len(tiers) != 1:
        return f"{len(tiers)} quantity tiers, not one"
    tier = as_dict(tiers[0])
    if finite_number(tier.get("quantity_tier")) != 1:
        return f"quantity_tier {tier.get('quantity_tier')!r} is not 1"
    price = positive_number(tier.get("price"))
    if price is None:
        # 0 is how the catalog prices a meter billed elsewhere; never a free GPU.
        return f"price {tier.get('price')!r} is not a price"
    return price


def _provider_data(resource: dict[str, Any], metric: dict[str, Any], amount: dict[str, Any],
                   price: float, gpus: int) -> ProviderData:
    data: ProviderData = {
        "price_basis": "per Instance-Hour of the whole instance (all GPUs of the profile)",
        "price_per_gpu_hour": price / gpus,
        "price_country": amount.get("country"),
        "plan_id": PLAN_ID,
    }
    for field, value in (("metric_id", metric.get("metric_id")),
                         ("charge_unit", metric.get("charge_unit")),
                         ("tier_model", metric.get("tier_model")),
                         ("effective_from", metric.get("effective_from")),
                         ("deployment_id", resource.get("deployment_id")),
                         ("deployment_location", resource.get("deployment_location"))):
        if is_scalar(value):
            data[field] = value
    return data


# -- helpers ----------------------------------------------------------------------------------


def _instant(value: object) -> datetime | None:
    """An ISO 8601 time with a zone ("2026-10-01T00:00:00Z"); None for anything else."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None
