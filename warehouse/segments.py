"""Closed history in immutable Parquet segments, so that a write session copies only what moves.

A write session copies the published file (`warehouse.connection`), so a file that holds every
version ever seen makes every refresh pay for the whole history. Closed versions never change
again, so they leave the file: when `recent_versions` holds at least `SEAL_ROWS` closed
versions, the session writes them to one Parquet file in `<warehouse>.history/`, deletes them
from the table and lists the file in `history_segments`, all before it publishes.

- `offer_versions` is a view: `recent_versions` (open versions and the closed ones not yet
  sealed) UNION ALL `sealed_versions` (the segments, by absolute path, so any DuckDB client
  reads them from any working directory).
- Segments are only ever added, never rewritten or removed, so every segment a published file
  (or an older one a reader still holds) lists stays on disk.
- A segment is written, fsynced and renamed into place before the copy that lists it is
  published. A writer killed in between leaves a file no published warehouse lists; the next
  write session deletes it.
- gpuscout's own readers read the segments beside the file, under the names gpuscout writes
  (warehouse/reader.py), so a moved warehouse is read where it now is; the next write session
  rewrites the stored view. A listed segment that is missing stops a reader and a writer
  before any work, with what to do.

A migration that changes `recent_versions` must say what the segments hold: the view reads them
by name (`union_by_name`) and casts each column to the table's type.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from gpuscout.core.errors import DataError
from gpuscout.warehouse.durable import fsync_dir, fsync_file
from gpuscout.warehouse.sqlfiles import sql_literal
from gpuscout.warehouse.transactions import transaction

SEGMENTS_SUFFIX = ".history"
# Closed versions kept in the copied file before they are sealed: ~100 k rows are a few MB
# there, so the copy stays small while segments stay few (one per ~100 k price changes).
SEAL_ROWS = 100_000
_SEGMENT = re.compile(r"^versions-\d{8}T\d{6}Z-[0-9a-f]{8}\.parquet(\.part)?$")
_SEALED = re.compile(r"^versions-\d{8}T\d{6}Z-[0-9a-f]{8}\.parquet$")


def segments_dir(real: Path) -> Path:
    """The folder of a published file's segments: `<file>.history` beside it."""
    return real.with_name(real.name + SEGMENTS_SUFFIX)


def segments_bytes(db: Path) -> int:
    """What a warehouse's history segments take on disk (0 before its first seal)."""
    folder = segments_dir(db)
    return sum(p.stat().st_size for p in folder.iterdir()) if folder.is_dir() else 0


