"""The nightly flow on a local Dask cluster (prefect-dask, loopback) gives the same warehouse as
on the default thread pool and as the one-task refresh; AWS is collected one task per region."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuscout.adapters import aws
from gpuscout.adapters.archive import ReplayTransport
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.flows import refresh as flow_mod
from gpuscout.flows.refresh import run_nightly, task_runner
from gpuscout.pipeline.collect_parts import fetch_head, in_parts
from gpuscout.pipeline.refresh import Source, refresh
from gpuscout.warehouse.connection import connect

pytest.importorskip("prefect_dask")

PROVIDERS = ["aws", "lambda", "runpod", "scaleway"]
COLUMNS = ("provider, offer_key, gpu_id, gpu_count, pricing_model, price_usd_per_hour, region, "
           "availability, valid_from, last_seen_at")


def _offers(db: Path) -> list[tuple]:
    with connect(db, read_only=True) as con:
        return con.execute(f"SELECT {COLUMNS} FROM current_offers ORDER BY provider, offer_key"
                           ).fetchall()


def _statuses(db: Path) -> dict[str, tuple]:
    with connect(db, read_only=True) as con:
        rows = con.execute("SELECT provider, status, complete, captures, offers_parsed, "
                           "offers_loaded FROM refresh_runs").fetchall()
    return {r[0]: r[1:] for r in rows}


def test_aws_is_fetched_in_parts_one_per_region() -> None:
    assert in_parts("aws") and not in_parts("lambda")
    got = fetch_head("aws", source=Source.offline(), transport=ReplayTransport(SNAPSHOTS_DIR),
                     recorder=None)
    assert got.parts[-1] == aws.SPOT_PART and len(got.parts) >= 2
    assert len(got.captures) == 2  # the offer index and the region index


def test_dask_runner_gives_the_threads_runner_result(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(flow_mod.collect_provider, "retry_delay_seconds", [0, 0, 0])
    runs = {}
    for runner in ("threads", "dask"):
        db = tmp_path / f"{runner}.duckdb"
        result = run_nightly(runner, providers=PROVIDERS, db=str(db),
                             archive_root=str(tmp_path / runner), offline=True,
                             report_root=None, night="2026-12-01")
        assert result["status"] == "ok", result
        runs[runner] = db
    # the same refresh as the CLI's, one task per provider, for reference
    one = tmp_path / "one.duckdb"
    assert refresh(PROVIDERS, db=one, source=Source.offline()).status == "ok"
    assert _offers(runs["dask"]) == _offers(runs["threads"]) == _offers(one)
    assert _offers(one)  # not vacuous
    assert _statuses(runs["dask"]) == _statuses(runs["threads"]) == _statuses(one)
    # AWS's parts were each archived: the night replays like any other
    manifest = tmp_path / "dask" / "2026-12-01" / "aws" / "manifest.json"
    assert manifest.exists()


def test_task_runner_names() -> None:
    assert type(task_runner("threads")).__name__ == "ThreadPoolTaskRunner"
    assert type(task_runner("dask")).__name__ == "DaskTaskRunner"
