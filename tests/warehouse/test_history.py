"""Change-only history: identical refresh adds nothing, a change closes one and opens one."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest
from offer_factory import T0, make_offer

from gpuscout.core.models import Availability
from gpuscout.warehouse.arrow import offers_to_table
from gpuscout.warehouse.connection import connect
from gpuscout.warehouse.load import OutOfOrderError, _numbered, merge_offers, transaction
from gpuscout.warehouse.sqlfiles import statement


@pytest.fixture
def con(tmp_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    with connect(tmp_path / "w.duckdb") as c:
        yield c


def _load(con, offers, *, complete=True, run="r"):
    with transaction(con):
        return merge_offers(con, offers_to_table(offers), provider="testprov", run_id=run,
                            complete=complete)


def _count(con, where="true") -> int:
    return con.execute(f"SELECT count(*) FROM offer_versions WHERE {where}").fetchone()[0]


def test_identical_refresh_adds_no_history_rows(con) -> None:
    offers = [make_offer("a"), make_offer("b", price=10.0)]
    first = _load(con, offers, run="r1")
    assert (first.new, first.changed, first.unchanged, first.closed) == (2, 0, 0, 0)
    later = [make_offer("a", observed_at=T0 + timedelta(days=1)),
             make_offer("b", price=10.0, observed_at=T0 + timedelta(days=1))]
    second = _load(con, later, run="r2")
    assert (second.new, second.changed, second.unchanged, second.closed) == (0, 0, 2, 0)
    assert _count(con) == 2
    seen = con.execute("SELECT DISTINCT last_seen_at FROM offer_versions").fetchall()
    assert seen == [(T0 + timedelta(days=1),)]


def test_availability_change_is_state_not_history(con) -> None:
    _load(con, [make_offer("a")])
    _load(con, [make_offer("a", availability=Availability.IN_STOCK, available_count=3,
                           observed_at=T0 + timedelta(hours=1))])
    assert _count(con) == 1
    assert con.execute("SELECT availability, available_count FROM current_offers").fetchone() \
        == ("in_stock", 3)


def test_current_state_moves_only_where_it_differs_and_seen_always(con) -> None:
    """The nightly touch writes the wide current-state columns only for the rows whose state
    moved; last_seen_at advances for every row seen again."""
    _load(con, [make_offer("a"), make_offer("b")], run="r1")
    t1 = T0 + timedelta(days=1)
    _load(con, [make_offer("a", observed_at=t1, provider_data={"stock": "low"},
                           source_url="https://example.test/v2"),
                make_offer("b", observed_at=t1)], run="r2")
    rows = con.execute("SELECT offer_key, provider_data::VARCHAR, source_url, last_seen_at "
                       "FROM offer_versions ORDER BY offer_key").fetchall()
    assert rows == [("a", '{"stock": "low"}', "https://example.test/v2", t1),
                    ("b", "{}", "https://example.test/pricing", t1)]


def test_terms_orders_and_market_are_state_not_history(con) -> None:
    """How an offer is sold (migration 0009) is current state: filling it in or a new ask
    count updates the open version in place; the same again writes nothing."""
    _load(con, [make_offer("a")], run="r1")
    sold = dict(term_kind="committed", min_term=36.0, min_term_unit="month",
                min_term_hours=26280.0, term_payment="monthly", term_source="offer",
                gpus_per_machine=8.0, machines_min=1, ask_count=5,
                ask_median_usd_per_hour=30.0, host_id="h-1", host_reliability=0.97)
    later = T0 + timedelta(hours=1)
    moved = _load(con, [make_offer("a", observed_at=later, **sold)], run="r2")
    assert (moved.new, moved.changed, moved.unchanged) == (0, 0, 1)
    assert _count(con) == 1
    row = con.execute("SELECT term_kind, min_term_hours, term_payment, ask_count, host_id, "
                      "host_reliability, machines_min, gpu_variant_assumed "
                      "FROM current_offers").fetchall()
    assert row == [("committed", 26280.0, "monthly", 5, "h-1", 0.97, 1, False)]
    # the same again: the merge's pairing finds no state to rewrite (types and hashes agree)
    same = offers_to_table([make_offer("a", observed_at=later + timedelta(hours=1), **sold)])
    con.register("incoming", _numbered(same))
    con.execute(statement("stage_offers"))
    con.execute(statement("merge_match"), ["testprov"])
    assert con.execute("SELECT unchanged, state_moved FROM merge_match").fetchall() == [
        (True, False)]


def test_price_change_closes_one_version_and_opens_one(con) -> None:
    _load(con, [make_offer("a", price=23.92)], run="r1")
    t1 = T0 + timedelta(days=30)
    counts = _load(con, [make_offer("a", price=21.0, observed_at=t1)], run="r2")
    assert (counts.new, counts.changed) == (0, 1)
    rows = con.execute("""SELECT price_usd_per_hour, valid_from, valid_to, opened_by_run,
                          closed_by_run FROM offer_versions ORDER BY valid_from""").fetchall()
    assert rows == [(23.92, T0, t1, "r1", "r2"), (21.0, t1, None, "r2", None)]
    assert con.execute("SELECT price_usd_per_hour FROM current_offers").fetchall() == [(21.0,)]


def test_vanished_offer_closed_only_by_a_complete_refresh(con) -> None:
    _load(con, [make_offer("a"), make_offer("b")], run="r1")
    t1 = T0 + timedelta(days=1)
    partial = _load(con, [make_offer("a", observed_at=t1)], complete=False, run="r2")
    assert partial.closed == 0
    assert _count(con, "valid_to IS NULL") == 2
    t2 = T0 + timedelta(days=2)
    full = _load(con, [make_offer("a", observed_at=t2)], complete=True, run="r3")
    assert full.closed == 1
    assert con.execute("SELECT offer_key, valid_to, closed_by_run FROM offer_versions "
                       "WHERE valid_to IS NOT NULL").fetchall() == [("b", t2, "r3")]


def test_reappearing_offer_opens_a_new_version(con) -> None:
    _load(con, [make_offer("a"), make_offer("b")])
    _load(con, [make_offer("a", observed_at=T0 + timedelta(days=1))])
    _load(con, [make_offer("a", observed_at=T0 + timedelta(days=2)),
                make_offer("b", observed_at=T0 + timedelta(days=2))])
    assert _count(con, "offer_key = 'b'") == 2
    assert _count(con, "offer_key = 'b' AND valid_to IS NULL") == 1


def test_older_observation_is_refused_and_nothing_changes(con) -> None:
    _load(con, [make_offer("a", observed_at=T0 + timedelta(days=5))])
    before = con.execute("SELECT * FROM offer_versions").fetchall()
    with pytest.raises(OutOfOrderError, match="older than the stored state"):
        _load(con, [make_offer("a", price=1.0, observed_at=T0)])
    assert con.execute("SELECT * FROM offer_versions").fetchall() == before


def test_a_refresh_spanning_two_capture_times_can_be_loaded_again(con) -> None:
    # One provider refresh from two sources captured at different times (AWS: price list and
    # spot feed), loaded twice: the same data again is not "older than the stored state".
    offers = [make_offer("a", observed_at=T0), make_offer("b", observed_at=T0 + timedelta(days=9))]
    _load(con, offers)
    _load(con, offers)
    assert _count(con, "valid_to IS NULL") == 2


def test_an_offer_older_than_its_stored_self_is_refused(con) -> None:
    _load(con, [make_offer("a", observed_at=T0 + timedelta(days=5))])
    with pytest.raises(OutOfOrderError, match="older than the stored state"):
        _load(con, [make_offer("a", price=1.0, observed_at=T0),
                    make_offer("b", observed_at=T0 + timedelta(days=9))])


def test_failed_merge_rolls_back_everything(con) -> None:
    _load(con, [make_offer("a")], run="r1")
    before = con.execute("SELECT * FROM offer_versions").fetchall()
    with pytest.raises(RuntimeError), transaction(con):
        merge_offers(con, offers_to_table([make_offer("a", price=5.0,
                                                      observed_at=T0 + timedelta(days=1))]),
                     provider="testprov", run_id="r2", complete=True)
        raise RuntimeError("crash after the merge, before commit")
    assert con.execute("SELECT * FROM offer_versions").fetchall() == before


def test_fx_only_change_updates_usd_in_place(con) -> None:
    eur = dict(currency="EUR", price=10.0)
    _load(con, [make_offer("a", **{**_eur(eur, 1.10)})])
    _load(con, [make_offer("a", observed_at=T0 + timedelta(days=1), **_eur(eur, 1.20))])
    assert _count(con) == 1
    assert con.execute("SELECT round(price_usd_per_hour, 2) FROM current_offers").fetchone() \
        == (12.0,)


def _eur(base: dict, rate: float) -> dict:
    usd = base["price"] * rate
    return dict(currency="EUR", price=base["price"], price_usd_per_hour=usd,
                price_usd_per_gpu_hour=usd / 8)


# The columns migration 0009 adds (how an offer is sold, its order and market): an old
# warehouse has none of them.
SOLD = ("gpu_variant_assumed, term_kind, min_term, min_term_unit, min_term_hours, term_payment, "
        "term_source, gpus_per_machine, machines_min, machines_max, nvlink_domain_gpus, "
        "order_source, ask_count, ask_median_usd_per_hour, ask_max_usd_per_hour, host_id, "
        "host_reliability, host_verified")


def test_upgrade_from_md5_hashes_sees_no_spurious_changes(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A warehouse from before 0004 (md5 text hashes) is rehashed by 0004 and its text hashes
    become UBIGINT in 0006: every row is kept as it was, and the next refresh of the same
    offers finds them unchanged."""
    from gpuscout.warehouse import migrate as migrate_module

    path = tmp_path / "old.duckdb"
    everything = migrate_module.migration_files()
    monkeypatch.setattr(migrate_module, "migration_files",
                        lambda: [(v, f) for v, f in everything if v <= 3])
    offers = [make_offer("a"), make_offer("b", price=10.0, region=None, vcpus=8.0,
                                          billing_increment_s=60)]
    monkeypatch.setattr(migrate_module, "migration_files", lambda: everything)
    with connect(tmp_path / "today.duckdb") as today:  # the merge of today writes the rows
        _load(today, offers)
    monkeypatch.setattr(migrate_module, "migration_files",
                        lambda: [(v, f) for v, f in everything if v <= 3])
    old = duckdb.connect(str(path))
    migrate_module.migrate(old)
    old.execute(f"ATTACH '{tmp_path / 'today.duckdb'}' AS today (READ_ONLY)")
    old.execute(f"INSERT INTO offer_versions BY NAME SELECT * EXCLUDE ({SOLD}) REPLACE "
                "(md5(offer_key) AS row_hash) FROM today.offer_versions")  # md5 as before 0004
    old.execute("DETACH today")
    kept = old.execute("SELECT * EXCLUDE (row_hash) FROM offer_versions ORDER BY ALL").fetchall()
    old.close()
    monkeypatch.setattr(migrate_module, "migration_files", lambda: everything)
    with connect(path) as con:
        assert con.execute("SELECT DISTINCT typeof(row_hash) FROM offer_versions").fetchall() \
            == [("UBIGINT",)]
        assert con.execute(f"SELECT * EXCLUDE (row_hash, {SOLD}) FROM offer_versions "
                           "ORDER BY ALL").fetchall() == kept
        later = [o.model_copy(update={"observed_at": T0 + timedelta(days=1)}) for o in offers]
        again = _load(con, later)
        assert (again.new, again.changed, again.unchanged) == (0, 0, 2)
