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
    return run_query(con, query(name), params)


def run_query(con: duckdb.DuckDBPyConnection, sql: str,
              params: Mapping[str, Any] | None = None) -> pa.Table:
    """A query of the project's own (a use case keeps its SQL beside its code)."""
    return con.sql(sql, params=dict(params or {})).to_arrow_table()


class BlockedStatementError(UserInputError):
    """A user's SQL tried to reach a file, an extension or the configuration."""


def run_sql(con: duckdb.DuckDBPyConnection, sql: str, *, allow_files: bool = False) -> pa.Table:
    """A user's own SQL on a read-only connection.

    Unless `allow_files`, DuckDB's external access is disabled first and its configuration
    locked, so the statement can read the warehouse and nothing else: no COPY TO, no
    read_csv('/etc/...'), no ATTACH, INSTALL or SET that would undo it.
    """
    if not allow_files:
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    try:
        relation = con.sql(sql)
        return relation.to_arrow_table() if relation is not None else pa.table({})
    except (duckdb.PermissionException, duckdb.InvalidInputException) as exc:
        first = str(exc).splitlines()[0]
        if allow_files or not _is_blocked(first):
            raise UserInputError(f"SQL error: {first}") from exc
        raise BlockedStatementError(
            f"blocked: `gpuscout sql` reads the warehouse only ({first}); --allow-files lets "
            f"it read and write files") from exc
    except duckdb.Error as exc:
        raise UserInputError(f"SQL error: {str(exc).splitlines()[0]}") from exc


def _is_blocked(message: str) -> bool:
    return ("disabled by configuration" in message or "Cannot change configuration" in message
            or "attached in read-only mode" in message)
