"""CoreWeave: instance prices from the public pricing page (coreweave.com/pricing).

Two layouts are read (adapters/snapshots/coreweave/PROVENANCE.md, tests/fixtures/coreweave/):

2026, www.coreweave.com/pricing (what `fetch()` requests). The section headed "On-demand GPU
instances" holds one table per region, each after a "REGION: NORTH AMERICA" style heading. A
row is a `div[role=listitem]`: the model in `h3[data-product]`, spec cells each followed by
their label ("GPU Count", "VRAM", "vCPUs", "System RAM", "Local Storage (TB)") and labelled
price spans "On-Demand Price: <span>$68.80</span> / Hour", "Spot Price: ..." and, in some
tables, "Inference Single CPU Price: ...".

- Sections, tables and cells are found by their text (headings, labels), not styling classes.
  The section ends at the next heading of its level, so the CPU section after it (same row
  markup, its own "REGION:" headings) never yields an offer.
- Prices are per INSTANCE per hour: an offer is the whole instance, `gpu_count` GPUs. A count
  cell "4^1" is 4 with footnote 1 (GB200/GB300: two superchips of two GPUs each). VRAM is per
  GPU; vCPUs, RAM (GB as printed) and local storage (TB, taken as 1000 GB) are the instance's.
- One offer per region and pricing model ("On-Demand" -> on_demand, "Spot" -> spot); the
  region is the heading's name in lower case ("north-america", "europe").
- An empty value or "N/A" is the page's "not offered": no offer ("Contact sales" rows have no
  price at all and yield nothing). The "Inference ..." span is a different product (inference
  platform customers only) and is never read as a price. Any other price label is a Reject of
  its row: a renamed "On-Demand Price" must not pass for a spot-only row.
- No section, no region table, a region table without rows, or a count or price label that no
  row carries is a ParseError naming it. A row that cannot be read is a Reject and the page is
  incomplete (it closes nothing).

2023, www.coreweave.com/gpu-cloud-pricing (archived captures). A div table: one
`.table-body-row` per GPU with the name in `a[data-product]`, then four `.w-col-2` cells: VRAM
(GB), max vCPUs per GPU, max RAM per GPU (GB) and `<strong>$4.76</strong>` under the column
header "GPU Component Cost Per Hour". That price is one GPU's component cost; CPU and RAM are
billed on top at rates the page does not show, so each row is an offer of ONE GPU priced at the
component alone, flagged `provider_data["price_scope"] = "gpu_component"` (consumers comparing
whole-instance prices skip or bound these). The vCPU and RAM columns are ceilings per GPU, kept
in `provider_data`. A page of this layout without the component header is a ParseError, so an
instance-priced table is never read with this meaning.
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
from gpuscout.adapters.toolkit import (
    newest_wins,
    node_text,
    one_price_per_key,
    parse_error,
    positive_decimal,
    split_results,
)
from gpuscout.core.models import (
    Interconnect,
    ParsedOffer,
    ParseResult,
    PriceKind,
    PricingModel,
    Reject,
)

PRICING_URL = "https://www.coreweave.com/pricing"

NAME = "coreweave"
SOURCE_KIND: SourceKind = "html"
CREDENTIALS: tuple[str, ...] = ()

PRICE_RE = re.compile(r"^\$\s*(\d[\d,]*(?:\.\d+)?)$")
PageRead = tuple[list[ParsedOffer], list[Reject], bool]

# -- 2026 layout: the words that give the page its meaning --
SECTION_RE = re.compile(r"^On-demand\s+GPU\s+instances$", re.IGNORECASE)
SECTION_FIELD = "On-demand GPU instances"
REGION_RE = re.compile(r"^REGION:\s*(\S.*)$", re.IGNORECASE)
REGION_FIELD = "REGION:"
ROW_FIELD = "div[role=listitem]"
HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
COUNT_LABEL = "GPU Count"
SPEC_LABELS = frozenset({COUNT_LABEL, "VRAM", "vCPUs", "System RAM", "Local Storage (TB)"})
# price label (lower case) -> pricing model; an "Inference ..." label is another product.
PRICE_LABELS = {"on-demand price": PricingModel.ON_DEMAND, "spot price": PricingModel.SPOT}
PRICE_FIELDS = {PricingModel.ON_DEMAND: "On-Demand Price", PricingModel.SPOT: "Spot Price"}
LABEL_RE = re.compile(r"^\s*([^:]+?)\s*:")
INFERENCE_RE = re.compile(r"^Inference\b", re.IGNORECASE)
COUNT_RE = re.compile(r"^(\d+)(?:\^(\d+))?$")  # "8", or "4^1": 4 with footnote 1
NOT_OFFERED = frozenset({"", "n/a"})
GB_PER_TB = 1000
SYSTEM_INTERCONNECT = {"HGX": Interconnect.NVSWITCH, "NVL72": Interconnect.NVSWITCH}

# -- 2023 layout --
COMPONENT_ROW = ".table-body-row"
PRICE_SCOPE = "gpu_component"
# The column header that gives the price its meaning; the page breaks it with <br/>.
COMPONENT_HEADER_RE = re.compile(r"GPU\s+Component\s+Cost\s+Per\s+Hour", re.IGNORECASE)
ROW_CELLS = 4  # VRAM, max vCPUs/GPU, max RAM/GPU, price


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRICING_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _parse_page)


def _parse_page(capture: Capture) -> PageRead:
    """Offers, rejects, and whether every row could be read (False: the page closes nothing)."""
    tree = LexborHTMLParser(capture.text())
    if _has_section(tree) or tree.css_first(COMPONENT_ROW) is None:
        return _parse_instance_page(tree, capture)
    return _parse_component_page(tree, capture)


# -- 2026: per-instance prices by region -------------------------------------------------------


def _has_section(tree: LexborHTMLParser) -> bool:
    return any(SECTION_RE.match(node_text(h)) for h in tree.css(", ".join(HEADINGS)))


def _parse_instance_page(tree: LexborHTMLParser, capture: Capture) -> PageRead:
    tables = _region_tables(tree, capture)
    rows = [row for _, table in tables for row in table]
    if not any(COUNT_LABEL in _spec_cells(row) for row in rows):
        raise parse_error(NAME, capture, f"no row has a '{COUNT_LABEL}' cell", COUNT_LABEL)
    for model, field in PRICE_FIELDS.items():
        if not any(model in (PRICE_LABELS.get(label.lower()) for label, _ in _price_spans(row))
                   for row in rows):
            raise parse_error(NAME, capture, f"no row has a '{field}:' label", field)
    results: list[ParsedOffer | Reject] = []
    for heading, table in tables:
        for row in table:
            results += _instance_row(row, heading, capture)
    offers, rejects = split_results(results)
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*rejects, *conflicts], not rejects and not conflicts


def _region_tables(tree: LexborHTMLParser, capture: Capture,
                   ) -> list[tuple[str, list[LexborNode]]]:
    """(region heading, its rows) for each region table of the GPU section, in page order.

    Walks the page in document order: the section starts at its heading and ends at the next
    heading of the same or a higher level; rows belong to the region heading before them.
    """
    if tree.body is None:
        raise parse_error(NAME, capture, "page without a body", SECTION_FIELD)
    level: int | None = None
    tables: list[tuple[str, list[LexborNode]]] = []
    orphans: list[LexborNode] = []
    for node in tree.body.traverse():
        tag_level = HEADINGS.get(node.tag or "")
        text = node_text(node) if tag_level is not None else ""
        if level is None:
            if tag_level is not None and SECTION_RE.match(text):
                level = tag_level
        elif tag_level is not None and tag_level <= level:
            break  # the next section (CPU instances, storage ...)
        elif tag_level is not None and (region := REGION_RE.match(text)):
            tables.append((" ".join(region.group(1).split()).upper(), []))
        elif node.tag == "div" and node.attributes.get("role") == "listitem":
            (tables[-1][1] if tables else orphans).append(node)
    if level is None:
        raise parse_error(NAME, capture, f"no '{SECTION_FIELD}' section", SECTION_FIELD)
    _check_tables(tables, orphans, capture)
    return tables


def _check_tables(tables: list[tuple[str, list[LexborNode]]], orphans: list[LexborNode],
                  capture: Capture) -> None:
    """ParseError unless every row sits in a region table and every region table has rows."""
    if not tables:
        raise parse_error(NAME, capture, "no region table ('REGION: ...' heading) in the GPU "
                          "instances section", REGION_FIELD)
    if orphans:  # its region is unknown, and may be another table's
        raise parse_error(NAME, capture, "a price row before the first 'REGION:' heading",
                          REGION_FIELD)
    for heading, rows in tables:
        if not rows:
            raise parse_error(NAME, capture, f"the REGION: {heading} table has no rows",
                              ROW_FIELD)


def _spec_cells(row: LexborNode) -> dict[str, list[str]]:
    """Label -> the values printed just before it ("8" before "GPU Count")."""
    cells: dict[str, list[str]] = {}
    for div in row.css("div"):
        label = node_text(div)
        if label not in SPEC_LABELS or any(True for _ in div.iter()):
            continue
        value = div.prev
        while value is not None and value.tag == "-text":
            value = value.prev
        if value is not None:
            cells.setdefault(label, []).append(node_text(value))
    return cells


def _price_spans(row: LexborNode) -> list[tuple[str, str]]:
    """(label, value) of each "<label>: <span>value</span> / Hour" span of the row."""
    spans: list[tuple[str, str]] = []
    for span in row.css("span"):
        values = [child for child in span.iter() if child.tag == "span"]
        label = LABEL_RE.match(span.text(deep=False))
        if len(values) == 1 and label is not None:
            spans.append((" ".join(label.group(1).split()), node_text(values[0])))
    return spans


def _instance_row(row: LexborNode, heading: str, capture: Capture) -> list[ParsedOffer | Reject]:
    raw = row.html or ""
    models = {((h.attributes.get("data-product") or "").strip(), node_text(h))
              for h in row.css("h3[data-product]")}
    slug, label = next(iter(models)) if len(models) == 1 else ("", "")
    if not slug or not label:
        return [Reject(provider=NAME, raw=raw, reason=f"REGION: {heading}: row names "
                       f"{len(models)} models (h3[data-product]), expected one")]
    cells = _spec_cells(row)
    counts = cells.get(COUNT_LABEL, [])
    count = COUNT_RE.match(counts[0]) if len(counts) == 1 else None
    if count is None or int(count.group(1)) < 1:
        return [Reject(provider=NAME, raw=raw, reason=f"REGION: {heading}: {label}: "
                       f"unreadable '{COUNT_LABEL}' {counts!r}")]
    prices = _row_prices(row)
    if isinstance(prices, str):
        return [Reject(provider=NAME, raw=raw, reason=f"REGION: {heading}: {label}: {prices}")]
    shape = _Shape(slug=slug, label=label, count=int(count.group(1)), count_cell=counts[0],
                   heading=heading, region=re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-"),
                   vram=_one(cells, "VRAM"), vcpus=_one(cells, "vCPUs"),
                   ram=_one(cells, "System RAM"), storage_tb=_one(cells, "Local Storage (TB)"))
    return [_instance_offer(shape, model, value, raw, capture)
            for model, value in prices.items() if value.lower() not in NOT_OFFERED]


def _row_prices(row: LexborNode) -> dict[PricingModel, str] | str:
    """The row's printed price per pricing model, or why its price labels cannot be read."""
    prices: dict[PricingModel, str] = {}
    for name, value in _price_spans(row):
        if INFERENCE_RE.match(name):
            continue  # inference platform pricing: another product
        model = PRICE_LABELS.get(name.lower())
        if model is None:
            return f"unrecognised price label {name!r}"
        if model in prices:
            return f"two '{name}:' labels"
        prices[model] = value
    if PricingModel.ON_DEMAND not in prices:
        return f"no '{PRICE_FIELDS[PricingModel.ON_DEMAND]}:' label"
    return prices


