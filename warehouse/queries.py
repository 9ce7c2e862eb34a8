"""Named read queries: the file is chosen by name, parameters are bound, Arrow comes back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import duckdb
import pyarrow as pa

from pipeline.errors import UserInputError
from warehouse.sqlfiles import query


def run_named(con: duckdb.DuckDBPyConnection, name: str,
              params: Mapping[str, Any] | None = None) -> pa.Table:
    return con.execute(query(name), dict(params or {})).fetch_arrow_table()


def run_sql(con: duckdb.DuckDBPyConnection, sql: str) -> pa.Table:
    """A user's own SQL (the CLI opens the warehouse read-only for it)."""
    try:
        result = con.execute(sql)
    except duckdb.Error as exc:
        raise UserInputError(f"SQL error: {str(exc).splitlines()[0]}") from exc
    if result.description is None:
        return pa.table({})
    return result.fetch_arrow_table()
