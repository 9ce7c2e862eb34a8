"""The calibration's residuals per regime: the text of `sizing/data/residual_spreads.csv`.

`python -m bench.spreads` writes it; tests/sizing/test_residual_spreads.py holds the file to
what the calibration gives now.
"""

from __future__ import annotations

import math

from gpuscout.sizing.calibration import CalibrationRow, calibrate
from gpuscout.sizing.uncertainty import Kind, Residual, derive, placement_of, render


def residuals(rows: list[CalibrationRow]) -> list[Residual]:
    """ln(measured / predicted) of every row's tokens/s and memory, with the row's regime."""
    out = []
    for r in rows:
        pairs: tuple[tuple[Kind, float | None, float | None], ...] = (
            ("tokens_per_s", r.measured_tokens_per_s, r.predicted_tokens_per_s),
            ("memory", r.measured_gb, r.predicted_gb))
        for kind, measured, predicted in pairs:
            if measured and predicted:
                out.append(Residual(kind=kind, gpu_class=r.gpu_class, method=r.modeled_method,
                                    placement=placement_of(r.gpus), bound=r.bound or "*",
                                    log_ratio=math.log(measured / predicted)))
    return out


def current_text() -> str:
    return render(derive(residuals(calibrate())))
