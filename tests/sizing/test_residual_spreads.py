"""The per-regime spreads of the calibration (sizing/data/residual_spreads.csv) and the ranges
an estimate takes from them."""

from __future__ import annotations

import math

import pytest

from gpuscout.sizing.spreads import current_text
from gpuscout.sizing.uncertainty import (
    RESIDUAL_SPREADS_CSV,
    Residual,
    derive,
    model_range,
    spread_for,
)


def test_the_spreads_file_is_current() -> None:
    # fails after a change to the model or to the measurements: run `python -m bench.spreads`
    assert RESIDUAL_SPREADS_CSV.read_text("utf-8") == current_text()


def _r(x: float, gpu: str = "Ampere", method: str = "lora", bound: str = "compute") -> Residual:
    return Residual(kind="tokens_per_s", gpu_class=gpu, method=method, placement="one",
                    bound=bound, log_ratio=x)


def test_deciles_median_and_rms_by_hand() -> None:
    ratios = [-0.4, -0.3, -0.2, -0.1, 0.0, 0.1]
    spreads = {(s.gpu_class, s.bound): s for s in derive([_r(x) for x in ratios])}
    s = spreads[("Ampere", "compute")]
    assert s.rows == 6 and s.median_log_ratio == pytest.approx(-0.15)
    # inclusive deciles of 6 values: position 0.1 × 5 = 0.5 between the first two, 4.5 last
    assert s.p10_log_ratio == pytest.approx(-0.35) and s.p90_log_ratio == pytest.approx(0.05)
    assert s.rms_log_ratio == pytest.approx(math.sqrt(sum(x * x for x in ratios) / 6), abs=1e-4)
    assert s.regime == "Ampere · lora · one GPU · compute-bound"


def test_a_thin_regime_gives_way_to_a_coarser_one() -> None:
    rows = [_r(-0.1)] * 4 + [_r(-0.2, gpu="Hopper")] * 4  # neither class has MIN_ROWS
    keys = {(s.gpu_class, s.method, s.placement, s.bound) for s in derive(rows)}
    assert keys == {("*", "lora", "one", "*"), ("*", "*", "one", "*"), ("*", "*", "*", "*")}


def test_every_kind_has_an_all_rows_fallback() -> None:
    s = spread_for("tokens_per_s", "Unheard-of", "prompt", 64, "host")
    assert (s.gpu_class, s.method, s.placement, s.bound) == ("*", "*", "several", "*")
    assert spread_for("memory", "Ampere", "lora", 1, None).gpu_class == "Ampere"


def test_the_range_holds_the_estimate_and_faster_means_fewer_hours() -> None:
    s = spread_for("tokens_per_s", "Ada Lovelace", "lora", 1, "compute")
    assert s.p90_log_ratio < 0  # the model is fast in this regime: the range ends at it
    u = model_range(1000.0, 10.0, s)
    assert u.tokens_per_s.high == 1000.0
    assert u.tokens_per_s.low == pytest.approx(1000 * math.exp(s.p10_log_ratio))
    assert u.hours is not None and u.hours.low == 10.0
    assert u.hours.high == pytest.approx(10 / math.exp(s.p10_log_ratio))
