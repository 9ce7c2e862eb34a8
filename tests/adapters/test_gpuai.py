"""adapters/gpuai.py on the two pages of the pricing API recorded 2026-08-22."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from invariants import OfferInvariants, load_capture, with_json_edit

from gpuscout.adapters import gpuai
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import Availability, ParsedOffer, PricingModel

SNAP = SNAPSHOTS_DIR / "gpuai"
PAGE1 = "pricing_page1_gpu_index_055204a_2026-08-22.json"
PAGE2 = "pricing_page2_gpu_index_055204a_2026-08-22.json"
BASE = "https://api.gpu.ai/v1/pricing?limit=200"


def _page(file: str, edit: Any = None) -> Capture:
    return with_json_edit(load_capture(SNAP, file), edit)


def _both() -> list[Capture]:
    return [_page(PAGE1), _page(PAGE2)]


class TestGpuaiInvariants(OfferInvariants):
    NAME = "gpuai"
    # gpu.ai names these without the form factor (or VRAM) the catalog needs
    EXPECTED_UNKNOWN = frozenset({"a100_40gb", "a100_80gb", "v100"})

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return gpuai.parse(_both()).offers


def test_both_pages_read_whole_every_row_an_offer() -> None:
    result = gpuai.parse(_both())
    assert (len(result.offers), result.rejects, result.complete) == (22, [], True)
    got = {(o.gpu_label, o.gpu_count, o.region): o.price_per_hour for o in result.offers}
    assert got == {
        ("a100_40gb", 1, "asia-pacific"): 0.6, ("a100_80gb", 1, "asia-pacific"): 0.81,
        ("b200", 1, "us-west"): 5.32, ("b200", 1, "us-east"): 6.79, ("b200", 8, "us-east"): 57.02,
        ("b300", 8, "ca-central"): 50.62, ("h100_nvl", 1, "eu-east"): 2.54,
        ("h100_pcie", 1, "asia-pacific"): 2.14, ("h100_sxm", 2, "us-west"): 3.47,
        ("h200_nvl", 1, "asia-pacific"): 3.34, ("h200_sxm", 1, "india-south"): 3.99,
        ("l4", 1, "india-south"): 0.44, ("l40", 1, "ca-central"): 0.8,
        ("l40s", 1, "asia-pacific"): 0.79, ("rtx_3090", 7, "eu-west"): 1.5,
        ("rtx_2000_ada", 1, "eu-east"): 0.24, ("rtx_5090", 4, "ca-central"): 154.67,
        ("rtx_5090", 1, "asia-pacific"): 0.41, ("rtx_6000_ada", 1, "us-central"): 0.65,
        ("rtx_pro_6000", 1, "eu-east"): 2.09, ("rtx_pro_4500", 1, "ca-central"): 0.31,
        ("v100", 1, "ca-central"): 0.14,
    }
    assert {o.pricing_model for o in result.offers} == {PricingModel.ON_DEMAND}


def test_the_price_is_the_whole_configuration() -> None:
    offers = {o.offer_key: o for o in gpuai.parse(_both()).offers}
    b300 = offers["b300|8x|ca-central|a0a48d83d5f6|on_demand"]
    assert (b300.gpu_count, b300.price_per_hour, b300.provider_data["price_per_gpu_hour"]) == (
        8, 50.62, 6.3275)
    assert (b300.vcpus, b300.ram_gb, b300.disk_gb) == (224, 1920, 1000)
    assert (b300.availability, b300.available_count) == (Availability.IN_STOCK, 1)
    assert b300.provider_data["capacity_class"] == "secure"
    assert b300.provider_data["deployment_type"] == "vm"
    h100 = offers["h100_sxm|2x|us-west|ec95461f7fc5|on_demand"]
    assert (h100.price_per_hour, h100.provider_data["price_per_gpu_hour"]) == (3.47, 1.735)
    assert h100.observed_at == datetime(2026, 8, 22, tzinfo=UTC)


def test_labels_resolve_to_the_form_factor_they_name() -> None:
    catalog = load_catalog()
    got = {label: getattr(catalog.resolve("gpuai", label), "gpu_id", None)
           for label in ("h100_sxm", "h100_pcie", "h100_nvl", "h200_sxm", "h200_nvl",
                         "rtx_pro_6000", "rtx_6000_ada")}
    assert got == {"h100_sxm": "h100-sxm-80gb", "h100_pcie": "h100-pcie-80gb",
                   "h100_nvl": "h100-nvl-94gb", "h200_sxm": "h200-sxm-141gb",
                   "h200_nvl": "h200-nvl-141gb", "rtx_pro_6000": "rtx-pro-6000-96gb",
                   "rtx_6000_ada": "rtx-6000-ada-48gb"}


def test_a_page_whose_cursor_was_not_followed_leaves_the_listing_incomplete() -> None:
    result = gpuai.parse([_page(PAGE1)])
    assert (len(result.offers), result.complete) == (16, False)
    # and a tail page without the first page is no whole listing either
    assert gpuai.parse([_page(PAGE2)]).complete is False


def test_a_row_repeated_on_the_next_page_counts_once() -> None:
    first = json.loads(_page(PAGE1).body)["data"][0]
    result = gpuai.parse([_page(PAGE1), _page(PAGE2, lambda d: d["data"].append(first))])
    assert (len(result.offers), result.complete) == (22, True)


@pytest.mark.parametrize(("edit", "reason"), [
    (lambda r: r.update(tier="reserved"), "tier 'reserved' is neither on_demand nor spot"),
    (lambda r: r.update(currency="EUR"), "currency 'EUR' is not USD"),
    (lambda r: r.update(price_per_hour="0.6"), "price_per_hour is not a price: '0.6'"),
    (lambda r: r.update(gpu_count=0), "row without a gpu_type and a whole gpu_count: "
                                      "'a100_40gb' x 0"),
    (lambda r: r.update(offering_id=""), "row without a region or an offering_id"),
])
def test_a_bad_row_is_a_reject_and_the_others_load(edit: Any, reason: str) -> None:
    result = gpuai.parse([_page(PAGE1, lambda d: edit(d["data"][0])), _page(PAGE2)])
    assert [r.reason for r in result.rejects] == [reason]
    assert len(result.offers) == 21


def test_a_spot_row_is_a_spot_offer() -> None:
    result = gpuai.parse([_page(PAGE1, lambda d: d["data"][0].update(tier="spot")),
                          _page(PAGE2)])
    spot = [o for o in result.offers if o.pricing_model is PricingModel.SPOT]
    assert [o.offer_key for o in spot] == ["a100_40gb|1x|asia-pacific|57886581e01b|spot"]


@pytest.mark.parametrize(("edit", "field"), [
    (lambda d: d.pop("next_cursor"), "next_cursor"),
    (lambda d: d.update(next_cursor=""), "next_cursor"),
    (lambda d: d.pop("data"), "data"),
    (lambda d: [r.update(price=r.pop("price_per_hour")) for r in d["data"]], "price_per_hour"),
    (lambda d: [r.update(gpu=r.pop("gpu_type")) for r in d["data"]], "gpu_type"),
])
def test_a_reshaped_page_is_a_parse_error(edit: Any, field: str) -> None:
    with pytest.raises(ParseError) as err:
        gpuai.parse([_page(PAGE1, edit), _page(PAGE2)])
    assert err.value.field == field


def test_offline_fetch_follows_the_recorded_cursor_to_the_last_page() -> None:
    with HttpClient("gpuai", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = gpuai.fetch(client, {})
    cursor = json.loads((SNAP / PAGE1).read_bytes())["next_cursor"]
    assert [c.url for c in captures] == [BASE, f"{BASE}&cursor={cursor}"]
    assert gpuai.parse(captures).complete


def test_fetch_pages_on_until_the_cursor_is_null_whatever_the_page_size() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        cursor = request.url.params.get("cursor")
        following = {None: "c1", "c1": "c2", "c2": None}[cursor]
        # short pages (one row of 200) are not the end: only a null cursor is
        return httpx.Response(200, json={"data": [], "next_cursor": following})

    with HttpClient("gpuai", transport=httpx.MockTransport(handler)) as client:
        captures = gpuai.fetch(client, {})
    assert seen == [BASE, f"{BASE}&cursor=c1", f"{BASE}&cursor=c2"]
    assert gpuai.parse(captures).complete


def test_fetch_stops_on_a_cursor_that_repeats_and_the_listing_is_incomplete() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"data": [], "next_cursor": "same"})

    with HttpClient("gpuai", transport=httpx.MockTransport(handler)) as client:
        captures = gpuai.fetch(client, {})
    assert len(captures) == 2
    assert gpuai.parse(captures).complete is False
