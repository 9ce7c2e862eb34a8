"""Lambda Cloud: the instance-types API when a key is set, else the public pricing page.

Sources (adapters/snapshots/lambda/PROVENANCE.md):

- API, with `LAMBDA_API_KEY` (optional): `GET https://cloud.lambda.ai/api/v1/instance-types`
  with `Authorization: Bearer <key>` (Lambda Cloud API v1.10.0, `listInstanceTypes`). The body is
  `{"data": {<name>: {"instance_type": {...}, "regions_with_capacity_available": [...]}}}`;
  `instance_type` has `name` ("gpu_8x_h100_sxm5"), `description` ("8x H100 (80 GB SXM5)"),
  `gpu_description` ("H100 (80 GB SXM5)"), `price_cents_per_hour` ("The price of the instance
  type in US cents per hour": the whole instance) and `specs` (`vcpus`, `memory_gib`,
  `storage_gib`, `gpus`). A failure is `{"error": {"code", "message"}}`.
- Page, 2026, lambda.ai/pricing: a tab widget ("8x", "4x", "2x", "1x"); each tab panel holds a
  table whose header row names the columns (VRAM/GPU, vCPUs, RAM, STORAGE, PRICE/GPU/HR*), one
  row per plan (`tr[data-plan]`, the plan name in its first cell). The GPU count is the tab label.
- Page, 2024, lambdalabs.com/service/gpu-cloud: one plain table; the first cell says
  "On-demand 8x NVIDIA H100 SXM", the last "$2.99 / GPU / hr" or "CONTACT SALES".

Reading rules:
- API: one offer per region in `regions_with_capacity_available` (in stock there); an instance
  type with no region listed is one out-of-stock offer without a region, so its price stays
  known. VRAM per GPU is the "(NN GB" of `gpu_description`; GiB sizes are converted to GB.
  Instance types with no GPU (`specs.gpus` 0) are no GPU offer and are skipped.
- Page: both layouts print the price per GPU-hour; an offer's price is the whole instance
  (per-GPU price x count). Instance tables are found by their header text (a VRAM/GPU column
  and a price column), never by styling classes. Only tables in a tab panel labelled "Nx" are
  on-demand instance prices: a priced row anywhere else (a cluster or reserved table, a stray
  row) has no GPU count and is rejected with where it was found; a tab widget without any "Nx"
  tab is not the instance widget, and its rows are rejected likewise. A row of an instance
  table that cannot be read is a Reject and the page closes nothing (it may hold an offer the
  warehouse has); an instance table with no rows, or none whose cells sit under their header
  (a renamed column), is a ParseError naming it.
- Page offer keys are built from count, page label and VRAM only, so the same machine shape
  keeps its key across page layouts and its price history stays linked; API offer keys are the
  instance type name and region.
- When API and page captures are parsed together, the API wins: a page offer is dropped when an
  API offer has the same GPU count, GPU model and VRAM and a form factor (SXM, PCIe) that does
  not contradict the page's. Next to a readable API capture a page that cannot be read is a
  Reject and the result is incomplete, not a ParseError of the whole run.
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
    as_dict,
    as_list,
    envelope,
    json_body,
    newest_wins,
    node_text,
    one_price_per_key,
    parse_error,
    positive_decimal,
    positive_number,
    require_fields,
    split_results,
    stripped_text,
)
from gpuscout.core.errors import FetchError, ParseError
from gpuscout.core.models import (
    Availability,
    ParsedOffer,
    ParseResult,
    PricingModel,
    ProviderData,
    Reject,
)

PRICING_URL = "https://lambda.ai/pricing"
INSTANCE_TYPES_URL = "https://cloud.lambda.ai/api/v1/instance-types"
INSTANCE_TYPES_PATH = "/api/v1/instance-types"  # also on the deprecated cloud.lambdalabs.com
KEY_VAR = "LAMBDA_API_KEY"

NAME = "lambda"
SOURCE_KIND: SourceKind = "html"  # the page is read without a key; the API only with one
CREDENTIALS: tuple[str, ...] = (KEY_VAR,)
OPTIONAL_CREDENTIALS = CREDENTIALS  # the API is asked only when it is set; a replay reads the page

# 2026 page: column labels (trailing "*" footnote marks dropped) an instance table must carry.
VRAM_LABEL = "VRAM/GPU"
PRICE_LABEL = "PRICE/GPU/HR"
PLAN_RE = re.compile(r"^(On-demand|Reserved)\s+(\d+)x\s+(.+)$", re.IGNORECASE)
TAB_RE = re.compile(r"^(\d+)\s*x$", re.IGNORECASE)
PRICE_RE = re.compile(r"^\$\s*(\d[\d,]*(?:\.\d+)?)$")
PRICE_PER_GPU_RE = re.compile(r"^\$\s*(\d[\d,]*(?:\.\d+)?)\s*/\s*GPU\s*/\s*hr\b", re.IGNORECASE)
SIZE_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(GB|GiB|TB|TiB)\b", re.IGNORECASE)
# Bytes per unit, to report RAM and disk in GB (10^9 bytes) as gpuscout.core.models specifies.
UNIT_BYTES = {"gb": 1e9, "gib": 2**30, "tb": 1e12, "tib": 2**40}

# API: fields every entry must have (a renamed field is a ParseError, not an empty listing).
API_ITEM_FIELDS = ("instance_type", "regions_with_capacity_available")
API_TYPE_FIELDS = ("name", "gpu_description", "price_cents_per_hour", "specs")
API_SPEC_FIELDS = ("gpus", "vcpus", "memory_gib", "storage_gib")
API_VRAM_RE = re.compile(r"\((\d+(?:\.\d+)?)\s*GB\b", re.IGNORECASE)
CENTS = 100
GIB_GB = 2**30 / 1e9

# Shape matching (API wins): words that name a brand or line, not the GPU model.
BRAND_WORDS = frozenset({"NVIDIA", "TESLA", "QUADRO", "RTX", "GEFORCE"})
FORM_RE = re.compile(r"^(SXM|PCIE)\d*$")

Shape = tuple[float, str, float | None, str | None]  # count, model, VRAM GB, form factor


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    """The pricing page; with a key, the instance-types API first. Beside the API the page is
    a second source only: a page that cannot be fetched then leaves the API alone."""
    key = creds.get(KEY_VAR)
    if not key:
        return [client.get(PRICING_URL)]
    headers = {"Authorization": f"Bearer {key}", "Accept": "application/json"}
    api = client.get(INSTANCE_TYPES_URL, headers=headers)
    try:
        return [api, client.get(PRICING_URL)]
    except FetchError:  # noted in client.errors; the API already holds every instance type
        return [api]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """API and page offers; within each source the newest capture wins per key, and the API
    wins over the page for the same machine shape (module docstring)."""
    api_caps = [c for c in captures if is_api_capture(c)]
    page_caps = [c for c in captures if not is_api_capture(c)]
    if not api_caps:
        return newest_wins(page_caps, _read_page)
    api = newest_wins(api_caps, _read_api)
    try:
        pages = newest_wins(page_caps, _read_page)
    except ParseError as exc:
        unread = Reject(provider=NAME, reason=f"pricing page unreadable beside the API: {exc}",
                        raw=exc.snippet or "")
        return ParseResult(offers=api.offers, rejects=[*api.rejects, unread], complete=False)
    covered = [_offer_shape(o) for o in api.offers]
    kept = [o for o in pages.offers
            if not any(_same_shape(_offer_shape(o), s) for s in covered)]
    return ParseResult(offers=[*api.offers, *kept], rejects=[*api.rejects, *pages.rejects],
                       complete=api.complete and pages.complete)


def is_api_capture(capture: Capture) -> bool:
    return urlsplit(capture.url).path.rstrip("/") == INSTANCE_TYPES_PATH


# -- API --------------------------------------------------------------------------------------


def _read_api(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    items = _api_items(capture)
    results: list[ParsedOffer | Reject | None] = []
    for name, item in items.items():
        results += _api_offers(capture, name, item)
    offers, bad = split_results(results)
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*bad, *conflicts]


def _api_items(capture: Capture) -> dict[str, Any]:
    doc = json_body(NAME, capture)
    error = as_dict(doc).get("error") if isinstance(doc, dict) else None
    if error is not None:
        err = as_dict(error)
        raise parse_error(NAME, capture, f"API error {err.get('code')!r}: {err.get('message')}",
                          "error")
    _, items = envelope(NAME, capture, "data", dict)
    entries = list(items.values())
    require_fields(NAME, capture, entries, API_ITEM_FIELDS, "instance-types entry")
    types = [as_dict(e.get("instance_type")) for e in entries if isinstance(e, dict)]
    require_fields(NAME, capture, [t for t in types if t], API_TYPE_FIELDS, "instance_type")
    specs = [as_dict(t.get("specs")) for t in types]
    require_fields(NAME, capture, [s for s in specs if s], API_SPEC_FIELDS, "instance_type.specs")
    return items


def _api_offers(capture: Capture, name: str,
                item: object) -> list[ParsedOffer | Reject | None]:
    entry = as_dict(item)
    itype = as_dict(entry.get("instance_type"))
    specs = as_dict(itype.get("specs"))
    if specs.get("gpus") == 0:
        return [None]  # a CPU instance type: no GPU offer
    raw = str(item)
    gpus = positive_number(specs.get("gpus"))
    label = stripped_text(itype.get("gpu_description"))
    cents = positive_number(itype.get("price_cents_per_hour"))
    regions = [as_dict(r) for r in as_list(entry.get("regions_with_capacity_available"))]
    codes = [stripped_text(r.get("name")) for r in regions]
    problem = _api_problem(gpus, label, cents, codes)
    if problem is not None or gpus is None or label is None or cents is None:
        return [Reject(provider=NAME, reason=f"instance type {name!r}: {problem}", raw=raw)]
    base: dict[str, Any] = {
        "instance_type": stripped_text(itype.get("name")) or name, "gpu_label": label,
        "gpu_count": gpus, "vram_gb_per_gpu": _api_vram(label),
        "price_per_hour": cents / CENTS, "vcpus": positive_number(specs.get("vcpus")),
        "ram_gb": _gib_to_gb(specs.get("memory_gib")),
        "disk_gb": _gib_to_gb(specs.get("storage_gib"))}
    extra: ProviderData = {"layout": "api", "description": stripped_text(itype.get("description")),
                           "price_cents_per_hour": cents}
    if not regions:
        return [_api_offer(capture, base, extra, region=None, raw=raw)]
    return [_api_offer(capture, base,
                       {**extra, "region_description": stripped_text(r.get("description"))},
                       region=code, raw=raw) for code, r in zip(codes, regions, strict=True)]


def _api_problem(gpus: float | None, label: str | None, cents: float | None,
                 regions: list[str | None]) -> str | None:
    """Why an instance type cannot be an offer, or None."""
    if gpus is None or gpus != int(gpus):
        return "no whole positive specs.gpus"
    if label is None:
        return "no gpu_description"
    if _api_vram(label) is None:
        return f"no '(NN GB' VRAM in gpu_description {label!r}"
    if cents is None:
        return "no positive price_cents_per_hour"
    if any(code is None for code in regions):
        return "a region in regions_with_capacity_available without a name"
    return None


def _api_offer(capture: Capture, base: dict[str, Any], extra: ProviderData, *,
               region: str | None, raw: str) -> ParsedOffer | Reject:
    key = f"{base['instance_type']}|{region or 'no-capacity'}|{PricingModel.ON_DEMAND.value}"
    stock = Availability.IN_STOCK if region else Availability.OUT_OF_STOCK
    try:
        return ParsedOffer(provider=NAME, offer_key=key, pricing_model=PricingModel.ON_DEMAND,
                           region=region, availability=stock, source_url=capture.url,
                           observed_at=capture.fetched_at, provider_data=extra, **base)
    except ValidationError as exc:
        return Reject(provider=NAME, reason=f"invalid offer: {exc.errors()[0]['msg']}", raw=raw,
                      offer_key=key)


def _api_vram(label: str | None) -> float | None:
    match = API_VRAM_RE.search(label or "")
    return float(match.group(1)) if match else None


def _gib_to_gb(value: object) -> float | None:
    gib = positive_number(value)
    return None if gib is None else round(gib * GIB_GB, 1)


# -- API wins ---------------------------------------------------------------------------------


def _shape(count: float, label: str, vram: float | None) -> Shape:
    """(count, model, VRAM, form factor) of a label such as "NVIDIA H100 SXM" (page) or
    "H100 (80 GB SXM5)" (API): brand words and the parenthesis are no part of the model."""
    words = re.findall(r"[A-Z0-9]+", label.upper())
    form = next((m.group(1) for w in words if (m := FORM_RE.match(w))), None)
    outside = re.findall(r"[A-Z0-9]+", re.sub(r"\(.*?\)", " ", label.upper()))
    model = " ".join(w for w in outside if w not in BRAND_WORDS and not FORM_RE.match(w))
    return count, model, vram, form


def _offer_shape(offer: ParsedOffer) -> Shape:
    return _shape(offer.gpu_count, offer.gpu_label, offer.vram_gb_per_gpu)


def _same_shape(page: Shape, api: Shape) -> bool:
    forms_agree = page[3] is None or api[3] is None or page[3] == api[3]
    return page[:3] == api[:3] and forms_agree


# -- page -------------------------------------------------------------------------------------


def _read_page(capture: Capture) -> tuple[list[ParsedOffer], list[Reject], bool]:
    # A page that prints the same machine twice at two prices says neither: both rows are
    # rejected (a repeat at the same price is the same offer).
    offers, bad, whole = _parse_page(capture)
    offers, conflicts = one_price_per_key(NAME, offers)
    return offers, [*bad, *conflicts], whole


def _parse_page(capture: Capture) -> tuple[list[ParsedOffer], list[Reject], bool]:
    """Offers, rejects and whether every instance row was read: a row of an instance table
    that is not read may be an offer the warehouse holds, so the page then closes nothing."""
    tree = LexborHTMLParser(capture.text())
    if _priced_tables(tree) or tree.css_first("tr[data-plan]") is not None:
        return _parse_tabbed(tree, capture)
    rows = tree.css("tr")
    if not rows and "<tr" in capture.text().lower():
        # An archived excerpt cut inside a <table>: HTML parsing drops <tr>/<td> outside a
        # table, so read the fragment in table context.
        rows = LexborHTMLParser(f"<table>{capture.text()}</table>").css("tr")
    offers, rejects = _parse_plain_table(rows, capture)
    if not offers and not rejects:
        raise parse_error(NAME, capture, "no pricing table: neither a table with VRAM/GPU and "
                          "price columns nor 'On-demand Nx' rows", "pricing table")
    return offers, rejects, True


# -- 2026 layout: tables in a tab widget ------------------------------------------------------


def _header_row(table: LexborNode) -> LexborNode | None:
    """The header row: thead's, else a first row made of th cells only."""
    row = table.css_first("thead tr")
    if row is not None:
        return row
    first = table.css_first("tr")
    cells = [c.tag for c in first.iter() if c.tag in ("th", "td")] if first is not None else []
    return first if cells and set(cells) == {"th"} else None


