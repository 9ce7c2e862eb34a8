"""How a job would run on one machine shape: the parallelism that fits, its memory and its time.

Pure: a `NodeShape` (GPU, GPUs per node, nodes, the fabric between the nodes) and a job in, a
`NodePlan` out. The recommendation evaluates one plan per distinct shape in the warehouse, not
one per offer.

Across machines the time is `multi_node_time`: the sharding's traffic is the same as inside one
machine (`sizing.throughput`), but the ring runs at the bandwidth of its slowest hop, NVLink/PCIe
per GPU inside a machine or the machine's fabric between machines (`ring_bandwidth_gbs`).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from gpuscout.core.catalog import GpuSpec
from gpuscout.core.errors import UserInputError
from gpuscout.sizing.architectures import Architecture
from gpuscout.sizing.choices import Dtype
from gpuscout.sizing.estimate import estimate
from gpuscout.sizing.memory import (
    DTYPE_BYTES,
    FP32,
    GB,
    GIB,
    frozen_weight_bytes,
    trainable_bytes,
)
from gpuscout.sizing.throughput import (
    BACKWARD_SHARE,
    INTER_NODE_GBS,
    LINK_EFFICIENCY,
    link_gbs,
    time_estimate,
)
from gpuscout.sizing.types import JobSpec, Sharding

# Plan against 95 % of the VRAM (sold in GiB: an "80GB" card holds 80 GiB): the estimate already
# holds the CUDA context, and this margin covers driver/ECC reservations and run-to-run
# variance of the caching allocator (the calibration's errors are of this order).
VRAM_HEADROOM = 0.95
# Parallelism tried on a multi-GPU node, fastest first: plain data parallelism keeps a full
# replica per GPU; ZeRO-2 shards gradients and optimizer states; ZeRO-3 also the weights, at
# 1.5x the communication (ZeRO paper, Rajbhandari et al. 2019, section 7).
MULTI_GPU_STRATEGIES: tuple[Sharding, ...] = ("ddp", "zero2", "zero3")
# Shardings whose checkpoint every machine writes its own part of (optimizer states, and with
# ZeRO-3/FSDP the weights, are partitioned over all ranks); DDP's rank 0 writes the replica.
SHARDED_CHECKPOINTS: frozenset[str] = frozenset({"zero1", "zero2", "zero3", "fsdp"})


class NodeShape(BaseModel):
    gpu_id: str
    gpus_per_node: int = Field(ge=1)
    nodes: int = Field(default=1, ge=1)
    fabric: str | None = Field(default=None, description="between machines: InfiniBand, EFA, "
                                                         "RoCE, Ethernet")
    fabric_gbps: float | None = Field(
        default=None, gt=0,
        description="Gb/s per machine between machines; None with nodes > 1: the HGX "
                    "reference design, one 400 Gb/s NIC per GPU")

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def machine_fabric_gbps(self) -> float:
        """Gb/s per machine between machines (stated, or the HGX reference)."""
        if self.fabric_gbps is not None:
            return self.fabric_gbps
        return INTER_NODE_GBS * 8 * self.gpus_per_node


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
    ring_gbs: float | None = Field(default=None, description="usable GB/s per GPU of the "
                                                              "sharding's collectives")
    scaling_efficiency: float | None = Field(default=None, description="compute / step time")
    bound: str | None = Field(default=None, description="what sets a micro-batch: compute, "
                              "memory or host (the time model's regime)")
    notes: list[str] = Field(default_factory=list)

    @property
    def checkpoint_writers(self) -> int:
        """Machines that write a checkpoint at once: all of them when it is sharded."""
        return self.shape.nodes if self.sharding in SHARDED_CHECKPOINTS else 1


def _job_on(job: JobSpec, gpus: int, sharding: Sharding) -> JobSpec:
    # Offload needs a ZeRO stage: none with plain DDP, optimizer-only with ZeRO-2.
    offload = job.offload
    if sharding in ("none", "ddp"):
        offload = "none"
    elif sharding == "zero2" and offload == "params":
        offload = "optimizer"
    return JobSpec(**{**job.model_dump(), "gpus": gpus, "sharding": sharding,
                      "offload": offload})


def ring_bandwidth_gbs(intra_gbs: float, nodes: int, fabric_gbps: float) -> float:
    """Usable GB/s per GPU of a ring collective over `nodes` machines.

    `intra_gbs` is one GPU's usable NVLink/PCIe bandwidth inside its machine (one direction,
    `throughput.link_gbs`); `fabric_gbps` the machine's inter-node fabric in Gb/s, all its NICs
    together. NCCL runs one ring per NIC: in every ring each GPU sends k·(n−1)/n·S/rings bytes
    to its neighbour (k = 2 for an all-reduce, 1 for an all-gather or a reduce-scatter of S
    bytes), and each machine has one outgoing hop per ring, so its NICs carry k·(n−1)/n·S in
    all at fabric_gbps/8 GB/s while its GPUs' links carry up to the same at intra_gbs each. The
    collective thus takes k·(n−1)/n·S / min(intra, fabric/8 × NCCL efficiency): the slowest hop
    sets the pace. One machine (nodes = 1) is the intra-node ring of `throughput`.
    """
    if nodes == 1:
        return intra_gbs
    return min(intra_gbs, fabric_gbps / 8 * LINK_EFFICIENCY)


def multi_node_time(arch: Architecture, job: JobSpec, gpu: GpuSpec, dtype: Dtype,
                    shape: NodeShape, tokens: int) -> tuple[float, float, float, float, str]:
    """(hours, tokens/s, ring GB/s, scaling efficiency, note) of `job` over `shape.nodes` > 1.

    Step = compute + exposed communication + offload traffic, with the overlap rules of
    `throughput.time_estimate` and the ring bandwidth of `ring_bandwidth_gbs`:
        DDP/ZeRO-1/2  comm = 2·(n−1)/n·G / B, exposed = max(0, comm − 2/3·t_micro), once a step
        ZeRO-3/FSDP   comm = (n−1)/n·(2·W + G) / B per micro-batch, exposed = accum ×
                      max(0, comm − t_micro)  (all-gather forward and backward, reduce-scatter)
    with G the gradient bytes, W the weight bytes, n = GPUs in all, B the ring bandwidth.
    """
    n = shape.gpus
    single = _job_on(job, 1, "none").model_copy(update={"grad_accum": 1})
    t_micro = time_estimate(arch, single, gpu, dtype).step_time_s
    bw = ring_bandwidth_gbs(link_gbs(gpu, shape.gpus_per_node), shape.nodes,
                            shape.machine_fabric_gbps)
    ring = (n - 1) / n
    grad_bytes = trainable_bytes(arch, job, dtype).grad
    if job.sharding in ("ddp", "zero1", "zero2"):
        comm = 2 * ring * grad_bytes / (bw * 1e9)
        exposed = max(0.0, comm - BACKWARD_SHARE * t_micro)
    else:
        w = frozen_weight_bytes(arch, job, dtype) if job.is_peft else \
            arch.total_params * (FP32 if dtype == "fp32" else DTYPE_BYTES[dtype])
        comm = ring * (2 * w + grad_bytes) / (bw * 1e9)
        exposed = job.grad_accum * max(0.0, comm - t_micro)
    offload_s = 0.0
    if job.offload != "none":  # the offload term of throughput, unchanged across machines
        with_offload = time_estimate(arch, job, gpu, dtype).step_time_s
        without = time_estimate(arch, job.model_copy(update={"offload": "none"}), gpu,
                                dtype).step_time_s
        offload_s = max(0.0, with_offload - without)
    compute = t_micro * job.grad_accum
    step = compute + exposed + offload_s
    tps = job.batch_size * job.seq_len * job.grad_accum * n / step
    fabric = shape.fabric or "network"
    note = (f"{job.sharding} over {shape.nodes} machines × {shape.gpus_per_node} GPUs: "
            f"{fabric} {shape.machine_fabric_gbps:g} Gb/s per machine, ring at ~{bw:.0f} GB/s "
            f"per GPU, communication {comm:.2f} s per "
            f"{'step' if job.sharding in ('ddp', 'zero1', 'zero2') else 'micro-batch'} "
            f"against {t_micro:.2f} s of compute")
    return tokens / tps / 3600, tps, bw, compute / step, note


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
            hours, tps = est.time.hours, est.time.tokens_per_s
            eff = est.time.scaling_efficiency
            ring: float | None = link_gbs(gpu, total) if total > 1 else None
            time_notes = est.time.notes
            if shape.nodes > 1:
                hours, tps, ring, eff, note = multi_node_time(
                    arch, _job_on(job, total, sharding), gpu, est.dtype, shape, tokens)
                time_notes = [note]
            return NodePlan(shape=shape, feasible=True, sharding=sharding, dtype=est.dtype,
                            peak_gb_per_gpu=est.memory.peak_gb_per_gpu, need_gb_per_gpu=need,
                            usable_gb_per_gpu=usable, hours=round(hours, 3),
                            tokens_per_s=round(tps, 1), ring_gbs=ring,
                            scaling_efficiency=round(eff, 4), bound=est.time.bound,
                            notes=[*est.notes, *time_notes])
    if total > 1 and shape.nodes == 1:
        # sharding the state alone does not fit: tensor parallelism inside the NVLink domain
        # also splits the activations (sizing.parallel)
        from gpuscout.sizing.parallel import tensor_parallel_jobs

        for tp_job in tensor_parallel_jobs(job, gpu, total):
            est = estimate(arch, tp_job, gpu, tokens)
            need = est.memory.allocated_gb + est.memory.breakdown.get("cuda_context", 0.0)
            smallest = need if smallest is None else min(smallest, need)
            if need <= usable and est.time is not None and est.time.hours is not None:
                return NodePlan(
                    shape=shape, feasible=True, sharding=tp_job.sharding, dtype=est.dtype,
                    peak_gb_per_gpu=est.memory.peak_gb_per_gpu, need_gb_per_gpu=need,
                    usable_gb_per_gpu=usable, hours=est.time.hours,
                    tokens_per_s=est.time.tokens_per_s, ring_gbs=link_gbs(gpu, total),
                    scaling_efficiency=est.time.scaling_efficiency, bound=est.time.bound,
                    notes=[f"tensor parallel {tp_job.tensor_parallel} (+ sequence parallel) "
                           f"inside the NVLink domain"
                           + (", distributed optimizer over the replicas"
                              if tp_job.data_parallel > 1 else "")
                           + ": ZeRO alone does not fit", *est.notes, *est.time.notes])
    where = (f"{total} GPUs" if total > 1 else "one GPU")
    return NodePlan(shape=shape, feasible=False, need_gb_per_gpu=smallest,
                    usable_gb_per_gpu=usable,
                    reason=f"memory wall: needs {smallest:.1f} GB per GPU on {where} "
                           f"({'/'.join(strategies)}), {gpu.canonical_id} has "
                           f"{usable:.1f} GB usable")
