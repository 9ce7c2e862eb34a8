"""OVHcloud: Public Cloud GPU flavors from the public order catalog (`order/catalog/public/cloud`).

One catalog per billing subsidiary, in that subsidiary's currency (FR: EUR, US: USD). GPU
flavors are the `addons` whose `blobs.commercial.brick` is "gpu"; each flavor appears once per
billing mode, named by the planCode suffix:
- `<flavor>.consumption`: pay as you go, the whole instance per hour -> on_demand, listed.
- `<flavor>.monthly.postpaid`: the instance per calendar month, a one-month commitment ->
  reserved, derived as monthly price / HOURS_PER_MONTH (the monthly figure is in provider_data).

Reading rules, each backed by a recorded catalog (adapters/snapshots/ovhcloud/PROVENANCE.md):
- `price` is in 10^-8 of the currency (280000000 -> 2.80); it is cross-checked against the
  row's own `formattedPrice` ("2.80 €", "$1.80 USD"), which is rounded to cents.
- The billing period comes from the planCode suffix. `intervalUnit` is "hour"/"month" in the FR
  catalog but "none" in the US one, so it may only confirm the suffix, never contradict it.
- `win-*` flavors bundle a Windows licence into the price: rejected, not priced as GPU time.
- A GPU blob under another brick (the per-minute "ai-serving" AI Deploy rows) is a managed
  service, not an instance: rejected with the reason.
- The catalog is per subsidiary, not per region: `region` stays None; the regions a flavor is
  restricted to (when the catalog says) are in provider_data.
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
    as_list,
    json_body,
    member,
    newest_wins,
    one_price_per_key,
    parse_error,
    positive_number,
    reject,
    require_fields,
    split_results,
)
from gpuscout.core.models import ParsedOffer, ParseResult, PriceKind, PricingModel, Reject

# subsidiary -> catalog endpoint (no credentials: the order catalog is public)
CATALOG_URLS: dict[str, str] = {
    "FR": "https://api.ovh.com/1.0/order/catalog/public/cloud",
    "US": "https://api.us.ovhcloud.com/1.0/order/catalog/public/cloud",
}
PRICE_DIVISOR = 10**8  # catalog prices are integers in 10^-8 of the currency
DISPLAY_TOLERANCE = 0.005 + 1e-9  # formattedPrice is rounded to cents
HOURS_PER_MONTH = 730  # 8760 h / 12: the hourly equivalent of a monthly price
GPU_BRICK = "gpu"

NAME = "ovhcloud"
SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = ()

# planCode suffix -> (pricing model, price kind, expected intervalUnit, expected ISO interval)
BILLING_MODES: dict[str, tuple[PricingModel, PriceKind, str, str]] = {
    "consumption": (PricingModel.ON_DEMAND, PriceKind.LISTED, "hour", "PT1H"),
    "monthly.postpaid": (PricingModel.RESERVED, PriceKind.DERIVED, "month", "P1M"),
}
PRORATA_SECONDS = {"second": 1, "minute": 60, "hour": 3600}


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(url, params={"ovhSubsidiary": subsidiary})
            for subsidiary, url in CATALOG_URLS.items()]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every catalog; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _read_catalog)


def _read_catalog(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    """One catalog's offers; a flavor it lists twice at two prices is rejected."""
    currency, subsidiary, addons = _catalog(capture)
    offers, rejects = split_results(_addon(a, capture, currency, subsidiary) for a in addons)
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*rejects, *conflicts]


# -- body -------------------------------------------------------------------------------------


