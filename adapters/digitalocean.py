"""DigitalOcean GPU Droplets: the API's sizes with a token, else the public pricing docs page.

Live path: with `DIGITALOCEAN_TOKEN` set, the API `GET https://api.digitalocean.com/v2/sizes`
(Bearer token), every page of it (`links.pages.next`); without a token, the docs page
docs.digitalocean.com/products/droplets/details/pricing/, which needs none. Both are bundled
(adapters/snapshots/digitalocean/PROVENANCE.md): the offline refresh, which replays with every
credential set, reads the sizes; a replay without the token reads the docs page. `parse()` also
reads the 2025 marketing page (www.digitalocean.com/pricing/gpu-droplets, kept in
tests/fixtures/digitalocean/); a page is told by its layout, not by its URL.

Docs page (2026, server-rendered Hugo): `h2` sections, each with one `<table>` whose columns are
GPU and Price. The section is told by its heading text:
- "On-Demand GPU Droplet Pricing": on-demand offers (required: missing is a ParseError).
- "Spot GPU Droplet Pricing": spot offers. The page says the spot price "may change daily" and
  is billed like on-demand (per second, no term): a published price, listed, spot.
- "Contract GPU Droplet Pricing": "Per contract after contacting sales": rejected.
- Any other "… GPU Droplet Pricing" section is a term not modelled here: its rows are rejected.
A price cell reads "$35.76 per hour" and is the whole Droplet's hourly rate. A plan "NVIDIA H200
(8x)" is an 8-GPU Droplet; a plan without the suffix is the single-GPU Droplet (every "(8x)"
price is 8 times its single-GPU row). The count leaves the label; a "(8x)" that is not at the
end leaves the count unknown and the row is rejected, never read as one GPU. The page names no
VRAM, size slug or region. "billed per second" in a section sets a 1 s billing increment.

Marketing page (2025, styled-components cards, hashed class names; select on the stable name
prefixes):
- `h3` names the Droplet ("NVIDIA H100x8"); a `p` under the price says "On-Demand Price" or
  "Reserved Price"; the price spans read "$2.99" + "/GPU/hour".
- A promotion shows two prices: the list price in a strike-through span first, then the price
  charged ("$6.74" struck, "$3.39" + "/GPU/hour*"). The struck price is never the price; the
  promo price is loaded with `promo` and the list price in `provider_data`.
- The spec list gives GPUs per Droplet, GPU memory (whole Droplet), Droplet memory (GiB), vCPUs,
  boot and scratch disk (an SVG dash means none); the size slug is in the "Get started" link
  (`?size=gpu-h100x8-640gb`, or "undefined").
- Reserved cards say "Prices start as low as $1.99/GPU/hour ... contractual commitment of 12
  months ... contact sales": a floor for a negotiated contract, not a price, so they are
  rejected.

API sizes: `price_hourly` is the whole Droplet; `gpu_info{count, vram{amount, unit}, model}` (VRAM
for the whole Droplet); `memory` MiB; `regions` where the size can be created, `available`.
Sizes without `gpu_info` are CPU Droplets and are not offers. One offer per size and region; its
key carries the region (`gpu-h100x8-640gb|nyc1|on_demand`), which the pages never name (docs:
`NVIDIA H100|8x|on_demand`; cards: `gpu-h100x8-640gb|on_demand`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pydantic import ValidationError
from selectolax.lexbor import LexborHTMLParser, LexborNode

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    as_dict,
    envelope,
    finite_number,
    is_scalar,
    newest_wins,
    node_text,
    one_price_per_key,
    parse_error,
    positive_decimal,
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

PRICING_URL = "https://docs.digitalocean.com/products/droplets/details/pricing/"
API_HOST = "api.digitalocean.com"
SIZES_URL = f"https://{API_HOST}/v2/sizes"
MAX_PAGES = 50  # DigitalOcean pages 20 sizes; ~150 sizes in all: stops a pager that never ends
TOKEN_VAR = "DIGITALOCEAN_TOKEN"

NAME = "digitalocean"
SOURCE_KIND: SourceKind = "html"  # without a token; with one, the API
CREDENTIALS: tuple[str, ...] = (TOKEN_VAR,)
OPTIONAL_CREDENTIALS = CREDENTIALS  # the API is asked only with a token; a replay reads the page

# Docs page: section heading (lower case) -> pricing model; None: priced by contract only.
ON_DEMAND_HEADING = "On-Demand GPU Droplet Pricing"
SECTIONS: dict[str, PricingModel | None] = {
    ON_DEMAND_HEADING.lower(): PricingModel.ON_DEMAND,
    "spot gpu droplet pricing": PricingModel.SPOT,
    "contract gpu droplet pricing": None,
}
COLUMNS = ("gpu", "price")
HOURLY_RE = re.compile(r"^\$\s*(\d[\d,]*(?:\.\d+)?)\s+per\s+hour$", re.IGNORECASE)
PLAN_COUNT_RE = re.compile(r"^(.*?)\s*\((\d+)x\)$", re.IGNORECASE)
ANY_COUNT_RE = re.compile(r"\(\d+x\)", re.IGNORECASE)
PER_SECOND_RE = re.compile(r"\bper[- ]second\b", re.IGNORECASE)
GPU_SECTION_SUFFIX = "gpu droplet pricing"  # a new section with it is rejected row by row

# Marketing page (2025)
CARD = 'div[class*="StyledCardPricingCard"]'
PRICE_BOX = 'div[class*="StyledPriceContainer"]'
STRUCK = "StrikeThrough"  # the component that strikes a list price through when promo is on
PRICE_RE = re.compile(r"^\$\s*(\d[\d,]*(?:\.\d+)?)$")
UNIT_RE = re.compile(r"^/\s*GPU\s*/\s*hour\s*(\**)$", re.IGNORECASE)
SIZE_RE = re.compile(r"^(\d[\d,]*(?:\.\d+)?)\s*(GB|GiB|TB|TiB)\b", re.IGNORECASE)
COUNT_SUFFIX_RE = re.compile(r"^(.*?)\s*x(\d+)$")
TERM_RE = re.compile(r"commitment of (\d+) months", re.IGNORECASE)
# Bytes per unit: RAM and disk are reported in GB (10^9 bytes) as gpuscout.core.models specifies;
# VRAM stays the nominal number printed ("80 GB"), as the GPU catalog records it.
UNIT_BYTES = {"gb": 1e9, "gib": 2**30, "tb": 1e12, "tib": 2**40}
MIB = 2**20
API_REQUIRED = ("slug", "price_hourly")


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    """Every page of the sizes with a token, else the pricing page.

    A page that fails is a FetchError from the shared client, never a shorter list; a `next`
    link that loops, runs past MAX_PAGES or leaves the API host (the token goes nowhere else)
    is one too.
    """
    token = creds.get(TOKEN_VAR)
    if not token:
        return [client.get(PRICING_URL)]
    headers = {"Authorization": f"Bearer {token}"}
    captures = [client.get(SIZES_URL, headers=headers)]
    seen = {SIZES_URL}
    while (link := _next_page(captures[-1])) is not None:
        if link in seen or len(captures) >= MAX_PAGES:
            raise FetchError(f"links.pages.next loops or exceeds {MAX_PAGES} pages",
                             provider=NAME, url=link, transient=False)
        if urlsplit(link).hostname != API_HOST:
            raise FetchError(f"links.pages.next leaves {API_HOST}", provider=NAME, url=link,
                             transient=False)
        seen.add(link)
        captures.append(client.get(link, headers=headers))
    return captures


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, lambda c: _parse_sizes(c)
                       if urlsplit(c.url).hostname == API_HOST else _parse_page(c))


def _parse_page(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    """The docs page when it has a GPU pricing section, else the marketing page's cards."""
    tree = LexborHTMLParser(capture.text())
    sections = _docs_sections(tree)
    if sections:
        return _parse_docs(sections, capture)
    cards = tree.css(CARD)
    if not cards:
        raise parse_error(NAME, capture, f"neither an {ON_DEMAND_HEADING!r} section nor GPU "
                          "Droplet pricing cards", ON_DEMAND_HEADING)
    return _parse_cards(cards, capture)


