"""RunPod: per-GPU list prices from the public GraphQL API (`gpuTypes`), and its pricing pages.

One GPU type yields up to four offers of one GPU each: Secure Cloud and Community Cloud, each
on-demand and spot (interruptible, bid). RunPod prices a GPU type per cloud tier, not per region,
so `region` stays None and the tier is part of the offer key and `provider_data`.

Reading rules, each backed by a recorded payload (adapters/snapshots/runpod/PROVENANCE.md):
- `id` is the canonical GPU name ("NVIDIA H100 80GB HBM3"); `displayName` is the short one.
- A price of 0 or null means "not offered there": no offer, and not a reject.
- A tier is offered only when its flag (`secureCloud`, `communityCloud`) is true. A tier whose
  flag is false still carries a price, and it is a placeholder (0.5 for MI300X, B200 and RTX PRO
  6000 community in the 2025-06-21 capture, next to secure prices of 2.49, 6.39 and 1.79), while
  0.5 is a real price elsewhere (RTX 3090 secure, 2026-08-25). So a price without its flag cannot
  be read: a body without any flag is a ParseError, an entry without one a Reject.
- When a body has no per-cloud price fields (other collectors' queries), `lowestPrice`
  (`uninterruptablePrice`, `minimumBidPrice`) gives one offer across clouds, tier "any".

`parse()` also reads two views of runpod.io's pricing pages (tests/fixtures/runpod/PROVENANCE.md);
`provider_data["view"]` says which one an offer came from (GraphQL offers have no "view"):
- `pricing_page_next_data` (runpod.io/gpu-instance/pricing, 2023): the Next.js `__NEXT_DATA__`
  script, whose `props.pageProps.data` holds the same GpuType objects as the API. They are read
  by the rules above, so an offer has the GraphQL key and the same fields.
- `pricing_page_json_ld` (runpod.io/pricing, 2026): the `application/ld+json` block, a `Product`
  per GPU whose AggregateOffer holds one `Offer` per cloud ("Secure Cloud", "Community Cloud"),
  each a per-hour on-demand rate with the price as a string. Only those named offers are read:
  the aggregate's lowPrice/highPrice is a range over them, not an offer. The page names a GPU
  only by its display name ("H100 SXM GPU on Runpod"); the label is that name (resolved through
  pipeline/data/aliases/runpod.csv), and the key uses the GraphQL `id` when the name is the
  `displayName` of that id and of no other across the recorded API captures (PAGE_GPU_TYPE_IDS).
  A name that is not ("H200": RunPod has "H200 SXM" and "H200 NVL"; "RTX Pro 6000": two
  editions) gets a key of its own, `page:<name>|<tier>|on_demand`, which no GraphQL offer can
  share by mistake.
  The block has no secureCloud/communityCloud flags and lists both clouds for every GPU, also
  clouds the API flags as not offered (L4 community at $0.44), no VRAM and no spot prices, and
  it covers 19 of RunPod's GPU types: its result is marked incomplete, so loading it never
  closes offers it does not mention.
The pages are parse-only: `fetch()` asks the GraphQL API alone, and a failed fetch fails the
refresh (the provider keeps its last good data) rather than falling back to the JSON-LD, whose
`dateModified` lags its capture and whose prices differ from the API's in the same month.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind, newest_wins
from gpuscout.adapters.http import HttpClient
from gpuscout.core.errors import ParseError
from gpuscout.core.models import (
    ParsedOffer,
    ParseResult,
    PriceKind,
    PricingModel,
    ProviderData,
    Reject,
)
from pydantic import ValidationError
from selectolax.lexbor import LexborHTMLParser

GRAPHQL_URL = "https://api.runpod.io/graphql"
GPU_TYPES_QUERY = (
    "query GpuTypes { gpuTypes { id displayName memoryInGb maxGpuCount secureCloud "
    "communityCloud securePrice communityPrice secureSpotPrice communitySpotPrice "
    "lowestPrice(input: {gpuCount: 1}) { minimumBidPrice uninterruptablePrice stockStatus } } }"
)

NAME = "runpod"
SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = ("RUNPOD_API_KEY",)  # optional: sent only when set

# tier -> (availability flag, on-demand price field, spot price field)
TIERS: dict[str, tuple[str, str, str]] = {
    "secure": ("secureCloud", "securePrice", "secureSpotPrice"),
    "community": ("communityCloud", "communityPrice", "communitySpotPrice"),
}
ANY_TIER = "any"  # lowestPrice: the cheapest across clouds
PRICE_FIELDS = ("securePrice", "communityPrice", "secureSpotPrice", "communitySpotPrice",
                "lowestPrice")

# -- pricing pages --
VIEW_NEXT_DATA = "pricing_page_next_data"
VIEW_JSON_LD = "pricing_page_json_ld"
PAGE_KEY_PREFIX = "page:"  # a JSON-LD name that no single GraphQL id answers to
# JSON-LD Offer name -> cloud tier
PAGE_TIERS: dict[str, str] = {"secure cloud": "secure", "community cloud": "community"}
PRODUCT_NAME_RE = re.compile(r"^\s*(?P<gpu>\S.*?)\s+GPU on Runpod\s*$", re.IGNORECASE)
PAGE_PRICE_RE = re.compile(r"^\d+(?:\.\d+)?$")
PER_HOUR_RE = re.compile(r"per[- ]hour|hourly|/\s*hr\b", re.IGNORECASE)
ON_DEMAND_RE = re.compile(r"on[- ]demand", re.IGNORECASE)
# Pricing-page GPU name -> GraphQL gpuTypes id. Each name is the `displayName` (any case) of
# that id and of no other id across the recorded API captures (jumbo2020 2025-06-21, ewyluda
# 5-field, oniq 2026-08-25, the 2023 __NEXT_DATA__ page); tests/adapters/test_runpod_pages.py
# checks it. "A100 PCIe" and "A100 SXM" are the 80 GB types: the 40 GB ones are displayed
# "A100 40GB" and "A100 SXM 40GB". Absent on purpose: "H200" (displayNames are "H200 SXM" and
# "H200 NVL") and "RTX Pro 6000" ("RTX PRO 6000" was the Workstation Edition on 2025-06-21, the
# Server Edition in the 5-field capture).
PAGE_GPU_TYPE_IDS: dict[str, str] = {
    "A100 PCIe": "NVIDIA A100 80GB PCIe",
    "A100 SXM": "NVIDIA A100-SXM4-80GB",
    "A40": "NVIDIA A40",
    "B200": "NVIDIA B200",
    "B300": "NVIDIA B300 SXM6 AC",
    "H100 NVL": "NVIDIA H100 NVL",
    "H100 PCIe": "NVIDIA H100 PCIe",
    "H100 SXM": "NVIDIA H100 80GB HBM3",
    "L4": "NVIDIA L4",
    "L40": "NVIDIA L40",
    "L40S": "NVIDIA L40S",
    "RTX 3090": "NVIDIA GeForce RTX 3090",
    "RTX 4090": "NVIDIA GeForce RTX 4090",
    "RTX 5090": "NVIDIA GeForce RTX 5090",
    "RTX 6000 Ada": "NVIDIA RTX 6000 Ada Generation",
    "RTX A5000": "NVIDIA RTX A5000",
    "RTX A6000": "NVIDIA RTX A6000",
}
_PAGE_IDS_BY_NAME = {name.lower(): type_id for name, type_id in PAGE_GPU_TYPE_IDS.items()}


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    key = creds.get("RUNPOD_API_KEY")
    headers = {"Authorization": f"Bearer {key}"} if key else None
    return [client.post_json(GRAPHQL_URL, {"query": GPU_TYPES_QUERY}, headers=headers)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins.

    A capture is a GraphQL body (JSON) or a pricing page (HTML, told by its first character);
    a page is read from its `__NEXT_DATA__` GPU types, else from its JSON-LD products.
    """
    return newest_wins(captures, _read)


