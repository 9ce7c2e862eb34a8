"""RunPod: per-GPU list prices from the public GraphQL API (`gpuTypes`) and, with a key, the
REST catalog (`/v2/catalog/gpus`).

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
- `lowestPrice.stockStatus` (High/Medium/Low, null when no GPU can be quoted) is the type's
  availability. The query also asks for `dataCenters` (2026-08-25 capture): the listed data
  centres where a type is `available` go to `provider_data["datacenters_available"]`; a centre
  with `listed` false is not offered for deployment. A block that cannot be read is a Reject
  that costs no price.

The REST catalog (`GET /v2/catalog/gpus?include=AVAILABILITY&product=POD`, bearer key; the
schema and example of runpod/docs `api-reference-v2/openapi.json`, no recorded response
exists) replaces the GraphQL query, which is reported rate-limited since 2026-09 with HTTP 410
announced for early 2027. Its `gpus[]` carry the same `id`, so its offers have the GraphQL
offers' keys: `secure`/`community` are the cloud flags, `price.secure`/`price.community` the
per-GPU on-demand prices (`price.serverless` is the serverless pool's, not a pod's: not read),
`memory` VRAM, `maxCount` per cloud, and `availability` (NONE/LOW/MEDIUM/HIGH) and
`dataCenters` the stock of the cloud the request names (`cloud`, upstream default SECURE):
they go to that cloud's offers only. It has no spot or bid price.

- Without RUNPOD_API_KEY, `fetch()` asks GraphQL alone; 410 and 429 become a FetchError that
  says so and that a key would read the REST catalog.
- With the key, it asks both, each on its own (`toolkit.fetch_apart`): the REST catalog, and
  GraphQL for what only it has (spot and bid prices, stock per type). Either that fails leaves
  the other: GraphQL alone is the whole listing; the REST catalog alone has no spot, so that
  result is incomplete (no spot offer is closed as vanished) and a Reject says why. Where both
  answer, GraphQL's offer wins a key both give.

The pricing pages (runpod.io/pricing) are not read: their JSON-LD has no cloud flags, no VRAM
and no spot prices and covers 19 GPU types, and its `dateModified` lags the capture.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple
from urllib.parse import parse_qs, urlsplit

from pydantic import ValidationError

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    as_dict,
    as_list,
    envelope,
    fetch_apart,
    json_body,
    newest_wins,
    one_price_per_key,
    parse_error,
    positive_number,
    read_apart,
    reject,
    require_fields,
)
from gpuscout.core.errors import FetchError
from gpuscout.core.models import (
    Availability,
    ParsedOffer,
    ParseResult,
    PriceKind,
    PricingModel,
    ProviderData,
    Reject,
)

GRAPHQL_URL = "https://api.runpod.io/graphql"
REST_URL = "https://api.runpod.io/v2/catalog/gpus"
# stock for pods, of the cloud REST_CLOUD_PARAM names (its upstream default: SECURE)
REST_PARAMS = {"include": "AVAILABILITY", "product": "POD"}
REST_CLOUD_PARAM, REST_DEFAULT_CLOUD = "cloud", "SECURE"
REST, GRAPHQL = "REST catalog", "GraphQL gpuTypes"  # the two sources
GPU_TYPES_QUERY = (
    "query GpuTypes { gpuTypes { id displayName memoryInGb maxGpuCount secureCloud "
    "communityCloud securePrice communityPrice secureSpotPrice communitySpotPrice "
    "lowestPrice(input: {gpuCount: 1}) { minimumBidPrice uninterruptablePrice stockStatus } } "
    "dataCenters { id name listed gpuAvailability { gpuTypeId available stockStatus } } }"
)

NAME = "runpod"
SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = ("RUNPOD_API_KEY",)
OPTIONAL_CREDENTIALS = CREDENTIALS  # sent only when set: the query works without it

# lowestPrice.stockStatus, RunPod's words for how many GPUs of a type can be had at once.
STOCK: dict[str, Availability] = {"high": Availability.IN_STOCK,
                                  "medium": Availability.IN_STOCK,
                                  "low": Availability.LOW}
# The REST catalog's AvailabilityLevel: the same words, and NONE for none to be had.
REST_STOCK: dict[str, Availability] = {**STOCK, "none": Availability.OUT_OF_STOCK}
IN_STOCK = frozenset({Availability.IN_STOCK, Availability.LOW})  # a data centre that has some
REST_REQUIRED = ("id", "secure", "community", "price")
SPOT_NOT_READ = ("spot and bid prices not read: RunPod's REST catalog publishes none and the "
                 "GraphQL query did not answer, so the spot offers stay as they were")

# tier -> (availability flag, on-demand price field, spot price field)
TIERS: dict[str, tuple[str, str, str]] = {
    "secure": ("secureCloud", "securePrice", "secureSpotPrice"),
    "community": ("communityCloud", "communityPrice", "communitySpotPrice"),
}
ANY_TIER = "any"  # lowestPrice: the cheapest across clouds
PRICE_FIELDS = ("securePrice", "communityPrice", "secureSpotPrice", "communitySpotPrice",
                "lowestPrice")


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    """GraphQL alone without a key; with one, the REST catalog and GraphQL, each on its own."""
    key = creds.get("RUNPOD_API_KEY")
    if not key:
        return [_graphql(client, None)]
    headers = {"Authorization": f"Bearer {key}"}
    return fetch_apart(NAME, {
        REST: lambda: client.get(REST_URL, params=REST_PARAMS, headers=headers),
        GRAPHQL: lambda: _graphql(client, headers),
    })


def _graphql(client: HttpClient, headers: dict[str, str] | None) -> Capture:
    try:
        return client.post_json(GRAPHQL_URL, {"query": GPU_TYPES_QUERY}, headers=headers)
    except FetchError as exc:
        raise _explained(exc, keyed=headers is not None) from None


def _explained(exc: FetchError, *, keyed: bool) -> FetchError:
    """The two statuses reported for the keyless query, said in words: 410 once the query is
    retired, 429 while it is rate-limited."""
    if exc.status == 410:
        message = ("RunPod's GraphQL gpuTypes query is gone (HTTP 410): RunPod retired it for "
                   "the REST catalog" + ("" if keyed else
                                         ", which this adapter reads when RUNPOD_API_KEY is set"))
    elif exc.status == 429:
        message = ("RunPod rate-limited the GraphQL gpuTypes query (HTTP 429, retried): "
                   + ("try again later" if keyed else
                      "set RUNPOD_API_KEY to read the REST catalog, or try again later"))
    else:
        return exc
    return FetchError(message, provider=NAME, url=exc.url, transient=exc.status == 429,
                      status=exc.status)


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers of the REST catalog and of GraphQL, each source read on its own (within one, the
    newest capture wins a key); GraphQL's offer wins a key both give.

    Complete only when GraphQL was read: it lists every offer. The REST catalog alone has no
    spot prices, so its result closes nothing and carries a Reject that says so; one source
    that cannot be read costs only its own offers (`toolkit.read_apart`)."""
    parts = {REST: [c for c in captures if _is_rest(c)],
             GRAPHQL: [c for c in captures if not _is_rest(c)]}
    result, read = read_apart(NAME, parts, lambda part: newest_wins(part, _read))
    if GRAPHQL in read:
        return result.model_copy(update={"complete": True})
    if not parts[REST]:
        return result  # nothing read at all
    notice = reject(NAME, SPOT_NOT_READ, parts[REST][0].url)
    return result.model_copy(update={"rejects": [*result.rejects, notice], "complete": False})


