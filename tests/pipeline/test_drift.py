"""The drift gate: a field a provider always filled comes back empty, or its offer count falls,
and the result is held back with the fields named; the last good data stays current.

Latitude.sh renamed five keys of its page on 2026-09-22 (tests/fixtures/latitude/PROVENANCE.md):
a reader of one spelling kept loading prices with every VRAM and stock empty, and no error.
"""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from page_edits import without_members
from typer.testing import CliRunner, Result

from gpuscout.adapters.archive import ArchiveWriter, Capture, load_captures
from gpuscout.adapters.registry import SNAPSHOTS_DIR
from gpuscout.cli.app import app
from gpuscout.core.catalog import load_catalog
from gpuscout.core.clock import now_utc
from gpuscout.core.models import Availability, ParsedOffer, PricingModel
from gpuscout.pipeline.quality import field_coverage, hold_back
from gpuscout.pipeline.refresh import collected, load, new_run_id
from gpuscout.pipeline.settings import Settings
from gpuscout.warehouse.connection import connect
from gpuscout.warehouse.load import RunRecord

REPO = Path(__file__).resolve().parents[2]
CAMEL = REPO / "tests" / "fixtures"  # latitude/: the page with the 2026-09-22 key spelling


def _camel() -> Capture:
    (page,) = load_captures(CAMEL, "latitude")
    return page


def _a_day_later(capture: Capture) -> Capture:
    return capture.model_copy(update={"fetched_at": capture.fetched_at + timedelta(days=1)})


def _night(db: Path, capture: Capture) -> RunRecord:
    c = collected("latitude", now_utc(), [capture], [], settings=Settings(),
                  catalog=load_catalog())
    with connect(db) as con:
        return load(con, c, run_id=new_run_id(now_utc()), mode="replay", settings=Settings())


def _current(db: Path) -> dict[str, tuple[object, ...]]:
    with connect(db, read_only=True) as con:
        rows = con.execute("SELECT offer_key, price_per_hour, vram_gb, availability, stale "
                           "FROM current_offers WHERE provider = 'latitude'").fetchall()
    return {key: tuple(rest) for key, *rest in rows}


