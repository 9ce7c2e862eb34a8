"""adapters/hotaisle.py on the (fixture-derived) availability listings bundled as the Hot Aisle
snapshot: gpuhunt's VM and bare-metal payloads (adapters/snapshots/hotaisle/PROVENANCE.md)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from invariants import OfferInvariants, load_capture, with_replaced

from gpuscout.adapters import hotaisle
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, load_catalog
from gpuscout.core.errors import MissingCredentialsError, ParseError
from gpuscout.core.models import Availability, ParsedOffer, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "hotaisle"
VMS = "gpuhunt_fixture_virtual_machines_available_cdd58ac.json"
METAL = "gpuhunt_fixture_bare_metal_available_cdd58ac.json"
# The bundled manifest holds the URLs the offline refresh requests without credentials (the
# team handle is the refresh's placeholder); a capture shows them with the handle masked.
LISTED = "https://admin.hotaisle.app/api/teams/replay-placeholder/"
MASKED = "https://admin.hotaisle.app/api/teams/REDACTED/"
VMS_URL = LISTED + "virtual_machines/available/"
METAL_URL = LISTED + "bare_metal/available/"
VM_KEY = "vm|MI300X|1|13|240|12288|on_demand"
METAL_KEY = "bare_metal|MI300X|8|104|2048|115334.982422|on_demand"
PLACEHOLDERS = {"HOTAISLE_API_KEY": "replay-placeholder",
                "HOTAISLE_TEAM_HANDLE": "replay-placeholder"}


def _captures() -> list[Capture]:
    return [load_capture(SNAP, VMS), load_capture(SNAP, METAL)]


def _doc(file: str) -> list[Any]:
    return json.loads((SNAP / file).read_bytes())


def _with(file: str, doc: Any) -> Capture:
    return load_capture(SNAP, file).model_copy(update={"body": json.dumps(doc).encode()})


def _by_key(offers: list[ParsedOffer]) -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in offers}


class TestHotAisleInvariants(OfferInvariants):
    NAME = "hotaisle"
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return hotaisle.parse(_captures()).offers


def test_bundled_listings_counts() -> None:
    result = hotaisle.parse(_captures())
    assert (len(result.offers), len(result.rejects), result.complete) == (2, 0, True)
    assert set(_by_key(result.offers)) == {VM_KEY, METAL_KEY}
    assert {o.currency for o in result.offers} == {"USD"}
    assert {o.price_kind for o in result.offers} == {PriceKind.LISTED}
    assert {o.pricing_model for o in result.offers} == {PricingModel.ON_DEMAND}
    assert {o.region for o in result.offers} == {None}  # the API states no location


def test_vm_offer_exact_values() -> None:
    o = _by_key(hotaisle.parse(_captures()).offers)[VM_KEY]
    assert (o.gpu_label, o.gpu_count, o.vram_gb_per_gpu, o.instance_type) == (
        "MI300X", 1, None, None)
    assert (o.price_per_hour, o.currency, o.pricing_model) == (1.99, "USD",
                                                                PricingModel.ON_DEMAND)
    assert (o.vcpus, o.ram_gb, o.disk_gb) == (13, 240.0, 12288.0)
    # gpuhunt's VM payload has no Quantity: stock is unknown, not zero.
    assert (o.availability, o.available_count) == (Availability.UNKNOWN, None)
    assert o.provider_data == {"kind": "vm", "gpu_manufacturer": None,
                               "cpu_model": "Xeon Platinum 8470", "cpu_cores": 13.0,
                               "minimum_reservation_minutes": None,
                               "on_demand_price_cents": 199.0}
    assert o.source_url == VMS_URL
    assert o.observed_at == datetime(2026, 8, 14, 8, 59, 43, tzinfo=UTC)


def test_bare_metal_offer_exact_values() -> None:
    o = _by_key(hotaisle.parse(_captures()).offers)[METAL_KEY]
    assert (o.gpu_label, o.gpu_count, o.price_per_hour) == ("MI300X", 8, 27.12)
    # 104 physical cores (2 x 52): the thread count is not stated.
    assert (o.vcpus, o.ram_gb) == (None, 2048.0)
    assert o.disk_gb == pytest.approx(115334.98, abs=0.01)
    assert (o.availability, o.available_count) == (Availability.IN_STOCK, 1)
    assert o.provider_data == {"kind": "bare_metal", "gpu_manufacturer": "AMD",
                               "cpu_model": "Xeon Platinum 8470", "cpu_cores": 104.0,
                               "minimum_reservation_minutes": 480.0,
                               "on_demand_price_cents": 2712.0}
    assert o.source_url == METAL_URL


def test_label_resolves_to_the_mi300x() -> None:
    catalog = load_catalog()
    for o in hotaisle.parse(_captures()).offers:
        res = catalog.resolve("hotaisle", o.gpu_label, o.vram_gb_per_gpu)
        assert isinstance(res, Resolved) and res.gpu_id == "mi300x-192gb"


def test_quantity_zero_is_out_of_stock() -> None:
    doc = _doc(METAL)
    doc[0]["Quantity"] = 0
    o = hotaisle.parse([_with(METAL, doc), load_capture(SNAP, VMS)]).offers
    metal = _by_key(o)[METAL_KEY]
    assert (metal.availability, metal.available_count) == (Availability.OUT_OF_STOCK, 0)


def test_null_body_is_nothing_available() -> None:
    empty = load_capture(SNAP, METAL).model_copy(update={"body": b"null"})
    result = hotaisle.parse([load_capture(SNAP, VMS), empty])
    assert [o.offer_key for o in result.offers] == [VM_KEY]
    assert (result.rejects, result.complete) == ([], True)


def test_one_listing_alone_is_incomplete() -> None:
    result = hotaisle.parse([load_capture(SNAP, VMS)])
    assert (len(result.offers), result.complete) == (1, False)
    assert hotaisle.parse([]).complete is False


def test_bad_machine_types_are_rejected_and_cpu_only_ones_skipped() -> None:
    good = _doc(METAL)[0]

    def edit(**changes: Any) -> dict[str, Any]:
        item = copy.deepcopy(good)
        for path, value in changes.items():
            target = item
            *parents, last = path.split("__")
            for p in parents:
                target = target[p]
            target[last] = value
        return item

    mixed = [{"count": 4, "model": "MI300X"}, {"count": 4, "model": "MI325X"}]
    doc = [
        good,
        "MI300X",
        edit(Specs="none"),
        edit(Specs__gpus=mixed),
        edit(Specs__gpus=[{"count": 0, "model": "MI300X"}]),
        edit(Specs__gpus=[{"count": 8}]),
        edit(Specs__gpus={"count": 8, "model": "MI300X"}),
        edit(OnDemandPrice=0),
        edit(OnDemandPrice="2712"),
        edit(Quantity=-1),
        edit(Specs__gpus=[], Specs__cpu_cores=32),  # a CPU-only server
    ]
    result = hotaisle.parse([_with(METAL, doc), load_capture(SNAP, VMS)])
    assert sorted(r.reason for r in result.rejects) == sorted([
        "machine type is not an object: str",
        "Specs is not an object: 'none'",
        "machine with several GPU models: ['MI300X', 'MI325X']",
        "GPU count is not a count: [0]",
        "GPU without a model: [None]",
        "Specs.gpus is not a list of GPUs: {'count': 8, 'model': 'MI300X'}",
        "OnDemandPrice is not a price: 0",
        "OnDemandPrice is not a price: '2712'",
        "Quantity is not a count: -1",
    ])
    assert set(_by_key(result.offers)) == {VM_KEY, METAL_KEY}


def test_repeated_machine_type_is_one_offer() -> None:
    good = _doc(METAL)[0]
    result = hotaisle.parse([_with(METAL, [good, good]), load_capture(SNAP, VMS)])
    assert len(result.offers) == 2
    assert [r.reason for r in result.rejects] == ["machine type listed twice in one response"]


@pytest.mark.parametrize(("body", "field"), [
    (b"<html><body>Bad Gateway</body></html>", None),
    (b'{"detail": "Invalid token."}', None),
])
def test_wrong_shape_is_a_parse_error(body: bytes, field: str | None) -> None:
    with pytest.raises(ParseError) as err:
        hotaisle.parse([load_capture(SNAP, VMS).model_copy(update={"body": body})])
    assert err.value.field == field
    assert err.value.provider == "hotaisle" and err.value.url == VMS_URL


@pytest.mark.parametrize(("file", "old", "new"), [
    (VMS, "OnDemandPrice", "OnDemandPriceCents"),
    (METAL, "Specs", "Spec"),
    (VMS, "cpu_cores", "cores_total"),
    (METAL, "ram_capacity", "ram_bytes"),
    (METAL, '"gpus"', '"accelerators"'),
])
def test_renamed_field_is_a_parse_error(file: str, old: str, new: str) -> None:
    with pytest.raises(ParseError) as err:
        hotaisle.parse([with_replaced(load_capture(SNAP, file), old, new)])
    assert err.value.field == old.strip('"')


def test_capture_from_another_url_is_a_parse_error() -> None:
    capture = load_capture(SNAP, VMS).model_copy(
        update={"url": MASKED + "virtual_machines/"})
    with pytest.raises(ParseError):
        hotaisle.parse([capture])


@pytest.mark.parametrize("missing", ["HOTAISLE_API_KEY", "HOTAISLE_TEAM_HANDLE"])
def test_fetch_needs_the_key_and_the_team(missing: str) -> None:
    creds = {k: v for k, v in PLACEHOLDERS.items() if k != missing}
    with (HttpClient("hotaisle", transport=ReplayTransport(SNAPSHOTS_DIR)) as client,
          pytest.raises(MissingCredentialsError) as err):
        hotaisle.fetch(client, creds)
    assert err.value.variable == missing


def test_offline_fetch_serves_both_listings() -> None:
    # What the offline refresh does: placeholder credentials, masked like secrets.
    with HttpClient("hotaisle", transport=ReplayTransport(SNAPSHOTS_DIR),
                    secrets=tuple(PLACEHOLDERS.values())) as client:
        captures = hotaisle.fetch(client, PLACEHOLDERS)
    assert [c.url for c in captures] == [MASKED + "virtual_machines/available/",
                                         MASKED + "bare_metal/available/"]
    assert [c.body for c in captures] == [(SNAP / VMS).read_bytes(),
                                          (SNAP / METAL).read_bytes()]
    assert len(hotaisle.parse(captures).offers) == 2


def test_live_fetch_sends_the_token_and_masks_the_team() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = b"null" if "bare_metal" in request.url.path else b"[]"
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})

    creds = {"HOTAISLE_API_KEY": "ha-SECRET-KEY", "HOTAISLE_TEAM_HANDLE": "acme-team"}
    with HttpClient("hotaisle", transport=httpx.MockTransport(handler),
                    secrets=tuple(creds.values())) as client:
        captures = hotaisle.fetch(client, creds)
    assert [str(r.url) for r in seen] == [
        "https://admin.hotaisle.app/api/teams/acme-team/virtual_machines/available/",
        "https://admin.hotaisle.app/api/teams/acme-team/bare_metal/available/"]
    assert {r.headers["authorization"] for r in seen} == {"Token ha-SECRET-KEY"}
    assert [c.url for c in captures] == [MASKED + "virtual_machines/available/",
                                         MASKED + "bare_metal/available/"]
    result = hotaisle.parse(captures)
    assert (result.offers, result.rejects, result.complete) == ([], [], True)
