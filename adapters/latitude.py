"""Latitude.sh: bare-metal plan prices from the flight data of the public pricing page.

Layout (2026-08, adapters/snapshots/latitude/PROVENANCE.md): a Next.js page whose React flight
data (JS strings pushed by `self.__next_f.push`, so every quote is escaped as `\\"`) holds
`"plansData":{"servers":[...]}`, one JSON:API object per bare-metal plan:
`{"id", "type": "plans", "attributes": {"slug", "name", "specs", "regions", ...}}`.
- `specs.gpu` is `{"count", "type", "vram_per_gpu", "interconnect"}` on a GPU plan and `{}` on
  a CPU-only plan; `specs` also has `cpu`, `memory.total`, `drives` and `nics`.
- each of `regions` is a country (`name`) with `locations.available` / `locations.in_stock`
  site codes, a `stock_level` and `pricing`: per currency (USD, BRL) the whole machine's price
  `{"hour", "month", "year"}`.

Reading rules:
- An offer is one whole machine of a GPU plan in one region; CPU-only plans are skipped. The
  flight string is decoded as a JS string, then each plan object is read as JSON; a body that
  ends inside the plan list (a cut excerpt) is read as incomplete.
- `hour` is the on-demand price. `month` and `year` are committed terms: reserved offers whose
  hourly price is derived from the amount (730 h a month, 8760 h a year), which goes into
  `provider_data`.
- Prices are read in USD; the page's own BRL list price goes into `provider_data`. A null or 0
  price is "not offered" (the page prints both for a region that has no such plan); a region
  priced in one currency and not in the other, or a price that is no number, is a reject.
- `stock_level` high / medium is in stock, low is low, unavailable is out of stock; a priced
  region can be out of stock. `memory.total` is read as GB. Cores are not vCPUs: the CPU goes
  into `provider_data`, as do the drives and NICs.
- Two spellings: between 2026-09-21 and 2026-09-22 the page renamed five keys to camelCase
  (`vram_per_gpu` -> `vramPerGpu`, `in_stock` -> `inStock`, `stock_level` -> `stockLevel`,
  `deploys_instantly` -> `deploysInstantly`, `available_operating_systems` ->
  `availableOperatingSystems`; markrusch/Compute-Indices `collectors/computable_sources.py`
  `LATITUDE_KEY_RENAMES`@065c263, checked against the live page 2026-09-25). Each key read here
  is read under either spelling.
- A GPU plan states its VRAM: an offer of a plan without a positive `vram_per_gpu` is a reject
  (its offer stays open), never an offer with the VRAM left out. When every plan lost it, every
  row is refused and the refresh's drift gate holds the result back (pipeline/quality.py).
- "HGX" in the GPU type is an NVSwitch board; one GPU is `single`. `gpu.interconnect` (such as
  "800Gbps Dual Plane RoCE") is the machine's network when it names RoCE or InfiniBand.
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
    as_dict,
    as_list,
    finite_number,
    is_scalar,
    newest_wins,
    one_price_per_key,
    parse_error,
    positive_number,
    require_fields,
    split_results,
    stripped_text,
)
from gpuscout.core.models import (
    Availability,
    Interconnect,
    NetworkFabric,
    ParsedOffer,
    ParseResult,
    PriceKind,
    PricingModel,
    ProviderData,
    Reject,
)

PRICING_URL = "https://www.latitude.sh/pricing"

NAME = "latitude"
SOURCE_KIND: SourceKind = "html"
CREDENTIALS: tuple[str, ...] = ()

PLANS_KEY = '"plansData":'
ESCAPED_PLANS_KEY = '\\"plansData\\":'  # as it stands inside the flight string
SERVERS_KEY = '"servers":['
CURRENCY = "USD"
HOURS_PER_MONTH = 730  # 8760 h / 12: the hourly equivalent of a monthly price
HOURS_PER_YEAR = 8760
# pricing field -> (pricing model, hours the amount covers, term)
TERMS: dict[str, tuple[PricingModel, int, str | None]] = {
    "hour": (PricingModel.ON_DEMAND, 1, None),
    "month": (PricingModel.RESERVED, HOURS_PER_MONTH, "1 month"),
    "year": (PricingModel.RESERVED, HOURS_PER_YEAR, "1 year"),
}
STOCK = {
    "high": Availability.IN_STOCK,
    "medium": Availability.IN_STOCK,
    "low": Availability.LOW,
    "unavailable": Availability.OUT_OF_STOCK,
}
FABRICS = {"roce": NetworkFabric.ROCE, "infiniband": NetworkFabric.INFINIBAND}
GBPS_RE = re.compile(r"(\d+(?:\.\d+)?)\s*Gbps", re.IGNORECASE)
# A JS string ends at the first quote that no backslash escapes.
STRING_END_RE = re.compile(r'\\.|"', re.DOTALL)


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRICING_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _parse_page)


# -- page -------------------------------------------------------------------------------------


def _parse_page(capture: Capture) -> tuple[list[ParsedOffer], list[Reject], bool]:
    plans, cut = _plans(capture)
    require_fields(NAME, capture, plans, ("attributes",), "plan")
    attributes = [as_dict(p.get("attributes")) for p in plans if isinstance(p, dict)]
    require_fields(NAME, capture, attributes, ("slug", "specs", "regions"), "plan")
    gpu_plans = [a for a in attributes if _gpu_spec(a)]
    if not gpu_plans:
        raise parse_error(NAME, capture, f"none of {len(plans)} plans has a GPU", "specs.gpu")
    require_fields(NAME, capture, [_gpu_spec(a) for a in gpu_plans], ("count", "type"),
                   "GPU spec")
    regions = [r for a in gpu_plans for r in as_list(a.get("regions"))]
    require_fields(NAME, capture, regions, ("name", "pricing"), "region")
    results: list[ParsedOffer | Reject] = []
    for plan in gpu_plans:
        results += _plan(capture, plan)
    offers, rejects = split_results(results)
    offers, conflicts = one_price_per_key(NAME, offers)
    # A plan or region not read may hide an offer: the page then closes nothing.
    return offers, [*rejects, *conflicts], not cut and not rejects and not conflicts


def _plans(capture: Capture) -> tuple[list[Any], bool]:
    """The plan objects of `plansData.servers`, and whether the body ended inside the list."""
    text = _plans_text(capture)
    start = text.find(SERVERS_KEY)
    if start == -1:
        raise parse_error(NAME, capture, "plansData without a 'servers' list", "servers")
    decoder = json.JSONDecoder()
    plans: list[Any] = []
    at = start + len(SERVERS_KEY)
    while True:
        at = _skip_space(text, at)
        if text.startswith("]", at):
            return plans, False
        try:
            plan, at = decoder.raw_decode(text, at)
        except ValueError:
            return plans, True  # cut inside a plan (or the list): what came before is whole
        plans.append(plan)
        at = _skip_space(text, at)
        if text.startswith(",", at):
            at += 1
        elif not text.startswith("]", at):
            return plans, True


def _plans_text(capture: Capture) -> str:
    """The page text from `"plansData":` on, with the flight string's escapes decoded."""
    body = capture.text()
    escaped = body.find(ESCAPED_PLANS_KEY)
    if escaped != -1:
        return _js_string(capture, body, escaped)
    plain = body.find(PLANS_KEY)
    if plain == -1:
        raise parse_error(NAME, capture, "no 'plansData' in the page's flight data", "plansData")
    return body[plain:]


