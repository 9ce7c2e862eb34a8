"""DataCrunch (now "Verda"): per-instance GPU prices from the public pricing page.

Live path: the pricing page https://verda.com/pricing, which needs no credentials; a real capture
of its JSON-LD is bundled (adapters/snapshots/datacrunch/PROVENANCE.md). The API
(`/v1/instance-types` and its neighbours) answers only after an OAuth client-credentials token
exchange, which no recorded response covers, so it is neither fetched nor parsed. `parse()` also
reads the 2025 products page (datacrunch.io/products), kept as a test fixture.

Page (2026, verda.com/pricing): one `<script type="application/ld+json">` whose `@graph` holds
schema.org nodes; the prices are its `Offer` nodes, each with `name` "<N>x <GPU> <tier phrase>"
("1x B300 SXM6 268GB on-demand", "104x B300 SXM6 268GB instant cluster"), `description` (the
tier in words: "Hourly on-demand instance price"), `price` (a JSON number), `priceCurrency`
("USD") and a `priceSpecification` (`UnitPriceSpecification`) repeating price and currency with
`unitText` "hour". The page's markup classes are not read.

Reading rules (2026 page):
- The tier phrase ending the name says what is sold; the description must say the same:
  " on-demand" (an instance, on demand), " spot" (the same instance as spot), " instant cluster"
  (an N-GPU cluster, on demand). Serverless containers (" serverless continuous", " serverless
  spot") and storage (" storage", per GiB-month) are not instances and are skipped. A name and
  description that disagree, or an unknown tier phrase, is a Reject.
- N is the GPU count and the price is for the whole instance or cluster per hour (the page's
  104x B300 cluster, 780, is 104 x the 1x instance's 7.50). The GPU label is the rest of the name
  ("B300 SXM6 268GB", the 2025 page's GPU model spelling); its "<n>GB" is the VRAM per GPU.
- `price` and `priceSpecification.price` must agree, and so must the two currencies; the unit
  must be "hour". Otherwise the offer is a Reject, never a guess.
- An offer with a blank GPU (the page's unnamed CPU instances: name " on-demand") is a Reject.
- The page lists the 1x H100 on-demand and spot offers twice, verbatim: one offer each.
- A graph without Offer nodes, none naming an instance or cluster, or a field missing from every
  offer (a rename) is a ParseError. No region, availability, vCPU or RAM is stated.
- Offer keys are "<N>x <GPU>|<pricing>" ("1x B200 SXM6 180GB|spot"), "|instant_cluster" added
  for clusters.

Page (2025, datacrunch.io/products): a `<table>` whose header names the columns: Instance name
("1B200.30V"), GPU model ("B200 SXM6 180GB"), GPU (count), CPU, RAM (GB), VRAM (GB, whole
instance), P2P ("/" for one GPU, "900 GB/s", "1.8 TB/s"), On demand price, Dynamic price, Spot
price ("$3.64/h"). Prices are for the whole instance. Up to three offers per row: on-demand
(fixed), on-demand at the dynamic price (its key carries "dynamic") and spot. The page's footnote
says prices are fixed after deployment "except for dynamically-priced instances, which update
daily"; the verda SDK treats pricing (DYNAMIC_PRICE / FIXED_PRICE) apart from the contract
(PAY_AS_YOU_GO / SPOT / LONG_TERM), so a dynamic price is a pay-as-you-go (on-demand) price, not
a spot one. Offer keys are the instance type and the pricing ("1B200.30V|spot"); the page states
no region or availability.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from selectolax.lexbor import LexborHTMLParser, LexborNode

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    as_dict,
    newest_wins,
    one_price_per_key,
    parse_error,
    positive_decimal,
    positive_number,
    require_fields,
    split_results,
    stripped_text,
)
from gpuscout.core.models import (
    Availability,
    ParsedOffer,
    ParseResult,
    PriceKind,
    PricingModel,
    ProviderData,
    Reject,
)

PRICING_URL = "https://verda.com/pricing"

NAME = "datacrunch"
SOURCE_KIND: SourceKind = "html"
CREDENTIALS: tuple[str, ...] = ()

# -- 2026 pricing page (JSON-LD) --------------------------------------------------------------

JSONLD_SELECTOR = 'script[type="application/ld+json"]'
OFFER_FIELDS = ("name", "description", "price", "priceCurrency")


@dataclass(frozen=True)
class _Tier:
    """What one tier phrase at the end of an offer name sells."""

    description: str  # the description the page pairs with the phrase
    model: PricingModel | None  # None: not an instance offer (skipped)
    variant: str | None = None  # offer-key suffix


# Name suffix -> tier; the longer serverless phrases before " spot", which they end with.
TIERS: dict[str, _Tier] = {
    " serverless continuous": _Tier("Hourly serverless container price", None),
    " serverless spot": _Tier("Hourly serverless spot container price", None),
    " instant cluster": _Tier("Hourly instant cluster price", PricingModel.ON_DEMAND,
                              "instant_cluster"),
    " on-demand": _Tier("Hourly on-demand instance price", PricingModel.ON_DEMAND),
    " spot": _Tier("Hourly spot instance price", PricingModel.SPOT),
    " storage": _Tier("Monthly storage price per GiB", None),
}
COUNT_RE = re.compile(r"^(\d+)x\s+(.*)$")
LABEL_VRAM_RE = re.compile(r"\b(\d+(?:\.\d+)?)\s*GB\b", re.IGNORECASE)
HOURLY = "hour"

# -- 2025 products page (table) ---------------------------------------------------------------

# Page column headers (lower case) -> our field; the first five must be there.
COLUMNS = {"instance name": "instance", "gpu model": "model", "gpu": "count", "vram": "vram",
           "on demand price": "on_demand", "cpu": "cpu", "ram": "ram", "p2p": "p2p",
           "dynamic price": "dynamic", "spot price": "spot"}
REQUIRED_COLUMNS = ("instance name", "gpu model", "gpu", "vram", "on demand price")
PRICE_RE = re.compile(r"^([$€])\s*(\d[\d,]*(?:\.\d+)?)\s*/\s*h(?:our|r)?$", re.IGNORECASE)
CURRENCY = {"$": "USD", "€": "EUR"}
NOT_OFFERED = frozenset({"", "-", "–", "—", "/", "n/a"})
BANDWIDTH_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*(GB|TB)/s$", re.IGNORECASE)
DYNAMIC = "dynamic"


@dataclass(frozen=True)
class _Shape:
    """One instance type as a table row describes it."""

    instance_type: str
    label: str
    count: int
    vram_per_gpu: float | None
    vcpus: float | None
    ram_gb: float | None
    p2p: str | None
    raw: str


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRICING_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _parse_capture)


def _parse_capture(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    """The 2026 JSON-LD offers when the page has them, else the 2025 products table."""
    text = capture.text()
    tree = LexborHTMLParser(text)
    scripts = tree.css(JSONLD_SELECTOR)
    nodes = _offer_nodes(scripts, capture)
    if nodes:
        return _parse_jsonld(nodes, capture)
    if _tables(tree, text):
        return _parse_table(tree, text, capture)
    if scripts:
        raise parse_error(NAME, capture, "JSON-LD without Offer nodes and no price table",
                          "Offer")
    raise parse_error(NAME, capture, "no JSON-LD offers (script type application/ld+json) and "
                      "no price table (a header row with 'Instance name')", "application/ld+json")


# -- 2026 pricing page (JSON-LD) --------------------------------------------------------------


def _offer_nodes(scripts: list[LexborNode], capture: Capture) -> list[dict[str, Any]]:
    """The Offer nodes at the top of every JSON-LD block's @graph (or of the block itself)."""
    nodes: list[dict[str, Any]] = []
    for script in scripts:
        try:
            doc: Any = json.loads(script.text())
        except ValueError as exc:
            raise parse_error(NAME, capture, f"JSON-LD block is not JSON ({exc})",
                              "application/ld+json") from None
        graph = doc.get("@graph") if isinstance(doc, dict) else doc
        items: list[Any] = graph if isinstance(graph, list) else [doc]
        nodes += [n for n in items if isinstance(n, dict) and _is_offer(n)]
    return nodes


