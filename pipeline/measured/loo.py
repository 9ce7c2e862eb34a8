"""The correction, held to the published measurements: leave one out, per source.

Each source of `sizing/data/measurements.csv` (one publication: Qwen's profile, a trainer's GPU
tests, PEFT's MetaMathQA runs, ...) plays one user whose runs are its rows with a measured
tokens/s. Every such row is held back in turn and estimated with the correction that the
source's other rows of the same GPU and method would give (`correction.py`, the same code the
estimate runs; the prior spread is its regime's, as an estimate takes it). The method is the
one the source ran (its method column: BOFT, LoHa and VeRA are not LoRA to their users, though
the model times them as LoRA). A row with no
other row of its stack gets no correction; a row of another source never does (its stack is
another user's). `python -m bench.runs_loo` prints the table.
"""

from __future__ import annotations

import csv
import math
import statistics
from dataclasses import dataclass

from gpuscout.pipeline.measured.correction import Shape, posterior
from gpuscout.pipeline.measured.evidence import shape_of
from gpuscout.sizing.architectures import lookup
from gpuscout.sizing.calibration import (
    MEASUREMENTS_CSV,
    calibrate,
    job_for_row,
    method_key,
    model_id,
)
from gpuscout.sizing.uncertainty import spread_for


def publication(source: str) -> str:
    """The source column without the section, anchor or file that sets rows of one
    publication apart ("... Benchmark.md section 'Quantization'" → "... Benchmark.md")."""
    text = source.split(" (")[0].split(" section")[0].split("#")[0]
    return text.split("/results/")[0]


@dataclass(frozen=True)
class Row:
    index: int
    user: str
    gpu_id: str
    gpu_class: str
    method: str  # as the source names it
    gpus: int
    bound: str | None
    shape: Shape
    log_ratio: float  # ln(measured / predicted)


@dataclass(frozen=True)
class HeldBack:
    row: Row
    runs: int  # the user's other rows of its stack that weighed in
    factor: float

    @property
    def error_before(self) -> float:
        """|predicted − measured| / measured, %."""
        return 100 * abs(math.exp(-self.row.log_ratio) - 1)

    @property
    def error_after(self) -> float:
        return 100 * abs(self.factor * math.exp(-self.row.log_ratio) - 1)


def rows() -> list[Row]:
    with MEASUREMENTS_CSV.open(newline="", encoding="utf-8") as f:
        raw = list(csv.DictReader(f))
    out = []
    for c in calibrate():
        if not (c.measured_tokens_per_s and c.predicted_tokens_per_s):
            continue
        r = raw[c.index]
        arch = lookup(model_id(r["model"]))
        spec = job_for_row(r, arch)
        out.append(Row(index=c.index, user=publication(r["source"]), gpu_id=c.gpu_id,
                       gpu_class=c.gpu_class, method=method_key(r["method"]), gpus=c.gpus,
                       bound=c.bound, shape=shape_of(arch, spec),
                       log_ratio=math.log(c.measured_tokens_per_s / c.predicted_tokens_per_s)))
    return out


def hold_back(all_rows: list[Row]) -> list[HeldBack]:
    out = []
    for row in all_rows:
        mine = [(o.shape, o.log_ratio) for o in all_rows
                if o is not row and o.user == row.user
                and (o.gpu_id, o.method) == (row.gpu_id, row.method)]
        prior = spread_for("tokens_per_s", row.gpu_class, row.method, row.gpus,
                           row.bound).rms_log_ratio
        post = posterior(row.shape, mine, prior)
        out.append(HeldBack(row=row, runs=post.runs, factor=post.factor))
    return out


@dataclass(frozen=True)
class SourceLine:
    user: str
    rows: int
    corrected: int  # held-back rows with runs of their stack
    median_before: float | None
    median_after: float | None
    mean_before: float | None
    mean_after: float | None
    better: int
    worse: int
    others: int  # rows without runs of their stack
    others_changed: int


def _line(user: str, held: list[HeldBack]) -> SourceLine:
    same = [h for h in held if h.runs]
    others = [h for h in held if not h.runs]

    def med(xs: list[float]) -> float | None:
        return round(statistics.median(xs), 1) if xs else None

    def mean(xs: list[float]) -> float | None:
        return round(statistics.fmean(xs), 1) if xs else None

    before, after = [h.error_before for h in same], [h.error_after for h in same]
    return SourceLine(
        user=user, rows=len(held), corrected=len(same), median_before=med(before),
        median_after=med(after), mean_before=mean(before), mean_after=mean(after),
        better=sum(a < b for a, b in zip(after, before, strict=True)),
        worse=sum(a > b for a, b in zip(after, before, strict=True)), others=len(others),
        others_changed=sum(h.error_after != h.error_before for h in others))


def table(held: list[HeldBack]) -> list[SourceLine]:
    users = sorted({h.row.user for h in held}, key=lambda u: -sum(h.row.user == u for h in held))
    return [*(_line(u, [h for h in held if h.row.user == u]) for u in users),
            _line("all sources", held)]
