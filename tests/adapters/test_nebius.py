"""adapters/nebius.py on the recorded 2026-07 Nebius prices page (and the 2024-11 layout)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from invariants import FIXTURES, OfferInvariants, load_capture, with_replaced

from gpuscout.adapters import nebius
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import Interconnect, ParsedOffer, ParseResult, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "nebius"
PAGE = "nebius_20260712235400.html"
OLD_LAYOUT = "nebius_20241115043809.html"  # tests/fixtures/nebius: pc-table layout, refused

ON_DEMAND = PricingModel.ON_DEMAND
SPOT = PricingModel.SPOT
NVSWITCH = Interconnect.NVSWITCH


def _capture() -> Capture:
    return load_capture(SNAP, PAGE)


def _mutated(old: str, new: str) -> Capture:
    """The recorded page with one string replaced: how a format change would look."""
    capture = _capture()
    return with_replaced(capture, old, new, exactly_once=True)


def _parse() -> ParseResult:
    return nebius.parse([_capture()])


class TestNebiusInvariants(OfferInvariants):
    NAME = "nebius"
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return _parse().offers


def test_every_offer() -> None:
    got = {o.offer_key: (o.pricing_model, o.price_per_hour, o.vcpus, o.ram_gb, o.interconnect)
           for o in _parse().offers}
    assert got == {
        "NVIDIA HGX B300|spot": (SPOT, 4.3, 24, 346, NVSWITCH),
        "NVIDIA HGX B300|on_demand": (ON_DEMAND, 7.85, 24, 346, NVSWITCH),
        "NVIDIA HGX B200|spot": (SPOT, 3.95, 20, 224, NVSWITCH),
        "NVIDIA HGX B200|on_demand": (ON_DEMAND, 7.15, 20, 224, NVSWITCH),
        "NVIDIA HGX H200|spot": (SPOT, 2.45, 16, 200, NVSWITCH),
        "NVIDIA HGX H200|on_demand": (ON_DEMAND, 4.5, 16, 200, NVSWITCH),
        "NVIDIA HGX H100|spot": (SPOT, 2.15, 16, 200, NVSWITCH),
        "NVIDIA HGX H100|on_demand": (ON_DEMAND, 3.85, 16, 200, NVSWITCH),
        "NVIDIA RTX PRO 6000|spot": (SPOT, 0.95, 24, 218, None),
        "NVIDIA RTX PRO 6000|on_demand": (ON_DEMAND, 1.8, 24, 218, None),
    }
    offers = _parse().offers
    assert all(o.gpu_count == 1 and o.price_kind == PriceKind.LISTED and o.region is None
               and o.vram_gb_per_gpu is None for o in offers)


def test_hgx_h100_on_demand_offer_in_full() -> None:
    key = "NVIDIA HGX H100|on_demand"
    offer = next(o for o in _parse().offers if o.offer_key == key)
    assert offer.model_dump() == {
        "provider": "nebius", "offer_key": key, "instance_type": None,
        "gpu_label": "NVIDIA HGX H100", "gpu_count": 1, "vram_gb_per_gpu": None,
        "pricing_model": ON_DEMAND, "price_per_hour": 3.85, "currency": "USD",
        "price_kind": PriceKind.LISTED, "region": None, "zone": None, "vcpus": 16.0,
        "ram_gb": 200.0, "disk_gb": None, "interconnect": NVSWITCH, "interconnect_gbps": None,
        "network": None, "network_gbps": None, "billing_increment_s": None,
        "availability": "unknown", "available_count": None,
        "source_url": "https://nebius.com/prices",
        "observed_at": datetime(2026, 7, 12, 23, 54, tzinfo=UTC),
        "provider_data": {"price_per_gpu_hour": 3.85},
    }


def test_contact_us_and_from_prices_are_rejected_dashes_are_not_offers() -> None:
    result = _parse()
    assert result.complete is True
    lower_bound = "is the lowest over shapes"
    assert [(r.offer_key, r.reason) for r in result.rejects] == [
        ("NVIDIA GB300 NVL72|on_demand", "contact us (on-demand, gpu-hour)"),
        ("NVIDIA GB200 NVL72|on_demand", "contact us (on-demand, gpu-hour)"),
        ("NVIDIA L40S with Intel CPU|spot", f"price 'from $0.90' {lower_bound} (vCPUs 16-192, "
                                            "RAM GB 96-1152), not the price of one shape"),
        ("NVIDIA L40S with Intel CPU|on_demand", f"price 'from $1.82' {lower_bound} (vCPUs "
                                                 "16-192, RAM GB 96-1152), not the price of "
                                                 "one shape"),
        ("NVIDIA L40S with AMD CPU|spot", f"price 'from $0.74' {lower_bound} (vCPUs 8-40, RAM "
                                          "GB 32-160), not the price of one shape"),
        ("NVIDIA L40S with AMD CPU|on_demand", f"price 'from $1.55' {lower_bound} (vCPUs 8-40, "
                                               "RAM GB 32-160), not the price of one shape"),
    ]
    # "––" in the preemptible column of the NVL72 rows: not offered, neither offer nor reject.
    keys = {o.offer_key for o in result.offers} | {r.offer_key for r in result.rejects}
    assert "NVIDIA GB300 NVL72|spot" not in keys


def test_every_raw_label_resolves_or_is_expected_unknown() -> None:
    catalog = load_catalog()
    expected = {
        "NVIDIA GB200 NVL72": "gb200-186gb",
        "NVIDIA HGX B300": "b300-sxm-288gb",
        "NVIDIA HGX B200": "b200-sxm-180gb",
        "NVIDIA HGX H200": "h200-sxm-141gb",
        "NVIDIA HGX H100": "h100-sxm-80gb",
        "NVIDIA RTX PRO 6000": "rtx-pro-6000-96gb",
        "NVIDIA L40S with Intel CPU": "l40s-48gb",
        "NVIDIA L40S with AMD CPU": "l40s-48gb",
    }
    for label, gpu_id in expected.items():
        res = catalog.resolve("nebius", label)
        assert isinstance(res, Resolved) and res.gpu_id == gpu_id, (label, res)
    # GB300 joined the catalog: the NVL72 rack's superchip.
    res = catalog.resolve("nebius", "NVIDIA GB300 NVL72")
    assert isinstance(res, Resolved) and res.gpu_id == "gb300-288gb"


def test_a_row_with_one_price_cell_missing_is_rejected() -> None:
    cell = ('<div class="pc-highlight-table-block__cell" style="text-align:left;align-items:'
            'flex-start;width:calc(var(--block-width) * 0.16666666666666666)"><div><p>$0.95</p>'
            '</div></div>')
    result = nebius.parse([_mutated(cell, "")])
    assert "NVIDIA RTX PRO 6000|spot" not in {o.offer_key for o in result.offers}
    assert [r.reason for r in result.rejects if "RTX PRO 6000" in r.raw] == [
        "expected 5 cells, found 4"]


def test_renamed_on_demand_column_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        nebius.parse([_mutated("<p>On-demand, GPU-hour</p>", "<p>On-demand, per hour</p>")])
    assert err.value.field == "On-demand, GPU-hour"
    assert err.value.url == "https://nebius.com/prices"


def test_renamed_table_class_is_a_parse_error() -> None:
    capture = _capture()
    body = capture.body.replace(b"pc-highlight-table-block__table", b"pc-price-table")
    with pytest.raises(ParseError) as err:
        nebius.parse([capture.model_copy(update={"body": body})])
    assert err.value.field == "GPU-hour"


def test_the_2024_layout_is_a_parse_error() -> None:
    capture = load_capture(FIXTURES / "nebius", OLD_LAYOUT)
    with pytest.raises(ParseError) as err:
        nebius.parse([capture])
    assert err.value.field == "GPU-hour"
    assert err.value.snippet is not None and "20241115043809" in err.value.snippet


def test_offline_fetch_serves_the_bundled_page() -> None:
    with HttpClient("nebius", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = nebius.fetch(client, {})
    assert len(captures) == 1
    capture = captures[0]
    assert capture.body == (SNAP / PAGE).read_bytes()
    assert capture.url == _capture().url == "https://nebius.com/prices"
    assert capture.fetched_at == datetime(2026, 7, 12, 23, 54, tzinfo=UTC)
    assert len(nebius.parse(captures).offers) == 10
