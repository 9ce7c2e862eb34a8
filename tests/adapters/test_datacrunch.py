"""adapters/datacrunch.py on the recorded 2025 products table."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from invariants import OfferInvariants, load_capture, with_replaced

from gpuscout.adapters import datacrunch
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import ParsedOffer, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "datacrunch"
PAGE = "datacrunch_20250808081801.html"
URL = "https://datacrunch.io/products"
# Every GPU label on the page -> canonical GPU.
LABELS = {"B200 SXM6 180GB": "b200-sxm-180gb"}


def _page(capture: Capture | None = None) -> dict[str, ParsedOffer]:
    result = datacrunch.parse([capture or load_capture(SNAP, PAGE)])
    return {o.offer_key: o for o in result.offers}


def _mutated(old: str, new: str) -> Capture:
    return with_replaced(load_capture(SNAP, PAGE), old, new)


class TestDataCrunchInvariants(OfferInvariants):
    NAME = "datacrunch"
    EXPECTED_UNKNOWN = frozenset()

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return list(_page().values())


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


def test_every_label_resolves() -> None:
    catalog = load_catalog()
    offers = list(_page().values())
    assert {o.gpu_label for o in offers} == set(LABELS)
    for offer in offers:
        res = catalog.resolve("datacrunch", offer.gpu_label, offer.vram_gb_per_gpu)
        assert isinstance(res, Resolved) and res.gpu_id == LABELS[offer.gpu_label], offer.offer_key


def test_page_renamed_price_column_is_a_parse_error() -> None:
    capture = _mutated(">On demand price<", ">Price<")
    with pytest.raises(ParseError) as err:
        datacrunch.parse([capture])
    assert err.value.field == "on demand price"
    assert err.value.url == URL


def test_page_unreadable_price_is_rejected() -> None:
    result = datacrunch.parse([_mutated("$0.80/h", "Sold out")])
    assert "1B200.30V|spot" not in {o.offer_key for o in result.offers}
    assert [r.reason for r in result.rejects] == ["1B200.30V: unrecognised spot price 'Sold out'"]


def test_page_without_a_table_is_a_parse_error() -> None:
    capture = Capture(provider="datacrunch", url=URL, body=b"<html><h1>Verda</h1></html>",
                      fetched_at=datetime(2025, 8, 8, tzinfo=UTC))
    with pytest.raises(ParseError) as err:
        datacrunch.parse([capture])
    assert err.value.field == "Instance name"


def test_offline_fetch_serves_the_bundled_page() -> None:
    with HttpClient("datacrunch", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = datacrunch.fetch(client, {})
    assert len(captures) == 1
    assert captures[0].body == (SNAP / PAGE).read_bytes()
    assert captures[0].url == URL
    assert captures[0].fetched_at == datetime(2025, 8, 8, 8, 18, 1, tzinfo=UTC)
    assert len(datacrunch.parse(captures).offers) == 12
