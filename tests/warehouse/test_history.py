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
from gpuscout.warehouse.load import OutOfOrderError, merge_offers, transaction


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
    old.execute("INSERT INTO offer_versions BY NAME SELECT * REPLACE "  # md5 as before 0004
                "(md5(offer_key) AS row_hash) FROM today.offer_versions")
    old.execute("DETACH today")
    kept = old.execute("SELECT * EXCLUDE (row_hash) FROM offer_versions ORDER BY ALL").fetchall()
    old.close()
    monkeypatch.setattr(migrate_module, "migration_files", lambda: everything)
    with connect(path) as con:
        assert con.execute("SELECT DISTINCT typeof(row_hash) FROM offer_versions").fetchall() \
            == [("UBIGINT",)]
        assert con.execute("SELECT * EXCLUDE (row_hash) FROM offer_versions "
                           "ORDER BY ALL").fetchall() == kept
        later = [o.model_copy(update={"observed_at": T0 + timedelta(days=1)}) for o in offers]
        again = _load(con, later)
        assert (again.new, again.changed, again.unchanged) == (0, 0, 2)
