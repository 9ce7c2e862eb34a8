"""adapters/tensorpool.py on the whole pricing page of 2026-08-22."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from invariants import OfferInvariants, load_capture, with_replaced

from gpuscout.adapters import tensorpool
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import ParsedOffer, PricingModel

SNAP = SNAPSHOTS_DIR / "tensorpool"
PAGE = "pricing_gpu_index_055204a_2026-08-22.html"
OWN_H100 = ('bg-[#B8E7F5] border-t border-[#e0e0e0]">$1.99/hr')


def _capture() -> Capture:
    return load_capture(SNAP, PAGE)


class TestTensorPoolInvariants(OfferInvariants):
    NAME = "tensorpool"
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return tensorpool.parse([_capture()]).offers


def test_the_tensorpool_column_only() -> None:
    result = tensorpool.parse([_capture()])
    got = {o.offer_key: (o.gpu_label, o.gpu_count, o.price_per_hour) for o in result.offers}
    # Lambda's column has H100 SXM at $3.29 and "Traditional Clouds" $14: neither is read.
    assert got == {
        "B200 SXM|on_demand": ("B200 SXM", 1, 4.99),
        "H200 SXM|on_demand": ("H200 SXM", 1, 2.99),
        "B300 SXM|on_demand": ("B300 SXM", 1, 5.49),
        "H100 SXM|on_demand": ("H100 SXM", 1, 1.99),
        "L40S|on_demand": ("L40S", 1, 1.49),
    }
    assert (result.rejects, result.complete) == ([], True)
    offer = result.offers[0]
    assert offer.pricing_model is PricingModel.ON_DEMAND
    assert offer.provider_data == {"column": "TensorPool", "category": "ON-DEMAND",
                                   "price_basis": "per GPU"}
    assert offer.observed_at == datetime(2026, 8, 22, tzinfo=UTC)


def test_labels_resolve() -> None:
    catalog = load_catalog()
    got = {o.gpu_label: getattr(catalog.resolve("tensorpool", o.gpu_label), "gpu_id", None)
           for o in tensorpool.parse([_capture()]).offers}
    assert got == {"B200 SXM": "b200-sxm-180gb", "H200 SXM": "h200-sxm-141gb",
                   "B300 SXM": "b300-sxm-288gb", "H100 SXM": "h100-sxm-80gb",
                   "L40S": "l40s-48gb"}


def test_the_column_is_found_by_its_heading_not_its_place() -> None:
    # Swap the headings: the prices under "TensorPool" are then Lambda's column.
    capture = with_replaced(_capture(), "leading-[140%]\">Lambda Labs</div>",
                            "leading-[140%]\">Lambda X</div>", exactly_once=True)
    capture = with_replaced(capture, "bg-[#B8E7F5]\">TensorPool</div>",
                            "bg-[#B8E7F5]\">Lambda Labs</div>", exactly_once=True)
    capture = with_replaced(capture, "leading-[140%]\">Lambda X</div>",
                            "leading-[140%]\">TensorPool</div>", exactly_once=True)
    got = {o.gpu_label: o.price_per_hour for o in tensorpool.parse([capture]).offers}
    assert got == {"B200 SXM": 4.99, "H100 SXM": 3.29}  # Lambda's, "N/A" elsewhere


def test_a_cell_that_is_no_hourly_price_is_a_reject() -> None:
    capture = with_replaced(_capture(), OWN_H100, OWN_H100.replace("$1.99/hr", "$1.99/mo"),
                            exactly_once=True)
    result = tensorpool.parse([capture])
    assert [(r.offer_key, r.reason) for r in result.rejects] == [
        ("H100 SXM|on_demand", "'H100 SXM': no hourly price in the TensorPool column: "
                               "'$1.99/mo'")]
    assert len(result.offers) == 4


def test_a_row_under_another_category_is_not_read_as_on_demand() -> None:
    capture = with_replaced(_capture(), ">ON-DEMAND</div>", ">RESERVED</div>",
                            exactly_once=True)
    result = tensorpool.parse([capture])
    assert result.offers == []
    assert {r.reason for r in result.rejects} >= {
        "'H100 SXM' is listed under 'RESERVED', not ON-DEMAND: '$1.99/hr'"}


@pytest.mark.parametrize(("old", "new"), [
    ("bg-[#B8E7F5]\">TensorPool</div>", "bg-[#B8E7F5]\">Our price</div>"),
    (">GPU Type</div>", ">Accelerator</div>"),
    ("grid-cols-[200px_200px_1fr_1fr_1fr]", "grid-template-pricing"),
])
def test_a_reshaped_grid_is_a_parse_error(old: str, new: str) -> None:
    with pytest.raises(ParseError) as err:
        tensorpool.parse([with_replaced(_capture(), old, new, exactly_once=True)])
    assert err.value.field == "TensorPool"


def test_a_grid_that_does_not_fill_whole_rows_is_a_parse_error() -> None:
    capture = _capture()
    capture = capture.model_copy(update={"body": capture.body.replace(
        b'<div class="p-5"></div>', b"", 1)})  # one empty category cell gone
    with pytest.raises(ParseError, match="not whole rows"):
        tensorpool.parse([capture])


def test_offline_fetch_serves_the_bundled_page() -> None:
    with HttpClient("tensorpool", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = tensorpool.fetch(client, {})
    assert [c.url for c in captures] == [tensorpool.PRICING_URL]
    assert captures[0].body == (SNAP / PAGE).read_bytes()
