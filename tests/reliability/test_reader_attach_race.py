"""A reader that opens the warehouse while a refresh publishes.

DuckDB's ATTACH opens the path twice: once for the file's headers, once for its blocks. A
publish that renames a new file over the path between the two pairs one file's headers with
the other's blocks ("Could not read enough bytes", "Metadata block index exceeds", or worse,
wrong rows without an error). `open_reader` attaches again until the path held one file
from before the ATTACH to after it. The race itself is a window of microseconds, so these
tests play the publish at the moment the ATTACH runs; test_readers_during_refresh.py runs
real readers against real publishes.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest

from gpuscout.core.errors import DataError
from gpuscout.warehouse import reader


def _table(path: Path, rows: int) -> None:
    path.unlink(missing_ok=True)
    con = duckdb.connect(str(path))
    con.execute(f"CREATE TABLE t AS SELECT range AS i FROM range({rows})")
    con.close()


def _publish(path: Path, rows: int) -> None:
    """What a refresh does: a new file beside the published one, renamed over it."""
    staging = path.with_suffix(".staging")
    _table(staging, rows)
    os.replace(staging, path)


@pytest.fixture
def published(tmp_path: Path) -> Path:
    path = tmp_path / "w.duckdb"
    _table(path, 1000)
    return path


def _replacing_during(monkeypatch: pytest.MonkeyPatch, path: Path, publishes: list[int]
                      ) -> list[int]:
    """`_identity` as the reader sees it, with a publish of the next size landing right after
    each check that precedes an ATTACH: the ATTACH then reads a file that is no longer the
    one checked."""
    real_identity = reader._identity
    calls: list[int] = []

    def identity(p: Path) -> tuple[int, int, int, int] | None:
        seen = real_identity(p)
        calls.append(1)
        if len(calls) % 2 == 1 and publishes:  # the check before an ATTACH
            _publish(path, publishes.pop(0))
        return seen

    monkeypatch.setattr(reader, "_identity", identity)
    return calls


def test_a_publish_during_the_attach_is_attached_again(published: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _replacing_during(monkeypatch, published, [2000])
    con = reader.open_reader(published)
    try:
        # the second ATTACH read the file published during the first, whole
        assert con.execute("SELECT count(*) FROM t").fetchone() == (2000,)
        names = {r[0] for r in con.execute("SELECT database_name FROM duckdb_databases() "
                                           "WHERE NOT internal").fetchall()}
        assert names - {"memory"} == {"w"}  # the first attachment was undone
    finally:
        con.close()
    assert len(calls) == 4  # two checks per try, two tries


def test_a_warehouse_replaced_at_every_try_is_one_clear_error(
        published: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _replacing_during(monkeypatch, published, [1000 + i for i in range(50)])
    with pytest.raises(DataError, match="replaced 20 times while it was being opened"):
        reader.open_reader(published)


def test_a_broken_file_that_stays_put_is_not_retried(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "w.duckdb"
    broken.write_bytes(b"not a database" * 1000)
    calls = _replacing_during(monkeypatch, broken, [])
    with pytest.raises(DataError, match="cannot open warehouse"):
        reader.open_reader(broken)
    assert len(calls) == 2  # one try: the same file before and after its error
