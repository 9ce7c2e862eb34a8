"""Vast.ai: marketplace asks from the public offer search (`/api/v0/bundles/`), aggregated.

The request is the one Vast.ai's own client sends for `vastai search offers -n -o dph
--limit 3000 rentable=true`: `POST https://console.vast.ai/api/v0/bundles/` with a JSON body of
filters (`{"<field>": {"<op>": value}}`) plus `order` (a list of `[field, "asc"|"desc"]`),
`type`, `limit` and `allocated_storage` (vast-ai/vast-cli@55679830 `vastai/api/offers.py`
`search_offers` and `vastai/cli/commands/offers.py` `search__offers`, 2026-07/08; the same body
in vast-ai/vast-python@b25bd952 `vast.py` `search__offers`, 2024-12-13; body fields in
vast-ai/docs@c6246226 `api-reference/openapi/yaml/search_offers.yaml`). `allocated_storage` is
the CLI's default 5 GiB: `dph_total` includes the storage charge for that much disk (the
server's own default is documented as 8 GB), so it is pinned rather than left to the server.

One response is capped at `limit` asks. Asks are ordered by `dph_total` ascending, and a page
that fills the limit is followed by the next one from a price cursor: the same body plus
`"dph_total": {"gte": <last price of the page>}`, until a page comes back shorter than the
limit. `gte`, not `gt`: asks tied at the cursor price that the cap cut off come back on the
next page; the ones seen twice are the same ask id and are counted once. The cheapest asks are
on the first page, so no GPU's lowest ask is cut; a search that cannot be paged to its end
(a full page not ordered by price, all at one price, without ids, or more than `MAX_PAGES`
pages) is a FetchError, and a page that fails fails the whole fetch: never a cut list taken as
the marketplace. Offline, the bundled snapshot answers the first page; it is shorter than the
limit, so that is the only request.

A marketplace answers with thousands of individual asks (one host, one machine, one price) that
come and go every night. Keeping each ask as an offer would make price history a list of
births and deaths, so asks are grouped into one offer per (GPU name, GPUs per ask, VRAM per GPU
in whole GB, country, pricing model): the price is the cheapest ask, `available_count` the number
of asks, and the median and highest ask go into `provider_data`. Prices are observed, not listed.

Units, as the payloads show them (adapters/snapshots/vastai/PROVENANCE.md):
- `dph_total` is $/hour for the whole ask: all its GPUs plus the storage charge
  (`dph_base` + `storage_total_cost` in the full-schema offer). `min_bid`, the lowest bid that
  wins the same ask as an interruptible instance, is taken as whole-ask $/hour too (as gpuhunt
  does); no payload states its unit.
- `gpu_ram` is MiB per GPU. GPU memory is sold in binary units ("80 GB" = 80 GiB = 81920 MiB),
  which is also how the GPU catalog records VRAM, so VRAM = MiB / 1024 (24564 MiB -> 24 GB,
  not the 25.8 decimal GB). Reported values sit a little under nominal (81559 MiB on an H100);
  the catalog resolves with a tolerance.
- `cpu_ram` is MiB for the whole machine; an ask gets the share `gpu_frac` of it (docs.vast.ai,
  "Docker environment": RAM is allocated in proportion to the share of GPUs).
  `cpu_cores_effective` is already that share. `disk_space` is GB.

Marketplace trust figures of the cheapest ask are kept in `provider_data` for filtering:
`reliability` (the API reference's 0-1 machine reliability score), `reliability2` (no source
defines it; equal to `reliability` in the one full-schema offer), `score` (the client's default
sort key) and `verification` ("verified", "unverified" or "deverified" per the API reference);
where asks carry `verification`, also the count of verified asks and the cheapest of them.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from pydantic import ValidationError

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    envelope,
    finite_number,
    is_scalar,
    positive_number,
    require_fields,
    split_results,
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

BUNDLES_URL = "https://console.vast.ai/api/v0/bundles/"
# Asks per page: the limit gpuhunt asks of the same endpoint.
LIMIT = 3000
# 60,000 asks: far above the marketplace's size, low enough to stop a cursor that never ends.
MAX_PAGES = 20
# Every rentable on-demand ask, cheapest first (the client's `-o dph`: dph -> dph_total, asc).
QUERY: dict[str, Any] = {"rentable": {"eq": True}, "type": "on-demand",
                         "order": [["dph_total", "asc"]], "limit": LIMIT,
                         "allocated_storage": 5.0}

NAME = "vastai"
SOURCE_KIND: SourceKind = "api"
CREDENTIALS: tuple[str, ...] = ("VAST_API_KEY",)
OPTIONAL_CREDENTIALS = CREDENTIALS  # the search works without a key

REQUIRED = ("gpu_name", "num_gpus", "gpu_ram", "dph_total")
# What an offer is made of: the same ask id with any of these different is two conflicting asks.
OFFER_FIELDS = (*REQUIRED, "min_bid", "geolocation", "gpu_frac", "cpu_ram",
                "cpu_cores_effective", "disk_space")
MIB = 2**20


@dataclass(frozen=True)
class _Ask:
    gpu_name: str
    num_gpus: int
    vram_gb: int
    country: str | None
    raw: dict[str, Any]
    capture: Capture


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    """Every page of the price-ordered search, one capture each (module docstring)."""
    key = creds.get("VAST_API_KEY")
    headers = {"Authorization": f"Bearer {key}"} if key else None
    captures: list[Capture] = []
    cursor: float | None = None
    while len(captures) < MAX_PAGES:
        capture = client.post_json(BUNDLES_URL, page_query(cursor), headers=headers)
        captures.append(capture)
        asks = _page_asks(capture)
        if asks is None or len(asks) < LIMIT:
            return captures  # the last page (one parse() cannot read is its ParseError)
        cursor = _next_cursor(asks, cursor, capture, len(captures))
    raise FetchError(f"the search still fills {LIMIT} asks a page after {MAX_PAGES} pages: "
                     "the marketplace would be cut", provider=NAME, url=BUNDLES_URL,
                     transient=False)


def page_query(cursor: float | None) -> dict[str, Any]:
    """The request body: QUERY, from the price `cursor` on when one is given."""
    return {**QUERY} if cursor is None else {**QUERY, "dph_total": {"gte": cursor}}


def _page_asks(capture: Capture) -> list[Any] | None:
    """The asks of a page as fetch() needs them to page on; None when the body is not a listing
    (parse() reports it)."""
    try:
        doc = json.loads(capture.read_bytes())
    except ValueError:
        return None
    asks = doc.get("offers") if isinstance(doc, dict) else doc
    return asks if isinstance(asks, list) else None


def _next_cursor(asks: list[Any], cursor: float | None, capture: Capture, page: int) -> float:
    """The last price of a full page, checked so that paging from it loses no ask."""
    def fail(why: str) -> FetchError:
        return FetchError(f"page {page} holds {len(asks)} asks (the limit) but {why}: the "
                          "search cannot be paged to its end", provider=NAME, url=capture.url,
                          transient=False)

    prices = [positive_number(a.get("dph_total")) if isinstance(a, dict) else None
              for a in asks]
    if any(p is None for p in prices):
        raise fail("not every ask has a positive dph_total")
    ordered = [p for p in prices if p is not None]
    if any(later < earlier for earlier, later in pairwise(ordered)):
        raise fail("its asks are not ordered by dph_total")
    if any(_ask_id(a) is None for a in asks):
        raise fail("not every ask has an id to tell the next page's repeats")
    if cursor is not None and ordered[-1] <= cursor:
        raise fail(f"every ask is at ${cursor}/h, where the page started")
    return ordered[-1]


def parse(captures: Sequence[Capture]) -> ParseResult:
    groups: dict[tuple[str, int, int, str | None, PricingModel], list[tuple[float, _Ask]]]
    groups = defaultdict(list)
    rejects: list[Reject] = []
    rows = [(raw, capture) for capture in captures for raw in _asks(capture)]
    twice = _conflicting_ids(raw for raw, _ in rows)
    seen: set[int | str] = set()
    for raw, capture in rows:
        ask = _ask(raw, capture)
        if isinstance(ask, Reject):
            rejects.append(ask)
            continue
        ask_id = _ask_id(raw)
        if ask_id in twice:
            # The same ask twice with different figures: neither can be told to be right.
            rejects += [Reject(provider=NAME, raw=json.dumps(raw, sort_keys=True),
                               offer_key=_key(ask, model),
                               reason=f"ask id {ask_id} is listed twice, with two different "
                                      "prices or figures")
                        for model in _models(raw)]
            continue
        if ask_id is not None and ask_id in seen:
            continue  # the same ask repeated word for word: one ask
        if ask_id is not None:
            seen.add(ask_id)
        base = (ask.gpu_name, ask.num_gpus, ask.vram_gb, ask.country)
        for model in _models(raw):
            price = raw["dph_total"] if model is PricingModel.ON_DEMAND else raw["min_bid"]
            groups[(*base, model)].append((float(price), ask))
    offers, bad = split_results(
        _offer(name, count, vram, country, model, sorted(asks, key=lambda a: a[0]))
        for (name, count, vram, country, model), asks in sorted(groups.items(),
                                                                key=_group_order))
    return ParseResult(offers=offers, rejects=[*rejects, *bad])


def _ask_id(raw: dict[str, Any]) -> int | str | None:
    """An ask's marketplace id, when the payload carries one (the full schema does)."""
    ask_id = raw.get("id")
    return ask_id if isinstance(ask_id, int | str) and not isinstance(ask_id, bool) else None


