"""adapters/ovhcloud.py on recorded Public Cloud order catalogs (FR in EUR, US in USD)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from invariants import OfferInvariants, load_capture

from gpuscout.adapters import ovhcloud
from gpuscout.adapters.archive import Capture, ReplayTransport
from gpuscout.adapters.http import HttpClient
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import Resolved, Unknown, load_catalog
from gpuscout.core.errors import ParseError
from gpuscout.core.models import ParsedOffer, PriceKind, PricingModel

SNAP = SNAPSHOTS_DIR / "ovhcloud"
FR = "order_catalog_public_cloud_fr_2026-08-22.json"
US = "order_catalog_public_cloud_us_2026-08-22.json"
FR_URL = "https://api.ovh.com/1.0/order/catalog/public/cloud?ovhSubsidiary=FR"
US_URL = "https://api.us.ovhcloud.com/1.0/order/catalog/public/cloud?ovhSubsidiary=US"
# Flavors whose GPU has no catalog row (V100S, Quadro RTX 5000) or an unstated form factor (H200).
# 8x H200 141 GB, SXM or NVL not stated by the catalog: not a guess.
UNKNOWN = frozenset({"h200-1920"})
WINDOWS = "Windows flavor: the price includes a Windows licence"
AI_DEPLOY = "GPU under brick 'ai-serving': a managed service priced per use, not a GPU instance"


def _doc(file: str) -> dict[str, Any]:
    return json.loads((SNAP / file).read_bytes())


def _with_body(doc: Any, file: str = FR) -> Capture:
    return load_capture(SNAP, file).model_copy(update={"body": json.dumps(doc).encode()})


def _by_key(offers: list[ParsedOffer]) -> dict[str, ParsedOffer]:
    return {o.offer_key: o for o in offers}


def _addon(doc: dict[str, Any], plan: str) -> dict[str, Any]:
    return next(a for a in doc["addons"] if a["planCode"] == plan)


class TestOvhcloudInvariants(OfferInvariants):
    NAME = "ovhcloud"
    EXPECTED_UNKNOWN = UNKNOWN

    @pytest.fixture(params=[FR, US])
    def offers(self, request: pytest.FixtureRequest) -> list[ParsedOffer]:
        return ovhcloud.parse([load_capture(SNAP, request.param)]).offers


def test_fr_catalog_counts_and_pinned_offers() -> None:
    result = ovhcloud.parse([load_capture(SNAP, FR)])
    assert (len(result.offers), len(result.rejects)) == (16, 3)
    offers = _by_key(result.offers)
    h100 = offers["FR|h100-380|on_demand"]
    assert (h100.instance_type, h100.gpu_label, h100.gpu_count, h100.vram_gb_per_gpu) == (
        "h100-380", "h100-380", 1, 80.0)
    assert (h100.price_per_hour, h100.currency, h100.price_kind) == (2.8, "EUR",
                                                                     PriceKind.LISTED)
    assert (h100.pricing_model, h100.region) == (PricingModel.ON_DEMAND, None)
    assert (h100.vcpus, h100.ram_gb, h100.disk_gb, h100.billing_increment_s) == (
        30, 380, 4040, 1)
    assert h100.provider_data == {"subsidiary": "FR", "plan_code": "h100-380.consumption",
                                  "formatted_price": "2.80 €", "tags": "active",
                                  "public_bandwidth_mbps": 8000}
    assert h100.source_url == FR_URL
    assert h100.observed_at == datetime(2026, 8, 22, tzinfo=UTC)
    # The whole instance per hour: 2 GPUs at 5.60, 8 GPUs at 42.00.
    assert (offers["FR|h100-760|on_demand"].gpu_count,
            offers["FR|h100-760|on_demand"].price_per_hour) == (2, 5.6)
    h200 = offers["FR|h200-1920|on_demand"]
    assert (h200.gpu_count, h200.vram_gb_per_gpu, h200.price_per_hour) == (8, 141.0, 42.0)
    assert offers["FR|l4-90|on_demand"].price_per_hour == 0.75
    assert offers["FR|a10-45|on_demand"].provider_data["tags"] == "active,coming_soon,is_new"
    assert offers["FR|t1-45|on_demand"].provider_data["regions"] == "BHS5,GRA5"


def test_monthly_billing_is_a_one_month_reservation_per_hour() -> None:
    offers = _by_key(ovhcloud.parse([load_capture(SNAP, FR)]).offers)
    monthly = offers["FR|h100-380|reserved"]
    assert (monthly.pricing_model, monthly.price_kind) == (PricingModel.RESERVED,
                                                           PriceKind.DERIVED)
    assert monthly.price_per_hour == pytest.approx(1940 / 730)
    assert monthly.billing_increment_s is None
    assert (monthly.provider_data["monthly_price"], monthly.provider_data["term"],
            monthly.provider_data["hours_per_month"]) == (1940.0, "1 month (monthly billing)",
                                                          730)
    assert {k for k in offers if k.endswith("|reserved")} == {
        "FR|h100-380|reserved", "FR|h200-1920|reserved", "FR|a100-180|reserved",
        "FR|l40s-90|reserved", "FR|t1-45|reserved"}


def test_fr_rejects_windows_flavors_and_the_per_minute_ai_service() -> None:
    rejects = ovhcloud.parse([load_capture(SNAP, FR)]).rejects
    assert sorted((r.offer_key or "", r.reason) for r in rejects) == [
        ("", AI_DEPLOY),
        ("FR|win-l4-90|on_demand", WINDOWS),
        ("FR|win-t1-45|on_demand", WINDOWS),
    ]
    assert "ai-app.l4-1-gpu.minute.consumption" in rejects[-1].raw


def test_us_catalog_in_usd_reads_hourly_rows_whose_interval_unit_is_none() -> None:
    result = ovhcloud.parse([load_capture(SNAP, US)])
    assert (len(result.offers), len(result.rejects)) == (7, 3)
    offers = _by_key(result.offers)
    l40s = offers["US|l40s-90|on_demand"]
    assert (l40s.price_per_hour, l40s.currency, l40s.gpu_count, l40s.vram_gb_per_gpu) == (
        1.8, "USD", 1, 48.0)
    assert l40s.source_url == US_URL
    assert offers["US|l4-90|on_demand"].price_per_hour == 1.0
    assert offers["US|t2-45|reserved"].price_per_hour == pytest.approx(639 / 730)
    assert offers["US|t2-le-45|on_demand"].disk_gb == 300
    assert sorted(r.offer_key or "" for r in result.rejects) == [
        "US|win-l4-90|on_demand", "US|win-l4-90|reserved", "US|win-t2-45|on_demand"]
    assert {r.reason for r in result.rejects} == {WINDOWS}


@pytest.mark.parametrize("file", [FR, US])
def test_every_gpu_flavor_label_resolves_or_is_known_unknown(file: str) -> None:
    catalog = load_catalog()
    for addon in _doc(file)["addons"]:
        if (addon.get("blobs") or {}).get("commercial", {}).get("brick") != "gpu":
            continue
        flavor = addon["planCode"].split(".", 1)[0]
        gpu = addon["blobs"]["technical"]["gpu"]
        res = catalog.resolve("ovhcloud", flavor, gpu["memory"]["size"])
        if flavor in UNKNOWN:
            assert isinstance(res, Unknown), flavor
            continue
        assert isinstance(res, Resolved), (flavor, res)
        # The alias's implied GPU count must be the catalog's own count.
        assert res.gpu_count == gpu["number"], flavor


def test_flavor_labels_map_to_the_expected_gpus() -> None:
    catalog = load_catalog()
    expected = {"h100-380": "h100-pcie-80gb", "a100-180": "a100-pcie-80gb", "l4-90": "l4-24gb",
                "l40s-90": "l40s-48gb", "a10-45": "a10-24gb", "t1-45": "v100-pcie-16gb",
                "win-l4-90": "l4-24gb"}
    assert {k: getattr(catalog.resolve("ovhcloud", k), "gpu_id", None)
            for k in expected} == expected


def test_newest_capture_wins_for_the_same_offer() -> None:
    doc = _doc(FR)
    _addon(doc, "l4-90.consumption")["pricings"][0].update(price=80000000,
                                                             formattedPrice="0.80 €")
    older = load_capture(SNAP, FR)
    newer = _with_body(doc).model_copy(update={"fetched_at": older.fetched_at
                                               + timedelta(days=1)})
    offers = _by_key(ovhcloud.parse([newer, older]).offers)
    assert offers["FR|l4-90|on_demand"].price_per_hour == 0.8


@pytest.mark.parametrize(("edit", "reason"), [
    (lambda a: a["pricings"][0].update(formattedPrice="3.80 €"),
     "price 280000000 (x 1e-8 = 2.8) disagrees with formattedPrice '3.80 €'"),
    (lambda a: a["pricings"][0].update(formattedPrice="n/a"),
     "formattedPrice has no number: the price scale cannot be checked"),
    (lambda a: a["pricings"].append(dict(a["pricings"][0])),
     "2 pricing phases: expected exactly one"),
    (lambda a: a["pricings"][0].update(intervalUnit="month"),
     "billing period 'month'/'PT1H' contradicts the planCode suffix 'consumption'"),
    (lambda a: a["pricings"][0].update(price=0), "price is not a positive integer: 0"),
    (lambda a: a["blobs"]["technical"]["gpu"].update(number=0), "GPU count is not positive: 0"),
    (lambda a: a.update(planCode="h100-380.hourly.prepaid"),
     "unknown billing-mode suffix 'hourly.prepaid'"),
])
def test_bad_gpu_rows_are_rejected_with_reasons(edit: Any, reason: str) -> None:
    doc = _doc(FR)
    edit(_addon(doc, "h100-380.consumption"))
    result = ovhcloud.parse([_with_body(doc)])
    assert reason in {r.reason for r in result.rejects}
    assert "FR|h100-380|on_demand" not in _by_key(result.offers)
    assert len(result.offers) == 15


@pytest.mark.parametrize(("body", "field"), [
    (b"<html><body>503 Service Unavailable</body></html>", None),
    (b"[]", None),
    (b'{"locale": {"subsidiary": "FR"}, "addons": []}', "locale.currencyCode"),
    (b'{"locale": {"currencyCode": "EUR"}, "addons": []}', "locale.subsidiary"),
    (b'{"locale": {"currencyCode": "EUR", "subsidiary": "FR"}, "plans": []}', "addons"),
])
def test_wrong_shape_is_a_parse_error(body: bytes, field: str | None) -> None:
    capture = load_capture(SNAP, FR).model_copy(update={"body": body})
    with pytest.raises(ParseError) as err:
        ovhcloud.parse([capture])
    assert err.value.field == field
    assert err.value.url == FR_URL


def _rename(obj: Any, old: str, new: str) -> Any:
    if isinstance(obj, dict):
        return {(new if k == old else k): _rename(v, old, new) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rename(v, old, new) for v in obj]
    return obj


@pytest.mark.parametrize(("old", "new", "field"), [
    ("planCode", "plan_code", "planCode"),
    ("brick", "brickName", "blobs.commercial.brick"),
    ("pricings", "prices", "pricings"),
    ("gpu", "accelerator", "blobs.technical.gpu"),
])
def test_renamed_field_is_a_parse_error(old: str, new: str, field: str) -> None:
    with pytest.raises(ParseError) as err:
        ovhcloud.parse([_with_body(_rename(_doc(FR), old, new))])
    assert err.value.field == field


def test_offline_fetch_serves_both_bundled_catalogs() -> None:
    with HttpClient("ovhcloud", transport=ReplayTransport(SNAPSHOTS_DIR)) as client:
        captures = ovhcloud.fetch(client, {})
    assert [c.url for c in captures] == [FR_URL, US_URL]
    assert [c.body for c in captures] == [(SNAP / FR).read_bytes(), (SNAP / US).read_bytes()]
    assert len(ovhcloud.parse(captures).offers) == 16 + 7


def test_live_fetch_asks_each_subsidiary_without_credentials() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"locale": {"currencyCode": "EUR", "subsidiary": "FR"},
                                         "addons": []})

    with HttpClient("ovhcloud", transport=httpx.MockTransport(handler)) as client:
        captures = ovhcloud.fetch(client, {})
    assert [str(r.url) for r in seen] == [FR_URL, US_URL]
    assert all("authorization" not in r.headers for r in seen)
    assert ovhcloud.parse(captures).offers == []
