"""The write path: one provider's refresh merged into the history in one transaction.

Offers arrive as one Arrow table and move with set-based SQL (stage, pair, close, touch,
insert); nothing is inserted row by row. The caller wraps merge, quarantine and run log in
`transaction()` so that a provider's refresh commits all-or-nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Literal

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel

from gpuscout.core.errors import DataError
from gpuscout.core.models import Reject
from gpuscout.warehouse.sqlfiles import statement
from gpuscout.warehouse.transactions import transaction


class OutOfOrderError(DataError):
    """The incoming observation is older than what the warehouse already holds."""


@dataclass(frozen=True)
class MergeCounts:
    new: int
    changed: int
    unchanged: int
    closed: int  # vanished offers closed by a complete refresh


# ok: loaded; refused: a gate kept the last good data; drift: the drift gate kept it (a field
# the provider always filled came back empty, or its offer count fell); failed: fetch or parse
# failed; skipped: a live fetch lacked its credentials; retired / no_public_prices: the provider
# no longer sells what is read (its offers were closed, its history kept).
RunStatus = Literal["ok", "refused", "drift", "failed", "skipped", "retired",
                    "no_public_prices"]


class RunRecord(BaseModel):
    """One row of the refresh run log."""

    run_id: str
    provider: str
    mode: str
    started_at: datetime
    finished_at: datetime
    duration_s: float
    status: RunStatus
    complete: bool
    captures: int = 0
    offers_parsed: int = 0
    offers_loaded: int = 0
    new_offers: int = 0
    changed_offers: int = 0
    unchanged_offers: int = 0
    closed_offers: int = 0
    quarantined: int = 0
    unknown_labels: list[str] = []
    observed_at: datetime | None = None
    error: str | None = None
    # field -> share of the offers read that carried it (pipeline/quality.py field_coverage)
    field_coverage: dict[str, float] | None = None


@dataclass(frozen=True)
class LastGoodLoad:
    """What the provider's last successful refresh loaded: the drift gate's reference."""

    offers: int
    field_coverage: dict[str, float] | None  # None for a run logged before it was recorded


def merge_offers(con: duckdb.DuckDBPyConnection, offers: pa.Table, *, provider: str,
                 run_id: str, complete: bool, keep_open: Iterable[str] = ()) -> MergeCounts:
    """Merge one provider's offers into the change-only history.

    `complete` says every page was read; only then are offers that were not seen closed.
    `keep_open` are offer keys that were read but held back (quarantined): they were not seen
    vanishing, so even a complete refresh leaves their open version as it is.
    Offer keys are unique within one refresh (pipeline/quality.py quarantines duplicates).
    Raises OutOfOrderError when the offers are older than the provider's stored state (an old
    archive replayed after a newer one), which would otherwise rewrite history backwards.
    """
    if offers.num_rows and set(offers.column("provider").unique().to_pylist()) != {provider}:
        raise ValueError(f"offers for merge must all belong to {provider!r}")
    con.register("incoming", _numbered(offers))
    try:
        con.execute(statement("stage_offers"))
        if not _scalar(con, "merge_has_open", [provider]):  # a first load: all new, no joins
            return MergeCounts(new=_scalar(con, "merge_insert_all", [run_id]), changed=0,
                               unchanged=0, closed=0)
        return _merge_into_open(con, offers.num_rows, provider=provider, run_id=run_id,
                                complete=complete, keep_open=keep_open)
    finally:
        for drop in ("DROP VIEW IF EXISTS stage", "DROP TABLE IF EXISTS merge_match"):
            with suppress(duckdb.Error):  # a failed transaction drops it with its rollback
                con.execute(drop)
        con.unregister("incoming")


def _numbered(offers: pa.Table) -> pa.Table:
    """The offers with `stage_row`, 1 to n: a staged offer's name in the merge's pairs."""
    ones = pc.fill_null(pa.nulls(offers.num_rows, pa.int64()), 1)
    return offers.append_column("stage_row", pc.call_function("cumulative_sum", [ones]))


def _scalar(con: duckdb.DuckDBPyConnection, name: str, params: list[object]) -> int:
    """The one value a statement returns (an INSERT or UPDATE returns how many rows it wrote)."""
    row = con.execute(statement(name), params).fetchone()
    assert row is not None
    return int(row[0])


def _merge_into_open(con: duckdb.DuckDBPyConnection, rows: int, *, provider: str, run_id: str,
                     complete: bool, keep_open: Iterable[str]) -> MergeCounts:
    """The staged offers against the provider's open versions: pair, close, touch, insert.

    Each staged offer is paired with its open version once (merge_match); the statements after
    it work through the pairs. The counts are what they wrote: a changed offer is one whose
    open version was closed for it, and every staged offer without an open version left is new
    or changed.
    """
    con.execute(statement("merge_match"), [provider])
    older = con.execute(statement("older_than_stored")).fetchone()
    if rows and older:
        raise OutOfOrderError(
            f"{provider}: data observed at {older[0]:%Y-%m-%d %H:%M} is older than "
            f"the stored state ({older[1]:%Y-%m-%d %H:%M}); refusing to rewrite history")
    changed = _scalar(con, "merge_close_changed", [run_id])
    closed = 0
    observed = con.execute("SELECT max(observed_at) FROM merge_match").fetchone()
    if complete and observed and observed[0] is not None:
        con.execute("CREATE OR REPLACE TEMP TABLE keep_open AS "
                    "SELECT unnest($1::VARCHAR[]) AS offer_key", [sorted(set(keep_open))])
        closed = _scalar(con, "merge_close_vanished", [run_id, observed[0]])
    con.execute(statement("merge_touch_seen"))
    con.execute(statement("merge_touch_unchanged"))
    inserted = _scalar(con, "merge_insert_versions", [run_id])
    return MergeCounts(new=inserted - changed, changed=changed, unchanged=rows - inserted,
                       closed=closed)


def close_provider(con: duckdb.DuckDBPyConnection, provider: str, *, run_id: str,
                   at: datetime) -> int:
    """Close all of a provider's open offers; the number closed."""
    row = con.execute("SELECT count(*) FROM recent_versions WHERE provider = $1 "
                      "AND valid_to IS NULL", [provider]).fetchone()
    con.execute(statement("close_provider"), [provider, run_id, at])
    return int(row[0]) if row else 0