def _header_labels(table: LexborNode) -> list[str]:
    """The column labels of a table's header row ("*" footnote marks dropped)."""
    row = _header_row(table)
    if row is None:
        return []
    return [_label(node_text(c)) for c in row.iter() if c.tag in ("th", "td")]


def _priced_tables(tree: LexborHTMLParser) -> list[LexborNode]:
    """Tables whose header row has a VRAM/GPU column and a price column."""
    def priced(labels: list[str]) -> bool:
        return VRAM_LABEL in labels and any(lb.startswith("PRICE") for lb in labels)
    return [t for t in tree.css("table") if priced(_header_labels(t))]


def _parse_tabbed(tree: LexborHTMLParser,
                  capture: Capture) -> tuple[list[ParsedOffer], list[Reject], bool]:
    results: list[ParsedOffer | Reject] = []
    whole = True
    in_tables: set[int] = set()
    instance_tables = 0
    for table in _priced_tables(tree):
        rows = _body_rows(table)
        in_tables.update(r.mem_id for r in rows)
        count = _instance_tab(table, capture)
        if isinstance(count, str):  # not an instance table: say where its prices were
            results += [_outside(row, count) for row in rows if _is_priced(row)]
            continue
        instance_tables += 1
        read = _read_instance_table(table, rows, count, capture)
        whole = whole and not any(isinstance(r, Reject) for r in read)
        results += read
    # Plan rows in a table without instance headers: no GPU count and no columns to read.
    results += [_outside(row, "a table without VRAM/GPU and price headers")
                for row in tree.css("tr[data-plan]") if row.mem_id not in in_tables]
    if not instance_tables:
        raise parse_error(NAME, capture, "no on-demand instance table: no table with VRAM/GPU "
                          "and price headers in an 'Nx' tab panel", "pricing table")
    offers, rejects = split_results(results)
    return offers, rejects, whole


