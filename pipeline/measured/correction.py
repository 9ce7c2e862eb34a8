"""How much the user's own runs move an estimate: a shrinkage of their measured/predicted ratios.

For a job on a GPU, with a framework and a method, the runs of that same GPU, framework and
method are its evidence; runs of any other GPU or stack say nothing of it and are never used.
Each run i says x_i = ln(measured / predicted) for its own job. The model's error for the new
job, x, starts from the calibration (a normal prior around 0, the model as it is, with the
root mean square of ln(measured / predicted) in the job's regime as its spread s) and each run
adds what it says with a variance that grows with how unlike the job it is:

    v_i = RUN_NOISE² + (SHAPE_WEIGHT × d_i)²
    x̂ = Σ x_i / v_i  ÷  (1 / s² + Σ 1 / v_i),   sd(x̂) = (1 / s² + Σ 1 / v_i)^(-1/2)

where d_i is the shape distance: |ln| of the ratios of the timed sequence length, the
micro-batch, the parameters and the GPUs, plus one for another precision, another
quantization of the base, or adapters on other linears. One run of the very job moves the
estimate nearly all the way to what it measured (v = RUN_NOISE² ≪ s²: 96 % of the way with
s = 0.27); a run of twice the sequence length carries v = 0.12, and moves it 37 %; runs
further than MAX_DISTANCE are not counted. The factor applied is exp(x̂). RUN_NOISE and
SHAPE_WEIGHT are assumptions, not fitted: the leave-one-out test on the
calibration's own sources (bench/runs_loo.py) shows what they do.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

# The spread of one measured rate around its run's true rate (ln): step-to-step and run-to-run
# variation of a training job's throughput, of the order of 5 %.
RUN_NOISE = 0.05
# Memory is read off the allocator's peak: steadier than a rate.
MEMORY_NOISE = 0.03
# How far the model's error for one job says something about another's, per unit of the
# shape distance (ln): a run of twice the sequence length adds 0.35 of spread to what it says.
SHAPE_WEIGHT = 0.5
# Runs further than a combined tenfold difference of shape are not counted.
MAX_DISTANCE = math.log(10)


@dataclass(frozen=True)
class Shape:
    """What makes two jobs of one stack alike for the model's error."""

    seq: int  # the timed length: the mean sequence length, else the sequence length
    batch: int
    params: float
    gpus: int
    dtype: str
    quant: str
    adapted: str = ""  # which linears carry adapters (LoRA targets; "" for full or none)


@dataclass(frozen=True)
class Posterior:
    mean: float  # x̂, ln of the factor
    sd: float
    runs: int  # the runs that weighed in

    @property
    def factor(self) -> float:
        return math.exp(self.mean)


def distance(a: Shape, b: Shape) -> float:
    d = sum(abs(math.log(x / y)) for x, y in
            ((a.seq, b.seq), (a.batch, b.batch), (a.params, b.params), (a.gpus, b.gpus)))
    return d + (a.dtype != b.dtype) + (a.quant != b.quant) + (a.adapted != b.adapted)


def posterior(target: Shape, evidence: Iterable[tuple[Shape, float]], prior_sd: float,
              noise: float = RUN_NOISE) -> Posterior:
    """The estimate of ln(measured / predicted) for `target` from (shape, log ratio) runs."""
    precision, weighted, runs = 1.0 / prior_sd**2, 0.0, 0
    for shape, log_ratio in evidence:
        d = distance(target, shape)
        if d > MAX_DISTANCE:
            continue
        variance = noise**2 + (SHAPE_WEIGHT * d) ** 2
        precision += 1.0 / variance
        weighted += log_ratio / variance
        runs += 1
    return Posterior(mean=weighted / precision, sd=precision**-0.5, runs=runs)