def _conflicting_ids(rows: Iterable[Any]) -> set[int | str]:
    """Ids listed more than once with different figures of the offer.

    Only the figures an offer is made of are compared: an ask repeated on the next page of the
    search comes back seconds later, with its countdowns (`duration`) and scores moved on."""
    first: dict[int | str, tuple[Any, ...]] = {}
    out: set[int | str] = set()
    for raw in rows:
        ask_id = _ask_id(raw) if isinstance(raw, dict) else None
        if ask_id is None:
            continue
        figures = tuple(raw.get(f) for f in OFFER_FIELDS)
        if ask_id in first and first[ask_id] != figures:
            out.add(ask_id)
        first.setdefault(ask_id, figures)
    return out


def _models(raw: dict[str, Any]) -> list[PricingModel]:
    """On-demand always; spot too when the ask has a positive `min_bid`."""
    spot = positive_number(raw.get("min_bid")) is not None
    return [PricingModel.ON_DEMAND, *([PricingModel.SPOT] if spot else [])]


def _key(ask: _Ask, model: PricingModel) -> str:
    return _offer_key(ask.gpu_name, ask.num_gpus, ask.vram_gb, ask.country, model)


def _offer_key(name: str, count: int, vram: int, country: str | None,
               model: PricingModel) -> str:
    return f"{name}|{count}x|{vram}GB|{country or '*'}|{model.value}"