def _js_string(capture: Capture, body: str, start: int) -> str:
    """The rest of the JS string that holds `start`, decoded (to its end or the body's)."""
    end = len(body)
    for match in STRING_END_RE.finditer(body, start):
        if match.group() == '"':
            end = match.start()
            break
    raw = body[start:end]
    if (len(raw) - len(raw.rstrip("\\"))) % 2:  # a body cut inside an escape
        raw = raw[:-1]
    try:
        return json.loads(f'"{raw}"')
    except ValueError as exc:
        raise parse_error(NAME, capture, f"flight string does not decode ({exc})",
                          "plansData") from None


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at


# -- one plan ---------------------------------------------------------------------------------


def _gpu_spec(plan: dict[str, Any]) -> dict[str, Any]:
    """The plan's GPU spec; empty for a CPU-only plan (`{}` or null)."""
    return as_dict(as_dict(plan.get("specs")).get("gpu"))


def _plan(capture: Capture, plan: dict[str, Any]) -> list[ParsedOffer | Reject]:
    slug = stripped_text(plan.get("slug"))
    gpu = _gpu_spec(plan)
    label = stripped_text(gpu.get("type"))
    count = gpu.get("count")
    if slug is None:
        return [_reject("plan without a slug", plan)]
    if label is None:
        return [_reject(f"{slug}: GPU spec without a type", plan)]
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        return [_reject(f"{slug}: GPU count {count!r} is not a count", plan)]
    results: list[ParsedOffer | Reject] = []
    for region in as_list(plan.get("regions")):
        results += _region(capture, plan, slug, label, count, as_dict(region))
    return results


def _region(capture: Capture, plan: dict[str, Any], slug: str, label: str, count: int,
            region: dict[str, Any]) -> list[ParsedOffer | Reject]:
    name = stripped_text(region.get("name"))
    if name is None:
        return [_reject(f"{slug}: region without a name", region)]
    pricing = region.get("pricing")
    if not isinstance(pricing, dict):
        return [_reject(f"{slug}/{name}: pricing is not an object", region)]
    results: list[ParsedOffer | Reject] = []
    for term, (model, hours, period) in TERMS.items():
        prices = {cur: as_dict(block).get(term) for cur, block in pricing.items()}
        bad = {cur: v for cur, v in prices.items() if v is not None and finite_number(v) is None}
        amounts = {cur: a for cur, v in prices.items() if (a := positive_number(v)) is not None}
        offered = set(amounts)
        key = f"{slug}|{name}|{model.value}" + (f"|{period}" if period else "")
        if bad:
            results.append(_reject(f"{slug}/{name}: {term} price is no number: {bad}", region,
                                   key))
        elif offered and CURRENCY not in offered:
            results.append(_reject(f"{slug}/{name}: {term} priced in {sorted(offered)} but not "
                                   f"in {CURRENCY}", region, key))
        elif offered and offered != set(prices):
            results.append(_reject(f"{slug}/{name}: {term} priced in {sorted(offered)} only, "
                                   f"not in {sorted(set(prices) - offered)}", region, key))
        elif offered:
            results.append(_offer(capture, plan, region, key=key, label=label, count=count,
                                  region_name=name, model=model, hours=hours, period=period,
                                  amounts=amounts))
    return results


