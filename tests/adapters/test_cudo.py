"""adapters/cudo.py on the (fixture-derived) machine-type list bundled as the Cudo snapshot."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from invariants import OfferInvariants, load_capture

from gpuscout.adapters import cudo
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, Unknown, load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import Availability, ParsedOffer, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "cudo"
FILE = "gpuhunt_fixture_vm_machine_types.json"
URL = "https://rest.compute.cudo.org/v1/vms/machine-types"
A5000 = "no-luster-1|epyc-rome-rtx-a5000|nvidia-rtx-a5000|on_demand"
RTX3080 = "br-saopaulo-1|cascade-lake|nvidia-rtx-3080|on_demand"


def _types() -> list[dict[str, Any]]:
    return json.loads((SNAP / FILE).read_bytes())


def _with(doc: Any) -> Capture:
    return load_capture(SNAP, FILE).model_copy(update={"body": json.dumps(doc).encode()})


def _by_key(offers: list[ParsedOffer]) -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in offers}


class TestCudoInvariants(OfferInvariants):
    NAME = "cudo"
    # Listed as unmapped in pipeline/data/aliases/cudo.csv: no catalog row for the RTX 3080.
    EXPECTED_UNKNOWN = frozenset({"RTX 3080"})

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return cudo.parse([load_capture(SNAP, FILE)]).offers


def test_bundled_list_composes_one_offer_per_machine_type() -> None:
    result = cudo.parse([load_capture(SNAP, FILE)])
    assert (len(result.offers), len(result.rejects), result.complete) == (2, 0, True)
    assert {(o.pricing_model, o.price_kind, o.currency, o.gpu_count) for o in result.offers} == {
        (PricingModel.ON_DEMAND, PriceKind.DERIVED, "USD", 1)}


def test_rtx_a5000_exact_values() -> None:
    o = _by_key(cudo.parse([load_capture(SNAP, FILE)]).offers)[A5000]
    # 0.52 GPU + 1 vCPU x 0.0021 + 1 GiB x 0.0034 (1 vCPU needs >= 1/1.036437 GiB: 1 GiB)
    assert o.price_per_hour == 0.5255
    assert (o.gpu_label, o.instance_type, o.region, o.vram_gb_per_gpu) == (
        "RTX A5000", "epyc-rome-rtx-a5000", "no-luster-1", None)
    assert (o.vcpus, o.ram_gb, o.disk_gb) == (1, 1, None)
    assert (o.availability, o.available_count) == (Availability.IN_STOCK, 7)
    assert o.provider_data == {
        "gpu_model_id": "nvidia-rtx-a5000", "cpu_model": "EPYC-Rome",
        "composition": "1 GPU + 1 vCPU + 1 GiB RAM; no disk, no IPv4",
        "gpu_price_hr": 0.52, "vcpu_price_hr": 0.0021, "memory_gib_price_hr": 0.0034,
        "storage_gib_price_hr": 0.000107, "ipv4_price_hr": 0.0035, "max_gpu_free": 4,
        "renewable_energy": False}
    assert o.source_url == URL
    assert o.observed_at == datetime(2024, 10, 28, tzinfo=UTC)


def test_rtx_3080_exact_values() -> None:
    o = _by_key(cudo.parse([load_capture(SNAP, FILE)]).offers)[RTX3080]
    assert o.price_per_hour == 0.0563  # 0.05 + 0.0025 + 0.0038
    assert (o.region, o.vcpus, o.ram_gb, o.available_count) == ("br-saopaulo-1", 1, 1, 24)
    assert o.provider_data["renewable_energy"] is None


def test_gpu_labels_resolve_or_are_knowingly_unknown() -> None:
    catalog = load_catalog()
    res = catalog.resolve("cudo", "RTX A5000")
    assert isinstance(res, Resolved) and res.gpu_id == "rtx-a5000-24gb"
    unknown = catalog.resolve("cudo", "RTX 3080")
    assert isinstance(unknown, Unknown) and "listed as unmapped" in unknown.reason


def test_envelope_and_bare_list_read_the_same() -> None:
    bare = cudo.parse([load_capture(SNAP, FILE)]).offers
    wrapped = cudo.parse([_with({"machineTypes": _types()})]).offers
    assert [o.model_dump() for o in wrapped] == [o.model_dump() for o in bare]


def test_listed_minimums_and_stock() -> None:
    doc = _types()
    doc[1].update(minVcpu=4, minMemoryGib=8, maxGpuFree=0, totalGpuFree=0)
    o = _by_key(cudo.parse([_with(doc)]).offers)[A5000]
    assert (o.vcpus, o.ram_gb) == (4, 8)  # 4 vCPU need >= 4 GiB; the listed minimum is 8
    assert o.price_per_hour == pytest.approx(0.52 + 4 * 0.0021 + 8 * 0.0034)
    assert (o.availability, o.available_count) == (Availability.OUT_OF_STOCK, 0)


def test_bad_machine_types_are_rejected_and_cpu_types_skipped() -> None:
    base = _types()[1]
    doc = [
        {**base, "machineType": "a", "gpuPriceHr": {"value": "n/a"}},
        {**base, "machineType": "b", "gpuPriceHr": {"value": "0"}},
        {**base, "machineType": "c", "minVcpuPerGpu": None},
        {**base, "machineType": "d", "maxVcpuPerMemoryGib": 0},
        {**base, "machineType": "e", "minVcpuPerMemoryGib": 2, "maxVcpuPerMemoryGib": 4},
        {**base, "machineType": "f", "vcpuPriceHr": "0.0021"},
        {**base, "machineType": "cpu", "gpuModel": "", "gpuModelId": ""},
    ]
    result = cudo.parse([_with({"machineTypes": doc})])
    assert result.offers == []
    assert sorted(r.reason for r in result.rejects) == [
        "1 vCPU and 1 GiB break minVcpuPerMemoryGib 2: no machine can be composed",
        "gpuPriceHr is 0: no GPU price",
        "gpuPriceHr is not a unit price: {'value': 'n/a'}",
        "maxVcpuPerMemoryGib is not a positive number: 0",
        "minVcpuPerGpu is not a positive number: None",
        "vcpuPriceHr is not a unit price: '0.0021'",
    ]


@pytest.mark.parametrize(("body", "field"), [
    (b"<html><body>Bad Gateway</body></html>", None),
    (b'{"code": 16, "message": "unauthenticated"}', "machineTypes"),
    (b'{"machineTypes": {"dataCenterId": "no-luster-1"}}', "machineTypes"),
])
def test_wrong_shape_is_a_parse_error(body: bytes, field: str | None) -> None:
    capture = load_capture(SNAP, FILE).model_copy(update={"body": body})
    with pytest.raises(ParseError) as err:
        cudo.parse([capture])
    assert (err.value.field, err.value.url) == (field, URL)


@pytest.mark.parametrize(("old", "new"), [
    ("gpuPriceHr", "gpuPricePerHour"),
    ("dataCenterId", "dataCenter"),
    ("memoryGibPriceHr", "memoryPriceHr"),
])
def test_renamed_field_is_a_parse_error(old: str, new: str) -> None:
    doc = [{(new if k == old else k): v for k, v in e.items()} for e in _types()]
    with pytest.raises(ParseError) as err:
        cudo.parse([_with({"machineTypes": doc})])
    assert err.value.field == old


def test_offline_fetch_serves_the_bundled_list() -> None:
    with HttpClient("cudo", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = cudo.fetch(client, {})
    assert [c.body for c in captures] == [(SNAP / FILE).read_bytes()]
    assert captures[0].url == URL
    assert len(cudo.parse(captures).offers) == 2


def test_fetch_sends_no_credentials() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"machineTypes": []})

    with HttpClient("cudo", transport=httpx.MockTransport(handler)) as client:
        captures = cudo.fetch(client, {})
    assert [str(r.url) for r in seen] == [URL]
    assert "authorization" not in seen[0].headers
    assert cudo.parse(captures).offers == []