def _one(cells: dict[str, list[str]], label: str) -> float | None:
    """The number under `label`; None when absent, repeated or not a number."""
    values = cells.get(label, [])
    return positive_decimal(values[0]) if len(values) == 1 else None


@dataclass(frozen=True)
class _Shape:
    """What a row says of its instance, shared by its on-demand and spot offers."""

    slug: str
    label: str
    count: int
    count_cell: str
    heading: str  # "NORTH AMERICA"
    region: str  # "north-america"
    vram: float | None
    vcpus: float | None
    ram: float | None
    storage_tb: float | None


def _instance_offer(shape: _Shape, model: PricingModel, value: str, raw: str,
                    capture: Capture) -> ParsedOffer | Reject:
    key = f"{shape.slug}|{shape.region}|{model.value}"
    match = PRICE_RE.match(value)
    if match is None:
        return Reject(provider=NAME, raw=raw, offer_key=key,
                      reason=f"REGION: {shape.heading}: unrecognised "
                             f"{PRICE_FIELDS[model]} {value!r}")
    links = [link for word, link in SYSTEM_INTERCONNECT.items()
             if word in shape.label.upper().split()]
    data: dict[str, str | int | float | bool | None] = {"region_heading": shape.heading}
    if shape.count_cell != str(shape.count):
        data["gpu_count_cell"] = shape.count_cell  # "4^1": the footnote says how the 4 are built
    disk_gb = None
    if shape.storage_tb is not None:
        data["local_storage_tb"] = shape.storage_tb
        disk_gb = round(shape.storage_tb * GB_PER_TB, 1)
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=shape.slug, gpu_label=shape.label,
            gpu_count=shape.count, vram_gb_per_gpu=shape.vram, pricing_model=model,
            price_per_hour=float(match.group(1).replace(",", "")),
            price_kind=PriceKind.LISTED, region=shape.region, vcpus=shape.vcpus,
            ram_gb=shape.ram, disk_gb=disk_gb,
            interconnect=links[0] if links else None, source_url=capture.url,
            observed_at=capture.fetched_at, provider_data=data,
        )
    except ValidationError as exc:
        return Reject(provider=NAME, reason=f"invalid offer: {exc.errors()[0]['msg']}", raw=raw,
                      offer_key=key)