def _body_rows(table: LexborNode) -> list[LexborNode]:
    header = _header_row(table)
    return [r for r in table.css("tr")
            if header is None or r.mem_id != header.mem_id]


def _is_priced(row: LexborNode) -> bool:
    return row.attributes.get("data-plan") is not None or "$" in node_text(row)


def _outside(row: LexborNode, where: str) -> Reject:
    label = (row.attributes.get("data-plan") or "").strip()
    what = f" ({label})" if label else ""
    return Reject(provider=NAME, raw=row.html or "",
                  reason=f"priced row{what} outside the on-demand instance tabs, in {where}: "
                         "no GPU count, not an instance price")


def _read_instance_table(table: LexborNode, rows: list[LexborNode], count: int,
                         capture: Capture) -> list[ParsedOffer | Reject]:
    labels = _header_labels(table)
    for required in (VRAM_LABEL, PRICE_LABEL):
        if required not in labels:
            raise parse_error(NAME, capture, f"no '{required}' column in the {count}x panel",
                              required, snippet=table.html or "")
    if not rows:
        raise parse_error(NAME, capture, f"no pricing table rows in the {count}x panel",
                          "pricing table", snippet=table.html or "")
    results: list[ParsedOffer | Reject] = []
    for row in rows:
        cells = [c for c in row.iter() if c.tag in ("th", "td")]
        raw = row.html or ""
        if len(cells) != len(labels):
            results.append(Reject(provider=NAME, raw=raw, reason=f"expected {len(labels)} "
                                  f"cells under the header, found {len(cells)}"))
            continue
        shifted = _misplaced_cell(labels, cells)
        if shifted is not None:
            if row is rows[-1] and all(isinstance(r, Reject) for r in results):
                # no row of the table reads under its header: the columns were renamed
                raise parse_error(NAME, capture, f"no '{shifted[0]}' column in the {count}x "
                                  f"panel: its cells are labelled '{shifted[1]}'", shifted[0],
                                  snippet=raw)
            results.append(Reject(provider=NAME, raw=raw, reason=f"cell labelled "
                                  f"'{shifted[1]}' under the header '{shifted[0]}'"))
            continue
        by_label = {lb: node_text(c) for lb, c in zip(labels, cells, strict=True)}
        label = (row.attributes.get("data-plan") or node_text(cells[0])).strip()
        if label.lower().startswith("reserved"):
            results.append(Reject(provider=NAME, reason="reserved plan in the instance table",
                                  raw=raw))
            continue
        results.append(_offer(capture, count=count, label=label, vram=by_label.get(VRAM_LABEL),
                              price=by_label.get(PRICE_LABEL), per_gpu_re=PRICE_RE,
                              vcpus=by_label.get("VCPUS"), ram=by_label.get("RAM"),
                              storage=by_label.get("STORAGE"), raw=raw,
                              extra={"layout": "2026-tabs", "tab": f"{count}x"}))
    return results


