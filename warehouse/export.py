"""Copies of the warehouse's views as Parquet or CSV files, written by DuckDB's own COPY.

An export runs on a reader whose only writable place is the target folder
(`connect(..., write_to=folder)`), and the file names come from view names that are plain
identifiers, so neither a view's name nor its definition can put a file anywhere else.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import duckdb

from gpuscout.core.errors import DataError, UserInputError
from gpuscout.warehouse.sqlfiles import sql_literal

ExportFormat = Literal["parquet", "csv"]
FORMATS = ("parquet", "csv")
# The history's storage (warehouse/segments.py): `offer_history` is the view users read of it.
_STORAGE_VIEWS = {"offer_versions", "sealed_versions"}
_VIEW_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def views(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The views users query (the tables under them are the warehouse's own business). Only
    plain identifiers: a name that is not one was not made by gpuscout and is not exported."""
    rows = con.sql("SELECT table_name FROM information_schema.tables "
                   "WHERE table_type = 'VIEW' AND table_schema = 'main' "
                   "AND table_catalog = current_database() ORDER BY table_name").fetchall()
    return [r[0] for r in rows if r[0] not in _STORAGE_VIEWS and _VIEW_NAME.match(r[0])]


def export_folder(to: Path | str, fmt: str) -> Path:
    """The target folder, created and resolved (symlinks followed), before any warehouse is
    opened: the reader lets COPY write there and nowhere else."""
    if fmt not in FORMATS:
        raise UserInputError(f"--format {fmt!r} is not one of {'|'.join(FORMATS)}")
    folder = Path(to)
    if folder.exists() and not folder.is_dir():
        raise UserInputError(f"--to {folder} is not a folder; give a folder for the files")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"cannot create the export folder {folder}: "
                        f"{exc.strerror or exc}") from exc
    real = Path(os.path.realpath(folder))
    if not os.access(real, os.W_OK | os.X_OK):
        raise DataError(f"cannot write into the export folder {folder} (read-only or not "
                        "permitted)")
    return real


def export_views(con: duckdb.DuckDBPyConnection, names: Sequence[str], to: Path,
                 fmt: ExportFormat) -> list[Path]:
    """One `<view>.<fmt>` file per view in `to` (from `export_folder`); each appears whole or
    not at all, and a failed one leaves no partial file."""
    known = views(con)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UserInputError(f"no view named {', '.join(unknown)}; views: {', '.join(known)}")
    if fmt not in FORMATS:
        raise UserInputError(f"--format {fmt!r} is not one of {'|'.join(FORMATS)}")
    written = []
    for name in dict.fromkeys(names):
        target = to / f"{name}.{fmt}"
        if target.is_dir():
            raise UserInputError(f"{target} is a folder; move it away to export {name}")
        part = to / f".{name}.{fmt}.part"
        try:
            # `name` is a plain identifier from the catalog (views() above): safe to quote.
            con.execute(f'COPY (SELECT * FROM "{name}") TO {sql_literal(part)} (FORMAT {fmt})')
            os.replace(part, target)
        except (duckdb.Error, OSError) as exc:
            part.unlink(missing_ok=True)
            why = exc.strerror if isinstance(exc, OSError) else str(exc).splitlines()[0]
            raise DataError(f"exporting {name} to {target} failed: {why}") from exc
        written.append(target)
    return written
