"""Fresh prices and stock in the ranking: --max-price-age sets old live prices aside (with the
reason, for --explain), replayed captures are ranked but labelled, and an offer whose provider
reports no stock is ranked after those that may be rented now."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from offer_factory import make_offer

from gpuscout.core.models import Availability
from gpuscout.pipeline.recommend import RecommendRequest, recommend
from gpuscout.pipeline.recommend.request import MAX_PRICE_AGE_DAYS
from gpuscout.sizing.job import Job
from gpuscout.warehouse.arrow import offers_to_table
from gpuscout.warehouse.connection import connect
from gpuscout.warehouse.load import merge_offers, replace_provider_profiles, transaction

NOW = datetime(2026, 6, 30, 12, tzinfo=UTC)
H100 = {"gpu_count": 1, "interconnect": "single", "interconnect_gbps": None}


def _offer(provider: str, price: float, days_old: float, **extra):
    return make_offer(f"{provider}-h100", provider=provider, price=price,
                      observed_at=NOW - timedelta(days=days_old), **{**H100, **extra})


def _run_log(con, provider: str, mode: str) -> None:
    con.execute("""INSERT INTO refresh_run_log VALUES (?, ?, ?, ?, ?, 1.0, 'ok', true, 1, 1, 1,
                   1, 0, 0, 0, 0, [], ?, NULL)""",
                ["r1", provider, mode, NOW, NOW, NOW])


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "w.duckdb"
    offers = [
        _offer("fresh", 3.00, days_old=1),
        _offer("old", 2.00, days_old=10),          # cheaper, but its price is 10 days old
        _offer("recorded", 2.50, days_old=400),    # a replayed capture: exempt, labelled
        _offer("gone", 1.00, days_old=1, availability=Availability.OUT_OF_STOCK),
    ]
    with connect(path) as con:
        for o in offers:
            with transaction(con):
                merge_offers(con, offers_to_table([o]), provider=o.provider, run_id="r1",
                             complete=True)
        for provider in ("fresh", "old", "gone"):
            _run_log(con, provider, "live")
        _run_log(con, "recorded", "replay")
        replace_provider_profiles(con, pa.Table.from_pylist(
            [{"provider": p, "billing_increment_s": 1}
             for p in ("fresh", "old", "recorded", "gone")]))
    return path


def _recommend(db: Path, **req):
    arch, job, _ = Job(model="meta-llama/Llama-3.1-8B", method="qlora").resolve()
    with connect(db, read_only=True) as con:
        return recommend(con, arch, job, RecommendRequest(tokens=10**7, now=NOW, **req))


def test_old_live_prices_are_set_aside_with_the_reason(db: Path) -> None:
    assert MAX_PRICE_AGE_DAYS == 7.0
    rec = _recommend(db)
    ranked = [r.provider for r in rec.ranked]
    assert "old" not in ranked
    old = next(r for r in rec.rejected_cheaper if r.provider == "old")
    assert old.rejected_because == ("price last seen 10 days ago, older than --max-price-age "
                                    "7 days")
    assert any("1 offers with prices older than 7 days were set aside" in n
               for n in rec.price_notes)
    # a wider limit ranks it, cheapest of those in stock; no limit at all likewise
    for wider in ({"max_price_age_days": 30}, {"max_price_age_days": None}):
        assert [r.provider for r in _recommend(db, **wider).ranked][0] == "old"


def test_replayed_captures_are_ranked_but_labelled(db: Path) -> None:
    rec = _recommend(db)
    recorded = next(r for r in rec.ranked if r.provider == "recorded")
    assert (recorded.price_source, recorded.price_age_days) == ("replay", 400)
    assert recorded.price_age_label == "replay 2025-05-26"
    assert "price from a recorded capture of 2025-05-26 (400 days old), replayed: not a " \
           "current price" in recorded.reasons
    fresh = next(r for r in rec.ranked if r.provider == "fresh")
    assert (fresh.price_source, fresh.price_age_label) == ("live", "1 d")
    assert any(n.startswith("1 offers of 1 providers are replayed captures recorded "
                            "2025-05-26 to 2025-05-26") for n in rec.price_notes)


def test_no_stock_is_ranked_after_the_offers_that_may_be_rented(db: Path) -> None:
    rec = _recommend(db)
    # "gone" is the cheapest by far, yet last: recorded 2.50, fresh 3.00, then gone 1.00
    assert [r.provider for r in rec.ranked] == ["recorded", "fresh", "gone"]
    gone = rec.ranked[-1]
    assert gone.availability is Availability.OUT_OF_STOCK
    assert any(x.startswith("gone reported no stock when last read (2026-06-29")
               for x in gone.reasons)


def test_managed_fine_tuning_is_priced_beside_the_rented_offers(db: Path) -> None:
    """Llama-3.1-8B (8.03 B parameters) QLoRA on 1e7 tokens: Ori's "up to 10B" LoRA price
    $0.46/1M → $4.60, Fireworks' "up to 16B" $0.50/1M → $5.00 (pipeline/data/
    managed_finetuning.csv), cheapest first; the view prints them as a table of their own."""
    from gpuscout.cli.recommend_view import managed_table

    rec = _recommend(db)
    assert [(q.service, q.cost_usd) for q in rec.managed] == [("ori", 4.6), ("fireworks", 5.0)]
    assert all(q.matched_by == "size_band" for q in rec.managed)
    table = managed_table(rec)
    assert table.row_count == 2
    # a method no service sells gets none
    arch, job, _ = Job(model="meta-llama/Llama-3.1-8B", method="full").resolve()
    with connect(db, read_only=True) as con:
        assert recommend(con, arch, job, RecommendRequest(tokens=10**7, now=NOW)).managed == []


def test_an_aggregators_resold_machine_is_counted_once(tmp_path: Path) -> None:
    """Prime Intellect reselling a RunPod H100 that RunPod is read for directly is counted once,
    as RunPod's own offer (the resold one goes to --explain, even though cheaper); a resold
    Lambda machine (Shadeform spells it "lambdalabs") likewise; a resold Massed Compute machine,
    a cloud not read directly, is ranked and says where it comes from."""
    path = tmp_path / "agg.duckdb"
    offers = [
        _offer("runpod", 3.00, days_old=1),
        _offer("lambda", 2.90, days_old=1),
        make_offer("pi-h100", provider="primeintellect", price=2.40,
                   observed_at=NOW - timedelta(days=1), provider_data={"cloud": "runpod"},
                   **H100),
        make_offer("sf-lambda-h100", provider="shadeform", price=2.50,
                   observed_at=NOW - timedelta(days=1), provider_data={"cloud": "lambdalabs"},
                   **H100),
        make_offer("sf-mc-h100", provider="shadeform", price=2.80,
                   observed_at=NOW - timedelta(days=1),
                   provider_data={"cloud": "massedcompute"}, **H100),
    ]
    with connect(path) as con:
        for provider in sorted({o.provider for o in offers}):
            with transaction(con):
                merge_offers(con, offers_to_table([o for o in offers if o.provider == provider]),
                             provider=provider, run_id="r1", complete=True)
    rec = _recommend(path)
    assert [(r.provider, r.offer_key) for r in rec.ranked] == [
        ("shadeform", "sf-mc-h100"), ("lambda", "lambda-h100"), ("runpod", "runpod-h100")]
    resold = rec.ranked[0]
    assert resold.resold_from == "massedcompute"
    assert resold.reasons[0] == ("a massedcompute machine rented through shadeform (not read "
                                 "from massedcompute directly)")
    assert rec.ranked[1].resold_from is None
    twins = {r.offer_key: r.rejected_because for r in rec.rejected_cheaper}
    assert twins == {
        "pi-h100": "resold runpod machine, also read from runpod directly: counted once, as "
                   "the direct offer",
        "sf-lambda-h100": "resold lambda machine, also read from lambda directly: counted "
                          "once, as the direct offer"}