def test_the_new_spelling_loads_vram_and_stock_and_records_what_it_read(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    record = _night(db, _camel())
    assert (record.status, record.offers_loaded) == ("ok", 18)
    assert record.field_coverage == {"vram": 1.0, "stock": 1.0, "region": 1.0,
                                     # stated by the HGX B300 (NVSwitch) and the one-GPU H100
                                     "interconnect": pytest.approx(6 / 18), "spot": 0.0}
    current = _current(db)
    assert {vram for _, vram, _, _ in current.values()} == {288.0, 96.0, 80.0}
    assert "unknown" not in {stock for _, _, stock, _ in current.values()}


def test_a_page_that_lost_its_stock_keys_is_held_back_as_drift(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    _night(db, _camel())
    before = _current(db)
    record = _night(db, _a_day_later(without_members(_camel(), "inStock", "stockLevel")))
    assert (record.status, record.offers_loaded, record.complete) == ("drift", 0, False)
    assert record.error == ("latitude: drift: stock empty on 100% of 18 offers (filled on 100% "
                            "in the last good load)")
    # The last good data stays current, marked stale; the held rows wait in quarantine.
    assert _current(db) == {k: (*v[:3], True) for k, v in before.items()}
    with connect(db, read_only=True) as con:
        assert con.execute("SELECT last_status FROM provider_status WHERE provider = "
                           "'latitude'").fetchone() == ("drift",)
        held = con.execute("SELECT count(*) FROM quarantine WHERE reason LIKE "
                           "'refused: drift: stock empty%'").fetchone()
    assert held == (18,)
    # The next good page loads again, compared with the last good load, not the drift.
    again = _night(db, _a_day_later(_a_day_later(_camel())))
    assert (again.status, again.error) == ("ok", None)


def test_a_page_that_lost_the_renamed_keys_is_held_back_as_drift(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    _night(db, _camel())
    before = _current(db)
    gone = without_members(_camel(), "vramPerGpu", "inStock", "stockLevel", "deploysInstantly")
    record = _night(db, _a_day_later(gone))
    # Every GPU plan lost its VRAM: every row is refused, so the count collapses; the reason
    # says which field the refused rows miss.
    assert record.status == "drift"
    assert record.error == (
        "latitude: drift: offer count collapsed: 0 vs 18 in the last good refresh (threshold "
        "50%) (rows the parser refused: GPU plan without VRAM (18))")
    assert _current(db) == {k: (*v[:3], True) for k, v in before.items()}


def test_refresh_exits_3_with_the_provider_marked_drift(tmp_path: Path) -> None:
    good, drifted = tmp_path / "good", tmp_path / "drifted"
    ArchiveWriter(good).write(_camel())
    ArchiveWriter(drifted).write(_a_day_later(without_members(_camel(), "inStock",
                                                               "stockLevel")))
    for archive in (good, drifted):  # and a provider that loads both nights
        shutil.copytree(SNAPSHOTS_DIR / "lambda", archive / "lambda")
    db = str(tmp_path / "w.duckdb")
    runner = CliRunner()

    def run(archive: Path) -> Result:
        return runner.invoke(app, ["refresh", "--replay", str(archive), "-p", "latitude",
                                   "-p", "lambda", "--db", db, "--format", "json"])

    first = run(good)
    assert first.exit_code == 0, first.output
    second = run(drifted)
    assert second.exit_code == 3, second.output  # some provider kept its last good data
    rows = {r["provider"]: r for r in json.loads(second.stdout)}
    assert rows["lambda"]["status"] == "ok"
    assert rows["latitude"]["status"] == "drift"
    assert "stock empty on 100% of 18 offers" in rows["latitude"]["error"]


def test_a_last_good_load_without_coverage_checks_the_count_only(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    _night(db, _camel())
    with connect(db) as con:  # a warehouse whose last good run predates field coverage
        con.execute("DELETE FROM refresh_field_coverage")
    record = _night(db, _a_day_later(without_members(_camel(), "inStock", "stockLevel")))
    assert record.status == "ok"


# -- the gate on its own, against hand-computed shares ------------------------------------------


def _offer(key: str, *, vram: float | None = 80.0, region: str | None = "us",
           stock: Availability = Availability.IN_STOCK,
           model: PricingModel = PricingModel.ON_DEMAND) -> ParsedOffer:
    return ParsedOffer(provider="p", offer_key=key, gpu_label="H100", gpu_count=1,
                       vram_gb_per_gpu=vram, pricing_model=model, price_per_hour=2.0,
                       region=region, availability=stock, source_url="https://p.test",
                       observed_at=now_utc())


def test_field_coverage_is_the_share_of_offers_carrying_each_field() -> None:
    offers = [_offer("a"), _offer("b", vram=None), _offer("c", region=None),
              _offer("d", stock=Availability.UNKNOWN, model=PricingModel.SPOT)]
    # 4 offers: VRAM on 3, region on 3, stock on 3, interconnect on none; 1 spot per 3 on-demand
    assert field_coverage(offers) == {"vram": 0.75, "stock": 0.75, "region": 0.75,
                                      "interconnect": 0.0, "spot": pytest.approx(1 / 3)}
    assert field_coverage([]) == {}


@pytest.mark.parametrize(("before", "now", "drift"), [
    (1.0, 0.0, True), (0.9, 0.4, True), (0.6, 0.49, True),
    (1.0, 0.5, False),  # still filled on half
    (0.5, 0.0, False),  # never filled on most
    (0.3, 0.0, False),
])
def test_a_field_drifts_when_most_offers_carried_it_and_most_do_not(
        before: float, now: float, drift: bool) -> None:
    held = hold_back(20, {"vram": now}, [], 20, {"vram": before}, Settings())
    assert (held is not None) is drift
    if held is not None:
        assert held.status == "drift" and held.reason.startswith("drift: VRAM empty on ")


def test_spot_rows_missing_from_an_incomplete_read_are_not_drift() -> None:
    # A part of the source that was not read took its spot rows with it (and closes nothing).
    coverage, before = {"spot": 0.0}, {"spot": 1.0}
    assert hold_back(20, coverage, [], 20, before, Settings(), complete=False) is None
    held = hold_back(20, coverage, [], 20, before, Settings())
    assert held is not None and held.reason == (
        "drift: spot prices empty on 100% of 20 offers (filled on 100% in the last good load)")
    # without on-demand offers tonight there is nothing to measure spot against
    assert hold_back(20, {"vram": 1.0}, [], 20, before, Settings()) is None