def _is_offer(node: dict[str, Any]) -> bool:
    kind = node.get("@type")
    return "Offer" in kind if isinstance(kind, list) else kind == "Offer"


def _parse_jsonld(nodes: list[dict[str, Any]],
                  capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    require_fields(NAME, capture, nodes, OFFER_FIELDS, "JSON-LD Offer")
    # Not stripped: a blank GPU leaves the tier phrase's leading space at the start (" spot").
    tiers = [_tier_of(name if isinstance(name := n.get("name"), str) else "") for n in nodes]
    if not any(t is not None and t[1].model is not None for t in tiers):
        raise parse_error(NAME, capture, f"none of {len(nodes)} JSON-LD offers is named as an "
                          "instance or cluster (' on-demand', ' spot', ' instant cluster')",
                          "name")
    results = [_jsonld_offer(n, t, capture) for n, t in zip(nodes, tiers, strict=True)]
    offers, rejects = split_results(results)  # None: a serverless or storage offer
    # The page repeats some offers verbatim: one offer per key, and a conflict if prices differ.
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*rejects, *conflicts]


def _tier_of(name: str) -> tuple[str, _Tier] | None:
    """The offer name without its tier phrase, and the tier; None for an unknown phrase."""
    for suffix, tier in TIERS.items():
        if name.endswith(suffix):
            return name[:-len(suffix)], tier
    return None


