"""adapters/jarvislabs.py on `GET /misc/server_meta` bodies (see the PROVENANCE files: the
bundled one is assembled from real values, the fixture is gpuhunt's test payload)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from invariants import FIXTURES, OfferInvariants, load_capture

from gpuscout.adapters import jarvislabs
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import MissingCredentialsError, ParseError
from gpuscout.core.models import Availability, ParsedOffer, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "jarvislabs"
FIX = FIXTURES / "jarvislabs"
ASSEMBLED = "server_meta_assembled_backendn_2026-08-17.json"
GPUHUNT = "gpuhunt_fixture_server_meta_d58a4a9.json"
URL = "https://backendn.jarvislabs.net/misc/server_meta"
VM_SPOT = "spot_price on a VM row: spot is sold for GPU containers only"


def _rows(folder: Any = SNAP, file: str = ASSEMBLED) -> dict[str, Any]:
    return json.loads((folder / file).read_bytes())


def _with_body(doc: Any) -> Capture:
    return load_capture(SNAP, ASSEMBLED).model_copy(update={"body": json.dumps(doc).encode()})


def _by_key(offers: list[ParsedOffer]) -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in offers}


class TestJarvislabsInvariants(OfferInvariants):
    NAME = "jarvislabs"

    @pytest.fixture(params=[(SNAP, ASSEMBLED), (FIX, GPUHUNT)], ids=[ASSEMBLED, GPUHUNT])
    def offers(self, request: pytest.FixtureRequest) -> list[ParsedOffer]:
        return jarvislabs.parse([load_capture(*request.param)]).offers


def test_assembled_snapshot_counts_and_pinned_offers() -> None:
    result = jarvislabs.parse([load_capture(SNAP, ASSEMBLED)])
    assert (len(result.offers), len(result.rejects)) == (21, 5)
    offers = _by_key(result.offers)
    rtx = offers["RTX-PRO6000|india-chennai-01|vm|on_demand"]
    assert (rtx.gpu_label, rtx.gpu_count, rtx.vram_gb_per_gpu, rtx.price_per_hour) == (
        "RTX-PRO6000", 1, 96.0, 1.89)
    assert (rtx.pricing_model, rtx.price_kind, rtx.currency) == (
        PricingModel.ON_DEMAND, PriceKind.LISTED, "USD")
    assert (rtx.region, rtx.vcpus, rtx.ram_gb) == ("india-chennai-01", 28, 160)
    # On-demand capacity is what the SDK admits on: effective 6, not the 4 free now.
    assert (rtx.availability, rtx.available_count) == (Availability.IN_STOCK, 6)
    assert rtx.provider_data == {"workload_type": "vm", "price_basis": "per GPU"}
    assert rtx.source_url == URL
    assert rtx.observed_at == datetime(2026, 8, 17, 12, 50, tzinfo=UTC)
    spot = offers["RTX-PRO6000|india-chennai-01|container|spot"]
    assert (spot.pricing_model, spot.price_per_hour) == (PricingModel.SPOT, 0.99)
    assert (spot.availability, spot.available_count) == (Availability.OUT_OF_STOCK, 0)
    h100 = offers["H100|india-noida-01|vm|on_demand"]
    assert (h100.price_per_hour, h100.vcpus, h100.ram_gb, h100.available_count) == (
        2.69, 24, 200, 8)
    a100 = offers["A100|india-noida-01|container|on_demand"]
    assert (a100.vram_gb_per_gpu, a100.price_per_hour) == (40.0, 0.89)
    assert offers["A100|india-noida-01|container|spot"].price_per_hour == 0.79
    assert offers["L4|india-noida-01|container|spot"].price_per_hour == 0.29
    assert offers["A30|india-noida-01|container|on_demand"].price_per_hour == 0.41


def test_europe_rows_without_workload_or_spot_give_one_on_demand_offer() -> None:
    offers = _by_key(jarvislabs.parse([load_capture(SNAP, ASSEMBLED)]).offers)
    europe = {k: o.price_per_hour for k, o in offers.items() if "|europe-01|" in k}
    assert europe == {"H100|europe-01|unspecified|on_demand": 2.99,
                      "H200|europe-01|unspecified|on_demand": 3.99}
    h200 = offers["H200|europe-01|unspecified|on_demand"]
    assert (h200.available_count, h200.vcpus, h200.provider_data["workload_type"]) == (
        26, 16, None)


def test_spot_prices_on_vm_rows_are_rejected() -> None:
    rejects = jarvislabs.parse([load_capture(SNAP, ASSEMBLED)]).rejects
    assert {r.reason for r in rejects} == {VM_SPOT}
    assert sorted(r.offer_key or "" for r in rejects) == [
        "A100-80GB|india-noida-01|vm|spot", "H100|india-noida-01|vm|spot",
        "H200|india-noida-01|vm|spot", "L4|india-noida-01|vm|spot",
        "RTX-PRO6000|india-chennai-01|vm|spot"]


def test_gpuhunt_fixture() -> None:
    result = jarvislabs.parse([load_capture(FIX, GPUHUNT)])
    assert (len(result.offers), len(result.rejects)) == (8, 3)
    offers = _by_key(result.offers)
    l4 = offers["L4|india-noida-01|container|spot"]
    assert (l4.price_per_hour, l4.available_count) == (0.29, 2)  # spot_num_free_devices
    assert l4.provider_data == {"workload_type": "container", "price_basis": "per GPU",
                                "max_gpus_per_instance": 8}
    # The spaced spelling is a second label for the same GPU; null spot_price: no spot offer.
    spaced = [k for k in offers if k.startswith("RTX PRO 6000|")]
    assert spaced == ["RTX PRO 6000|india-noida-01|vm|on_demand"]
    assert offers["H100|europe-01|unspecified|on_demand"].available_count == 25
    assert {r.reason for r in result.rejects} == {VM_SPOT}


def test_labels_map_to_the_expected_gpus() -> None:
    catalog = load_catalog()
    expected = {("RTX-PRO6000", 96): "rtx-pro-6000-96gb", ("RTX PRO 6000", 96):
                "rtx-pro-6000-96gb", ("H200", 141): "h200-sxm-141gb",
                ("H100", 80): "h100-sxm-80gb", ("A100-80GB", 80): "a100-sxm-80gb",
                ("A100", 40): "a100-sxm-40gb", ("L4", 24): "l4-24gb", ("A30", 24): "a30-24gb"}
    got = {k: getattr(catalog.resolve("jarvislabs", *k), "gpu_id", None) for k in expected}
    assert got == expected
    labels = {r["gpu_type"] for f, d in ((ASSEMBLED, SNAP), (GPUHUNT, FIX))
              for r in _rows(d, f)["server_meta"]}
    assert labels == {label for label, _ in expected}


@pytest.mark.parametrize(("edit", "reason"), [
    (lambda r: r.update(price_per_hour="1.89"), "price_per_hour is not a price: '1.89'"),
    (lambda r: r.update(price_per_hour=None), "price_per_hour is null: no on-demand price"),
    (lambda r: r.update(spot_price=0), "spot_price is not a price: 0"),
    (lambda r: r.pop("region"), "row without a region"),
    (lambda r: r.update(gpu_type=""), "row without a gpu_type"),
])
def test_bad_rows_are_rejected_with_reasons(edit: Any, reason: str) -> None:
    doc = _rows()
    row = doc["server_meta"][1]  # RTX-PRO6000 container
    edit(row)
    result = jarvislabs.parse([_with_body(doc)])
    assert reason in {r.reason for r in result.rejects}
    assert len(result.offers) < 21


def test_duplicate_rows_are_rejected_not_doubled() -> None:
    doc = _rows()
    doc["server_meta"].append(dict(doc["server_meta"][-1]))
    result = jarvislabs.parse([_with_body(doc)])
    assert len(result.offers) == 21
    assert "row listed twice in one response" in {r.reason for r in result.rejects}


def test_currency_named_by_the_body_is_kept() -> None:
    doc = _rows()
    doc["currency"] = "INR"
    assert {o.currency for o in jarvislabs.parse([_with_body(doc)]).offers} == {"INR"}


@pytest.mark.parametrize(("body", "field"), [
    (b"<html><body>502 Bad Gateway</body></html>", None),
    (b'{"detail": "Not authenticated"}', "server_meta"),
    (b'{"server_meta": {"gpu_type": "L4"}}', "server_meta"),
    (b'{"server_meta": [], "currency": 840}', "currency"),
])
def test_wrong_shape_is_a_parse_error(body: bytes, field: str | None) -> None:
    capture = load_capture(SNAP, ASSEMBLED).model_copy(update={"body": body})
    with pytest.raises(ParseError) as err:
        jarvislabs.parse([capture])
    assert err.value.field == field
    assert err.value.url == URL


@pytest.mark.parametrize(("old", "new"), [("gpu_type", "gpu"), ("price_per_hour", "price")])
def test_renamed_field_is_a_parse_error(old: str, new: str) -> None:
    doc = _rows()
    doc["server_meta"] = [{(new if k == old else k): v for k, v in r.items()}
                          for r in doc["server_meta"]]
    with pytest.raises(ParseError) as err:
        jarvislabs.parse([_with_body(doc)])
    assert err.value.field == old


def test_fetch_needs_the_api_key() -> None:
    with (HttpClient("jarvislabs", transport=ReplayTransport(SNAPSHOTS_DIR)) as client,
          pytest.raises(MissingCredentialsError) as err):
        jarvislabs.fetch(client, {})
    assert err.value.variable == "JL_API_KEY"


def test_offline_fetch_serves_the_bundled_body() -> None:
    with HttpClient("jarvislabs", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = jarvislabs.fetch(client, {"JL_API_KEY": "replay"})
    assert [c.body for c in captures] == [(SNAP / ASSEMBLED).read_bytes()]
    assert captures[0].url == URL
    assert len(jarvislabs.parse(captures).offers) == 21


def test_live_fetch_sends_the_key_as_bearer_and_never_keeps_it() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"server_meta": [], "cpu_meta": {}})

    with HttpClient("jarvislabs", transport=httpx.MockTransport(handler),
                    secrets=("jl_SECRET_KEY",)) as client:
        captures = jarvislabs.fetch(client, {"JL_API_KEY": "jl_SECRET_KEY"})
    assert str(seen[0].url) == URL
    assert seen[0].headers["authorization"] == "Bearer jl_SECRET_KEY"
    assert "SECRET" not in captures[0].model_dump_json()
    assert jarvislabs.parse(captures).offers == []
