"""History segments: closed versions leave the copied file and every query reads what it read.

Each test writes real history through the merge (three nights of price changes), seals it with
`seal_rows=1` (the threshold a session would otherwise wait for) and compares what
`offer_versions` and `offer_history` return, row by row and type by type, with what they held
before the seal.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from offer_factory import T0, make_offer

import gpuscout.warehouse.connection as connection
from gpuscout.core.errors import DataError
from gpuscout.warehouse.arrow import offers_to_table
from gpuscout.warehouse.connection import connect
from gpuscout.warehouse.export import export_folder, export_views, views
from gpuscout.warehouse.load import merge_offers, transaction
from gpuscout.warehouse.queries import BlockedStatementError, run_sql
from gpuscout.warehouse.segments import copy_warehouse, segments_bytes, segments_dir

ALL = "SELECT * FROM offer_versions ORDER BY offer_key, valid_from"


def _night(con: duckdb.DuckDBPyConnection, night: int) -> None:
    """Ten offers; every night each one's price moves, so each night closes ten versions."""
    at = T0 + timedelta(days=night)
    offers = [make_offer(f"k{i}", price=10.0 + i + night, observed_at=at) for i in range(10)]
    with transaction(con):
        merge_offers(con, offers_to_table(offers), provider="testprov", run_id=f"n{night}",
                     complete=True)


def _rows(con: duckdb.DuckDBPyConnection, sql: str = ALL) -> tuple[list[Any], list[Any]]:
    """The rows and the column types of a query."""
    cur = con.execute(sql)
    return cur.fetchall(), [d[1] for d in cur.description]


def _segments(db: Path) -> list[str]:
    folder = segments_dir(db)
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def _schema(db: Path) -> tuple[list[Any], list[Any], list[Any]]:
    with connect(db, read_only=True) as con:
        return (con.execute("SELECT table_name, column_name, data_type, column_default, "
                            "is_nullable FROM duckdb_columns() WHERE NOT internal "
                            "AND database_name = current_database() ORDER BY ALL").fetchall(),
                con.execute("SELECT table_name, constraint_type, constraint_text "
                            "FROM duckdb_constraints() WHERE database_name = current_database() "
                            "ORDER BY ALL").fetchall(),
                con.execute("SELECT view_name, sql FROM duckdb_views() WHERE NOT internal "
                            "AND database_name = current_database() ORDER BY ALL").fetchall())


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "w.duckdb"
    with connect(path) as con:
        for night in range(3):
            _night(con, night)
    return path


def test_sealing_moves_closed_versions_out_and_keeps_every_row(db: Path) -> None:
    with connect(db, read_only=True) as con:
        before = _rows(con)
        history = _rows(con, "SELECT * FROM offer_history ORDER BY offer_key, valid_from")
    assert len(before[0]) == 30
    assert segments_bytes(db) == 0
    with connect(db, seal_rows=1):
        pass
    assert len(_segments(db)) == 1
    (segment,) = segments_dir(db).iterdir()
    assert segments_bytes(db) == segment.stat().st_size > 0
    with connect(db, read_only=True) as con:
        assert _rows(con) == before  # the same values of the same types, JSON and UBIGINT too
        assert _rows(con, "SELECT * FROM offer_history ORDER BY offer_key, valid_from") == history
        assert con.execute("SELECT count(*), count(valid_to) FROM recent_versions").fetchone() \
            == (10, 0)  # only the open versions stay in the file
        assert con.execute("SELECT versions FROM history_segments").fetchall() == [(20,)]
        assert con.execute("SELECT count(*) FROM current_offers").fetchone() == (10,)


