"""adapters/e2e.py on the recorded 2026-08 E2E Networks pricing page (?region=us)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from invariants import OfferInvariants, load_capture, with_replaced

from gpuscout.adapters import e2e
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, Unknown, load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import ParsedOffer, ParseResult, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "e2e"
PAGE = "pricing_us_gpu_index_055204a_2026-08-22.html"
URL = "https://www.e2enetworks.com/pricing?region=us"

ON_DEMAND = PricingModel.ON_DEMAND
RESERVED = PricingModel.RESERVED
SPAN = '<span class="jsx-c2a50f1f0af953b text-sm font-medium text-gray-900 dark:text-white">'
LABELS = {"NVIDIA B200", "NVIDIA H200", "NVIDIA H100", "NVIDIA RTX PRO 6000", "NVIDIA A100",
          "NVIDIA A40", "NVIDIA L40S", "NVIDIA A30", "NVIDIA L4"}


def _capture() -> Capture:
    return load_capture(SNAP, PAGE)


def _mutated(old: str, new: str) -> Capture:
    return with_replaced(_capture(), old, new, exactly_once=True)


def _parse() -> ParseResult:
    return e2e.parse([_capture()])


def _by_key() -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in _parse().offers}


class TestE2eInvariants(OfferInvariants):
    NAME = "e2e"
    # The page does not say SXM, PCIe or NVL for these: several catalog GPUs fit each.
    EXPECTED_UNKNOWN = frozenset({"NVIDIA H200", "NVIDIA H100", "NVIDIA A100"})

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return _parse().offers


def test_census() -> None:
    result = _parse()
    assert result.rejects == [] and result.complete is True
    # 10 table rows x 3 columns + the catalog's 10 GPU offers; its 50 CPU offers are skipped.
    assert len(result.offers) == 40
    table = [o for o in result.offers if o.provider_data["price_list"] == "table"]
    catalog = [o for o in result.offers if o.provider_data["price_list"] != "table"]
    assert len(table) == 30 and len(catalog) == 10
    assert {o.gpu_label for o in table} == {o.gpu_label for o in catalog} == LABELS
    assert {o.currency for o in table} == {"USD"}
    assert {o.currency for o in catalog} == {"INR"}
    assert all(o.gpu_count == 1 and o.region is None for o in result.offers)


def test_b200_on_demand_offer_in_full() -> None:
    key = "NVIDIA B200|192GB|USD|on_demand"
    assert _by_key()[key].model_dump() == {
        "provider": "e2e", "offer_key": key, "instance_type": None, "gpu_label": "NVIDIA B200",
        "gpu_count": 1, "vram_gb_per_gpu": 192.0, "pricing_model": ON_DEMAND,
        "price_per_hour": 6.99, "currency": "USD", "price_kind": PriceKind.LISTED,
        "region": None, "zone": None, "vcpus": 32.0, "ram_gb": 400.0, "disk_gb": None,
        "interconnect": None, "interconnect_gbps": None, "network": None,
        "network_gbps": None, "billing_increment_s": 60, "availability": "unknown",
        "available_count": None, "source_url": URL,
        "observed_at": datetime(2026, 8, 22, tzinfo=UTC),
        "provider_data": {"price_list": "table"},
    }


def test_monthly_and_annual_columns_are_derived_reserved_prices() -> None:
    offers = _by_key()
    month = offers["NVIDIA B200|192GB|USD|reserved|1 month"]
    year = offers["NVIDIA B200|192GB|USD|reserved|1 year"]
    assert (month.pricing_model, month.price_kind, month.billing_increment_s) == (
        RESERVED, PriceKind.DERIVED, None)
    assert month.price_per_hour == round(4983.16 / 730, 6)
    assert month.provider_data == {"price_list": "table", "term": "1 month",
                                   "printed_price": 4983.16, "printed_per": "monthly",
                                   "hours_per_term": 730}
    assert year.price_per_hour == round(55089.45 / 8760, 6)
    assert year.provider_data["printed_price"] == 55089.45
    assert offers["NVIDIA L40S|48GB|USD|reserved|1 year"].price_per_hour == 0.75


def test_same_label_a100_rows_are_told_apart_by_vram() -> None:
    offers = _by_key()
    assert offers["NVIDIA A100|80GB|USD|on_demand"].price_per_hour == 2.1
    assert offers["NVIDIA A100|40GB|USD|on_demand"].price_per_hour == 1.98
    assert offers["NVIDIA A100|80GB|INR|on_demand"].price_per_hour == 189
    assert offers["NVIDIA A100|40GB|INR|on_demand"].price_per_hour == 179


def test_catalog_offers_are_inr_as_stated() -> None:
    offers = _by_key()
    b200 = offers["NVIDIA B200|192GB|INR|on_demand"]
    assert (b200.price_per_hour, b200.currency, b200.vcpus, b200.ram_gb) == (671, "INR", 32, 400)
    assert b200.provider_data["url"] == "https://www.e2enetworks.com/gpus/nvidia-b200"
    assert offers["NVIDIA L4|24GB|INR|on_demand"].price_per_hour == 49
    assert offers["NVIDIA L4|24GB|USD|on_demand"].price_per_hour == 0.57
    # The escaped copy of the catalog in the flight payload is not read twice.
    assert sum(o.gpu_label == "NVIDIA B200" for o in _parse().offers) == 4


def test_every_raw_label_resolves_or_is_expected_unknown() -> None:
    catalog = load_catalog()
    expected = {
        ("NVIDIA B200", 192): "b200-sxm-180gb",
        ("NVIDIA RTX PRO 6000", 96): "rtx-pro-6000-96gb",
        ("NVIDIA A40", 48): "a40-48gb",
        ("NVIDIA L40S", 48): "l40s-48gb",
        ("NVIDIA A30", 24): "a30-24gb",
        ("NVIDIA L4", 24): "l4-24gb",
    }
    for (label, vram), gpu_id in expected.items():
        res = catalog.resolve("e2e", label, vram)
        assert isinstance(res, Resolved) and res.gpu_id == gpu_id, (label, res)
    for label, vram in (("NVIDIA H200", 141), ("NVIDIA H100", 80), ("NVIDIA A100", 80),
                        ("NVIDIA A100", 40)):
        assert isinstance(catalog.resolve("e2e", label, vram), Unknown)


def test_inr_table_cells_are_read_as_inr() -> None:
    result = e2e.parse([_mutated(f"{SPAN}$0.57</span>", f"{SPAN}\u20b949</span>")])
    l4 = {o.offer_key: o for o in result.offers if o.gpu_label == "NVIDIA L4"}
    assert "NVIDIA L4|24GB|USD|on_demand" not in l4
    # Same key and price as the catalog's L4: one offer, not a conflict.
    assert l4["NVIDIA L4|24GB|INR|on_demand"].price_per_hour == 49
    assert result.rejects == []


def test_contact_us_cell_is_a_reject_of_that_column_only() -> None:
    result = e2e.parse([_mutated(f"{SPAN}$903.00</span>", f"{SPAN}Contact us</span>")])
    assert [(r.offer_key, r.reason) for r in result.rejects] == [
        ("NVIDIA A100|40GB|reserved|1 month",
         "NVIDIA A100 40GB: unrecognised price 'Contact us' (Monthly)")]
    keys = {o.offer_key for o in result.offers}
    assert {"NVIDIA A100|40GB|USD|on_demand", "NVIDIA A100|40GB|USD|reserved|1 year"} <= keys
    assert len(result.offers) == 39


def test_a_row_with_a_non_numeric_spec_is_rejected() -> None:
    cell = ('<td class="jsx-c2a50f1f0af953b px-6 py-4 text-center text-sm font-medium '
            'text-gray-900 dark:text-white">60</td>')
    result = e2e.parse([_mutated(cell, cell.replace(">60<", ">60-120<"))])
    assert [r.reason for r in result.rejects] == [
        "row 'NVIDIA L40S' without whole vRAM, vCPUs and RAM: ['48', '60-120', '220']"]
    assert len(result.offers) == 37


def test_a_catalog_offer_without_currency_is_rejected() -> None:
    old = ('"url":"https://www.e2enetworks.com/gpus/nvidia-l4","priceCurrency":"INR",'
           '"price":49,"priceSpecification":{"@type":"UnitPriceSpecification","price":49,'
           '"priceCurrency":"INR",')
    new = ('"url":"https://www.e2enetworks.com/gpus/nvidia-l4",'
           '"price":49,"priceSpecification":{"@type":"UnitPriceSpecification","price":49,')
    result = e2e.parse([_mutated(old, new)])
    assert [r.reason for r in result.rejects] == [
        "NVIDIA L4 GPU Cloud Instance: no priceCurrency (None)"]
    assert len(result.offers) == 39


def test_renamed_hourly_column_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        e2e.parse([_mutated(">Hourly/On-Demand</th>", ">Per hour</th>")])
    assert err.value.field == "Hourly/On-Demand"
    assert err.value.url == URL


def test_renamed_annual_column_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        e2e.parse([_mutated(">Annually</th>", ">Yearly</th>")])
    assert err.value.field == "Annually"


def test_missing_per_gpu_footnote_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        e2e.parse([_mutated("Prices are per GPU-hour and", "Prices are per server-hour and")])
    assert err.value.field == "Prices are per GPU-hour"


def test_an_empty_table_is_a_parse_error() -> None:
    capture = _capture()
    text = capture.text()
    start = text.index(">", text.index("<tbody")) + 1
    end = text.index("</tbody>")
    body = (text[:start] + text[end:]).encode()
    with pytest.raises(ParseError) as err:
        e2e.parse([capture.model_copy(update={"body": body})])
    assert err.value.field == "tbody tr"


def test_offline_fetch_serves_the_bundled_page() -> None:
    with HttpClient("e2e", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = e2e.fetch(client, {})
    assert len(captures) == 1
    capture = captures[0]
    assert capture.body == (SNAP / PAGE).read_bytes()
    assert capture.url == URL
    assert capture.fetched_at == datetime(2026, 8, 22, tzinfo=UTC)
    assert len(e2e.parse(captures).offers) == 40
