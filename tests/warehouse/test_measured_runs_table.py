"""The measured_runs table (migration 0010): Arrow loads in a write session, nothing rewritten."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest

from gpuscout.warehouse.connection import connect
from gpuscout.warehouse.measured import (
    MEASURED_RUNS_SCHEMA,
    add_measured_runs,
    measured_runs,
    stored_runs,
)

ADDED = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def _run(run_id: str, **over: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(MEASURED_RUNS_SCHEMA.names)
    row.update(run_id=run_id, added_at=ADDED, source_path="trainer_state.json",
               source_format="hf-trainer", model="meta-llama/Meta-Llama-3-8B", gpu_id="l4-24gb",
               gpus=1, framework="hf", method="lora", batch_size=1, seq_len=2048, grad_accum=8,
               job="{}", field_sources=[("gpu", "option"), ("batch_size", "log")],
               tokens_per_s=1124.0, gpuscout_version="0.1.0", notes=[])
    row.update(over)
    return row


def _table(*rows: dict[str, Any]) -> pa.Table:
    return pa.Table.from_pylist(list(rows), schema=MEASURED_RUNS_SCHEMA)


def test_runs_are_added_once_and_read_back(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    with connect(db) as con:
        assert add_measured_runs(con, _table(_run("a"), _run("b"))) == 2
        # the same run again, with other figures: the stored one stays as it was
        assert add_measured_runs(con, _table(_run("a", tokens_per_s=9.0), _run("c"))) == 1
        assert stored_runs(con, ["a", "z"]) == {"a": ADDED}
    with connect(db, read_only=True) as con:
        rows = measured_runs(con).to_pylist()
    assert [r["run_id"] for r in rows] == ["a", "b", "c"]
    assert rows[0]["tokens_per_s"] == 1124.0
    assert dict(rows[0]["field_sources"]) == {"gpu": "option", "batch_size": "log"}


def test_a_bad_row_adds_nothing(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    with connect(db) as con:
        add_measured_runs(con, _table(_run("a")))
    with pytest.raises(duckdb.Error), connect(db) as con:
        add_measured_runs(con, _table(_run("b"), _run("c", model=None)))
    with connect(db, read_only=True) as con:
        assert [r["run_id"] for r in measured_runs(con).to_pylist()] == ["a"]
