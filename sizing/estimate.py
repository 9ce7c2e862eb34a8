"""The one entry point: architecture + job (+ GPU) → memory, time and notes. Pure."""

from __future__ import annotations

from gpuscout.core.catalog import GpuSpec
from gpuscout.core.errors import UserInputError
from gpuscout.sizing.architectures import Architecture
from gpuscout.sizing.collectives import Topology
from gpuscout.sizing.fp8 import resolve_recipe
from gpuscout.sizing.memory import fit_verdict, memory_estimate, vram_label
from gpuscout.sizing.parallel import check, is_model_parallel, parallel_memory, parallel_time
from gpuscout.sizing.precision import decide
from gpuscout.sizing.throughput import flops_per_token, time_estimate
from gpuscout.sizing.types import Estimate, JobSpec


def estimate(arch: Architecture, job: JobSpec, gpu: GpuSpec | None = None,
             tokens: int | None = None, placement: Topology | None = None) -> Estimate:
    """Size `job` on `arch`. Without a GPU only memory is estimated (at the requested dtype).
    `placement` says where several GPUs sit and what joins them (default: the catalog's
    machine of the GPU, `collectives.topology`); `estimate` and the recommendation's plans both
    time a job through here.

    Raises `UserInputError` when the GPU cannot run the job at all (e.g. 4-bit on a TPU).
    """
    if tokens is not None and tokens < 1:
        raise UserInputError(f"--tokens must be at least 1, got {tokens}")
    decision = decide(job, gpu)
    if decision.refusal:
        gpu_id = gpu.canonical_id if gpu else "?"
        raise UserInputError(f"cannot run on {gpu_id}: {decision.refusal}")
    if job.dtype == "fp8":
        job = job.model_copy(update={"fp8_recipe": resolve_recipe(job.fp8_recipe, gpu)})
    vram = gpu.vram_gb if gpu else None
    if is_model_parallel(job):
        check(arch, job)
        memory = parallel_memory(arch, job, decision.dtype, vram)
        time = parallel_time(arch, job, gpu, decision.dtype, tokens) if gpu else None
    else:
        memory = memory_estimate(arch, job, dtype=decision.dtype, vram_gb=vram)
        time = (time_estimate(arch, job, gpu, decision.dtype, tokens, placement) if gpu
                else None)
    notes = list(decision.notes)
    if arch.notes:
        notes.append(f"{arch.model_id}: {arch.notes}")
    if memory.fits is False and gpu is not None:
        notes.append(f"{fit_verdict(memory)} on {gpu.canonical_id} ({vram_label(gpu.vram_gb)})")
    return Estimate(model_id=arch.model_id, gpu_id=gpu.canonical_id if gpu else None,
                    dtype=decision.dtype, job=job, memory=memory, time=time, notes=notes,
                    flops_per_token=flops_per_token(arch, job)[0])