# -- docs pricing page (2026) -----------------------------------------------------------------


@dataclass(frozen=True)
class _Section:
    heading: str  # as printed
    known: bool  # one of SECTIONS; else a GPU section this adapter does not read
    model: PricingModel | None
    tables: list[LexborNode]
    text: str  # the section's prose, for the billing statement


def _docs_sections(tree: LexborHTMLParser) -> list[_Section]:
    """Each `h2` "… GPU Droplet Pricing", with the tables and text up to the next `h2`."""
    sections: list[_Section] = []
    for h2 in tree.css("h2"):
        # deep=False: the heading's own words, without its "public" pill and anchor link
        heading = " ".join((h2.text(deep=False) or "").split())
        if not heading.lower().endswith(GPU_SECTION_SUFFIX):
            continue
        tables: list[LexborNode] = []
        prose: list[str] = []
        node = h2.next
        while node is not None and node.tag != "h2":
            if node.tag == "table":
                tables.append(node)
            elif not (node.tag or "-").startswith("-"):  # an element, not text or a comment
                tables.extend(node.css("table"))
                prose.append(node_text(node))
            node = node.next
        sections.append(_Section(heading, heading.lower() in SECTIONS,
                                 SECTIONS.get(heading.lower()), tables, " ".join(prose)))
    return sections


