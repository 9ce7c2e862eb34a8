from __future__ import annotations

from pathlib import Path

import duckdb

from gpuscout.warehouse.connection import connect
from gpuscout.warehouse.migrate import migrate, migration_files


def _schema(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return con.execute("""SELECT table_name, column_name, data_type FROM information_schema.columns
                          ORDER BY table_name, ordinal_position""").fetchall()


def test_migrations_apply_once_and_rerun_is_a_noop(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    applied = migrate(con)
    assert applied == [p.name for _, p in migration_files()]
    before = _schema(con)
    assert migrate(con) == []
    assert _schema(con) == before
    versions = con.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()
    assert [v for (v,) in versions] == [v for v, _ in migration_files()]


def test_fresh_database_equals_reopened_one(tmp_path: Path) -> None:
    with connect(tmp_path / "a.duckdb") as con:
        fresh = _schema(con)
    with connect(tmp_path / "a.duckdb") as con:
        assert _schema(con) == fresh
    for view in ("current_offers", "offer_history", "gpus", "refresh_runs", "provider_status"):
        assert any(t == view for t, _, _ in fresh), view


def test_read_only_open_of_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    import pytest

    from gpuscout.core.errors import DataError

    with pytest.raises(DataError, match="run `gpuscout refresh` first"), \
            connect(tmp_path / "missing.duckdb", read_only=True):
        pass


def test_reader_of_an_older_warehouse_is_told_to_refresh(tmp_path: Path) -> None:
    """A warehouse written before migration 0005 lacks provider_profiles.max_cluster_nodes: a
    reader (which may not migrate) gets a DataError naming the missing migration; a write
    session upgrades it and readers work again, profile rows kept."""
    import pytest

    from gpuscout.core.errors import DataError

    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    migrate(con)
    con.execute("ALTER TABLE provider_profiles DROP COLUMN max_cluster_nodes")
    con.execute("DELETE FROM schema_migrations WHERE version = 5")
    con.execute("INSERT INTO provider_profiles (provider, billing_increment_s) VALUES ('x', 60)")
    con.close()
    with pytest.raises(DataError, match=r"lacks 0005_cluster_nodes\.sql.*gpuscout refresh"), \
            connect(path, read_only=True):
        pass
    with connect(path) as con:
        pass
    with connect(path, read_only=True) as con:
        assert con.execute("SELECT provider, billing_increment_s, max_cluster_nodes "
                           "FROM providers").fetchall() == [("x", 60, None)]
