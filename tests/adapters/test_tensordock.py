"""adapters/tensordock.py on `GET /api/v2/locations` bodies: the bundled excerpt of a live
response and the provider's documentation example (adapters/snapshots/tensordock/PROVENANCE.md)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from invariants import FIXTURES, OfferInvariants, load_capture

from gpuscout.adapters import tensordock
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import MissingCredentialsError, ParseError
from gpuscout.core.models import Availability, ParsedOffer, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "tensordock"
FIX = FIXTURES / "tensordock"
LIVE = "v2_locations_excerpt_cloud_gpu_shopper_f440c53.json"
DOCS = "docs_example_v2_locations_fetch_hostnodes_excerpt.json"
URL = "https://dashboard.tensordock.com/api/v2/locations"
CHUBBUCK = "8dd95ff0-dff9-489c-9b02-b38a366b6ab1"


def _doc(folder: Any = FIX, file: str = DOCS) -> dict[str, Any]:
    return json.loads((folder / file).read_bytes())


def _with(doc: Any, folder: Any = FIX, file: str = DOCS) -> Capture:
    return load_capture(folder, file).model_copy(update={"body": json.dumps(doc).encode()})


def _by_key(offers: list[ParsedOffer]) -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in offers}


class TestTensorDockInvariants(OfferInvariants):
    NAME = "tensordock"

    @pytest.fixture(params=[(SNAP, LIVE), (FIX, DOCS)], ids=[LIVE, DOCS])
    def offers(self, request: pytest.FixtureRequest) -> list[ParsedOffer]:
        return tensordock.parse([load_capture(*request.param)]).offers


def test_bundled_excerpt_exact_values() -> None:
    result = tensordock.parse([load_capture(SNAP, LIVE)])
    assert (len(result.offers), result.rejects, result.complete) == (1, [], True)
    o = result.offers[0]
    assert o.offer_key == f"{CHUBBUCK}|geforcertx4090-pcie-24gb|on_demand"
    assert (o.gpu_label, o.gpu_count, o.vram_gb_per_gpu, o.price_per_hour, o.currency) == (
        "geforcertx4090-pcie-24gb", 1, 24.0, 0.3966, "USD")
    assert (o.pricing_model, o.price_kind) == (PricingModel.ON_DEMAND, PriceKind.OBSERVED)
    assert (o.region, o.zone, o.instance_type) == ("Chubbuck, Idaho, United States", None, None)
    assert (o.availability, o.available_count) == (Availability.IN_STOCK, 4)
    # Resource ceilings are not what the price buys: they stay out of vcpus/ram_gb/disk_gb.
    assert (o.vcpus, o.ram_gb, o.disk_gb) == (None, None, None)
    assert o.provider_data == {
        "price_scope": "gpu_component", "price_basis": "per GPU", "location_id": CHUBBUCK,
        "display_name": "NVIDIA GeForce RTX 4090 PCIe 24GB", "tier": 1, "max_vcpus": 56,
        "max_ram_gb": 331, "max_storage_gb": 30200}
    assert o.source_url == URL
    assert o.observed_at == datetime(2026, 3, 2, 0, 30, 43, tzinfo=UTC)


def test_docs_example_keeps_the_add_on_rates_beside_the_gpu_price() -> None:
    result = tensordock.parse([load_capture(FIX, DOCS)])
    assert (len(result.offers), result.rejects) == (2, [])
    offers = _by_key(result.offers)
    h100 = offers["loc-uuid-12345|h100-sxm5-80gb|on_demand"]
    assert (h100.gpu_count, h100.vram_gb_per_gpu, h100.price_per_hour) == (1, 80.0, 2.2)
    assert (h100.region, h100.available_count) == ("Austin, Texas, United States", 8)
    assert h100.provider_data == {
        "price_scope": "gpu_component", "price_basis": "per GPU",
        "location_id": "loc-uuid-12345", "display_name": "H100 SXM5 80GB", "tier": 3,
        "max_vcpus": 128, "max_ram_gb": 300, "max_storage_gb": 1000, "usd_per_vcpu_hr": 0.003,
        "usd_per_gb_ram_hr": 0.002, "usd_per_gb_storage_hr": 0.00005,
        "dedicated_ip_available": True, "port_forwarding_available": True,
        "network_storage_available": False}
    rtx = offers["loc-uuid-12345|geforcertx4090-pcie-24gb|on_demand"]
    assert (rtx.price_per_hour, rtx.vram_gb_per_gpu, rtx.available_count) == (0.5, 24.0, 4)
    assert "usd_per_vcpu_hr" not in rtx.provider_data


def test_labels_map_to_the_expected_gpus() -> None:
    catalog = load_catalog()
    expected = {("h100-sxm5-80gb", 80.0): "h100-sxm-80gb",
                ("geforcertx4090-pcie-24gb", 24.0): "rtx-4090-24gb"}
    assert {k: getattr(catalog.resolve("tensordock", *k), "gpu_id", None) for k in expected} \
        == expected


def test_no_stock_is_out_of_stock_and_no_count_is_unknown() -> None:
    doc = _doc()
    gpus = doc["data"]["locations"][0]["gpus"]
    gpus[0]["max_count"] = 0
    del gpus[1]["max_count"]
    offers = _by_key(tensordock.parse([_with(doc)]).offers)
    h100 = offers["loc-uuid-12345|h100-sxm5-80gb|on_demand"]
    assert (h100.availability, h100.available_count) == (Availability.OUT_OF_STOCK, 0)
    rtx = offers["loc-uuid-12345|geforcertx4090-pcie-24gb|on_demand"]
    assert (rtx.availability, rtx.available_count) == (Availability.UNKNOWN, None)


@pytest.mark.parametrize(("edit", "reason"), [
    (lambda g: g.update(price_per_hr="2.2"), "price_per_hr is not a price: '2.2'"),
    (lambda g: g.update(price_per_hr=0), "price_per_hr is not a price: 0"),
    (lambda g: g.update(price_per_hr=None), "price_per_hr is not a price: None"),
    (lambda g: g.update(v0Name=""), "location loc-uuid-12345: GPU entry without a v0Name"),
])
def test_bad_gpu_entries_are_rejected_with_reasons(edit: Any, reason: str) -> None:
    doc = _doc()
    edit(doc["data"]["locations"][0]["gpus"][0])
    result = tensordock.parse([_with(doc)])
    assert [r.reason for r in result.rejects] == [reason]
    assert [o.gpu_label for o in result.offers] == ["geforcertx4090-pcie-24gb"]


def test_bad_locations_are_rejected_and_the_rest_is_read() -> None:
    doc = _doc()
    good = doc["data"]["locations"][0]
    doc["data"]["locations"] += [
        {**good, "id": ""},
        {**good, "id": "loc-2", "gpus": {"h100-sxm5-80gb": {}}},
        "Austin",
        {**good, "id": "loc-3", "gpus": [7, good["gpus"][0]]},
    ]
    result = tensordock.parse([_with(doc)])
    assert sorted(r.reason for r in result.rejects) == [
        "location is not an object: str",
        "location loc-2: gpus is not a list: {'h100-sxm5-80gb': {}}",
        "location loc-3: GPU entry is not an object",
        "location without an id",
    ]
    assert sorted(o.offer_key for o in result.offers) == [
        "loc-3|h100-sxm5-80gb|on_demand", "loc-uuid-12345|geforcertx4090-pcie-24gb|on_demand",
        "loc-uuid-12345|h100-sxm5-80gb|on_demand"]


def test_a_gpu_listed_twice_is_one_offer_and_two_prices_none() -> None:
    doc = _doc()
    gpus = doc["data"]["locations"][0]["gpus"]
    gpus.append(dict(gpus[0]))
    gpus.append({**gpus[1], "price_per_hr": 0.55})
    result = tensordock.parse([_with(doc)])
    assert [o.gpu_label for o in result.offers] == ["h100-sxm5-80gb"]
    assert sorted(r.reason for r in result.rejects) == [
        "GPU listed twice at one location", "the source gives this offer two different prices",
        "the source gives this offer two different prices"]


@pytest.mark.parametrize(("body", "field"), [
    (b"<html><body>502 Bad Gateway</body></html>", None),
    (b'{"error": "Unauthorized"}', "data"),
    (b'{"data": [{"id": "loc-1"}]}', "data"),
    (b'{"data": {"hostnodes": []}}', "locations"),
    (b'{"data": {"locations": {"loc-1": {}}}}', "locations"),
])
def test_wrong_shape_is_a_parse_error(body: bytes, field: str | None) -> None:
    capture = load_capture(SNAP, LIVE).model_copy(update={"body": body})
    with pytest.raises(ParseError) as err:
        tensordock.parse([capture])
    assert (err.value.field, err.value.url, err.value.provider) == (field, URL, "tensordock")


@pytest.mark.parametrize(("where", "old", "new"), [
    ("gpu", "v0Name", "v0_name"), ("gpu", "price_per_hr", "pricePerHr"),
    ("location", "gpus", "gpu_types"), ("location", "id", "location_id"),
])
def test_renamed_field_is_a_parse_error(where: str, old: str, new: str) -> None:
    doc = _doc()
    for loc in doc["data"]["locations"]:
        if where == "gpu":
            loc["gpus"] = [{(new if k == old else k): v for k, v in g.items()}
                           for g in loc["gpus"]]
        else:
            loc[new] = loc.pop(old)
    with pytest.raises(ParseError) as err:
        tensordock.parse([_with(doc)])
    assert err.value.field == old


def test_newest_capture_wins() -> None:
    old = load_capture(FIX, DOCS)
    doc = _doc()
    doc["data"]["locations"][0]["gpus"][0]["price_per_hr"] = 2.0
    new = old.model_copy(update={"body": json.dumps(doc).encode(),
                                 "fetched_at": datetime(2027, 1, 1, tzinfo=UTC)})
    offers = _by_key(tensordock.parse([new, old]).offers)
    assert offers["loc-uuid-12345|h100-sxm5-80gb|on_demand"].price_per_hour == 2.0


def test_fetch_needs_the_api_token() -> None:
    with (HttpClient("tensordock", transport=ReplayTransport(SNAPSHOTS_DIR)) as client,
          pytest.raises(MissingCredentialsError) as err):
        tensordock.fetch(client, {})
    assert err.value.variable == "TENSORDOCK_API_TOKEN"


def test_offline_fetch_serves_the_bundled_body() -> None:
    with HttpClient("tensordock", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = tensordock.fetch(client, {"TENSORDOCK_API_TOKEN": "replay"})
    assert [c.body for c in captures] == [(SNAP / LIVE).read_bytes()]
    assert [c.url for c in captures] == [URL]
    assert len(tensordock.parse(captures).offers) == 1


def test_live_fetch_sends_the_token_as_bearer_and_never_keeps_it() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"data": {"locations": []}})

    with HttpClient("tensordock", transport=httpx.MockTransport(handler),
                    secrets=("td_SECRET_TOKEN",)) as client:
        captures = tensordock.fetch(client, {"TENSORDOCK_API_TOKEN": "td_SECRET_TOKEN"})
    assert [str(r.url) for r in seen] == [URL]
    assert seen[0].headers["authorization"] == "Bearer td_SECRET_TOKEN"
    assert "SECRET" not in captures[0].model_dump_json()
    result = tensordock.parse(captures)
    assert (result.offers, result.complete) == ([], False)  # no location: closes nothing
