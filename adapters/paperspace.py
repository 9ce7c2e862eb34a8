"""Paperspace: machine prices from the public pricing page (paperspace.com/pricing, Webflow cards).

The 2024 page (adapters/snapshots/paperspace/PROVENANCE.md) shows one `.instance-blocks-flex` card
per machine type: `h1.instance-names` ("A100-80G"), a price block `h1.instance-price-2` ("1.89",
per hour, one GPU), a spec list (`NVIDIA HGX H100 GPU` / `16 GB GPU`, `256 GB RAM`, `20 vCPU`) and
"Multi-GPU types: 2x 4x". Reading rules:

- Anything inside an element of class `hide` is not shown to visitors and is skipped (the page
  keeps a stale H100 price of 3.09 with A100 specs, and an old "Servers & Desktops" grid, hidden).
- A price with footnote marks ("2.24*", "1.15**") is explained by a footnote `<p>` that starts
  with the same marks. Only a footnote that repeats the price and names a commitment term
  ("...is for a 3-year commitment") is read, as a reserved offer with the term in
  `provider_data`; a marked price without such a footnote is rejected. Other prices in the
  footnotes (the H100 on-demand "promo" price with a second, unexplained figure) are rejected.
- The page states the multi-GPU rule: "Multiply the specs and price of each type above by the
  number of GPUs." Each "Nx" variant becomes an offer of N GPUs at N times the price, marked
  `price_kind = derived`; without that sentence the variants are rejected.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import ValidationError
from selectolax.lexbor import LexborHTMLParser, LexborNode

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import newest_wins, parse_error, split_results
from gpuscout.core.models import (
    Interconnect,
    ParsedOffer,
    ParseResult,
    PriceKind,
    PricingModel,
    ProviderData,
    Reject,
)

PRICING_URL = "https://www.paperspace.com/pricing"

NAME = "paperspace"
SOURCE_KIND: SourceKind = "html"
CREDENTIALS: tuple[str, ...] = ()

CARD = ".instance-blocks-flex"
PRICE = "h1.instance-price-2"
PRICE_RE = re.compile(r"^\$?\s*(\d+(?:\.\d+)?)\s*(\**)$")
FOOTNOTE_RE = re.compile(r"^(\*+)\s*(.+)$", re.DOTALL)
TERM_RE = re.compile(r"(\d+)[-\s](year|month)\s+commitment", re.IGNORECASE)
PROMO_RE = re.compile(r"on-demand pricing for\s+(\S+)\s+is\s+\$(\d+(?:\.\d+)?)", re.IGNORECASE)
MULTI_RULE_RE = re.compile(r"multiply the specs and price of each type above by the number of "
                           r"GPUs", re.IGNORECASE)
MULTI_RE = re.compile(r"\b(\d+)\s*x\b", re.IGNORECASE)
VRAM_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*GB\s+GPU$", re.IGNORECASE)
RAM_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*GB\s+RAM$", re.IGNORECASE)
VCPU_RE = re.compile(r"^(\d+)\s*vCPUs?$", re.IGNORECASE)


@dataclass(frozen=True)
class _Term:
    months: int
    footnote: str


@dataclass(frozen=True)
class _Card:
    name: str
    price: float
    marks: str
    specs: list[str]
    multi: list[int]
    raw: str


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRICING_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _parse_page)


# -- page -------------------------------------------------------------------------------------


def _parse_page(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    tree = LexborHTMLParser(capture.text())
    cards = [c for c in tree.css(CARD) if not _hidden(c)]
    if not cards:
        raise parse_error(NAME, capture, f"no visible pricing cards ({CARD})", CARD)
    if not any(_visible(c, PRICE) for c in cards):
        raise parse_error(NAME, capture, f"no card has a visible price ({PRICE})", PRICE)
    footnotes = _footnotes(tree)
    page_text = tree.body.text(separator=" ") if tree.body is not None else ""
    multi_rule = MULTI_RULE_RE.search(" ".join(page_text.split())) is not None
    results: list[ParsedOffer | Reject] = [_promo_reject(note) for note in footnotes.values()
                                           if PROMO_RE.search(note)]
    for node in cards:
        card = _card(node)
        if isinstance(card, Reject):
            results.append(card)
            continue
        term = None
        if card.marks:
            term = _term(card, footnotes.get(card.marks))
            if isinstance(term, Reject):
                results.append(term)
                continue
        for count in [1, *card.multi]:
            if count > 1 and not multi_rule:
                results.append(Reject(provider=NAME, raw=card.raw,
                                      reason=f"{card.name} {count}x: multi-GPU variant without "
                                             "a price or a stated price rule"))
                continue
            results.append(_offer(card, count, term, capture))
    return split_results(results)


def _card(node: LexborNode) -> _Card | Reject:
    raw = node.html or ""
    name_node = _visible(node, "h1.instance-names")
    name = name_node.text(strip=True) if name_node is not None else ""
    if not name:
        return Reject(provider=NAME, reason="card without a machine name", raw=raw)
    price_node = _visible(node, PRICE)
    price_text = price_node.text(strip=True) if price_node is not None else ""
    match = PRICE_RE.match(price_text)
    if match is None:
        return Reject(provider=NAME, raw=raw,
                      reason=f"{name}: unrecognised price {price_text!r}")
    specs_node = _visible(node, "ul")
    specs = ([li.text(strip=True) for li in specs_node.css("li")]
             if specs_node is not None else [])
    multi_node = _visible(node, ".pricing-multigpu-info")
    multi_text = multi_node.text(strip=True) if multi_node is not None else ""
    multi = sorted({int(n) for n in MULTI_RE.findall(multi_text) if int(n) > 1})
    return _Card(name=name, price=float(match.group(1)), marks=match.group(2), specs=specs,
                 multi=multi, raw=raw)


def _term(card: _Card, footnote: str | None) -> _Term | Reject:
    if footnote is None:
        return Reject(provider=NAME, raw=card.raw,
                      reason=f"{card.name}: price {card.price:g}{card.marks} has no footnote "
                             f"'{card.marks}' to explain it")
    prices = {float(p) for p in re.findall(r"\$(\d+(?:\.\d+)?)", footnote)}
    term = TERM_RE.search(footnote)
    if term is None or card.price not in prices:
        return Reject(provider=NAME, raw=card.raw,
                      reason=f"{card.name}: footnote '{card.marks}' does not state a commitment "
                             f"term for {card.price:g}: {footnote[:120]!r}")
    months = int(term.group(1)) * (12 if term.group(2).lower() == "year" else 1)
    return _Term(months=months, footnote=footnote)


def _offer(card: _Card, count: int, term: _Term | None,
           capture: Capture) -> ParsedOffer | Reject:
    specs = " | ".join(card.specs)
    vram = _first(VRAM_RE, card.specs)
    ram = _first(RAM_RE, card.specs)
    vcpus = _first(VCPU_RE, card.specs)
    hgx = any("hgx" in s.lower() for s in card.specs)
    model = PricingModel.RESERVED if term else PricingModel.ON_DEMAND
    term_tag = f"|{term.months}mo" if term else ""
    key = f"{card.name}|{count}x|{model.value}{term_tag}"
    data: ProviderData = {"machine": card.name, "specs": specs,
                          "price_per_gpu_hour": card.price}
    if term:
        data |= {"term": _term_text(term.months), "commitment_months": term.months,
                 "footnote": term.footnote}
    if count > 1:
        data["multi_gpu_rule"] = "page: multiply the specs and price by the number of GPUs"
    if hgx:
        data["board"] = "HGX"
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key,
            instance_type=card.name if count == 1 else f"{card.name}x{count}",
            gpu_label=card.name, gpu_count=count, vram_gb_per_gpu=vram, pricing_model=model,
            price_per_hour=round(card.price * count, 6),
            price_kind=PriceKind.LISTED if count == 1 else PriceKind.DERIVED,
            vcpus=vcpus * count if vcpus else None, ram_gb=ram * count if ram else None,
            # "HGX" names an NVSwitch board; a single GPU has nothing to talk to.
            interconnect=Interconnect.NVSWITCH if hgx and count > 1 else None,
            source_url=capture.url, observed_at=capture.fetched_at, provider_data=data,
        )
    except ValidationError as exc:
        return Reject(provider=NAME, reason=f"invalid offer: {exc.errors()[0]['msg']}",
                      raw=card.raw, offer_key=key)


# -- helpers ----------------------------------------------------------------------------------


def _footnotes(tree: LexborHTMLParser) -> dict[str, str]:
    """Footnote marks ("*", "**") -> the visible footnote text that follows them."""
    notes: dict[str, str] = {}
    for p in tree.css("p"):
        if _hidden(p):
            continue
        match = FOOTNOTE_RE.match(" ".join(p.text().split()))
        if match is not None:
            notes.setdefault(match.group(1), match.group(2))
    return notes


def _promo_reject(note: str) -> Reject:
    match = PROMO_RE.search(note)
    assert match is not None
    return Reject(provider=NAME, raw=note,
                  reason=f"{match.group(1)}: on-demand price ${match.group(2)} is only in a "
                         "footnote as a promo price with a second, unexplained figure")


def _hidden(node: LexborNode) -> bool:
    current: LexborNode | None = node
    while current is not None:
        if "hide" in (current.attributes.get("class") or "").split():
            return True
        current = current.parent
    return False


def _visible(node: LexborNode, selector: str) -> LexborNode | None:
    return next((n for n in node.css(selector) if not _hidden(n)), None)


def _first(pattern: re.Pattern[str], texts: list[str]) -> float | None:
    for text in texts:
        match = pattern.match(text)
        if match is not None:
            return float(match.group(1))
    return None


def _term_text(months: int) -> str:
    return f"{months // 12} years" if months % 12 == 0 else f"{months} months"

