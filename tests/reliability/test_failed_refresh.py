"""A refresh publishes all or nothing: whatever stops it (a missing history folder, Ctrl-C, a
full or read-only disk, a file it cannot replace), the published warehouse stays byte for byte
as it was, no copy is left behind, and the user reads one line saying what to do."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hostile import cli, fingerprint, one_line, sealed_warehouse

import gpuscout
import gpuscout.pipeline.refresh as refresh_mod
import gpuscout.warehouse.connection as connection
from gpuscout.core.errors import DataError
from gpuscout.warehouse.connection import connect
from gpuscout.warehouse.segments import segments_dir


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return sealed_warehouse(tmp_path / "w.duckdb")


def _no_copy_left(db: Path) -> None:
    assert not [p.name for p in db.parent.iterdir()
                if p.name.endswith((".next", ".next.wal", ".compact", ".part"))]


def _never_fetches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every provider the refresh would collect (a preflight failure collects none)."""
    fetched: list[str] = []

    def collect(name: str, **kw: Any) -> Any:
        fetched.append(name)
        raise AssertionError("a refresh that cannot publish must not fetch")

    monkeypatch.setattr(refresh_mod, "collect", collect)
    return fetched


def test_a_warehouse_moved_without_its_history_publishes_nothing(
        db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    away = tmp_path / "away"
    os.rename(segments_dir(db), away)
    before = fingerprint(db)
    fetched = _never_fetches(monkeypatch)
    code, _, err = cli(monkeypatch, capsys, "--db", str(db), "refresh", "--offline",
                       "-p", "lambda")
    assert code == 2 and "moves with its .history folder" in one_line(err)
    assert fingerprint(db) == before and fetched == []
    _no_copy_left(db)
    os.rename(away, segments_dir(db))  # as the message says
    monkeypatch.undo()
    for command in (["sql", "select count(*) from offer_history"],
                    ["export", "offer_history", "--to", str(tmp_path / "out")],
                    ["report", "--out", str(tmp_path / "report")]):
        code, _, err = cli(monkeypatch, capsys, "--db", str(db), *command)
        assert code == 0, (command, err)


def test_one_missing_segment_stops_the_refresh_before_any_fetch(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (segment,) = segments_dir(db).glob("*.parquet")
    segment.unlink()
    before = fingerprint(db)
    fetched = _never_fetches(monkeypatch)
    with pytest.raises(DataError, match="1 are missing"):
        gpuscout.refresh(db=db, offline=True, providers=["lambda"])
    assert fingerprint(db) == before and fetched == []


def test_ctrl_c_mid_refresh_publishes_nothing(db: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    before = fingerprint(db)
    real_load = refresh_mod.load
    loads: list[str] = []

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        record = real_load(*args, **kwargs)  # one provider's load commits in the session
        loads.append(record.provider)
        raise KeyboardInterrupt

    monkeypatch.setattr(refresh_mod, "load", interrupted)
    code, _, err = cli(monkeypatch, capsys, "--db", str(db), "refresh", "--offline",
                       "-p", "lambda", "-p", "runpod")
    assert code == 130 and one_line(err).startswith("interrupted:")
    assert loads == ["lambda"]
    assert fingerprint(db) == before
    _no_copy_left(db)


def test_a_full_disk_while_copying_is_one_line_and_leaves_nothing(
        db: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    before = fingerprint(db)
    real_copy = shutil.copyfile

    def full(src: Any, dst: Any, **kw: Any) -> Any:
        if str(dst).endswith(".next"):
            Path(dst).write_bytes(b"half")  # what a full disk leaves
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
        return real_copy(src, dst, **kw)

    monkeypatch.setattr(connection.shutil, "copyfile", full)
    code, _, err = cli(monkeypatch, capsys, "--db", str(db), "refresh", "--offline",
                       "-p", "lambda")
    assert code == 2 and "No space left on device" in one_line(err)
    assert fingerprint(db) == before
    _no_copy_left(db)


def test_a_full_disk_while_sealing_publishes_nothing(db: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    before = fingerprint(db)

    def full(*args: Any, **kwargs: Any) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(connection.segments, "seal", full)
    with pytest.raises(DataError, match="nothing was published"):
        gpuscout.refresh(db=db, offline=True, providers=["lambda"])
    assert fingerprint(db) == before
    _no_copy_left(db)


def test_a_read_only_filesystem_is_one_line(db: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    before = fingerprint(db)
    real_open = os.open

    def erofs(path: Any, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith(".lock"):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(connection.os, "open", erofs)
    code, _, err = cli(monkeypatch, capsys, "--db", str(db), "refresh", "--offline",
                       "-p", "lambda")
    assert code == 2 and "Read-only file system" in one_line(err)
    assert fingerprint(db) == before


def test_a_file_that_cannot_be_replaced_fails_before_any_fetch(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_access = os.access
    monkeypatch.setattr(connection.os, "access",
                        lambda p, mode: False if Path(p) == db.resolve() else real_access(p, mode))
    fetched = _never_fetches(monkeypatch)
    with pytest.raises(DataError, match="cannot be replaced"):
        gpuscout.refresh(db=db, offline=True, providers=["lambda"])
    assert fetched == []


def test_a_failing_body_publishes_nothing_of_what_it_committed(db: Path) -> None:
    before = fingerprint(db)
    with pytest.raises(RuntimeError), connect(db) as con:
        con.execute("DELETE FROM recent_versions")  # committed (autocommit) ...
        raise RuntimeError("... and then the session fails")
    assert fingerprint(db) == before
    _no_copy_left(db)


def test_a_refresh_whose_rows_are_all_held_back_says_why(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    real = refresh_mod.collected

    def all_absurd(*args: Any, **kwargs: Any) -> Any:
        c = real(*args, **kwargs)
        held = [gpuscout.core.models.Reject(provider=c.provider, offer_key=o.offer_key,
                                             reason="price is not a number: nan", raw="")
                for o in c.offers]
        c.offers, c.parser_rejects = [], [*c.parser_rejects, *held]
        return c

    monkeypatch.setattr(refresh_mod, "collected", all_absurd)
    report = gpuscout.refresh(db=tmp_path / "w.duckdb", offline=True, providers=["lambda"])
    (record,) = report.providers
    assert record.status == "refused"
    assert record.error is not None
    assert "every row was held back (price is not a number (" in record.error
