"""adapters/primeintellect.py on the availability page Prime Intellect ships with its CLI."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from invariants import OfferInvariants, load_capture

from gpuscout.adapters import primeintellect
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, load_catalog
from gpuscout.core.errors import MissingCredentialsError, ParseError
from gpuscout.core.models import Availability, ParsedOffer, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "primeintellect"
FILE = "prime_cli_availability_response_6744759.json"
BASE = "https://api.primeintellect.ai/api/v1/availability/gpus"
URL = f"{BASE}?page=1&page_size=100"
A100_PCIE = "runpod|NVIDIA A100 80GB PCIe|1x|US-KS-2|secure_cloud|14c125g|on_demand"
H100_SXM = "runpod|NVIDIA H100 80GB HBM3|1x|CA-MTL-1|secure_cloud|28c251g|on_demand"
H100_PCIE = "runpod|NVIDIA H100 PCIe|1x|CA-MTL-3|secure_cloud|31c176g|on_demand"
GPU_IDS = {"A100_80GB PCIe": "a100-pcie-80gb", "A100_80GB SXM4": "a100-sxm-80gb",
           "H100_80GB SXM5": "h100-sxm-80gb", "H100_80GB PCIe": "h100-pcie-80gb"}


def _capture() -> Capture:
    return load_capture(SNAP, FILE)


def _doc() -> dict[str, Any]:
    return json.loads((SNAP / FILE).read_bytes())


def _with(doc: Any, url: str = URL, day: int = 16) -> Capture:
    return _capture().model_copy(update={
        "body": json.dumps(doc).encode(), "url": url,
        "fetched_at": datetime(2025, 11, day, 21, 56, 18, tzinfo=UTC)})


def _item(**changes: Any) -> dict[str, Any]:
    item = copy.deepcopy(_doc()["items"][0])
    item.update(changes)
    return item


def _by_key(offers: list[ParsedOffer]) -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in offers}


class TestPrimeIntellectInvariants(OfferInvariants):
    NAME = "primeintellect"
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return primeintellect.parse([_capture()]).offers


def test_bundled_page_is_eight_offers_of_an_incomplete_listing() -> None:
    result = primeintellect.parse([_capture()])
    assert (len(result.offers), len(result.rejects)) == (8, 0)
    assert result.complete is False  # 8 items of totalCount 608
    assert {(o.pricing_model, o.price_kind, o.currency, o.gpu_count) for o in result.offers} == {
        (PricingModel.ON_DEMAND, PriceKind.LISTED, "USD", 1)}
    assert {o.provider_data["cloud"] for o in result.offers} == {"runpod"}
    assert {o.availability for o in result.offers} == {Availability.LOW}


def test_a100_pcie_exact_values() -> None:
    o = _by_key(primeintellect.parse([_capture()]).offers)[A100_PCIE]
    assert (o.gpu_label, o.gpu_count, o.vram_gb_per_gpu) == ("A100_80GB PCIe", 1, 80)
    assert (o.price_per_hour, o.pricing_model, o.region) == (
        1.6567999999999998, PricingModel.ON_DEMAND, "US-KS-2")
    assert (o.instance_type, o.vcpus, o.ram_gb, o.disk_gb) == (
        "NVIDIA A100 80GB PCIe", 14, 125, 120)
    assert o.provider_data == {
        "cloud": "runpod", "cloud_instance_type": "NVIDIA A100 80GB PCIe",
        "cloud_data_center": "US-KS-2", "price_field": "onDemand",
        "price_basis": "per machine", "gpu_type": "A100_80GB", "socket": "PCIe",
        "prime_region": "united_states", "country": "US", "security": "secure_cloud",
        "stock_status": "Low", "gpu_memory_gb": 80, "disk_price_per_gb_hour": 0.00014,
        "disk_default_included_in_price": False}
    assert (o.source_url, o.observed_at) == (URL, datetime(2025, 11, 16, 21, 56, 18, tzinfo=UTC))


@pytest.mark.parametrize(("key", "label", "price", "region", "vcpus", "ram"), [
    (H100_SXM, "H100_80GB SXM5", 2.7068, "CA-MTL-1", 28, 251),
    (H100_PCIE, "H100_80GB PCIe", 2.4068, "CA-MTL-3", 31, 176),
    ("runpod|NVIDIA A100-SXM4-80GB|1x|US-WA-1|secure_cloud|32c250g|on_demand",
     "A100_80GB SXM4", 1.7568, "US-WA-1", 32, 250),
])
def test_rows(key: str, label: str, price: float, region: str, vcpus: float,
              ram: float) -> None:
    o = _by_key(primeintellect.parse([_capture()]).offers)[key]
    assert (o.gpu_label, o.price_per_hour, o.region, o.vcpus, o.ram_gb) == (
        label, price, region, vcpus, ram)


def test_every_label_resolves_to_its_gpu() -> None:
    catalog = load_catalog()
    for o in primeintellect.parse([_capture()]).offers:
        res = catalog.resolve("primeintellect", o.gpu_label, o.vram_gb_per_gpu)
        assert isinstance(res, Resolved) and res.gpu_id == GPU_IDS[o.gpu_label], o.offer_key


def test_community_and_spot_prices_and_stock_words() -> None:
    doc = {"totalCount": 4, "items": [
        _item(cloudId="c1", security="community_cloud", stockStatus="High",
              prices={"onDemand": 2.0, "communityPrice": 1.2, "currency": "USD"}),
        _item(cloudId="s1", isSpot=True, stockStatus="Unavailable",
              prices={"onDemand": 0.9, "communityPrice": None, "currency": "EUR"}),
        _item(cloudId="m1", stockStatus="Medium"),
        _item(cloudId="x1", stockStatus="Plenty"),
    ]}
    offers = {o.instance_type: o for o in primeintellect.parse([_with(doc)]).offers}
    assert (offers["c1"].price_per_hour, offers["c1"].provider_data["price_field"]) == (
        1.2, "communityPrice")
    assert offers["c1"].availability is Availability.IN_STOCK
    assert (offers["s1"].pricing_model, offers["s1"].currency, offers["s1"].availability) == (
        PricingModel.SPOT, "EUR", Availability.OUT_OF_STOCK)
    assert offers["s1"].offer_key.endswith("|spot")
    assert offers["m1"].availability is Availability.IN_STOCK
    assert offers["x1"].availability is Availability.UNKNOWN


@pytest.mark.parametrize(("memory", "gpu_type", "vram"), [
    (80, "H100_80GB", 80.0), (640, "H100_80GB", 80.0), (192, "H100_80GB", None),
    (80, "CPU_NODE", None),
])
def test_gpu_memory_of_a_multi_gpu_machine(memory: int, gpu_type: str,
                                           vram: float | None) -> None:
    doc = {"totalCount": 1, "items": [_item(gpuCount=8, gpuMemory=memory, gpuType=gpu_type,
                                            cloudId="n3-H100x8", prices={"onDemand": 19.12})]}
    (o,) = primeintellect.parse([_with(doc)]).offers
    assert (o.gpu_count, o.price_per_hour, o.vram_gb_per_gpu) == (8, 19.12, vram)


def test_bad_items_are_rejected() -> None:
    doc = {"totalCount": 7, "items": [
        _item(prices={"onDemand": None, "communityPrice": None}),
        _item(prices={"onDemand": "2.69"}),
        _item(gpuCount=0),
        _item(provider=None),
        _item(prices={"onDemand": 1.5, "currency": "dollars"}),
        "item",
        _item(cloudId="ok"),
    ]}
    result = primeintellect.parse([_with(doc)])
    assert [o.instance_type for o in result.offers] == ["ok"]
    assert [r.reason for r in result.rejects] == [
        "prices.onDemand is not a price: None",
        "prices.onDemand is not a price: '2.69'",
        "gpuCount is not a GPU count: 0",
        "provider is not a name: None",
        "prices.currency is not a currency code: 'dollars'",
        "item is not an object: str",
    ]


def test_one_key_at_two_prices_on_a_page_is_a_conflict() -> None:
    doc = {"totalCount": 2, "items": [_item(), _item(prices={"onDemand": 9.99})]}
    result = primeintellect.parse([_with(doc)])
    assert result.offers == []
    assert [r.reason for r in result.rejects] == [
        "the source gives this offer two different prices"] * 2


def test_pages_together_make_a_complete_listing() -> None:
    items = _doc()["items"]
    first = _with({"totalCount": 8, "items": items[:5]})
    second = _with({"totalCount": 8, "items": items[5:]}, url=f"{BASE}?page=2&page_size=100")
    both = primeintellect.parse([first, second])
    assert (len(both.offers), both.complete) == (8, True)
    assert primeintellect.parse([first]).complete is False
    again = _with({"totalCount": 8, "items": items[:5]}, day=17)  # page 1 read twice
    assert primeintellect.parse([first, again, second]).complete is True


def test_fetch_pages_until_the_total_and_stops_on_a_short_page() -> None:
    items = [_item(cloudId=f"id-{n}") for n in range(230)]
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        page = int(request.url.params["page"])
        size = int(request.url.params["page_size"])
        chunk = items[(page - 1) * size: page * size]
        return httpx.Response(200, json={"items": chunk, "totalCount": len(items)})

    with HttpClient("primeintellect", transport=httpx.MockTransport(handler)) as client:
        captures = primeintellect.fetch(client, {"PRIME_API_KEY": "pit_secret"})
    assert [str(r.url) for r in seen] == [f"{BASE}?page={p}&page_size=100" for p in (1, 2, 3)]
    assert {r.headers["authorization"] for r in seen} == {"Bearer pit_secret"}
    result = primeintellect.parse(captures)
    assert (len(result.offers), result.complete) == (230, True)


def test_fetch_stops_when_the_total_is_reached_on_a_full_page() -> None:
    items = [_item(cloudId=f"id-{n}") for n in range(100)]
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"items": items, "totalCount": 100})

    with HttpClient("primeintellect", transport=httpx.MockTransport(handler)) as client:
        primeintellect.fetch(client, {"PRIME_API_KEY": "k"})
    assert len(seen) == 1


def test_fetch_needs_the_api_key() -> None:
    with (HttpClient("primeintellect", transport=ReplayTransport(SNAPSHOTS_DIR)) as client,
          pytest.raises(MissingCredentialsError) as err):
        primeintellect.fetch(client, {})
    assert err.value.variable == "PRIME_API_KEY"


def test_offline_fetch_serves_the_bundled_page() -> None:
    with HttpClient("primeintellect", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = primeintellect.fetch(client, {"PRIME_API_KEY": "replay"})
    assert [c.url for c in captures] == [URL]
    assert [c.body for c in captures] == [(SNAP / FILE).read_bytes()]
    assert len(primeintellect.parse(captures).offers) == 8


@pytest.mark.parametrize(("body", "field"), [
    (b"<html>Bad Gateway</html>", None),
    (b'{"detail": "Invalid API key"}', "items"),
    (b'{"A100_80GB": [{"cloudId": "x"}]}', "items"),  # the legacy /availability map
    (b'{"items": [], "totalCount": "608"}', "totalCount"),
    (b'{"items": []}', "totalCount"),
])
def test_wrong_shape_is_a_parse_error(body: bytes, field: str | None) -> None:
    with pytest.raises(ParseError) as err:
        primeintellect.parse([_capture().model_copy(update={"body": body})])
    assert (err.value.field, err.value.url, err.value.provider) == (field, URL, "primeintellect")


@pytest.mark.parametrize(("old", "new"), [
    ("gpuType", "gpu_type"), ("prices", "pricing"), ("cloudId", "cloud_id"),
    ("gpuCount", "count"),
])
def test_renamed_field_is_a_parse_error(old: str, new: str) -> None:
    doc = _doc()
    doc["items"] = [{(new if k == old else k): v for k, v in i.items()} for i in doc["items"]]
    with pytest.raises(ParseError) as err:
        primeintellect.parse([_with(doc)])
    assert err.value.field == old


def test_capture_of_another_url_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        primeintellect.parse([_with(_doc(), url="https://api.primeintellect.ai/api/v1/pods")])