# -- body -------------------------------------------------------------------------------------


def _asks(capture: Capture) -> list[Any]:
    """The asks from the API envelope {"offers": [...]} or a bare list (CLI --raw)."""
    _, asks = envelope(NAME, capture, "offers", bare_list=True)
    # a field renamed upstream is missing from every ask
    require_fields(NAME, capture, asks, REQUIRED, "offer")
    return asks


# -- one ask ----------------------------------------------------------------------------------


def _ask(raw: Any, capture: Capture) -> _Ask | Reject:
    if not isinstance(raw, dict):
        return _reject(f"offer is not an object: {type(raw).__name__}", raw)
    name, count, ram, price = (raw.get(f) for f in REQUIRED)
    if not isinstance(name, str) or not name.strip():
        return _reject("missing gpu_name", raw)
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        return _reject(f"num_gpus is not a positive integer: {count!r}", raw)
    ram_mib = positive_number(ram)
    if ram_mib is None:
        return _reject(f"gpu_ram is not a positive number: {ram!r}", raw)
    if positive_number(price) is None:
        return _reject(f"dph_total is not a positive price: {price!r}", raw)
    return _Ask(gpu_name=name.strip(), num_gpus=count, vram_gb=round(ram_mib / 1024),
                country=_country(raw.get("geolocation")), raw=raw, capture=capture)


