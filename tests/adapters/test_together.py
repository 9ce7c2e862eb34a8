"""adapters/together.py on the pricing page of 2026-08-22 (GPU Clusters section)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from invariants import OfferInvariants, load_capture, with_replaced

from gpuscout.adapters import together
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import Interconnect, ParsedOffer, PricingModel

SNAP = SNAPSHOTS_DIR / "together"
PAGE = "pricing_gpu_index_055204a_2026-08-22.html"


def _capture() -> Capture:
    return load_capture(SNAP, PAGE)


class TestTogetherInvariants(OfferInvariants):
    NAME = "together"
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return together.parse([_capture()]).offers


def test_every_price_of_the_visible_cluster_table() -> None:
    result = together.parse([_capture()])
    got = {o.offer_key: o.price_per_hour for o in result.offers}
    assert got == {
        "NVIDIA HGX H100|on_demand": 3.99,
        "NVIDIA HGX H100|reserved|7-30 days": 3.69,
        "NVIDIA HGX H100|reserved|31-90 days": 3.45,  # the page prints " $3.45"
        "NVIDIA HGX H100|reserved|91-180 days": 3.19,
        "NVIDIA HGX H200|on_demand": 5.99,
        "NVIDIA HGX H200|reserved|7-30 days": 4.99,
        "NVIDIA HGX H200|reserved|31-90 days": 4.15,
        "NVIDIA HGX H200|reserved|91-180 days": 3.99,
        "NVIDIA HGX B200|on_demand": 8.19,
        "NVIDIA HGX B200|reserved|7-30 days": 7.99,
        "NVIDIA HGX B200|reserved|31-90 days": 7.79,
        "NVIDIA HGX B200|reserved|91-180 days": 6.79,
    }
    assert result.complete


def test_the_dedicated_inference_and_hidden_tables_are_not_read() -> None:
    prices = {o.price_per_hour for o in together.parse([_capture()]).offers}
    assert 5.49 not in prices and 8.99 not in prices  # Dedicated Inference endpoints
    body = _capture().body
    assert b'class="hide"' in body and b"Hourly" in body  # the hidden table is in the capture


def test_reserved_offers_carry_their_term() -> None:
    offers = {o.offer_key: o for o in together.parse([_capture()]).offers}
    reserved = offers["NVIDIA HGX H100|reserved|7-30 days"]
    assert (reserved.pricing_model, reserved.gpu_count, reserved.interconnect) == (
        PricingModel.RESERVED, 1, Interconnect.NVSWITCH)
    assert reserved.provider_data == {"column": "7-30 days", "price_basis": "per GPU",
                                      "product": "GPU Clusters", "reserved_term": "7-30 days",
                                      "term_min_days": 7, "term_max_days": 30}
    on_demand = offers["NVIDIA HGX B200|on_demand"]
    assert on_demand.pricing_model is PricingModel.ON_DEMAND
    assert "reserved_term" not in on_demand.provider_data
    assert on_demand.observed_at == datetime(2026, 8, 22, tzinfo=UTC)


def test_contact_us_cells_are_rejects_and_dashes_are_no_offer() -> None:
    rejects = together.parse([_capture()]).rejects
    assert [(r.offer_key, r.reason) for r in rejects] == [
        ("NVIDIA HGX H100|reserved|181+ days",
         "'NVIDIA HGX H100': no price for 181+ days: 'Contact us'"),
        ("NVIDIA HGX H200|reserved|181+ days",
         "'NVIDIA HGX H200': no price for 181+ days: 'Contact us'"),
        ("NVIDIA HGX B200|reserved|181+ days",
         "'NVIDIA HGX B200': no price for 181+ days: 'Contact us'"),
        (None, "'NVIDIA GB200 NVL72': no price for 7-30 days, 31-90 days, 91-180 days, "
               "181+ days: 'Contact us'"),
        (None, "'NVIDIA GB300 NVL72': no price for 7-30 days, 31-90 days, 91-180 days, "
               "181+ days: 'Contact us'"),
        (None, "'NVIDIA HGX B300': no price for 7-30 days, 31-90 days, 91-180 days, "
               "181+ days: 'Contact us'"),
    ]


def test_hgx_labels_resolve_to_the_sxm_gpus() -> None:
    catalog = load_catalog()
    got = {o.gpu_label: getattr(catalog.resolve("together", o.gpu_label), "gpu_id", None)
           for o in together.parse([_capture()]).offers}
    assert got == {"NVIDIA HGX H100": "h100-sxm-80gb", "NVIDIA HGX H200": "h200-sxm-141gb",
                   "NVIDIA HGX B200": "b200-sxm-180gb"}


def test_a_column_of_another_term_is_a_reject_not_a_guess() -> None:
    capture = with_replaced(_capture(), "7-30 days", "1 year", exactly_once=True)
    result = together.parse([capture])
    assert "NVIDIA HGX H100|reserved|7-30 days" not in {o.offer_key for o in result.offers}
    assert "'NVIDIA HGX H100': no price for reserved / 1 year: '$3.69'" in {
        r.reason for r in result.rejects}


def test_a_price_cell_that_is_no_price_is_a_reject() -> None:
    capture = with_replaced(_capture(), "$3.69", "$3.69 per hour", exactly_once=True)
    result = together.parse([capture])
    assert "'NVIDIA HGX H100': no price for 7-30 days: '$3.69 per hour'" in {
        r.reason for r in result.rejects}


@pytest.mark.parametrize(("old", "new", "field"), [
    ('id="gpu-clusters"', 'id="gpu-cluster-pricing"', "#gpu-clusters"),
    ("Pay as you go</p></div></div></th><th><div", "PAYG</p></div></div></th><th><div",
     "Pay as you go"),
])
def test_a_reshaped_page_is_a_parse_error(old: str, new: str, field: str) -> None:
    with pytest.raises(ParseError) as err:
        together.parse([with_replaced(_capture(), old, new)])
    assert err.value.field == field


def test_offline_fetch_serves_the_bundled_page() -> None:
    with HttpClient("together", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = together.fetch(client, {})
    assert [c.url for c in captures] == [together.PRICING_URL]
    assert captures[0].body == (SNAP / PAGE).read_bytes()