def test_a_sealed_file_is_written_afresh_without_the_moved_rows(db: Path) -> None:
    """DuckDB keeps a deleted row's blocks in the file; the published copy must not, or every
    later session would copy them again."""
    with connect(db, seal_rows=10**9) as con:  # 900 k closed versions, kept in the file
        con.execute("INSERT INTO recent_versions SELECT v.* REPLACE ("
                    "'old-' || r.range AS offer_key, random() AS price_per_hour, "
                    "valid_from - INTERVAL 1 DAY AS valid_from, valid_from AS valid_to) "
                    "FROM recent_versions v, range(30000) r")
    big = db.stat().st_size
    schema = _schema(db)
    with connect(db, seal_rows=1):
        pass
    assert db.stat().st_size < big / 4
    after = _schema(db)
    assert after[0] == schema[0] and after[1] == schema[1]  # columns, defaults, constraints
    assert [v for v in after[2] if v[0] != "sealed_versions"] == \
        [v for v in schema[2] if v[0] != "sealed_versions"]  # every view but the one re-pointed
    with connect(db, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM offer_versions").fetchone() == (900_030,)


def test_below_the_threshold_nothing_is_sealed(db: Path) -> None:
    with connect(db, seal_rows=21):  # 20 closed versions
        pass
    assert _segments(db) == []
    with connect(db, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM history_segments").fetchone() == (0,)


def test_merges_after_a_seal_read_and_close_across_segments(db: Path) -> None:
    with connect(db, seal_rows=1) as con:
        _night(con, 3)
    with connect(db, seal_rows=1) as con:
        _night(con, 4)
        _night(con, 4)  # the same night again: unchanged, nothing closed
    assert len(_segments(db)) == 2
    reference = db.with_name("reference.duckdb")
    with connect(reference) as con:  # the same nights, never sealed
        for night in (0, 1, 2, 3, 4, 4):
            _night(con, night)
    with connect(db, read_only=True) as sealed, connect(reference, read_only=True) as plain:
        assert _rows(sealed) == _rows(plain)


def test_a_reader_keeps_its_rows_across_a_seal(db: Path) -> None:
    with connect(db, read_only=True) as reader:
        before = _rows(reader)
        with connect(db, seal_rows=1):
            pass
        assert _rows(reader) == before  # the old file, and the rows it still holds
    with connect(db, read_only=True) as later:
        assert _rows(later) == before


def test_a_writer_killed_after_writing_a_segment_changes_nothing(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with connect(db, read_only=True) as con:
        before = _rows(con)

    def killed(staging: Path, real: Path) -> None:
        raise KeyboardInterrupt  # dies between the segment and the publish

    monkeypatch.setattr(connection, "_publish", killed)
    with pytest.raises(KeyboardInterrupt), connect(db, seal_rows=1):
        pass
    monkeypatch.undo()
    assert len(_segments(db)) == 1  # written, but listed by no published file
    with connect(db, read_only=True) as con:
        assert _rows(con) == before
        assert con.execute("SELECT count(*) FROM history_segments").fetchone() == (0,)
    with connect(db):  # the next session deletes it
        pass
    assert _segments(db) == []
    with connect(db, read_only=True) as con:
        assert _rows(con) == before


def test_any_duckdb_client_reads_the_segments_from_any_directory(
        db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with connect(db, seal_rows=1):
        pass
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM offer_history").fetchone() == (30,)
    finally:
        con.close()


def test_a_moved_warehouse_reads_its_segments_where_they_are(db: Path, tmp_path: Path) -> None:
    with connect(db, seal_rows=1):
        pass
    with connect(db, read_only=True) as con:
        before = _rows(con)
    moved = tmp_path / "moved" / "w.duckdb"
    moved.parent.mkdir()
    copy_warehouse(db, moved)
    os.rename(segments_dir(db), tmp_path / "away")  # the old folder is gone
    with connect(moved, read_only=True) as con:
        assert _rows(con) == before
    with connect(moved):  # a write session re-points the stored view
        pass
    plain = duckdb.connect(str(moved), read_only=True)
    try:
        assert _rows(plain) == before
    finally:
        plain.close()


def test_a_warehouse_moved_without_its_segments_is_named(db: Path, tmp_path: Path) -> None:
    with connect(db, seal_rows=1):
        pass
    alone = tmp_path / "alone.duckdb"
    alone.write_bytes(db.read_bytes())
    with pytest.raises(DataError, match=r"moves with its \.history folder"), \
            connect(alone, read_only=True):
        pass


def test_user_sql_reads_the_segments_but_writes_no_file(db: Path, tmp_path: Path) -> None:
    with connect(db, seal_rows=1):
        pass
    (segment,) = [segments_dir(db) / name for name in _segments(db)]
    kept = segment.read_bytes()
    with connect(db, read_only=True) as con:
        assert run_sql(con, "SELECT count(*) AS n FROM offer_history").to_pylist() == [{"n": 30}]
    for hostile in (f"COPY (SELECT 1 AS x) TO '{segment}' (FORMAT parquet)",
                    f"SELECT 1; COPY (SELECT 1 AS x) TO '{tmp_path / 'out.csv'}'",
                    f"EXPORT DATABASE '{tmp_path / 'dump'}'"):
        with connect(db, read_only=True) as con, pytest.raises(BlockedStatementError):
            run_sql(con, hostile)
    with connect(db, read_only=True) as con, pytest.raises(BlockedStatementError):
        run_sql(con, "SELECT * FROM read_csv('/etc/passwd')")  # other files stay closed
    assert segment.read_bytes() == kept
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "dump").exists()


def test_export_writes_the_whole_history_and_not_its_storage(db: Path, tmp_path: Path) -> None:
    with connect(db, seal_rows=1):
        pass
    out = export_folder(tmp_path / "out", "parquet")
    with connect(db, read_only=True, write_to=out) as con:
        names = views(con)
        assert "offer_history" in names
        assert not {"offer_versions", "sealed_versions"} & set(names)
        (written,) = export_views(con, ["offer_history"], out, "parquet")
    exported = duckdb.sql(f"SELECT count(*), count(valid_to) FROM '{written}'").fetchall()
    assert exported == [(30, 20)]


def test_segments_sealed_before_migration_0009_read_by_name(db: Path) -> None:
    """A warehouse sealed before 0009 names the old columns in `sealed_versions` until its next
    seal: `offer_versions` still reads every row, the new columns NULL for the sealed ones."""
    with connect(db, seal_rows=1) as con:
        _night(con, 3)
    assert _segments(db)
    with connect(db) as con:
        before = con.execute("SELECT count(*) FROM offer_versions").fetchall()
        old = ("gpu_variant_assumed, term_kind, min_term, min_term_unit, min_term_hours, "
               "term_payment, term_source, gpus_per_machine, machines_min, machines_max, "
               "nvlink_domain_gpus, order_source, ask_count, ask_median_usd_per_hour, "
               "ask_max_usd_per_hour, host_id, host_reliability, host_verified")
        sealed = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = "
                             "'sealed_versions'").fetchall()[0][0]
        body = sealed.split(" AS ", 1)[1].rstrip(";")
        con.execute(f"CREATE OR REPLACE VIEW sealed_versions AS SELECT * EXCLUDE ({old}) "
                    f"FROM ({body})")
        assert con.execute("SELECT count(*) FROM offer_versions").fetchall() == before
        assert con.execute("SELECT count(*) FROM offer_versions WHERE valid_to IS NOT NULL "
                           "AND term_kind IS NULL AND machines_min IS NULL").fetchall()[0][0] > 0
