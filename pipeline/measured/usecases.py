"""The use cases of the user's runs: add, list, compare, and estimate with them."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel

from gpuscout.core.catalog import GpuSpec, load_catalog
from gpuscout.core.clock import now_utc
from gpuscout.core.errors import DataError
from gpuscout.pipeline.measured.evidence import Evidence, corrected
from gpuscout.pipeline.measured.record import MeasuredRun, measure
from gpuscout.runlogs import read_log
from gpuscout.sizing.collectives import Topology
from gpuscout.sizing.estimate import estimate
from gpuscout.sizing.job import Job
from gpuscout.sizing.types import Estimate


class AddReport(BaseModel):
    added: list[MeasuredRun]
    already: list[MeasuredRun]  # read again: the stored run stays as it was


def _is_file(db: Path | str) -> bool:
    text = str(db)
    return text != ":memory:" and not (":" in text and "/" not in text.split(":", 1)[0])


def add_runs(db: Path | str, paths: Sequence[Path | str], job: Job, given: set[str],
             gpu: str | None = None, now: datetime | None = None) -> AddReport:
    """Read every log in `paths`, make each a run of `job` (its `given` options explicit),
    and store the new ones in one write session. Every file is read and checked before
    anything is written: one bad file adds nothing."""
    import pyarrow as pa

    from gpuscout.warehouse.connection import connect
    from gpuscout.warehouse.measured import (
        MEASURED_RUNS_SCHEMA,
        add_measured_runs,
        stored_runs,
    )

    when = now or now_utc()
    runs: dict[str, MeasuredRun] = {}
    for path in paths:
        for reading in read_log(path):
            run = measure(reading, job, given, gpu, str(path), when)
            runs.setdefault(run.run_id, run)  # one run read from two of its files
    with connect(db) as con:
        stored = stored_runs(con, list(runs))
        new = [r for r in runs.values() if r.run_id not in stored]
        add_measured_runs(con, pa.Table.from_pylist([r.row() for r in new],
                                                    schema=MEASURED_RUNS_SCHEMA))
    return AddReport(added=new, already=[r for r in runs.values() if r.run_id in stored])


def load_evidence(db: Path | str | None) -> tuple[Evidence, list[str]]:
    """The stored runs of `db`, or none (with why) when there is no warehouse to read."""
    if db is None or (_is_file(db) and not Path(db).exists()):
        return Evidence.none(), []
    from gpuscout.warehouse.connection import connect

    try:
        with connect(db, read_only=True) as con:
            return Evidence.from_connection(con), []
    except DataError as exc:
        return Evidence.none(), [f"your runs were not read: {exc}"]


def stored_runs(db: Path | str) -> list[MeasuredRun]:
    """The runs stored in `db`, oldest first (none when there is no warehouse yet)."""
    from gpuscout.warehouse.connection import connect

    if _is_file(db) and not Path(db).exists():
        return []
    with connect(db, read_only=True) as con:
        return Evidence.from_connection(con).runs


class Comparison(BaseModel):
    """A stored run, measured against what gpuscout predicted then and predicts now."""

    run: MeasuredRun
    predicted_now_tokens_per_s: float | None
    tokens_error_now_pct: float | None
    predicted_now_peak_gb: float | None
    memory_error_now_pct: float | None
    others_in_stack: int  # the user's other runs of this GPU, framework and method
    corrected_tokens_per_s: float | None  # what those others correct this one's estimate to
    corrected_error_pct: float | None


def _pct(predicted: float | None, measured: float | None) -> float | None:
    return None if predicted is None or not measured else 100 * (predicted - measured) / measured


def compare_runs(db: Path | str) -> list[Comparison]:
    """Every run of `db` with its errors then and now (see `compare`)."""
    return compare(stored_runs(db))


def compare(runs: list[MeasuredRun]) -> list[Comparison]:
    """Every run with its errors then and now, and what the user's other runs of its stack
    would have corrected its estimate to (each run held out of its own correction)."""
    catalog = load_catalog()
    out = []
    for run in runs:
        others = Evidence([r for r in runs if r.run_id != run.run_id])
        arch, spec, _ = run.job.resolve()
        gpu = catalog.gpu(run.gpu_id)
        est = estimate(arch, spec, gpu)
        t = est.time
        peak = {"allocated": est.memory.allocated_gb, "active": est.memory.allocated_gb,
                "reserved": est.memory.reserved_gb, "device": est.memory.peak_gb_per_gpu}.get(
                    run.memory_metric or "")
        verdict = others.verdict(arch, spec, run.framework, gpu, t.bound if t else None)
        fixed = t.tokens_per_s * verdict.factor if t and verdict.speed else None
        out.append(Comparison(
            run=run, predicted_now_tokens_per_s=t.tokens_per_s if t else None,
            tokens_error_now_pct=_pct(t.tokens_per_s if t else None, run.tokens_per_s),
            predicted_now_peak_gb=peak, memory_error_now_pct=_pct(peak, run.peak_gb),
            others_in_stack=len(others.stack(run.gpu_id, run.framework, run.method)),
            corrected_tokens_per_s=fixed, corrected_error_pct=_pct(fixed, run.tokens_per_s)))
    return out


def stack_summary(comparisons: Sequence[Comparison]) -> list[dict[str, object]]:
    """Per GPU / framework / method: runs and the median of measured / predicted now."""
    groups: dict[tuple[str, str, str], list[float]] = {}
    for c in comparisons:
        if c.run.tokens_per_s and c.predicted_now_tokens_per_s:
            key = (c.run.gpu_id, c.run.framework, c.run.method)
            groups.setdefault(key, []).append(c.run.tokens_per_s / c.predicted_now_tokens_per_s)
    return [{"gpu": g, "framework": f, "method": m, "runs": len(v),
             "median_measured_over_predicted": round(math.exp(statistics.median(
                 math.log(x) for x in v)), 3)} for (g, f, m), v in sorted(groups.items())]


def estimate_job(job: Job, gpu: GpuSpec | None, tokens: int | None, evidence: Evidence,
                 correction: bool = True, placement: Topology | None = None) -> Estimate:
    """The sizing estimate of `job` with its range and, with `correction`, the user's runs of
    the same GPU, framework and method applied. `placement`: where its GPUs sit (default the
    job's own, `Job.placement`)."""
    arch, spec, warnings = job.resolve()
    if placement is None and gpu is not None:
        placement = job.placement(gpu)
    est = estimate(arch, spec, gpu, tokens, placement)
    est = est.model_copy(update={"notes": [*warnings, *est.notes]})
    if gpu is None or est.time is None:
        return est
    verdict = evidence.verdict(arch, spec, job.framework, gpu, est.time.bound,
                               est.time.tokens_per_s, est.memory.peak_gb_per_gpu)
    return corrected(est, verdict, apply=correction)
