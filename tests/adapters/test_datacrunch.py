"""adapters/datacrunch.py on the recorded 2026 verda.com/pricing JSON-LD and the 2025 products
table (tests/fixtures/datacrunch)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from invariants import FIXTURES, OfferInvariants, load_capture, with_replaced

from gpuscout.adapters import datacrunch
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import ParsedOffer, ParseResult, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "datacrunch"
OLD = FIXTURES / "datacrunch"
JSONLD = "verda_pricing_gpu_index_055204a_2026-08-22.html"  # bundled, served by the replay
PAGE = "datacrunch_20250808081801.html"  # 2025 products table, a test fixture
URL = "https://datacrunch.io/products"
PRICING_URL = "https://verda.com/pricing"
# Every GPU label on the 2025 page -> canonical GPU.
LABELS = {"B200 SXM6 180GB": "b200-sxm-180gb"}


def _page(capture: Capture | None = None) -> dict[str, ParsedOffer]:
    result = datacrunch.parse([capture or load_capture(OLD, PAGE)])
    return {o.offer_key: o for o in result.offers}


def _mutated(old: str, new: str) -> Capture:
    return with_replaced(load_capture(OLD, PAGE), old, new)


def _jsonld_capture() -> Capture:
    return load_capture(SNAP, JSONLD)


def _jsonld(capture: Capture | None = None) -> ParseResult:
    return datacrunch.parse([capture or _jsonld_capture()])


def _jsonld_mutated(old: str, new: str, *, exactly_once: bool = True) -> Capture:
    return with_replaced(_jsonld_capture(), old, new, exactly_once=exactly_once)


class TestDataCrunchInvariants(OfferInvariants):
    NAME = "datacrunch"
    # "GB300 SXM6": the GB300 superchip and the B300's SXM6 board at once (alias file)
    EXPECTED_UNKNOWN = frozenset({"GB300 SXM6 288GB"})

    @pytest.fixture(params=["jsonld", "table"])
    def offers(self, request: pytest.FixtureRequest) -> list[ParsedOffer]:
        if request.param == "jsonld":
            return _jsonld().offers
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
    assert datacrunch.parse([load_capture(OLD, PAGE)]).rejects == []


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


def test_page_every_label_resolves() -> None:
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


def test_page_without_a_table_or_jsonld_is_a_parse_error() -> None:
    capture = Capture(provider="datacrunch", url=PRICING_URL, body=b"<html><h1>Verda</h1></html>",
                      fetched_at=datetime(2026, 8, 22, tzinfo=UTC))
    with pytest.raises(ParseError) as err:
        datacrunch.parse([capture])
    assert err.value.field == "application/ld+json"
    assert err.value.url == PRICING_URL


# -- 2026 pricing page: JSON-LD Offer nodes -----------------------------------------------------

# Every GPU label of the JSON-LD -> canonical GPU (CC rows: core/data/aliases/datacrunch.csv);
# None: unknown on purpose (the label contradicts every catalog row).
JSONLD_LABELS: dict[str, str | None] = {
    "GB300 SXM6 288GB": None, "B300 SXM6 268GB": "b300-sxm-288gb",
    "B200 SXM6 180GB": "b200-sxm-180gb", "H200 SXM5 141GB": "h200-sxm-141gb",
    "H100 SXM5 80GB": "h100-sxm-80gb", "A100 SXM4 80GB": "a100-sxm-80gb",
    "A100 SXM4 40GB": "a100-sxm-40gb", "Tesla V100 16GB": "v100-sxm2-16gb",
    "RTX PRO 6000 96GB": "rtx-pro-6000-96gb", "L40S 48GB": "l40s-48gb",
    "RTX 6000 Ada 48GB": "rtx-6000-ada-48gb", "RTX A6000 48GB": "rtx-a6000-48gb",
    "RTX PRO 6000 CC 96GB": "rtx-pro-6000-96gb", "B300 CC SXM6 268GB": "b300-sxm-288gb",
    "B200 CC SXM6 180GB": "b200-sxm-180gb",
}
# 1x instances: label -> (on-demand, spot) per hour, as the page states them.
INSTANCES = {
    "GB300 SXM6 288GB": (8.62, 4.31), "B300 SXM6 268GB": (7.5, 3.75),
    "B200 SXM6 180GB": (6.11, 3.055), "H200 SXM5 141GB": (4.0, 2.0),
    "H100 SXM5 80GB": (3.25, 1.625), "A100 SXM4 80GB": (1.79, 0.895),
    "A100 SXM4 40GB": (1.29, 0.645), "Tesla V100 16GB": (0.17, 0.085),
    "RTX PRO 6000 96GB": (1.89, 0.945), "L40S 48GB": (1.37, 0.685),
    "RTX 6000 Ada 48GB": (1.04, 0.52), "RTX A6000 48GB": (0.61, 0.305),
    "RTX PRO 6000 CC 96GB": (1.928, 0.9639), "B300 CC SXM6 268GB": (7.65, 3.825),
    "B200 CC SXM6 180GB": (6.232, 3.116),
}


def test_jsonld_counts() -> None:
    result = _jsonld()
    offers = result.offers
    assert len(offers) == 86
    instances = [o for o in offers if o.provider_data["product"] == "instance"]
    clusters = [o for o in offers if o.provider_data["product"] == "instant cluster"]
    assert (len(instances), len(clusters)) == (30, 56)
    assert sum(o.pricing_model is PricingModel.SPOT for o in offers) == 15
    assert all(o.pricing_model is PricingModel.ON_DEMAND for o in clusters)
    assert {o.currency for o in offers} == {"USD"}
    assert {o.observed_at for o in offers} == {datetime(2026, 8, 22, tzinfo=UTC)}
    assert result.complete is True


def test_jsonld_every_instance_price() -> None:
    instances = [o for o in _jsonld().offers if o.provider_data["product"] == "instance"]
    got = {(o.gpu_label, o.pricing_model): o.price_per_hour for o in instances}
    want = {(label, model): price for label, pair in INSTANCES.items()
            for model, price in zip((PricingModel.ON_DEMAND, PricingModel.SPOT), pair,
                                    strict=True)}
    assert got == want
    assert all(o.gpu_count == 1 for o in instances)


def test_jsonld_clusters_are_whole_cluster_prices() -> None:
    offers = {o.offer_key: o for o in _jsonld().offers}
    b300 = offers["104x B300 SXM6 268GB|on_demand|instant_cluster"]
    assert (b300.gpu_count, b300.price_per_hour, b300.vram_gb_per_gpu) == (104, 780.0, 268.0)
    assert b300.price_per_hour == 104 * offers["1x B300 SXM6 268GB|on_demand"].price_per_hour
    assert offers["8x GB300 SXM6 288GB|on_demand|instant_cluster"].price_per_hour == 68.96
    assert offers["72x GB300 SXM6 288GB|on_demand|instant_cluster"].price_per_hour == 620.6
    assert offers["144x B300 SXM6 268GB|on_demand|instant_cluster"].price_per_hour == 1080.0
    assert offers["128x B200 SXM6 180GB|on_demand|instant_cluster"].price_per_hour == 782.1
    assert offers["64x H200 SXM5 141GB|on_demand|instant_cluster"].price_per_hour == 256.0
    sizes = {label: sorted(int(o.gpu_count) for o in offers.values()
                           if o.gpu_label == label and o.provider_data["product"] != "instance")
             for label in ("GB300 SXM6 288GB", "B300 SXM6 268GB", "B200 SXM6 180GB",
                           "H200 SXM5 141GB")}
    assert sizes == {"GB300 SXM6 288GB": list(range(8, 73, 4)),
                     "B300 SXM6 268GB": list(range(16, 145, 8)),
                     "B200 SXM6 180GB": list(range(16, 129, 8)),
                     "H200 SXM5 141GB": list(range(16, 65, 8))}


def test_jsonld_b200_spot_in_full() -> None:
    offer = next(o for o in _jsonld().offers if o.offer_key == "1x B200 SXM6 180GB|spot")
    assert offer.model_dump() == {
        "provider": "datacrunch", "offer_key": "1x B200 SXM6 180GB|spot", "instance_type": None,
        "gpu_label": "B200 SXM6 180GB", "gpu_count": 1, "vram_gb_per_gpu": 180.0,
        "pricing_model": PricingModel.SPOT, "price_per_hour": 3.055, "currency": "USD",
        "price_kind": PriceKind.LISTED, "region": None, "zone": None, "vcpus": None,
        "ram_gb": None, "disk_gb": None, "interconnect": None, "interconnect_gbps": None,
        "network": None, "network_gbps": None, "billing_increment_s": None,
        "availability": "unknown", "available_count": None, "source_url": PRICING_URL,
        "observed_at": datetime(2026, 8, 22, tzinfo=UTC),
        "provider_data": {"source": "pricing page JSON-LD", "product": "instance"},
    }


def test_jsonld_verbatim_repeats_are_one_offer() -> None:
    keys = [o.offer_key for o in _jsonld().offers]
    assert keys.count("1x H100 SXM5 80GB|on_demand") == 1
    assert keys.count("1x H100 SXM5 80GB|spot") == 1


def test_jsonld_serverless_and_storage_are_not_read() -> None:
    offers = _jsonld().offers
    # 53.77 is only the 8x B200 serverless container; 0.2 only storage per GiB-month.
    assert not {o.price_per_hour for o in offers} & {53.77, 0.2}
    assert not [o for o in offers if "serverless" in o.offer_key or "storage" in o.offer_key]


def test_jsonld_blank_gpu_offers_are_rejected() -> None:
    rejects = _jsonld().rejects
    assert len(rejects) == 18
    assert {r.reason for r in rejects} == {
        "offer ' on-demand': no GPU count and model before the tier",
        "offer ' spot': no GPU count and model before the tier"}
    assert all(r.offer_key is None for r in rejects)


def test_jsonld_every_label_resolves() -> None:
    catalog = load_catalog()
    offers = _jsonld().offers
    assert {o.gpu_label for o in offers} == set(JSONLD_LABELS)
    for offer in offers:
        res = catalog.resolve("datacrunch", offer.gpu_label, offer.vram_gb_per_gpu)
        if JSONLD_LABELS[offer.gpu_label] is None:
            assert not isinstance(res, Resolved), (offer.offer_key, res)
            continue
        assert isinstance(res, Resolved), (offer.offer_key, res)
        assert res.gpu_id == JSONLD_LABELS[offer.gpu_label], offer.offer_key


def test_jsonld_renamed_price_field_is_a_parse_error() -> None:
    capture = _jsonld_mutated('"price":', '"amount":', exactly_once=False)
    with pytest.raises(ParseError) as err:
        datacrunch.parse([capture])
    assert err.value.field == "price"
    assert err.value.url == PRICING_URL


def test_jsonld_renamed_name_field_is_a_parse_error() -> None:
    capture = _jsonld_mutated('","name":"', '","title":"', exactly_once=False)
    with pytest.raises(ParseError) as err:
        datacrunch.parse([capture])
    assert err.value.field == "name"


def test_jsonld_without_offers_is_a_parse_error() -> None:
    capture = _jsonld_mutated('"@type":"Offer"', '"@type":"Product"', exactly_once=False)
    with pytest.raises(ParseError) as err:
        datacrunch.parse([capture])
    assert err.value.field == "Offer"


def test_jsonld_without_instance_offers_is_a_parse_error() -> None:
    body = _jsonld_capture().body
    start = body.index(b'{"@id":"https://verda.com/pricing#offer-161"')
    end = body.index(b',{"@id":"https://verda.com/pricing#offer-162"')
    only_storage = (b'<script type="application/ld+json">{"@context":"https://schema.org",'
                    b'"@graph":[' + body[start:end] + b"]}</script>")
    capture = _jsonld_capture().model_copy(update={"body": only_storage})
    with pytest.raises(ParseError) as err:
        datacrunch.parse([capture])
    assert err.value.field == "name"


def test_jsonld_that_is_not_json_is_a_parse_error() -> None:
    capture = _jsonld_mutated('"@context":"https://schema.org",', '"@context":')
    with pytest.raises(ParseError) as err:
        datacrunch.parse([capture])
    assert err.value.field == "application/ld+json"


def test_jsonld_price_fields_that_disagree_are_a_reject() -> None:
    result = _jsonld(_jsonld_mutated('"UnitPriceSpecification","price":3.055,',
                                     '"UnitPriceSpecification","price":3.1,'))
    assert "1x B200 SXM6 180GB|spot" not in {o.offer_key for o in result.offers}
    assert len(result.offers) == 85
    bad = [r for r in result.rejects if r.offer_key == "1x B200 SXM6 180GB|spot"]
    assert [r.reason for r in bad] == [
        "offer '1x B200 SXM6 180GB spot': price 3.055 != priceSpecification 3.1"]


def test_jsonld_description_that_contradicts_the_name_is_a_reject() -> None:
    result = _jsonld(_jsonld_mutated(
        '"name":"1x GB300 SXM6 288GB spot","description":"Hourly spot instance price"',
        '"name":"1x GB300 SXM6 288GB spot","description":"Hourly on-demand instance price"'))
    assert "1x GB300 SXM6 288GB|spot" not in {o.offer_key for o in result.offers}
    assert len(result.offers) == 85
    assert ("offer '1x GB300 SXM6 288GB spot': description 'Hourly on-demand instance price' "
            "does not match its name ('Hourly spot instance price')") in {
                r.reason for r in result.rejects}


def test_jsonld_unknown_tier_or_unit_is_a_reject() -> None:
    capture = _jsonld_mutated('"name":"1x L40S 48GB spot"', '"name":"1x L40S 48GB reserved"')
    result = _jsonld(capture)
    assert "offer '1x L40S 48GB reserved': unknown tier phrase" in {
        r.reason for r in result.rejects}
    next_offer = '}},{"@id":"https://verda.com/pricing#offer-18"'  # after the 1x V100 on-demand
    per_minute = _jsonld(_jsonld_mutated(f'"unitText":"hour"{next_offer}',
                                         f'"unitText":"minute"{next_offer}'))
    assert "1x Tesla V100 16GB|on_demand" not in {o.offer_key for o in per_minute.offers}
    assert [r.reason for r in per_minute.rejects if r.offer_key] == [
        "offer '1x Tesla V100 16GB on-demand': price per 'minute', not per hour"]


def test_both_formats_parse_together() -> None:
    offers = datacrunch.parse([_jsonld_capture(), load_capture(OLD, PAGE)]).offers
    assert len(offers) == 86 + 12  # keys differ: instance types (2025) vs offer names (2026)
    assert {o.source_url for o in offers} == {URL, PRICING_URL}


def test_offline_fetch_serves_the_bundled_page() -> None:
    with HttpClient("datacrunch", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = datacrunch.fetch(client, {})
    assert len(captures) == 1
    assert captures[0].body == (SNAP / JSONLD).read_bytes()
    assert captures[0].url == PRICING_URL
    assert captures[0].fetched_at == datetime(2026, 8, 22, tzinfo=UTC)
    assert len(datacrunch.parse(captures).offers) == 86
