"""A warehouse is a file people share and point tools at by mistake: what it holds never
decides where gpuscout reads or writes, and a file that is not a warehouse gpuscout may write
is refused with one line, untouched."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import duckdb
import pytest
from hostile import cli, fingerprint, one_line, sealed_warehouse

import gpuscout
from gpuscout.core.errors import DataError, UserInputError
from gpuscout.warehouse.connection import connect, preflight
from gpuscout.warehouse.identity import newest_known_version


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return sealed_warehouse(tmp_path / "w.duckdb")


@pytest.mark.parametrize("view", ['x" TO \'/tmp/gpuscout-escape.csv', "../../escape", "a b"])
def test_export_never_writes_outside_its_folder(db: Path, tmp_path: Path, view: str) -> None:
    with duckdb.connect(str(db)) as con:
        con.execute(f'CREATE VIEW "{view.replace(chr(34), chr(34) * 2)}" AS SELECT 1 AS x')
    out = tmp_path / "out"
    written = gpuscout.export(None, db=db, to=out, format="csv")
    assert written and all(p.parent == out.resolve() for p in written)
    assert view not in {p.stem for p in written}
    assert not Path("/tmp/gpuscout-escape.csv").exists()
    assert not (tmp_path / "escape.csv").exists()
    with pytest.raises(UserInputError, match="no view named"):
        gpuscout.export([view], db=db, to=out)


def test_a_stored_view_cannot_make_export_read_a_file(db: Path, tmp_path: Path) -> None:
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE OR REPLACE VIEW gpus AS SELECT content FROM read_text('/etc/passwd')")
    with pytest.raises(DataError, match="exporting gpus"):
        gpuscout.export(["gpus"], db=db, to=tmp_path / "out")
    assert not list((tmp_path / "out").iterdir())  # no partial file left


@pytest.mark.parametrize("target", ["file", "/dev/null", "readonly"])
def test_export_onto_what_is_not_a_writable_folder_is_one_line(
        db: Path, tmp_path: Path, target: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    if target == "file":
        to = tmp_path / "a-file"
        to.write_text("mine")
    elif target == "readonly":
        to = tmp_path / "ro"
        to.mkdir()
        monkeypatch.setattr("os.access", lambda *a, **k: False)
    else:
        to = Path(target)
    code, _, err = cli(monkeypatch, capsys, "--db", str(db), "export", "gpus", "--to", str(to))
    assert code == 2, err
    one_line(err)
    if target == "file":
        assert to.read_text() == "mine"


def test_export_over_a_folder_named_like_its_file_is_one_line(
        db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "out" / "gpus.parquet").mkdir(parents=True)
    code, _, err = cli(monkeypatch, capsys, "--db", str(db), "export", "gpus", "--to",
                       str(tmp_path / "out"))
    assert code == 2 and "is a folder" in one_line(err)


def test_a_newer_warehouse_is_read_but_not_written(db: Path) -> None:
    with duckdb.connect(str(db)) as con:
        con.execute("INSERT INTO schema_migrations (version, name) VALUES ($1, 'future.sql')",
                    [newest_known_version() + 1])
        con.execute("ALTER TABLE refresh_run_log ADD COLUMN newer VARCHAR NOT NULL DEFAULT 'x'")
    before = fingerprint(db)
    assert gpuscout.sql("select count(*) as n from offer_history", db=db).to_pylist() == [
        {"n": 30}]
    for attempt in (lambda: preflight(db), lambda: connect(db).__enter__()):
        with pytest.raises(DataError, match="written by a newer gpuscout"):
            attempt()
    assert fingerprint(db) == before


def test_someone_elses_duckdb_file_is_refused_not_extended(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs.duckdb"
    with duckdb.connect(str(theirs)) as con:
        con.execute("CREATE TABLE sales AS SELECT 1 AS amount")
    before = fingerprint(theirs)
    with pytest.raises(DataError, match="not a gpuscout warehouse"):
        gpuscout.refresh(db=theirs, offline=True, providers=["lambda"])
    with pytest.raises(DataError, match="not a gpuscout warehouse"):
        gpuscout.offers(db=theirs)
    assert fingerprint(theirs) == before
    with duckdb.connect(str(theirs), read_only=True) as con:
        assert con.execute("SELECT table_name FROM duckdb_tables()").fetchall() == [("sales",)]


def test_a_sqlite_file_is_named_and_no_extension_is_fetched(tmp_path: Path) -> None:
    lite = tmp_path / "lite.db"
    with sqlite3.connect(lite) as con:
        con.execute("CREATE TABLE t (x)")
    before = lite.read_bytes()
    with pytest.raises(DataError, match="SQLite database"):
        gpuscout.offers(db=lite)
    with pytest.raises(DataError, match="SQLite database"):
        gpuscout.refresh(db=lite, offline=True, providers=["lambda"])
    assert lite.read_bytes() == before


@pytest.mark.parametrize("uri", ["s3://bucket/w.duckdb", "http://example.test/w.duckdb",
                                 "md:warehouse"])
def test_a_remote_uri_is_refused_unless_asked_for(uri: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUSCOUT_REMOTE_DB", raising=False)
    with pytest.raises(UserInputError, match="GPUSCOUT_REMOTE_DB=1"):
        gpuscout.offers(db=uri)
    with pytest.raises(UserInputError, match="GPUSCOUT_REMOTE_DB=1"):
        gpuscout.refresh(db=uri, offline=True, providers=["lambda"])


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_a_damaged_warehouse_is_one_line_for_every_reader(
        db: Path, damage: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    data = bytearray(db.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 3]
    else:
        for i in range(4096, len(data), 4096):  # one bit in every block header
            data[i + 8] ^= 0xFF
    db.write_bytes(bytes(data))
    for command in (["offers"], ["sql", "select count(*) from offer_history"], ["providers"],
                    ["runs"], ["export", "gpus", "--to", str(db.parent / "out")]):
        code, _, err = cli(monkeypatch, capsys, "--db", str(db), *command)
        assert code in (1, 2), (command, err)
        one_line(err)


def test_a_damaged_segment_is_one_line(db: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    (segment,) = (db.parent / "w.duckdb.history").glob("*.parquet")
    segment.write_bytes(segment.read_bytes()[:-20])  # the footer is gone
    code, _, err = cli(monkeypatch, capsys, "--db", str(db), "sql",
                       "select count(*) from offer_history")
    assert code == 2 and "unreadable" in one_line(err)


def test_a_db_that_is_a_folder_or_in_memory_is_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    for db in (str(tmp_path), ":memory:"):
        code, _, err = cli(monkeypatch, capsys, "--db", db, "offers")
        assert code == 2, err
        one_line(err)