_TS = pa.timestamp("us", tz="UTC")
_QUARANTINE_SCHEMA = pa.schema([
    ("run_id", pa.string()), ("provider", pa.string()), ("offer_key", pa.string()),
    ("reason", pa.string()), ("raw", pa.string()),
    ("quarantined_at", _TS),
])


def write_quarantine(con: duckdb.DuckDBPyConnection, rejects: Sequence[Reject], *, run_id: str,
                     at: datetime) -> None:
    if not rejects:
        return
    table = pa.Table.from_pydict({
        "run_id": [run_id] * len(rejects),
        "provider": [r.provider for r in rejects],
        "offer_key": [r.offer_key for r in rejects],
        "reason": [r.reason for r in rejects],
        "raw": [r.raw for r in rejects],
        "quarantined_at": [at] * len(rejects),
    }, schema=_QUARANTINE_SCHEMA)
    con.register("incoming_quarantine", table)
    try:
        con.execute(statement("insert_quarantine"))
    finally:
        con.unregister("incoming_quarantine")


def write_run(con: duckdb.DuckDBPyConnection, run: RunRecord) -> None:
    """The run log's row, and the run's field coverage beside it."""
    table = pa.Table.from_pylist([run.model_dump(exclude={"field_coverage"})], schema=pa.schema([
        ("run_id", pa.string()), ("provider", pa.string()), ("mode", pa.string()),
        ("started_at", _TS), ("finished_at", _TS),
        ("duration_s", pa.float64()), ("status", pa.string()), ("complete", pa.bool_()),
        ("captures", pa.int32()), ("offers_parsed", pa.int32()), ("offers_loaded", pa.int32()),
        ("new_offers", pa.int32()), ("changed_offers", pa.int32()),
        ("unchanged_offers", pa.int32()), ("closed_offers", pa.int32()),
        ("quarantined", pa.int32()), ("unknown_labels", pa.list_(pa.string())),
        ("observed_at", _TS), ("error", pa.string()),
    ]))
    con.register("incoming_run", table)
    try:
        con.execute(statement("insert_run"))
    finally:
        con.unregister("incoming_run")
    if run.field_coverage:
        fields = sorted(run.field_coverage)
        coverage = pa.Table.from_pydict({
            "run_id": [run.run_id] * len(fields), "provider": [run.provider] * len(fields),
            "field": fields, "share": [run.field_coverage[f] for f in fields]})
        con.register("incoming_coverage", coverage)
        try:
            con.execute(statement("insert_field_coverage"))
        finally:
            con.unregister("incoming_coverage")


