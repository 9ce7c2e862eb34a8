"""How a job would run on one machine shape: the parallelism that fits, its memory and its time.

Pure: a `NodeShape` (GPU, GPUs per node, nodes) and a job in, a `NodePlan` out. The
recommendation evaluates one plan per distinct shape in the warehouse, not one per offer.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from gpuscout.core.catalog import GpuSpec
from gpuscout.core.errors import UserInputError
from gpuscout.sizing.architectures import Architecture
from gpuscout.sizing.estimate import estimate
from gpuscout.sizing.memory import GB, GIB
from gpuscout.sizing.types import JobSpec, Sharding

# Plan against 95 % of the VRAM (sold in GiB: an "80GB" card holds 80 GiB): the estimate already
# holds the CUDA context, and this margin covers driver/ECC reservations and run-to-run
# variance of the caching allocator (the calibration's errors are of this order).
VRAM_HEADROOM = 0.95
# Parallelism tried on a multi-GPU node, fastest first: plain data parallelism keeps a full
# replica per GPU; ZeRO-2 shards gradients and optimizer states; ZeRO-3 also the weights, at
# 1.5x the communication (ZeRO paper, Rajbhandari et al. 2019, section 7).
MULTI_GPU_STRATEGIES: tuple[Sharding, ...] = ("ddp", "zero2", "zero3")


class NodeShape(BaseModel):
    gpu_id: str
    gpus_per_node: int = Field(ge=1)
    nodes: int = Field(default=1, ge=1)


class NodePlan(BaseModel):
    shape: NodeShape
    feasible: bool
    reason: str | None = Field(default=None, description="why not, when infeasible")
    sharding: Sharding | None = None
    dtype: str | None = None
    peak_gb_per_gpu: float | None = Field(default=None, description="incl. the allocator's cache")
    need_gb_per_gpu: float | None = Field(
        default=None,
        description="tensors + CUDA context: the allocator gives its cache back before it "
                    "fails, so this is what must fit")
    usable_gb_per_gpu: float
    hours: float | None = None
    tokens_per_s: float | None = None
    notes: list[str] = Field(default_factory=list)


def _job_on(job: JobSpec, gpus: int, sharding: Sharding) -> JobSpec:
    # Offload needs a ZeRO stage: none with plain DDP, optimizer-only with ZeRO-2.
    offload = job.offload
    if sharding in ("none", "ddp"):
        offload = "none"
    elif sharding == "zero2" and offload == "params":
        offload = "optimizer"
    return JobSpec(**{**job.model_dump(), "gpus": gpus, "sharding": sharding,
                      "offload": offload})


def plan_node(arch: Architecture, job: JobSpec, gpu: GpuSpec, shape: NodeShape,
              tokens: int) -> NodePlan:
    """The fastest parallelism that fits `shape`, or why none does.

    The user's own --gpus/--sharding are replaced by the shape's GPU count and the strategies
    above; everything else (method, precision, batch, ...) is the user's.
    """
    usable = gpu.vram_gb * GIB / GB * VRAM_HEADROOM
    total = shape.gpus_per_node * shape.nodes
    strategies: tuple[Sharding, ...] = ("none",) if total == 1 else MULTI_GPU_STRATEGIES
    smallest: float | None = None
    for sharding in strategies:
        try:
            est = estimate(arch, _job_on(job, total, sharding), gpu, tokens)
        except UserInputError as exc:  # precision gate: the GPU cannot run this job at all
            return NodePlan(shape=shape, feasible=False, reason=str(exc),
                            usable_gb_per_gpu=usable)
        need = est.memory.allocated_gb + est.memory.breakdown.get("cuda_context", 0.0)
        smallest = need if smallest is None else min(smallest, need)
        if need <= usable and est.time is not None and est.time.hours is not None:
            return NodePlan(shape=shape, feasible=True, sharding=sharding, dtype=est.dtype,
                            peak_gb_per_gpu=est.memory.peak_gb_per_gpu, need_gb_per_gpu=need,
                            usable_gb_per_gpu=usable,
                            hours=est.time.hours, tokens_per_s=est.time.tokens_per_s,
                            notes=[*est.notes, *est.time.notes])
    where = (f"{total} GPUs" if total > 1 else "one GPU")
    return NodePlan(shape=shape, feasible=False, need_gb_per_gpu=smallest,
                    usable_gb_per_gpu=usable,
                    reason=f"memory wall: needs {smallest:.1f} GB per GPU on {where} "
                           f"({'/'.join(strategies)}), {gpu.canonical_id} has "
                           f"{usable:.1f} GB usable")