def _read(capture: Capture) -> tuple[list[ParsedOffer], list[Reject], bool]:
    if capture.text().lstrip("\ufeff \t\r\n").startswith("<"):
        return _page(capture)
    offers, bad = _gpu_type_offers(_gpu_types(capture), capture, None)
    return offers, bad, True


def _gpu_type_offers(entries: list[Any], capture: Capture,
                     view: str | None) -> tuple[list[ParsedOffer], list[Reject]]:
    """The offers of one body. A GPU type listed twice in it at different prices is rejected
    both times: neither price can be told to be the right one."""
    offers: dict[str, ParsedOffer] = {}
    conflicts: set[str] = set()
    rejects: list[Reject] = []
    in_body = _tier_fields(entries)
    for entry in entries:
        good, bad = _offers(entry, capture, view, in_body)
        rejects.extend(bad)
        for o in good:
            held = offers.get(o.offer_key)
            if o.offer_key in conflicts or (held and held.price_per_hour != o.price_per_hour):
                conflicts.add(o.offer_key)
                rejects.append(_conflict(o))
            else:
                offers[o.offer_key] = o
    for key in conflicts & offers.keys():
        rejects.append(_conflict(offers.pop(key)))
    return list(offers.values()), rejects


def _conflict(offer: ParsedOffer) -> Reject:
    return Reject(provider=NAME, offer_key=offer.offer_key, raw=offer.model_dump_json(),
                  reason="the body lists this offer twice, at two different prices")


