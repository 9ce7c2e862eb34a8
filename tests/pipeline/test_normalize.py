from __future__ import annotations

from datetime import UTC, datetime

from gpuscout.core.catalog import load_catalog
from gpuscout.core.models import Interconnect, ParsedOffer, PricingModel
from gpuscout.pipeline.geography import geography
from gpuscout.pipeline.normalize import normalize
from gpuscout.pipeline.quality import HoldBack, gate_rows, hold_back
from gpuscout.pipeline.settings import Settings

T = datetime(2026, 1, 9, tzinfo=UTC)


def parsed(label="NVIDIA H100 80GB HBM3", count=8.0, price=23.92, key="k", **kw) -> ParsedOffer:
    return ParsedOffer(provider=kw.pop("provider", "runpod"), offer_key=key, gpu_label=label,
                       gpu_count=count, pricing_model=PricingModel.ON_DEMAND,
                       price_per_hour=price, source_url="https://x.test", observed_at=T, **kw)


def test_resolved_offer_gets_catalog_facts_and_per_gpu_price() -> None:
    res = normalize([parsed()], load_catalog())
    (o,) = res.offers
    assert (o.gpu_id, o.vram_gb, o.memory_type, o.form_factor) == (
        "h100-sxm-80gb", 80.0, "HBM3", "SXM")
    assert o.interconnect is Interconnect.NVSWITCH and o.interconnect_gbps == 900.0
    assert o.price_usd_per_gpu_hour == 23.92 / 8
    assert res.unknown_labels == []


def test_single_gpu_has_no_interconnect_and_fraction_is_flagged() -> None:
    (o,) = normalize([parsed(count=0.5, price=1.0)], load_catalog()).offers
    assert o.interconnect is Interconnect.SINGLE and o.fractional_gpu
    assert o.price_usd_per_gpu_hour == 2.0


def test_unknown_label_is_kept_and_reported() -> None:
    res = normalize([parsed(label="Mystery GPU", key="m")], load_catalog())
    assert res.offers[0].gpu_id is None and res.offers[0].interconnect is Interconnect.UNKNOWN
    assert res.unknown_labels == ["Mystery GPU"]


def test_currency_conversion_and_missing_rate() -> None:
    cat = load_catalog()
    res = normalize([parsed(currency="EUR", price=10.0)], cat, {"USD": 1.0, "EUR": 1.1})
    assert round(res.offers[0].price_usd_per_hour, 6) == 11.0
    res = normalize([parsed(currency="GBP")], cat)
    assert not res.offers and "no USD rate for currency GBP" in res.rejects[0].reason


def test_row_gates_quarantine_absurd_prices_and_duplicates() -> None:
    cat = load_catalog()
    offers = normalize([parsed(key="a"), parsed(key="a"), parsed(key="cheap", price=0.001),
                        parsed(key="dear", price=8 * 1000.0)], cat).offers
    gated = gate_rows(offers, Settings())
    assert [o.offer_key for o in gated.offers] == ["a"]
    reasons = sorted(r.reason.split(" ")[0] for r in gated.rejects)
    assert reasons == ["absurd", "absurd", "duplicate"]


def test_refresh_gate_refuses_empty_and_holds_a_collapse_back_as_drift() -> None:
    s = Settings()
    assert hold_back(0, {}, [], None, None, s) == HoldBack("refused", "refresh produced no offers")
    collapsed = hold_back(4, {}, [], 100, None, s)
    assert collapsed is not None and collapsed.status == "drift"
    assert collapsed.reason == ("drift: offer count collapsed: 4 vs 100 in the last good "
                                "refresh (threshold 50%)")
    assert hold_back(60, {}, [], 100, None, s) is None
    assert hold_back(3, {}, [], 8, None, s) is None  # too small a base to judge


def test_geography() -> None:
    assert geography("us-east-1") == "us"
    assert geography("Guangxi, CN") == "asia"
    assert geography("eu-west-2") == "europe"
    assert geography("Quebec, CA") == "canada"
    assert geography(None) is None and geography("secure") is None
