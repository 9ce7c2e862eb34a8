"""adapters/fluidstack.py on the recorded 2025-01 Fluidstack pricing page (and the 2023 one)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from invariants import FIXTURES, OfferInvariants, load_capture, with_replaced

from gpuscout.adapters import fluidstack
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, Unknown, load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import ParsedOffer, ParseResult, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "fluidstack"
PAGE = "fluidstack_20250109013724.html"
OLD_LAYOUT = "fluidstack_20230930024119.html"  # tests/fixtures/fluidstack: component prices

ON_DEMAND = PricingModel.ON_DEMAND
RESERVED = PricingModel.RESERVED


def _capture() -> Capture:
    return load_capture(SNAP, PAGE)


def _mutated(old: str, new: str) -> Capture:
    """The recorded page with one string replaced: how a format change would look."""
    capture = _capture()
    return with_replaced(capture, old, new, exactly_once=True)


def _parse() -> ParseResult:
    return fluidstack.parse([_capture()])


class TestFluidstackInvariants(OfferInvariants):
    NAME = "fluidstack"
    # H200 without a form factor: SXM or NVL, both 141 GB (unmapped in the alias file).
    EXPECTED_UNKNOWN = frozenset({"Nvidia H200"})

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return _parse().offers


def test_every_offer() -> None:
    got = {o.offer_key: (o.pricing_model, o.price_per_hour, o.vram_gb_per_gpu,
                         o.provider_data.get("term")) for o in _parse().offers}
    assert got == {
        "Nvidia H200|141GB|reserved|1 year": (RESERVED, 2.45, 141, "1 year"),
        "Nvidia H100 PCIe|80GB|on_demand": (ON_DEMAND, 2.89, 80, None),
        "Nvidia H100 PCIe|80GB|reserved|1 year": (RESERVED, 2.05, 80, "1 year"),
        "Nvidia A100 80GB PCIe|80GB|on_demand": (ON_DEMAND, 1.8, 80, None),
        "Nvidia A100 80GB PCIe|80GB|reserved|1 year": (RESERVED, 1.2, 80, "1 year"),
        "Nvidia A100 40GB PCIe|40GB|on_demand": (ON_DEMAND, 1.65, 40, None),
        "Nvidia A100 40GB PCIe|40GB|reserved|1 year": (RESERVED, 1.05, 40, "1 year"),
        "Nvidia L40|48GB|on_demand": (ON_DEMAND, 1.25, 48, None),
        "Nvidia L40|48GB|reserved|1 year": (RESERVED, 0.99, 48, "1 year"),
    }
    offers = _parse().offers
    assert all(o.gpu_count == 1 and o.price_kind == PriceKind.LISTED and o.region is None
               and o.interconnect is None and o.network is None for o in offers)


def test_h100_reserved_offer_in_full() -> None:
    key = "Nvidia H100 PCIe|80GB|reserved|1 year"
    offer = next(o for o in _parse().offers if o.offer_key == key)
    assert offer.model_dump() == {
        "provider": "fluidstack", "offer_key": key, "instance_type": None,
        "gpu_label": "Nvidia H100 PCIe", "gpu_count": 1, "vram_gb_per_gpu": 80.0,
        "pricing_model": RESERVED, "price_per_hour": 2.05, "currency": "USD",
        "price_kind": PriceKind.LISTED, "region": None, "zone": None, "vcpus": None,
        "ram_gb": None, "disk_gb": None, "interconnect": None, "interconnect_gbps": None,
        "network": None, "network_gbps": None, "billing_increment_s": None,
        "availability": "unknown", "available_count": None,
        "source_url": "https://www.fluidstack.io/pricing",
        "observed_at": datetime(2025, 1, 9, 1, 37, 24, tzinfo=UTC),
        "provider_data": {"price_per_gpu_hour": 2.05, "term": "1 year",
                          "max_vcpus_per_gpu": 48, "max_ram_gb_per_gpu": 256},
    }


def test_n_a_is_no_offer_and_nothing_is_rejected() -> None:
    result = _parse()
    assert result.rejects == []
    assert result.complete is True
    assert "Nvidia H200|141GB|on_demand" not in {o.offer_key for o in result.offers}


def test_every_raw_label_resolves_or_is_expected_unknown() -> None:
    catalog = load_catalog()
    expected = {
        ("Nvidia H100 PCIe", 80): "h100-pcie-80gb",
        ("Nvidia A100 80GB PCIe", 80): "a100-pcie-80gb",
        ("Nvidia A100 40GB PCIe", 40): "a100-pcie-40gb",
        ("Nvidia L40", 48): "l40-48gb",
    }
    for (label, vram), gpu_id in expected.items():
        res = catalog.resolve("fluidstack", label, vram)
        assert isinstance(res, Resolved) and res.gpu_id == gpu_id, (label, res)
    res = catalog.resolve("fluidstack", "Nvidia H200", 141)
    assert isinstance(res, Unknown) and "form factor not stated" in res.reason


def test_unreadable_price_is_rejected() -> None:
    result = fluidstack.parse([_mutated("<p>$1.25<br/></p>", "<p>Call us<br/></p>")])
    key = "Nvidia L40|48GB|on_demand"
    assert key not in {o.offer_key for o in result.offers}
    assert [(r.offer_key, r.reason) for r in result.rejects] == [
        (key, "unrecognised price 'Call us' (On-Demand Price (/hr))")]


def test_unknown_price_column_is_rejected_row_by_row() -> None:
    result = fluidstack.parse([_mutated("<p>1 Year price (/hr)</p>", "<p>Flex price (/hr)</p>")])
    assert {o.pricing_model for o in result.offers} == {ON_DEMAND}
    assert len(result.offers) == 4
    assert [r.reason for r in result.rejects] == ["unknown price column 'Flex price (/hr)'"] * 5


def test_renamed_on_demand_column_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        fluidstack.parse([_mutated("<p>On-Demand Price (/hr)</p>", "<p>Hourly (/hr)</p>")])
    assert err.value.field == "on_demand"
    assert err.value.url == "https://www.fluidstack.io/pricing"


def test_renamed_table_class_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        fluidstack.parse([_mutated('<table class="pricing_table">', '<table class="prices">')])
    assert err.value.field == "table.pricing_table"


def test_the_2023_component_price_layout_is_a_parse_error() -> None:
    # GPU-only component prices (vCPU and RAM billed on top) must never be read as offers.
    capture = load_capture(FIXTURES / "fluidstack", OLD_LAYOUT)
    with pytest.raises(ParseError) as err:
        fluidstack.parse([capture])
    assert err.value.field == "table.pricing_table"
    assert err.value.snippet is not None and "20230930024119" in err.value.snippet


def test_offline_fetch_serves_the_bundled_page() -> None:
    with HttpClient("fluidstack", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = fluidstack.fetch(client, {})
    assert len(captures) == 1
    capture = captures[0]
    assert capture.body == (SNAP / PAGE).read_bytes()
    assert capture.url == _capture().url == "https://www.fluidstack.io/pricing"
    assert capture.fetched_at == datetime(2025, 1, 9, 1, 37, 24, tzinfo=UTC)
    assert len(fluidstack.parse(captures).offers) == 9