def _listed(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """(directory, file) of every segment the warehouse lists, in sealing order. A name that
    gpuscout never writes (`../../etc/passwd`, an absolute path) is refused: a warehouse is a
    file people share, and its rows must not choose what a reader opens."""
    rows = con.execute(
        "SELECT directory, file FROM history_segments ORDER BY sealed_at, file").fetchall()
    for _, name in rows:
        if not isinstance(name, str) or not _SEALED.match(name):
            raise DataError(f"the warehouse lists a history segment named {name!r}, which is "
                            "not a segment gpuscout writes; it is not read")
    return [(d, f) for d, f in rows]


def listed_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The file names of the listed segments (validated), in sealing order."""
    try:
        return [f for _, f in _listed(con)]
    except duckdb.CatalogException:  # a warehouse from before segments
        return []


def present_paths(real: Path, names: list[str]) -> list[Path]:
    """The listed segments in the folder beside the file; a missing one is a DataError that
    says how a warehouse moves."""
    folder = segments_dir(real)
    paths = [folder / name for name in names]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise DataError(f"the warehouse {real} lists {len(names)} history segments in {folder} "
                        f"but {len(missing)} are missing (first: {missing[0]}); a warehouse "
                        f"moves with its {SEGMENTS_SUFFIX} folder: put it back beside the file")
    return paths


_TYPE = re.compile(r"^[A-Z][A-Z0-9_ ]*(\(\d+(, ?\d+)?\))?(\[\])*$")


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def recent_columns(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """(name, type) of `recent_versions`' columns, the types checked to be plain type names
    (they are spliced into a view's SQL)."""
    columns = con.execute(
        "SELECT column_name, data_type FROM duckdb_columns() "
        "WHERE table_name = 'recent_versions' AND schema_name = 'main' "
        "AND database_name = current_database() ORDER BY column_index").fetchall()
    for name, kind in columns:
        if not _TYPE.match(kind):
            raise DataError(f"recent_versions.{name} has the type {kind!r}, which no gpuscout "
                            "migration creates; the warehouse is not read")
    return [(n, k) for n, k in columns]


def cast_columns(columns: list[tuple[str, str]], *, present: set[str] | None = None) -> str:
    """A select list casting each column to the table's type; NULL for a column the segments
    predate (`present`: the columns they hold, None for all)."""
    return ", ".join(
        f"CAST({quote_ident(c)} AS {kind}) AS {quote_ident(c)}" if present is None or c in present
        else f"CAST(NULL AS {kind}) AS {quote_ident(c)}" for c, kind in columns)


def _view_sql(con: duckdb.DuckDBPyConnection, paths: list[Path]) -> str:
    if not paths:
        return "SELECT * FROM recent_versions WHERE false"
    files = ", ".join(sql_literal(p) for p in paths)
    return (f"SELECT {cast_columns(recent_columns(con))} "
            f"FROM read_parquet([{files}], union_by_name = true)")


def _moved(listed: list[tuple[str, str]], real: Path) -> bool:
    """Were the segments listed in another folder than the one beside the file now?"""
    here = str(segments_dir(real))
    return any(directory != here for directory, _ in listed)


def _create_view(con: duckdb.DuckDBPyConnection, real: Path, listed: list[tuple[str, str]]
                 ) -> None:
    """`sealed_versions` over the listed segments, in the folder beside the file."""
    paths = [segments_dir(real) / f for _, f in listed]
    con.execute(f"CREATE OR REPLACE VIEW sealed_versions AS {_view_sql(con, paths)}")


def point_view(con: duckdb.DuckDBPyConnection, real: Path) -> None:
    """Write session: check that every listed segment is beside the file (before any work),
    and point `sealed_versions` there when the warehouse moved since its last write: the
    folder's row and the view change in one transaction."""
    listed = _listed(con)
    present_paths(real, [f for _, f in listed])
    if _moved(listed, real):
        with transaction(con):
            con.execute("UPDATE history_segments SET directory = $1", [str(segments_dir(real))])
            _create_view(con, real, listed)


def copy_warehouse(source: Path, target: Path) -> Path:
    """Copy a published warehouse and its segments (a backup, a test's fixture): the file
    first, then its folder, which holds at least every segment the copied file lists. The
    copy's readers find the segments beside it; its next write session re-points the view."""
    target.unlink(missing_ok=True)
    shutil.copyfile(source, target)
    folder = segments_dir(Path(os.path.realpath(source)))
    if folder.is_dir():
        shutil.copytree(folder, segments_dir(target), dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("*.part"))
    return target


def discard_unlisted(con: duckdb.DuckDBPyConnection, real: Path) -> None:
    """Delete segment files no published warehouse lists (a killed writer's).

    `con` is the write session's copy of the published file, whose list only ever grew, so a
    file it does not list was never published and no reader can hold it.
    """
    folder = segments_dir(real)
    if not folder.is_dir():
        return
    listed = {f for _, f in _listed(con)}
    for entry in folder.iterdir():
        if _SEGMENT.match(entry.name) and entry.name not in listed:
            entry.unlink()


def seal(con: duckdb.DuckDBPyConnection, real: Path, *, min_rows: int = SEAL_ROWS) -> int:
    """Move the closed versions of `recent_versions` to a new segment when there are at least
    `min_rows` (and at least one); the number moved. The segment is durable before the
    transaction that lists it commits."""
    row = con.execute("SELECT count(*), min(valid_from), max(valid_to) FROM recent_versions "
                      "WHERE valid_to IS NOT NULL").fetchone()
    assert row is not None
    closed, first, last = int(row[0]), row[1], row[2]
    if closed == 0 or closed < min_rows:
        return 0
    folder = segments_dir(real)
    folder.mkdir(exist_ok=True)
    now = datetime.now(UTC)
    name = f"versions-{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}.parquet"
    part = folder / (name + ".part")
    con.execute(f"COPY (SELECT * FROM recent_versions WHERE valid_to IS NOT NULL) TO "
                f"{sql_literal(part)} (FORMAT parquet, COMPRESSION zstd)")
    fsync_file(part)
    os.replace(part, folder / name)
    fsync_dir(folder)
    with transaction(con):
        moved = con.execute("DELETE FROM recent_versions WHERE valid_to IS NOT NULL").fetchone()
        assert moved is not None
        if int(moved[0]) != closed:
            raise DataError(f"sealing {name}: {moved[0]} closed versions deleted, {closed} "
                            "written; nothing sealed")
        con.execute("INSERT INTO history_segments VALUES ($1, $2, $3, $4, $5, $6)",
                    [name, str(folder), closed, first, last, now])
        _create_view(con, real, _listed(con))
    return closed

