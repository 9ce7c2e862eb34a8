"""A retired provider is not fetched: its open offers close with the reason, history stays."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from gpuscout.adapters.archive import ReplayTransport
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.core.catalog import load_catalog
from gpuscout.core.clock import now_utc
from gpuscout.core.errors import DataError
from gpuscout.pipeline.lifecycle import lifecycle, read_lifecycle
from gpuscout.pipeline.refresh import Source, collect, load, new_run_id, refresh
from gpuscout.pipeline.settings import Settings
from gpuscout.warehouse.connection import connect


def _load_cudo_as_it_was(db: Path) -> int:
    """Cudo's offers as a refresh before its retirement stored them."""
    c = collect("cudo", source=Source.offline(), transport=ReplayTransport(SNAPSHOTS_DIR),
                recorder=None, settings=Settings(), catalog=load_catalog())
    with connect(db) as con:
        record = load(con, c, run_id=new_run_id(now_utc()), mode="replay", settings=Settings())
    assert record.status == "ok"
    return record.offers_loaded


def test_cudo_is_retired_with_a_source() -> None:
    cudo = lifecycle()["cudo"]
    assert cudo.status == "retired" and cudo.source_url.startswith("https://")
    assert cudo.since == date(2026, 3, 31)  # the platform's shutdown (dstack PR #4018)
    assert "retired since 2026-03-31" in cudo.reason


def test_fluidstack_publishes_no_prices_with_a_source() -> None:
    fluidstack = lifecycle()["fluidstack"]
    assert fluidstack.status == "no_public_prices"
    assert fluidstack.source_url.startswith("https://github.com/henryzhangpku/")
    assert fluidstack.reason.startswith("fluidstack publishes no public prices since 2025-06-01")


def test_a_retired_provider_is_closed_not_fetched(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "w.duckdb"
    before = _load_cudo_as_it_was(db)
    assert before > 0

    def no_fetch(name: str, **kw: object) -> object:
        raise AssertionError(f"{name} was fetched")

    monkeypatch.setattr("gpuscout.pipeline.refresh.collect", no_fetch)
    report = refresh(["cudo"], db=db, source=Source.offline())
    (record,) = report.providers
    assert (record.status, record.closed_offers) == ("retired", before)
    assert record.error and "retired since" in record.error
    assert report.status == "ok" and report.not_loaded == []  # not a failure every night
    with connect(db, read_only=True) as con:
        open_now = con.execute("SELECT count(*) FROM current_offers "
                               "WHERE provider = 'cudo'").fetchone()
        kept = con.execute("SELECT count(*) FROM offer_history "
                           "WHERE provider = 'cudo'").fetchone()
        status = con.execute("SELECT last_status FROM provider_status "
                             "WHERE provider = 'cudo'").fetchone()
    assert open_now == (0,) and kept == (before,) and status == ("retired",)


def test_a_bad_lifecycle_row_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "l.csv"
    bad.write_text("provider,status,since,source_url,verified_at,notes\n"
                   "x,gone,2026-01-01,https://x.test,2026-01-01,\n")
    with pytest.raises(DataError, match="status 'gone' is not one of"):
        read_lifecycle(bad)