def _is_rest(capture: Capture) -> bool:
    return urlsplit(capture.url).path == urlsplit(REST_URL).path


def _read(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    """The offers of one body. A GPU type listed twice in it at different prices is rejected
    both times: neither price can be told to be the right one."""
    if _is_rest(capture):
        return _read_rest(capture)
    doc = json_body(NAME, capture)
    entries = _gpu_types(capture, doc)
    in_body = _tier_fields(entries)
    datacenters, rejects = _datacenters(doc)
    offers: list[ParsedOffer] = []
    for entry in entries:
        good, bad = _offers(entry, capture, in_body, datacenters)
        offers += good
        rejects += bad
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*rejects, *conflicts]


def _tier_fields(entries: list[Any]) -> frozenset[str]:
    """The per-cloud price fields some entry of the body has."""
    names = {f for _, on_demand, spot in TIERS.values() for f in (on_demand, spot)}
    return frozenset(f for e in entries if isinstance(e, dict) for f in names if f in e)


# -- body -------------------------------------------------------------------------------------


def _gpu_types(capture: Capture, doc: Any) -> list[Any]:
    """The gpuTypes list from a GraphQL envelope, or a bare list as one collector stored it."""
    if isinstance(doc, dict):
        if doc.get("errors"):  # even next to partial data: fields may be null, so refuse it
            messages = "; ".join(str(e.get("message", e)) if isinstance(e, dict) else str(e)
                                 for e in doc["errors"])
            raise parse_error(NAME, capture, f"GraphQL errors: {messages}", "errors")
        doc = as_dict(doc.get("data")).get("gpuTypes")
    if not isinstance(doc, list):
        raise parse_error(NAME, capture, "expected data.gpuTypes to be a list", "data.gpuTypes")
    return _checked(doc, capture)


