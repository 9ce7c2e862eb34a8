"""adapters/toolkit.py: each helper's contract, including the inputs it must refuse."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from selectolax.lexbor import LexborHTMLParser

from gpuscout.adapters import toolkit
from gpuscout.adapters.archive import Capture
from gpuscout.adapters.toolkit import (
    CONFLICT_REASON,
    OneOfferPerKey,
    as_dict,
    as_list,
    body_head,
    envelope,
    fetch_apart,
    finite_number,
    is_scalar,
    json_body,
    member,
    newest_wins,
    node_text,
    one_price_per_key,
    parse_error,
    positive_decimal,
    positive_number,
    read_apart,
    reject,
    require_fields,
    split_results,
)
from gpuscout.core.errors import FetchError, ParseError
from gpuscout.core.models import ParsedOffer, ParseResult, PricingModel, Reject

URL = "https://api.example.test/v1/listing"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _capture(body: bytes | str | Any, *, at: datetime = T0, url: str = URL) -> Capture:
    if not isinstance(body, bytes | str):
        body = json.dumps(body)
    data = body.encode() if isinstance(body, str) else body
    return Capture(provider="testprov", url=url, body=data, fetched_at=at)


def _offer(key: str, price: float, *, currency: str = "USD", label: str = "H100",
           at: datetime = T0) -> ParsedOffer:
    return ParsedOffer(provider="testprov", offer_key=key, gpu_label=label, gpu_count=1,
                       pricing_model=PricingModel.ON_DEMAND, price_per_hour=price,
                       currency=currency, source_url=URL, observed_at=at)


# -- JSON values ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [
    (1, 1.0), (2.5, 2.5), (0, 0.0), (-3, -3.0), (-0.5, -0.5), (10**30, 1e30),
])
def test_finite_number_takes_ints_and_floats(value: Any, expected: float) -> None:
    result = finite_number(value)
    assert result == expected and type(result) is float


@pytest.mark.parametrize("value", [
    True, False,  # bool is an int subclass, and no number
    float("nan"), float("inf"), float("-inf"),  # json reads NaN, Infinity, 1e999
    10**400,  # too big for a float
    "1", "1.5", "", None, [], [1], {}, {"value": 1},
])
def test_finite_number_refuses_everything_else(value: Any) -> None:
    assert finite_number(value) is None


def test_json_infinities_are_not_numbers() -> None:
    for text in ("NaN", "Infinity", "-Infinity", "1e999"):
        assert finite_number(json.loads(text)) is None


@pytest.mark.parametrize(("value", "expected"), [(1, 1.0), (0.25, 0.25), (1e-9, 1e-9),
                                                 (8.0, 8.0)])
def test_positive_number_takes_numbers_above_zero(value: Any, expected: float) -> None:
    assert positive_number(value) == expected


@pytest.mark.parametrize("value", [0, 0.0, -0.0, -1, -1e-9, True, False, float("nan"),
                                   float("inf"), "5", "$5", None, [5]])
def test_positive_number_refuses_zero_negatives_and_non_numbers(value: Any) -> None:
    assert positive_number(value) is None


def test_as_list_as_dict_and_is_scalar() -> None:
    assert as_list([1, 2]) == [1, 2] and as_list({"a": 1}) == [] and as_list(None) == []
    assert as_dict({"a": 1}) == {"a": 1} and as_dict([1]) == {} and as_dict("x") == {}
    assert all(is_scalar(v) for v in ("", "x", 0, 1.5, True, False))
    assert not any(is_scalar(v) for v in (None, [], {}, (1,)))


# -- text numbers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("1,234.50", 1234.5), ("80", 80.0), (" 80 ", 80.0), ("0.55", 0.55), ("1,472", 1472.0),
    ("2061.6", 2061.6),
])
def test_positive_decimal_reads_printed_numbers(text: str, expected: float) -> None:
    assert positive_decimal(text) == expected


@pytest.mark.parametrize("text", [
    None, "", " ", "0", "0.00", "-1", "+1", "-$1.00", "1e3", "1E-2", "inf", "Infinity", "nan",
    "NaN", "80 GB", "$1.90", "$1,234.50", "1_000", "\u0661\u0662",  # Arabic-Indic digits
    ".5", "5.", "n/a", "\u20ac2.99",
])
def test_positive_decimal_refuses_anything_else(text: str | None) -> None:
    assert positive_decimal(text) is None


# -- errors ---------------------------------------------------------------------------------------


def test_parse_error_names_provider_url_field_and_snippet() -> None:
    capture = _capture("x" * 500)
    err = parse_error("testprov", capture, "no price column", "price")
    assert isinstance(err, ParseError)
    assert (err.provider, err.url, err.field, err.snippet) == ("testprov", URL, "price",
                                                              "x" * 200)
    assert str(err) == f"testprov: no price column [field price] ({URL})"
    assert parse_error("testprov", capture, "bad", snippet="<tr>row</tr>").snippet == \
        "<tr>row</tr>"
    assert parse_error("testprov", capture, "bad").field is None


@pytest.mark.parametrize("body", [
    "\u20ac" * 300,  # 3 bytes a character: the head must count characters, not bytes
    "a" * 199 + "\U0001f600" * 10,  # a 4-byte character across the 200th position
    b"\xff\xfe" * 300,  # not UTF-8: each bad byte is one replacement character
    "short",
])
def test_body_head_is_the_texts_first_200_characters(body: str | bytes) -> None:
    capture = _capture(body)
    assert body_head(capture) == capture.text()[:200]


def test_body_head_of_a_streamed_body(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    path.write_text("SKU," * 100_000, encoding="utf-8")
    capture = Capture(provider="testprov", url=URL, body_path=path, fetched_at=T0)
    assert body_head(capture) == ("SKU," * 50)[:200]


# -- JSON bodies ----------------------------------------------------------------------------------


@pytest.mark.parametrize("body", [b"<html>502 Bad Gateway</html>", b"", b'{"items": [',
                                  b"\xff\xfe\x00{"])
def test_json_body_refuses_what_is_not_json(body: bytes) -> None:
    with pytest.raises(ParseError) as err:
        json_body("testprov", _capture(body))
    assert (err.value.provider, err.value.url, err.value.field) == ("testprov", URL, None)
    assert "not JSON" in str(err.value)


def test_json_body_returns_any_json_value() -> None:
    assert json_body("p", _capture(b"[1, 2]")) == [1, 2]
    assert json_body("p", _capture(b"null")) is None


def test_envelope_returns_the_object_and_its_member() -> None:
    doc, items = envelope("testprov", _capture({"items": [{"a": 1}], "next": "x"}), "items")
    assert doc == {"items": [{"a": 1}], "next": "x"} and items == [{"a": 1}]
    doc, servers = envelope("testprov", _capture({"servers": {"L4": {}}}), "servers", dict)
    assert servers == {"L4": {}}


@pytest.mark.parametrize(("body", "kind"), [
    ({"error": "unauthorized"}, list),  # the key is missing
    ({"items": None}, list),  # null is not a list
    ({"items": {"a": 1}}, list),  # an object where a list belongs
    ({"items": [1]}, dict),  # a list where an object belongs
    ([{"a": 1}], list),  # a bare list: not an envelope unless bare lists are allowed
    (b'"items"', list), (None, list), (3, list),
])
def test_envelope_errors_name_provider_url_and_the_key(body: Any, kind: type) -> None:
    with pytest.raises(ParseError) as err:
        envelope("testprov", _capture(body), "items", kind)
    assert (err.value.provider, err.value.url, err.value.field) == ("testprov", URL, "items")
    assert "expected" in str(err.value) and "'items'" in str(err.value)


def test_envelope_not_json_names_no_field() -> None:
    with pytest.raises(ParseError) as err:
        envelope("testprov", _capture(b"<html></html>"), "items")
    assert err.value.field is None and err.value.url == URL


def test_envelope_bare_list_is_the_member_itself() -> None:
    assert envelope("p", _capture([{"a": 1}]), "items", bare_list=True) == ({}, [{"a": 1}])
    assert envelope("p", _capture({"items": [2]}), "items", bare_list=True) == (
        {"items": [2]}, [2])
    with pytest.raises(ParseError) as err:  # a bare object is no listing
        envelope("p", _capture({"a": 1}), "items", bare_list=True)
    assert err.value.field == "items"


def test_member_of_any_kind_needs_the_key_present() -> None:
    capture = _capture(b"{}")
    assert member("p", capture, {"v": None}, "v", object) is None
    assert member("p", capture, {"v": [1]}, "v", object) == [1]
    with pytest.raises(ParseError) as err:
        member("p", capture, {"w": 1}, "v", object)
    assert err.value.field == "v"


def test_require_fields_refuses_a_field_no_record_has() -> None:
    capture = _capture(b"[]")
    records = [{"id": 1, "price": 2}, {"id": 2}, "not a record"]
    require_fields("testprov", capture, records, ("id", "price"), "plan")  # one has a price
    with pytest.raises(ParseError) as err:
        require_fields("testprov", capture, records, ("id", "hourly_cost"), "plan")
    assert (err.value.provider, err.value.url, err.value.field) == ("testprov", URL,
                                                                    "hourly_cost")
    assert "no plan has 'hourly_cost'" in str(err.value)


def test_require_fields_has_nothing_to_check_without_records() -> None:
    capture = _capture(b"[]")
    require_fields("p", capture, [], ("id",), "plan")
    require_fields("p", capture, ["x", 1, None], ("id",), "plan")  # no JSON object among them


# -- offers ---------------------------------------------------------------------------------------


def test_a_key_repeated_at_the_same_price_is_one_offer_kept_first() -> None:
    first, again = _offer("a", 2.0, label="first"), _offer("a", 2.0, label="again")
    offers, rejects = one_price_per_key("testprov", [first, _offer("b", 1.0), again])
    assert offers == [first, _offer("b", 1.0)]
    assert rejects == []


def test_a_key_at_two_prices_is_rejected_every_time() -> None:
    offers, rejects = one_price_per_key("testprov", [
        _offer("a", 2.0), _offer("b", 1.0), _offer("a", 3.0), _offer("a", 2.0)])
    assert [o.offer_key for o in offers] == ["b"]
    assert [(r.offer_key, r.reason) for r in rejects] == [("a", CONFLICT_REASON)] * 3
    assert {json.loads(r.raw)["price_per_hour"] for r in rejects} == {2.0, 3.0}
    assert all(r.provider == "testprov" for r in rejects)
    assert "two different prices" in CONFLICT_REASON


def test_the_same_amount_in_another_currency_is_another_price() -> None:
    offers, rejects = one_price_per_key("p", [_offer("a", 2.0), _offer("a", 2.0,
                                                                       currency="EUR")])
    assert offers == [] and len(rejects) == 2


def test_repeats_are_reported_when_asked() -> None:
    offers, rejects = one_price_per_key("p", [_offer("a", 2.0), _offer("a", 2.0)],
                                        repeat_reason="row listed twice")
    assert [o.offer_key for o in offers] == ["a"]
    assert [(r.offer_key, r.reason) for r in rejects] == [("a", "row listed twice")]


def test_one_offer_per_key_holds() -> None:
    book = OneOfferPerKey("p")
    book.add(_offer("a", 2.0))
    assert book.holds("a", 2.0) and not book.holds("a", 3.0) and not book.holds("b", 2.0)
    book.add(_offer("a", 3.0))
    assert not book.holds("a", 2.0) and book.offers() == []
    assert not OneOfferPerKey("p", repeat_reason="twice").holds("a", 2.0)


def test_reject_keeps_text_as_it_is_and_writes_json_values_with_sorted_keys() -> None:
    cells = '<tr><td>8x "H100"</td></tr>'
    assert reject("testprov", "no price", cells) == Reject(
        provider="testprov", reason="no price", raw=cells, offer_key=None)
    row = {"price": None, "gpu": "H100 Ä", "n": [2, 1]}
    got = reject("testprov", "price is not a price: None", row, "H100|1x")
    assert (got.raw, got.offer_key) == (
        '{"gpu": "H100 Ä", "n": [2, 1], "price": null}', "H100|1x")
    assert json.loads(got.raw) == row
    # anything else a parser holds (a number, a list) is JSON too, never a Python repr
    assert reject("testprov", "r", [1.5, None]).raw == "[1.5, null]"


def test_split_results_keeps_order_and_drops_none() -> None:
    reject = Reject(provider="p", reason="bad", raw="{}")
    offers, rejects = split_results([_offer("a", 1.0), None, reject, _offer("b", 2.0)])
    assert [o.offer_key for o in offers] == ["a", "b"] and rejects == [reject]


def test_newest_wins_across_captures_whatever_their_order() -> None:
    old, new = _capture(b"old"), _capture(b"new", at=T0 + timedelta(days=1))

    def read(capture: Capture) -> tuple[list[ParsedOffer], list[Reject]]:
        price = 1.0 if capture.body == b"old" else 2.0
        return ([_offer("a", price, at=capture.fetched_at), _offer(capture.text(), 5.0)],
                [Reject(provider="p", reason=capture.text(), raw="")])

    for captures in ([old, new], [new, old]):
        result = newest_wins(captures, read)
        assert {o.offer_key: o.price_per_hour for o in result.offers} == {
            "a": 2.0, "old": 5.0, "new": 5.0}
        assert [r.reason for r in result.rejects] == ["old", "new"]
        assert result.complete is True


def test_newest_wins_is_incomplete_when_one_capture_was_cut() -> None:
    cut, whole = _capture(b"cut"), _capture(b"whole", at=T0 + timedelta(days=1))
    result = newest_wins([cut, whole], lambda c: ([], [], c.body == b"whole"))
    assert result.complete is False


# -- independent sources --------------------------------------------------------------------------


def _failing(status: int, *, transient: bool = False) -> Any:
    def request() -> Capture:
        raise FetchError(f"HTTP {status}", provider="testprov", url=URL, transient=transient,
                         status=status)
    return request


def test_fetch_apart_keeps_what_answered_and_fails_only_when_nothing_did() -> None:
    good = _capture(b"[]")
    assert fetch_apart("testprov", {"a": _failing(404), "b": lambda: good}) == [good]
    with pytest.raises(FetchError, match="HTTP 404") as one:
        fetch_apart("testprov", {"a": _failing(404)})
    assert one.value.status == 404  # a single failure is raised as it was
    with pytest.raises(FetchError, match=r"no source could be read: a: .*HTTP 404.*; "
                                         r"b: .*HTTP 503") as both:
        fetch_apart("testprov", {"a": _failing(404), "b": _failing(503, transient=True)})
    assert both.value.transient is True  # worth a retry: one of them may come back


def _reader(captures: Any) -> ParseResult:
    doc = json_body("testprov", captures[0])
    if not isinstance(doc, list):
        raise parse_error("testprov", captures[0], "expected a list", "rows")
    return ParseResult(offers=[_offer(k, p) for k, p in doc], complete=len(doc) > 0)


def test_read_apart_merges_the_parts_and_a_later_part_wins_a_shared_key() -> None:
    result, read = read_apart("testprov", {
        "first": [_capture([["a", 1.0], ["b", 2.0]])], "second": [_capture([["b", 3.0]])],
        "absent": []}, _reader)
    assert read == ["first", "second"]
    assert {o.offer_key: o.price_per_hour for o in result.offers} == {"a": 1.0, "b": 3.0}
    assert (result.rejects, result.complete) == ([], True)


def test_read_apart_turns_an_unreadable_part_into_a_reject_and_an_incomplete_result() -> None:
    result, read = read_apart("testprov", {
        "first": [_capture({"rows": "gone"})], "second": [_capture([["b", 3.0]])]}, _reader)
    assert read == ["second"]
    assert [o.offer_key for o in result.offers] == ["b"]
    (rej,) = result.rejects
    assert rej.reason == f"first not read: testprov: expected a list [field rows] ({URL})"
    assert (rej.raw, rej.offer_key, result.complete) == ('{"rows": "gone"}', None, False)
    with pytest.raises(ParseError, match="expected a list"):
        read_apart("testprov", {"first": [_capture({"rows": "gone"})], "second": []}, _reader)
    # a part's own incompleteness carries over
    assert read_apart("testprov", {"only": [_capture([])]}, _reader)[0].complete is False


# -- HTML -----------------------------------------------------------------------------------------


def test_node_text_collapses_whitespace_and_nbsp() -> None:
    html = "<div class='cell'>\n  $&nbsp;1.90 <span>/ hr</span>\t</div>"
    node = LexborHTMLParser(html).css_first("div.cell")
    assert node is not None
    assert node_text(node) == "$ 1.90 / hr"


def test_the_toolkit_has_no_parse_so_it_is_no_provider() -> None:
    # tests/adapters/test_registry.py registers every adapters module that has a parse()
    assert not hasattr(toolkit, "parse")


def test_stripped_text_is_a_nonblank_string_or_none() -> None:
    from gpuscout.adapters.toolkit import stripped_text

    assert stripped_text("  H100 ") == "H100"
    assert [stripped_text(v) for v in ("", "   ", None, 3, ["x"])] == [None] * 5
