"""Seeweb Cloud Server GPU: the ECS API's plan listing with a token, else the public product page.

Live path: with `SEEWEB_API_TOKEN` set, `GET https://api.seeweb.it/ecs/v2/plans` (`X-APITOKEN`
header); without one, the product page https://www.seeweb.it/en/products/cloud-server-gpu, which
needs none. Both are bundled (adapters/snapshots/seeweb/PROVENANCE.md); the offline refresh
never passes the optional token, so it reads the page. `parse()` tells a capture by its host:
api.seeweb.it is the listing, anything else the page, so archived listings still parse.

Product page (2026, server-rendered configurator): one `div.cardType` card per GPU model, with
- `span.cardname`, the model ("NVIDIA H100"); the card's spec line says the form factor
  ("GPU SXM | 320 GB GPU RAM"), which joins the label ("NVIDIA H100 SXM") when stated;
- a GPU-count selector `select[name="card-number"]` whose options are the counts sold
  (1, 2, 4, 8);
- `p.hourly` under "Hourly Cost": the on-demand price, "1.89 €";
- `div.reservation-prices`, one `p.hourly_<N>mnths` per commitment, "12 mths: 1.61 €/hr".
Reading rules:
- A printed price is EUR per GPU-hour (the page prints "€" and no other currency; it says
  nothing about VAT): an offer is N GPUs at N x the printed price, one per count the selector
  lists, so a price with its count is Seeweb's own number. Each N-month price is a reserved
  offer with the term in `provider_data` (the Civo convention).
- The spec figures (GPU RAM, cores, RAM, disk) are printed for a configuration the page does
  not name (the H200 card's 141 GB GPU RAM is one GPU, the H100 card's 320 GB four): they are
  kept in `provider_data`, not read as the offer's VRAM, vCPUs, RAM or disk.
- The page names no region, no interconnect and no spot price (a tooltip only says spot
  instances save up to 40 %): none is set.
- A card that cannot be read (no name, no count, a price that is not "D.DD €") is a Reject
  and the page closes nothing. No card at all, or a part that no card has (a renamed
  `cardname`, `hourly`, `card-number` or `reservation-prices` class), is a ParseError naming it.

API listing (`{"status": "ok", "plans": [...]}`, the shape of Seeweb's own SDKs: the `ecsapi`
Python package and cloudserver-go-client) holds every Cloud Server plan, CPU-only ones included.
A plan with `gpu` > 0 becomes one on-demand offer per region of `available_regions`, priced by
`hourly_price` for the whole plan. Reading rules:
- `hourly_price` is EUR per hour for the whole plan: the product page prints the same numbers
  with "€"; `montly_price` (sic) is kept.
- `cpu`, `ram`, `disk` and `gpu` are strings of numbers: vCPUs, RAM in MB of 1024 ("32768" is
  the 32 GB RAM the page prints), disk in GB, and the GPU count.
- `gpu_label` is the accelerator's name, since 2026 with its memory ("L40s 48GB"; earlier
  "L40s", "H100 80 GB"); a stated memory is the VRAM per GPU, else it is left unstated.
- `available` false marks a plan that is not sold (not a capacity signal): no offer. A plan
  with `gpu` "0" or no `gpu_label` is a CPU plan: skipped.
Listing keys are plan and region ("ECS1GPU8|it-fr2|on_demand"), page keys card name and count
("NVIDIA H100|4x|on_demand"): a listing and a page parsed together are not deduplicated.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError
from selectolax.lexbor import LexborHTMLParser, LexborNode

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    envelope,
    newest_wins,
    node_text,
    one_price_per_key,
    parse_error,
    positive_decimal,
    positive_number,
    reject,
    require_fields,
    split_results,
)
from gpuscout.core.models import ParsedOffer, ParseResult, PricingModel, ProviderData, Reject

PAGE_URL = "https://www.seeweb.it/en/products/cloud-server-gpu"
API_HOST = "api.seeweb.it"
PLANS_URL = f"https://{API_HOST}/ecs/v2/plans"
TOKEN_VAR = "SEEWEB_API_TOKEN"
CURRENCY = "EUR"

NAME = "seeweb"
SOURCE_KIND: SourceKind = "html"  # without a token; with one, the API
CREDENTIALS: tuple[str, ...] = (TOKEN_VAR,)
OPTIONAL_CREDENTIALS = CREDENTIALS  # the API is asked only with a token; a replay reads the page

# Product page: the card and its parts (class names are all the markup offers).
CARD = "div.cardType"
CARD_NAME = "span.cardname"
COUNT_OPTION = 'select[name="card-number"] option'
ON_DEMAND = "p.hourly"
TERMS = "div.reservation-prices"
TERM_PRICE = f"{TERMS} p"
COMPARE = "p.compare"
# selector -> the name a ParseError gives it when no card has it
CARD_PARTS = {CARD_NAME: "cardname", COUNT_OPTION: "card-number", ON_DEMAND: "hourly",
              TERMS: "reservation-prices"}
SPEC_NUMBERS = {"span.gpuRam": "card_gpu_ram_gb", "span.cpuCore": "card_cpu_cores",
                "span.ram": "card_ram_gb"}
SPEC_DISK = "span.disk"
HOURLY_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*€$")
TERM_CLASS_RE = re.compile(r"^hourly_(\d+)mnths$")
TERM_TEXT_RE = re.compile(r"^(\d+)\s*mths:\s*(\d+(?:\.\d+)?)\s*€\s*/\s*hr$")
FORM_RE = re.compile(r"\bGPU\s+(SXM|PCIe|NVL)\b", re.IGNORECASE)
COUNT_RE = re.compile(r"^[1-9]\d*$")

# API listing
REQUIRED = ("name", "gpu", "gpu_label", "hourly_price", "available_regions")
MB_PER_GB = 1024
# The memory a label states: "A100 80GB", "H100 80 GB", "RTX PRO 6000 96GB".
LABEL_MEMORY = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*GB\b", re.IGNORECASE)


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    """The plan listing with a token, else the product page."""
    token = creds.get(TOKEN_VAR)
    if not token:
        return [client.get(PAGE_URL)]
    return [client.get(PLANS_URL, headers={"X-APITOKEN": token, "Accept": "application/json"})]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, lambda c: _read(c) if urlsplit(c.url).hostname == API_HOST
                       else _read_page(c))


# -- product page -----------------------------------------------------------------------------


def _read_page(capture: Capture) -> tuple[list[ParsedOffer], list[Reject], bool]:
    cards = LexborHTMLParser(capture.text()).css(CARD)
    if not cards:
        raise parse_error(NAME, capture, f"no GPU card ({CARD})", "cardType")
    # A class renamed upstream shows as a part that no card has: refuse, don't emit nothing.
    for selector, part in CARD_PARTS.items():
        if not any(card.css_first(selector) is not None for card in cards):
            raise parse_error(NAME, capture, f"no GPU card has {selector!r}", part)
    results: list[ParsedOffer | Reject] = []
    for card in cards:
        results += _card_offers(card, capture)
    offers, rejects = split_results(results)
    offers, twice = one_price_per_key(NAME, offers, repeat_reason="card listed twice on the page")
    # An unread card may hold offers the warehouse has: the page then closes nothing.
    return offers, [*rejects, *twice], not rejects


def _card_offers(card: LexborNode, capture: Capture) -> list[ParsedOffer | Reject]:
    raw = card.html or ""
    name_node = card.css_first(CARD_NAME)
    name = node_text(name_node) if name_node is not None else ""
    if not name:
        return [_page_reject(f"GPU card {card.attributes.get('id')!r} without a name", raw)]
    counts, results = _counts(card, name, raw)
    if not counts:
        return [*results, _page_reject(f"{name}: no GPU count in {COUNT_OPTION!r}", raw)]
    form = FORM_RE.search(node_text(card))
    label = name if form is None or form.group(1).lower() in name.lower() else (
        f"{name} {form.group(1)}")
    data = {"card": card.attributes.get("id"), **_spec(card)}
    compare = card.css(COMPARE)
    if len(compare) == 1 and (match := HOURLY_RE.match(node_text(compare[0]))) is not None:
        data["compare_price_per_gpu_hour"] = float(match.group(1))
    prices, rejects = _prices(card, name, raw)
    results += rejects
    for count in counts:
        for suffix, model, per_gpu, term in prices:
            key = f"{name}|{count}x|{suffix}"
            extra: ProviderData = {"price_per_gpu_hour": per_gpu}
            if term is not None:
                extra["term"] = term
            try:
                results.append(ParsedOffer(
                    provider=NAME, offer_key=key, gpu_label=label, gpu_count=count,
                    pricing_model=model, price_per_hour=round(per_gpu * count, 6),
                    currency=CURRENCY, source_url=capture.url, observed_at=capture.fetched_at,
                    provider_data={**data, **extra}))
            except ValidationError as exc:
                results.append(_page_reject(f"invalid offer: {exc.errors()[0]['msg']}", raw,
                                            key))
    return results


# (offer key suffix, pricing model, EUR per GPU-hour, term)
_Price = tuple[str, PricingModel, float, str | None]


def _prices(card: LexborNode, name: str, raw: str) -> tuple[list[_Price], list[Reject]]:
    """The card's on-demand and commitment prices, and a reject for each that cannot be read
    (a card without an on-demand price keeps its commitments)."""
    prices: list[_Price] = []
    rejects: list[Reject] = []
    hourly = card.css(ON_DEMAND)
    match = HOURLY_RE.match(node_text(hourly[0])) if len(hourly) == 1 else None
    if match is None:
        rejects.append(_page_reject(f"{name}: on-demand price is not one 'D.DD €' "
                                    f"{ON_DEMAND}: {[node_text(h) for h in hourly]}", raw))
    else:
        prices.append((PricingModel.ON_DEMAND.value, PricingModel.ON_DEMAND,
                       float(match.group(1)), None))
    for node in card.css(TERM_PRICE):
        term = _term(node)
        if isinstance(term, str):
            rejects.append(_page_reject(f"{name}: {term}", raw))
        else:
            months, price = term
            prices.append((f"{PricingModel.RESERVED.value}|{months} months",
                           PricingModel.RESERVED, price, f"{months} months"))
    return prices, rejects


def _counts(card: LexborNode, name: str, raw: str) -> tuple[list[int], list[ParsedOffer | Reject]]:
    """The GPU counts the card's selector offers, in order and once each, and a reject for each
    option that is not a count."""
    counts: list[int] = []
    rejects: list[ParsedOffer | Reject] = []
    for option in card.css(COUNT_OPTION):
        value = (option.attributes.get("value") or node_text(option)).strip()
        if COUNT_RE.match(value) is None:
            rejects.append(_page_reject(f"{name}: GPU-count option {value!r} is not a count",
                                        raw))
        elif int(value) not in counts:
            counts.append(int(value))
    return counts, rejects


def _term(node: LexborNode) -> tuple[int, float] | str:
    """(months, EUR per GPU-hour) of a commitment price, or why it cannot be read."""
    text = node_text(node)
    classes = (node.attributes.get("class") or "").split()
    months = [int(m.group(1)) for c in classes if (m := TERM_CLASS_RE.match(c)) is not None]
    if len(months) != 1:
        return f"reservation price without one 'hourly_<N>mnths' class: {text!r}"
    match = TERM_TEXT_RE.match(text)
    if match is None:
        return f"reservation price is not 'N mths: D.DD €/hr': {text!r}"
    if int(match.group(1)) != months[0]:
        return f"reservation price {text!r} under the class of {months[0]} months"
    return months[0], float(match.group(2))


def _spec(card: LexborNode) -> ProviderData:
    """The card's spec figures as printed (see the module docstring: not the offer's sizes)."""
    spec: ProviderData = {}
    for selector, field in SPEC_NUMBERS.items():
        node = card.css_first(selector)
        spec[field] = positive_decimal(node_text(node)) if node is not None else None
    disk = card.css_first(SPEC_DISK)
    spec["card_disk"] = node_text(disk) if disk is not None else None
    return spec


def _page_reject(reason: str, raw: str, key: str | None = None) -> Reject:
    return Reject(provider=NAME, reason=reason, raw=raw, offer_key=key)


# -- API listing ------------------------------------------------------------------------------


def _read(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    plans = _plans(capture)
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for plan in plans:
        good, bad = _plan_offers(plan, capture)
        offers += good
        rejects += bad
    offers, twice = one_price_per_key(NAME, offers,
                                      repeat_reason="plan listed twice in one response")
    return offers, [*rejects, *twice]


# -- body -------------------------------------------------------------------------------------


def _plans(capture: Capture) -> list[Any]:
    doc, plans = envelope(NAME, capture, "plans")
    status = doc.get("status")
    if status is not None and status != "ok":
        raise parse_error(NAME, capture, f"status is {status!r}, not 'ok'", "status")
    # A field renamed upstream shows as a field that no plan has: refuse, don't emit nothing.
    require_fields(NAME, capture, plans, REQUIRED, "plan")
    return plans


# -- one plan ---------------------------------------------------------------------------------


def _plan_offers(plan: Any, capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    if not isinstance(plan, dict):
        return [], [reject(NAME, f"plan is not an object: {type(plan).__name__}", plan)]
    name = plan.get("name")
    if not isinstance(name, str) or not name.strip():
        return [], [reject(NAME, "plan without a name", plan)]
    label, gpu = plan.get("gpu_label"), plan.get("gpu")
    if gpu in ("0", 0) or (gpu is None and label is None):
        return [], []  # a CPU plan
    if plan.get("available") is False:
        return [], []  # not sold (the flag is the plan's state, not its stock)
    count = positive_decimal(gpu) if isinstance(gpu, str) else positive_number(gpu)
    if count is None or count != int(count):
        return [], [reject(NAME, f"gpu is not a GPU count: {gpu!r}", plan)]
    if not isinstance(label, str) or not label.strip():
        return [], [reject(NAME, f"GPU plan without a gpu_label: {label!r}", plan)]
    label = " ".join(label.split())
    price = positive_number(plan.get("hourly_price"))
    if price is None:
        return [], [reject(NAME, f"hourly_price is not a price: {plan.get('hourly_price')!r}",
                           plan)]
    regions = _regions(plan.get("available_regions"))
    if regions is None:
        return [], [reject(NAME, "available_regions is not a list of regions with a location: "
                           f"{plan.get('available_regions')!r}", plan)]
    if not regions:
        return [], [reject(NAME, "plan is offered in no region", plan)]
    memory = LABEL_MEMORY.search(label)
    data: ProviderData = {
        "plan_id": plan.get("id") if isinstance(plan.get("id"), int) else None,
        "host_type": _text(plan.get("host_type")),
        "monthly_price": positive_number(plan.get("montly_price")),
        "windows": plan.get("windows") if isinstance(plan.get("windows"), bool) else None,
    }
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for location, description in regions:
        key = f"{name}|{location}|{PricingModel.ON_DEMAND.value}"
        try:
            offers.append(ParsedOffer(
                provider=NAME, offer_key=key, instance_type=name, gpu_label=label,
                gpu_count=int(count),
                vram_gb_per_gpu=float(memory.group(1)) if memory else None,
                pricing_model=PricingModel.ON_DEMAND, price_per_hour=price, currency=CURRENCY,
                region=location, vcpus=_number(plan.get("cpu")),
                ram_gb=_gb_of_mb(plan.get("ram")), disk_gb=_number(plan.get("disk")),
                source_url=capture.url, observed_at=capture.fetched_at,
                provider_data={**data, "region_description": description},
            ))
        except ValidationError as exc:
            rejects.append(reject(NAME, f"invalid offer: {exc.errors()[0]['msg']}", plan, key))
    return offers, rejects


def _regions(value: Any) -> list[tuple[str, str | None]] | None:
    """(location, description) of each region, in order and once each; None when the value is
    not a list of objects with a location code."""
    if not isinstance(value, list):
        return None
    seen: dict[str, str | None] = {}
    for region in value:
        location = region.get("location") if isinstance(region, dict) else None
        if not isinstance(location, str) or not location.strip():
            return None
        seen.setdefault(location.strip(), _text(region.get("description")))
    return list(seen.items())


def _number(value: Any) -> float | None:
    """A count or size the API prints as a string of digits ("8", "500"), or a JSON number."""
    return positive_decimal(value) if isinstance(value, str) else positive_number(value)


def _gb_of_mb(value: Any) -> float | None:
    mb = _number(value)
    return mb / MB_PER_GB if mb is not None else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