def _parse_docs(sections: list[_Section],
                capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    headings = [s.heading.lower() for s in sections]
    if ON_DEMAND_HEADING.lower() not in headings:
        raise parse_error(NAME, capture, f"no {ON_DEMAND_HEADING!r} section",
                          ON_DEMAND_HEADING)
    if len(set(headings)) != len(headings):
        raise parse_error(NAME, capture, "a pricing section appears twice: "
                          f"{', '.join(s.heading for s in sections)}", ON_DEMAND_HEADING)
    results: list[ParsedOffer | Reject] = []
    for section in sections:
        if not section.known:
            results.extend(_unread_rows(section))
            continue
        rows = _section_rows(section, capture)
        per_second = PER_SECOND_RE.search(section.text) is not None
        results.extend(_plan_row(row, section, per_second, capture) for row in rows)
    offers, rejects = split_results(results)
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*rejects, *conflicts]


def _unread_rows(section: _Section) -> list[Reject]:
    """A new GPU pricing section (a term this adapter does not model): every row a reject."""
    return [Reject(provider=NAME, raw=tr.html or "",
                   reason=f"{section.heading!r} is a GPU pricing section this adapter does not "
                          f"read: {[node_text(td) for td in tr.css('td')]}")
            for table in section.tables for tr in table.css("tr") if tr.css_first("td")]


def _section_rows(section: _Section, capture: Capture) -> list[LexborNode]:
    """The body rows of the section's one GPU | Price table; a ParseError for anything else."""
    if len(section.tables) != 1:
        raise parse_error(NAME, capture, f"{section.heading!r} has {len(section.tables)} "
                          "tables, expected one", section.heading)
    table = section.tables[0]
    columns = tuple(node_text(th).lower() for th in table.css("th"))
    if columns != COLUMNS:
        raise parse_error(NAME, capture, f"{section.heading!r} table has columns {columns}, "
                          f"expected {COLUMNS}", "GPU, Price", snippet=(table.html or "")[:200])
    rows = [tr for tr in table.css("tr") if tr.css_first("td") is not None]
    if not rows:
        raise parse_error(NAME, capture, f"{section.heading!r} table has no rows",
                          section.heading)
    return rows


