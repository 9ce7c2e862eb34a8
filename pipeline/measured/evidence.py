"""The user's measured runs as evidence about a new job: its correction and its range.

`Evidence` holds the stored runs. For a job on a GPU it takes the runs of that GPU, framework
and method, compares each with what the model predicts for it now (the model may have changed
since the run was added), and shrinks their ratios toward 1 (`correction.py`). The result is a
`Verdict`: the factors on tokens/s and peak memory, and the range of tokens/s that is left,
which without runs is the calibration's spread in the job's regime (sizing/uncertainty.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from pydantic import ValidationError

from gpuscout.core.catalog import GpuSpec, load_catalog
from gpuscout.core.errors import GpuscoutError
from gpuscout.pipeline.measured.correction import MEMORY_NOISE, Posterior, Shape, posterior
from gpuscout.pipeline.measured.record import MeasuredRun
from gpuscout.sizing.architectures import Architecture
from gpuscout.sizing.estimate import estimate
from gpuscout.sizing.types import LORA_METHODS, Estimate, JobSpec
from gpuscout.sizing.uncertainty import Z80, Correction, Spread, spread_for

if TYPE_CHECKING:
    import duckdb


def shape_of(arch: Architecture, spec: JobSpec) -> Shape:
    return Shape(seq=spec.timed.seq_len, batch=spec.batch_size, params=arch.total_params,
                 gpus=spec.gpus, dtype=spec.dtype, quant=spec.quant,
                 adapted=spec.lora_targets if spec.method in LORA_METHODS else "")


@dataclass(frozen=True)
class Observed:
    """One stored run against the model as it is now."""

    run: MeasuredRun
    shape: Shape
    speed_ratio: float | None  # ln(measured / predicted now) of tokens/s
    memory_ratio: float | None


@dataclass(frozen=True)
class Verdict:
    """What the runs and the calibration say of one job on one GPU."""

    speed: Posterior | None  # None: no run of this stack weighs in
    memory: Posterior | None
    spread: Spread  # the calibration regime of tokens/s
    correction: Correction | None

    @property
    def factor(self) -> float:
        return self.speed.factor if self.speed else 1.0

    def speed_factors(self) -> tuple[float, float]:
        """(low, high) multipliers of the corrected tokens/s: eight of ten runs in it."""
        if self.speed is None:
            return self.spread.factors()
        return math.exp(-Z80 * self.speed.sd), math.exp(Z80 * self.speed.sd)


def _observe(run: MeasuredRun) -> Observed | None:
    try:
        arch, spec, _ = run.job.resolve()
        est = estimate(arch, spec, load_catalog().gpu(run.gpu_id))
    except (GpuscoutError, KeyError, ValidationError):
        return None  # a run the model can no longer size (its config moved, a GPU renamed)
    predicted = est.time.tokens_per_s if est.time else None
    metric_gb = {"allocated": est.memory.allocated_gb, "active": est.memory.allocated_gb,
                 "reserved": est.memory.reserved_gb, "device": est.memory.peak_gb_per_gpu}
    peak = metric_gb.get(run.memory_metric or "")
    return Observed(
        run=run, shape=shape_of(arch, spec),
        speed_ratio=math.log(run.tokens_per_s / predicted)
        if run.tokens_per_s and predicted else None,
        memory_ratio=math.log(run.peak_gb / peak) if run.peak_gb and peak else None)


class Evidence:
    """The user's stored runs (none: every verdict is the calibration's alone)."""

    def __init__(self, runs: list[MeasuredRun]) -> None:
        self.runs = runs

    @classmethod
    def none(cls) -> Evidence:
        return cls([])

    @classmethod
    def from_connection(cls, con: duckdb.DuckDBPyConnection) -> Evidence:
        from gpuscout.warehouse.measured import measured_runs

        return cls([MeasuredRun.from_row(r) for r in measured_runs(con).to_pylist()])

    @cached_property
    def observed(self) -> list[Observed]:
        return [o for r in self.runs if (o := _observe(r)) is not None]

    def stack(self, gpu_id: str, framework: str, method: str) -> list[Observed]:
        return [o for o in self.observed if (o.run.gpu_id, o.run.framework, o.run.method)
                == (gpu_id, framework, method)]

    def verdict(self, arch: Architecture, spec: JobSpec, framework: str, gpu: GpuSpec,
                bound: str | None, predicted_tokens_per_s: float | None = None,
                predicted_peak_gb: float | None = None) -> Verdict:
        spread = spread_for("tokens_per_s", gpu.architecture, spec.method, spec.gpus, bound)
        mine = self.stack(gpu.canonical_id, framework, spec.method)
        target = shape_of(arch, spec)
        speed = posterior(target, [(o.shape, o.speed_ratio) for o in mine
                                   if o.speed_ratio is not None], spread.rms_log_ratio)
        memory_spread = spread_for("memory", gpu.architecture, spec.method, spec.gpus, None)
        memory = posterior(target, [(o.shape, o.memory_ratio) for o in mine
                                    if o.memory_ratio is not None],
                           memory_spread.rms_log_ratio, MEMORY_NOISE)
        speed_used = speed if speed.runs else None
        memory_used = memory if memory.runs else None
        correction = None
        if speed_used or memory_used:
            correction = Correction(
                runs=speed.runs, gpu_id=gpu.canonical_id, framework=framework,
                method=spec.method, factor=round(speed.factor if speed_used else 1.0, 4),
                model_tokens_per_s=predicted_tokens_per_s, memory_runs=memory.runs,
                memory_factor=round(memory.factor, 4) if memory_used else None,
                model_peak_gb=predicted_peak_gb)
        return Verdict(speed=speed_used, memory=memory_used, spread=spread,
                       correction=correction)


def corrected(est: Estimate, verdict: Verdict, *, apply: bool) -> Estimate:
    """`est` with its range, and (when `apply`) its time corrected by the user's runs."""
    from gpuscout.sizing.uncertainty import Range, Uncertainty

    t = est.time
    if t is None:
        return est
    factor = verdict.factor if apply else 1.0
    low, high = verdict.speed_factors() if apply else verdict.spread.factors()
    tokens_per_s = t.tokens_per_s * factor
    hours = t.hours / factor if t.hours is not None else None
    uncertainty = Uncertainty(
        regime=verdict.spread.regime, calibration_rows=verdict.spread.rows,
        runs=verdict.speed.runs if apply and verdict.speed else 0,
        tokens_per_s=Range(low=tokens_per_s * low, high=tokens_per_s * high),
        hours=Range(low=hours / high, high=hours / low) if hours is not None else None)
    if not apply or verdict.correction is None:
        return est.model_copy(update={"uncertainty": uncertainty})
    time = t.model_copy(update={
        "tokens_per_s": tokens_per_s, "tokens_per_s_per_gpu": t.tokens_per_s_per_gpu * factor,
        "step_time_s": t.step_time_s / factor, "hours": hours, "mfu": t.mfu * factor})
    return est.model_copy(update={"time": time, "uncertainty": uncertainty,
                                  "correction": verdict.correction,
                                  "notes": [*est.notes, verdict.correction.text]})
