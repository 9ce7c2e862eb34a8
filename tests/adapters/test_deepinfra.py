"""adapters/deepinfra.py on the pricing page slices of 2026-08-22 (Custom LLMs table)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from invariants import OfferInvariants, load_capture, with_replaced

from gpuscout.adapters import deepinfra
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import ParsedOffer, PricingModel

SNAP = SNAPSHOTS_DIR / "deepinfra"
PAGE = "pricing_gpu_index_055204a_2026-08-22.html"


def _capture() -> Capture:
    return load_capture(SNAP, PAGE)


class TestDeepInfraInvariants(OfferInvariants):
    NAME = "deepinfra"
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return deepinfra.parse([_capture()]).offers


def test_the_custom_llm_gpu_table_only() -> None:
    result = deepinfra.parse([_capture()])
    got = {o.offer_key: (o.gpu_label, o.vram_gb_per_gpu, o.price_per_hour)
           for o in result.offers}
    assert got == {
        "A100|80GB|on_demand": ("A100", 80, 0.89),
        "H100|80GB|on_demand": ("H100", 80, 2.20),
        "H200|141GB|on_demand": ("H200", 141, 2.69),
        "B200|180GB|on_demand": ("B200", 180, 3.69),
        "B300|270GB|on_demand": ("B300", 270, 4.89),
    }
    # the multiplier, usage-tier and per-token tables and the i18n data are in the capture
    body = _capture().body
    assert b"1x base price" in body and b"$ per 1M input tokens" in body
    assert b"${{price}}" in body
    assert (result.rejects, result.complete) == ([], True)


def test_one_dedicated_gpu_on_demand_billed_per_minute() -> None:
    h100 = next(o for o in deepinfra.parse([_capture()]).offers if o.gpu_label == "H100")
    assert (h100.gpu_count, h100.pricing_model, h100.billing_increment_s) == (
        1, PricingModel.ON_DEMAND, 60)
    assert h100.provider_data == {"product": deepinfra.PRODUCT, "price_basis": "per GPU",
                                  "memory": "80GB"}
    assert h100.observed_at == datetime(2026, 8, 22, tzinfo=UTC)


def test_labels_resolve_to_the_sxm_gpus_the_section_names() -> None:
    catalog = load_catalog()
    got = {o.gpu_label: getattr(catalog.resolve("deepinfra", o.gpu_label, o.vram_gb_per_gpu),
                                "gpu_id", None)
           for o in deepinfra.parse([_capture()]).offers}
    assert got == {"A100": "a100-sxm-80gb", "H100": "h100-sxm-80gb", "H200": "h200-sxm-141gb",
                   "B200": "b200-sxm-180gb", "B300": "b300-sxm-288gb"}


def test_a_row_without_a_gpu_hour_price_is_a_reject() -> None:
    capture = with_replaced(_capture(), "<b>$0.89</b> / GPU-hour", "Contact us",
                            exactly_once=True)
    result = deepinfra.parse([capture])
    assert [(r.offer_key, r.reason) for r in result.rejects] == [
        ("A100|80GB|on_demand", "'A100': no price per GPU-hour: 'Contact us'")]
    assert len(result.offers) == 4


def test_a_price_in_another_unit_is_not_read() -> None:
    capture = with_replaced(_capture(), "<b>$2.20</b> / GPU-hour", "<b>$2.20</b> / hour",
                            exactly_once=True)
    result = deepinfra.parse([capture])
    assert [r.reason for r in result.rejects] == ["'H100': no price per GPU-hour: '$2.20 / hour'"]


def test_the_same_table_twice_is_one_offer_each() -> None:
    capture = _capture()
    doubled = capture.model_copy(update={"body": capture.body + capture.body})
    assert len(deepinfra.parse([doubled]).offers) == 5


@pytest.mark.parametrize(("old", "new", "field"), [
    ('scope="col">GPU</th>', 'scope="col">Chip</th>', "GPU"),
    ('scope="col">Memory</th>', 'scope="col">Memory</th><th>Region</th>', "GPU"),
])
def test_a_reshaped_table_is_a_parse_error(old: str, new: str, field: str) -> None:
    with pytest.raises(ParseError) as err:
        deepinfra.parse([with_replaced(_capture(), old, new, exactly_once=True)])
    assert err.value.field == field


def test_a_row_with_another_number_of_cells_is_a_parse_error() -> None:
    capture = with_replaced(_capture(), "80GB</td><td class=\"MuiTableCell-root MuiTableCell-body"
                            " MuiTableCell-alignRight", "</td><td>x</td><td class=\"MuiTableCell-"
                            "root MuiTableCell-body MuiTableCell-alignRight")
    with pytest.raises(ParseError, match="cells"):
        deepinfra.parse([capture])


def test_offline_fetch_serves_the_bundled_page() -> None:
    with HttpClient("deepinfra", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = deepinfra.fetch(client, {})
    assert [c.url for c in captures] == [deepinfra.PRICING_URL]
    assert captures[0].body == (SNAP / PAGE).read_bytes()
