"""User SQL cannot write anything, by construction: whatever the statement (COPY wrapped in
PREPARE/EXECUTE, a view stored in a shared warehouse, a segment row naming /etc/passwd), the
reader it runs on has its file attached read-only and DuckDB's file access off."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from hostile import cli, fingerprint, one_line, sealed_warehouse

import gpuscout
from gpuscout.core.errors import DataError, UserInputError
from gpuscout.warehouse.connection import connect
from gpuscout.warehouse.queries import BlockedStatementError, run_sql
from gpuscout.warehouse.segments import segments_dir


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return sealed_warehouse(tmp_path / "w.duckdb")


def _segment(db: Path) -> Path:
    (segment,) = segments_dir(db).glob("versions-*.parquet")
    return segment


def test_prepare_execute_copy_onto_a_segment_exits_2_and_changes_nothing(
        db: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    before = fingerprint(db)
    hostile = (f"prepare p as copy (select 42 as x) to '{_segment(db)}' "
               "(format parquet, use_tmp_file false); execute p")
    code, _, err = cli(monkeypatch, capsys, "--db", str(db), "sql", hostile)
    assert code == 2
    assert one_line(err).startswith("error: blocked:")
    assert fingerprint(db) == before
    code, out, _ = cli(monkeypatch, capsys, "--db", str(db), "sql",
                       "select count(*) as n from offer_history", "--format", "json")
    assert code == 0 and '"n": 30' in out


@pytest.mark.parametrize("statement", [
    "copy (select 1 as x) to '{tmp}/out.csv'",
    "export database '{tmp}/dump'",
    "attach '{tmp}/other.duckdb' as other",
    "select * from read_text('/etc/passwd')",
    "select * from glob('/etc/*')",
    "install httpfs",
    "load httpfs",
    "set enable_external_access = true",
    "create table t as select 1 as x",
    "insert into recent_versions select * from recent_versions limit 1",
    "prepare q as select * from read_csv('/etc/passwd'); execute q",
])
def test_every_way_out_is_blocked_through_the_api(db: Path, tmp_path: Path,
                                                  statement: str) -> None:
    before = fingerprint(db)
    with pytest.raises(UserInputError) as refused:
        gpuscout.sql(statement.format(tmp=tmp_path), db=db)
    assert "\n" not in str(refused.value)
    assert fingerprint(db) == before
    assert not {"out.csv", "dump", "other.duckdb"} & {p.name for p in tmp_path.iterdir()}


def test_a_segment_row_naming_another_file_is_refused_not_read(db: Path) -> None:
    for name in ("../../../../etc/passwd", "/proc/self/environ", "versions-x.parquet"):
        with duckdb.connect(str(db)) as con:
            con.execute("UPDATE history_segments SET file = $1", [name])
        with pytest.raises(DataError, match="not a segment gpuscout writes"):
            gpuscout.sql("select count(*) from offer_history", db=db)


def test_a_view_stored_in_a_shared_warehouse_cannot_read_files(db: Path) -> None:
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE OR REPLACE VIEW gpus AS SELECT content FROM read_text('/etc/passwd')")
    with pytest.raises(BlockedStatementError):
        gpuscout.sql("select * from gpus", db=db)
    with pytest.raises(duckdb.PermissionException), connect(db, read_only=True) as con:
        con.execute("select * from gpus").fetchall()  # every reader, not only `sql`


def test_sql_leaves_a_notebooks_own_connection_as_it_was(db: Path) -> None:
    own = duckdb.connect(str(db), read_only=True)
    try:
        for _ in range(2):  # the second call used to raise InvalidInputException
            assert gpuscout.sql("select count(*) as n from offer_history",
                                db=db).to_pylist() == [{"n": 30}]
        own.execute("SET threads = 1")  # still unlocked
        assert own.execute("SELECT current_setting('enable_external_access')").fetchone() == (
            True,)
    finally:
        own.close()


def test_sql_of_something_else_than_a_string_is_one_line() -> None:
    with pytest.raises(UserInputError, match="takes the query as a string"):
        gpuscout.sql(None)  # type: ignore[arg-type]


def test_run_sql_refuses_an_empty_statement(db: Path) -> None:
    with connect(db, read_only=True) as con, pytest.raises(UserInputError, match="non-empty"):
        run_sql(con, "  ")


def test_allow_files_is_the_users_own_choice(db: Path, tmp_path: Path) -> None:
    target = tmp_path / "mine.csv"
    gpuscout.sql(f"copy (select 1 as x) to '{target}'", db=db, allow_files=True)
    assert target.read_text().splitlines() == ["x", "1"]