def _catalog(capture: Capture) -> tuple[str, str, list[Any]]:
    """(currency, subsidiary, addons) of one catalog, or ParseError when the shape is not it."""
    doc = json_body(NAME, capture)
    if not isinstance(doc, dict):
        raise parse_error(NAME, capture, "expected a catalog object")
    locale = doc.get("locale")
    currency = locale.get("currencyCode") if isinstance(locale, dict) else None
    subsidiary = locale.get("subsidiary") if isinstance(locale, dict) else None
    if not isinstance(currency, str) or not re.fullmatch(r"[A-Z]{3}", currency):
        raise parse_error(NAME, capture, "no locale.currencyCode: prices cannot be read "
                          "without their currency", "locale.currencyCode")
    if not isinstance(subsidiary, str) or not subsidiary:
        raise parse_error(NAME, capture, "no locale.subsidiary", "locale.subsidiary")
    addons = member(NAME, capture, doc, "addons")
    entries = [a for a in addons if isinstance(a, dict)]
    # A renamed field shows as a field that no addon has: refuse, don't emit nothing.
    require_fields(NAME, capture, entries, ("planCode",), "addon")
    if entries and not any(_brick(a) is not None for a in entries):
        raise parse_error(NAME, capture, "no addon has blobs.commercial.brick: GPU flavors "
                          "cannot be told from other products", "blobs.commercial.brick")
    gpu = [a for a in entries if _brick(a) == GPU_BRICK]
    require_fields(NAME, capture, gpu, ("pricings",), "GPU addon")
    if gpu and not any(_gpu_blob(a) for a in gpu):
        raise parse_error(NAME, capture, "no GPU addon has blobs.technical.gpu",
                          "blobs.technical.gpu")
    return currency, subsidiary, addons


# -- one addon --------------------------------------------------------------------------------


# Complex on purpose: one branch per add-on kind of the order catalog.
def _addon(addon: Any, capture: Capture, currency: str,  # noqa: C901
           subsidiary: str) -> ParsedOffer | Reject | None:
    """An offer, a reject, or None for products that are not GPU instances."""
    if not isinstance(addon, dict):
        return None
    brick = _brick(addon)
    if brick != GPU_BRICK:
        if _gpu_blob(addon):
            return reject(NAME, f"GPU under brick {brick!r}: a managed service priced "
                          "per use, not a GPU instance", addon)
        return None  # credits, quotas, storage: not offers
    plan = addon.get("planCode")
    if not isinstance(plan, str) or "." not in plan:
        return reject(NAME, f"planCode {plan!r} has no billing-mode suffix", addon)
    flavor, mode = plan.split(".", 1)
    if mode not in BILLING_MODES:
        return reject(NAME, f"unknown billing-mode suffix {mode!r}", addon)
    model, kind, unit, iso = BILLING_MODES[mode]
    key = f"{subsidiary}|{flavor}|{model.value}"
    technical = as_dict(as_dict(addon.get("blobs")).get("technical"))
    if as_dict(technical.get("os")).get("family") == "windows":
        return reject(NAME, "Windows flavor: the price includes a Windows licence", addon, key)
    pricings = [p for p in as_list(addon.get("pricings")) if isinstance(p, dict)]
    if len(pricings) != 1:
        return reject(NAME, f"{len(pricings)} pricing phases: expected exactly one", addon, key)
    pricing = pricings[0]
    raw_price = pricing.get("price")
    if isinstance(raw_price, bool) or not isinstance(raw_price, int) or raw_price <= 0:
        return reject(NAME, f"price is not a positive integer: {raw_price!r}", addon, key)
    value = raw_price / PRICE_DIVISOR  # dividing, not x 1e-8: 280000000 -> exactly 2.8
    shown = _shown_price(pricing.get("formattedPrice"))
    if shown is None:
        return reject(NAME, "formattedPrice has no number: the price scale cannot be "
                      "checked", addon, key)
    if abs(value - shown) > DISPLAY_TOLERANCE:
        return reject(NAME, f"price {raw_price} (x 1e-8 = {value:g}) disagrees with "
                      f"formattedPrice {pricing.get('formattedPrice')!r}", addon, key)
    stated_unit = pricing.get("intervalUnit")
    commercial = as_dict(as_dict(addon.get("blobs")).get("commercial"))
    stated_iso = as_dict(commercial.get("price")).get("interval")
    if stated_unit not in (unit, "none", None) or stated_iso not in (iso, None):
        return reject(NAME, f"billing period {stated_unit!r}/{stated_iso!r} contradicts "
                      f"the planCode suffix {mode!r}", addon, key)
    gpu = _gpu_blob(addon)
    if positive_number(gpu.get("number")) is None:
        return reject(NAME, f"GPU count is not positive: {gpu.get('number')!r}", addon, key)
    try:
        offer = _offer(addon, capture, key=key, flavor=flavor, model=model, kind=kind,
                       value=value, currency=currency, subsidiary=subsidiary, gpu=gpu,
                       technical=technical, pricing=pricing)
    except ValidationError as exc:
        return reject(NAME, f"invalid offer: {exc.errors()[0]['msg']}", addon, key)
    return offer


