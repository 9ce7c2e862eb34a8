"""Fit advice: the largest micro-batch and sequence that fit a GPU, and the changes that make a
job fit, each with its effect on memory and on the GPU-hours of the run.

Every answer is the estimator's own (`estimate`) on a changed job: nothing here has a memory
or speed model of its own. Memory grows with the micro-batch and the sequence, so the largest
ones that fit are found by bisection. A change is priced by GPU-seconds per token relative to
the job as given (more GPUs cost GPUs, a slower step costs time), which is what the run costs
on rented machines of one kind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from gpuscout.core.catalog import GpuSpec
from gpuscout.core.errors import UserInputError
from gpuscout.sizing.architectures import Architecture
from gpuscout.sizing.choices import ADAMW
from gpuscout.sizing.estimate import estimate
from gpuscout.sizing.types import Estimate, JobSpec

MAX_BATCH = 1024
# 1M tokens: long-context recipes (offloaded checkpoints, a fused loss) go past 256k
MAX_SEQ_LEN = 1_048_576
SEQ_STEP = 128  # sequence lengths are searched in multiples of this
MAX_GPUS_TRIED = 8  # one machine
MAX_COMBINED = 4  # changes stacked when no single one fits


class FitChange(BaseModel):
    """One change to the job and what it does on the GPU."""

    change: str = Field(description="what to do, as a user would do it")
    options: dict[str, Any] = Field(description="the job fields it sets")
    need_gb_per_gpu: float = Field(description="what the changed job needs per GPU (tensors "
                                   "and CUDA context: the figure `fits` judges)")
    peak_gb_per_gpu: float = Field(description="with the allocator's margin, as the device "
                                   "would show it")
    saves_gb: float = Field(description="memory per GPU it saves of what the job needs "
                            "(negative: costs)")
    fits: bool
    tokens_per_s: float | None
    cost_factor: float | None = Field(
        description="GPU-seconds per token relative to the job as given (1.25: 25 % dearer)")


class FitAdvice(BaseModel):
    gpu_id: str
    vram_gb: float
    fits: bool
    need_gb_per_gpu: float
    usable_gb_per_gpu: float
    peak_gb_per_gpu: float
    max_batch_size: int | None = Field(description="largest micro-batch at the job's "
                                       "sequence length that fits (None: not even 1)")
    max_seq_len: int | None = Field(description=f"largest multiple of {SEQ_STEP} tokens at the "
                                    "job's micro-batch that fits (None: not even one step)")
    changes: list[FitChange] = Field(description="those that fit first, cheapest first; then "
                                     "the others, most memory saved first")


def _with(job: JobSpec, **changes: Any) -> JobSpec:
    # validated, so that derived fields (QLoRA's NF4, the loss flags) follow the change
    data = job.model_dump()
    data.pop("chunked_loss")
    return JobSpec.model_validate({**data, **changes})


def _at_length(job: JobSpec, seq_len: int) -> JobSpec:
    """`job` with its longest sequence at `seq_len`; a mean length above it comes down to it."""
    mean = job.mean_seq_len
    return _with(job, seq_len=seq_len, mean_seq_len=None if mean is None else min(mean, seq_len))


def _try(arch: Architecture, job: JobSpec, gpu: GpuSpec) -> Estimate | None:
    try:
        return estimate(arch, job, gpu)
    except UserInputError:  # the change cannot run on this GPU (e.g. 4-bit without kernels)
        return None


def _largest(fits: Callable[[int], bool], low: int, high: int, step: int = 1) -> int | None:
    """The largest multiple of `step` in [low, high] for which `fits` holds, `fits` being
    monotone (true up to some value); None when even `low` does not fit."""
    if not fits(low):
        return None
    lo, hi = low // step, high // step
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid * step):
            lo = mid
        else:
            hi = mid - 1
    return lo * step


def _fits(arch: Architecture, job: JobSpec, gpu: GpuSpec) -> bool:
    est = _try(arch, job, gpu)
    return bool(est and est.memory.fits)


def candidate_changes(job: JobSpec, fits: bool = False) -> list[tuple[str, dict[str, Any]]]:
    """The changes worth trying on `job`, each as (description, job fields). More GPUs only for
    a job that does not fit: one that fits gains nothing per GPU from them but the optimizer
    step ZeRO splits, and is priced for more GPUs by the recommendation."""
    out: list[tuple[str, dict[str, Any]]] = []
    if not job.grad_checkpointing:
        out.append(("turn on gradient checkpointing", {"grad_checkpointing": True}))
    if job.loss == "eager":
        out.append(("a fused chunked loss (Liger / Unsloth / TRL): no full logits",
                    {"loss": "fused"}))
    if job.optimizer in ADAMW:
        out.append(("8-bit AdamW (bitsandbytes)", {"optimizer": "adamw-8bit"}))
    if job.optimizer == "adamw-foreach":
        out.append(("fused AdamW (torch fused=True, the HF Trainer's adamw_torch_fused): no "
                    "step buffer, a third of the step's traffic", {"optimizer": "adamw"}))
    if job.method in ("lora", "dora") and job.quant == "none":
        out.append(("QLoRA: the frozen base in NF4", {"method": "qlora"}))
    if job.method == "full":
        out.append(("LoRA instead of full fine-tuning", {"method": "lora"}))
        out.append(("QLoRA instead of full fine-tuning", {"method": "qlora"}))
    if job.batch_size > 1:
        half = job.batch_size // 2
        accum = job.grad_accum * job.batch_size // half
        out.append((f"micro-batch {half} with grad accum {accum} (same effective batch)",
                    {"batch_size": half, "grad_accum": accum}))
    if not job.activation_offloading and job.grad_checkpointing:
        out.append(("offload checkpointed activations to CPU",
                    {"activation_offloading": True}))
    if job.offload == "none" and job.sharding in ("none", "zero1", "zero2", "zero3"):
        sharding = job.sharding if job.sharding != "none" else "zero2"
        out.append((f"offload the optimizer to CPU (DeepSpeed {sharding.upper()})",
                    {"offload": "optimizer", "sharding": sharding}))
    gpus = job.gpus * 2
    while gpus <= MAX_GPUS_TRIED and not fits:
        out.append((f"{gpus} GPUs with ZeRO-3", {"gpus": gpus, "sharding": "zero3"}))
        gpus *= 2
    return out


def _change(arch: Architecture, job: JobSpec, gpu: GpuSpec, base: Estimate, change: str,
            options: dict[str, Any]) -> FitChange | None:
    try:
        changed = _with(job, **options)
    except (UserInputError, ValueError):  # not a valid job (pydantic errors are ValueErrors)
        return None
    est = _try(arch, changed, gpu)
    if est is None:
        return None
    return FitChange(change=change, options=options,
                     need_gb_per_gpu=round(est.memory.need_gb_per_gpu, 2),
                     peak_gb_per_gpu=round(est.memory.peak_gb_per_gpu, 2),
                     saves_gb=round(base.memory.need_gb_per_gpu - est.memory.need_gb_per_gpu,
                                    2),
                     fits=bool(est.memory.fits),
                     tokens_per_s=est.time.tokens_per_s if est.time else None,
                     cost_factor=_cost_factor(base, est))


def _cost_factor(base: Estimate, est: Estimate) -> float | None:
    if not (base.time and est.time and est.time.tokens_per_s > 0):
        return None
    before = base.job.gpus / base.time.tokens_per_s
    after = est.job.gpus / est.time.tokens_per_s
    return round(after / before, 3)


def _combined(arch: Architecture, job: JobSpec, gpu: GpuSpec, base: Estimate,
              singles: list[FitChange]) -> FitChange | None:
    """Stack the changes that save the most memory per unit of cost until the job fits."""
    def value(c: FitChange) -> float:
        return c.saves_gb / max(c.cost_factor or 1.0, 1e-6)

    options: dict[str, Any] = {}
    names: list[str] = []
    for c in sorted((c for c in singles if c.saves_gb > 0), key=value, reverse=True):
        if "gpus" in c.options and "gpus" in options:
            continue
        trial = {**options, **c.options}
        result = _change(arch, job, gpu, base, " + ".join([*names, c.change]), trial)
        if result is None:
            continue
        options, names = trial, [*names, c.change]
        if result.fits or len(names) == MAX_COMBINED:
            return result
    return None


def fit_advice(arch: Architecture, job: JobSpec, gpu: GpuSpec) -> FitAdvice:
    """What fits `gpu`, and what makes `job` fit it (see the module docstring)."""
    base = estimate(arch, job, gpu)
    max_batch = _largest(lambda b: _fits(arch, _with(job, batch_size=b), gpu), 1, MAX_BATCH)
    max_seq = _largest(lambda s: _fits(arch, _at_length(job, s), gpu), SEQ_STEP,
                       MAX_SEQ_LEN, SEQ_STEP)
    singles = [c for name, opts in candidate_changes(job, bool(base.memory.fits))
               if (c := _change(arch, job, gpu, base, name, opts)) is not None]
    if not base.memory.fits and not any(c.fits for c in singles):
        combined = _combined(arch, job, gpu, base, singles)
        if combined is not None:
            singles.append(combined)
    fitting = sorted((c for c in singles if c.fits),
                     key=lambda c: (c.cost_factor if c.cost_factor is not None else 1e9,
                                    -c.saves_gb))
    others = sorted((c for c in singles if not c.fits), key=lambda c: -c.saves_gb)
    return FitAdvice(gpu_id=gpu.canonical_id, vram_gb=gpu.vram_gb,
                     fits=bool(base.memory.fits),
                     need_gb_per_gpu=round(base.memory.need_gb_per_gpu, 2),
                     usable_gb_per_gpu=round(base.memory.usable_gb_per_gpu or 0.0, 2),
                     peak_gb_per_gpu=round(base.memory.peak_gb_per_gpu, 2),
                     max_batch_size=max_batch, max_seq_len=max_seq,
                     changes=[*fitting, *others])
