"""adapters/hyperstack.py on the recorded 2026-08 Hyperstack GPU pricing page (served by the
replay) and the 2025-07 and 2024-08 captures kept in tests/fixtures/hyperstack."""

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
FIX = FIXTURES / "hyperstack"
PAGE = "gpu-pricing_gpu_index_055204a_2026-08-22.html"  # served by the replay
PAGE_2025 = "hyperstack_20250724001416.html"  # tests/fixtures: same layout, an excerpt
OLD_LAYOUT = "hyperstack_20240822101707.html"  # tests/fixtures: a <table>, refused
URL = "https://www.hyperstack.cloud/gpu-pricing"

ON_DEMAND = PricingModel.ON_DEMAND
SPOT = PricingModel.SPOT
NVLINK = Interconnect.NVLINK


def _capture() -> Capture:
    return load_capture(SNAP, PAGE)


def _mutated(old: str, new: str) -> Capture:
    """The recorded page with one string replaced: how a format change would look."""
    return with_replaced(_capture(), old, new, exactly_once=True)


def _parse(capture: Capture | None = None) -> ParseResult:
    return hyperstack.parse([capture or _capture()])


def _offers(result: ParseResult) -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in result.offers}


class TestHyperstackInvariants(OfferInvariants):
    NAME = "hyperstack"
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture(params=["2026", "2025"])
    def offers(self, request: pytest.FixtureRequest) -> list[ParsedOffer]:
        capture = _capture() if request.param == "2026" else load_capture(FIX, PAGE_2025)
        return hyperstack.parse([capture]).offers


# -- the 2026-08 page ---------------------------------------------------------------------------


def test_every_offer() -> None:
    got = {k: (o.price_per_hour, o.vram_gb_per_gpu, o.interconnect)
           for k, o in _offers(_parse()).items()}
    assert got == {
        "NVIDIA H200 SXM|on_demand": (3.99, 141.0, None),
        "NVIDIA H100 SXM|on_demand": (3.20, 80.0, None),
        "NVIDIA H100 NVLink|on_demand": (2.60, 80.0, NVLINK),
        "NVIDIA H100|on_demand": (2.50, 80.0, None),
        "NVIDIA RTX Pro 6000 SE|on_demand": (1.85, 96.0, None),
        "NVIDIA A100 SXM|on_demand": (1.60, 80.0, None),
        "NVIDIA A100 NVLink|on_demand": (1.40, 80.0, NVLINK),  # "&nbsp;$1.40"
        "NVIDIA A100|on_demand": (1.35, 80.0, None),
        "NVIDIA L40|on_demand": (1.00, 48.0, None),
        "NVIDIA A6000|on_demand": (0.50, 48.0, None),
        "NVIDIA A4000|on_demand": (0.15, 16.0, None),
        "NVIDIA B200|on_demand": (6.00, 192.0, None),
        "NVIDIA B300|on_demand": (7.40, 288.0, None),
        "NVIDIA H100 PCIe|spot": (2.00, None, None),  # no on-demand row of that name
        "NVIDIA RTX Pro 6000 SE|spot": (1.48, 96.0, None),
        "NVIDIA A100|spot": (1.08, 80.0, None),
        "NVIDIA L40|spot": (0.80, 48.0, None),  # " $0.80"
        "NVIDIA A6000|spot": (0.40, 48.0, None),
    }
    offers = _parse().offers
    assert [o.pricing_model for o in offers].count(SPOT) == 5
    assert all(o.pricing_model is SPOT for o in offers if o.offer_key.endswith("|spot"))
    assert all(o.gpu_count == 1 and o.price_kind == PriceKind.LISTED and o.region is None
               for o in offers)


def test_h200_on_demand_offer_in_full() -> None:
    key = "NVIDIA H200 SXM|on_demand"
    offer = _offers(_parse())[key]
    assert offer.model_dump() == {
        "provider": "hyperstack", "offer_key": key, "instance_type": None,
        "gpu_label": "NVIDIA H200 SXM", "gpu_count": 1, "vram_gb_per_gpu": 141.0,
        "pricing_model": ON_DEMAND, "price_per_hour": 3.99, "currency": "USD",
        "price_kind": PriceKind.LISTED, "region": None, "zone": None, "vcpus": None,
        "ram_gb": None, "disk_gb": None, "interconnect": None, "interconnect_gbps": None,
        "network": None, "network_gbps": None, "billing_increment_s": None,
        "availability": "unknown", "available_count": None, "source_url": URL,
        "observed_at": datetime(2026, 8, 22, tzinfo=UTC),
        "provider_data": {"price_per_gpu_hour": 3.99, "max_pcpus_per_gpu": 22,
                          "max_ram_gb_per_gpu": 225},
    }