def _plan_row(row: LexborNode, section: _Section, per_second: bool,
              capture: Capture) -> ParsedOffer | Reject:
    raw = row.html or ""
    cells = [node_text(td) for td in row.css("td")]
    if len(cells) != len(COLUMNS) or not cells[0]:
        return Reject(provider=NAME, raw=raw,
                      reason=f"{section.heading}: expected a GPU and a price, found {cells}")
    plan, price_text = cells
    parsed = _plan(plan)
    if parsed is None:
        return Reject(provider=NAME, raw=raw, reason=f"{plan!r}: a GPU count '(Nx)' that is "
                      "not at the end of the plan: the GPUs per Droplet are unknown")
    label, count = parsed
    if section.model is None:
        return Reject(provider=NAME, raw=raw,
                      offer_key=f"{label}|{count}x|{PricingModel.RESERVED.value}",
                      reason=f"{plan}: {price_text!r} ({section.heading}): a contract price "
                             "quoted by sales, not a listed price")
    key = f"{label}|{count}x|{section.model.value}"
    match = HOURLY_RE.match(price_text)
    if match is None:
        return Reject(provider=NAME, raw=raw, offer_key=key,
                      reason=f"{plan}: unrecognised price {price_text!r} ({section.heading})")
    price = float(match.group(1).replace(",", ""))
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, gpu_label=label, gpu_count=count,
            pricing_model=section.model, price_per_hour=price, price_kind=PriceKind.LISTED,
            billing_increment_s=1 if per_second else None, source_url=capture.url,
            observed_at=capture.fetched_at,
            provider_data={"plan": plan, "price_per_gpu_hour": round(price / count, 6)},
        )
    except ValidationError as exc:
        return Reject(provider=NAME, reason=f"invalid offer: {exc.errors()[0]['msg']}", raw=raw,
                      offer_key=key)


def _plan(plan: str) -> tuple[str, int] | None:
    """'NVIDIA H200 (8x)' -> ('NVIDIA H200', 8); 'NVIDIA H200' -> ('NVIDIA H200', 1); None when
    a count is stated elsewhere than at the end ('NVIDIA H200 (8x)*')."""
    match = PLAN_COUNT_RE.match(plan)
    if match is not None and int(match.group(2)) > 0:
        return match.group(1), int(match.group(2))
    if ANY_COUNT_RE.search(plan):
        return None
    return plan, 1


# -- marketing pricing page (2025) ------------------------------------------------------------


def _parse_cards(cards: list[LexborNode],
                 capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    if not any(c.css_first(PRICE_BOX) is not None for c in cards):
        raise parse_error(NAME, capture, "no card has a price container", PRICE_BOX)
    return split_results(_card(card, capture) for card in cards)


def _card(card: LexborNode, capture: Capture) -> ParsedOffer | Reject:
    raw = card.html or ""
    title_node = card.css_first("h3")
    title = " ".join(title_node.text().split()) if title_node is not None else ""
    box = card.css_first(PRICE_BOX)
    if not title or box is None:
        return Reject(provider=NAME, reason="card without a name or a price", raw=raw)
    label_node = box.css_first("p")
    kind = " ".join(label_node.text().split()) if label_node is not None else ""
    if kind.lower().startswith("reserved"):
        return _reserved_reject(title, card, raw)
    if kind.lower() != "on-demand price":
        return Reject(provider=NAME, raw=raw, reason=f"{title}: unknown price label {kind!r}")
    prices = [s for s in _child_spans(box) if len(_child_spans(s)) == 2]
    if not prices or len(prices) > 2:
        return Reject(provider=NAME, raw=raw,
                      reason=f"{title}: expected one price or a struck and a promo price, "
                             f"found {len(prices)}")
    if len(prices) == 2 and STRUCK not in (prices[0].attributes.get("class") or ""):
        return Reject(provider=NAME, raw=raw,
                      reason=f"{title}: two prices and neither is struck through")
    current = _price(prices[-1])
    if current is None:
        return Reject(provider=NAME, raw=raw,
                      reason=f"{title}: unrecognised price {prices[-1].text(strip=True)!r}")
    per_gpu, marks = current
    specs = _specs(card)
    gpus = positive_decimal(specs.get("gpus per droplet"))
    if gpus is None or gpus != int(gpus):
        return Reject(provider=NAME, raw=raw, reason=f"{title}: no 'GPUs per Droplet'")
    count = int(gpus)
    vram_total = _size_value(specs.get("gpu memory"))
    slug = _slug(card)
    label = _label(title, count)
    vram = round(vram_total / count, 3) if vram_total else None
    key_base = slug or f"{label}|{count}x|{vram or 0:g}GB"
    key = f"{key_base}|{PricingModel.ON_DEMAND.value}"
    data: ProviderData = {"droplet": title, "size_slug": slug,
                          "price_per_gpu_hour": per_gpu,
                          "scratch_disk_gb": _size_gb(specs.get("scratch disk")),
                          "transfer": specs.get("transfer") or None}
    if len(prices) == 2:
        listed = _price(prices[0])
        data |= {"promo": True, "list_price_per_gpu_hour": listed[0] if listed else None}
        if marks:
            data["promo_footnote"] = marks
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=slug, gpu_label=label,
            gpu_count=count, vram_gb_per_gpu=vram, pricing_model=PricingModel.ON_DEMAND,
            price_per_hour=round(per_gpu * count, 6), price_kind=PriceKind.LISTED,
            vcpus=positive_decimal(specs.get("droplet vcpus")),
            ram_gb=_size_gb(specs.get("droplet memory")),
            disk_gb=_size_gb(specs.get("boot disk")), source_url=capture.url,
            observed_at=capture.fetched_at,
            provider_data={k: v for k, v in data.items() if v is not None},
        )
    except ValidationError as exc:
        return Reject(provider=NAME, reason=f"invalid offer: {exc.errors()[0]['msg']}", raw=raw,
                      offer_key=key)