def _datacenters(doc: Any) -> tuple[dict[str, str], list[Reject]]:
    """GPU type id -> the listed data centres that have it available now ("EU-RO-1,US-WA-2"),
    from the `dataCenters` block the query asks for beside the prices. Bodies recorded without
    the block give none; a block that cannot be read costs a Reject, never a price."""
    block = as_dict(doc.get("data")).get("dataCenters") if isinstance(doc, dict) else None
    if block is None:
        return {}, []
    if not isinstance(block, list):
        return {}, [Reject(provider=NAME, raw=json.dumps(block)[:500],
                           reason=f"dataCenters is not a list ({type(block).__name__}): "
                                  "data-centre availability not read, prices unaffected")]
    found: dict[str, set[str]] = {}
    rejects: list[Reject] = []
    for dc in block:
        rows = dc.get("gpuAvailability") if isinstance(dc, dict) else None
        if not isinstance(dc, dict) or not isinstance(dc.get("id"), str) or \
                not isinstance(rows, list):
            rejects.append(Reject(provider=NAME, raw=json.dumps(dc)[:500],
                                  reason="dataCenters entry without an id or gpuAvailability"))
            continue
        for row in rows:
            gpu = row.get("gpuTypeId") if isinstance(row, dict) else None
            # `listed` false is a data centre RunPod does not offer for deployment
            if isinstance(gpu, str) and dc.get("listed") is True and row.get("available") is True:
                found.setdefault(gpu, set()).add(dc["id"])
    return {gpu: ",".join(sorted(ids)) for gpu, ids in found.items()}, rejects


def _checked(doc: list[Any], capture: Capture) -> list[Any]:
    """GPU type entries whose field names are the ones these rules read."""
    entries = [e for e in doc if isinstance(e, dict)]
    # A field renamed upstream is a field that no entry has: refuse the body rather than read
    # it as "nothing offered".
    require_fields(NAME, capture, entries, ("id",), "gpuTypes entry")
    if entries and not any(f in e for e in entries for f in PRICE_FIELDS):
        raise parse_error(NAME, capture, "no gpuTypes entry has a price field", "securePrice")
    if entries and not any(t[0] in e for e in entries for t in TIERS.values()):
        raise parse_error(NAME, capture, "no gpuTypes entry says which clouds offer it "
                          "(secureCloud, communityCloud): prices cannot be told from "
                          "placeholders", "secureCloud")
    # Per-cloud prices come in pairs (securePrice with communityPrice, secureSpotPrice with
    # communitySpotPrice; a query asks for a pair or not at all): one of a pair missing from
    # every entry while the other is there was renamed upstream, and reading on would drop its
    # offers unseen.
    present = _tier_fields(entries)
    pairs = list(zip(*((on_demand, spot) for _, on_demand, spot in TIERS.values()), strict=True))
    for pair in pairs:
        missing = [f for f in pair if f not in present]
        if missing and len(missing) < len(pair):
            raise parse_error(NAME, capture, f"no gpuTypes entry has '{missing[0]}' although "
                              f"they have {', '.join(f for f in pair if f in present)}",
                              missing[0])
    return doc


# -- one GPU type -----------------------------------------------------------------------------


class _Price(NamedTuple):
    tier: str
    model: PricingModel
    field: str
    value: Any
    kind: PriceKind


def _offers(entry: Any, capture: Capture, in_body: frozenset[str] = frozenset(),
            datacenters: Mapping[str, str] | None = None,
            ) -> tuple[list[ParsedOffer], list[Reject]]:
    raw = json.dumps(entry, sort_keys=True)
    if not isinstance(entry, dict) or not isinstance(entry.get("id"), str) or not entry["id"]:
        return [], [Reject(provider=NAME, reason="gpuTypes entry without an id", raw=raw)]
    lowest = as_dict(entry.get("lowestPrice"))
    prices, rejects = _prices(entry, lowest, raw, in_body)
    offers: list[ParsedOffer] = []
    for p in prices:
        if p.value is None or p.value == 0:
            continue  # not offered in this tier
        key = f"{entry['id']}|{p.tier}|{p.model.value}"
        price = positive_number(p.value)
        if price is None:
            rejects.append(Reject(provider=NAME, reason=f"{p.field} is not a price: {p.value!r}",
                                  raw=raw, offer_key=key))
            continue
        try:
            offers.append(_offer(entry, capture, key, p, price, lowest,
                                 (datacenters or {}).get(entry["id"])))
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


