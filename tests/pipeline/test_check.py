"""`refresh --check`: fetch and parse as a refresh would, report per provider, write nothing."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from gpuscout.adapters.archive import ReplayTransport
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.pipeline.check import check
from gpuscout.pipeline.refresh import Source, refresh
from gpuscout.warehouse.connection import connect

REPLAY = ReplayTransport(SNAPSHOTS_DIR)


def _faulty(host: str, response: httpx.Response) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        return response if request.url.host == host else REPLAY.handle_request(request)
    return httpx.MockTransport(handle)


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gpuscout.adapters.http.time.sleep", lambda s: None)


def test_a_check_reads_everything_and_writes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    refresh(["lambda", "vastai"], db=db, source=Source.offline())
    before = db.read_bytes()
    report = check(["lambda", "vastai", "cudo"], source=Source.offline(), db=db)
    got = {p.provider: p for p in report.providers}
    assert got["lambda"].verdict == "ok" and got["lambda"].reached
    assert got["lambda"].offers == got["lambda"].last_good_offers == 5
    assert got["cudo"].verdict == "retired"
    # The bundled Vast.ai recording answers eight GPU names, not the rest of the marketplace.
    assert got["vastai"].verdict == "incomplete"
    assert "no recorded response" in (got["vastai"].detail or "")
    assert not report.healthy
    assert check(["lambda", "cudo"], source=Source.offline(), db=db).healthy  # retired is fine
    assert db.read_bytes() == before  # no write, no writer lock taken
    with connect(db, read_only=True) as con:
        assert con.execute("SELECT count(DISTINCT run_id) FROM refresh_runs").fetchone() == (1,)


def test_a_changed_format_and_an_unreachable_source_are_named(tmp_path: Path) -> None:
    changed = check(["lambda"], source=Source.offline(), transport=_faulty(
        "lambda.ai", httpx.Response(200, html="<html><body>new site</body></html>")))
    (lam,) = changed.providers
    assert (lam.verdict, lam.reached, lam.format_recognized) == ("format_changed", True, False)
    assert not changed.healthy
    down = check(["vastai"], source=Source.offline(),
                 transport=_faulty("console.vast.ai", httpx.Response(503)))
    (vast,) = down.providers
    assert vast.verdict == "unreachable" and "503" in (vast.detail or "")


def test_fewer_offers_than_the_last_good_refresh_is_called_out(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    refresh(["lambda"], db=db, source=Source.offline())
    with connect(db) as con:  # pretend the last good refresh had more offers
        con.execute("UPDATE refresh_run_log SET offers_loaded = 7 WHERE provider = 'lambda'")
    (lam,) = check(["lambda"], source=Source.offline(), db=db).providers
    assert lam.verdict == "shrunk" and lam.detail == "5 offers, 7 at the last good refresh"
    with connect(db) as con:  # many more: a refresh would hold it back as drift
        con.execute("UPDATE refresh_run_log SET offers_loaded = 1000 WHERE provider = 'lambda'")
    (lam,) = check(["lambda"], source=Source.offline(), db=db).providers
    assert lam.verdict == "drift" and lam.detail == (
        "drift: offer count collapsed: 5 vs 1000 in the last good refresh (threshold 50%)")
