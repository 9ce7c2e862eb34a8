"""The nightly flow end to end on the bundled snapshots, with injected provider failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuscout.core.errors import FetchError, ParseError
from gpuscout.flows import refresh as flow_mod
from gpuscout.flows.deploy import NIGHTLY_CRON, nightly_schedule
from gpuscout.flows.refresh import nightly_refresh
from gpuscout.pipeline import refresh as pipeline_refresh
from gpuscout.pipeline.refresh import collect as real_collect
from gpuscout.warehouse.connection import connect


@pytest.fixture(autouse=True)
def _fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(flow_mod.collect_provider, "retry_delay_seconds", [0, 0, 0])


def _runs(db: Path) -> dict[str, str]:
    with connect(db, read_only=True) as con:
        rows = con.execute("SELECT provider, status FROM refresh_runs").fetchall()
    return dict(rows)


def test_full_flow_on_bundled_snapshots(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    result = nightly_refresh(db=str(db), archive_root=str(tmp_path / "archive"), offline=True,
                             report_root=None,
                             night="2026-12-01")
    assert result["status"] == "ok"
    # every provider loaded, but Cudo, which is retired, and Fluidstack, which publishes no
    # prices (pipeline/data/provider_lifecycle.csv)
    ended = {"cudo": "retired", "fluidstack": "no_public_prices"}
    assert {p: result["providers"].pop(p) for p in ended} == ended
    assert set(result["providers"].values()) == {"ok"}
    assert _runs(db) == {**result["providers"], **ended}
    # the night's raw responses are archived by date and replay through the same code
    night = tmp_path / "archive" / "2026-12-01"
    assert all((night / p / "manifest.json").exists() for p in result["providers"])
    again = nightly_refresh(db=str(tmp_path / "replayed.duckdb"), archive_root=None,
                            report_root=None,
                            replay_dir=str(night))
    assert again["offers_loaded"] == result["offers_loaded"]


def test_summary_artifact_is_published_with_the_report(tmp_path: Path) -> None:
    from prefect.artifacts import Artifact

    nightly_refresh(db=str(tmp_path / "w.duckdb"), archive_root=None, offline=True,
                    night="2026-12-01", report_root=str(tmp_path / "report"))
    artifact = Artifact.get("nightly-refresh-summary")
    assert artifact is not None
    assert "Cheapest offer per GPU" in str(artifact.data)
    assert "Stale providers" in str(artifact.data)
    page = tmp_path / "report" / "2026-12-01" / "index.html"
    assert page.exists() and page.as_uri() in str(artifact.data)


def test_one_failing_provider_does_not_fail_the_others(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def collect(name, **kw):
        if name == "vastai":
            raise ParseError("layout changed", provider=name, url="https://x.test")
        return real_collect(name, **kw)

    monkeypatch.setattr(flow_mod, "collect", collect)
    db = tmp_path / "w.duckdb"
    result = nightly_refresh(db=str(db), archive_root=None, offline=True, report_root=None)
    assert result["status"] == "partial"
    runs = _runs(db)
    assert runs.pop("vastai") == "failed" and runs.pop("cudo") == "retired"
    assert runs.pop("fluidstack") == "no_public_prices"
    assert set(runs.values()) == {"ok"}


def test_transient_error_is_retried_and_succeeds(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"n": 0}

    def collect(name, **kw):
        if name == "lambda":
            calls["n"] += 1
            if calls["n"] == 1:
                raise FetchError("HTTP 503", provider=name, transient=True, status=503)
        return real_collect(name, **kw)

    monkeypatch.setattr(flow_mod, "collect", collect)
    result = nightly_refresh(providers=["lambda"], db=str(tmp_path / "w.duckdb"),
                             archive_root=None, offline=True, report_root=None)
    assert calls["n"] == 2 and result["providers"] == {"lambda": "ok"}


def test_parse_error_is_not_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"n": 0}

    def collect(name, **kw):
        calls["n"] += 1
        raise ParseError("renamed field", provider=name, field="price")

    monkeypatch.setattr(flow_mod, "collect", collect)
    with pytest.raises(Exception, match="no provider loaded"):
        nightly_refresh(providers=["lambda"], db=str(tmp_path / "w.duckdb"),
                        archive_root=None, offline=True, report_root=None)
    assert calls["n"] == 1
    assert _runs(tmp_path / "w.duckdb") == {"lambda": "failed"}


def test_flow_calls_the_same_functions_as_the_cli() -> None:
    assert flow_mod.collect is pipeline_refresh.collect
    # loads, the writer lock, USD rates and the status are refresh()'s, as for the CLI
    assert flow_mod.refresh is pipeline_refresh.refresh


def test_schedule_is_nightly_cron_with_parameters() -> None:
    schedule = nightly_schedule()
    assert schedule.cron == NIGHTLY_CRON and schedule.timezone == "UTC"
    assert set(schedule.parameters) == {"providers", "db", "archive_root", "report_root"}
    text = (Path(__file__).parents[2] / "prefect.yaml").read_text()
    assert f'cron: "{NIGHTLY_CRON}"' in text
