"""SQL lives in .sql files; Python picks the file and binds parameters."""

from __future__ import annotations

from functools import cache
from pathlib import Path

SQL_DIR = Path(__file__).parent / "sql"
QUERIES_DIR = Path(__file__).parent / "queries"


@cache
def statement(name: str) -> str:
    """A write-path statement from warehouse/sql/<name>.sql."""
    return (SQL_DIR / f"{name}.sql").read_text("utf-8")


@cache
def query(name: str) -> str:
    """A named read query from warehouse/queries/<name>.sql."""
    return (QUERIES_DIR / f"{name}.sql").read_text("utf-8")