def test_blackwell_rows() -> None:
    offers = _offers(_parse())
    b300, b200 = offers["NVIDIA B300|on_demand"], offers["NVIDIA B200|on_demand"]
    assert b300.provider_data == {"price_per_gpu_hour": 7.4, "max_pcpus_per_gpu": 28,
                                  "max_ram_gb_per_gpu": 240}
    assert b200.provider_data == {"price_per_gpu_hour": 6.0, "max_pcpus_per_gpu": 31,
                                  "max_ram_gb_per_gpu": 256}
    # B300 has no reservation row and no spot row; nothing is invented for it.
    assert {k for k in offers if k.startswith("NVIDIA B300")} == {"NVIDIA B300|on_demand"}
    assert not [r for r in _parse().rejects if (r.offer_key or "").startswith("NVIDIA B300")]


def test_spot_vram_comes_from_the_on_demand_row_of_the_same_name() -> None:
    offers = _offers(_parse())
    assert offers["NVIDIA RTX Pro 6000 SE|spot"].provider_data == {
        "price_per_gpu_hour": 1.48, "vram_from": "on-demand card"}
    assert offers["NVIDIA H100 PCIe|spot"].provider_data == {"price_per_gpu_hour": 2.0}


def test_reservation_lower_bounds_are_rejected() -> None:
    result = _parse()
    assert result.complete is True
    assert [(r.offer_key, r.reason) for r in result.rejects] == [
        (f"{label}|reserved", f"reservation price 'Starting from {price}': a lower bound "
                              "without a stated term")
        for label, price in [
            ("NVIDIA H200 SXM", "$2.79"), ("NVIDIA H100 SXM", "$2.72"),
            ("NVIDIA H100 NVLink", "$1.82"),  # its Reserve cell is text, not a link
            ("NVIDIA H100", "$1.75"), ("NVIDIA A100 SXM", "$1.36"),
            ("NVIDIA RTX Pro 6000 SE", "$1.30"), ("NVIDIA A100 NVLink", "$0.98"),
            ("NVIDIA A100", "$0.95"), ("NVIDIA L40", "$0.70"), ("NVIDIA A6000", "$0.35"),
            ("NVIDIA A4000", "$0.11"), ("NVIDIA B200", "$5.10"),
        ]
    ]
    assert all(o.pricing_model is not PricingModel.RESERVED for o in result.offers)


def test_navigation_cpu_and_ai_studio_prices_are_never_read() -> None:
    labels = {o.gpu_label for o in _parse().offers}
    for fragment in ("NVL72", "GB200", "GB300", "HGX", "cpu", "Llama", "Minute"):
        assert not [label for label in labels if fragment in label], fragment
    assert all(label.startswith("NVIDIA ") for label in labels)


def test_every_raw_label_resolves() -> None:
    catalog = load_catalog()
    expected = {
        ("NVIDIA H200 SXM", 141): "h200-sxm-141gb",
        ("NVIDIA H100 SXM", 80): "h100-sxm-80gb",
        ("NVIDIA H100 NVLink", 80): "h100-pcie-80gb",
        ("NVIDIA H100", 80): "h100-pcie-80gb",
        ("NVIDIA H100 PCIe", None): "h100-pcie-80gb",
        ("NVIDIA RTX Pro 6000 SE", 96): "rtx-pro-6000-96gb",
        ("NVIDIA A100 SXM", 80): "a100-sxm-80gb",
        ("NVIDIA A100 NVLink", 80): "a100-pcie-80gb",
        ("NVIDIA A100", 80): "a100-pcie-80gb",
        ("NVIDIA L40", 48): "l40-48gb",
        ("NVIDIA A6000", 48): "rtx-a6000-48gb",
        ("NVIDIA A4000", 16): "rtx-a4000-16gb",
        ("NVIDIA B200", 192): "b200-sxm-180gb",  # the page says 192 GB; NVIDIA 180 GB
        ("NVIDIA B300", 288): "b300-sxm-288gb",
    }
    offers = _parse().offers
    assert {(o.gpu_label, o.vram_gb_per_gpu) for o in offers} == set(expected)
    for (label, vram), gpu_id in expected.items():
        res = catalog.resolve("hyperstack", label, vram)
        assert isinstance(res, Resolved) and res.gpu_id == gpu_id, (label, res)
    # Never an 80 GB card for a reported 40 GB one.
    assert isinstance(catalog.resolve("hyperstack", "NVIDIA A100", 40), Unknown)


