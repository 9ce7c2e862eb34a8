"""Akamai Cloud (Linode): GPU plans from the public plan listing, `GET
https://api.linode.com/v4beta/linode/types?page=N` (no key), paged until `pages`.

The body (2024-07-11 recording, adapters/snapshots/linode/PROVENANCE.md) is `{"data": [{"id",
"label", "class", "gpus", "vcpus", "memory", "disk", "transfer", "network_out", "price":
{"hourly", "monthly"}, "region_prices": [{"id", "hourly", "monthly"}], "addons", "successor"}],
"page", "pages", "results"}`; every plan of every class is listed, GPU plans with `class` "gpu"
and their card count in `gpus` (`g1-gpu-rtx6000-2`: "Dedicated 64GB + RTX6000 GPU x2").

Reading rules:
- A plan with `gpus` above 0 is an offer of that many GPUs at `price.hourly` (USD, the whole
  plan), on demand; other plans are no GPU and are left out.
- The GPU is named only in the plan id and label; the id is the label the alias table maps
  (`core/data/aliases/linode.csv`). The plan states no VRAM.
- `price` holds everywhere except in the regions `region_prices` lists, each its own offer at
  its own price with `region` set; the plan-wide offer has no region.
- `memory` and `disk` are MB (32768 = 32 GB); `monthly`, `transfer` (GB) and `network_out`
  (Mbit/s) go into `provider_data`, as does a `successor` plan when one is named.
- A page other than the first is requested only when the first says there are more; a run
  that misses a page it announced is incomplete (nothing vanished is closed).
- A body without `data`, or whose plans lost `id`, `gpus` or `price`, is a format change
  (ParseError); a GPU plan without a usable hourly price is a reject.
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
    finite_number,
    one_price_per_key,
    parse_error,
    positive_number,
    reject,
    require_fields,
    split_results,
    stripped_text,
)
from gpuscout.core.errors import ParseError
from gpuscout.core.models import ParsedOffer, ParseResult, PricingModel, ProviderData, Reject

TYPES_URL = "https://api.linode.com/v4beta/linode/types"
MAX_PAGES = 50  # far above the one page the listing has needed (37 plans, 100 per page)
MB_PER_GB = 1024

NAME = "linode"
SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = ()  # the plan listing is public

REQUIRED = ("id", "gpus", "price")


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    first = client.get(TYPES_URL, params={"page": 1}, headers={"Accept": "application/json"})
    captures = [first]
    for page in range(2, min(_pages(first), MAX_PAGES) + 1):
        captures.append(client.get(TYPES_URL, params={"page": page},
                                   headers={"Accept": "application/json"}))
    return captures


def _pages(capture: Capture) -> int:
    """The page count the first page announces; 1 when it cannot be read (parse says why)."""
    try:
        pages = json.loads(capture.read_bytes()).get("pages")
    except (ValueError, AttributeError):
        return 1
    return pages if isinstance(pages, int) and not isinstance(pages, bool) else 1


def parse(captures: Sequence[Capture]) -> ParseResult:
    """The plans of every page, the newest capture of each page; incomplete when a page the
    listing announced is missing."""
    pages: dict[int, tuple[Capture, dict[str, Any], list[Any]]] = {}
    for capture in sorted(captures, key=lambda c: c.fetched_at):
        doc, plans = envelope(NAME, capture, "data")
        page = doc.get("page")
        if not isinstance(page, int) or isinstance(page, bool) or page < 1:
            raise parse_error(NAME, capture, f"page is {page!r}, not a page number", "page")
        require_fields(NAME, capture, plans, REQUIRED, "plan")
        pages[page] = (capture, doc, plans)
    if not pages:
        raise ParseError("no page of the plan listing was captured", provider=NAME)
    announced = pages[min(pages)][1].get("pages")
    total = announced if isinstance(announced, int) and not isinstance(announced, bool) else 1
    complete = set(range(1, total + 1)) <= set(pages)
    results: list[ParsedOffer | Reject | None] = []
    for capture, _, plans in pages.values():
        for plan in plans:
            results += _plan(capture, plan)
    offers, rejects = split_results(results)
    offers, conflicts = one_price_per_key(NAME, offers)
    return ParseResult(offers=offers, rejects=[*rejects, *conflicts], complete=complete)


def _plan(capture: Capture, plan: Any) -> list[ParsedOffer | Reject | None]:
    if not isinstance(plan, dict):
        return [reject(NAME, "plan entry is not an object", plan)]
    gpus = finite_number(plan.get("gpus"))
    if gpus is None:
        return [reject(NAME, f"gpus is not a count: {plan.get('gpus')!r}", plan)]
    if gpus <= 0:
        return [None]  # a CPU plan
    plan_id = stripped_text(plan.get("id"))
    if plan_id is None:
        return [reject(NAME, "GPU plan without an id", plan)]
    results: list[ParsedOffer | Reject | None] = [
        _offer(capture, plan, plan_id, gpus, as_dict(plan.get("price")), None)]
    for regional in as_list(plan.get("region_prices")):
        region = stripped_text(as_dict(regional).get("id"))
        if region is None:
            results.append(reject(NAME, f"{plan_id}: regional price without a region", plan))
        else:
            results.append(_offer(capture, plan, plan_id, gpus, as_dict(regional), region))
    return results


def _offer(capture: Capture, plan: dict[str, Any], plan_id: str, gpus: float,
           price: dict[str, Any], region: str | None) -> ParsedOffer | Reject:
    key = plan_id if region is None else f"{plan_id}|{region}"
    hourly = positive_number(price.get("hourly"))
    if hourly is None:
        return reject(NAME, f"{plan_id}: hourly price is not a price: {price.get('hourly')!r}",
                      plan, key)
    data: ProviderData = {"price_basis": "per plan"}
    for field, value in (("label", stripped_text(plan.get("label"))),
                         ("class", stripped_text(plan.get("class"))),
                         ("usd_monthly", finite_number(price.get("monthly"))),
                         ("transfer_gb", finite_number(plan.get("transfer"))),
                         ("network_out_mbps", finite_number(plan.get("network_out"))),
                         ("successor", stripped_text(plan.get("successor")))):
        if value is not None:
            data[field] = value
    if region is None and as_list(plan.get("region_prices")):
        data["price_scope"] = "regions without their own price"
    memory, disk = positive_number(plan.get("memory")), positive_number(plan.get("disk"))
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=plan_id, gpu_label=plan_id,
            gpu_count=gpus, pricing_model=PricingModel.ON_DEMAND, price_per_hour=hourly,
            region=region, vcpus=positive_number(plan.get("vcpus")),
            ram_gb=memory / MB_PER_GB if memory else None,
            disk_gb=disk / MB_PER_GB if disk else None,
            source_url=capture.url, observed_at=capture.fetched_at, provider_data=data)
    except ValidationError as exc:
        return reject(NAME, f"invalid offer: {exc.errors()[0]['msg']}", plan, key)