def _reserved_reject(title: str, card: LexborNode, raw: str) -> Reject:
    text = " ".join(card.text(separator=" ").split()).lower()
    term = TERM_RE.search(text)
    months = f"{term.group(1)}-month " if term else ""
    if "as low as" in text:
        return Reject(provider=NAME, raw=raw,
                      reason=f"{title}: reserved price for a {months}contract is a floor "
                             "('as low as') quoted by sales, not a price")
    if "contact sales" in text:
        return Reject(provider=NAME, raw=raw,
                      reason=f"{title}: reserved price for a {months}contract quoted by sales")
    return Reject(provider=NAME, raw=raw, reason=f"{title}: reserved price without a stated term")


def _price(span: LexborNode) -> tuple[float, str] | None:
    """'$3.39' + '/GPU/hour*' -> (3.39, '*'); None for anything else (per Droplet, text)."""
    parts = [s.text(strip=True) for s in _child_spans(span)]
    if len(parts) != 2:
        return None
    amount, unit = PRICE_RE.match(parts[0]), UNIT_RE.match(parts[1])
    if amount is None or unit is None:
        return None
    return float(amount.group(1).replace(",", "")), unit.group(1)


def _child_spans(node: LexborNode) -> list[LexborNode]:
    # Not node.css("span"): lexbor's css() matches the node itself too.
    return [c for c in node.iter() if c.tag == "span"]


def _specs(card: LexborNode) -> dict[str, str]:
    specs: dict[str, str] = {}
    for li in card.css("li"):
        spans = _child_spans(li)
        if len(spans) == 2:
            specs[spans[0].text(strip=True).lower()] = spans[1].text(strip=True)
    return specs


def _slug(card: LexborNode) -> str | None:
    """The size slug in the 'Get started' link (activation_redirect=/gpus/new?size=<slug>)."""
    for a in card.css("a[href]"):
        query = parse_qs(urlsplit(a.attributes.get("href") or "").query)
        for redirect in query.get("activation_redirect", []) + query.get("redirect_url", []):
            size = parse_qs(urlsplit(redirect).query).get("size", [""])[0]
            if size and size != "undefined":
                return size
    return None


def _label(title: str, count: int) -> str:
    """'NVIDIA H100x8' with 8 GPUs per Droplet -> 'NVIDIA H100' (the count is its own field)."""
    match = COUNT_SUFFIX_RE.match(title)
    if match is not None and int(match.group(2)) == count:
        return match.group(1)
    return title


# -- API /v2/sizes ----------------------------------------------------------------------------


def _next_page(capture: Capture) -> str | None:
    doc, _ = envelope(NAME, capture, "sizes")
    link = as_dict(as_dict(doc.get("links")).get("pages")).get("next")
    return link if isinstance(link, str) and link else None