def _offer(capture: Capture, plan: dict[str, Any], region: dict[str, Any], *, key: str,
           label: str, count: int, region_name: str, model: PricingModel, hours: int,
           period: str | None, amounts: dict[str, float]) -> ParsedOffer | Reject:
    specs = as_dict(plan.get("specs"))
    gpu = _gpu_spec(plan)
    amount = amounts[CURRENCY]
    data: ProviderData = {"plan": key.split("|", 1)[0]}
    if period is not None:
        data.update(term=period, term_price=amount, hours_per_term=hours)
    for cur, value in sorted(amounts.items()):
        if cur != CURRENCY:
            data[f"price_{cur.lower()}_per_{'hour' if period is None else 'term'}"] = value
    vram = _either(gpu, "vram_per_gpu")
    if positive_number(vram) is None:
        return _reject(f"GPU plan without VRAM: {key.split('|', 1)[0]} has no positive "
                       f"vram_per_gpu or vramPerGpu ({vram!r})", region, key)
    stock = stripped_text(_either(region, "stock_level"))
    locations = as_dict(region.get("locations"))
    data.update(stock_level=stock, sites=_codes(locations.get("available")),
                sites_in_stock=_codes(_either(locations, "in_stock")), cpu=_cpu(specs),
                drives=_parts(specs.get("drives"), "size"), nics=_parts(specs.get("nics")))
    fabric, fabric_gbps = _network(gpu.get("interconnect"))
    if isinstance(gpu.get("interconnect"), str):
        data["gpu_interconnect"] = gpu["interconnect"]
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=stripped_text(plan.get("name")),
            gpu_label=label, gpu_count=count, vram_gb_per_gpu=positive_number(vram),
            pricing_model=model, price_per_hour=round(amount / hours, 6), currency=CURRENCY,
            price_kind=PriceKind.LISTED if period is None else PriceKind.DERIVED,
            region=region_name,
            ram_gb=positive_number(as_dict(specs.get("memory")).get("total")),
            interconnect=_interconnect(label, count), network=fabric, network_gbps=fabric_gbps,
            availability=STOCK.get(stock or "", Availability.UNKNOWN),
            source_url=capture.url, observed_at=capture.fetched_at,
            provider_data={k: v for k, v in data.items() if v is not None})
    except ValidationError as exc:
        return _reject(f"invalid offer: {exc.errors()[0]['msg']}", region, key)


# -- helpers ----------------------------------------------------------------------------------


def _either(record: dict[str, Any], snake: str) -> Any:
    """`record[snake]`, or the same key in the page's camelCase spelling since 2026-09-22."""
    if snake in record:
        return record[snake]
    head, *rest = snake.split("_")
    return record.get(head + "".join(word.capitalize() for word in rest))


def _interconnect(label: str, count: int) -> Interconnect | None:
    if count == 1:
        return Interconnect.SINGLE
    return Interconnect.NVSWITCH if "HGX" in label.upper().split() else None


def _network(text: object) -> tuple[NetworkFabric | None, float | None]:
    """The fabric and speed `gpu.interconnect` names ("800Gbps Dual Plane RoCE")."""
    if not isinstance(text, str):
        return None, None
    words = text.lower().split()
    fabric = next((f for word, f in FABRICS.items() if word in words), None)
    speed = GBPS_RE.search(text)
    return fabric, (float(speed.group(1)) if fabric and speed else None)


def _cpu(specs: dict[str, Any]) -> str | None:
    cpu = as_dict(specs.get("cpu"))
    kind, cores, sockets = cpu.get("type"), cpu.get("cores"), cpu.get("count")
    if not isinstance(kind, str):
        return None
    text = f"{sockets} x {kind}" if isinstance(sockets, int) else kind
    return f"{text} ({cores} cores)" if isinstance(cores, int) else text


def _parts(value: object, size: str = "type") -> str | None:
    """Drives or NICs as "2 x 950GB NVME, 1 x 1.92TB NVME" / "2 x 100 Gbps"."""
    parts = []
    for part in as_list(value):
        part = as_dict(part)
        words = [str(part[f]) for f in (size, "type") if is_scalar(part.get(f))]
        if isinstance(part.get("count"), int) and words:
            parts.append(f"{part['count']} x {' '.join(dict.fromkeys(words))}")
    return ", ".join(parts) or None


def _codes(value: object) -> str | None:
    codes = [c for c in as_list(value) if isinstance(c, str)]
    return ",".join(codes) if codes else None


def _reject(reason: str, raw: object, key: str | None = None) -> Reject:
    return Reject(provider=NAME, reason=reason, raw=json.dumps(raw, sort_keys=True, default=str),
                  offer_key=key)