def store_fx_rates(con: duckdb.DuckDBPyConnection, *, as_of: date, usd_per_unit: dict[str, float],
                   source_url: str, loaded_at: datetime) -> None:
    currencies = sorted(usd_per_unit)
    table = pa.Table.from_pydict({
        "as_of": [as_of] * len(currencies), "currency": currencies,
        "usd_per_unit": [usd_per_unit[c] for c in currencies],
        "source_url": [source_url] * len(currencies), "loaded_at": [loaded_at] * len(currencies),
    })
    con.register("incoming_fx", table)
    try:
        con.execute(statement("upsert_fx_rates"))
    finally:
        con.unregister("incoming_fx")


def latest_fx_rates(con: duckdb.DuckDBPyConnection) -> tuple[date | None, dict[str, float]]:
    """The newest stored rates: the fallback when tonight's rates cannot be read."""
    rows = con.execute(statement("latest_fx_rates")).fetchall()
    if not rows:
        return None, {}
    return rows[0][0], {currency: rate for _, currency, rate in rows}


def replace_provider_profiles(con: duckdb.DuckDBPyConnection, profiles: pa.Table) -> None:
    con.register("incoming_profiles", profiles)
    try:
        with transaction(con):
            con.execute(statement("replace_provider_profiles"))
            con.execute(statement("insert_provider_profiles"))
    finally:
        con.unregister("incoming_profiles")


def replace_gpu_catalog(con: duckdb.DuckDBPyConnection, gpus_csv: Path) -> None:
    con.execute(statement("replace_gpu_catalog"), [str(gpus_csv)])


def last_good_load(con: duckdb.DuckDBPyConnection, provider: str) -> LastGoodLoad | None:
    """The provider's last successful refresh; None when it never had one."""
    rows = con.execute(statement("last_good_load"), [provider]).fetchall()
    if not rows:
        return None
    offers, coverage = rows[0]
    shares = {c["field"]: float(c["share"]) for c in coverage or []}
    return LastGoodLoad(offers=int(offers), field_coverage=shares or None)


def gpu_price_medians(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[float, int]]:
    """Canonical GPU -> (median USD per GPU-hour of its open offers, how many offers)."""
    rows = con.execute(statement("gpu_price_medians")).fetchall()
    return {gpu: (float(median), int(n)) for gpu, median, n in rows}


def last_loaded_rejects(con: duckdb.DuckDBPyConnection,
                        provider: str) -> list[tuple[str | None, str]]:
    """(offer_key, reason) of the rows the provider's last loaded refresh quarantined."""
    return [(key, reason) for key, reason in
            con.execute(statement("last_loaded_rejects"), [provider]).fetchall()]


def open_offer_prices(con: duckdb.DuckDBPyConnection,
                      provider: str) -> dict[str, tuple[float, str]]:
    """offer_key -> (price per GPU-hour in the provider's currency, currency), open versions."""
    rows = con.execute(statement("open_offer_prices"), [provider]).fetchall()
    return {key: (float(price), currency) for key, price, currency in rows}
