"""adapters/massedcompute.py on the pricing page's flight rows: the bundled excerpt of the live
page of 2026-08-22 (adapters/snapshots/massedcompute/PROVENANCE.md) and edits of it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from invariants import OfferInvariants, load_capture, with_replaced

from gpuscout.adapters import massedcompute
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.adapters.toolkit import CONFLICT_REASON
from gpuscout.core.errors import ParseError
from gpuscout.core.models import Availability, Interconnect, ParsedOffer, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "massedcompute"
PAGE = "pricing_gpu_index_055204a_2026-08-22.html"
URL = "https://vm.massedcompute.com/pricing"
A30_DESKTOP = '\\"A30 (24GB)-x 1-0\\"'
A30_MOBILE = '\\"A30 (24GB)-mobile-x 1-0\\"'


def _page() -> Capture:
    return load_capture(SNAP, PAGE)


def _edited(after: str, old: str, new: str, capture: Capture | None = None) -> Capture:
    """The page with the first `old` after the row key `after` replaced by `new`."""
    page = capture or _page()
    text = page.body.decode()
    at = text.index(old, text.index(after))
    return page.model_copy(update={"body": (text[:at] + new + text[at + len(old):]).encode()})


def _by_key(offers: list[ParsedOffer]) -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in offers}


class TestMassedComputeInvariants(OfferInvariants):
    NAME = "massedcompute"
    # The page states neither SXM nor PCIe (core/data/aliases/massedcompute.csv).
    EXPECTED_UNKNOWN = frozenset({"H100 (80GB)", "A100 (80GB)"})

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return massedcompute.parse([_page()]).offers


def test_bundled_page_counts() -> None:
    result = massedcompute.parse([_page()])
    assert len(result.offers) == 23
    assert [(r.offer_key, r.reason) for r in result.rejects] == [
        ("H100 (80GB)|8x", massedcompute.CONTACT_REASON),
        ("L40 (48GB)|8x", massedcompute.CONTACT_REASON)]
    assert result.complete  # contact-us rows hide no offer
    assert {(o.pricing_model, o.price_kind, o.currency) for o in result.offers} == {
        (PricingModel.ON_DEMAND, PriceKind.LISTED, "USD")}
    assert {(o.region, o.availability) for o in result.offers} == {(None, Availability.UNKNOWN)}
    assert sorted({o.gpu_count for o in result.offers}) == [1, 2, 4, 8]


def test_pinned_offers_exact_values() -> None:
    offers = _by_key(massedcompute.parse([_page()]).offers)
    b300 = offers["B300 SXM6|8x"]
    assert (b300.gpu_label, b300.gpu_count, b300.price_per_hour, b300.vram_gb_per_gpu) == (
        "B300 SXM6", 8, 52.80, None)
    assert (b300.vcpus, b300.ram_gb, b300.interconnect) == (280, 2800, None)
    assert b300.provider_data == {"price_per_gpu_hour": 6.6, "page_copies": "desktop,mobile",
                                  "storage": 6000}
    assert (b300.source_url, b300.observed_at) == (URL, datetime(2026, 8, 22, tzinfo=UTC))
    h200 = offers["H200 NVL (141GB)|1x"]
    assert (h200.price_per_hour, h200.vram_gb_per_gpu, h200.vcpus, h200.ram_gb) == (
        3.62, 141, 16, 180)
    assert h200.interconnect is Interconnect.SINGLE
    bridged = offers["H200 NVL (141GB) NVLink|4x"]
    assert (bridged.price_per_hour, bridged.interconnect) == (15.28, Interconnect.NVLINK)
    alt = offers["RTX A6000 (48GB) [ALT Config]|1x"]
    assert (alt.price_per_hour, alt.vcpus, alt.ram_gb) == (0.55, 6, 32)
    assert offers["A30 (24GB)|1x"].price_per_hour == 0.35


def test_a_copy_with_deferred_cells_leaves_the_row_to_the_other_copy() -> None:
    offers = _by_key(massedcompute.parse([_page()]).offers)
    # Desktop cells deferred: the mobile card carries the price.
    for key, price in (("B200 SXM6|8x", 43.46), ("H100 SXM5 (80GB)|8x", 25.12)):
        assert (offers[key].price_per_hour, offers[key].provider_data["page_copies"]) == (
            price, "mobile")
    # Mobile card deferred: the desktop row carries it.
    nvl = offers["H100 NVL (94GB) NVLink|8x"]
    assert (nvl.price_per_hour, nvl.provider_data["page_copies"]) == (23.36, "desktop")
    assert (nvl.vcpus, nvl.ram_gb, nvl.vram_gb_per_gpu) == (140, 1500, 94)


def test_a_row_without_a_price_never_takes_a_deferred_line_after_it() -> None:
    text = _page().body.decode()
    key = text.index('\\"H100 (80GB)-x 8-3\\"')
    nxt = text.index('-x ', key + 30)
    assert "$$23.36" in text[key:nxt]  # the trap: the next row key is past the deferred line
    offers = _by_key(massedcompute.parse([_page()]).offers)
    assert "H100 (80GB)|8x" not in offers
    assert offers["H100 (80GB)|1x"].price_per_hour == 2.73


def test_replayed_fetch_requests_the_pricing_page() -> None:
    with HttpClient("massedcompute", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = massedcompute.fetch(client, {})
    assert [c.url for c in captures] == [URL]
    assert [c.body for c in captures] == [(SNAP / PAGE).read_bytes()]
    assert len(massedcompute.parse(captures).offers) == 23


# -- faults: a changed layout is a ParseError naming what is missing -------------------------


@pytest.mark.parametrize(("old", "new", "field"), [
    ('\\"th\\",\\"Price\\"', '\\"th\\",\\"Cost\\"', "Price"),  # a renamed column
    ('\\"th\\",\\"Qty\\"', '\\"th\\",\\"GPUs\\"', "Qty"),
    ('\\"th\\",', '\\"td\\",', "Price"),  # no table header left
    ("-x ", "-by ", "row key"),  # the row keys' shape changed
    ("$$", "$", "Price"),  # the price escaping changed: no row has a price
])
def test_changed_layout_is_a_parse_error(old: str, new: str, field: str) -> None:
    with pytest.raises(ParseError) as err:
        massedcompute.parse([with_replaced(_page(), old, new)])
    assert err.value.field == field


# -- faults: one odd row is a Reject, the rest is read ----------------------------------------


def _rejected(page: Capture, key: str) -> str:
    result = massedcompute.parse([page])
    assert key not in _by_key(result.offers)
    assert len(result.offers) == 22
    assert not result.complete  # a row not read: close nothing
    return next(r.reason for r in result.rejects if r.offer_key == key)


def test_copies_with_different_prices_are_a_conflict() -> None:
    page = _edited(A30_DESKTOP, "$$0.35", "$$0.36")
    assert _rejected(page, "A30 (24GB)|1x") == f"{CONFLICT_REASON}: ['0.35', '0.36']"


def test_two_prices_in_one_copy_are_a_reject() -> None:
    page = _edited(A30_DESKTOP, '\\"$$0.35\\"', '\\"$$0.45\\",\\"$$0.35\\"')
    assert _rejected(page, "A30 (24GB)|1x").startswith("desktop copy shows 2 prices")


def test_a_price_without_the_hourly_unit_is_a_reject() -> None:
    page = _edited(A30_MOBILE, '\\"/hr\\"', '\\"/mo\\"', _edited(A30_DESKTOP, '\\"/hr\\"',
                                                                 '\\"/mo\\"'))
    assert _rejected(page, "A30 (24GB)|1x") == "price 0.35 without a '/hr' unit"


def test_a_quantity_that_contradicts_the_key_is_a_reject() -> None:
    page = _edited(A30_DESKTOP, '\\",\\"1\\"]', '\\",\\"2\\"]')
    assert _rejected(page, "A30 (24GB)|1x") == "quantity x2 contradicts the row key x1"


def test_a_row_whose_copies_are_all_deferred_is_a_reject() -> None:
    page = _edited(A30_MOBILE, '\\"$$0.35\\"', '\\"$L99\\"',
                   _edited(A30_DESKTOP, '\\"$$0.35\\"', '\\"$L98\\"'))
    assert _rejected(page, "A30 (24GB)|1x") == "no price in any copy of the row (cells deferred)"
