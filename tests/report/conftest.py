"""Shared fixtures: a warehouse refreshed from the bundled snapshots, and the report that
`gpuscout report` writes from it with the default job."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from reportkit import run_report

from gpuscout.pipeline.refresh import Source, refresh


def _no_connect(self: socket.socket, address: Any) -> None:
    raise RuntimeError(f"network access during an offline refresh: {address!r}")


@pytest.fixture(scope="session")
def bundled_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled snapshots replayed into a warehouse, once per session."""
    db = tmp_path_factory.mktemp("warehouse") / "bundled.duckdb"
    # The autouse network block is per test, so this session fixture brings its own.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", _no_connect)
        report = refresh(None, db=db, source=Source.offline())
    # A provider failing here is tests/test_cli.py's business; the report shows it as stale.
    assert report.status != "failed", report
    return db


@pytest.fixture(scope="session")
def bundled_report(bundled_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`gpuscout report --out DIR --db ...` with the default job, on the bundled snapshots."""
    out = tmp_path_factory.mktemp("report")
    page = run_report("--out", str(out), "--db", str(bundled_db))
    assert page == out / "index.html"
    return page