def _tier_fields(entries: list[Any]) -> frozenset[str]:
    """The per-cloud price fields some entry of the body has."""
    names = {f for _, on_demand, spot in TIERS.values() for f in (on_demand, spot)}
    return frozenset(f for e in entries if isinstance(e, dict) for f in names if f in e)


# -- body -------------------------------------------------------------------------------------


def _gpu_types(capture: Capture) -> list[Any]:
    """The gpuTypes list from a GraphQL envelope, or a bare list as one collector stored it."""
    try:
        doc = json.loads(capture.body)
    except ValueError as exc:
        raise _error(capture, f"body is not JSON ({exc})", None) from None
    if isinstance(doc, dict):
        if doc.get("errors"):  # even next to partial data: fields may be null, so refuse it
            messages = "; ".join(str(e.get("message", e)) if isinstance(e, dict) else str(e)
                                 for e in doc["errors"])
            raise _error(capture, f"GraphQL errors: {messages}", "errors")
        data = doc.get("data")
        doc = data.get("gpuTypes") if isinstance(data, dict) else None
    if not isinstance(doc, list):
        raise _error(capture, "expected data.gpuTypes to be a list", "data.gpuTypes")
    return _checked(doc, capture)


def _checked(doc: list[Any], capture: Capture) -> list[Any]:
    """GPU type entries (API or __NEXT_DATA__) whose field names are the ones these rules read."""
    entries = [e for e in doc if isinstance(e, dict)]
    # A field renamed upstream is a field that no entry has: refuse the body rather than read
    # it as "nothing offered".
    if entries and not any("id" in e for e in entries):
        raise _error(capture, "no gpuTypes entry has an 'id'", "id")
    if entries and not any(f in e for e in entries for f in PRICE_FIELDS):
        raise _error(capture, "no gpuTypes entry has a price field", "securePrice")
    if entries and not any(t[0] in e for e in entries for t in TIERS.values()):
        raise _error(capture, "no gpuTypes entry says which clouds offer it (secureCloud, "
                     "communityCloud): prices cannot be told from placeholders", "secureCloud")
    # Per-cloud prices come in pairs (securePrice with communityPrice, secureSpotPrice with
    # communitySpotPrice; a query asks for a pair or not at all): one of a pair missing from
    # every entry while the other is there was renamed upstream, and reading on would drop its
    # offers unseen.
    present = _tier_fields(entries)
    pairs = list(zip(*((on_demand, spot) for _, on_demand, spot in TIERS.values()), strict=True))
    for pair in pairs:
        missing = [f for f in pair if f not in present]
        if missing and len(missing) < len(pair):
            raise _error(capture, f"no gpuTypes entry has '{missing[0]}' although they have "
                         f"{', '.join(f for f in pair if f in present)}", missing[0])
    return doc