def _misplaced_cell(labels: list[str], cells: list[LexborNode]) -> tuple[str, str] | None:
    """(header, the cell's own data-label) for a cell whose label is not the header above it:
    the columns are not where the header says, so the row is not read; else None."""
    for header, cell in zip(labels, cells, strict=True):
        own = cell.attributes.get("data-label")
        if header and own is not None and _label(own) != header:
            return header, _label(own)
    return None


def _instance_tab(table: LexborNode, capture: Capture) -> int | str:
    """The GPU count of the "Nx" tab whose panel holds `table`; else where the table is (text
    for a Reject): outside any tab panel, or in a tab widget that has no "Nx" tab."""
    panel = table.parent
    while panel is not None and panel.attributes.get("role") != "tabpanel":
        panel = panel.parent
    if panel is None:
        return "no tab panel"
    tab = _own_tab(panel)
    if tab is None:
        return "a tab panel without a tab"
    match = TAB_RE.match(node_text(tab))
    if match is not None:
        return int(match.group(1))
    tablist = tab.parent
    while tablist is not None and tablist.attributes.get("role") != "tablist":
        tablist = tablist.parent
    siblings = [node_text(t) for t in (tablist or tab).css('[role="tab"]')]
    if not any(TAB_RE.match(t) for t in siblings):
        return f"the tab {node_text(tab)!r} of a widget without 'Nx' tabs"
    raise parse_error(NAME, capture, "tab panel without an 'Nx' tab label: the GPU count "
                      "is unknown", "tab label", snippet=tab.html or "")


