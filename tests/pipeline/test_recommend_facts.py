"""The per-offer facts a recommendation ranks from (pipeline/recommend/facts.py): the table a
refresh stores and the one a connection builds rank alike, and a warehouse written after its
facts were stored is never ranked from them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from offer_factory import make_offer

from gpuscout.core.catalog import load_catalog
from gpuscout.core.models import Availability, Interconnect, NetworkFabric, PricingModel
from gpuscout.pipeline.normalize import USD_ONLY
from gpuscout.pipeline.recommend import Recommendation, RecommendRequest, recommend
from gpuscout.pipeline.recommend import plans as plans_module
from gpuscout.pipeline.recommend.facts import FACTS, stamp, store_facts, use_facts
from gpuscout.pipeline.refresh import Source, refresh
from gpuscout.sizing.job import Job
from gpuscout.warehouse.arrow import offers_to_table
from gpuscout.warehouse.connection import connect
from gpuscout.warehouse.load import merge_offers, replace_provider_profiles, transaction

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
CAT = load_catalog()


def _offer(provider: str, key: str, gpu_id: str | None, n: float, price: float,
           **kw: Any):
    spec = CAT.gpu(gpu_id or "h100-sxm-80gb")
    link = Interconnect.SINGLE if n <= 1 else spec.node_interconnect
    fields: dict[str, Any] = dict(
        provider=provider, price=price, gpu_count=n, gpu_id=gpu_id,
        gpu_label=gpu_id or "Mystery GPU", vram_gb=spec.vram_gb, memory_type=spec.memory_type,
        form_factor=spec.form_factor, interconnect=link,
        interconnect_gbps=spec.nvlink_gbps if n > 1 else None,
        observed_at=NOW - timedelta(hours=2))
    fields.update(kw)
    return make_offer(key, **fields)


H100, L40S, RTX = "h100-sxm-80gb", "l40s-48gb", "rtx-4090-24gb"
SPOT = {"pricing_model": PricingModel.SPOT}
OFFERS = [
    _offer("cheapcloud", "4090", RTX, 1, 0.40),
    _offer("cheapcloud", "l40s", L40S, 1, 0.90),
    _offer("cheapcloud", "l40s-spot", L40S, 1, 0.45, **SPOT),
    _offer("cheapcloud", "h100x8", H100, 8, 20.0, network=NetworkFabric.INFINIBAND,
           network_gbps=400.0),
    # a published band (AWS-style): spot across machines is ranked only on a published rate
    _offer("cheapcloud", "h100x8-spot", H100, 8, 9.0, network=NetworkFabric.INFINIBAND,
           network_gbps=400.0, provider_data={"max_gpus": 32, "interruption_band": ">20%"},
           **SPOT),
    _offer("spotcloud", "h100-spot", H100, 1, 1.50,
           provider_data={"interruption_band": "5-10%"}, **SPOT),
    _offer("spotcloud", "h100", H100, 1, 2.60),
    _offer("bidcloud", "4090-bid", RTX, 1, 0.25, **SPOT),
    _offer("lambda", "h100", H100, 1, 2.49),
    _offer("shadeform", "lambda-h100", H100, 1, 2.20, provider_data={"cloud": "lambdalabs"}),
    _offer("shadeform", "hs-l40s", L40S, 1, 0.80, provider_data={"cloud": "hyperstack"}),
    _offer("fraccloud", "half-h100", H100, 0.5, 0.70),
    _offer("fraccloud", "mystery", None, 1, 0.10),
    _offer("fraccloud", "component", H100, 1, 0.95,
           provider_data={"price_scope": "gpu_component"}),
    _offer("recorded", "h100", H100, 1, 2.00, observed_at=NOW - timedelta(days=300)),
    _offer("flaky", "4090", RTX, 1, 0.39),
    _offer("gone", "4090", RTX, 1, 0.30, availability=Availability.OUT_OF_STOCK),
    _offer("old", "4090", RTX, 1, 0.20, observed_at=NOW - timedelta(days=10)),
    _offer("perhour", "4090", RTX, 1, 0.38),
]
PROFILES = [
    {"provider": "cheapcloud", "billing_increment_s": 1, "storage_usd_per_gb_month": 0.1,
     "egress_usd_per_gb": 0.05, "spot_pricing": "market", "spot_notice_s": 30},
    {"provider": "spotcloud", "billing_increment_s": 60, "spot_pricing": "market",
     "spot_notice_s": 120},
    {"provider": "bidcloud", "billing_increment_s": 1, "spot_pricing": "bid"},
    {"provider": "lambda", "billing_increment_s": 60},
    {"provider": "shadeform", "billing_increment_s": 60},
    {"provider": "perhour", "billing_increment_s": 3600, "min_charge_s": 3600},
]


def _run_log(con: duckdb.DuckDBPyConnection, provider: str, mode: str, status: str,
             at: datetime) -> None:
    con.execute("""INSERT INTO refresh_run_log VALUES (?, ?, ?, ?, ?, 1.0, ?, true, 1, 1, 1,
                   1, 0, 0, 0, 0, [], ?, NULL)""",
                [f"run-{at:%H%M%S}", provider, mode, at, at, status, at])


def _warehouse(path: Path) -> None:
    """Written the way a test or a bench writes, with no refresh: no facts stored."""
    with connect(path) as con:
        for provider in sorted({o.provider for o in OFFERS}):
            with transaction(con):
                merge_offers(con, offers_to_table([o for o in OFFERS if o.provider == provider]),
                             provider=provider, run_id="fixture", complete=True)
        replace_provider_profiles(con, pa.Table.from_pylist(PROFILES))
        for provider in sorted({o.provider for o in OFFERS}):
            _run_log(con, provider, "replay" if provider == "recorded" else "live", "ok",
                     NOW - timedelta(hours=3))
        _run_log(con, "flaky", "live", "failed", NOW - timedelta(hours=1))


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "w.duckdb"
    _warehouse(path)
    yield path


JOBS = {"7b-qlora": ("mistralai/Mistral-7B-v0.1", "qlora", 10**8),
        "70b-full": ("meta-llama/Llama-3.1-70B", "full", 10**9)}


def _recommend(con: duckdb.DuckDBPyConnection, job: str, **req: Any) -> Recommendation:
    model, method, tokens = JOBS[job]
    arch, spec, _ = Job(model=model, method=method, batch_size=1).resolve()
    return recommend(con, arch, spec, RecommendRequest(tokens=tokens, now=NOW, **req), CAT)


def _read(db: Path, job: str, **req: Any) -> Recommendation:
    with connect(db, read_only=True) as con:
        return _recommend(con, job, **req)


def _facts_here(con: duckdb.DuckDBPyConnection) -> list[tuple[str, bool]]:
    """Which objects named `recommend_offers` the connection has: (type, temporary)."""
    return sorted(con.execute(f"""
        SELECT 'table', temporary FROM duckdb_tables() WHERE table_name = '{FACTS}'
        UNION ALL SELECT 'view', temporary FROM duckdb_views() WHERE view_name = '{FACTS}'
    """).fetchall())


def _keys(rec: Recommendation) -> list[str]:
    return [f"{r.provider}/{r.offer_key}" for r in rec.ranked]


def _rejected(rec: Recommendation) -> dict[str, str]:
    return {f"{r.provider}/{r.offer_key}": r.rejected_because for r in rec.rejected_cheaper}


REQUESTS = [("7b-qlora", {}), ("7b-qlora", {"objective": "time", "limit": 50}),
            ("7b-qlora", {"spot": "prefer", "max_price_age_days": None}),
            ("7b-qlora", {"spot": "forbid", "region": "us", "checkpoint_every_min": 20}),
            ("7b-qlora", {"providers": ["shadeform", "lambda", "fraccloud"]}),
            ("70b-full", {"limit": 50}), ("70b-full", {"objective": "balanced"})]


def test_stored_facts_rank_exactly_as_facts_built_on_the_connection(db: Path) -> None:
    before = [_read(db, job, **req) for job, req in REQUESTS]  # no stored facts: built here
    with connect(db) as con:
        store_facts(con)
    with connect(db, read_only=True) as con:
        after = [_recommend(con, job, **req) for job, req in REQUESTS]
        assert _facts_here(con) == [("table", False), ("view", True)]  # the stored table read
    assert after == before


def test_the_fixture_ranks_as_pinned(db: Path) -> None:
    """Ordering, reasons and totals of the ranking before the facts table (pinned from it)."""
    rec = _read(db, "7b-qlora", limit=50)
    assert rec.offers_evaluated == len(OFFERS)
    # HF QLoRA runs its pointwise work in fp32 (PEFT's upcast), which weighs most on the
    # H100s, whose FLOPs per byte are highest: the RTX 4090 bid leads the spot H100 node. The
    # flaky 4090 (no profile: billed by the hour, storage unpriced) and cheapcloud's (per
    # second, with storage and egress) are 7 cents apart, and swap as the run's hours move
    assert _keys(rec) == [
        "bidcloud/4090-bid", "cheapcloud/h100x8-spot", "spotcloud/h100-spot",
        "cheapcloud/l40s-spot", "perhour/4090", "flaky/4090", "cheapcloud/4090",
        "recorded/h100", "lambda/h100", "cheapcloud/h100x8", "spotcloud/h100",
        "shadeform/hs-l40s", "cheapcloud/l40s",
        "gone/4090"]  # out of stock: after everything that may be rented now
    assert [n.split(" ")[0] for n in rec.price_notes] == ["1", "1"]  # replayed, too old
    flaky = next(r for r in rec.ranked if r.provider == "flaky")
    recorded = next(r for r in rec.ranked if r.provider == "recorded")
    assert flaky.stale and recorded.price_source == "replay" and recorded.price_age_days == 300
    resold = next(r for r in rec.ranked if r.offer_key == "hs-l40s")
    assert resold.resold_from == "hyperstack"
    # rejected rows shown are those cheaper per hour than the winner: the fastest (an H100
    # node) leaves them all
    rejected = _rejected(_read(db, "7b-qlora", objective="time"))
    assert rejected["old/4090"].startswith("price last seen 10 days ago")
    assert rejected["fraccloud/mystery"] == "unknown GPU label Mystery GPU"
    assert rejected["fraccloud/half-h100"] == "fractional GPU share"
    assert rejected["fraccloud/component"].startswith("GPU component price only")
    assert rejected["shadeform/lambda-h100"].startswith("resold lambda machine, also read")
    cluster = _read(db, "70b-full", limit=50)
    placed = {f"{r.provider}/{r.offer_key}": r.nodes for r in cluster.ranked}
    assert placed["cheapcloud/h100x8"] > 1 and placed["cheapcloud/h100x8-spot"] > 1


def test_a_warehouse_written_after_its_facts_is_ranked_from_its_rows(db: Path) -> None:
    with connect(db) as con:
        store_facts(con)
        stored = stamp(con)
    cheaper = _offer("perhour", "4090", RTX, 1, 0.05, observed_at=NOW - timedelta(hours=1))
    with connect(db) as con:  # a write that stores no facts
        with transaction(con):
            merge_offers(con, offers_to_table([cheaper]), provider="perhour", run_id="later",
                         complete=True)
        replace_provider_profiles(con, pa.Table.from_pylist(
            [p for p in PROFILES if p["provider"] != "bidcloud"]))
        assert stamp(con) != stored
    with connect(db, read_only=True) as con:
        rec = _recommend(con, "7b-qlora", limit=50)
        assert _facts_here(con) == [("table", False), ("table", True)]  # built here, fresh
    best = rec.ranked[0]
    assert (best.provider, best.price_usd_per_hour) == ("perhour", 0.05)
    bid = next(r for r in rec.ranked if r.provider == "bidcloud")
    assert any(r.startswith("billing granularity unknown: assumed hourly")
               for r in bid.reasons)
    with connect(db) as con:  # the next refresh's facts are the warehouse's own again
        store_facts(con)
    with connect(db, read_only=True) as con:
        assert _recommend(con, "7b-qlora", limit=50) == rec
        assert _facts_here(con) == [("table", False), ("view", True)]


def test_a_writable_connection_follows_its_own_writes(db: Path) -> None:
    with connect(db) as con:
        first = _recommend(con, "7b-qlora")
        con.execute("UPDATE recent_versions SET price_usd_per_hour = 0.01, "
                    "price_usd_per_gpu_hour = 0.01 WHERE provider = 'cheapcloud' "
                    "AND offer_key = '4090' AND valid_to IS NULL")
        second = _recommend(con, "7b-qlora")
    assert first.ranked[0].offer_key == "4090-bid"
    assert (second.ranked[0].provider, second.ranked[0].offer_key) == ("cheapcloud", "4090")


def test_a_read_only_connection_checks_its_facts_once(db: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuscout.pipeline.recommend import facts

    calls: list[int] = []
    real = facts.stamp
    monkeypatch.setattr(facts, "stamp", lambda con: calls.append(1) or real(con))
    with connect(db, read_only=True) as con:
        use_facts(con)
        use_facts(con)
        first = _facts_here(con)
    assert (len(calls), first) == (1, [("table", True)])


def test_a_refresh_stores_facts_current_with_what_it_loaded(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    refresh(["lambda"], db=db, source=Source.offline(), fx=USD_ONLY)
    with connect(db, read_only=True) as con:
        row = con.execute("SELECT comment FROM duckdb_tables() WHERE table_name = ?",
                          [FACTS]).fetchone()
        assert row is not None and row[0] == stamp(con)
        assert con.execute(f"SELECT count(*) FROM {FACTS}").fetchone() == \
            con.execute("SELECT count(*) FROM current_offers").fetchone()


def test_each_placement_is_sized_once_across_recommendations(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plans_module.clear_plans()
    sized: list[object] = []
    real = plans_module.plan_node
    monkeypatch.setattr(plans_module, "plan_node",
                        lambda *a, **k: sized.append(a[3]) or real(*a, **k))
    first = _read(db, "70b-full")
    once = len(sized)
    again = _read(db, "70b-full")
    assert once >= first.shapes_evaluated and len(sized) == once and again == first


def test_candidates_are_read_once_per_facts_and_filters(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuscout.pipeline.recommend import candidates as candidates_module

    candidates_module.forget_candidates()
    reads: list[dict[str, Any]] = []
    real = candidates_module._read
    monkeypatch.setattr(candidates_module, "_read",
                        lambda con, filters: reads.append(filters) or real(con, filters))
    first = _read(db, "7b-qlora")
    assert _read(db, "7b-qlora", objective="time") != first  # same offers, priced again
    _read(db, "7b-qlora", providers=["lambda"])
    assert len(reads) == 2  # the provider filter is another set of candidates
    cheaper = _offer("perhour", "4090", RTX, 1, 0.05, observed_at=NOW - timedelta(hours=1))
    with connect(db) as con, transaction(con):  # new facts: read anew, never the old ones
        merge_offers(con, offers_to_table([cheaper]), provider="perhour", run_id="later",
                     complete=True)
    after = _read(db, "7b-qlora")
    assert len(reads) == 3
    assert (after.ranked[0].provider, after.ranked[0].price_usd_per_hour) == ("perhour", 0.05)


def test_equal_offers_rank_in_provider_then_offer_key_order(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    twins = [_offer(p, k, RTX, 1, 0.50) for p, k in
             (("zcloud", "a"), ("acloud", "b"), ("acloud", "a"), ("mcloud", "z"))]
    with connect(path) as con:
        for provider in sorted({o.provider for o in twins}):
            with transaction(con):
                merge_offers(con, offers_to_table([o for o in twins if o.provider == provider]),
                             provider=provider, run_id="fixture", complete=True)
    assert _keys(_read(path, "7b-qlora")) == ["acloud/a", "acloud/b", "mcloud/z", "zcloud/a"]