def _parse_sizes(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    _, sizes = envelope(NAME, capture, "sizes")
    # a field renamed upstream is missing from every size
    require_fields(NAME, capture, sizes, API_REQUIRED, "size")
    return split_results(result for size in sizes
                         # a size without gpu_info is a CPU Droplet: not a GPU offer
                         if not (isinstance(size, dict) and size.get("gpu_info") is None)
                         for result in _size_offers(size, capture))


def _size_offers(size: Any, capture: Capture) -> list[ParsedOffer | Reject]:
    raw = json.dumps(size, sort_keys=True)
    if not isinstance(size, dict):
        return [Reject(provider=NAME, reason="size is not an object", raw=raw)]
    gpu = as_dict(size["gpu_info"])
    slug, price = size.get("slug"), positive_number(size.get("price_hourly"))
    count, model = gpu.get("count"), gpu.get("model")
    if not isinstance(slug, str) or not slug:
        return [Reject(provider=NAME, reason="GPU size without a slug", raw=raw)]
    if price is None:
        return [Reject(provider=NAME, raw=raw, reason=f"{slug}: price_hourly is not a price: "
                       f"{size.get('price_hourly')!r}")]
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        return [Reject(provider=NAME, reason=f"{slug}: gpu_info.count is not a count: {count!r}",
                       raw=raw)]
    if not isinstance(model, str) or not model:
        return [Reject(provider=NAME, reason=f"{slug}: gpu_info without a model", raw=raw)]
    vram = _api_vram_per_gpu(gpu.get("vram"), count)
    listed = size.get("regions")
    regions = [r for r in listed if isinstance(r, str)] if isinstance(listed, list) else []
    regions = regions or [None]
    available = size.get("available")
    availability = (Availability.UNKNOWN if not isinstance(available, bool)
                    else Availability.IN_STOCK if available else Availability.OUT_OF_STOCK)
    data: ProviderData = {"description": size.get("description"), "size_slug": slug,
                          "price_monthly": size.get("price_monthly"),
                          "transfer_tb": size.get("transfer"),
                          "networking_throughput_mbps": size.get("networking_throughput"),
                          "scratch_disk_gb": _api_scratch_gb(size.get("disk_info"))}
    memory = positive_number(size.get("memory"))
    out: list[ParsedOffer | Reject] = []
    for region in regions:
        key = f"{slug}|{region or '*'}|{PricingModel.ON_DEMAND.value}"
        try:
            out.append(ParsedOffer(
                provider=NAME, offer_key=key, instance_type=slug, gpu_label=model,
                gpu_count=count, vram_gb_per_gpu=vram, pricing_model=PricingModel.ON_DEMAND,
                price_per_hour=price, price_kind=PriceKind.LISTED, region=region,
                vcpus=positive_number(size.get("vcpus")),
                ram_gb=round(memory * MIB / 1e9, 1) if memory is not None else None,
                disk_gb=positive_number(size.get("disk")), availability=availability,
                source_url=capture.url, observed_at=capture.fetched_at,
                provider_data={k: v for k, v in data.items() if is_scalar(v)},
            ))
        except ValidationError as exc:
            out.append(Reject(provider=NAME, reason=f"invalid offer: {exc.errors()[0]['msg']}",
                              raw=raw, offer_key=key))
    return out


def _api_vram_per_gpu(vram: Any, count: int) -> float | None:
    """gpu_info.vram is the whole Droplet's ({"amount": 640, "unit": "gib"} for 8 GPUs)."""
    amount = finite_number(as_dict(vram).get("amount"))
    if amount is None or str(as_dict(vram).get("unit", "")).lower() not in ("gib", "gb"):
        return None
    return round(amount / count, 3) or None


def _api_scratch_gb(disks: Any) -> float | None:
    for disk in disks if isinstance(disks, list) else []:
        size = as_dict(as_dict(disk).get("size"))
        amount, unit = finite_number(size.get("amount")), str(size.get("unit", "")).lower()
        if as_dict(disk).get("type") == "scratch" and amount is not None and unit in UNIT_BYTES:
            return round(amount * UNIT_BYTES[unit] / 1e9, 1)
    return None


# -- helpers ----------------------------------------------------------------------------------


def _size_value(text: str | None) -> float | None:
    match = SIZE_RE.match(text or "")
    return float(match.group(1).replace(",", "")) if match else None


def _size_gb(text: str | None) -> float | None:
    match = SIZE_RE.match(text or "")
    if match is None:
        return None
    value = float(match.group(1).replace(",", ""))
    return round(value * UNIT_BYTES[match.group(2).lower()] / 1e9, 1)