def _error(capture: Capture, message: str, field: str | None) -> ParseError:
    return ParseError(message, provider=NAME, url=capture.url, field=field,
                      snippet=capture.text()[:200])


# -- one GPU type -----------------------------------------------------------------------------


class _Price(NamedTuple):
    tier: str
    model: PricingModel
    field: str
    value: Any
    kind: PriceKind


def _offers(entry: Any, capture: Capture, view: str | None = None,
            in_body: frozenset[str] = frozenset()) -> tuple[list[ParsedOffer], list[Reject]]:
    raw = json.dumps(entry, sort_keys=True)
    if not isinstance(entry, dict) or not isinstance(entry.get("id"), str) or not entry["id"]:
        return [], [Reject(provider=NAME, reason="gpuTypes entry without an id", raw=raw)]
    lowest = entry.get("lowestPrice") if isinstance(entry.get("lowestPrice"), dict) else {}
    prices, rejects = _prices(entry, lowest, raw, in_body)
    offers: list[ParsedOffer] = []
    for p in prices:
        if p.value is None or p.value == 0:
            continue  # not offered in this tier
        key = f"{entry['id']}|{p.tier}|{p.model.value}"
        if isinstance(p.value, bool) or not isinstance(p.value, int | float) or p.value < 0:
            rejects.append(Reject(provider=NAME, reason=f"{p.field} is not a price: {p.value!r}",
                                  raw=raw, offer_key=key))
            continue
        try:
            offers.append(_offer(entry, capture, key, p, lowest, view))
        except ValidationError as exc:
            rejects.append(Reject(provider=NAME, raw=raw, offer_key=key,
                                  reason=f"invalid offer: {exc.errors()[0]['msg']}"))
    return offers, rejects


def _prices(entry: dict[str, Any], lowest: dict[str, Any], raw: str,
            in_body: frozenset[str] = frozenset()) -> tuple[list[_Price], list[Reject]]:
    """The price fields that stand for an offer: per cloud tier, else lowestPrice.

    `in_body`: the per-cloud fields other entries of the body have. One of them missing here,
    in a tier the entry says is offered, is a price that could not be read (a Reject with the
    offer's key), not an offer that is gone.
    """
    prices: list[_Price] = []
    rejects: list[Reject] = []
    for tier, (flag, on_demand, spot) in TIERS.items():
        for model, field in ((PricingModel.ON_DEMAND, on_demand), (PricingModel.SPOT, spot)):
            if field not in entry and field in in_body and entry.get(flag) is True:
                rejects.append(Reject(provider=NAME, raw=raw,
                                      offer_key=f"{entry['id']}|{tier}|{model.value}",
                                      reason=f"{field} missing from this entry"))
                continue
            if field not in entry or entry.get(flag) is False:
                continue
            if entry.get(flag) is not True and entry[field]:
                rejects.append(Reject(provider=NAME, raw=raw, reason=f"{field} without a "
                                      f"{flag} flag: may be a placeholder"))
                continue
            prices.append(_Price(tier, model, field, entry[field], PriceKind.LISTED))
    if not any(entry.get(flag) is True for flag, _, _ in TIERS.values()):
        return prices, rejects
    for model, fields, low in (
        (PricingModel.ON_DEMAND, ("securePrice", "communityPrice"), "uninterruptablePrice"),
        (PricingModel.SPOT, ("secureSpotPrice", "communitySpotPrice"), "minimumBidPrice"),
    ):
        if not any(f in entry for f in fields) and low in lowest:
            # the cheapest across clouds right now: a market observation, not a list price
            prices.append(_Price(ANY_TIER, model, f"lowestPrice.{low}", lowest[low],
                                 PriceKind.OBSERVED))
    return prices, rejects


