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

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.core.errors import ParseError
from gpuscout.core.models import ParsedOffer, ParseResult, PriceKind, PricingModel, Reject
from pydantic import ValidationError

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
    newest: dict[str, ParsedOffer] = {}
    rejects: list[Reject] = []
    for capture in sorted(captures, key=lambda c: c.fetched_at):
        currency, subsidiary, addons = _catalog(capture)
        seen: set[str] = set()
        for addon in addons:
            offer, reject = _addon(addon, capture, currency, subsidiary)
            if offer is not None and offer.offer_key in seen:
                offer, reject = None, _reject(addon, "planCode listed twice in one catalog",
                                              offer.offer_key)
            if offer is not None:
                seen.add(offer.offer_key)
                newest[offer.offer_key] = offer
            if reject is not None:
                rejects.append(reject)
    return ParseResult(offers=list(newest.values()), rejects=rejects)


# -- body -------------------------------------------------------------------------------------


def _catalog(capture: Capture) -> tuple[str, str, list[Any]]:
    """(currency, subsidiary, addons) of one catalog, or ParseError when the shape is not it."""
    try:
        doc = json.loads(capture.body)
    except ValueError as exc:
        raise _error(capture, f"body is not JSON ({exc})", None) from None
    if not isinstance(doc, dict):
        raise _error(capture, "expected a catalog object", None)
    locale = doc.get("locale")
    currency = locale.get("currencyCode") if isinstance(locale, dict) else None
    subsidiary = locale.get("subsidiary") if isinstance(locale, dict) else None
    if not isinstance(currency, str) or not re.fullmatch(r"[A-Z]{3}", currency):
        raise _error(capture, "no locale.currencyCode: prices cannot be read without their "
                     "currency", "locale.currencyCode")
    if not isinstance(subsidiary, str) or not subsidiary:
        raise _error(capture, "no locale.subsidiary", "locale.subsidiary")
    addons = doc.get("addons")
    if not isinstance(addons, list):
        raise _error(capture, "expected addons to be a list", "addons")
    entries = [a for a in addons if isinstance(a, dict)]
    # A renamed field shows as a field that no addon has: refuse, don't emit nothing.
    if entries and not any("planCode" in a for a in entries):
        raise _error(capture, "no addon has a planCode", "planCode")
    if entries and not any(_brick(a) is not None for a in entries):
        raise _error(capture, "no addon has blobs.commercial.brick: GPU flavors cannot be "
                     "told from other products", "blobs.commercial.brick")
    gpu = [a for a in entries if _brick(a) == GPU_BRICK]
    if gpu and not any("pricings" in a for a in gpu):
        raise _error(capture, "no GPU addon has pricings", "pricings")
    if gpu and not any(_gpu_blob(a) for a in gpu):
        raise _error(capture, "no GPU addon has blobs.technical.gpu", "blobs.technical.gpu")
    return currency, subsidiary, addons


def _error(capture: Capture, message: str, field: str | None) -> ParseError:
    return ParseError(message, provider=NAME, url=capture.url, field=field,
                      snippet=capture.text()[:200])


# -- one addon --------------------------------------------------------------------------------


def _addon(addon: Any, capture: Capture, currency: str,
           subsidiary: str) -> tuple[ParsedOffer | None, Reject | None]:
    """An offer, a reject, or (None, None) for products that are not GPU instances."""
    if not isinstance(addon, dict):
        return None, None
    brick = _brick(addon)
    if brick != GPU_BRICK:
        if _gpu_blob(addon):
            return None, _reject(addon, f"GPU under brick {brick!r}: a managed service priced "
                                 "per use, not a GPU instance")
        return None, None  # credits, quotas, storage: not offers
    plan = addon.get("planCode")
    if not isinstance(plan, str) or "." not in plan:
        return None, _reject(addon, f"planCode {plan!r} has no billing-mode suffix")
    flavor, mode = plan.split(".", 1)
    if mode not in BILLING_MODES:
        return None, _reject(addon, f"unknown billing-mode suffix {mode!r}")
    model, kind, unit, iso = BILLING_MODES[mode]
    key = f"{subsidiary}|{flavor}|{model.value}"
    technical = _dict(_dict(addon.get("blobs")).get("technical"))
    if _dict(technical.get("os")).get("family") == "windows":
        return None, _reject(addon, "Windows flavor: the price includes a Windows licence",
                             key)
    pricings = [p for p in _list(addon.get("pricings")) if isinstance(p, dict)]
    if len(pricings) != 1:
        return None, _reject(addon, f"{len(pricings)} pricing phases: expected exactly one",
                             key)
    pricing = pricings[0]
    raw_price = pricing.get("price")
    if isinstance(raw_price, bool) or not isinstance(raw_price, int) or raw_price <= 0:
        return None, _reject(addon, f"price is not a positive integer: {raw_price!r}", key)
    value = raw_price / PRICE_DIVISOR  # dividing, not x 1e-8: 280000000 -> exactly 2.8
    shown = _shown_price(pricing.get("formattedPrice"))
    if shown is None:
        return None, _reject(addon, "formattedPrice has no number: the price scale cannot be "
                             "checked", key)
    if abs(value - shown) > DISPLAY_TOLERANCE:
        return None, _reject(addon, f"price {raw_price} (x 1e-8 = {value:g}) disagrees with "
                             f"formattedPrice {pricing.get('formattedPrice')!r}", key)
    stated_unit = pricing.get("intervalUnit")
    commercial = _dict(_dict(addon.get("blobs")).get("commercial"))
    stated_iso = _dict(commercial.get("price")).get("interval")
    if stated_unit not in (unit, "none", None) or stated_iso not in (iso, None):
        return None, _reject(addon, f"billing period {stated_unit!r}/{stated_iso!r} contradicts "
                             f"the planCode suffix {mode!r}", key)
    gpu = _gpu_blob(addon)
    count = gpu.get("number")
    if isinstance(count, bool) or not isinstance(count, int | float) or count <= 0:
        return None, _reject(addon, f"GPU count is not positive: {count!r}", key)
    try:
        offer = _offer(addon, capture, key=key, flavor=flavor, model=model, kind=kind,
                       value=value, currency=currency, subsidiary=subsidiary, gpu=gpu,
                       technical=technical, pricing=pricing)
    except ValidationError as exc:
        return None, _reject(addon, f"invalid offer: {exc.errors()[0]['msg']}", key)
    return offer, None


