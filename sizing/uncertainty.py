"""How sure an estimate is: the spread of the calibration's measured/predicted ratios per regime.

A regime is what the time model's error follows most (bench/CALIBRATION.md): the GPU's class
(its architecture), the method, one GPU or several, and what bounds a micro-batch (compute,
memory traffic or the host's launches). `sizing/data/residual_spreads.csv` holds, per regime,
the calibration rows' ln(measured / predicted): how many, their median, 10th and 90th
percentiles and root mean square. `python -m bench.spreads` writes it from `calibrate()`, and
tests/sizing/test_residual_spreads.py fails when it is not current. A regime with fewer than
`MIN_ROWS` rows gives way to a coarser one: the method and placement on any GPU class and
bound, then the placement alone, then every row.

An estimate's range is its figure × exp(p10) to × exp(p90) of its regime, widened to hold the
figure itself: eight of ten calibration rows of that regime measured within it. A user's own
runs narrow it (`gpuscout.pipeline.measured`); `Correction` and `Uncertainty` are what an
estimate carries of both.
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

RESIDUAL_SPREADS_CSV = Path(__file__).parent / "data" / "residual_spreads.csv"
MIN_ROWS = 5
ANY = "*"
# The 10th and 90th percentiles of a normal distribution, in standard deviations: the width
# a range narrowed by the user's runs keeps, to say the same "eight of ten" as the spreads.
Z80 = 1.2816

Kind = Literal["tokens_per_s", "memory"]
Placement = Literal["one", "several"]
COLUMNS = ("kind", "gpu_class", "method", "placement", "bound", "rows", "median_log_ratio",
           "p10_log_ratio", "p90_log_ratio", "rms_log_ratio")


class Range(BaseModel):
    """A figure's plausible span, low to high, in the figure's own unit."""

    model_config = ConfigDict(frozen=True)

    low: float
    high: float


class Residual(BaseModel):
    """One calibration row's ln(measured / predicted), with its regime."""

    model_config = ConfigDict(frozen=True)

    kind: Kind
    gpu_class: str
    method: str
    placement: Placement
    bound: str
    log_ratio: float


class Spread(BaseModel):
    """The ratios of one regime (`*`: any)."""

    model_config = ConfigDict(frozen=True)

    kind: Kind
    gpu_class: str
    method: str
    placement: str
    bound: str
    rows: int
    median_log_ratio: float
    p10_log_ratio: float
    p90_log_ratio: float
    rms_log_ratio: float

    @property
    def regime(self) -> str:
        parts = [self.gpu_class, self.method,
                 {"one": "one GPU", "several": "several GPUs"}.get(self.placement, ANY),
                 f"{self.bound}-bound" if self.bound != ANY else ANY]
        named = [p for p in parts if p != ANY]
        return " · ".join(named) if named else "all calibration rows"

    def factors(self) -> tuple[float, float]:
        """(low, high) multipliers of a figure: exp(p10), exp(p90), widened to hold 1."""
        return min(1.0, math.exp(self.p10_log_ratio)), max(1.0, math.exp(self.p90_log_ratio))


class Correction(BaseModel):
    """What the user's own runs of this GPU, framework and method say of the estimate."""

    model_config = ConfigDict(frozen=True)

    runs: int = Field(description="the user's runs that weigh in on tokens/s")
    gpu_id: str
    framework: str
    method: str
    factor: float = Field(description="measured / predicted tokens/s the runs give, shrunk "
                                      "toward 1 by how thin and how unlike the job they are")
    model_tokens_per_s: float | None = Field(default=None,
                                             description="the model's figure before it")
    memory_runs: int = 0
    memory_factor: float | None = Field(default=None, description="measured / predicted peak "
                                        "memory, shrunk the same way")
    model_peak_gb: float | None = None

    @property
    def text(self) -> str:
        what = [f"tokens/s ×{self.factor:.2f}"] if self.runs else []
        if self.memory_factor is not None:
            what.append(f"memory ×{self.memory_factor:.2f}")
        runs = max(self.runs, self.memory_runs)
        return (f"corrected by {runs} of your runs on {self.gpu_id} / {self.framework} / "
                f"{self.method}: {', '.join(what)}")