def _country(geolocation: Any) -> str | None:
    """'Guangxi, CN' -> 'CN'; a location without a comma is kept whole."""
    if not isinstance(geolocation, str) or not geolocation.strip():
        return None
    return geolocation.rsplit(",", 1)[-1].strip()


def _reject(reason: str, raw: Any) -> Reject:
    return Reject(provider=NAME, reason=reason, raw=json.dumps(raw, sort_keys=True))


# -- one aggregated offer ---------------------------------------------------------------------


def _offer(name: str, count: int, vram: int, country: str | None, model: PricingModel,
           asks: list[tuple[float, _Ask]]) -> ParsedOffer | Reject:
    prices = [p for p, _ in asks]
    price, cheapest = asks[0]
    raw = cheapest.raw
    key = _offer_key(name, count, vram, country, model)
    data: ProviderData = {
        "ask_count": len(asks),
        "median_ask": round(statistics.median(prices), 6),
        "max_ask": prices[-1],
        # the cheapest ask, which sets the price and the machine figures below
        "min_ask_id": raw.get("id"),
        "min_ask_gpu_ram_mib": raw["gpu_ram"],
        "min_ask_gpu_frac": raw.get("gpu_frac"),
        "min_ask_reliability": raw.get("reliability"),
        "min_ask_inet_down_mbps": raw.get("inet_down"),
        "min_ask_inet_up_mbps": raw.get("inet_up"),
        "min_ask_geolocation": raw.get("geolocation"),
        "min_ask_reliability2": raw.get("reliability2"),
        "min_ask_score": raw.get("score"),
        "min_ask_verification": raw.get("verification"),
        **_verified_asks(asks),
    }
    disk = positive_number(raw.get("disk_space"))
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, gpu_label=name, gpu_count=count,
            vram_gb_per_gpu=vram or None, pricing_model=model, price_per_hour=price,
            price_kind=PriceKind.OBSERVED, region=country,
            vcpus=positive_number(raw.get("cpu_cores_effective")), ram_gb=_ram_share_gb(raw),
            disk_gb=round(disk, 1) if disk else None, availability=Availability.IN_STOCK,
            available_count=len(asks), source_url=cheapest.capture.url,
            observed_at=cheapest.capture.fetched_at,
            provider_data={k: v for k, v in data.items() if is_scalar(v)},
        )
    except ValidationError as exc:
        return Reject(provider=NAME, reason=f"invalid offer: {exc.errors()[0]['msg']}",
                      raw=json.dumps(raw, sort_keys=True), offer_key=key)


def _verified_asks(asks: list[tuple[float, _Ask]]) -> ProviderData:
    """How many asks are on verified machines and the cheapest of them, when asks say."""
    if not any("verification" in ask.raw for _, ask in asks):
        return {}
    verified = [price for price, ask in asks if ask.raw.get("verification") == "verified"]
    return {"verified_ask_count": len(verified),
            "min_verified_ask": verified[0] if verified else None}


def _ram_share_gb(raw: dict[str, Any]) -> float | None:
    ram, frac = positive_number(raw.get("cpu_ram")), finite_number(raw.get("gpu_frac"))
    if ram is None or frac is None or not 0 < frac <= 1:
        return None
    return round(ram * frac * MIB / 1e9, 1)


def _group_order(item: tuple[tuple[str, int, int, str | None, PricingModel], Any]
                 ) -> tuple[str, int, int, str, str]:
    name, count, vram, country, model = item[0]
    return (name, count, vram, country or "", model.value)