def _offer(entry: dict[str, Any], capture: Capture, key: str, price: _Price,
           lowest: dict[str, Any], view: str | None = None) -> ParsedOffer:
    vram = entry.get("memoryInGb")
    data: ProviderData = {"display_name": entry.get("displayName"), "cloud": price.tier,
                          "price_field": price.field}
    if view is not None:
        data["view"] = view
    if isinstance(entry.get("maxGpuCount"), int):
        data["max_gpu_count"] = entry["maxGpuCount"]
    if lowest.get("stockStatus") is not None:
        data["stock_status"] = str(lowest["stockStatus"])
    return ParsedOffer(
        provider=NAME, offer_key=key, gpu_label=entry["id"], gpu_count=1,
        vram_gb_per_gpu=float(vram) if isinstance(vram, int | float) and vram > 0 else None,
        pricing_model=price.model, price_per_hour=float(price.value), price_kind=price.kind,
        source_url=capture.url, observed_at=capture.fetched_at, provider_data=data,
    )


# -- pricing pages ----------------------------------------------------------------------------


def _page(capture: Capture) -> tuple[list[ParsedOffer], list[Reject], bool]:
    """Offers from a pricing page, and whether they cover RunPod's whole GPU list."""
    tree = LexborHTMLParser(capture.text())
    next_data = tree.css_first("script#__NEXT_DATA__")
    if next_data is not None:
        doc = _script_json(next_data.text(), capture, "__NEXT_DATA__")
        props = doc.get("props") if isinstance(doc, dict) else None
        page_props = props.get("pageProps") if isinstance(props, dict) else None
        data = page_props.get("data") if isinstance(page_props, dict) else None
        if isinstance(data, list):
            offers, rejects = _gpu_type_offers(_checked(data, capture), capture, VIEW_NEXT_DATA)
            return offers, rejects, True
    blocks = [n for n in tree.css("script")
              if (n.attributes.get("type") or "").strip().lower() == "application/ld+json"]
    nodes = [n for b in blocks for n in _ld_nodes(_script_json(b.text(), capture, "JSON-LD"))]
    products = [n for n in nodes if "Product" in _ld_types(n)]
    if products:
        modified = next((n.get("dateModified") for n in nodes
                         if "WebPage" in _ld_types(n) and isinstance(n.get("dateModified"), str)),
                        None)
        offers, rejects = _json_ld_offers(products, capture, modified)
        return offers, rejects, False  # 19 GPUs, no spot: never a reason to close an offer
    if next_data is not None:
        raise _error(capture, "__NEXT_DATA__ has no props.pageProps.data list of GPU types",
                     "props.pageProps.data")
    if blocks:
        raise _error(capture, "the JSON-LD has no Product", "@graph")
    raise _error(capture, "neither a GraphQL body nor a RunPod pricing page (no __NEXT_DATA__ "
                 "GPU types, no JSON-LD products)", None)