class Uncertainty(BaseModel):
    """The range of an estimate's tokens/s and hours, and what it rests on."""

    model_config = ConfigDict(frozen=True)

    regime: str = Field(description="the calibration regime whose spread gives the range")
    calibration_rows: int
    runs: int = Field(default=0, description="the user's runs that narrowed it")
    tokens_per_s: Range
    hours: Range | None = None


def placement_of(gpus: int) -> Placement:
    return "one" if gpus <= 1 else "several"


def _keys(r: Residual) -> list[tuple[str, str, str, str]]:
    """The regimes a residual counts in, the narrowest first."""
    bound = r.bound if r.kind == "tokens_per_s" else ANY
    return [(r.gpu_class, r.method, r.placement, bound), (ANY, r.method, r.placement, ANY),
            (ANY, ANY, r.placement, ANY), (ANY, ANY, ANY, ANY)]


def derive(residuals: Iterable[Residual]) -> list[Spread]:
    """Every regime with at least MIN_ROWS residuals (and all rows of each kind), sorted."""
    groups: dict[tuple[Kind, tuple[str, str, str, str]], list[float]] = {}
    for r in residuals:
        for key in dict.fromkeys(_keys(r)):
            groups.setdefault((r.kind, key), []).append(r.log_ratio)
    out = []
    for (kind, (gpu_class, method, placement, bound)), ratios in sorted(groups.items()):
        if len(ratios) < MIN_ROWS and (gpu_class, method, placement, bound) != (ANY,) * 4:
            continue
        p10, _, p90 = _deciles(ratios)
        out.append(Spread(kind=kind, gpu_class=gpu_class, method=method, placement=placement,
                          bound=bound, rows=len(ratios),
                          median_log_ratio=round(statistics.median(ratios), 4),
                          p10_log_ratio=round(p10, 4), p90_log_ratio=round(p90, 4),
                          rms_log_ratio=round(math.sqrt(statistics.fmean(
                              x * x for x in ratios)), 4)))
    return out


def _deciles(values: list[float]) -> tuple[float, float, float]:
    """10th, 50th and 90th percentiles (linear between the order statistics)."""
    if len(values) == 1:
        return values[0], values[0], values[0]
    q = statistics.quantiles(values, n=10, method="inclusive")
    return q[0], q[4], q[8]


def render(spreads: list[Spread]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    for s in spreads:
        writer.writerow([getattr(s, c) for c in COLUMNS])
    return buf.getvalue()


@cache
def spreads() -> tuple[Spread, ...]:
    with RESIDUAL_SPREADS_CSV.open(newline="", encoding="utf-8") as f:
        return tuple(Spread.model_validate(row) for row in csv.DictReader(f))


def spread_for(kind: Kind, gpu_class: str, method: str, gpus: int,
               bound: str | None) -> Spread:
    """The narrowest regime of the file that holds this job."""
    wanted = Residual(kind=kind, gpu_class=gpu_class, method=method,
                      placement=placement_of(gpus), bound=bound or ANY, log_ratio=0.0)
    index = {(s.kind, s.gpu_class, s.method, s.placement, s.bound): s for s in spreads()}
    for key in _keys(wanted):
        found = index.get((kind, *key))
        if found is not None:
            return found
    raise LookupError(f"{RESIDUAL_SPREADS_CSV.name} has no row for all {kind} rows")


def model_range(tokens_per_s: float, hours: float | None, spread: Spread) -> Uncertainty:
    """The range the calibration gives an uncorrected estimate: faster is fewer hours."""
    low, high = spread.factors()
    return Uncertainty(
        regime=spread.regime, calibration_rows=spread.rows,
        tokens_per_s=Range(low=tokens_per_s * low, high=tokens_per_s * high),
        hours=Range(low=hours / high, high=hours / low) if hours is not None else None)
