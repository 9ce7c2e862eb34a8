"""E2E Networks: per-GPU list prices from the public pricing page (`?region=us`).

Layout (2026-08, adapters/snapshots/e2e/PROVENANCE.md): a server-rendered Next.js page with
two price lists.
- One `<table>` whose head names the columns Item, vRAM, vCPUs, "RAM, GB", "Hourly/On-Demand",
  Monthly and Annually; each body row is one GPU ("NVIDIA B200", 192, 32, 400, "$6.99",
  "$4,983.16", "$55,089.45"). A footnote under it says "Prices are per GPU-hour". The table
  has a 1x/2x/4x/8x GPU-count switch; the page is served at 1x.
- A `<script type="application/ld+json">` OfferCatalog whose Offers of category
  "GPU Cloud Instance" give the same GPUs' hourly price in INR ("priceCurrency": "INR",
  "unitText": "per hour") with "192 GB VRAM, 32 vCPUs, 400 GB RAM" in the product description.
  CPU instances of the same catalog are skipped. The escaped copies of that catalog inside the
  page's flight-payload scripts are not read.

Reading rules:
- A price is per GPU (the footnote; without it the table is refused: the multiplier switch could
  have scaled it); an offer is one GPU with the row's vCPUs and RAM.
- The currency is the one printed: "$" is USD, "\u20b9" INR in the table; priceCurrency in the
  JSON-LD (an offer without one is a reject). Never assumed.
- Hourly/On-Demand is on-demand, billed per minute when the page says "per-minute billing".
  Monthly and Annually are committed terms: reserved offers whose hourly price is derived from
  the monthly (730 h) or yearly (8760 h) amount, which goes into `provider_data`.
- Two rows share the label "NVIDIA A100" (80 and 40 GB): the offer key carries the VRAM.
- "Contact us" or any other non-price text is a reject; "-" or "N/A" is not offered.
- The page names no region for the GPUs, nor an interconnect or network.
- The catalog's INR prices are not the table's USD ones converted (B200: 671 INR against
  $6.99; 671 INR is $7.86 at the bundled ECB rates) and the page does not say which region
  either list is for, so both are kept as separate price lists (`provider_data["price_list"]`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pydantic import ValidationError
from selectolax.lexbor import LexborHTMLParser, LexborNode

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    as_dict,
    header_cells,
    newest_wins,
    node_text,
    one_price_per_key,
    parse_error,
    positive_number,
    reject,
    split_results,
    stripped_text,
)
from gpuscout.core.models import (
    ParsedOffer,
    ParseResult,
    PriceKind,
    PricingModel,
    ProviderData,
    Reject,
)

PRICING_URL = "https://www.e2enetworks.com/pricing?region=us"

NAME = "e2e"
SOURCE_KIND: SourceKind = "html"
CREDENTIALS: tuple[str, ...] = ()

ITEM = "Item"
VRAM = "vRAM"
VCPUS = "vCPUs"
RAM = "RAM, GB"
HOURLY = "Hourly/On-Demand"
MONTHLY = "Monthly"
ANNUALLY = "Annually"
COLUMNS = (ITEM, VRAM, VCPUS, RAM, HOURLY, MONTHLY, ANNUALLY)
PER_GPU_FOOTNOTE = "Prices are per GPU-hour"
PER_MINUTE = "per-minute billing"
HOURS_PER_MONTH = 730  # 8760 h / 12: the hourly equivalent of a monthly price
HOURS_PER_YEAR = 8760
# price column -> (pricing model, hours the printed amount covers, term)
PRICE_COLUMNS = {
    HOURLY: (PricingModel.ON_DEMAND, 1, None),
    MONTHLY: (PricingModel.RESERVED, HOURS_PER_MONTH, "1 month"),
    ANNUALLY: (PricingModel.RESERVED, HOURS_PER_YEAR, "1 year"),
}
PRICE_RE = re.compile("^([$\u20b9])\\s*(\\d[\\d,]*(?:\\.\\d+)?)$")
CURRENCY_BY_SYMBOL = {"$": "USD", "\u20b9": "INR"}
NOT_OFFERED = frozenset({"-", "\u2013", "\u2014", "n/a"})
INT_RE = re.compile(r"^\d+$")
GPU_CATEGORY = "GPU Cloud Instance"
LD_NAME_SUFFIX = " GPU Cloud Instance"
LD_SPEC_RE = re.compile(r"^(\d+) GB VRAM, (\d+) vCPUs, (\d+) GB RAM$")
CURRENCY_RE = re.compile(r"^[A-Z]{3}$")


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRICING_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _parse_page)


# -- page -------------------------------------------------------------------------------------


def _parse_page(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    tree = LexborHTMLParser(capture.text())
    table = _price_table(capture, tree)
    if not any(node_text(p).startswith(PER_GPU_FOOTNOTE) for p in tree.css("p")):
        raise parse_error(NAME, capture, f"no footnote {PER_GPU_FOOTNOTE!r}: the table's "
                          "prices cannot be read as per GPU", PER_GPU_FOOTNOTE)
    increment = 60 if any(PER_MINUTE in node_text(p) for p in tree.css("p")) else None
    heads = header_cells(table)
    rows = table.css("tbody tr")
    if not rows:
        raise parse_error(NAME, capture, "GPU price table without rows", "tbody tr")
    results: list[ParsedOffer | Reject] = []
    for tr in rows:
        results += _table_row(capture, heads, tr, increment)
    results += _catalog(capture, tree)
    offers, rejects = split_results(results)
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*rejects, *conflicts]


def _price_table(capture: Capture, tree: LexborHTMLParser) -> LexborNode:
    """The one table with an "Hourly/On-Demand" column and every other column of the layout."""
    tables = [t for t in tree.css("table")
              if HOURLY in header_cells(t)]
    if len(tables) != 1:
        raise parse_error(NAME, capture, f"expected one table with a {HOURLY!r} column, found "
                          f"{len(tables)}", HOURLY)
    heads = header_cells(tables[0])
    for column in COLUMNS:
        if column not in heads:
            raise parse_error(NAME, capture, f"GPU price table without a {column!r} column: "
                              f"{heads}", column)
    return tables[0]


# -- the table --------------------------------------------------------------------------------


def _table_row(capture: Capture, heads: list[str], tr: LexborNode,
               increment: int | None) -> list[ParsedOffer | Reject]:
    raw = tr.html or ""
    texts = [node_text(td) for td in tr.css("td")]
    if len(texts) != len(heads):
        return [reject(NAME, f"expected {len(heads)} cells, found {len(texts)}", raw)]
    cells = dict(zip(heads, texts, strict=True))
    label = cells[ITEM]
    specs = [cells[c] for c in (VRAM, VCPUS, RAM)]
    if not label or not all(INT_RE.match(s) for s in specs):
        return [reject(NAME, f"row {label!r} without whole vRAM, vCPUs and RAM: {specs}", raw)]
    vram, vcpus, ram = (float(s) for s in specs)
    results: list[ParsedOffer | Reject] = []
    for column, (model, hours, term) in PRICE_COLUMNS.items():
        text = cells[column]
        if text.lower() in NOT_OFFERED:
            continue
        match = PRICE_RE.match(text)
        key_base = f"{label}|{vram:g}GB"
        if match is None:
            key = f"{key_base}|{model.value}" + (f"|{term}" if term else "")
            results.append(reject(NAME, f"{label} {vram:g}GB: unrecognised price {text!r} "
                                  f"({column})", raw, key))
            continue
        currency = CURRENCY_BY_SYMBOL[match.group(1)]
        amount = float(match.group(2).replace(",", ""))
        key = f"{key_base}|{currency}|{model.value}" + (f"|{term}" if term else "")
        data: ProviderData = {"price_list": "table"}
        if term is not None:
            data.update(term=term, printed_price=amount, printed_per=column.lower(),
                        hours_per_term=hours)
        results.append(_offer(
            capture, key=key, label=label, vram=vram, vcpus=vcpus, ram=ram, model=model,
            price=round(amount / hours, 6), currency=currency,
            kind=PriceKind.LISTED if term is None else PriceKind.DERIVED,
            increment=increment if term is None else None, data=data, raw=raw))
    return results


# -- the JSON-LD offer catalog ----------------------------------------------------------------


def _catalog(capture: Capture, tree: LexborHTMLParser) -> list[ParsedOffer | Reject]:
    results: list[ParsedOffer | Reject] = []
    for script in tree.css('script[type="application/ld+json"]'):
        text = script.text()
        try:
            doc = json.loads(text)
        except ValueError as exc:
            results.append(reject(NAME, f"ld+json block is not JSON ({exc})", text[:200]))
            continue
        results += [_ld_offer(capture, offer) for offer in _offers_in(doc)]
    return results


def _offers_in(node: Any) -> Iterator[dict[str, Any]]:
    """Every schema.org Offer of a GPU instance in a JSON-LD document, at any depth."""
    if isinstance(node, list):
        for item in node:
            yield from _offers_in(item)
    elif isinstance(node, dict):
        if node.get("@type") == "Offer":
            if node.get("category") == GPU_CATEGORY:
                yield node
            return
        for value in node.values():
            yield from _offers_in(value)


def _ld_offer(capture: Capture, offer: dict[str, Any]) -> ParsedOffer | Reject:
    raw = json.dumps(offer, sort_keys=True)
    name = stripped_text(offer.get("name")) or ""
    if not name.endswith(LD_NAME_SUFFIX):
        return reject(NAME, f"GPU offer name {name!r} does not end in {LD_NAME_SUFFIX!r}", raw)
    label = name.removesuffix(LD_NAME_SUFFIX)
    spec = as_dict(offer.get("priceSpecification"))
    price = positive_number(offer.get("price", spec.get("price")))
    currency = offer.get("priceCurrency", spec.get("priceCurrency"))
    description = stripped_text(as_dict(offer.get("itemOffered")).get("description")) or ""
    sizes = LD_SPEC_RE.match(description)
    if spec.get("unitText") != "per hour":
        return reject(NAME, f"{name}: unitText {spec.get('unitText')!r} is not 'per hour'", raw)
    if price is None:
        return reject(NAME, f"{name}: price {offer.get('price')!r} is not a price", raw)
    if not isinstance(currency, str) or not CURRENCY_RE.match(currency):
        return reject(NAME, f"{name}: no priceCurrency ({currency!r})", raw)
    if sizes is None:
        return reject(NAME, f"{name}: unrecognised description {description!r}", raw)
    vram, vcpus, ram = (float(g) for g in sizes.groups())
    data: ProviderData = {"price_list": "ld+json offer catalog"}
    for field in ("url", "availability"):
        if isinstance(value := offer.get(field), str):
            data[field] = value
    return _offer(capture, key=f"{label}|{vram:g}GB|{currency}|on_demand", label=label,
                  vram=vram, vcpus=vcpus, ram=ram, model=PricingModel.ON_DEMAND, price=price,
                  currency=currency, kind=PriceKind.LISTED, increment=None, data=data, raw=raw)


# -- helpers ----------------------------------------------------------------------------------


def _offer(capture: Capture, *, key: str, label: str, vram: float, vcpus: float,
           ram: float, model: PricingModel, price: float, currency: str, kind: PriceKind,
           increment: int | None, data: ProviderData, raw: str) -> ParsedOffer | Reject:
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, gpu_label=label, gpu_count=1, vram_gb_per_gpu=vram,
            pricing_model=model, price_per_hour=price, currency=currency, price_kind=kind,
            vcpus=vcpus, ram_gb=ram, billing_increment_s=increment, source_url=capture.url,
            observed_at=capture.fetched_at, provider_data=data)
    except ValidationError as exc:
        return reject(NAME, f"invalid offer: {exc.errors()[0]['msg']}", raw, key)
