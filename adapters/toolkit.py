"""The adapters' toolkit: the small helpers every provider module shares, one contract each.

- Errors: `parse_error` builds the ParseError of a capture (provider, URL, field, snippet).
- JSON values: `finite_number` and `positive_number` check a decoded JSON value; `as_list`,
  `as_dict` and `is_scalar` take what a field of an unexpected type leaves.
- Text numbers: `positive_decimal` reads a number a page prints ("1,234.50"). It is not a JSON
  check: a JSON number is never a string, and a page's "1e3" or "inf" is no number.
- JSON bodies: `json_body` decodes a body, `member` / `envelope` check the object around a
  listing ({"<key>": [...]}), and `require_fields` refuses a listing whose field was renamed.
- Offers: `reject` is the Reject of a row that is no offer, `split_results` sorts per-row
  results, `one_price_per_key` is the duplicate-key rule within one response, `newest_wins` the
  rule across captures.
- Sources apart: `fetch_apart` and `read_apart` fetch and read a provider's independent sources
  each on its own, so that one that fails costs only its own offers.
- HTML: `node_text` is a node's text with its whitespace collapsed, `header_cells` a table's
  column headings.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeGuard, overload

from selectolax.lexbor import LexborHTMLParser, LexborNode

from gpuscout.adapters.archive import Capture
from gpuscout.core.errors import FetchError, ParseError
from gpuscout.core.models import ParsedOffer, ParseResult, Reject

SNIPPET_CHARS = 200  # what ParseError keeps of a snippet
CONFLICT_REASON = "the source gives this offer two different prices"

# -- errors -------------------------------------------------------------------------------------


def body_head(capture: Capture, chars: int = SNIPPET_CHARS) -> str:
    """The first `chars` characters of the body (UTF-8, undecodable bytes replaced): the same
    text as `capture.text()[:chars]`, without reading a streamed body whole."""
    with capture.open() as f:
        head = f.read(4 * chars)  # a character is at most 4 bytes
    return head.decode("utf-8", errors="replace")[:chars]


def parse_error(provider: str, capture: Capture, message: str, field: str | None = None, *,
                snippet: str | None = None) -> ParseError:
    """The ParseError of `capture`: it names `provider`, the capture's URL and `field` (the
    field, column or selector that is missing or wrong; None when the body as a whole is
    unreadable). `snippet` defaults to the body's first 200 characters."""
    return ParseError(message, provider=provider, url=capture.url, field=field,
                      snippet=body_head(capture) if snippet is None else snippet)


# -- JSON values --------------------------------------------------------------------------------


