"""The flow is the CLI's refresh with Prefect around it: one writer at a time, crash-safe."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from processes import kill_group, wait_gone

from gpuscout.core.errors import DataError
from gpuscout.flows import refresh as flow_mod
from gpuscout.flows.refresh import nightly_refresh
from gpuscout.pipeline.refresh import Source, refresh
from gpuscout.pipeline.refresh import collect as real_collect
from gpuscout.warehouse.connection import connect

HELPER = Path(__file__).with_name("kill_flow.py")


def _content(db: Path) -> list[tuple[Any, ...]]:
    with connect(db, read_only=True) as con:
        return con.execute(
            "SELECT 'run', run_id, provider, status FROM refresh_run_log UNION ALL "
            "SELECT 'offer', provider, offer_key, CAST(price_usd_per_hour AS VARCHAR) "
            "FROM offer_versions ORDER BY ALL").fetchall()


def test_two_flows_at_once_never_both_write(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "w.duckdb"
    collecting, release = threading.Event(), threading.Event()

    def slow_collect(name: str, **kw: Any) -> Any:
        collecting.set()
        assert release.wait(60), "the test never released the first flow"
        return real_collect(name, **kw)

    monkeypatch.setattr(flow_mod, "collect", slow_collect)
    first: dict[str, Any] = {}

    def run_first() -> None:
        first["result"] = nightly_refresh(providers=["lambda"], db=str(db), archive_root=None,
                                          offline=True, report_root=None)

    thread = threading.Thread(target=run_first)
    thread.start()
    try:
        assert collecting.wait(120), "the first flow never started collecting"
        # The first flow holds the writer lock from its first fetch to its last load.
        with pytest.raises(DataError, match="being written by another"):
            nightly_refresh(providers=["lambda"], db=str(db), archive_root=None, offline=True,
                            report_root=None)
    finally:
        release.set()
        thread.join(120)
    assert first["result"]["status"] in ("ok", "partial")
    with connect(db, read_only=True) as con:
        runs = con.execute("SELECT DISTINCT run_id FROM refresh_run_log").fetchall()
    assert runs == [(first["result"]["run_id"],)]  # the refused flow wrote nothing


def test_a_flow_killed_mid_load_leaves_the_warehouse_as_it_was(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    refresh(["lambda"], db=db, source=Source.offline())
    before = _content(db)
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect")}
    # Its own process group: the kill takes the flow's temporary Prefect server with it.
    proc = subprocess.Popen([sys.executable, str(HELPER), str(db)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 300  # a fresh Prefect home starts its server first
        line = ""
        while time.monotonic() < deadline and not line.startswith("LOADED"):
            line = proc.stdout.readline()
            if not line and proc.poll() is not None:
                raise AssertionError(f"flow exited {proc.returncode}: {proc.stderr.read()}")
        assert line.startswith("LOADED"), "the flow never reached its loads"
        # One provider's load has committed in the write session; the next one is running.
        kill_group(proc.pid)
        proc.wait(30)
    finally:
        kill_group(proc.pid)  # the server too, whatever happened above
    assert _content(db) == before
    wait_gone(proc.pid)
    # The dead flow's lock and half-written copy do not stop the next refresh.
    report = refresh(["lambda", "runpod"], db=db, source=Source.offline())
    assert [r.status for r in report.providers] == ["ok", "ok"]
