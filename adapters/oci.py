"""Oracle Cloud (OCI): GPU shape list prices from the public cost-estimator data (no key).

Two documents: the Cost Estimator's `shapes.json` (each shape, its GPU count and the part
numbers it is billed by) and the price list `cetools/api/v1/products` (each part number's
pay-as-you-go price and its metric). A GPU shape carries one product whose part is priced
"GPU Per Hour", so the shape costs that price x `gpuQty` (BM.GPU.H100.8: B98415 at 10 x 8 = 80).
OCI list prices are the same in every region, so `region` stays None.

Reading rules (adapters/snapshots/oci/PROVENANCE.md):
- Shapes without GPUs are skipped; a GPU shape that is hidden or not ACTIVE, whose part has no
  price, or whose part is metered otherwise than per GPU hour is a Reject, never a guess.
- A display suffix such as "BM.GPU.GB200.4 (NVL72)" is cut to the API shape name.
- `gpuMemoryQty` is not used as VRAM: it is the total for most shapes but per GPU for
  BM.GPU.MI355X.8 and off for BM.GPU.GB300.4 (gpuhunt's notes on the 2026-09-18 data); it is
  kept raw in provider_data and the catalog gives the VRAM.
- Preemptible: where the shape allows it (`allowPreemptible`), a spot offer at 50 % of the
  on-demand price, OCI's documented fixed discount (PREEMPTIBLE_SOURCE). It is derived by us,
  not quoted by OCI, so its price_kind is `derived`.
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
    as_list,
    envelope,
    finite_number,
    positive_number,
    require_fields,
)
from gpuscout.core.errors import ParseError
from gpuscout.core.models import (
    ParsedOffer,
    ParseResult,
    PriceKind,
    PricingModel,
    ProviderData,
    Reject,
)

SHAPES_URL = "https://www.oracle.com/a/ocom/docs/cloudestimator2/data/shapes.json"
PRODUCTS_URL = "https://apexapps.oracle.com/pls/apex/cetools/api/v1/products"
CURRENCY = "USD"
PREEMPTIBLE_DISCOUNT = 0.5
PREEMPTIBLE_SOURCE = ("https://blogs.oracle.com/cloud-infrastructure/post/announcing-"
                      "preemptible-instances-a-new-kind-of-compute-instance-available-at-a-50-"
                      "discount (\"Always 50% off your on-demand instance rates\")")
GPU_METRIC = "GPU Per Hour"
PAY_AS_YOU_GO = "PAY_AS_YOU_GO"

NAME = "oci"
SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = ()

SHAPE_FIELDS = ("name", "gpuQty", "products")
PRODUCT_FIELDS = ("partNumber", "currencyCodeLocalizations")
DISPLAY_SUFFIX = re.compile(r"\s*\([^)]*\)\s*$")


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(SHAPES_URL), client.get(PRODUCTS_URL, params={"currencyCode": CURRENCY})]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Both documents are needed; when either repeats, its newest capture is used."""
    shapes = [c for c in captures if c.url.split("?", 1)[0].endswith("/shapes.json")]
    products = [c for c in captures if c.url.split("?", 1)[0].endswith("/products")]
    if not shapes or not products:
        missing = "shapes.json" if not shapes else "products"
        url = captures[0].url if captures else None
        raise ParseError(f"no {missing} capture: a shape cannot be priced without both",
                         provider=NAME, url=url, field=missing)
    shape_capture = max(shapes, key=lambda c: c.fetched_at)
    product_capture = max(products, key=lambda c: c.fetched_at)
    prices = _prices(product_capture)
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for shape in _items(shape_capture, SHAPE_FIELDS):
        made, bad = _shape_offers(shape, prices, shape_capture, product_capture)
        offers.extend(made)
        rejects.extend(bad)
    return ParseResult(offers=offers, rejects=rejects)


# -- documents --------------------------------------------------------------------------------


def _items(capture: Capture, fields: tuple[str, ...]) -> list[dict[str, Any]]:
    _, listed = envelope(NAME, capture, "items")
    items = [i for i in listed if isinstance(i, dict)]
    # a field no item has was renamed upstream: refuse the document
    require_fields(NAME, capture, items, fields, "item")
    return items


def _prices(capture: Capture) -> dict[str, dict[str, Any]]:
    """partNumber -> {"price": pay-as-you-go price or None, "metric", "display_name"}."""
    out: dict[str, dict[str, Any]] = {}
    for item in _items(capture, PRODUCT_FIELDS):
        price = None
        for loc in as_list(item.get("currencyCodeLocalizations")):
            if isinstance(loc, dict) and loc.get("currencyCode") == CURRENCY:
                price = next((p.get("value") for p in as_list(loc.get("prices"))
                              if isinstance(p, dict) and p.get("model") == PAY_AS_YOU_GO), None)
        out[str(item.get("partNumber"))] = {"price": price, "metric": item.get("metricName"),
                                            "display_name": item.get("displayName")}
    return out


