"""SQL lives in .sql files; Python picks the file and binds parameters."""

from __future__ import annotations

from functools import cache
from pathlib import Path

SQL_DIR = Path(__file__).parent / "sql"
QUERIES_DIR = Path(__file__).parent / "queries"


def sql_literal(text: str | Path) -> str:
    """A string (a path, a comment) as a quoted SQL literal, for the statements DuckDB cannot
    bind a parameter into (COPY ... TO, read_parquet in a view, COMMENT ON)."""
    return "'" + str(text).replace("'", "''") + "'"


@cache
def statement(name: str) -> str:
    """A write-path statement from warehouse/sql/<name>.sql."""
    return (SQL_DIR / f"{name}.sql").read_text("utf-8")


@cache
def query(name: str) -> str:
    """A named read query from warehouse/queries/<name>.sql."""
    return (QUERIES_DIR / f"{name}.sql").read_text("utf-8")
