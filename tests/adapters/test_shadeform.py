"""adapters/shadeform.py on Shadeform's own instance types data of 2026-08-22 (the bundled excerpt)
and its documented /instances/types examples (the 2026 quickstart, the 2024 guides)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from invariants import FIXTURES, OfferInvariants, load_capture

from gpuscout.adapters import shadeform
from gpuscout.adapters.archive import Capture, ReplayTransport, read_manifest
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, Unknown, load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import (
    Availability,
    Interconnect,
    ParsedOffer,
    PriceKind,
    PricingModel,
)

SNAP = SNAPSHOTS_DIR / "shadeform"
FIX = FIXTURES / "shadeform"
BUNDLED = "instance_types_homepage_gpu_index_055204a_2026-08-22.json"
QUICKSTART = "shadeform_docs_quickstart_instances_types_46d1fa0.json"
URL = "https://api.shadeform.ai/v1/instances/types"
A6000 = "massedcompute|A6000|kansascity-usa-1|on_demand"
GPU_IDS = {"A6000 pcie": "rtx-a6000-48gb", "A100_80G pcie": "a100-pcie-80gb",
           "H100 pcie": "h100-pcie-80gb", "RTX4090 pcie": "rtx-4090-24gb",
           "L4 pcie": "l4-24gb", "H200 sxm5": "h200-sxm-141gb", "H100 sxm5": "h100-sxm-80gb",
           "L40 pcie": "l40-48gb", "A100 sxm4": "a100-sxm-40gb",
           "RTX5090 pcie": "rtx-5090-32gb", "B300 sxm6": "b300-sxm-288gb",
           "H100_nvl": "h100-nvl-94gb",
           # Shadeform says "pcie" for these, which no form of theirs is: alias rows say which
           "GH200 pcie": "gh200-96gb", "GAUDI2 pcie": "gaudi2-96gb"}
UNKNOWN: frozenset[str] = frozenset()


def _snapshot() -> Capture:
    return load_capture(SNAP, BUNDLED)


def _quickstart() -> Capture:
    return load_capture(FIX, QUICKSTART)


def _guides() -> list[Capture]:
    return [load_capture(FIX, e.file) for e in read_manifest(FIX) if e.file != QUICKSTART]


def _all() -> list[Capture]:
    return [_snapshot(), _quickstart(), *_guides()]


def _entry() -> dict[str, Any]:
    return copy.deepcopy(json.loads((FIX / QUICKSTART).read_bytes())["instance_types"][0])


def _with(*entries: Any) -> Capture:
    body = json.dumps({"instance_types": list(entries)}).encode()
    return _quickstart().model_copy(update={"body": body})


def _by_key(offers: list[ParsedOffer]) -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in offers}


class TestShadeformInvariants(OfferInvariants):
    NAME = "shadeform"
    EXPECTED_UNKNOWN = UNKNOWN

    @pytest.fixture(params=["snapshot", "quickstart", "guides"])
    def offers(self, request: pytest.FixtureRequest) -> list[ParsedOffer]:
        captures = {"snapshot": [_snapshot()], "quickstart": [_quickstart()],
                    "guides": _guides()}[request.param]
        return shadeform.parse(captures).offers


def test_the_2026_quickstart_entry() -> None:
    result = shadeform.parse([_quickstart()])
    assert (len(result.offers), result.rejects, result.complete) == (1, [], True)
    (o,) = result.offers
    assert (o.offer_key, o.instance_type, o.gpu_label, o.gpu_count, o.vram_gb_per_gpu) == (
        A6000, "A6000", "A6000 pcie", 1, 48)
    assert (o.price_per_hour, o.currency, o.pricing_model, o.price_kind) == (
        0.57, "USD", PricingModel.ON_DEMAND, PriceKind.LISTED)
    assert (o.region, o.availability, o.vcpus, o.ram_gb, o.disk_gb, o.interconnect) == (
        "kansascity-usa-1", Availability.IN_STOCK, 6, 48, 256, Interconnect.SINGLE)
    assert o.provider_data == {
        "cloud": "massedcompute", "resold_from": "massedcompute", "price_basis": "per instance",
        "cloud_instance_type": "gpu_1x_a6000", "deployment_type": "vm", "gpu_type": "A6000",
        "gpu_interconnect": "pcie", "nvlink": False, "gpu_manufacturer": "nvidia",
        "min_boot_in_sec": 300, "max_boot_in_sec": 600,
        "os_options": "ubuntu22.04_cuda12.6_shade_os", "cloud_region": "kansascity-usa-1",
        "region_name": "US, Kansas City, KS"}
    assert (o.source_url, o.observed_at) == (URL, datetime(2026, 1, 28, 21, 3, 19, tzinfo=UTC))


@pytest.mark.parametrize(("key", "label", "count", "price", "availability", "cloud_type"), [
    ("runpod|A100_80G|any|on_demand", "A100_80G pcie", 1, 2.03, Availability.IN_STOCK,
     "NVIDIA A100 80GB PCIe"),
    ("oblivus|H100x8|MON1|on_demand", "H100 pcie", 8, 32.8, Availability.IN_STOCK,
     "H100_PCIE_80GB_x8"),
    ("massedcompute|H100x8|us-central-2|on_demand", "H100 pcie", 8, 23.92,
     Availability.OUT_OF_STOCK, "gpu_8x_h100"),
    ("massedcompute|A6000|us-central-2|on_demand", "A6000 pcie", 1, 0.57, Availability.IN_STOCK,
     "gpu_1x_a6000"),
])
def test_2024_guide_examples(key: str, label: str, count: int, price: float,
                             availability: Availability, cloud_type: str) -> None:
    result = shadeform.parse(_guides())
    assert (len(result.offers), result.rejects) == (4, [])
    o = _by_key(result.offers)[key]
    assert (o.gpu_label, o.gpu_count, o.price_per_hour, o.availability) == (
        label, count, price, availability)
    assert o.provider_data["cloud_instance_type"] == cloud_type
    assert "nvlink" not in o.provider_data  # the older layout has no nvlink


def test_oblivus_8x_h100_exact_values() -> None:
    o = _by_key(shadeform.parse(_guides()).offers)["oblivus|H100x8|MON1|on_demand"]
    assert (o.vcpus, o.ram_gb, o.disk_gb, o.vram_gb_per_gpu, o.interconnect) == (
        252, 1440, 6600, 80, None)
    assert (o.region, o.provider_data["region_name"], o.provider_data["cloud"]) == (
        "MON1", "CA, Montreal", "oblivus")
    assert o.observed_at == datetime(2024, 10, 8, 22, 28, 35, tzinfo=UTC)


def test_every_label_resolves_to_its_gpu_or_is_the_known_unknown() -> None:
    catalog = load_catalog()
    for o in shadeform.parse(_all()).offers:
        res = catalog.resolve("shadeform", o.gpu_label, o.vram_gb_per_gpu)
        if o.gpu_label in UNKNOWN:
            assert isinstance(res, Unknown), o.offer_key
        else:
            assert isinstance(res, Resolved) and res.gpu_id == GPU_IDS[o.gpu_label], o.offer_key


def test_each_region_is_an_offer_and_nvlink_is_read() -> None:
    entry = _entry()
    entry.update(shade_instance_type="H100_sxm5x8", cloud_instance_type="8x-h100",
                 hourly_price=2392)
    entry["configuration"].update(num_gpus=8, gpu_type="H100", interconnect="sxm5",
                                  nvlink=True, vram_per_gpu_in_gb=80)
    entry["availability"] = [{"region": "us-east-1", "available": True, "display_name": "x"},
                             {"region": "eu-north-1", "available": False}]
    offers = _by_key(shadeform.parse([_with(entry)]).offers)
    assert sorted(offers) == ["massedcompute|H100_sxm5x8|eu-north-1|on_demand",
                              "massedcompute|H100_sxm5x8|us-east-1|on_demand"]
    west = offers["massedcompute|H100_sxm5x8|us-east-1|on_demand"]
    east = offers["massedcompute|H100_sxm5x8|eu-north-1|on_demand"]
    assert (west.gpu_label, west.gpu_count, west.price_per_hour) == ("H100 sxm5", 8, 23.92)
    assert (west.interconnect, west.availability, east.availability) == (
        Interconnect.NVLINK, Availability.IN_STOCK, Availability.OUT_OF_STOCK)
    assert east.provider_data["region_name"] is None


def test_bad_entries_are_rejected_and_cpu_types_skipped() -> None:
    base = _entry()

    def entry(**changes: Any) -> dict[str, Any]:
        e = copy.deepcopy(base)
        config = changes.pop("configuration", {})
        e.update(changes)
        e["configuration"].update(config)
        return e

    result = shadeform.parse([_with(
        entry(configuration={"gpu_type": "A100"}),  # the API reference's schema example
        entry(hourly_price="57"),
        entry(hourly_price=0),
        entry(configuration={"num_gpus": "1"}),
        entry(configuration={"gpu_type": None}),
        entry(availability=[]),
        entry(cloud=""),
        entry(availability=[{"available": True}]),
        entry(availability=[{"region": "dulles-usa-1", "available": True,
                             "rental_type": "spot", "hourly_price": "26.76"}]),
        "A6000",
        entry(shade_instance_type="CPUx1", configuration={"num_gpus": 0}),
    )])
    assert result.offers == []
    assert [r.reason for r in result.rejects] == [
        "shade_instance_type 'A6000' does not name gpu_type 'A100'",
        "hourly_price is not a price: '57'",
        "hourly_price is not a price: 0",
        "configuration.num_gpus is not a count: '1'",
        "configuration.gpu_type is not a name: None",
        "offered in no region: []",
        "entry without cloud and shade_instance_type: '', 'A6000'",
        "availability entry without a region: {'available': True}",
        "rental_type 'spot' in dulles-usa-1 is not read",
        "instance type is not an object: str",
    ]


def test_type_listed_twice_in_a_region() -> None:
    same = shadeform.parse([_with(_entry(), _entry())])
    assert [o.offer_key for o in same.offers] == [A6000]
    assert [r.reason for r in same.rejects] == ["instance type listed twice in a region"]
    dearer = {**_entry(), "hourly_price": 99}
    conflict = shadeform.parse([_with(_entry(), dearer)])
    assert conflict.offers == []
    assert [r.reason for r in conflict.rejects] == [
        "the source gives this offer two different prices"] * 2


@pytest.mark.parametrize(("body", "field"), [
    (b"<html>Service Unavailable</html>", None),
    (b'{"error": "invalid api key"}', "instance_types"),
    (b'{"instance_types": {"A6000": {}}}', "instance_types"),
])
def test_wrong_shape_is_a_parse_error(body: bytes, field: str | None) -> None:
    with pytest.raises(ParseError) as err:
        shadeform.parse([_snapshot().model_copy(update={"body": body})])
    assert (err.value.field, err.value.url, err.value.provider) == (field, URL, "shadeform")


@pytest.mark.parametrize(("old", "new"), [
    ("hourly_price", "price"), ("availability", "regions"), ("configuration", "config"),
    ("shade_instance_type", "instance_type"),
])
def test_renamed_field_is_a_parse_error(old: str, new: str) -> None:
    entry = {(new if k == old else k): v for k, v in _entry().items()}
    with pytest.raises(ParseError) as err:
        shadeform.parse([_with(entry)])
    assert err.value.field == old


def test_offline_fetch_serves_the_bundled_body_without_a_key() -> None:
    with HttpClient("shadeform", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = shadeform.fetch(client, {})
    assert [c.url for c in captures] == [URL]
    assert [c.body for c in captures] == [(SNAP / BUNDLED).read_bytes()]
    assert len(shadeform.parse(captures).offers) == 23
    assert shadeform.OPTIONAL_CREDENTIALS == ("SHADEFORM_API_KEY",)


def test_live_fetch_is_unfiltered_and_sends_the_key_header_only_when_set() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"instance_types": []})

    with HttpClient("shadeform", transport=httpx.MockTransport(handler),
                    secrets=("sf-secret",)) as client:
        shadeform.fetch(client, {})
        captures = shadeform.fetch(client, {"SHADEFORM_API_KEY": "sf-secret"})
    assert [str(r.url) for r in seen] == [URL, URL]
    assert "x-api-key" not in seen[0].headers
    assert seen[1].headers["x-api-key"] == "sf-secret"
    assert "sf-secret" not in json.dumps([c.headers for c in captures])
    result = shadeform.parse(captures)
    assert (result.offers, result.complete) == ([], True)


# -- the bundled excerpt of 2026-08-22: the re-sold clouds ------------------------------------


def test_bundled_excerpt_counts_and_the_clouds_resold() -> None:
    result = shadeform.parse([_snapshot()])
    assert (len(result.offers), result.rejects, result.complete) == (23, [], True)
    resold = {o.provider_data["resold_from"] for o in result.offers}
    # lambdalabs's one entry here is a CPU machine: skipped
    assert resold == {"boostrun", "denvr", "excesssupply", "hyperstack", "imwt", "latitude",
                      "massedcompute", "scaleway", "verda"}
    assert all(o.provider_data["resold_from"] == o.provider_data["cloud"]
               for o in result.offers)
    in_stock = sorted(o.offer_key for o in result.offers
                      if o.availability is Availability.IN_STOCK)
    assert in_stock == [
        "denvr|A100_sxm4x8|calgary-canada-1|on_demand", "denvr|Gaudi2x8|houston-usa-1|on_demand",
        "excesssupply|RTX5090|oslo-norway-3|on_demand",
        "hyperstack|H100_sxm5x8|montreal-canada-2|on_demand",
        "massedcompute|L40|desmoines-usa-1|on_demand", "scaleway|L4|paris-france-5|on_demand",
        "scaleway|L4|warsaw-poland-1|on_demand"]


def test_a_resold_excess_supply_node_in_full() -> None:
    o = _by_key(shadeform.parse([_snapshot()]).offers)[
        "excesssupply|H200_sxm5x8_NVLINK|paris-france-3|on_demand"]
    assert (o.instance_type, o.gpu_label, o.gpu_count, o.vram_gb_per_gpu) == (
        "H200_sxm5x8_NVLINK", "H200 sxm5", 8, 141)
    assert (o.price_per_hour, o.currency, o.pricing_model, o.price_kind) == (
        36.13, "USD", PricingModel.ON_DEMAND, PriceKind.LISTED)  # 3613 cents, whole node
    assert (o.region, o.availability, o.vcpus, o.ram_gb, o.disk_gb, o.interconnect) == (
        "paris-france-3", Availability.OUT_OF_STOCK, 128, 1600, 6000, Interconnect.NVLINK)
    assert o.provider_data == {
        "cloud": "excesssupply", "resold_from": "excesssupply", "price_basis": "per instance",
        "cloud_instance_type": "gpu-h200-sxm|8gpu-128vcpu-1600gb", "deployment_type": "vm",
        "gpu_type": "H200", "gpu_interconnect": "sxm5", "nvlink": True,
        "gpu_manufacturer": "nvidia", "min_boot_in_sec": 300, "max_boot_in_sec": 420,
        "os_options": "ubuntu22.04_cuda12.4_shade_os, ubuntu22.04",
        "cloud_region": "paris-france-3", "region_name": "FR, Paris"}
    assert (o.source_url, o.observed_at) == (
        URL, datetime(2026, 8, 22, 18, 2, 58, 752000, tzinfo=UTC))