# -- one shape --------------------------------------------------------------------------------


# Complex on purpose: one branch per documented OCI pricing case.
def _shape_offers(shape: dict[str, Any], prices: dict[str, dict[str, Any]], shapes: Capture,  # noqa: C901
                  products: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    gpus = shape.get("gpuQty")
    if not gpus:
        return [], []  # a CPU shape
    raw = json.dumps(shape, sort_keys=True)
    display = str(shape.get("name") or "")
    name = DISPLAY_SUFFIX.sub("", display)

    def reject(reason: str) -> tuple[list[ParsedOffer], list[Reject]]:
        return [], [Reject(provider=NAME, reason=reason, raw=raw, offer_key=f"{name}|on_demand")]

    if not name or isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
        return reject(f"shape without a name or a GPU count: {display!r}, gpuQty {gpus!r}")
    if shape.get("hidden") is True:
        return reject("shape is hidden in the Cost Estimator")
    if shape.get("status", "ACTIVE") != "ACTIVE":
        return reject(f"shape status is {shape.get('status')!r}, not 'ACTIVE'")
    parts = [p for p in as_list(shape.get("products")) if isinstance(p, dict)]
    unpriced = [str(p.get("partNumber")) for p in parts
                if str(p.get("partNumber")) not in prices]
    if unpriced:
        return reject(f"part {', '.join(unpriced)} is not in the price list")
    gpu_parts = [p for p in parts if _metric(prices, p) == GPU_METRIC]
    if len(parts) != 1 or len(gpu_parts) != 1:
        priced = [f"{p.get('partNumber')} ({_metric(prices, p)})" for p in parts]
        return reject(f"expected one part priced {GPU_METRIC!r}, found {priced or 'none'}")
    part = str(gpu_parts[0].get("partNumber"))
    per_gpu = positive_number(prices[part]["price"])
    if per_gpu is None:
        return reject(f"part {part} has no {PAY_AS_YOU_GO} {CURRENCY} price: "
                      f"{prices[part]['price']!r}")
    data: ProviderData = {
        "part_number": part, "part_name": prices[part]["display_name"],
        "price_per_gpu_hour": per_gpu, "metric": GPU_METRIC,
        "shape_kind": "bare_metal" if name.startswith("BM.") else "vm",
        "ocpus": finite_number(gpu_parts[0].get("qty")),
        "gpu_memory_qty_raw": finite_number(shape.get("gpuMemoryQty")),
        "processor_type": _value(shape.get("processorType")),
        "allow_preemptible": shape.get("allowPreemptible") is True,
        "regions": "all (OCI list prices do not vary by region)",
    }
    if display != name:
        data["display_name"] = display
    on_demand = round(per_gpu * gpus, 6)
    memory = positive_number(shape.get("bundleMemoryQty"))
    models = [(PricingModel.ON_DEMAND, on_demand, PriceKind.LISTED, {})]
    if shape.get("allowPreemptible") is True:
        models.append((PricingModel.SPOT, round(on_demand * PREEMPTIBLE_DISCOUNT, 6),
                       PriceKind.DERIVED, {"preemptible_discount": PREEMPTIBLE_DISCOUNT,
                                           "discount_source": PREEMPTIBLE_SOURCE}))
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for model, price, kind, extra in models:
        key = f"{name}|{model.value}"
        try:
            offers.append(ParsedOffer(
                provider=NAME, offer_key=key, instance_type=name, gpu_label=name,
                gpu_count=gpus, pricing_model=model, price_per_hour=price, currency=CURRENCY,
                price_kind=kind,
                ram_gb=memory,
                source_url=products.url,
                observed_at=max(shapes.fetched_at, products.fetched_at),
                provider_data={**data, **extra},
            ))
        except ValidationError as exc:
            rejects.append(Reject(provider=NAME, raw=raw, offer_key=key,
                                  reason=f"invalid offer: {exc.errors()[0]['msg']}"))
    return offers, rejects


def _metric(prices: dict[str, dict[str, Any]], part: dict[str, Any]) -> Any:
    return prices.get(str(part.get("partNumber")), {}).get("metric")


def _value(field: Any) -> str | None:
    """The Cost Estimator wraps enums as {"value": ...}."""
    return str(field["value"]) if isinstance(field, dict) and "value" in field else None

