"""adapters/datacrunch.py on the recorded 2025 products table and the API fixtures."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from gpuscout.adapters import datacrunch
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import Availability, ParsedOffer, PriceKind, PricingModel
from invariants import FIXTURES, OfferInvariants, load_capture, with_replaced

SNAP = SNAPSHOTS_DIR / "datacrunch"
FIX = FIXTURES / "datacrunch"
PAGE = "datacrunch_20250808081801.html"
TYPES = "gpuhunt_fixture_instance_types.json"
LOCATIONS = "gpuhunt_fixture_locations.json"
SPOT = "gpuhunt_fixture_spot_availabilities.json"
URL = "https://datacrunch.io/products"
TYPES_URL = "https://api.verda.com/v1/instance-types?currency=usd"
# Every GPU label in the page and the fixtures -> canonical GPU.
LABELS = {"B200 SXM6 180GB": "b200-sxm-180gb", "H100 SXM5 80GB": "h100-sxm-80gb",
          "RTX A6000 48GB": "rtx-a6000-48gb", "Tesla V100 16GB": "v100-sxm2-16gb"}


def _page(capture: Capture | None = None) -> dict[str, ParsedOffer]:
    result = datacrunch.parse([capture or load_capture(SNAP, PAGE)])
    return {o.offer_key: o for o in result.offers}


def _api(*files: str) -> dict[str, ParsedOffer]:
    result = datacrunch.parse([load_capture(FIX, f) for f in files])
    assert result.rejects == []
    return {o.offer_key: o for o in result.offers}


def _mutated(folder_file: tuple[str, str], old: str, new: str) -> Capture:
    folder, file = folder_file
    capture = load_capture(SNAP if folder == "snap" else FIX, file)
    return with_replaced(capture, old, new)


class TestDataCrunchInvariants(OfferInvariants):
    NAME = "datacrunch"
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture(params=["page", "api"])
    def offers(self, request: pytest.FixtureRequest) -> list[ParsedOffer]:
        if request.param == "page":
            return list(_page().values())
        return list(_api(TYPES, LOCATIONS, SPOT).values())


def test_page_three_prices_per_instance() -> None:
    assert {k: o.price_per_hour for k, o in _page().items()} == {
        "1B200.30V|on_demand": 3.64, "1B200.30V|on_demand|dynamic": 2.68,
        "1B200.30V|spot": 0.8,
        "2B200.60V|on_demand": 7.27, "2B200.60V|on_demand|dynamic": 5.36,
        "2B200.60V|spot": 1.61,
        "4B200.120V|on_demand": 14.55, "4B200.120V|on_demand|dynamic": 10.71,
        "4B200.120V|spot": 3.21,
        "8B200.240V|on_demand": 29.1, "8B200.240V|on_demand|dynamic": 21.42,
        "8B200.240V|spot": 6.43,
    }
    assert datacrunch.parse([load_capture(SNAP, PAGE)]).rejects == []


def test_page_8x_b200_spot_in_full() -> None:
    offer = _page()["8B200.240V|spot"]
    assert offer.model_dump() == {
        "provider": "datacrunch", "offer_key": "8B200.240V|spot", "instance_type": "8B200.240V",
        "gpu_label": "B200 SXM6 180GB", "gpu_count": 8,
        "vram_gb_per_gpu": 180.0,  # the VRAM column is the instance's 1440 GB
        "pricing_model": PricingModel.SPOT, "price_per_hour": 6.43, "currency": "USD",
        "price_kind": PriceKind.LISTED, "region": None, "zone": None, "vcpus": 240.0,
        "ram_gb": 1472.0, "disk_gb": None, "interconnect": None, "interconnect_gbps": 1800.0,
        "network": None, "network_gbps": None, "billing_increment_s": None,
        "availability": "unknown", "available_count": None, "source_url": URL,
        "observed_at": datetime(2025, 8, 8, 8, 18, 1, tzinfo=UTC),
        "provider_data": {"source": "products page", "p2p": "1.8 TB/s"},
    }


def test_page_dynamic_price_is_on_demand_with_its_own_key() -> None:
    offers = _page()
    dynamic = offers["2B200.60V|on_demand|dynamic"]
    assert dynamic.pricing_model is PricingModel.ON_DEMAND
    assert dynamic.provider_data["price_type"] == "dynamic: updates daily; fixed-price otherwise"
    assert dynamic.interconnect_gbps == 900.0
    single = offers["1B200.30V|on_demand"]
    assert (single.interconnect_gbps, "p2p" in single.provider_data) == (None, False)  # "/"


def test_api_offers_with_spot_availability() -> None:
    offers = _api(TYPES, LOCATIONS, SPOT)
    assert {k: (o.price_per_hour, o.availability.value) for k, o in offers.items()} == {
        "1H100.80S.30V|on_demand": (3.95, "unknown"),
        "1H100.80S.30V|spot": (1.7, "out_of_stock"),
        "2A6000.20V|on_demand": (1.98, "unknown"),
        "2A6000.20V|spot": (0.7, "in_stock"),
        "1V100.6V|on_demand": (0.89, "unknown"),
        "1V100.6V|spot": (0.25, "in_stock"),
    }
    a6000 = offers["2A6000.20V|spot"]
    assert (a6000.gpu_label, a6000.gpu_count, a6000.vram_gb_per_gpu, a6000.vcpus, a6000.ram_gb,
            a6000.interconnect_gbps, a6000.region, a6000.source_url) == (
        "RTX A6000 48GB", 2, 48.0, 20.0, 120.0, 50.0, None, TYPES_URL)
    assert a6000.provider_data == {"source": "api", "spot_locations": "FIN-01",
                                   "spot_countries": "FI", "p2p": "50GB/s"}
    assert offers["1V100.6V|on_demand"].disk_gb == 225.0
    assert "CPU.120V.480G" not in {o.instance_type for o in offers.values()}


def test_api_without_availability_leaves_spot_unknown() -> None:
    offers = _api(TYPES)
    assert len(offers) == 6
    assert {o.availability for o in offers.values()} == {Availability.UNKNOWN}


def test_api_prices_are_strings_and_a_bad_one_is_rejected() -> None:
    capture = _mutated(("fix", TYPES), '"spot_price": "0.70"', '"spot_price": "n/a"')
    result = datacrunch.parse([capture])
    assert "2A6000.20V|spot" not in {o.offer_key for o in result.offers}
    assert [r.reason for r in result.rejects] == ["2A6000.20V: spot_price is not a price: 'n/a'"]


def test_api_and_page_keys_are_the_same_scheme() -> None:
    # Switching the live path to the API keeps each shape's price history linked.
    page_keys = set(_page())
    assert {"1B200.30V|on_demand", "1B200.30V|spot"} <= page_keys
    assert {"1H100.80S.30V|on_demand", "1H100.80S.30V|spot"} <= set(_api(TYPES))


def test_every_label_resolves() -> None:
    catalog = load_catalog()
    offers = [*_page().values(), *_api(TYPES, LOCATIONS, SPOT).values()]
    assert {o.gpu_label for o in offers} == set(LABELS)
    for offer in offers:
        res = catalog.resolve("datacrunch", offer.gpu_label, offer.vram_gb_per_gpu)
        assert isinstance(res, Resolved) and res.gpu_id == LABELS[offer.gpu_label], offer.offer_key


def test_page_renamed_price_column_is_a_parse_error() -> None:
    capture = _mutated(("snap", PAGE), ">On demand price<", ">Price<")
    with pytest.raises(ParseError) as err:
        datacrunch.parse([capture])
    assert err.value.field == "on demand price"
    assert err.value.url == URL


def test_page_unreadable_price_is_rejected() -> None:
    result = datacrunch.parse([_mutated(("snap", PAGE), "$0.80/h", "Sold out")])
    assert "1B200.30V|spot" not in {o.offer_key for o in result.offers}
    assert [r.reason for r in result.rejects] == ["1B200.30V: unrecognised spot price 'Sold out'"]


def test_page_without_a_table_is_a_parse_error() -> None:
    capture = Capture(provider="datacrunch", url=URL, body=b"<html><h1>Verda</h1></html>",
                      fetched_at=datetime(2025, 8, 8, tzinfo=UTC))
    with pytest.raises(ParseError) as err:
        datacrunch.parse([capture])
    assert err.value.field == "Instance name"


def test_api_renamed_field_is_a_parse_error() -> None:
    capture = _mutated(("fix", TYPES), '"price_per_hour"', '"pricePerHour"')
    with pytest.raises(ParseError) as err:
        datacrunch.parse([capture])
    assert err.value.field == "price_per_hour"
    assert err.value.url == TYPES_URL


def test_api_wrong_shape_is_a_parse_error() -> None:
    types = load_capture(FIX, TYPES)
    with pytest.raises(ParseError) as err:
        datacrunch.parse([types.model_copy(update={"body": b'{"error": "unauthorized"}'})])
    assert err.value.field == "instance types"
    with pytest.raises(ParseError) as err:  # availability without the instance types
        datacrunch.parse([load_capture(FIX, SPOT)])
    assert err.value.field == "instance-types"


def test_offline_fetch_serves_the_bundled_page() -> None:
    with HttpClient("datacrunch", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = datacrunch.fetch(client, {})
    assert len(captures) == 1
    assert captures[0].body == (SNAP / PAGE).read_bytes()
    assert captures[0].url == URL
    assert captures[0].fetched_at == datetime(2025, 8, 8, 8, 18, 1, tzinfo=UTC)
    assert len(datacrunch.parse(captures).offers) == 12
