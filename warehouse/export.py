"""Copies of the warehouse's views as Parquet or CSV files, written by DuckDB's own COPY."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import duckdb

from gpuscout.core.errors import UserInputError
from gpuscout.warehouse.sqlfiles import sql_literal

ExportFormat = Literal["parquet", "csv"]
# The history's storage (warehouse/segments.py): `offer_history` is the view users read of it.
_STORAGE_VIEWS = {"offer_versions", "sealed_versions"}


def views(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The views users query (the tables under them are the warehouse's own business)."""
    rows = con.sql("SELECT table_name FROM information_schema.tables "
                   "WHERE table_type = 'VIEW' AND table_schema = 'main' "
                   "ORDER BY table_name").fetchall()
    return [r[0] for r in rows if r[0] not in _STORAGE_VIEWS]


def export_views(con: duckdb.DuckDBPyConnection, names: Sequence[str], to: Path,
                 fmt: ExportFormat) -> list[Path]:
    """One `<view>.<fmt>` file per view in `to`; each appears whole or not at all."""
    known = views(con)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UserInputError(f"no view named {', '.join(unknown)}; views: {', '.join(known)}")
    if fmt not in ("parquet", "csv"):
        raise UserInputError(f"--format {fmt!r} is not one of parquet|csv")
    to.mkdir(parents=True, exist_ok=True)
    written = []
    for name in dict.fromkeys(names):
        target = to / f"{name}.{fmt}"
        part = to / f".{name}.{fmt}.part"
        # `name` is one of the catalog's own view names, so it is safe to quote as an identifier.
        con.execute(f'COPY (SELECT * FROM "{name}") TO {sql_literal(part)} (FORMAT {fmt})')
        os.replace(part, target)
        written.append(target)
    return written