# -- 2023: GPU component prices ----------------------------------------------------------------


def _parse_component_page(tree: LexborHTMLParser, capture: Capture) -> PageRead:
    rows = tree.css(COMPONENT_ROW)
    if not any(r.css_first("a[data-product]") is not None for r in rows):
        raise parse_error(NAME, capture, "no row names its GPU in a[data-product]",
                          "data-product")
    body = tree.body.text(separator=" ") if tree.body is not None else ""
    if not COMPONENT_HEADER_RE.search(body):
        # Without this header the price column could be per instance or per GPU: refuse it.
        raise parse_error(NAME, capture,
                          "price column header 'GPU Component Cost Per Hour' not found",
                          "GPU Component Cost Per Hour")
    # A row without its cells: the page was cut or broken, other rows may be lost.
    complete = all(len(row.css(".w-col-2")) == ROW_CELLS for row in rows)
    offers, rejects = split_results(_component_row(row, capture) for row in rows)
    return offers, rejects, complete


def _component_row(row: LexborNode, capture: Capture) -> ParsedOffer | Reject:
    raw = row.html or ""
    link = row.css_first("a[data-product]")
    if link is None:
        return Reject(provider=NAME, reason="row without a[data-product]", raw=raw)
    slug = (link.attributes.get("data-product") or "").strip()
    label = link.text(strip=True)
    if not slug or not label:
        return Reject(provider=NAME, reason="row without a product slug or name", raw=raw)
    cells = row.css(".w-col-2")
    if len(cells) != ROW_CELLS:
        return Reject(provider=NAME, raw=raw,
                      reason=f"incomplete row: expected {ROW_CELLS} value cells, "
                             f"found {len(cells)}")
    vram, vcpus, ram = (positive_decimal(c.text(strip=True)) for c in cells[:3])
    price_node = cells[3].css_first("strong")
    price_text = price_node.text(strip=True) if price_node is not None else ""
    match = PRICE_RE.match(price_text)
    if match is None:
        return Reject(provider=NAME, raw=raw,
                      reason=f"unrecognised GPU component price {price_text!r}")
    if vram is None:
        return Reject(provider=NAME, raw=raw,
                      reason=f"unrecognised VRAM {cells[0].text(strip=True)!r}")
    key = f"{slug}|{PRICE_SCOPE}|{PricingModel.ON_DEMAND.value}"
    reserve = cells[3].css_first("a[href]")
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, instance_type=slug, gpu_label=label, gpu_count=1,
            vram_gb_per_gpu=vram, pricing_model=PricingModel.ON_DEMAND,
            price_per_hour=float(match.group(1).replace(",", "")),
            price_kind=PriceKind.LISTED, source_url=capture.url,
            observed_at=capture.fetched_at,
            provider_data={k: v for k, v in {
                "price_scope": PRICE_SCOPE,
                "billed_separately": "vCPU and RAM (rates not on the page)",
                "max_vcpus_per_gpu": vcpus, "max_ram_gb_per_gpu": ram,
                "reserve_url": reserve.attributes.get("href") if reserve is not None else None,
            }.items() if v is not None},
        )
    except ValidationError as exc:
        return Reject(provider=NAME, reason=f"invalid offer: {exc.errors()[0]['msg']}", raw=raw,
                      offer_key=key)
