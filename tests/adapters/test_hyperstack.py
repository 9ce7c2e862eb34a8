"""adapters/hyperstack.py on the recorded 2025-07 Hyperstack GPU pricing page."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from invariants import FIXTURES, OfferInvariants, load_capture, with_replaced

from gpuscout.adapters import hyperstack
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, Unknown, load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import Interconnect, ParsedOffer, ParseResult, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "hyperstack"
PAGE = "hyperstack_20250724001416.html"
OLD_LAYOUT = "hyperstack_20240822101707.html"  # tests/fixtures/hyperstack: a <table>, refused

ON_DEMAND = PricingModel.ON_DEMAND
SPOT = PricingModel.SPOT


def _capture() -> Capture:
    return load_capture(SNAP, PAGE)


def _mutated(old: str, new: str) -> Capture:
    """The recorded page with one string replaced: how a format change would look."""
    capture = _capture()
    return with_replaced(capture, old, new, exactly_once=True)


def _parse() -> ParseResult:
    return hyperstack.parse([_capture()])


class TestHyperstackInvariants(OfferInvariants):
    NAME = "hyperstack"
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return _parse().offers


def test_every_offer() -> None:
    got = {o.offer_key: (o.price_per_hour, o.vram_gb_per_gpu, o.interconnect)
           for o in _parse().offers}
    assert got == {
        "NVIDIA H200 SXM|on_demand": (3.5, 141.0, None),
        "NVIDIA H100 SXM|on_demand": (2.4, 80.0, None),
        "NVIDIA H100 NVLink|on_demand": (1.95, 80.0, Interconnect.NVLINK),
        "NVIDIA H100|on_demand": (1.9, 80.0, None),  # "&nbsp;$1.90"
        "NVIDIA A100 SXM|on_demand": (1.6, 80.0, None),
        "NVIDIA A100 NVLink|on_demand": (1.4, 80.0, Interconnect.NVLINK),
        "NVIDIA A100|on_demand": (1.35, 80.0, None),
        "NVIDIA L40|on_demand": (1.0, 48.0, None),
        "NVIDIA A6000|on_demand": (0.5, 48.0, None),
        "NVIDIA A4000|on_demand": (0.15, 16.0, None),
        "NVIDIA A100|spot": (1.08, 80.0, None),
        "NVIDIA L40|spot": (0.8, 48.0, None),  # " $0.80"
        "NVIDIA A6000|spot": (0.4, 48.0, None),
    }
    offers = _parse().offers
    assert {o.pricing_model for o in offers if o.offer_key.endswith("|spot")} == {SPOT}
    assert all(o.gpu_count == 1 and o.price_kind == PriceKind.LISTED and o.region is None
               for o in offers)


def test_h200_on_demand_offer_in_full() -> None:
    key = "NVIDIA H200 SXM|on_demand"
    offer = next(o for o in _parse().offers if o.offer_key == key)
    assert offer.model_dump() == {
        "provider": "hyperstack", "offer_key": key, "instance_type": None,
        "gpu_label": "NVIDIA H200 SXM", "gpu_count": 1, "vram_gb_per_gpu": 141.0,
        "pricing_model": ON_DEMAND, "price_per_hour": 3.5, "currency": "USD",
        "price_kind": PriceKind.LISTED, "region": None, "zone": None, "vcpus": None,
        "ram_gb": None, "disk_gb": None, "interconnect": None, "interconnect_gbps": None,
        "network": None, "network_gbps": None, "billing_increment_s": None,
        "availability": "unknown", "available_count": None,
        "source_url": "https://www.hyperstack.cloud/gpu-pricing",
        "observed_at": datetime(2025, 7, 24, 0, 14, 16, tzinfo=UTC),
        "provider_data": {"price_per_gpu_hour": 3.5, "max_pcpus_per_gpu": 22,
                          "max_ram_gb_per_gpu": 225},
    }


def test_spot_offer_takes_vram_from_the_on_demand_card() -> None:
    offer = next(o for o in _parse().offers if o.offer_key == "NVIDIA A100|spot")
    assert (offer.pricing_model, offer.price_per_hour, offer.vram_gb_per_gpu) == (SPOT, 1.08, 80)
    assert offer.provider_data == {"price_per_gpu_hour": 1.08, "vram_from": "on-demand card"}


def test_reservation_lower_bounds_are_rejected() -> None:
    result = _parse()
    assert result.complete is True
    assert [(r.offer_key, r.reason) for r in result.rejects] == [
        (f"{label}|reserved", f"reservation price 'Starting from {price}': a lower bound "
                              "without a stated term")
        for label, price in [
            ("NVIDIA H200 SXM", "$2.45"), ("NVIDIA H100 SXM", "$2.04"),
            ("NVIDIA H100 NVLink", "$1.37"), ("NVIDIA H100", "$1.33"),
            ("NVIDIA A100 SXM", "$1.36"), ("NVIDIA A100 NVLink", "$0.98"),
            ("NVIDIA A100", "$0.95"), ("NVIDIA L40", "$0.70"), ("NVIDIA A6000", "$0.35"),
            ("NVIDIA A4000", "$0.11"),
        ]
    ]


def test_every_raw_label_resolves() -> None:
    catalog = load_catalog()
    expected = {
        ("NVIDIA H200 SXM", 141): "h200-sxm-141gb",
        ("NVIDIA H100 SXM", 80): "h100-sxm-80gb",
        ("NVIDIA H100 NVLink", 80): "h100-pcie-80gb",
        ("NVIDIA H100", 80): "h100-pcie-80gb",
        ("NVIDIA A100 SXM", 80): "a100-sxm-80gb",
        ("NVIDIA A100 NVLink", 80): "a100-pcie-80gb",
        ("NVIDIA A100", 80): "a100-pcie-80gb",
        ("NVIDIA L40", 48): "l40-48gb",
        ("NVIDIA A6000", 48): "rtx-a6000-48gb",
        ("NVIDIA A4000", 16): "rtx-a4000-16gb",
    }
    for (label, vram), gpu_id in expected.items():
        res = catalog.resolve("hyperstack", label, vram)
        assert isinstance(res, Resolved) and res.gpu_id == gpu_id, (label, res)
    # Never an 80 GB card for a reported 40 GB one.
    assert isinstance(catalog.resolve("hyperstack", "NVIDIA A100", 40), Unknown)


def test_unreadable_price_is_rejected() -> None:
    result = hyperstack.parse([_mutated("<span>$0.40</span>", "<span>Sold out</span>")])
    assert "NVIDIA A6000|spot" not in {o.offer_key for o in result.offers}
    assert [r.reason for r in result.rejects if r.offer_key == "NVIDIA A6000|spot"] == [
        "unrecognised price 'Sold out' (spot vm)"]


def test_renamed_price_column_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        hyperstack.parse([_mutated("<span>Pricing Per Hour</span>", "<span>Price</span>")])
    assert err.value.field == "Pricing Per Hour"
    assert err.value.url == "https://www.hyperstack.cloud/gpu-pricing"


def test_renamed_vram_column_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        hyperstack.parse([_mutated("<span>VRAM (GB)</span>", "<span>Memory</span>")])
    assert err.value.field == "VRAM (GB)"


def test_the_2024_table_layout_is_a_parse_error() -> None:
    capture = load_capture(FIXTURES / "hyperstack", OLD_LAYOUT)
    with pytest.raises(ParseError) as err:
        hyperstack.parse([capture])
    assert err.value.field == "Pricing Per Hour"
    assert err.value.snippet is not None and "20240822101707" in err.value.snippet


def test_a_body_that_is_not_the_page_is_a_parse_error() -> None:
    capture = Capture(provider="hyperstack", url=hyperstack.PRICING_URL,
                      body=b"<html><body><h1>Service unavailable</h1></body></html>",
                      fetched_at=datetime(2026, 1, 1, tzinfo=UTC))
    with pytest.raises(ParseError):
        hyperstack.parse([capture])


def test_offline_fetch_serves_the_bundled_page() -> None:
    with HttpClient("hyperstack", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = hyperstack.fetch(client, {})
    assert len(captures) == 1
    capture = captures[0]
    assert capture.body == (SNAP / PAGE).read_bytes()
    assert capture.url == _capture().url == "https://www.hyperstack.cloud/gpu-pricing"
    assert capture.fetched_at == datetime(2025, 7, 24, 0, 14, 16, tzinfo=UTC)
    assert len(hyperstack.parse(captures).offers) == 13
