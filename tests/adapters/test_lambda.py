"""adapters/lambdalabs.py on both recorded layouts of the Lambda pricing page."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from invariants import OfferInvariants, load_capture, with_replaced

from gpuscout.adapters import lambdalabs
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.errors import ParseError
from gpuscout.core.models import ParsedOffer, ParseResult, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "lambda"
PAGE_2026 = "lambda_20260109103934.html"
PAGE_2024 = "lambda_20241103180910.html"
H100_8X = "8x|NVIDIA H100 SXM|80GB|on_demand"


def _parse(file: str) -> ParseResult:
    return lambdalabs.parse([load_capture(SNAP, file)])


def _mutated(file: str, old: str, new: str) -> Capture:
    """A recorded page with one string replaced: how a format change would look."""
    capture = load_capture(SNAP, file)
    return with_replaced(capture, old, new)


def _by_key(offers: list[ParsedOffer]) -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in offers}


class TestLambdaInvariants(OfferInvariants):
    NAME = "lambda"
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture(params=[PAGE_2026, PAGE_2024])
    def offers(self, request: pytest.FixtureRequest) -> list[ParsedOffer]:
        return _parse(request.param).offers


def test_2026_page_8x_panel() -> None:
    result = _parse(PAGE_2026)
    assert result.rejects == []
    prices = {o.offer_key: (o.price_per_hour, o.provider_data["price_per_gpu_hour"])
              for o in result.offers}
    assert prices == {
        "8x|NVIDIA B200 SXM6|180GB|on_demand": (39.92, 4.99),
        "8x|NVIDIA H100 SXM|80GB|on_demand": (23.92, 2.99),
        "8x|NVIDIA A100 SXM|80GB|on_demand": (14.32, 1.79),
        "8x|NVIDIA A100 SXM|40GB|on_demand": (10.32, 1.29),
        "8x|NVIDIA Tesla V100|16GB|on_demand": (4.4, 0.55),
    }


def test_2026_h100_offer_in_full() -> None:
    offer = _by_key(_parse(PAGE_2026).offers)[H100_8X]
    assert offer.model_dump() == {
        "provider": "lambda", "offer_key": H100_8X, "instance_type": None,
        "gpu_label": "NVIDIA H100 SXM", "gpu_count": 8, "vram_gb_per_gpu": 80.0,
        "pricing_model": PricingModel.ON_DEMAND, "price_per_hour": 23.92, "currency": "USD",
        "price_kind": PriceKind.LISTED, "region": None, "zone": None, "vcpus": 208.0,
        "ram_gb": 1932.7,  # 1800 GiB
        "disk_gb": 24189.3,  # 22 TiB
        "interconnect": None, "interconnect_gbps": None, "network": None, "network_gbps": None,
        "billing_increment_s": None, "availability": "unknown", "available_count": None,
        "source_url": "https://lambda.ai/pricing",
        "observed_at": datetime(2026, 1, 9, 10, 39, 34, tzinfo=UTC),
        "provider_data": {"layout": "2026-tabs", "tab": "8x", "price_per_gpu_hour": 2.99,
                          "ram": "1800 GiB", "storage": "22 TiB SSD"},
    }


def test_2024_table_every_row() -> None:
    result = _parse(PAGE_2024)
    assert {o.offer_key: o.price_per_hour for o in result.offers} == {
        "8x|NVIDIA H100 SXM|80GB|on_demand": 23.92,
        "4x|NVIDIA H100 SXM|80GB|on_demand": 12.36,
        "2x|NVIDIA H100 SXM|80GB|on_demand": 6.38,
        "1x|NVIDIA H100 SXM|80GB|on_demand": 3.29,
        "1x|NVIDIA H100 PCIe|80GB|on_demand": 2.49,
        "8x|NVIDIA A100 SXM|80GB|on_demand": 14.32,
        "8x|NVIDIA A100 SXM|40GB|on_demand": 10.32,
        "1x|NVIDIA A100 SXM|40GB|on_demand": 1.29,
        "4x|NVIDIA A100 PCIe|40GB|on_demand": 5.16,
        "2x|NVIDIA A100 PCIe|40GB|on_demand": 2.58,
        "1x|NVIDIA A100 PCIe|40GB|on_demand": 1.29,
        "1x|NVIDIA A10|24GB|on_demand": 0.75,
        "4x|NVIDIA A6000|48GB|on_demand": 3.2,
        "2x|NVIDIA A6000|48GB|on_demand": 1.6,
        "1x|NVIDIA A6000|48GB|on_demand": 0.8,
        "8x|NVIDIA Tesla V100|16GB|on_demand": 4.4,
        "1x|NVIDIA Quadro RTX 6000|24GB|on_demand": 0.5,
    }
    assert [(r.provider, r.reason) for r in result.rejects] == [("lambda", "contact sales")]
    assert "Reserved 8x NVIDIA H100 SXM" in result.rejects[0].raw


def test_2024_h100_offer_details() -> None:
    offer = _by_key(_parse(PAGE_2024).offers)[H100_8X]
    assert (offer.gpu_count, offer.vram_gb_per_gpu, offer.vcpus, offer.ram_gb, offer.disk_gb) \
        == (8, 80.0, 208.0, 1932.7, 28587.3)  # 1800 GiB, 26 TiB
    assert offer.provider_data["plan"] == "On-demand 8x NVIDIA H100 SXM"
    assert offer.provider_data["price_per_gpu_hour"] == 2.99
    assert offer.source_url == "https://lambdalabs.com/service/gpu-cloud"
    assert offer.observed_at == datetime(2024, 11, 3, 18, 9, 10, tzinfo=UTC)


def test_same_machine_shape_keeps_its_key_across_layouts() -> None:
    keys_2026 = {o.offer_key for o in _parse(PAGE_2026).offers}
    keys_2024 = {o.offer_key for o in _parse(PAGE_2024).offers}
    assert keys_2026 & keys_2024 == {
        "8x|NVIDIA H100 SXM|80GB|on_demand", "8x|NVIDIA A100 SXM|80GB|on_demand",
        "8x|NVIDIA A100 SXM|40GB|on_demand", "8x|NVIDIA Tesla V100|16GB|on_demand",
    }
    # 8x H100 SXM: $2.99 per GPU-hour on both dates.
    for file in (PAGE_2026, PAGE_2024):
        assert _by_key(_parse(file).offers)[H100_8X].provider_data["price_per_gpu_hour"] == 2.99


def test_several_captures_newest_wins_per_key() -> None:
    result = lambdalabs.parse([load_capture(SNAP, PAGE_2026), load_capture(SNAP, PAGE_2024)])
    offers = _by_key(result.offers)
    assert len(offers) == 18  # 17 from 2024 + B200 from 2026
    assert offers[H100_8X].disk_gb == 24189.3  # the 2026 row (22 TiB), not 2024's 26 TiB
    assert offers["1x|NVIDIA A10|24GB|on_demand"].observed_at.year == 2024


def test_row_without_a_price_is_rejected() -> None:
    capture = _mutated(PAGE_2026, "$0.55", "Contact sales")
    result = lambdalabs.parse([capture])
    assert len(result.offers) == 4
    assert [r.reason for r in result.rejects] == ["contact sales"]
    assert 'data-plan="NVIDIA Tesla V100"' in result.rejects[0].raw


def test_renamed_price_column_is_a_parse_error() -> None:
    capture = _mutated(PAGE_2026, 'data-label="PRICE/GPU/HR*"', 'data-label="PRICE/HR*"')
    with pytest.raises(ParseError) as err:
        lambdalabs.parse([capture])
    assert err.value.field == "PRICE/GPU/HR"
    assert err.value.url == "https://lambda.ai/pricing"


def test_tab_without_a_count_is_a_parse_error() -> None:
    capture = _mutated(PAGE_2026, ">8x</button>", ">Eight GPUs</button>")
    with pytest.raises(ParseError) as err:
        lambdalabs.parse([capture])
    assert err.value.field == "tab label"


def test_page_without_a_pricing_table_is_a_parse_error() -> None:
    capture = Capture(provider="lambda", url=lambdalabs.PRICING_URL,
                      body=b"<html><body><h1>Pricing</h1><p>Talk to us.</p></body></html>",
                      fetched_at=datetime(2026, 1, 1, tzinfo=UTC))
    with pytest.raises(ParseError) as err:
        lambdalabs.parse([capture])
    assert err.value.field == "pricing table"
    assert err.value.snippet is not None and "Talk to us" in err.value.snippet


def test_offline_fetch_serves_the_bundled_2026_page() -> None:
    with HttpClient("lambda", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = lambdalabs.fetch(client, {})
    assert len(captures) == 1
    capture = captures[0]
    assert capture.body == (SNAP / PAGE_2026).read_bytes()
    assert capture.url == load_capture(SNAP, PAGE_2026).url == "https://lambda.ai/pricing"
    assert capture.fetched_at == datetime(2026, 1, 9, 10, 39, 34, tzinfo=UTC)
    assert len(lambdalabs.parse(captures).offers) == 5


def test_a_per_instance_price_is_never_read_as_per_gpu() -> None:
    # The 2023 page printed instance prices ("$20.72 / hr"); such a row must not become an
    # offer 8 times too expensive.
    capture = _mutated(PAGE_2024, "$2.99 / GPU / hr", "$23.92 / hr")
    result = lambdalabs.parse([capture])
    assert H100_8X not in _by_key(result.offers)
    assert "unrecognised price '$23.92 / hr'" in [r.reason for r in result.rejects]
