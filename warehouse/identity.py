"""What a `--db` names, checked before DuckDB opens it.

A warehouse is a file people share and point tools at by mistake, so nothing is opened on
trust: a path that is a folder, a SQLite file, someone's own DuckDB database, a warehouse of a
newer gpuscout, or a URL that DuckDB would meet by downloading an extension each get one line
saying what it is, and nothing is written to it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb

from gpuscout.core.errors import DataError, UserInputError
from gpuscout.warehouse.migrate import migration_files

# DuckDB's storage format writes this magic at byte 8 of every database file.
_DUCKDB_MAGIC = b"DUCK"
# Read by a connection before anything else: no extension is installed or loaded behind the
# user's back (a SQLite file or an s3:// path would otherwise start a download).
def safe_config() -> dict[str, str | bool | int | float | list[str]]:
    return {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
# Remote databases need extensions fetched at run time; an operator opts in to that.
REMOTE_OPT_IN = "GPUSCOUT_REMOTE_DB"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


def remote_scheme(target: str) -> str | None:
    """`md`, `s3`, `http`, ... for a database URI; None for a path (a drive letter is a path)."""
    m = _SCHEME.match(target)
    if m is None or len(m.group(1)) == 1:
        return None
    return m.group(1).lower()


def check_target(target: str) -> None:
    """Refuse a remote database unless the operator asked for one; a path is checked when it
    is opened (`check_file`)."""
    scheme = remote_scheme(target)
    if scheme is not None and os.environ.get(REMOTE_OPT_IN) != "1":
        raise UserInputError(
            f"--db {target!r} is a {scheme}: URI, which DuckDB opens by downloading an "
            f"extension at run time; give a file path, or set {REMOTE_OPT_IN}=1 to allow it")


def check_file(path: Path) -> None:
    """A path that exists must be a DuckDB file (an empty file is a new warehouse)."""
    if path.is_dir():
        raise UserInputError(f"--db {path} is a folder; give the warehouse's file path")
    if not path.exists():
        return
    if not path.is_file():
        raise UserInputError(f"--db {path} is not a regular file")
    try:
        with path.open("rb") as f:
            head = f.read(16)
    except OSError as exc:
        raise DataError(f"cannot read warehouse {path}: {exc.strerror or exc}") from exc
    if head and head[8:12] != _DUCKDB_MAGIC:
        kind = "a SQLite database" if head.startswith(b"SQLite format") else "not a DuckDB file"
        raise DataError(f"{path} is {kind}, not a gpuscout warehouse; pass --db a new path "
                        "or an existing warehouse")


def newest_known_version() -> int:
    return max(version for version, _ in migration_files())


def check_ownership(con: duckdb.DuckDBPyConnection, target: str) -> None:
    """Before a write: the database is empty, or a gpuscout warehouse of a schema this version
    knows. Someone's own DuckDB file is not extended with gpuscout's tables, and a newer
    warehouse is not written with an older schema."""
    tables = con.execute("SELECT table_name FROM duckdb_tables() WHERE NOT internal "
                         "AND database_name = current_database()").fetchall()
    names = {t for (t,) in tables}
    if not names:
        return
    if "schema_migrations" not in names:
        raise DataError(f"{target} is a DuckDB database but not a gpuscout warehouse (no "
                        "schema_migrations table); it is left as it is: pass --db a new path")
    newest = con.execute("SELECT max(version) FROM schema_migrations").fetchone()
    known = newest_known_version()
    if newest and newest[0] is not None and int(newest[0]) > known:
        raise DataError(f"the warehouse at {target} was written by a newer gpuscout (schema "
                        f"{newest[0]}, this one knows up to {known}); upgrade gpuscout to "
                        "refresh it (reading still works)")