def _jsonld_offer(node: dict[str, Any], tier: tuple[str, _Tier] | None,
                  capture: Capture) -> ParsedOffer | Reject | None:
    raw = json.dumps(node, ensure_ascii=False)
    name = node.get("name")
    if tier is None:
        return Reject(provider=NAME, raw=raw, reason=f"offer {name!r}: unknown tier phrase")
    head, kind = tier
    description = node.get("description")
    if description != kind.description:
        return Reject(provider=NAME, raw=raw, reason=f"offer {name!r}: description "
                      f"{description!r} does not match its name ({kind.description!r})")
    if kind.model is None:
        return None  # serverless container or storage: no instance
    match = COUNT_RE.match(head.strip())
    if match is None or not match.group(2).strip():
        return Reject(provider=NAME, raw=raw,
                      reason=f"offer {name!r}: no GPU count and model before the tier")
    count, label = int(match.group(1)), " ".join(match.group(2).split())
    variant = [kind.variant] if kind.variant else []
    key = "|".join([f"{count}x {label}", kind.model.value, *variant])
    price, currency, problem = _jsonld_price(node)
    if problem:
        return Reject(provider=NAME, raw=raw, offer_key=key, reason=f"offer {name!r}: {problem}")
    vram = LABEL_VRAM_RE.search(label)
    data: ProviderData = {"source": "pricing page JSON-LD",
                          "product": "instant cluster" if kind.variant else "instance"}
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, gpu_label=label, gpu_count=count,
            vram_gb_per_gpu=float(vram.group(1)) if vram else None, pricing_model=kind.model,
            price_per_hour=price, currency=currency, price_kind=PriceKind.LISTED,
            availability=Availability.UNKNOWN, source_url=capture.url,
            observed_at=capture.fetched_at, provider_data=data,
        )
    except ValidationError as exc:
        return Reject(provider=NAME, reason=f"invalid offer: {exc.errors()[0]['msg']}", raw=raw,
                      offer_key=key)


def _jsonld_price(node: dict[str, Any]) -> tuple[float, str, str | None]:
    """(price, currency, None), or a reason the offer's price cannot be taken as stated."""
    spec = as_dict(node.get("priceSpecification"))
    price = _amount(node.get("price"))
    currency = stripped_text(node.get("priceCurrency"))
    if price is None:
        return 0.0, "", f"price {node.get('price')!r} is not a positive number"
    if currency is None:
        return 0.0, "", "no currency"
    if "price" in spec and _amount(spec.get("price")) != price:
        return 0.0, "", f"price {node.get('price')!r} != priceSpecification {spec.get('price')!r}"
    spec_currency = stripped_text(spec.get("priceCurrency"))
    if spec_currency not in (None, currency):
        return 0.0, "", f"currency {currency!r} != priceSpecification {spec_currency!r}"
    unit = stripped_text(spec.get("unitText"))
    if unit not in (None, HOURLY):
        return 0.0, "", f"price per {unit!r}, not per hour"
    return price, currency.upper(), None


def _amount(value: object) -> float | None:
    """A JSON number, or a plain decimal string (schema.org allows both spellings)."""
    return positive_decimal(value) if isinstance(value, str) else positive_number(value)


# -- 2025 products page (table) ---------------------------------------------------------------


def _tables(tree: LexborHTMLParser, text: str) -> list[LexborNode]:
    if tree.css_first("table") is None and "<th" in text.lower():
        # An archived excerpt cut inside a <table>: HTML parsing drops <tr>/<th>/<td> outside a
        # table, so read the fragment in table context.
        tree = LexborHTMLParser(f"<table>{text}</table>")
    return [t for t in tree.css("table") if _header(t)]


