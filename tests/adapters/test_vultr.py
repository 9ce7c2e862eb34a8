"""adapters/vultr.py on the (fixture-derived) plan listings bundled as the Vultr snapshot."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from invariants import OfferInvariants, load_capture

from gpuscout.adapters import vultr
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import ParsedOffer, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "vultr"
VMS = "gpuhunt_fixture_plans_type_all.json"
METAL = "gpuhunt_fixture_plans_metal.json"
VMS_URL = "https://api.vultr.com/v2/plans?type=all&per_page=500"
METAL_URL = "https://api.vultr.com/v2/plans-metal?per_page=500"
GPU_IDS = {"NVIDIA_A100": "a100-pcie-80gb", "vbm-112c-2048gb-8-h100-gpu": "h100-sxm-80gb",
           "vbm-256c-2048gb-8-mi300x-gpu": "mi300x-192gb"}


def _captures() -> list[Capture]:
    return [load_capture(SNAP, VMS), load_capture(SNAP, METAL)]


def _by_key(offers: list[ParsedOffer]) -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in offers}


def _doc(file: str) -> dict[str, Any]:
    return json.loads((SNAP / file).read_bytes())


def _with(file: str, doc: Any) -> Capture:
    return load_capture(SNAP, file).model_copy(update={"body": json.dumps(doc).encode()})


class TestVultrInvariants(OfferInvariants):
    NAME = "vultr"
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return vultr.parse(_captures()).offers


def test_bundled_listings_counts() -> None:
    result = vultr.parse(_captures())
    assert (len(result.offers), len(result.rejects), result.complete) == (7, 0, True)
    assert {o.currency for o in result.offers} == {"USD"}
    assert {o.price_kind for o in result.offers} == {PriceKind.LISTED}


@pytest.mark.parametrize(("key", "count", "vram", "price", "share"), [
    ("vcg-a100-1c-6g-4vram|ewr|on_demand", 0.05, None, 0.123, 4),
    ("vcg-a100-6c-60g-40vram|ewr|on_demand", 0.5, None, 1.397, 40),
    ("vcg-a100-12c-120g-80vram|ewr|on_demand", 1, 80.0, 2.397, 80),
])
def test_cloud_gpu_plans_are_shares_of_one_a100(key: str, count: float, vram: float | None,
                                                price: float, share: int) -> None:
    o = _by_key(vultr.parse(_captures()).offers)[key]
    assert (o.gpu_label, o.gpu_count, o.vram_gb_per_gpu, o.price_per_hour) == (
        "NVIDIA_A100", count, vram, price)
    assert (o.pricing_model, o.region, o.zone) == (PricingModel.ON_DEMAND, "ewr", None)
    assert o.provider_data["gpu_vram_gb"] == share


def test_whole_a100_plan_exact_values() -> None:
    o = _by_key(vultr.parse(_captures()).offers)["vcg-a100-12c-120g-80vram|ewr|on_demand"]
    assert (o.instance_type, o.vcpus, o.ram_gb, o.disk_gb) == (
        "vcg-a100-12c-120g-80vram", 12, 120.0, 1400.0)
    assert o.provider_data == {"plan_type": "vcg", "gpu_vram_gb": 80, "monthly_cost": 1750.0,
                               "price_field": "hourly_cost"}
    assert o.source_url == VMS_URL
    assert o.observed_at == datetime(2025, 1, 8, tzinfo=UTC)


def test_bare_metal_h100_on_demand_and_preemptible() -> None:
    offers = _by_key(vultr.parse(_captures()).offers)
    od = offers["vbm-112c-2048gb-8-h100-gpu|sea|on_demand"]
    spot = offers["vbm-112c-2048gb-8-h100-gpu|sea|spot"]
    assert (od.gpu_label, od.gpu_count, od.vram_gb_per_gpu, od.region) == (
        "vbm-112c-2048gb-8-h100-gpu", 8, None, "sea")
    assert (od.price_per_hour, spot.price_per_hour) == (23.92, 18.4)
    assert (od.pricing_model, spot.pricing_model) == (PricingModel.ON_DEMAND, PricingModel.SPOT)
    assert (od.vcpus, od.ram_gb, od.disk_gb) == (224, 2048.0, 1920.0)
    assert spot.provider_data == {
        "disk_type": "NVMe", "cpu_model": "Platinum 8480+", "cpu_cores": 112.0,
        "monthly_cost": 16074.24, "monthly_cost_preemptible": 12364.8,
        "price_field": "hourly_cost_preemptible"}
    assert od.source_url == METAL_URL
    mi300x = offers["vbm-256c-2048gb-8-mi300x-gpu|ord|on_demand"]
    assert (mi300x.gpu_count, mi300x.price_per_hour, mi300x.region) == (8, 17.52, "ord")
    assert offers["vbm-256c-2048gb-8-mi300x-gpu|ord|spot"].price_per_hour == 14.72


def test_every_gpu_label_resolves_to_its_gpu() -> None:
    catalog = load_catalog()
    for o in vultr.parse(_captures()).offers:
        res = catalog.resolve("vultr", o.gpu_label, o.vram_gb_per_gpu)
        assert isinstance(res, Resolved) and res.gpu_id == GPU_IDS[o.gpu_label], o.offer_key
        if res.gpu_count is not None:  # bare-metal plan ids imply the count
            assert res.gpu_count == o.gpu_count


def test_bad_plans_are_rejected_and_cpu_plans_skipped() -> None:
    vms = _doc(VMS)
    base = vms["plans"][1]
    vms["plans"] += [
        {**base, "id": "vcg-a16-6c-64g-16vram", "gpu_type": "NVIDIA_A16", "gpu_vram_gb": 16},
        {**base, "id": "vcg-a100-18c-180g-120vram", "gpu_vram_gb": 120},
        {**base, "id": "vcg-a100-24c-240g-160vram", "gpu_vram_gb": 160, "hourly_cost": 4.794},
        {**base, "id": "vcg-a100-nowhere", "locations": []},
        {**base, "id": "vcg-a100-str", "hourly_cost": "2.397"},
        {"id": "vc2-1c-1gb", "vcpu_count": 1, "ram": 1024, "disk": 25, "hourly_cost": 0.007,
         "monthly_cost": 5, "type": "vc2", "locations": ["ewr"]},
    ]
    metal = _doc(METAL)
    metal["plans_metal"] += [
        {**metal["plans_metal"][1], "id": "vbm-8c-132gb-gpu"},
        {**metal["plans_metal"][1], "id": "vbm-4c-32gb"},
    ]
    result = vultr.parse([_with(VMS, vms), _with(METAL, metal)])
    assert sorted(r.reason for r in result.rejects) == [
        "cannot read the GPU count from plan id 'vbm-8c-132gb-gpu'",
        "gpu_vram_gb 120 is not a whole number of 80 GB NVIDIA_A100 cards",
        "hourly_cost is not a price: '2.397'",
        "plan is offered in no location",
        "whole-card VRAM of NVIDIA_A16 unknown: a share cannot be told from whole GPUs",
    ]
    two = _by_key(result.offers)["vcg-a100-24c-240g-160vram|ewr|on_demand"]
    assert (two.gpu_count, two.vram_gb_per_gpu) == (2, 80.0)
    assert len(result.offers) == 7 + 1


def test_meta_total_above_the_plans_read_is_incomplete() -> None:
    vms = {**_doc(VMS), "meta": {"total": 412, "links": {"next": "bmV4dA==", "prev": ""}}}
    assert vultr.parse([_with(VMS, vms), load_capture(SNAP, METAL)]).complete is False
    vms["meta"]["total"] = 3
    assert vultr.parse([_with(VMS, vms), load_capture(SNAP, METAL)]).complete is True


@pytest.mark.parametrize(("file", "body", "field"), [
    (VMS, b"<html><body>Service Unavailable</body></html>", None),
    (VMS, b'{"error": "Invalid API token.", "status": 401}', "plans"),
    (VMS, b'{"plans": {"vcg-a100-1c-6g-4vram": {}}}', "plans"),
    (METAL, b'{"plans": []}', "plans_metal"),
])
def test_wrong_shape_is_a_parse_error(file: str, body: bytes, field: str | None) -> None:
    capture = load_capture(SNAP, file).model_copy(update={"body": body})
    with pytest.raises(ParseError) as err:
        vultr.parse([capture])
    assert err.value.field == field
    assert err.value.url == load_capture(SNAP, file).url


@pytest.mark.parametrize(("file", "key", "old", "new"), [
    (VMS, "plans", "hourly_cost", "hourly_price"),
    (VMS, "plans", "gpu_vram_gb", "gpu_vram"),
    (VMS, "plans", "gpu_type", "gpu_model"),
    (METAL, "plans_metal", "locations", "regions"),
    (METAL, "plans_metal", "id", "plan_id"),
])
def test_renamed_field_is_a_parse_error(file: str, key: str, old: str, new: str) -> None:
    doc = _doc(file)
    doc[key] = [{(new if k == old else k): v for k, v in p.items()} for p in doc[key]]
    with pytest.raises(ParseError) as err:
        vultr.parse([_with(file, doc)])
    assert err.value.field == old


def test_capture_from_another_url_is_a_parse_error() -> None:
    capture = load_capture(SNAP, VMS).model_copy(
        update={"url": "https://api.vultr.com/v2/instances"})
    with pytest.raises(ParseError):
        vultr.parse([capture])


def test_offline_fetch_serves_both_listings() -> None:
    with HttpClient("vultr", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = vultr.fetch(client, {})
    assert [c.body for c in captures] == [(SNAP / VMS).read_bytes(), (SNAP / METAL).read_bytes()]
    assert [c.url for c in captures] == [VMS_URL, METAL_URL]
    assert len(vultr.parse(captures).offers) == 7


def test_fetch_sends_no_credentials() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        key = "plans_metal" if request.url.path.endswith("plans-metal") else "plans"
        return httpx.Response(200, json={key: [], "meta": {"total": 0, "links": {}}})

    with HttpClient("vultr", transport=httpx.MockTransport(handler)) as client:
        captures = vultr.fetch(client, {})
    assert [str(r.url) for r in seen] == [VMS_URL, METAL_URL]
    assert all("authorization" not in r.headers for r in seen)
    result = vultr.parse(captures)
    assert (result.offers, result.complete) == ([], True)
