"""Vast.ai: marketplace asks from the public offer search (`/api/v0/bundles/`), aggregated.

The server clamps every answer: asked for 400 asks it returned 64 (getcomputable/gpu-index
`observatory/sources/vast.py@80432d5`, measured 2026-08-22), and one cheapest-first search of the
whole marketplace came back as "the cheapest slice of the whole marketplace, which is consumer
cards" (markrusch/Compute-Indices `collectors/vast_ai.py@28a2e76`, 2026-09-11). A short answer is
therefore no proof of the end of a listing, and the marketplace is read in slices, each paged
below the clamp until the server says it is done:

- Slices: one per GPU name in `SLICE_NAMES` (`gpu_name eq`), the datacenter cards the public
  collectors read one by one, then everything else (`gpu_name notin` those names). Together
  they cover every ask once; `notin` is an operator of Vast.ai's query language
  (vast-ai/vast-cli@55679830 `vast.py` `search__offers` and `tests/test_unparse_query.py`).
- Pages: `limit` is `LIMIT` (50), below the clamp (`CLAMP`, 64), as both collectors keep it. A
  page holding `min(limit, CLAMP)` asks or more is full, so possibly cut: it is followed by the
  next one from a price cursor, the same query plus `"dph_total": {"gte": <last price>}`, until
  a page comes back shorter. `gte`, not `gt`: asks tied at the cursor that the page cut off come
  back on the next page; the ones seen twice are the same ask id and are counted once.
- The query travels as `GET /api/v0/bundles/?q=<JSON>`, the form both collectors run live (and
  the one behind the bundled recording) rather than the client's POST of the same JSON: the URL
  then records which slice and page a response answers, so `parse()` can tell from the captures
  alone whether every slice was read to its end. The JSON is the client's search body
  (vast-cli `vastai/api/offers.py` `search_offers`): filters `{"<field>": {"<op>": value}}`,
  `order` `[["dph_total", "asc"]]`, `type` on-demand, `limit`, and `allocated_storage` 5 GiB (the
  client's default: `dph_total` includes the storage charge for that much disk).

A listing is complete only when every slice of the plan ended on a short page. A slice that
failed, that could not be paged on (a full page not ordered by price, all at one price, or
without ask ids), that hit `MAX_PAGES`, or a whole-marketplace answer of an older archive (no
slice in its URL, so possibly clamped) makes the result incomplete: its asks are loaded, nothing
vanished is closed. A failed slice does not stop the others; when every slice failed the fetch
fails. Offline, the bundled recording answers the eight named slices, not the rest of the
marketplace, so the offline listing is (truthfully) incomplete.

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
from urllib.parse import parse_qs, urlsplit

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
# Asks in one answer at most, whatever `limit` asks for (module docstring).
CLAMP = 64
# Asks per page: below the clamp, so that a clamped answer is a full page, never a last one.
LIMIT = 50
# Pages of one slice: 5,000 asks, far above any one GPU's; stops a cursor that never ends.
MAX_PAGES = 100
# Seconds between requests on the network: a burst drew a 429 (gpu-index, 2026-08-22).
SPACING_S = 0.75
# The GPU names read one slice each, before the rest of the marketplace (module docstring).
SLICE_NAMES: tuple[str, ...] = ("B200", "H200", "H100 SXM", "H100 NVL", "H100 PCIE",
                                "A100 SXM4", "A100 PCIE", "L40S")
# Every rentable on-demand ask of a slice, cheapest first (the client's `-o dph`).
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

GpuFilter = dict[str, Any]  # the `gpu_name` filter of one slice: {"eq": name} or {"notin": [...]}


@dataclass(frozen=True)
class _Ask:
    gpu_name: str
    num_gpus: int
    vram_gb: int
    country: str | None
    raw: dict[str, Any]
    capture: Capture


class _Unpageable(Exception):
    """A full page that paging on from its last price could lose asks after."""


def slices() -> list[GpuFilter]:
    """The plan: one slice per named GPU, then every other GPU name."""
    return [*({"eq": name} for name in SLICE_NAMES), {"notin": list(SLICE_NAMES)}]


def page_query(gpu_filter: GpuFilter, cursor: float | None = None) -> dict[str, Any]:
    """The search of one page: QUERY for the slice, from the price `cursor` on when given."""
    query = {**QUERY, "gpu_name": gpu_filter}
    return query if cursor is None else {**query, "dph_total": {"gte": cursor}}


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    """Every page of every slice, one capture each (module docstring)."""
    key = creds.get("VAST_API_KEY")
    headers = {"Authorization": f"Bearer {key}"} if key else None
    captures: list[Capture] = []
    failed: list[FetchError] = []
    for gpu_filter in slices():
        try:
            captures += _read_slice(client, gpu_filter, headers)
        except FetchError as exc:  # noted by the client; parse() finds the slice unread
            failed.append(exc)
    if failed and not captures:
        raise failed[0]  # nothing read at all: the search is down or refuses us
    return captures


def _read_slice(client: HttpClient, gpu_filter: GpuFilter,
                headers: Mapping[str, str] | None) -> list[Capture]:
    """The pages of one slice until a short one; a page that fails ends it (FetchError) with
    the pages before it kept (the client notes the error)."""
    pages: list[Capture] = []
    cursor: float | None = None
    while True:
        client.pace(SPACING_S)
        try:
            pages.append(client.get(BUNDLES_URL, headers=headers,
                                    params={"q": _encode(page_query(gpu_filter, cursor))}))
        except FetchError:
            if not pages:
                raise
            return pages  # the slice's last page is full: parse() reads it as cut
        asks = _page_asks(pages[-1])
        if asks is None or not _full(len(asks), LIMIT):
            return pages  # the last page (one parse() cannot read is its ParseError)
        if len(pages) == MAX_PAGES:
            client.note(FetchError(f"the {_slice_name(gpu_filter)} slice still fills {LIMIT} "
                                   f"asks a page after {MAX_PAGES} pages: it is read as cut",
                                   provider=NAME, url=pages[-1].url, transient=False))
            return pages
        try:
            cursor = _next_cursor(asks, cursor)
        except _Unpageable as why:
            client.note(FetchError(f"page {len(pages)} of the {_slice_name(gpu_filter)} slice "
                                   f"holds {len(asks)} asks (a full page) but {why}: the slice "
                                   "is read as cut", provider=NAME, url=pages[-1].url,
                                   transient=False))
            return pages


def _encode(query: Mapping[str, Any]) -> str:
    return json.dumps(query, separators=(",", ":"), sort_keys=True)


def _full(asks: int, limit: int) -> bool:
    """A page that may have been cut: as many asks as asked for, or as the clamp allows."""
    return asks >= min(limit, CLAMP)


def _slice_name(gpu_filter: GpuFilter) -> str:
    return str(gpu_filter["eq"]) if "eq" in gpu_filter else "other GPUs'"


def _page_asks(capture: Capture) -> list[Any] | None:
    """The asks of a page as fetch() needs them to page on; None when the body is not a listing
    (parse() reports it)."""
    try:
        doc = json.loads(capture.read_bytes())
    except ValueError:
        return None
    asks = doc.get("offers") if isinstance(doc, dict) else doc
    return asks if isinstance(asks, list) else None


def _next_cursor(asks: list[Any], cursor: float | None) -> float:
    """The last price of a full page, checked so that paging from it loses no ask."""
    prices = [positive_number(a.get("dph_total")) if isinstance(a, dict) else None
              for a in asks]
    if any(p is None for p in prices):
        raise _Unpageable("not every ask has a positive dph_total")
    ordered = [p for p in prices if p is not None]
    if any(later < earlier for earlier, later in pairwise(ordered)):
        raise _Unpageable("its asks are not ordered by dph_total")
    if any(_ask_id(a) is None for a in asks):
        raise _Unpageable("not every ask has an id to tell the next page's repeats")
    if cursor is not None and ordered[-1] <= cursor:
        raise _Unpageable(f"every ask is at ${cursor}/h, where the page started")
    return ordered[-1]


def parse(captures: Sequence[Capture]) -> ParseResult:
    groups: dict[tuple[str, int, int, str | None, PricingModel], list[tuple[float, _Ask]]]
    groups = defaultdict(list)
    rejects: list[Reject] = []
    pages = [(capture, _asks(capture)) for capture in captures]
    rows = [(raw, capture) for capture, asks in pages for raw in asks]
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
    return ParseResult(offers=offers, rejects=[*rejects, *bad], complete=_read_to_the_end(pages))


def _read_to_the_end(pages: Sequence[tuple[Capture, list[Any]]]) -> bool:
    """True when every slice of the plan ended on a short page (module docstring)."""
    last: dict[str, tuple[float, int, int]] = {}  # slice -> (cursor, asks, limit) of its last page
    for capture, asks in pages:
        query = _query(capture)
        if query is None or not isinstance(query.get("gpu_name"), dict):
            return False  # the whole marketplace in one answer: possibly clamped
        key = _encode(query["gpu_name"])
        cursor = finite_number(query["dph_total"].get("gte")) \
            if isinstance(query.get("dph_total"), dict) else None
        at = float("-inf") if cursor is None else cursor
        limit = query.get("limit")
        limit = limit if isinstance(limit, int) and not isinstance(limit, bool) else CLAMP
        if key not in last or at >= last[key][0]:
            last[key] = (at, len(asks), limit)
    plan = {_encode(gpu_filter) for gpu_filter in slices()}
    return plan <= last.keys() and not any(_full(n, limit) for _, n, limit in last.values())


def _query(capture: Capture) -> dict[str, Any] | None:
    """The search a page answers, from its URL (`?q=<JSON>`); None for a POSTed search."""
    values = parse_qs(urlsplit(capture.url).query).get("q")
    if not values:
        return None
    try:
        query = json.loads(values[-1])
    except ValueError:
        return None
    return query if isinstance(query, dict) else None


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
