"""The user's measured runs in the warehouse: one Arrow load per `runs add`, read back whole."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import duckdb
import pyarrow as pa

from gpuscout.warehouse.queries import run_named
from gpuscout.warehouse.sqlfiles import statement
from gpuscout.warehouse.transactions import transaction

_TS = pa.timestamp("us", tz="UTC")
MEASURED_RUNS_SCHEMA = pa.schema([
    ("run_id", pa.string()), ("added_at", _TS), ("source_path", pa.string()),
    ("source_format", pa.string()), ("model", pa.string()), ("gpu_id", pa.string()),
    ("gpus", pa.int32()), ("framework", pa.string()), ("method", pa.string()),
    ("batch_size", pa.int32()), ("seq_len", pa.int32()), ("mean_seq_len", pa.int32()),
    ("grad_accum", pa.int32()), ("job", pa.string()),
    ("field_sources", pa.map_(pa.string(), pa.string())),
    ("tokens_per_s", pa.float64()), ("token_count", pa.string()),
    ("token_basis", pa.string()), ("peak_gb", pa.float64()), ("memory_metric", pa.string()),
    ("runtime_s", pa.float64()), ("log_started_at", _TS), ("log_finished_at", _TS),
    ("predicted_tokens_per_s", pa.float64()), ("predicted_peak_gb", pa.float64()),
    ("tokens_error_pct", pa.float64()), ("memory_error_pct", pa.float64()),
    ("gpuscout_version", pa.string()), ("notes", pa.list_(pa.string())),
])


def stored_runs(con: duckdb.DuckDBPyConnection,
                run_ids: Sequence[str]) -> dict[str, datetime]:
    """Of `run_ids`, those already stored, with when they were added."""
    rows = con.execute("SELECT run_id, added_at FROM measured_runs "
                       "WHERE run_id IN (SELECT unnest($1::VARCHAR[]))",
                       [list(run_ids)]).fetchall()
    return {run_id: added for run_id, added in rows}


def add_measured_runs(con: duckdb.DuckDBPyConnection, runs: pa.Table) -> int:
    """Insert the runs not stored yet, in one transaction; how many were inserted."""
    if runs.num_rows == 0:
        return 0
    con.register("incoming_measured_runs", runs.cast(MEASURED_RUNS_SCHEMA))
    try:
        with transaction(con):
            row = con.execute(statement("insert_measured_runs")).fetchone()
    finally:
        con.unregister("incoming_measured_runs")
    return int(row[0]) if row else 0


def measured_runs(con: duckdb.DuckDBPyConnection) -> pa.Table:
    return run_named(con, "measured_runs")
