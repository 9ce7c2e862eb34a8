"""Named read queries: the file is chosen by name, parameters are bound, Arrow comes back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import duckdb
import pyarrow as pa
from gpuscout.core.errors import UserInputError
from gpuscout.warehouse.sqlfiles import query


def run_named(con: duckdb.DuckDBPyConnection, name: str,
              params: Mapping[str, Any] | None = None) -> pa.Table:
    return con.sql(query(name), params=dict(params or {})).to_arrow_table()


def run_sql(con: duckdb.DuckDBPyConnection, sql: str) -> pa.Table:
    """A user's own SQL (the CLI opens the warehouse read-only for it)."""
    try:
        relation = con.sql(sql)
        return relation.to_arrow_table() if relation is not None else pa.table({})
    except duckdb.Error as exc:
        raise UserInputError(f"SQL error: {str(exc).splitlines()[0]}") from exc