def _offer(entry: dict[str, Any], capture: Capture, key: str, price: _Price, value: float,
           lowest: dict[str, Any], datacenters: str | None) -> ParsedOffer:
    data: ProviderData = {"display_name": entry.get("displayName"), "cloud": price.tier,
                          "price_field": price.field}
    if isinstance(entry.get("maxGpuCount"), int):
        data["max_gpu_count"] = entry["maxGpuCount"]
    stock = lowest.get("stockStatus")
    if stock is not None:
        data["stock_status"] = str(stock)
    if datacenters:
        data["datacenters_available"] = datacenters
    return ParsedOffer(
        provider=NAME, offer_key=key, gpu_label=entry["id"], gpu_count=1,
        vram_gb_per_gpu=positive_number(entry.get("memoryInGb")),
        pricing_model=price.model, price_per_hour=value, price_kind=price.kind,
        availability=STOCK.get(stock.lower(), Availability.UNKNOWN) if isinstance(stock, str)
        else Availability.UNKNOWN,
        source_url=capture.url, observed_at=capture.fetched_at, provider_data=data,
    )


# -- the REST catalog -------------------------------------------------------------------------


def _read_rest(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    _, gpus = envelope(NAME, capture, "gpus")
    # A renamed field shows as a field that no entry has: refuse, don't read "nothing offered".
    require_fields(NAME, capture, gpus, REST_REQUIRED, "gpus entry")
    cloud = parse_qs(urlsplit(capture.url).query).get(REST_CLOUD_PARAM, [REST_DEFAULT_CLOUD])[0]
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for entry in gpus:
        good, bad = _rest_offers(entry, capture, stock_tier=cloud.lower())
        offers += good
        rejects += bad
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*rejects, *conflicts]


def _rest_offers(entry: Any, capture: Capture, stock_tier: str,
                 ) -> tuple[list[ParsedOffer], list[Reject]]:
    """The on-demand offers of one GPU type, one per cloud whose flag is true and whose price
    is not 0 or null (not offered there, as in GraphQL). `stock_tier`: the cloud whose stock
    `availability` and `dataCenters` describe."""
    if not isinstance(entry, dict) or not isinstance(entry.get("id"), str) or not entry["id"]:
        return [], [reject(NAME, "gpus entry without an id", entry)]
    prices = as_dict(entry.get("price"))
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for tier in TIERS:
        key = f"{entry['id']}|{tier}|{PricingModel.ON_DEMAND.value}"
        flag, value = entry.get(tier), prices.get(tier)
        if flag is False or value is None or value == 0:
            continue
        if flag is not True:
            rejects.append(reject(NAME, f"price.{tier} without a boolean '{tier}' flag: may be a "
                                  "placeholder", entry, key))
            continue
        price = positive_number(value)
        if price is None:
            rejects.append(reject(NAME, f"price.{tier} is not a price: {value!r}", entry, key))
            continue
        try:
            offers.append(_rest_offer(entry, capture, key, tier, price,
                                      stocked=tier == stock_tier))
        except ValidationError as exc:
            rejects.append(reject(NAME, f"invalid offer: {exc.errors()[0]['msg']}", entry, key))
    return offers, rejects


def _rest_offer(entry: dict[str, Any], capture: Capture, key: str, tier: str, price: float,
                *, stocked: bool) -> ParsedOffer:
    data: ProviderData = {"display_name": entry.get("name"), "cloud": tier,
                          "price_field": f"price.{tier}"}
    most = as_dict(entry.get("maxCount")).get(tier)
    if isinstance(most, int) and not isinstance(most, bool):
        data["max_gpu_count"] = most
    level = entry.get("availability") if stocked else None
    if isinstance(level, str):
        data["stock_status"] = level
    if stocked:
        centres = sorted(dc["id"] for dc in as_list(entry.get("dataCenters"))
                         if isinstance(dc, dict) and isinstance(dc.get("id"), str)
                         and _level(dc.get("availability")) in IN_STOCK)
        if centres:
            data["datacenters_available"] = ",".join(centres)
    return ParsedOffer(
        provider=NAME, offer_key=key, gpu_label=entry["id"], gpu_count=1,
        vram_gb_per_gpu=positive_number(entry.get("memory")),
        pricing_model=PricingModel.ON_DEMAND, price_per_hour=price, price_kind=PriceKind.LISTED,
        availability=_level(level), source_url=capture.url, observed_at=capture.fetched_at,
        provider_data=data,
    )


def _level(value: Any) -> Availability:
    """A REST AvailabilityLevel as gpuscout's availability; unknown for anything else."""
    return REST_STOCK.get(value.lower(), Availability.UNKNOWN) if isinstance(value, str) \
        else Availability.UNKNOWN