def _offer(addon: dict[str, Any], capture: Capture, *, key: str, flavor: str,
           model: PricingModel, kind: PriceKind, value: float, currency: str, subsidiary: str,
           gpu: dict[str, Any], technical: dict[str, Any],
           pricing: dict[str, Any]) -> ParsedOffer:
    data: dict[str, str | int | float | bool | None] = {
        "subsidiary": subsidiary, "plan_code": addon.get("planCode"),
        "formatted_price": pricing.get("formattedPrice"),
        "tags": ",".join(t for t in as_list(as_dict(addon.get("blobs")).get("tags"))
                         if isinstance(t, str)),
    }
    regions = _regions(addon)
    if regions:
        data["regions"] = regions
    bandwidth = as_dict(technical.get("bandwidth")).get("level")
    if isinstance(bandwidth, int):
        data["public_bandwidth_mbps"] = bandwidth
    price = value
    increment = None
    if model is PricingModel.RESERVED:
        price = value / HOURS_PER_MONTH
        data.update(monthly_price=round(value, 8), hours_per_month=HOURS_PER_MONTH,
                    term="1 month (monthly billing)")
    else:
        prorata = as_dict(addon.get("consumptionConfiguration")).get("prorataUnit")
        increment = PRORATA_SECONDS.get(prorata) if isinstance(prorata, str) else None
    vram = as_dict(gpu.get("memory")).get("size")
    return ParsedOffer(
        provider=NAME, offer_key=key, instance_type=flavor, gpu_label=flavor,
        gpu_count=float(gpu["number"]),
        vram_gb_per_gpu=positive_number(vram),
        pricing_model=model, price_per_hour=price, currency=currency, price_kind=kind,
        vcpus=positive_number(as_dict(technical.get("cpu")).get("cores")),
        ram_gb=positive_number(as_dict(technical.get("memory")).get("size")),
        disk_gb=_disk_gb(technical), billing_increment_s=increment,
        source_url=capture.url, observed_at=capture.fetched_at, provider_data=data,
    )


# -- helpers ----------------------------------------------------------------------------------


def _brick(addon: dict[str, Any]) -> Any:
    return as_dict(as_dict(addon.get("blobs")).get("commercial")).get("brick")


def _gpu_blob(addon: dict[str, Any]) -> dict[str, Any]:
    return as_dict(as_dict(as_dict(addon.get("blobs")).get("technical")).get("gpu"))


def _shown_price(text: Any) -> float | None:
    """The number in a display string: "2.80 €" -> 2.8, "$1.56 USD" -> 1.56."""
    if not isinstance(text, str):
        return None
    m = re.search(r"\d+(?:\.\d+)?", text.replace(",", ""))
    return float(m.group(0)) if m else None


def _regions(addon: dict[str, Any]) -> str | None:
    for config in as_list(addon.get("configurations")):
        if isinstance(config, dict) and config.get("name") == "region":
            values = [v for v in as_list(config.get("values")) if isinstance(v, str)]
            return ",".join(values) or None
    return None


def _disk_gb(technical: dict[str, Any]) -> float | None:
    total = 0.0
    for disk in as_list(as_dict(technical.get("storage")).get("disks")):
        capacity = positive_number(as_dict(disk).get("capacity"))
        count = positive_number(as_dict(disk).get("number", 1))
        if capacity is not None and count is not None:
            total += capacity * count
    return total or None
