"""Massed Compute: on-demand VM prices from the flight rows of the public pricing page.

Layout (2026-08, adapters/snapshots/massedcompute/PROVENANCE.md): a Next.js page whose price
tables exist only as React flight data, JS strings pushed by `self.__next_f.push` (every quote
escaped as `\\"`, lines ended by an escaped newline `\\n`). Each GPU section is a table with the
columns Qty, vCPU, RAM, Storage, Price (and an unnamed action column), whose rows carry React
keys such as `\\"B300 SXM6-x 8-0\\"`; the same rows are rendered again as mobile cards keyed
`\\"B300 SXM6-mobile-x 8-0\\"`. A row shows the quantity as `["×","8"]`, the price as
`\\"$$52.80\\"` followed by a `/hr` unit (the flight format escapes a literal `$` as `$$`),
`Request` plus a Contact link instead of a price, or only references (`$L2f`) to cells sent in
a later flight line.

Reading rules:
- A row runs from its key to the next row key or the end of its flight line, whichever comes
  first: a deferred cell's line (`7d:[...$$23.36...]`) belongs to no row, so a row without its
  own price never takes a neighbour's.
- An offer is one row: the key's label and GPU count, the row's price for the whole VM, USD per
  hour, on-demand (the page has one price column). The desktop and mobile copies of a row must
  agree: different prices are a conflict (both refused); a copy whose cells are deferred leaves
  the row to the other copy. vCPUs and RAM are read from the row; Storage (no unit printed)
  goes into `provider_data`.
- A row with two prices in one copy, a price without `/hr`, a quantity that contradicts its
  key, or no price in any copy is a reject, and the page then closes nothing. A `Request` row
  (contact us) is a reject that leaves the page complete.
- VRAM is the one the label states ("H100 NVL (94GB) NVLink"); "NVLink" in the label is the
  page stating NVLink bridges; one GPU is `single`. No region, stock or network is stated.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import ValidationError

from gpuscout.adapters.archive import Capture
from gpuscout.adapters.base import SourceKind
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.toolkit import (
    CONFLICT_REASON,
    newest_wins,
    parse_error,
    positive_decimal,
    reject,
    split_results,
)
from gpuscout.core.models import (
    Interconnect,
    ParsedOffer,
    ParseResult,
    PriceKind,
    PricingModel,
    ProviderData,
    Reject,
)

PRICING_URL = "https://vm.massedcompute.com/pricing"

NAME = "massedcompute"
SOURCE_KIND: SourceKind = "html"
CREDENTIALS: tuple[str, ...] = ()

Q = r'\\"'  # an escaped quote, as every quote stands inside the flight string
ROW_KEY_RE = re.compile(Q + r'(?P<label>[^"\\]{1,80}?)(?P<mobile>-mobile)?-x (?P<count>\d+)-\d+'
                        + Q)
LINE_END = "\\n"  # the escaped newline that ends one flight line
PRICE_RE = re.compile(Q + r"\$\$(?P<amount>\d[\d,]*(?:\.\d+)?)" + Q)
PER_HOUR = '\\"/hr\\"'
REQUEST = '\\"Request\\"'
QTY_RE = re.compile(Q + "\u00d7" + Q + "," + Q + r"(\d+)" + Q)
# A cell value: a string or a bare number.
_VALUE = r"(?:" + Q + r"(?P<text>[^\"\\]*)" + Q + r"|(?P<number>\d+(?:\.\d+)?))"
_CLASS = Q + "className" + Q + ":" + Q + r"[^\"\\]*" + Q
# Mobile card: a dt naming the spec, then its dd.
CARD_SPEC_RE = re.compile(Q + "children" + Q + ":" + Q + r"(?P<name>[^\"\\]+)" + Q
                          + r"\}\],\[" + Q + r"\$" + Q + "," + Q + "dd" + Q + r",null,\{"
                          + _CLASS + "," + Q + "children" + Q + ":" + _VALUE + r"\}")
# Desktop row: the cells whose child is a plain value (Qty and Price cells hold elements).
TABLE_CELL_RE = re.compile(Q + "td" + Q + r",null,\{" + _CLASS + "," + Q + "children" + Q
                           + ":" + _VALUE + r"\}")
HEADER_RE = re.compile(Q + "th" + Q + "," + Q + r"(?P<column>[^\"\\]*)" + Q)
COLUMNS = ("Qty", "vCPU", "RAM", "Storage", "Price", "action")
VALUE_CELLS = ("vCPU", "RAM", "Storage")  # a desktop row's plain cells, in column order
RAM_RE = re.compile(r"^(\d+(?:\.\d+)?) GB$")
VRAM_RE = re.compile(r"\((\d+(?:\.\d+)?)\s*GB\)")
CONTACT_REASON = "contact us ('Request', no price)"
RAW_CHARS = 600  # what a Reject keeps of a row


@dataclass
class _Copy:
    """One rendering of a row (desktop table row or mobile card) and what it shows."""

    variant: str
    text: str
    prices: list[str]
    per_hour: bool
    request: bool
    qty: int | None
    specs: dict[str, str] = field(default_factory=dict)


def fetch(client: HttpClient, creds: Mapping[str, str]) -> list[Capture]:
    return [client.get(PRICING_URL)]


def parse(captures: Sequence[Capture]) -> ParseResult:
    """Offers from every capture; when captures repeat an offer key, the newest one wins."""
    return newest_wins(captures, _parse_page)


# -- page -------------------------------------------------------------------------------------


def _parse_page(capture: Capture) -> tuple[list[ParsedOffer], list[Reject], bool]:
    text = capture.text()
    _check_header(capture, text)
    rows = _rows(text)
    if not rows:
        raise parse_error(NAME, capture, "no price rows: no row key '<label>-x <count>-<n>'",
                          "row key")
    if not any(c.prices for copies in rows.values() for c in copies):
        raise parse_error(NAME, capture, f"{len(rows)} rows, none with a '$$' price", "Price")
    offers, rejects = split_results(_row(capture, label, count, copies)
                                    for (label, count), copies in rows.items())
    # A row whose price could not be read may hide an offer; a contact-us row hides none.
    return offers, rejects, all(r.reason == CONTACT_REASON for r in rejects)


def _check_header(capture: Capture, text: str) -> None:
    columns = HEADER_RE.findall(text)
    if not columns:
        raise parse_error(NAME, capture, "no price table header (th cells Qty ... Price)",
                          "Price")
    missing = [c for c in COLUMNS if c not in columns]
    unknown = sorted(set(columns) - set(COLUMNS))
    if missing or unknown:
        raise parse_error(NAME, capture, f"price table columns changed: missing {missing}, "
                          f"unknown {unknown}", (missing or unknown)[0])


def _rows(text: str) -> dict[tuple[str, int], list[_Copy]]:
    """Every row copy by (label, GPU count), in page order."""
    keys = list(ROW_KEY_RE.finditer(text))
    rows: dict[tuple[str, int], list[_Copy]] = {}
    for i, key in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(text)
        line_end = text.find(LINE_END, key.end(), end)
        span = text[key.end():end if line_end == -1 else line_end]
        label, count = key.group("label").strip(), int(key.group("count"))
        rows.setdefault((label, count), []).append(_copy(key.group(), span, bool(key["mobile"])))
    return rows


def _copy(key: str, span: str, mobile: bool) -> _Copy:
    prices = list(PRICE_RE.finditer(span))
    qty = QTY_RE.search(span)
    specs: dict[str, str] = {}
    if mobile:
        for m in CARD_SPEC_RE.finditer(span):
            specs[m.group("name")] = m.group("text") or m.group("number")
    else:
        cells = [m.group("text") or m.group("number") for m in TABLE_CELL_RE.finditer(span)]
        if len(cells) == len(VALUE_CELLS):
            specs = dict(zip(VALUE_CELLS, cells, strict=True))
    return _Copy(variant="mobile" if mobile else "desktop", text=key + span[:RAW_CHARS],
                 prices=[p.group("amount") for p in prices],
                 per_hour=bool(prices) and PER_HOUR in span[prices[0].end():],
                 request=REQUEST in span, qty=int(qty.group(1)) if qty else None, specs=specs)


# -- one row ----------------------------------------------------------------------------------


def _row(capture: Capture, label: str, count: int, copies: list[_Copy]) -> ParsedOffer | Reject:
    key = f"{label}|{count}x"
    raw = "\n".join(c.text for c in copies)
    if not label or count < 1:
        return reject(NAME, f"row key without a label or GPU count: {label!r} x{count}", raw, key)
    wrong = [c.qty for c in copies if c.qty is not None and c.qty != count]
    if wrong:
        return reject(NAME, f"quantity x{wrong[0]} contradicts the row key x{count}", raw, key)
    several = [c for c in copies if len(c.prices) > 1]
    if several:
        return reject(NAME, f"{several[0].variant} copy shows {len(several[0].prices)} prices "
                      f"{several[0].prices}: which one holds is not stated", raw, key)
    priced = [c for c in copies if c.prices]
    if not priced:
        if any(c.request for c in copies):
            return reject(NAME, CONTACT_REASON, raw, key)
        return reject(NAME, "no price in any copy of the row (cells deferred)", raw, key)
    if not all(c.per_hour for c in priced):
        return reject(NAME, f"price {priced[0].prices[0]} without a '/hr' unit", raw, key)
    amounts = {c.prices[0] for c in priced}
    if len({positive_decimal(a) for a in amounts}) > 1:
        return reject(NAME, f"{CONFLICT_REASON}: {sorted(amounts)}", raw, key)
    price = positive_decimal(priced[0].prices[0])
    if price is None:
        return reject(NAME, f"price {priced[0].prices[0]!r} is not a price", raw, key)
    return _offer(capture, key, label, count, price, priced, copies, raw)


def _offer(capture: Capture, key: str, label: str, count: int, price: float,
           priced: list[_Copy], copies: list[_Copy], raw: str) -> ParsedOffer | Reject:
    specs: dict[str, str] = {}
    for copy in [*priced, *copies]:  # a spec any copy shows, the priced copies' first
        for name, value in copy.specs.items():
            specs.setdefault(name, value)
    ram = RAM_RE.match(specs.get("RAM", ""))
    vram = VRAM_RE.search(label)
    data: ProviderData = {"price_per_gpu_hour": round(price / count, 6),
                          "page_copies": ",".join(sorted({c.variant for c in priced}))}
    storage = positive_decimal(specs.get("Storage"))
    if storage is not None:
        data["storage"] = storage  # the page prints no unit
    try:
        return ParsedOffer(
            provider=NAME, offer_key=key, gpu_label=label, gpu_count=count,
            vram_gb_per_gpu=float(vram.group(1)) if vram else None,
            pricing_model=PricingModel.ON_DEMAND, price_per_hour=price, currency="USD",
            price_kind=PriceKind.LISTED, vcpus=positive_decimal(specs.get("vCPU")),
            ram_gb=float(ram.group(1)) if ram else None,
            interconnect=_interconnect(label, count), source_url=capture.url,
            observed_at=capture.fetched_at, provider_data=data)
    except ValidationError as exc:
        return reject(NAME, f"invalid offer: {exc.errors()[0]['msg']}", raw, key)


def _interconnect(label: str, count: int) -> Interconnect | None:
    if count == 1:
        return Interconnect.SINGLE
    return Interconnect.NVLINK if "nvlink" in label.lower().split() else None