def _script_json(text: str, capture: Capture, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise _error(capture, f"the {what} script is not JSON ({exc})", what) from None


def _ld_nodes(doc: Any) -> list[Any]:
    """The top-level JSON-LD nodes: a document, a list of them, or an @graph."""
    items = doc if isinstance(doc, list) else [doc]
    out: list[Any] = []
    for item in items:
        graph = item.get("@graph") if isinstance(item, dict) else None
        out.extend(graph if isinstance(graph, list) else [item])
    return out


def _ld_types(node: Any) -> set[str]:
    kind = node.get("@type") if isinstance(node, dict) else None
    return {kind} if isinstance(kind, str) else {k for k in kind or () if isinstance(k, str)}


def _json_ld_offers(products: list[dict[str, Any]], capture: Capture,
                    modified: str | None) -> tuple[list[ParsedOffer], list[Reject]]:
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for product in products:
        good, bad = _product_offers(product, capture, modified)
        offers.extend(good)
        rejects.extend(bad)
    # The same GPU and cloud twice on one page: which price holds is not ours to pick.
    twice = {k for k, n in Counter(o.offer_key for o in offers).items() if n > 1}
    for o in offers:
        if o.offer_key in twice:
            rejects.append(Reject(provider=NAME, offer_key=o.offer_key, raw=o.model_dump_json(),
                                  reason="the page lists this GPU and cloud more than once"))
    return [o for o in offers if o.offer_key not in twice], rejects


def _product_offers(product: dict[str, Any], capture: Capture,
                    modified: str | None) -> tuple[list[ParsedOffer], list[Reject]]:
    raw = json.dumps(product, sort_keys=True)
    name = product.get("name")
    match = PRODUCT_NAME_RE.match(name) if isinstance(name, str) else None
    if match is None:
        return [], [Reject(provider=NAME, raw=raw,
                           reason=f"Product name is not '<GPU> GPU on Runpod': {name!r}")]
    gpu = " ".join(match["gpu"].split())
    aggregate = product.get("offers")
    items: list[Any] = []
    currency = None
    if isinstance(aggregate, dict) and "AggregateOffer" in _ld_types(aggregate):
        inner = aggregate.get("offers")
        items = inner if isinstance(inner, list) else [inner] if inner is not None else []
        currency = aggregate.get("priceCurrency")
    elif isinstance(aggregate, dict | list):
        items = aggregate if isinstance(aggregate, list) else [aggregate]
    if not items:
        return [], [Reject(provider=NAME, raw=raw, reason=f"{gpu}: no named Offer (an "
                           "AggregateOffer's lowPrice/highPrice is a range, not a price)")]
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for item in items:
        result = _page_offer(gpu, product, item, currency, capture, modified)
        if isinstance(result, ParsedOffer):
            offers.append(result)
        else:
            rejects.append(Reject(provider=NAME, raw=json.dumps(item, sort_keys=True),
                                  offer_key=result[1], reason=f"{gpu}: {result[0]}"))
    return offers, rejects


def _page_type_id(gpu: str) -> str | None:
    return _PAGE_IDS_BY_NAME.get(gpu.lower())


def _page_key(gpu: str, tier: str) -> str:
    type_id = _page_type_id(gpu)
    label = type_id if type_id is not None else f"{PAGE_KEY_PREFIX}{gpu}"
    return f"{label}|{tier}|{PricingModel.ON_DEMAND.value}"


def _page_offer(gpu: str, product: dict[str, Any], item: Any, currency: Any, capture: Capture,
                modified: str | None) -> ParsedOffer | tuple[str, str | None]:
    """One named JSON-LD Offer as an offer, or (reason, offer key) for a reject."""
    if not isinstance(item, dict) or "Offer" not in _ld_types(item):
        return f"not an Offer: {item!r}"[:200], None
    offer_name = item.get("name")
    tier = PAGE_TIERS.get(" ".join(str(offer_name).lower().split()))
    if tier is None:
        return f"Offer {offer_name!r} names no cloud (Secure Cloud, Community Cloud)", None
    key = _page_key(gpu, tier)
    text = item.get("description")
    text = text if isinstance(text, str) else ""
    if not (PER_HOUR_RE.search(text) and ON_DEMAND_RE.search(text)):
        return f"{offer_name} does not say it is a per-hour on-demand rate: {text!r}", key
    price = item.get("price")  # a string on the page
    number = isinstance(price, int | float) and not isinstance(price, bool)
    if not (number or isinstance(price, str) and PAGE_PRICE_RE.match(price.strip())):
        return f"{offer_name} price is not a number: {price!r}", key
    value = float(price)
    if value <= 0:
        return f"{offer_name} price is not positive: {price!r}", key
    currency = item.get("priceCurrency", currency)
    if not isinstance(currency, str) or not re.fullmatch(r"[A-Za-z]{3}", currency.strip()):
        return f"{offer_name} has no priceCurrency: {currency!r}", key
    data: ProviderData = {"view": VIEW_JSON_LD, "page_name": gpu, "cloud": tier,
                          "offer_name": offer_name,
                          "gpu_type_id": _page_type_id(gpu)}
    if isinstance(product.get("@id"), str):
        data["product_id"] = product["@id"]
    if modified is not None:
        data["page_date_modified"] = modified
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, gpu_label=gpu, gpu_count=1,
            pricing_model=PricingModel.ON_DEMAND, price_per_hour=value,
            currency=currency.strip(), price_kind=PriceKind.LISTED, source_url=capture.url,
            observed_at=capture.fetched_at, provider_data=data,
        )
    except ValidationError as exc:
        return f"invalid offer: {exc.errors()[0]['msg']}", key