def _own_tab(panel: LexborNode) -> LexborNode | None:
    """The tab that labels `panel` (its aria-labelledby id, else the tab that controls its id),
    looked for from the panel outwards: ids like "tab-0" repeat across widgets, and a tab
    inside the panel belongs to another widget."""
    tab_id = (panel.attributes.get("aria-labelledby") or "").strip()
    panel_id = (panel.attributes.get("id") or "").strip()
    selectors = [f'[role="tab"][id="{tab_id}"]' if tab_id else "",
                 f'[role="tab"][aria-controls="{panel_id}"]' if panel_id else ""]
    scope = panel.parent
    while scope is not None:
        for selector in filter(None, selectors):
            for tab in scope.css(selector):
                if not _inside(tab, panel):
                    return tab
        scope = scope.parent
    return None


def _inside(node: LexborNode, ancestor: LexborNode) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.mem_id == ancestor.mem_id:
            return True
        parent = parent.parent
    return False


def _label(text: str) -> str:
    return text.strip().rstrip("*").strip().upper()


# -- 2024 layout: one plain table -------------------------------------------------------------


def _parse_plain_table(rows: list[LexborNode],
                       capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
    results: list[ParsedOffer | Reject] = []
    for row in rows:
        cells = [td.text(strip=True) for td in row.css("td")]
        match = PLAN_RE.match(cells[0]) if cells else None
        if match is None:
            if cells and "$" in cells[-1]:  # a priced row we cannot read
                results.append(Reject(provider=NAME, reason="unrecognised plan name",
                                      raw=row.html or ""))
            continue  # header or spacer row
        term, count, label = match.groups()
        raw = row.html or ""
        if len(cells) != 6:
            results.append(Reject(provider=NAME, raw=raw,
                                  reason=f"expected 6 cells, found {len(cells)}"))
            continue
        if term.lower() == "reserved":
            reason = ("contact sales" if "contact sales" in cells[5].lower()
                      else "reserved price without a stated term")
            results.append(Reject(provider=NAME, reason=reason, raw=raw))
            continue
        results.append(_offer(capture, count=int(count), label=label.strip(), vram=cells[1],
                              price=cells[5], per_gpu_re=PRICE_PER_GPU_RE, vcpus=cells[2],
                              ram=cells[3], storage=cells[4], raw=raw,
                              extra={"layout": "2024-table", "plan": cells[0]}))
    return split_results(results)


# -- one page row -----------------------------------------------------------------------------


def _offer(capture: Capture, *, count: int, label: str, vram: str | None, price: str | None,
           per_gpu_re: re.Pattern[str], vcpus: str | None, ram: str | None,
           storage: str | None, raw: str,
           extra: dict[str, str]) -> ParsedOffer | Reject:
    if not label:
        return Reject(provider=NAME, reason="row without a plan label", raw=raw)
    text = (price or "").strip()
    if "contact sales" in text.lower():
        return Reject(provider=NAME, reason="contact sales", raw=raw)
    match = per_gpu_re.match(text)
    if match is None:
        return Reject(provider=NAME, reason=f"unrecognised price {text!r}", raw=raw)
    per_gpu = float(match.group(1).replace(",", ""))
    vram_gb = _vram_gb(vram)
    if vram_gb is None:
        return Reject(provider=NAME, reason=f"unrecognised VRAM {vram!r}", raw=raw)
    key = f"{count}x|{label}|{vram_gb:g}GB|{PricingModel.ON_DEMAND.value}"
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, gpu_label=label, gpu_count=count,
            vram_gb_per_gpu=vram_gb, pricing_model=PricingModel.ON_DEMAND,
            price_per_hour=round(per_gpu * count, 6), vcpus=positive_decimal(vcpus),
            ram_gb=_size_gb(ram), disk_gb=_size_gb(storage), source_url=capture.url,
            observed_at=capture.fetched_at,
            provider_data={**extra, "price_per_gpu_hour": per_gpu, "ram": ram,
                           "storage": storage},
        )
    except ValidationError as exc:
        return Reject(provider=NAME, reason=f"invalid offer: {exc.errors()[0]['msg']}", raw=raw,
                      offer_key=key)


def _vram_gb(text: str | None) -> float | None:
    # VRAM stays the nominal number the page prints ("80 GB"), as the GPU catalog records it.
    match = re.match(r"^(\d+(?:\.\d+)?)\s*GB$", (text or "").strip(), re.IGNORECASE)
    return float(match.group(1)) if match else None


def _size_gb(text: str | None) -> float | None:
    match = SIZE_RE.search(text or "")
    if match is None:
        return None
    return round(float(match.group(1)) * UNIT_BYTES[match.group(2).lower()] / 1e9, 1)
