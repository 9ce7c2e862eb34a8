"""adapters/crusoe.py on the recorded 2026-08 and 2025-12 Crusoe pricing pages (same layout), and
the refused 2025-05 layout."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from invariants import FIXTURES, OfferInvariants, load_capture, with_replaced

from gpuscout.adapters import crusoe
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, Unknown, load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import Interconnect, ParsedOffer, ParseResult, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "crusoe"
PAGE = "crusoe_20251215002446.html"  # 2025-12 Wayback excerpt, cut inside the A100 item
PAGE_2026 = "crusoe_gpu_index_055204a_2026-08-22.html"  # whole GPU list, served by the replay
URL = "https://www.crusoe.ai/cloud/pricing"
OLD_LAYOUT = "crusoe_20250521220413.html"  # tests/fixtures/crusoe: a <table>, refused
H100_SPOT = "NVIDIA H100 HGX|80GB|spot"


def _capture() -> Capture:
    return load_capture(SNAP, PAGE)


def _mutated(old: str, new: str) -> Capture:
    """The recorded page with one string replaced: how a format change would look."""
    capture = _capture()
    return with_replaced(capture, old, new)


def _parse() -> ParseResult:
    return crusoe.parse([_capture()])


def _capture_2026() -> Capture:
    return load_capture(SNAP, PAGE_2026)


def _mutated_2026(old: str, new: str) -> Capture:
    return with_replaced(_capture_2026(), old, new)


def _parse_2026() -> ParseResult:
    return crusoe.parse([_capture_2026()])


class TestCrusoeInvariants(OfferInvariants):
    NAME = "crusoe"
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture(params=[PAGE, PAGE_2026])
    def offers(self, request: pytest.FixtureRequest) -> list[ParsedOffer]:
        return crusoe.parse([load_capture(SNAP, request.param)]).offers


def test_every_offer() -> None:
    got = {o.offer_key: (o.gpu_count, o.price_per_hour, o.pricing_model, o.price_kind,
                         o.vram_gb_per_gpu, o.interconnect) for o in _parse().offers}
    assert got == {
        "NVIDIA H200 HGX|141GB|on_demand": (1, 4.29, PricingModel.ON_DEMAND, PriceKind.LISTED,
                                            141.0, Interconnect.NVSWITCH),
        "NVIDIA H100 HGX|80GB|on_demand": (1, 3.9, PricingModel.ON_DEMAND, PriceKind.LISTED,
                                           80.0, Interconnect.NVSWITCH),
        H100_SPOT: (1, 1.6, PricingModel.SPOT, PriceKind.OBSERVED, 80.0, Interconnect.NVSWITCH),
    }


def test_h100_spot_offer_in_full() -> None:
    offer = next(o for o in _parse().offers if o.offer_key == H100_SPOT)
    assert offer.model_dump() == {
        "provider": "crusoe", "offer_key": H100_SPOT, "instance_type": None,
        "gpu_label": "NVIDIA H100 HGX", "gpu_count": 1, "vram_gb_per_gpu": 80.0,
        "pricing_model": PricingModel.SPOT, "price_per_hour": 1.6, "currency": "USD",
        "price_kind": PriceKind.OBSERVED, "region": None, "zone": None, "vcpus": None,
        "ram_gb": None, "disk_gb": None, "interconnect": Interconnect.NVSWITCH,
        "interconnect_gbps": None, "network": None, "network_gbps": None,
        "billing_increment_s": None, "availability": "unknown", "available_count": None,
        "source_url": "https://www.crusoe.ai/cloud/pricing",
        "observed_at": datetime(2025, 12, 15, 0, 24, 46, tzinfo=UTC),
        "provider_data": {"column": "current spot", "tags": "80GB, HGX",
                          "price_per_gpu_hour": 1.6},
    }


def test_contact_sales_and_the_cut_item_are_rejected() -> None:
    result = _parse()
    assert [(r.offer_key, r.reason) for r in result.rejects] == [
        ("NVIDIA GB200 NVL72|186GB|on_demand", "contact sales (on-demand)"),
        ("NVIDIA GB200 NVL72|186GB|spot", "contact sales (current spot)"),
        ("NVIDIA B200 HGX|180GB|on_demand", "contact sales (on-demand)"),
        ("NVIDIA B200 HGX|180GB|spot", "contact sales (current spot)"),
        ("NVIDIA H200 HGX|141GB|spot", "contact sales (current spot)"),
        (None, "'NVIDIA A100' has no price cells"),
    ]
    assert all(r.provider == "crusoe" for r in result.rejects)
    # The excerpt stops inside the A100 item: offers not read must not be closed.
    assert result.complete is False


def test_an_item_without_prices_inside_the_list_is_no_cut() -> None:
    # Move the cut A100 item to the front: still a reject, but the list ends with whole items.
    capture = _capture()
    body = capture.body
    cut = body.rindex(b'<div role="listitem"')
    first = body.index(b'<div role="listitem"')
    # close what the cut left open: heading wrapper, link, item wrapper, list item
    moved = body[:first] + body[cut:] + b"</div></a></div></div>" + body[first:cut]
    result = crusoe.parse([capture.model_copy(update={"body": moved})])
    assert result.complete is True
    assert [r.reason for r in result.rejects][0] == "'NVIDIA A100' has no price cells"
    assert len(result.offers) == 3


def test_a_whole_page_is_complete() -> None:
    # Dropping the cut A100 item leaves four whole items.
    capture = _capture()
    cut = capture.body.rindex(b'<div role="listitem"')
    result = crusoe.parse([capture.model_copy(update={"body": capture.body[:cut]})])
    assert result.complete is True
    assert len(result.offers) == 3


def test_every_raw_label_resolves_or_is_expected_unknown() -> None:
    catalog = load_catalog()
    # label (heading + system tag) and VRAM tag, for every item of the snapshot
    expected = {
        ("NVIDIA GB200 NVL72", 186): "gb200-186gb",
        ("NVIDIA B200 HGX", 180): "b200-sxm-180gb",
        ("NVIDIA H200 HGX", 141): "h200-sxm-141gb",
        ("NVIDIA H100 HGX", 80): "h100-sxm-80gb",
    }
    for (label, vram), gpu_id in expected.items():
        res = catalog.resolve("crusoe", label, vram)
        assert isinstance(res, Resolved) and res.gpu_id == gpu_id, (label, res)
    # The cut A100 item has no tags: the heading alone named SXM and PCIe cards on the 2025-05
    # page, so it must stay unknown.
    assert isinstance(catalog.resolve("crusoe", "NVIDIA A100"), Unknown)


def test_price_not_per_gpu_hour_is_rejected() -> None:
    result = crusoe.parse([_mutated("$1.60/GPU-hr", "$1.60/hr")])
    assert H100_SPOT not in {o.offer_key for o in result.offers}
    bad = [r for r in result.rejects if r.offer_key == H100_SPOT]
    assert [r.reason for r in bad] == ["unrecognised price '$1.60/hr' (current spot)"]


def test_renamed_price_cell_class_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        crusoe.parse([_mutated('class="pricing-rich w-richtext"', 'class="price-rich"')])
    assert err.value.field == "pricing-rich"
    assert err.value.url == "https://www.crusoe.ai/cloud/pricing"


def test_renamed_on_demand_heading_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        crusoe.parse([_mutated(">On-demand</div>", ">Hourly</div>")])
    assert err.value.field == "On-demand"


def test_the_2025_05_table_layout_is_a_parse_error() -> None:
    capture = load_capture(FIXTURES / "crusoe", OLD_LAYOUT)
    with pytest.raises(ParseError) as err:
        crusoe.parse([capture])
    assert err.value.field == "GPU model"
    assert err.value.url == "https://crusoe.ai/cloud/pricing"
    assert err.value.snippet is not None and "20250521220413" in err.value.snippet


def test_a_body_that_is_not_the_page_is_a_parse_error() -> None:
    capture = Capture(provider="crusoe", url=crusoe.PRICING_URL, body=b'{"error": "busy"}',
                      fetched_at=datetime(2026, 1, 1, tzinfo=UTC))
    with pytest.raises(ParseError):
        crusoe.parse([capture])


def test_several_captures_newest_wins_per_key() -> None:
    old = _capture()
    new = _mutated("$3.90/GPU-hr", "$3.50/GPU-hr").model_copy(
        update={"fetched_at": datetime(2026, 1, 15, tzinfo=UTC)})
    offers = {o.offer_key: o for o in crusoe.parse([new, old]).offers}
    assert offers["NVIDIA H100 HGX|80GB|on_demand"].price_per_hour == 3.5
    assert len(offers) == 3


def test_offline_fetch_serves_the_newest_bundled_page() -> None:
    with HttpClient("crusoe", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = crusoe.fetch(client, {})
    assert len(captures) == 1
    capture = captures[0]
    assert capture.body == (SNAP / PAGE_2026).read_bytes()
    assert capture.url == _capture_2026().url == _capture().url == URL
    assert capture.fetched_at == datetime(2026, 8, 22, tzinfo=UTC)
    assert len(crusoe.parse(captures).offers) == 6


# -- the 2026-08-22 page ------------------------------------------------------------------------

ON_DEMAND_2026 = {
    # key: (price per GPU-hour, VRAM, interconnect)
    "NVIDIA H200 HGX|141GB|on_demand": (4.29, 141.0, Interconnect.NVSWITCH),
    "NVIDIA H100 HGX|80GB|on_demand": (3.9, 80.0, Interconnect.NVSWITCH),
    "NVIDIA A100 SXM|80GB|on_demand": (2.3, 80.0, None),
    "NVIDIA A100 PCIe|80GB|on_demand": (2.0, 80.0, None),
    "NVIDIA L40S|48GB|on_demand": (1.5, 48.0, None),
    "AMD MI300X|192GB|on_demand": (3.45, 192.0, None),
}


def test_2026_every_offer() -> None:
    result = _parse_2026()
    assert {o.offer_key: (o.price_per_hour, o.vram_gb_per_gpu, o.interconnect)
            for o in result.offers} == ON_DEMAND_2026
    assert all(o.gpu_count == 1 for o in result.offers)
    assert all(o.pricing_model is PricingModel.ON_DEMAND for o in result.offers)
    assert all(o.price_kind is PriceKind.LISTED for o in result.offers)
    assert {o.observed_at for o in result.offers} == {datetime(2026, 8, 22, tzinfo=UTC)}
    assert result.complete is True  # the GPU list ends with a whole item


def test_2026_a100_form_factors_stay_apart() -> None:
    offers = {o.offer_key: o for o in _parse_2026().offers}
    sxm, pcie = offers["NVIDIA A100 SXM|80GB|on_demand"], offers["NVIDIA A100 PCIe|80GB|on_demand"]
    assert (sxm.gpu_label, sxm.provider_data["tags"]) == ("NVIDIA A100 SXM", "80GB, SXM")
    assert (pcie.gpu_label, pcie.provider_data["tags"]) == ("NVIDIA A100 PCIe", "80GB, PCIe")


def test_2026_empty_tag_adds_nothing_to_the_label() -> None:
    offer = next(o for o in _parse_2026().offers if o.gpu_label == "NVIDIA L40S")
    assert offer.offer_key == "NVIDIA L40S|48GB|on_demand"
    assert offer.provider_data == {"column": "on-demand", "tags": "48GB",
                                   "price_per_gpu_hour": 1.5}


def test_2026_contact_sales_rejects() -> None:
    rejects = [(r.offer_key, r.reason) for r in _parse_2026().rejects]
    spot = "contact sales (current spot)"
    assert rejects == [
        ("NVIDIA GB200 NVL72|186GB|on_demand", "contact sales (on-demand)"),
        ("NVIDIA GB200 NVL72|186GB|spot", spot),
        ("NVIDIA B200 HGX|180GB|on_demand", "contact sales (on-demand)"),
        ("NVIDIA B200 HGX|180GB|spot", spot),
        ("NVIDIA H200 HGX|141GB|spot", spot),
        ("NVIDIA H100 HGX|80GB|spot", spot),
        ("NVIDIA A100 SXM|80GB|spot", spot),
        ("NVIDIA A100 PCIe|80GB|spot", spot),
        ("NVIDIA L40S|48GB|spot", spot),
        ("AMD MI355X|288GB|on_demand", "contact sales (on-demand)"),
        ("AMD MI355X|288GB|spot", spot),
        ("AMD MI300X|192GB|spot", spot),
    ]


def test_2026_lookalike_lists_are_not_read() -> None:
    # Self-Serve Deployments prices NVIDIA H100/H200 (HGX) at a bare "$5.50"/"$6.00" for a
    # managed product; CPU rows are per vCPU-hour; inference rows per million tokens.
    prices = {o.price_per_hour for o in _parse_2026().offers}
    assert not prices & {5.5, 6.0, 0.04, 0.09}


def test_2026_every_label_resolves() -> None:
    catalog = load_catalog()
    expected = {
        ("NVIDIA GB200 NVL72", 186): "gb200-186gb",
        ("NVIDIA B200 HGX", 180): "b200-sxm-180gb",
        ("NVIDIA H200 HGX", 141): "h200-sxm-141gb",
        ("NVIDIA H100 HGX", 80): "h100-sxm-80gb",
        ("NVIDIA A100 SXM", 80): "a100-sxm-80gb",
        ("NVIDIA A100 PCIe", 80): "a100-pcie-80gb",
        ("NVIDIA L40S", 48): "l40s-48gb",
        ("AMD MI355X", 288): "mi355x-288gb",
        ("AMD MI300X", 192): "mi300x-192gb",
    }
    for (label, vram), gpu_id in expected.items():
        res = catalog.resolve("crusoe", label, vram)
        assert isinstance(res, Resolved) and res.gpu_id == gpu_id, (label, res)


def test_2026_renamed_gpu_heading_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as err:
        crusoe.parse([_mutated_2026(">GPU model</div>", ">Accelerator</div>")])
    assert err.value.field == "GPU model"
    assert err.value.url == URL


def test_2026_renamed_spot_heading_is_rejected_not_read_as_spot() -> None:
    result = crusoe.parse([_mutated_2026(">Current spot</div>", ">Reserved</div>")])
    assert len(result.offers) == 6  # the on-demand column still reads
    assert "unknown price column 'reserved'" in {r.reason for r in result.rejects}
    assert all(o.pricing_model is PricingModel.ON_DEMAND for o in result.offers)


def test_2026_empty_gpu_list_is_a_parse_error() -> None:
    capture = _capture_2026()
    body = capture.body
    start = body.index(b'<div role="list" class="w-dyn-items">') + len(
        b'<div role="list" class="w-dyn-items">')
    end = body.index(b'<div id="gpu-instances"')
    # keep the list's wrapper, drop its nine items (and the closers they leave)
    emptied = body[:start] + b"</div></div></div></div>" + body[end:]
    with pytest.raises(ParseError) as err:
        crusoe.parse([capture.model_copy(update={"body": emptied})])
    assert err.value.field == "prixing-item"


def test_2026_one_odd_price_is_a_reject() -> None:
    result = crusoe.parse([_mutated_2026("$3.45/GPU-hr", "$3.45/GPU-month")])
    assert "AMD MI300X|192GB|on_demand" not in {o.offer_key for o in result.offers}
    assert len(result.offers) == 5
    assert [r.reason for r in result.rejects if r.offer_key == "AMD MI300X|192GB|on_demand"] == [
        "unrecognised price '$3.45/GPU-month' (on-demand)"]


def test_both_captures_newest_wins_per_key() -> None:
    result = crusoe.parse([_capture_2026(), _capture()])
    offers = {o.offer_key: o for o in result.offers}
    assert set(offers) == set(ON_DEMAND_2026) | {H100_SPOT}
    newer = datetime(2026, 8, 22, tzinfo=UTC)
    assert offers["NVIDIA H100 HGX|80GB|on_demand"].observed_at == newer
    assert offers["NVIDIA H200 HGX|141GB|on_demand"].observed_at == newer
    # The 2026 page prints no spot price: the 2025-12 spot offer is the only one for that key.
    assert (offers[H100_SPOT].price_per_hour, offers[H100_SPOT].observed_at) == (
        1.6, datetime(2025, 12, 15, 0, 24, 46, tzinfo=UTC))
    assert result.complete is False  # the 2025-12 excerpt is cut
