"""Named read queries: the file is chosen by name, parameters are bound, Arrow comes back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import duckdb

from gpuscout.core.errors import UserInputError
from gpuscout.warehouse.sqlfiles import query

if TYPE_CHECKING:  # DuckDB imports it for Arrow results; `fetch_named` needs none
    import pyarrow as pa


def run_named(con: duckdb.DuckDBPyConnection, name: str,
              params: Mapping[str, Any] | None = None) -> pa.Table:
    return run_query(con, query(name), params)


def fetch_named(con: duckdb.DuckDBPyConnection, name: str, params: Mapping[str, Any] | None = None,
                ) -> tuple[list[str], list[tuple[Any, ...]]]:
    """A named query's column names and rows as Python values, with no Arrow on the way: for
    a few rows printed by the CLI, importing pyarrow would cost more than the query."""
    cursor = con.execute(query(name), dict(params or {}))
    rows = cursor.fetchall()
    return [column[0] for column in cursor.description or []], rows


OFFER_SORTS = ("price", "gpu-hour", "vram-hour")
# More rows than any warehouse holds, and a value DuckDB's LIMIT takes (a 23-digit one is not).
MAX_LIMIT = 1_000_000


def offers_params(*, gpu: str | None = None, min_vram: float | None = None,
                  max_price: float | None = None, spot: bool | None = None,
                  providers: Sequence[str] | None = None, region: str | None = None,
                  sort: str = "gpu-hour", limit: int = 50) -> dict[str, Any]:
    """The parameters of the `offers` query (None: no filter). A sort or limit it cannot take,
    or a GPU the catalog does not know, is the user's error, raised before any warehouse is
    opened (`check_filter_values` checks the providers and region against the warehouse)."""
    if sort not in OFFER_SORTS:
        raise UserInputError(f"sort {sort!r} is not one of {'|'.join(OFFER_SORTS)}")
    if not 1 <= limit <= MAX_LIMIT:
        raise UserInputError(f"limit must be between 1 and {MAX_LIMIT:,}, got {limit}")
    if gpu is not None:
        from gpuscout.core.catalog import load_catalog

        gpu = load_catalog().gpu_filter(gpu)
    return {
        "gpu": gpu, "min_vram": min_vram, "max_price": max_price,
        "pricing_model": None if spot is None else ("spot" if spot else "on_demand"),
        "providers": list(providers) if providers else None, "region": region, "sort": sort,
        "limit": limit,
    }


def check_filter_values(con: duckdb.DuckDBPyConnection, *,
                        providers: Sequence[str] | None = None,
                        region: str | None = None) -> None:
    """Providers and a region that this warehouse has, or one line naming the closest.

    A provider is known once refreshed into the warehouse (a retired one too); a region
    matches as the offers query matches it, a fragment of a region code or a geography. A
    warehouse that holds neither kind yet has nothing to check against, and passes.
    """
    from gpuscout.core.suggest import did_you_mean

    if not providers and region is None:
        return
    known: dict[str, set[str]] = {"provider": set(), "region": set(), "geography": set()}
    for kind, value in con.execute(query("filter_values")).fetchall():
        known[kind].add(value)
    unknown = [p for p in providers or () if p not in known["provider"]]
    if unknown and known["provider"]:
        name = unknown[0]
        raise UserInputError(
            f"--provider {name!r}: no such provider in this warehouse"
            f"{did_you_mean(name, known['provider'])} (`gpuscout providers` lists the "
            f"{len(known['provider'])} it has; `gpuscout refresh --provider NAME` reads one "
            "it has not refreshed)")
    if region is None or not (known["region"] or known["geography"]):
        return
    needle = region.lower()  # as the query compares it
    if needle.strip() and (needle in known["geography"]
                   or any(needle in r.lower() for r in known["region"])):
        return
    geographies = ", ".join(sorted(known["geography"]))
    raise UserInputError(
        f"--region {region!r} matches no region code or geography of the current offers"
        f"{did_you_mean(needle, known['region'] | known['geography'], n=5)} (geographies: "
        f"{geographies}; or a fragment of a region code such as us-east)")


def run_query(con: duckdb.DuckDBPyConnection, sql: str,
              params: Mapping[str, Any] | None = None) -> pa.Table:
    """A query of the project's own (a use case keeps its SQL beside its code)."""
    return con.sql(sql, params=dict(params or {})).to_arrow_table()


class BlockedStatementError(UserInputError):
    """A user's SQL tried to reach a file, an extension or the configuration."""


def run_sql(con: duckdb.DuckDBPyConnection, sql: str, *, allow_files: bool = False) -> pa.Table:
    """A user's own SQL on a reader (`connect(read_only=True)`).

    The reader itself is what keeps the SQL to the warehouse: its file is attached read-only
    and, unless `allow_files`, file access is off and the configuration locked before the
    statement runs (warehouse/reader.py). Whatever the statement is (a COPY inside PREPARE,
    a view that reads /proc), it can write nothing and read no other file. A statement that
    tries gets one line naming what was refused.
    """
    import pyarrow as pa

    if not isinstance(sql, str) or not sql.strip():
        raise UserInputError("give a SQL statement to run (a non-empty string)")
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
            or "attached in read-only mode" in message
            or "disabled through configuration" in message)
