"""How a job would run on one machine shape: the parallelism that fits, its memory and its time.

Pure: a `NodeShape` (GPU, GPUs per node, nodes, the fabric between the nodes) and a job in, a
`NodePlan` out. The recommendation evaluates one plan per distinct shape in the warehouse, not
one per offer.

A plan is timed by the same function as `gpuscout estimate` (`sizing.estimate.estimate`), with
the shape as its placement: the sharding's collectives run on the shape's links, inside a machine
and across its fabric (`sizing.collectives`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from gpuscout.core.catalog import GpuSpec
from gpuscout.core.errors import UserInputError
from gpuscout.sizing.architectures import Architecture
from gpuscout.sizing.choices import Interconnect, Network
from gpuscout.sizing.collectives import NIC_GBPS_PER_GPU, Topology, bus_gbs, topology
from gpuscout.sizing.estimate import estimate
from gpuscout.sizing.memory import usable_gb
from gpuscout.sizing.types import JobSpec, Sharding

# Parallelism tried on a multi-GPU node, fastest first: plain data parallelism keeps a full
# replica per GPU; ZeRO-2 shards gradients and optimizer states; ZeRO-3 also the weights, at
# 1.5x the communication (ZeRO paper, Rajbhandari et al. 2019, section 7).
MULTI_GPU_STRATEGIES: tuple[Sharding, ...] = ("ddp", "zero2", "zero3")
# Shardings whose checkpoint every machine writes its own part of (optimizer states, and with
# ZeRO-3/FSDP the weights, are partitioned over all ranks); DDP's rank 0 writes the replica.
SHARDED_CHECKPOINTS: frozenset[str] = frozenset({"zero1", "zero2", "zero3", "fsdp"})


# The fabrics the warehouse names (core.models.NetworkFabric) as the time model's networks; the
# machines of one NVLink domain (an NVL72 rack) are joined by NVLink itself.
NETWORKS: dict[str, Network | Literal["nvlink-domain"]] = {
    "InfiniBand": "infiniband", "RoCE": "roce", "EFA": "efa", "Ethernet": "ethernet",
    "NVLink": "nvlink-domain"}


class NodeShape(BaseModel):
    gpu_id: str
    gpus_per_node: int = Field(ge=1)
    nodes: int = Field(default=1, ge=1)
    fabric: str | None = Field(default=None, description="between machines: InfiniBand, EFA, "
                                                         "RoCE, Ethernet, NVLink")
    fabric_gbps: float | None = Field(
        default=None, gt=0,
        description="Gb/s per machine between machines; None with nodes > 1: the HGX "
                    "reference design, one 400 Gb/s NIC per GPU")
    interconnect: Interconnect | None = Field(
        default=None, description="between the GPUs of a machine (None: the catalog's)")

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def machine_fabric_gbps(self) -> float:
        """Gb/s per machine between machines (stated, or the HGX reference)."""
        if self.fabric_gbps is not None:
            return self.fabric_gbps
        return NIC_GBPS_PER_GPU * self.gpus_per_node

    def placement(self, gpu: GpuSpec) -> Topology:
        """The shape as the time model's placement."""
        network = NETWORKS.get(self.fabric or "", "ethernet") if self.fabric else None
        return topology(gpu, self.gpus, gpus_per_node=self.gpus_per_node,
                        interconnect=self.interconnect,
                        network=network if self.nodes > 1 else None,
                        network_gbps=self.machine_fabric_gbps if self.nodes > 1 else None)


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
    bound: str | None = Field(default=None, description="what binds: compute, memory, host "
                              "or communication (the time model's regime)")
    communication_s: float | None = Field(default=None, description="collectives per step, "
                                          "on the shape's links")
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


def plan_node(arch: Architecture, job: JobSpec, gpu: GpuSpec, shape: NodeShape,
              tokens: int) -> NodePlan:
    """The fastest parallelism that fits `shape`, or why none does.

    The user's own --gpus/--sharding are replaced by the shape's GPU count and the strategies
    above; everything else (method, precision, batch, ...) is the user's.
    """
    usable = usable_gb(gpu.vram_gb)
    total = shape.gpus_per_node * shape.nodes
    strategies: tuple[Sharding, ...] = ("none",) if total == 1 else MULTI_GPU_STRATEGIES
    smallest: float | None = None
    for sharding in strategies:
        try:
            est = estimate(arch, _job_on(job, total, sharding), gpu, tokens,
                           shape.placement(gpu))
        except UserInputError as exc:  # precision gate: the GPU cannot run this job at all
            return NodePlan(shape=shape, feasible=False, reason=str(exc),
                            usable_gb_per_gpu=usable)
        need = est.memory.need_gb_per_gpu  # the same figure and verdict as `estimate`'s
        smallest = need if smallest is None else min(smallest, need)
        if est.memory.fits and est.time is not None and est.time.hours is not None:
            t = est.time
            ring = bus_gbs(shape.placement(gpu), gpu) if total > 1 else None
            return NodePlan(shape=shape, feasible=True, sharding=sharding, dtype=est.dtype,
                            peak_gb_per_gpu=est.memory.peak_gb_per_gpu, need_gb_per_gpu=need,
                            usable_gb_per_gpu=usable, hours=t.hours,
                            tokens_per_s=t.tokens_per_s, ring_gbs=ring,
                            scaling_efficiency=t.scaling_efficiency, bound=t.bound,
                            communication_s=t.communication_s,
                            notes=[*est.notes, *t.notes])
    if total > 1 and shape.nodes == 1:
        # sharding the state alone does not fit: tensor parallelism inside the NVLink domain
        # also splits the activations (sizing.parallel)
        from gpuscout.sizing.parallel import tensor_parallel_jobs

        for tp_job in tensor_parallel_jobs(job, gpu, total):
            est = estimate(arch, tp_job, gpu, tokens)
            need = est.memory.need_gb_per_gpu
            smallest = need if smallest is None else min(smallest, need)
            if est.memory.fits and est.time is not None and est.time.hours is not None:
                t = est.time
                return NodePlan(
                    shape=shape, feasible=True, sharding=tp_job.sharding, dtype=est.dtype,
                    peak_gb_per_gpu=est.memory.peak_gb_per_gpu, need_gb_per_gpu=need,
                    usable_gb_per_gpu=usable, hours=t.hours, tokens_per_s=t.tokens_per_s,
                    ring_gbs=bus_gbs(shape.placement(gpu), gpu),
                    scaling_efficiency=t.scaling_efficiency, bound=t.bound,
                    communication_s=t.communication_s,
                    notes=[f"tensor parallel {tp_job.tensor_parallel} (+ sequence parallel) "
                           f"inside the NVLink domain"
                           + (", distributed optimizer over the replicas"
                              if tp_job.data_parallel > 1 else "")
                           + ": ZeRO alone does not fit", *est.notes, *t.notes])
    where = (f"{total} GPUs" if total > 1 else "one GPU")
    return NodePlan(shape=shape, feasible=False, need_gb_per_gpu=smallest,
                    usable_gb_per_gpu=usable,
                    reason=f"memory wall: needs {smallest:.1f} GB per GPU on {where} "
                           f"({'/'.join(strategies)}), {gpu.canonical_id} has "
                           f"{usable:.1f} GB usable")