def _offer(addon: dict[str, Any], capture: Capture, *, key: str, flavor: str,
           model: PricingModel, kind: PriceKind, value: float, currency: str, subsidiary: str,
           gpu: dict[str, Any], technical: dict[str, Any],
           pricing: dict[str, Any]) -> ParsedOffer:
    data: dict[str, str | int | float | bool | None] = {
        "subsidiary": subsidiary, "plan_code": addon.get("planCode"),
        "formatted_price": pricing.get("formattedPrice"),
        "tags": ",".join(t for t in _list(_dict(addon.get("blobs")).get("tags"))
                         if isinstance(t, str)),
    }
    regions = _regions(addon)
    if regions:
        data["regions"] = regions
    bandwidth = _dict(technical.get("bandwidth")).get("level")
    if isinstance(bandwidth, int):
        data["public_bandwidth_mbps"] = bandwidth
    price = value
    increment = None
    if model is PricingModel.RESERVED:
        price = value / HOURS_PER_MONTH
        data.update(monthly_price=round(value, 8), hours_per_month=HOURS_PER_MONTH,
                    term="1 month (monthly billing)")
    else:
        prorata = _dict(addon.get("consumptionConfiguration")).get("prorataUnit")
        increment = PRORATA_SECONDS.get(prorata) if isinstance(prorata, str) else None
    vram = _dict(gpu.get("memory")).get("size")
    return ParsedOffer(
        provider=NAME, offer_key=key, instance_type=flavor, gpu_label=flavor,
        gpu_count=float(gpu["number"]),
        vram_gb_per_gpu=float(vram) if _positive(vram) else None,
        pricing_model=model, price_per_hour=price, currency=currency, price_kind=kind,
        vcpus=_positive_or_none(_dict(technical.get("cpu")).get("cores")),
        ram_gb=_positive_or_none(_dict(technical.get("memory")).get("size")),
        disk_gb=_disk_gb(technical), billing_increment_s=increment,
        source_url=capture.url, observed_at=capture.fetched_at, provider_data=data,
    )


# -- helpers ----------------------------------------------------------------------------------


def _list(value: Any) -> list[Any]:
    """A JSON array, or an empty one for anything else (a field of an unexpected type)."""
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _brick(addon: dict[str, Any]) -> Any:
    return _dict(_dict(addon.get("blobs")).get("commercial")).get("brick")


def _gpu_blob(addon: dict[str, Any]) -> dict[str, Any]:
    return _dict(_dict(_dict(addon.get("blobs")).get("technical")).get("gpu"))


def _positive(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and value > 0 \
        and math.isfinite(value)


def _positive_or_none(value: Any) -> float | None:
    return float(value) if _positive(value) else None


def _shown_price(text: Any) -> float | None:
    """The number in a display string: "2.80 €" -> 2.8, "$1.56 USD" -> 1.56."""
    if not isinstance(text, str):
        return None
    m = re.search(r"\d+(?:\.\d+)?", text.replace(",", ""))
    return float(m.group(0)) if m else None


def _regions(addon: dict[str, Any]) -> str | None:
    for config in _list(addon.get("configurations")):
        if isinstance(config, dict) and config.get("name") == "region":
            values = [v for v in _list(config.get("values")) if isinstance(v, str)]
            return ",".join(values) or None
    return None


def _disk_gb(technical: dict[str, Any]) -> float | None:
    total = 0.0
    for disk in _list(_dict(technical.get("storage")).get("disks")):
        capacity = _dict(disk).get("capacity")
        number = _dict(disk).get("number", 1)
        if _positive(capacity) and _positive(number):
            total += capacity * number
    return total or None


def _reject(addon: Any, reason: str, key: str | None = None) -> Reject:
    return Reject(provider=NAME, reason=reason, offer_key=key,
                  raw=json.dumps(addon, sort_keys=True, ensure_ascii=False))
