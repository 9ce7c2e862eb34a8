"""adapters/fal.py on the pricing page of 2026-08-22 (Serverless & Compute GPU table)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from invariants import OfferInvariants, load_capture, with_replaced

from gpuscout.adapters import fal
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import ParsedOffer, PricingModel

SNAP = SNAPSHOTS_DIR / "fal"
PAGE = "pricing_gpu_index_055204a_2026-08-22_first16000.html"


def _capture() -> Capture:
    return load_capture(SNAP, PAGE)


class TestFalInvariants(OfferInvariants):
    NAME = "fal"
    EXPECTED_UNKNOWN = frozenset({"H100", "H200"})  # the table names no form factor

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return fal.parse([_capture()]).offers


def test_list_prices_are_offers() -> None:
    result = fal.parse([_capture()])
    got = {o.offer_key: (o.gpu_label, o.vram_gb_per_gpu, o.price_per_hour)
           for o in result.offers}
    assert got == {
        "B300|on_demand": ("B300", 288, 8.50),
        "B200|on_demand": ("B200", 180, 6.25),
        "H200|on_demand": ("H200", 141, 4.50),
        "H100|on_demand": ("H100", 80, 4.50),  # H100 and H200 share the list price
        "RTX PRO 6000|on_demand": ("RTX PRO 6000", 96, 2.99),
    }
    offer = result.offers[0]
    assert (offer.gpu_count, offer.pricing_model) == (1, PricingModel.ON_DEMAND)
    assert offer.provider_data == {"column": "List Price", "price_basis": "per GPU",
                                   "product": fal.PRODUCT, "as_low_as": "$4.49/h"}
    assert offer.observed_at == datetime(2026, 8, 22, tzinfo=UTC)
    assert result.complete


def test_as_low_as_floors_are_rejects_never_offers() -> None:
    result = fal.parse([_capture()])
    assert [r.reason for r in result.rejects] == [
        f"'{label}': 'As low as' {floor} is a floor reached through sales, not a price one can "
        "rent at" for label, floor in [("B300", "$4.49/h"), ("B200", "$3.49/h"),
                                       ("H200", "$2.10/h"), ("H100", "$1.89/h"),
                                       ("RTX PRO 6000", "$1.10/h")]]
    assert 1.89 not in {o.price_per_hour for o in result.offers}


def test_the_model_api_table_is_not_read() -> None:
    assert b"Output per $1" in _capture().body
    labels = {o.gpu_label for o in fal.parse([_capture()]).offers}
    assert "Wan 2.5" not in labels


def test_labels_resolve_where_the_name_is_exact() -> None:
    catalog = load_catalog()
    got = {o.gpu_label: getattr(catalog.resolve("fal", o.gpu_label, o.vram_gb_per_gpu),
                                "gpu_id", None)
           for o in fal.parse([_capture()]).offers}
    assert got == {"B300": "b300-sxm-288gb", "B200": "b200-sxm-180gb", "H200": None,
                   "H100": None, "RTX PRO 6000": "rtx-pro-6000-96gb"}


def test_a_list_price_that_is_no_hourly_price_is_a_reject() -> None:
    capture = with_replaced(_capture(), "$6.25/h", "Contact sales", exactly_once=True)
    result = fal.parse([capture])
    assert "'B200': no hourly list price: 'Contact sales'" in {r.reason for r in result.rejects}
    assert "B200|on_demand" not in {o.offer_key for o in result.offers}


@pytest.mark.parametrize(("old", "new"), [
    (">List Price</th>", ">Price</th>"),
    (">As low as</th>", ">Committed</th>"),
])
def test_a_reshaped_table_is_a_parse_error(old: str, new: str) -> None:
    with pytest.raises(ParseError) as err:
        fal.parse([with_replaced(_capture(), old, new, exactly_once=True)])
    assert err.value.field == "List Price"


def test_a_row_with_another_number_of_cells_is_a_parse_error() -> None:
    capture = with_replaced(_capture(), ">288GB</td>", ">288GB</td><td>x</td>",
                            exactly_once=True)
    with pytest.raises(ParseError, match="5 cells"):
        fal.parse([capture])


def test_offline_fetch_serves_the_bundled_page() -> None:
    with HttpClient("fal", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = fal.fetch(client, {})
    assert [c.url for c in captures] == [fal.PRICING_URL]
    assert captures[0].body == (SNAP / PAGE).read_bytes()
