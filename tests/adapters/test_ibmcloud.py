"""adapters/ibmcloud.py on Global Catalog deployment-pricing bodies: the bundled response of
2026-10-05 for the gx3d-160x1792x8h100 plan (adapters/snapshots/ibmcloud/PROVENANCE.md) and
edits of it."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from invariants import OfferInvariants, load_capture

from gpuscout.adapters import ibmcloud
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import Availability, ParsedOffer, ParseResult, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "ibmcloud"
BODY = "deployment_pricing_compute_indices_9e714ef_2026-10-05.json"
URL = ("https://globalcatalog.cloud.ibm.com/api/v1/99548819-fcbc-486c-8eeb-0355a56b035e/"
       "pricing/deployment")
PROFILE = "gx3d-160x1792x8h100"
ON_DEMAND = f"part-is.instance-hours-{PROFILE}"
SPOT = f"part-is.spot-{PROFILE}"
RESERVATION = "part-is.instance-hours-reservation"
REGIONS = {"au-syd", "br-sao", "ca-tor", "eu-de", "eu-es", "eu-gb", "jp-tok", "us-east",
           "us-south"}


def _doc() -> dict[str, Any]:
    return json.loads((SNAP / BODY).read_bytes())


def _with(doc: Any) -> Capture:
    return load_capture(SNAP, BODY).model_copy(update={"body": json.dumps(doc).encode()})


def _parse(doc: Any) -> ParseResult:
    return ibmcloud.parse([_with(doc)])


def _by_key(offers: list[ParsedOffer]) -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in offers}


def _metric(doc: dict[str, Any], region: str, metric_id: str) -> dict[str, Any]:
    resource = next(r for r in doc["resources"] if r["deployment_region"] == region)
    return next(m for m in resource["metrics"] if m["metric_id"] == metric_id)


def _edited(region: str, metric_id: str, edit: Callable[[dict[str, Any]], None]) -> Any:
    doc = _doc()
    edit(_metric(doc, region, metric_id))
    return doc


class TestIbmCloudInvariants(OfferInvariants):
    NAME = "ibmcloud"

    @pytest.fixture
    def offers(self) -> list[ParsedOffer]:
        return ibmcloud.parse([load_capture(SNAP, BODY)]).offers


# -- the bundled response ---------------------------------------------------------------------


def test_bundled_response_is_one_on_demand_and_one_spot_offer_per_region() -> None:
    result = ibmcloud.parse([load_capture(SNAP, BODY)])
    assert (len(result.offers), result.rejects, result.complete) == (18, [], True)
    assert {o.region for o in result.offers} == REGIONS
    assert [o.pricing_model for o in result.offers].count(PricingModel.SPOT) == 9
    assert [o.pricing_model for o in result.offers].count(PricingModel.ON_DEMAND) == 9
    assert {(o.gpu_label, o.instance_type, o.gpu_count) for o in result.offers} == {
        (PROFILE, PROFILE, 8)}
    assert {(o.currency, o.price_kind, o.vram_gb_per_gpu) for o in result.offers} == {
        ("USD", PriceKind.LISTED, None)}
    assert {o.availability for o in result.offers} == {Availability.UNKNOWN}


def test_frankfurt_is_the_instance_price_of_eight_gpus() -> None:
    offers = _by_key(ibmcloud.parse([load_capture(SNAP, BODY)]).offers)
    de = offers[f"{PROFILE}|eu-de|on_demand"]
    # 99.60 USD per Instance-Hour for the whole instance: 12.45 per GPU-hour.
    assert (de.price_per_hour, de.provider_data["price_per_gpu_hour"]) == (99.6, 12.45)
    assert (de.pricing_model, de.region, de.zone) == (PricingModel.ON_DEMAND, "eu-de", None)
    assert de.provider_data == {
        "price_basis": "per Instance-Hour of the whole instance (all GPUs of the profile)",
        "price_per_gpu_hour": 12.45, "price_country": "USA",
        "plan_id": "99548819-fcbc-486c-8eeb-0355a56b035e", "metric_id": ON_DEMAND,
        "charge_unit": "Instance-Hour", "tier_model": "Linear Tier",
        "effective_from": "2026-10-01T00:00:00Z",
        "deployment_id": "99548819-fcbc-486c-8eeb-0355a56b035e:eu-de76e789ca",
        "deployment_location": "eu-de"}
    assert (de.source_url, de.observed_at) == (URL, datetime(2026, 10, 5, tzinfo=UTC))
    spot = offers[f"{PROFILE}|eu-de|spot"]
    assert (spot.pricing_model, spot.price_per_hour) == (PricingModel.SPOT, 24.8965)
    assert spot.provider_data["price_per_gpu_hour"] == 24.8965 / 8
    assert spot.provider_data["metric_id"] == SPOT


def test_pinned_prices_of_every_region() -> None:
    offers = _by_key(ibmcloud.parse([load_capture(SNAP, BODY)]).offers)
    prices = {key.split("|", 1)[1]: o.price_per_hour for key, o in offers.items()}
    assert prices == {
        "au-syd|spot": 26.18425, "au-syd|on_demand": 104.73,
        "br-sao|spot": 29.61825, "br-sao|on_demand": 118.5,
        "ca-tor|spot": 22.75025, "ca-tor|on_demand": 91.0,
        "eu-de|spot": 24.8965, "eu-de|on_demand": 99.6,
        "eu-es|spot": 24.8965, "eu-es|on_demand": 99.6,
        "eu-gb|spot": 24.252625, "eu-gb|on_demand": 97.01,
        "jp-tok|spot": 26.18425, "jp-tok|on_demand": 104.73,
        "us-east|spot": 21.4625, "us-east|on_demand": 85.85,
        "us-south|spot": 21.4625, "us-south|on_demand": 85.85}


def test_the_profile_resolves_to_eight_h100_sxm() -> None:
    res = load_catalog().resolve("ibmcloud", PROFILE)
    assert (getattr(res, "gpu_id", None), getattr(res, "gpu_count", None)) == (
        "h100-sxm-80gb", 8)


# -- the reservation meter --------------------------------------------------------------------


def test_the_reservation_meter_is_never_read_even_when_priced() -> None:
    doc = _doc()
    for resource in doc["resources"]:
        reservation = next(m for m in resource["metrics"] if m["metric_id"] == RESERVATION)
        reservation["amounts"][0]["prices"][0]["price"] = 50.0
    result = _parse(doc)
    assert (len(result.offers), result.rejects) == (18, [])
    assert all(o.price_per_hour != 50.0 for o in result.offers)
    assert all("reservation" not in str(o.provider_data["metric_id"]) for o in result.offers)


def test_only_reservation_meters_is_a_parse_error() -> None:
    doc = _doc()
    for resource in doc["resources"]:
        resource["metrics"] = [m for m in resource["metrics"] if m["metric_id"] == RESERVATION]
    with pytest.raises(ParseError) as err:
        _parse(doc)
    assert err.value.field == "metric_id"


# -- one odd region or meter is a Reject ------------------------------------------------------


def _region_rejected(doc: Any, key: str, reason: str) -> None:
    result = _parse(doc)
    assert [(r.offer_key, r.reason) for r in result.rejects] == [(key, reason)]
    assert len(result.offers) == 17
    assert key not in _by_key(result.offers)
    assert result.complete is True


def test_a_region_without_a_price_is_a_reject() -> None:
    doc = _edited("eu-de", ON_DEMAND, lambda m: m["amounts"][0]["prices"][0].pop("price"))
    _region_rejected(doc, f"{PROFILE}|eu-de|on_demand",
                     f"eu-de {ON_DEMAND}: price None is not a price")


def test_a_region_without_its_on_demand_meter_is_a_reject() -> None:
    doc = _doc()
    resource = next(r for r in doc["resources"] if r["deployment_region"] == "ca-tor")
    resource["metrics"] = [m for m in resource["metrics"] if m["metric_id"] != ON_DEMAND]
    result = _parse(doc)
    assert [r.reason for r in result.rejects] == [
        "region ca-tor has no on-demand price (no part-is.instance-hours-<profile> meter)"]
    assert len(result.offers) == 17
    assert f"{PROFILE}|ca-tor|spot" in _by_key(result.offers)


def test_a_region_without_a_spot_meter_has_no_spot_offer() -> None:
    doc = _doc()
    resource = next(r for r in doc["resources"] if r["deployment_region"] == "eu-gb")
    resource["metrics"] = [m for m in resource["metrics"] if m["metric_id"] != SPOT]
    result = _parse(doc)
    assert (len(result.offers), result.rejects) == (17, [])


@pytest.mark.parametrize(("metric_id", "edit", "reason"), [
    (ON_DEMAND, lambda m: m["amounts"][0]["prices"][0].update(price=0),
     "price 0 is not a price"),
    (SPOT, lambda m: m["amounts"][0]["prices"][0].update(price="24.8965"),
     "price '24.8965' is not a price"),
    (ON_DEMAND, lambda m: m.update(charge_unit="GPU-Hour"),
     "charge_unit 'GPU-Hour' is not 'Instance-Hour'"),
    (ON_DEMAND, lambda m: m.update(charge_unit_quantity=8),
     "price is for charge_unit_quantity 8 instance-hours, not 1"),
    (ON_DEMAND, lambda m: m["amounts"][0]["prices"].append({"quantity_tier": 720, "price": 90}),
     "2 quantity tiers, not one"),
    (ON_DEMAND, lambda m: m["amounts"][0]["prices"][0].update(quantity_tier=2),
     "quantity_tier 2 is not 1"),
    (ON_DEMAND, lambda m: m["amounts"][0].update(country="DEU"), "no USA amount"),
    (ON_DEMAND, lambda m: m["amounts"][0].update(currency=None),
     "currency None is not a currency code"),
    (SPOT, lambda m: m.update(effective_from="2026-11-01T00:00:00Z"),
     "price takes effect 2026-11-01T00:00:00Z, after the capture"),
    (SPOT, lambda m: m.update(effective_until="2026-10-02T00:00:00Z"),
     "price ended 2026-10-02T00:00:00Z, before the capture"),
])
def test_an_odd_meter_is_a_reject(metric_id: str, edit: Callable[[dict[str, Any]], None],
                                  reason: str) -> None:
    model = "spot" if metric_id == SPOT else "on_demand"
    _region_rejected(_edited("us-east", metric_id, edit), f"{PROFILE}|us-east|{model}",
                     f"us-east {metric_id}: {reason}")


def test_a_usd_row_of_another_country_is_not_the_price() -> None:
    # Amounts are per country of the paying account; only the USA row is IBM's USD list price.
    doc = _edited("eu-de", ON_DEMAND, lambda m: m["amounts"].insert(0, {
        "country": "DEU", "currency": "EUR", "prices": [{"quantity_tier": 1, "price": 90.0}]}))
    offer = _by_key(_parse(doc).offers)[f"{PROFILE}|eu-de|on_demand"]
    assert (offer.price_per_hour, offer.currency) == (99.6, "USD")


def test_a_profile_without_a_gpu_count_is_a_reject() -> None:
    other = "gx3d-160x1792x8h200"
    doc = _edited("us-east", SPOT, lambda m: m.update(metric_id=f"part-is.spot-{other}"))
    result = _parse(doc)
    assert [(r.offer_key, r.reason) for r in result.rejects] == [
        (f"{other}|us-east|spot", f"profile {other} is not in PROFILES (GPU count unknown)")]
    assert len(result.offers) == 17


def test_a_deployment_without_a_region_is_a_reject() -> None:
    doc = _doc()
    doc["resources"][0]["deployment_region"] = " "
    result = _parse(doc)
    assert [r.reason for r in result.rejects] == ["deployment without a deployment_region"]
    assert "au-syd" not in {o.region for o in result.offers}
    assert len(result.offers) == 16


def test_a_listing_cut_short_closes_nothing() -> None:
    doc = _doc()
    doc["count"] = 10  # one deployment more than the page holds
    result = _parse(doc)
    assert (len(result.offers), result.complete) == (18, False)


# -- a body of the wrong shape is a ParseError ------------------------------------------------


@pytest.mark.parametrize(("body", "field", "message"), [
    (b"<html><body>503 Service Unavailable</body></html>", None, "body is not JSON"),
    (b'{"resources": []}', "resources", "the plan lists no deployment"),
    (b'{"offset": 0, "limit": 50, "count": 0, "resource_count": 0}', "resources",
     "expected {'resources': [...]}"),
    (b"[]", "resources", "expected {'resources': [...]}"),
])
def test_wrong_shape_is_a_parse_error(body: bytes, field: str | None, message: str) -> None:
    capture = load_capture(SNAP, BODY).model_copy(update={"body": body})
    with pytest.raises(ParseError) as err:
        ibmcloud.parse([capture])
    assert (err.value.field, err.value.url, err.value.provider) == (field, URL, "ibmcloud")
    assert message in str(err.value)


def _rename(obj: Any, old: str, new: str) -> Any:
    if isinstance(obj, dict):
        return {(new if k == old else k): _rename(v, old, new) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rename(v, old, new) for v in obj]
    return obj


@pytest.mark.parametrize(("old", "new"), [
    ("resources", "deployments"), ("deployment_region", "region"), ("metrics", "meters"),
    ("metric_id", "id"), ("charge_unit", "unit"), ("charge_unit_quantity", "unit_quantity"),
    ("amounts", "amount"), ("country", "country_code"), ("currency", "currency_code"),
    ("prices", "tiers"), ("quantity_tier", "tier"), ("price", "unit_price"),
])
def test_renamed_field_is_a_parse_error(old: str, new: str) -> None:
    with pytest.raises(ParseError) as err:
        _parse(_rename(_doc(), old, new))
    assert err.value.field == old


def test_parse_keeps_the_newest_capture() -> None:
    older = _with(_edited("eu-de", ON_DEMAND,
                          lambda m: m["amounts"][0]["prices"][0].update(price=120.0)))
    older = older.model_copy(update={"fetched_at": datetime(2026, 10, 4, tzinfo=UTC)})
    offers = _by_key(ibmcloud.parse([load_capture(SNAP, BODY), older]).offers)
    assert offers[f"{PROFILE}|eu-de|on_demand"].price_per_hour == 99.6


def test_a_meter_repeated_at_another_price_is_rejected() -> None:
    doc = _doc()
    resource = next(r for r in doc["resources"] if r["deployment_region"] == "jp-tok")
    twin = copy.deepcopy(next(m for m in resource["metrics"] if m["metric_id"] == SPOT))
    twin["amounts"][0]["prices"][0]["price"] = 30.0
    resource["metrics"].append(twin)
    result = _parse(doc)
    assert f"{PROFILE}|jp-tok|spot" not in _by_key(result.offers)
    assert {r.offer_key for r in result.rejects} == {f"{PROFILE}|jp-tok|spot"}
    assert len(result.offers) == 17


# -- fetch ------------------------------------------------------------------------------------


def test_offline_fetch_serves_the_bundled_response() -> None:
    with HttpClient("ibmcloud", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = ibmcloud.fetch(client, {})
    assert [c.body for c in captures] == [(SNAP / BODY).read_bytes()]
    assert [c.url for c in captures] == [URL]
    assert len(ibmcloud.parse(captures).offers) == 18


def test_live_fetch_is_one_keyless_get() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=_doc())

    with HttpClient("ibmcloud", transport=httpx.MockTransport(handler)) as client:
        captures = ibmcloud.fetch(client, {})
    assert [(r.method, str(r.url)) for r in seen] == [("GET", URL)]
    assert "authorization" not in seen[0].headers
    assert ibmcloud.CREDENTIALS == ()
    assert len(ibmcloud.parse(captures).offers) == 18