def finite_number(value: object) -> float | None:
    """A JSON number as a float: an int or a float, finite, not a bool (`True` is no number).
    None for anything else: NaN and infinities (which `json` reads from NaN, Infinity, 1e999),
    strings, None, lists, objects."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int too big for a float
        return None
    return number if math.isfinite(number) else None


def positive_number(value: object) -> float | None:
    """`finite_number(value)` when it is above 0; None for 0, negatives and non-numbers."""
    number = finite_number(value)
    return number if number is not None and number > 0 else None


def as_list(value: object) -> list[Any]:
    """A JSON array, or an empty one for anything else (a field of an unexpected type)."""
    return value if isinstance(value, list) else []


def as_dict(value: object) -> dict[str, Any]:
    """A JSON object, or an empty one for anything else (a field of an unexpected type)."""
    return value if isinstance(value, dict) else {}


def is_scalar(value: object) -> TypeGuard[str | int | float | bool]:
    """A value provider_data can hold: a string, number or bool (None is left out)."""
    return isinstance(value, str | int | float | bool)


# -- text numbers -------------------------------------------------------------------------------

_DECIMAL = re.compile(r"\s*(\d[\d,]*(?:\.\d+)?)\s*", re.ASCII)


def stripped_text(value: object) -> str | None:
    """A JSON string with its surrounding whitespace removed; None for anything else or blank."""
    return value.strip() if isinstance(value, str) and value.strip() else None


def positive_decimal(text: str | None) -> float | None:
    """A positive number as a page prints it: ASCII digits, optional "," thousands separators
    and an optional fraction ("1,234.50" -> 1234.5, " 80 " -> 80.0). None for anything else:
    zero, a sign, an exponent, "inf"/"nan", a unit or currency sign ("80 GB", "$1.90"), None.
    (A price with its unit, "$1,234.50/hr", is matched by the page's own pattern, which knows
    the unit; this reads the bare numbers of spec cells.)"""
    match = _DECIMAL.fullmatch(text or "")
    if match is None:
        return None
    value = float(match.group(1).replace(",", ""))
    return value if value > 0 else None


# -- JSON bodies --------------------------------------------------------------------------------


def json_body(provider: str, capture: Capture) -> Any:
    """The body decoded as JSON, any value; ParseError (field None) when it is not JSON."""
    try:
        return json.loads(capture.read_bytes())
    except ValueError as exc:  # UnicodeDecodeError included
        raise parse_error(provider, capture, f"body is not JSON ({exc})") from None


_SHAPES: dict[type, str] = {list: "[...]", dict: "{...}"}


@overload
def member(provider: str, capture: Capture, doc: object, key: str,
           kind: type[list[Any]] = ...) -> list[Any]: ...
@overload
def member(provider: str, capture: Capture, doc: object, key: str,
           kind: type[dict[str, Any]]) -> dict[str, Any]: ...
@overload
def member(provider: str, capture: Capture, doc: object, key: str,
           kind: type[object]) -> Any: ...
def member(provider: str, capture: Capture, doc: object, key: str,
           kind: type[Any] = list) -> Any:
    """`doc[key]` when `doc` is an object holding `key` with a value of `kind` (list, dict, or
    object for any value); else a ParseError naming `key` as the field."""
    if not isinstance(doc, dict) or key not in doc or not isinstance(doc[key], kind):
        raise parse_error(provider, capture,
                          f"expected {{{key!r}: {_SHAPES.get(kind, '...')}}}", key)
    return doc[key]


@overload
def envelope(provider: str, capture: Capture, key: str, kind: type[list[Any]] = ..., *,
             bare_list: bool = ...) -> tuple[dict[str, Any], list[Any]]: ...
@overload
def envelope(provider: str, capture: Capture, key: str, kind: type[dict[str, Any]], *,
             bare_list: bool = ...) -> tuple[dict[str, Any], dict[str, Any]]: ...
def envelope(provider: str, capture: Capture, key: str, kind: type[Any] = list, *,
             bare_list: bool = False) -> tuple[dict[str, Any], Any]:
    """(the body's JSON object, its member `key`): a listing {"<key>": [...], ...}.

    `bare_list`: a body that is a JSON array is that member itself (how some collectors stored
    a listing), returned with an empty object. ParseError: not JSON (field None); not an object,
    or `key` missing or not of `kind` (field `key`)."""
    doc = json_body(provider, capture)
    if bare_list and kind is list and isinstance(doc, list):
        return {}, doc
    value = member(provider, capture, doc, key, kind)
    return as_dict(doc), value


def require_fields(provider: str, capture: Capture, records: Iterable[object],
                   fields: Iterable[str], what: str) -> None:
    """Refuse a listing in which no record has one of `fields`: a field renamed upstream, which
    must be a ParseError (naming the field) and never a listing read as empty. Only JSON
    objects among `records` count; with none, there is nothing to check."""
    entries = [r for r in records if isinstance(r, dict)]
    if not entries:
        return
    for field in fields:
        if not any(field in e for e in entries):
            raise parse_error(provider, capture, f"no {what} has '{field}'", field)


# -- offers -------------------------------------------------------------------------------------


def reject(provider: str, reason: str, raw: object, key: str | None = None) -> Reject:
    """The Reject of a row that is no offer: `raw` is the row as the source gave it, kept as it
    is when it is text (a page's cells, a CSV line) and as sorted-key JSON otherwise (a decoded
    JSON value; non-ASCII characters stay readable). `key`: the offer the row stands for, when
    it can be told, so that the offer is not closed as vanished for a row that broke."""
    text = raw if isinstance(raw, str) else json.dumps(raw, sort_keys=True, default=str,
                                                        ensure_ascii=False)
    return Reject(provider=provider, reason=reason, raw=text, offer_key=key)



class OneOfferPerKey:
    """The offers of ONE response by offer key, under the duplicate-key rule:

    - a key seen again at the same price (amount and currency) is the same offer, kept once
      (the first); with `repeat_reason`, each repeat is also reported as a Reject with it;
    - a key seen at two different prices is a contradiction: every sighting of it is rejected
      (CONFLICT_REASON), none is picked.
    """

    def __init__(self, provider: str, *, repeat_reason: str | None = None) -> None:
        self.provider = provider
        self.repeat_reason = repeat_reason
        self._offers: dict[str, ParsedOffer] = {}
        self._conflicts: set[str] = set()
        self.rejects: list[Reject] = []

    def add(self, offer: ParsedOffer) -> None:
        key = offer.offer_key
        held = self._offers.get(key)
        if key in self._conflicts:
            self.rejects.append(self._reject(offer, CONFLICT_REASON))
        elif held is None:
            self._offers[key] = offer
        elif (held.price_per_hour, held.currency) != (offer.price_per_hour, offer.currency):
            self._conflicts.add(key)
            del self._offers[key]
            self.rejects += [self._reject(held, CONFLICT_REASON),
                             self._reject(offer, CONFLICT_REASON)]
        elif self.repeat_reason is not None:
            self.rejects.append(self._reject(offer, self.repeat_reason))

    def holds(self, key: str, price: float) -> bool:
        """True when `key` is held at `price` and repeats are silent: a repeated row there is
        nothing to build (what `add` would do with it)."""
        held = self._offers.get(key)
        return held is not None and held.price_per_hour == price and self.repeat_reason is None

    def offers(self) -> list[ParsedOffer]:
        return list(self._offers.values())

    def _reject(self, offer: ParsedOffer, reason: str) -> Reject:
        return Reject(provider=self.provider, offer_key=offer.offer_key,
                      raw=offer.model_dump_json(), reason=reason)


def one_price_per_key(provider: str, offers: Iterable[ParsedOffer], *,
                      repeat_reason: str | None = None,
                      ) -> tuple[list[ParsedOffer], list[Reject]]:
    """The offers of one response under the duplicate-key rule (`OneOfferPerKey`), in the
    order of their first sighting, and the rejects it made."""
    book = OneOfferPerKey(provider, repeat_reason=repeat_reason)
    for offer in offers:
        book.add(offer)
    return book.offers(), book.rejects


def split_results(results: Iterable[ParsedOffer | Reject | None],
                  ) -> tuple[list[ParsedOffer], list[Reject]]:
    """Per-row results as (offers, rejects), each in order; a None (a row that is neither, such
    as a CPU machine) is dropped."""
    offers: list[ParsedOffer] = []
    rejects: list[Reject] = []
    for result in results:
        if isinstance(result, ParsedOffer):
            offers.append(result)
        elif result is not None:
            rejects.append(result)
    return offers, rejects


PageRead = tuple[list[ParsedOffer], list[Reject]] | tuple[list[ParsedOffer], list[Reject], bool]


def newest_wins(captures: Sequence[Capture], read: Callable[[Capture], PageRead]) -> ParseResult:
    """Read every capture, oldest first; when captures repeat an offer key, the newest one wins.

    `read` returns a capture's offers and rejects, and optionally whether it was read whole
    (False: the page was cut short, so the result is incomplete and closes nothing).
    """
    newest: dict[str, ParsedOffer] = {}
    rejects: list[Reject] = []
    complete = True
    for capture in sorted(captures, key=lambda c: c.fetched_at):
        offers, bad, *whole = read(capture)
        newest.update((o.offer_key, o) for o in offers)
        rejects.extend(bad)
        complete = complete and (whole[0] if whole else True)
    return ParseResult(offers=list(newest.values()), rejects=rejects, complete=complete)


# -- independent sources ------------------------------------------------------------------------


def fetch_apart(provider: str, requests: Mapping[str, Callable[[], Capture]]) -> list[Capture]:
    """The captures of those of `requests` (source name -> request) that answered, in order.

    A request that fails costs only its own source: the shared client has noted its error for
    the run log, and parse() finds that source missing. When none answered, a FetchError says
    why for each (transient when one of the failures is)."""
    captures: list[Capture] = []
    errors: list[tuple[str, FetchError]] = []
    for name, request in requests.items():
        try:
            captures.append(request())
        except FetchError as exc:
            errors.append((name, exc))
    if errors and not captures:
        if len(errors) == 1:
            raise errors[0][1]
        raise FetchError("no source could be read: "
                         + "; ".join(f"{name}: {exc}" for name, exc in errors),
                         provider=provider, transient=any(e.transient for _, e in errors))
    return captures


def read_apart(provider: str, parts: Mapping[str, Sequence[Capture]],
               read: Callable[[Sequence[Capture]], ParseResult],
               ) -> tuple[ParseResult, list[str]]:
    """Each part's captures (source name -> captures) read on its own with `read`, and the names
    of the parts read, in order. The results are merged in the order of `parts`: a later part's
    offer wins a key both give.

    A part that cannot be read (a ParseError: a reshaped body) costs only its own offers: the
    other parts load, the result is incomplete (nothing vanished is closed) and a Reject names
    the part and the error. A part without captures is left out. When parts had captures and
    none could be read, the first error is raised."""
    offers: dict[str, ParsedOffer] = {}
    rejects: list[Reject] = []
    complete = True
    done: list[str] = []
    errors: list[ParseError] = []
    for name, captures in parts.items():
        if not captures:
            continue
        try:
            result = read(captures)
        except ParseError as exc:
            errors.append(exc)
            rejects.append(reject(provider, f"{name} not read: {exc}", exc.snippet or ""))
            complete = False
            continue
        offers.update((o.offer_key, o) for o in result.offers)
        rejects += result.rejects
        complete = complete and result.complete
        done.append(name)
    if errors and not done:
        raise errors[0]
    return ParseResult(offers=list(offers.values()), rejects=rejects, complete=complete), done


# -- HTML ---------------------------------------------------------------------------------------


def node_text(node: LexborNode) -> str:
    """The node's text with runs of whitespace collapsed, &nbsp; included (str.split knows
    Unicode spaces), so a price cell reads "$1.90" whatever the page's formatting."""
    return " ".join(node.text(separator=" ").split())


def header_cells(table: LexborNode) -> list[str]:
    """A table's column headings (its `thead th` cells), as `node_text` reads them."""
    return [node_text(th) for th in table.css("thead th")]


def headed_rows(provider: str, capture: Capture, tree: LexborHTMLParser | LexborNode,
                header: tuple[str, ...], missing: str, field: str
                ) -> Iterator[tuple[LexborNode, list[LexborNode]]]:
    """(row, cells) of every body row of the page's tables headed exactly `header` (lower
    case). No such table is a ParseError saying `missing` about `field`; a row of another
    width is one too: a cell the layout dropped would shift every value after it."""
    tables = [t for t in tree.css("table")
              if tuple(c.lower() for c in header_cells(t)) == header]
    if not tables:
        raise parse_error(provider, capture, missing, field)
    for table in tables:
        for row in table.css("tbody tr"):
            cells = row.css("td")
            if len(cells) != len(header):
                raise parse_error(provider, capture, f"a GPU table row has {len(cells)} cells, "
                                  f"expected {len(header)}", "td", snippet=(row.html or "")[:200])
            yield row, cells