def _parse_table(tree: LexborHTMLParser, text: str,
                 capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    results: list[ParsedOffer | Reject | None] = []
    for table in _tables(tree, text):
        header = _header(table)
        missing = [c for c in REQUIRED_COLUMNS if c not in header]
        if missing:
            raise parse_error(NAME, capture, f"price table without column {missing[0]!r}",
                              missing[0])
        for row in table.css("tr"):
            cells = [td.text(strip=True) for td in row.css("td")]
            if not cells:
                continue  # the header row
            raw = row.html or ""
            if len(cells) != len(header):
                results.append(Reject(provider=NAME, raw=raw,
                                      reason=f"expected {len(header)} cells, found "
                                             f"{len(cells)}"))
                continue
            values = {COLUMNS[h]: v for h, v in zip(header, cells, strict=True) if h in COLUMNS}
            shape = _page_shape(values, raw)
            if isinstance(shape, Reject):
                results.append(shape)
                continue
            for field, model, variant in (("on_demand", PricingModel.ON_DEMAND, None),
                                          ("dynamic", PricingModel.ON_DEMAND, DYNAMIC),
                                          ("spot", PricingModel.SPOT, None)):
                results.append(_page_price(values.get(field), shape, model, variant, capture))
    return split_results(results)  # None: a price column that is not offered


def _header(table: LexborNode) -> list[str]:
    """Column names in order, lower case; empty unless the table is a price table."""
    names = [" ".join(th.text().split()).lower() for th in table.css("th")]
    return names if "instance name" in names else []


def _page_shape(values: dict[str, str], raw: str) -> _Shape | Reject:
    instance, label = values.get("instance", ""), " ".join(values.get("model", "").split())
    count = positive_decimal(values.get("count"))
    if not instance or not label:
        return Reject(provider=NAME, reason="row without an instance name or GPU model", raw=raw)
    if count is None or count != int(count):
        return Reject(provider=NAME, raw=raw,
                      reason=f"{instance}: GPU count {values.get('count')!r} is not a count")
    vram_total = positive_decimal(values.get("vram"))
    return _Shape(instance_type=instance, label=label, count=int(count),
                  vram_per_gpu=round(vram_total / count, 3) if vram_total else None,
                  vcpus=positive_decimal(values.get("cpu")),
                  ram_gb=positive_decimal(values.get("ram")), p2p=values.get("p2p"), raw=raw)


def _page_price(text: str | None, shape: _Shape, model: PricingModel, variant: str | None,
                capture: Capture) -> ParsedOffer | Reject | None:
    if text is None or text.strip().lower() in NOT_OFFERED:
        return None
    match = PRICE_RE.match(text.strip())
    if match is None:
        return Reject(provider=NAME, raw=shape.raw,
                      reason=f"{shape.instance_type}: unrecognised {variant or model.value} "
                             f"price {text!r}")
    return _table_offer(shape, model, variant, float(match.group(2).replace(",", "")),
                        CURRENCY[match.group(1)], capture)


def _table_offer(shape: _Shape, model: PricingModel, variant: str | None, price: float,
                 currency: str, capture: Capture) -> ParsedOffer | Reject:
    key = "|".join([shape.instance_type, model.value, *([variant] if variant else [])])
    data: ProviderData = {"source": "products page",
                          "p2p": shape.p2p if shape.p2p not in NOT_OFFERED else None}
    if variant == DYNAMIC:
        data["price_type"] = "dynamic: updates daily; fixed-price otherwise"
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=shape.instance_type,
            gpu_label=shape.label, gpu_count=shape.count, vram_gb_per_gpu=shape.vram_per_gpu,
            pricing_model=model, price_per_hour=price, currency=currency,
            price_kind=PriceKind.LISTED, vcpus=shape.vcpus, ram_gb=shape.ram_gb,
            interconnect_gbps=_bandwidth_gbs(shape.p2p), availability=Availability.UNKNOWN,
            source_url=capture.url, observed_at=capture.fetched_at,
            provider_data={k: v for k, v in data.items() if v is not None},
        )
    except ValidationError as exc:
        return Reject(provider=NAME, reason=f"invalid offer: {exc.errors()[0]['msg']}",
                      raw=shape.raw, offer_key=key)


# -- helpers ----------------------------------------------------------------------------------


def _bandwidth_gbs(text: str | None) -> float | None:
    """'900 GB/s' -> 900, '1.8 TB/s' -> 1800 (GB/s); '/' or None -> None."""
    match = BANDWIDTH_RE.match((text or "").strip())
    if match is None:
        return None
    return float(match.group(1)) * (1000 if match.group(2).upper() == "TB" else 1)
