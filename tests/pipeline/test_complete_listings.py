"""A listing not known complete closes nothing: Vast.ai's slices under its 64-ask clamp."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gpuscout.adapters import vastai
from gpuscout.pipeline.refresh import Source, refresh
from gpuscout.warehouse.connection import connect

REPO = Path(__file__).resolve().parents[2]
CLAMPED = REPO / "tests" / "fixtures" / "vastai" / "clamped64"  # see its PROVENANCE.md
FX = {"USD": 1.0}


def _open_keys(db: Path) -> set[str]:
    with connect(db, read_only=True) as con:
        rows = con.execute("SELECT offer_key FROM current_offers WHERE provider = 'vastai'")
        return {key for (key,) in rows.fetchall()}


def test_a_missing_page_closes_nothing_and_the_run_log_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vastai, "SLICE_NAMES", ("H100 SXM",))  # the archive's plan
    db = tmp_path / "w.duckdb"
    whole = refresh(["vastai"], db=db, source=Source("replay", CLAMPED), fx=FX)
    (night1,) = whole.providers
    assert (night1.status, night1.complete, night1.offers_loaded) == ("ok", True, 37)
    before = _open_keys(db)

    cut = tmp_path / "cut"
    shutil.copytree(CLAMPED, cut)
    manifest = cut / "vastai" / "manifest.json"
    entries = json.loads(manifest.read_text())
    manifest.write_text(json.dumps(entries[:3]))  # the last page of the rest is missing
    report = refresh(["vastai"], db=db, source=Source("replay", cut), fx=FX)
    (night2,) = report.providers
    assert (night2.status, night2.complete, night2.closed_offers) == ("ok", False, 0)
    assert night2.offers_loaded < night1.offers_loaded  # offers only that page held
    unseen = len(before) - night2.offers_loaded
    assert night2.error is not None and night2.error.startswith(
        "incomplete: not every page or part of the source was read (replay: no recorded "
        "response for this request")
    assert f"so the {unseen} offers not seen stay open" in night2.error
    assert _open_keys(db) == before  # every offer of night 1 is still open
    assert report.status == "partial"