def test_unreadable_price_is_rejected() -> None:
    result = _parse(_mutated("<span>$1.48</span>", "<span>Sold out</span>"))
    assert "NVIDIA RTX Pro 6000 SE|spot" not in _offers(result)
    assert len(result.offers) == 17
    assert [r.reason for r in result.rejects if r.offer_key == "NVIDIA RTX Pro 6000 SE|spot"] \
        == ["unrecognised price 'Sold out' (spot vm)"]


def test_row_without_a_model_is_one_reject() -> None:
    result = _parse(_mutated("<span>NVIDIA B300</span>", "<span></span>"))
    assert "NVIDIA B300|on_demand" not in _offers(result)
    assert len(result.offers) == 17
    assert "row without a GPU model" in [r.reason for r in result.rejects]


def test_renamed_price_column_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        _parse(_mutated("<span>Pricing Per Hour</span>", "<span>Price</span>"))
    assert err.value.field == "Pricing Per Hour"
    assert err.value.url == URL


def test_renamed_vram_column_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        _parse(_mutated("<span>VRAM (GB)</span>", "<span>Memory</span>"))
    assert err.value.field == "VRAM (GB)"


def test_on_demand_card_without_rows_is_a_parse_error() -> None:
    heads = "".join(f'<div class="page-price_card_head_item"><span>{h}</span></div>'
                    for h in ("GPU Model", "VRAM (GB)", "Max pCPUs per GPU",
                              "Max RAM (GB) per GPU", "Pricing Per Hour"))
    body = (f'<div class="page-price_card_main"><div class="page-price_card_head">{heads}'
            '</div><div class="page-price_card_row"></div></div>')
    capture = Capture(provider="hyperstack", url=URL, body=body.encode(),
                      fetched_at=datetime(2026, 8, 22, tzinfo=UTC))
    with pytest.raises(ParseError, match="without rows"):
        hyperstack.parse([capture])


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
    assert capture.url == _capture().url == URL == hyperstack.PRICING_URL
    assert capture.fetched_at == datetime(2026, 8, 22, tzinfo=UTC)
    assert len(hyperstack.parse(captures).offers) == 18


# -- the older captures ------------------------------------------------------------------------


def test_the_2025_excerpt_still_parses() -> None:
    result = _parse(load_capture(FIX, PAGE_2025))
    got = {k: (o.price_per_hour, o.vram_gb_per_gpu, o.interconnect)
           for k, o in _offers(result).items()}
    assert got == {
        "NVIDIA H200 SXM|on_demand": (3.5, 141.0, None),
        "NVIDIA H100 SXM|on_demand": (2.4, 80.0, None),
        "NVIDIA H100 NVLink|on_demand": (1.95, 80.0, NVLINK),
        "NVIDIA H100|on_demand": (1.9, 80.0, None),  # "&nbsp;$1.90"
        "NVIDIA A100 SXM|on_demand": (1.6, 80.0, None),
        "NVIDIA A100 NVLink|on_demand": (1.4, 80.0, NVLINK),
        "NVIDIA A100|on_demand": (1.35, 80.0, None),
        "NVIDIA L40|on_demand": (1.0, 48.0, None),
        "NVIDIA A6000|on_demand": (0.5, 48.0, None),
        "NVIDIA A4000|on_demand": (0.15, 16.0, None),
        "NVIDIA A100|spot": (1.08, 80.0, None),
        "NVIDIA L40|spot": (0.8, 48.0, None),  # " $0.80"
        "NVIDIA A6000|spot": (0.4, 48.0, None),
    }
    assert [r.offer_key for r in result.rejects] == [
        f"{label}|reserved" for label in (
            "NVIDIA H200 SXM", "NVIDIA H100 SXM", "NVIDIA H100 NVLink", "NVIDIA H100",
            "NVIDIA A100 SXM", "NVIDIA A100 NVLink", "NVIDIA A100", "NVIDIA L40",
            "NVIDIA A6000", "NVIDIA A4000")]
    assert _offers(result)["NVIDIA H200 SXM|on_demand"].observed_at \
        == datetime(2025, 7, 24, 0, 14, 16, tzinfo=UTC)


def test_the_2026_page_wins_over_the_2025_one() -> None:
    result = hyperstack.parse([_capture(), load_capture(FIX, PAGE_2025)])
    offers = _offers(result)
    assert offers["NVIDIA H200 SXM|on_demand"].price_per_hour == 3.99
    assert offers["NVIDIA H100|on_demand"].price_per_hour == 2.5
    assert len(offers) == 18  # the 2025 keys all recur in 2026


def test_the_2024_table_layout_is_a_parse_error() -> None:
    capture = load_capture(FIX, OLD_LAYOUT)
    with pytest.raises(ParseError) as err:
        hyperstack.parse([capture])
    assert err.value.field == "Pricing Per Hour"
    assert err.value.snippet is not None and "20240822101707" in err.value.snippet
