"""The sizing side of a recommendation: one node plan per placement, and the job's sizes.

The sizing model runs once per distinct placement found in the warehouse (GPU × GPUs per node ×
the fabric between machines and the cluster size the offer allows), never per offer; the SQL
then prices every offer against these plans.

An offer goes onto several machines only when it (or, failing that, its provider's profile)
names an inter-node fabric, its machine is a full 8-GPU node, and one machine cannot hold the
job; then the fewest machines that hold it are taken, up to the offer's cluster size. An offer
whose one order is several machines (an instant cluster, an NVL72 rack) is placed on at least
that many, over its fabric, whatever the job: they are paid for. Between the machines of one
NVLink domain (a rack) the fabric is NVLink at the GPU's own rate.

A GPU whose variant was assumed (catalog.FamilyLevel: PCIe or NVL cards where the label does
not say) is sized without the NVLink bridges its datasheet allows: no bridge is stated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from gpuscout.core.catalog import Catalog, GpuSpec
from gpuscout.core.models import FormFactor
from gpuscout.sizing.architectures import Architecture
from gpuscout.sizing.choices import ADAMW
from gpuscout.sizing.peft import trainable_params
from gpuscout.sizing.plan import NodePlan, NodeShape, plan_node
from gpuscout.sizing.types import JobSpec

# Node counts tried (fewest first), up to the offer's cluster size (which is tried too).
MULTI_NODE_COUNTS = (2, 4, 8, 16, 32, 64, 128, 256)
MIN_GPUS_FOR_MULTI_NODE = 8
# Cluster size where neither the offer (provider_data.max_gpus) nor the provider's profile
# (max_cluster_nodes) states one: an assumption, said in the reasons. 32 machines is 256 GPUs of
# 8-GPU nodes, below every fabric-backed cluster product we know of.
DEFAULT_MAX_CLUSTER_NODES = 32
# Gb/s per machine for a named fabric whose bandwidth neither the offer nor the profile gives:
# one NIC per machine (NDR InfiniBand / 400 GbE RoCE and EFA at 400 Gb/s, 100 GbE otherwise), a
# cautious assumption the reasons name. HGX machines usually carry eight such NICs.
FABRIC_ASSUMED_GBPS = {"InfiniBand": 400.0, "RoCE": 400.0, "EFA": 400.0, "Ethernet": 100.0}
# Bytes per trainable parameter in a checkpoint: bf16 weights plus optimizer states
# (EleutherAI "Transformer Math 101": AdamW 8 B of moments, + 4 B fp32 master when mixed;
# 8-bit AdamW 2 B; SGD momentum 4 B; Adafactor's factored second moment ~0).
OPTIMIZER_STATE_BYTES = {"adamw": 8.0, "adamw-foreach": 8.0, "adamw-8bit": 2.0,
                         "paged-adamw-8bit": 2.0, "sgd": 4.0, "adafactor": 0.0}
WEIGHT_BYTES = 2.0  # bf16/fp16 weights as saved and downloaded
DATASET_BYTES_PER_TOKEN = 4.0  # ~4 characters of UTF-8 text per token


def sizes_gb(arch: Architecture, job: JobSpec, tokens: int) -> tuple[float, float, float]:
    """(checkpoint, final weights to download, storage during the run) in GB."""
    trainable = trainable_params(arch, job)
    state = OPTIMIZER_STATE_BYTES[job.optimizer]
    if job.mixed_precision and job.optimizer in ADAMW:
        state += 4.0
    checkpoint = trainable * (WEIGHT_BYTES + state) / 1e9
    final = (trainable if job.is_peft else arch.total_params) * WEIGHT_BYTES / 1e9
    base = arch.total_params * WEIGHT_BYTES / 1e9
    # base model + tokenized dataset + the two newest checkpoints
    storage = base + tokens * DATASET_BYTES_PER_TOKEN / 1e9 + 2 * checkpoint
    return checkpoint, final, storage


def checkpoint_write_s(checkpoint_gb: float, writers: int, write_gbps: float) -> float:
    """Seconds one checkpoint pauses training: a sharded checkpoint is written by all `writers`
    machines at once, each its 1/writers share at `write_gbps` GB/s."""
    return checkpoint_gb / (write_gbps * writers)


def node_counts(max_nodes: int, min_nodes: int = 1) -> tuple[int, ...]:
    """Machine counts to try, fewest first: MULTI_NODE_COUNTS up to `max_nodes`, then it; for
    an order of `min_nodes` > 1 machines, that order, twice it, four times it ... up to
    `max_nodes`."""
    if min_nodes > 1:
        counts, n = [], min_nodes
        while n <= max(max_nodes, min_nodes):
            counts.append(n)
            n *= 2
        return tuple(counts)
    counts = tuple(n for n in MULTI_NODE_COUNTS if n <= max_nodes)
    return counts + ((max_nodes,) if max_nodes >= 2 and max_nodes not in counts else ())


def nvlink_fabric_gbps(gpu: GpuSpec, gpus_per_node: int) -> float:
    """Gb/s per machine between the machines of one NVLink domain: each GPU's NVLink, one
    direction (datasheets quote both together), for all the machine's GPUs."""
    per_gpu_gbs = (gpu.nvlink_gbps or 0.0) / 2
    return per_gpu_gbs * 8 * gpus_per_node if per_gpu_gbs else FABRIC_ASSUMED_GBPS["InfiniBand"]


def sized_gpu(gpu: GpuSpec, variant_assumed: bool) -> GpuSpec:
    """The GPU as sized: an assumed PCIe or NVL variant without the bridges no label states."""
    if variant_assumed and gpu.form_factor in (FormFactor.PCIE, FormFactor.NVL) \
            and gpu.nvlink != "none":
        return gpu.model_copy(update={"nvlink": "none"})
    return gpu


def _cluster(arch: Architecture, job: JobSpec, gpu: GpuSpec, single: NodePlan,
             fabric: str, gbps: float, max_nodes: int, tokens: int,
             min_nodes: int = 1) -> NodePlan:
    last = single
    for nodes in node_counts(max_nodes, min_nodes):
        last = _plan(arch, job, gpu, single.shape.gpu_id, single.shape.gpus_per_node, tokens,
                     nodes=nodes, fabric=fabric, fabric_gbps=gbps)
        if last.feasible:
            return last
    if last is not single and last.reason:
        last = last.model_copy(update={
            "reason": f"{last.reason}, on the most machines its cluster allows "
                      f"({max_nodes})"})
    return last


# The sizing model is pure: a plan is a function of the job, the GPU, the machine shape and
# the tokens alone, so it is kept (by value) across recommendations, which then size only the
# shapes they have not met before. The plans returned are shared: read them, never change them.
PLAN_CACHE_SIZE = 8192
_plans: dict[tuple[object, ...], NodePlan] = {}


def clear_plans() -> None:
    """Forget every plan kept (they are sized again when next asked for)."""
    _plans.clear()


def _kept(key: tuple[object, ...], make: Callable[[], NodePlan]) -> NodePlan:
    plan = _plans.get(key)
    if plan is None:
        if len(_plans) >= PLAN_CACHE_SIZE:
            _plans.clear()
        plan = _plans[key] = make()
    return plan


def _plan(arch: Architecture, job: JobSpec, gpu: GpuSpec, gpu_id: str, gpus_per_node: int,
          tokens: int, *, nodes: int = 1, fabric: str | None = None,
          fabric_gbps: float | None = None) -> NodePlan:
    return _kept(("node", arch, job, gpu, gpu_id, gpus_per_node, nodes, fabric, fabric_gbps,
                  tokens), lambda: plan_node(arch, job, gpu, NodeShape(
                      gpu_id=gpu_id, gpus_per_node=gpus_per_node, nodes=nodes, fabric=fabric,
                      fabric_gbps=fabric_gbps), tokens))


def placement_plan(arch: Architecture, job: JobSpec, gpu: GpuSpec, key: dict[str, Any],
                   tokens: int) -> NodePlan:
    """The plan of one placement (see candidates.placements): its machine shape sized once and,
    where the machine hits the memory wall and has a fabric, the fewest machines of its
    cluster that hold the job."""
    gpu_id, per_node, fabric = key["gpu_id"], key["gpus_per_node"], key["fabric"]
    min_nodes = key.get("min_nodes") or 1
    gpu = sized_gpu(gpu, bool(key.get("variant_assumed")))

    def gbps() -> float:
        if fabric == "NVLink":
            return nvlink_fabric_gbps(gpu, per_node)
        return key["fabric_gbps"] or FABRIC_ASSUMED_GBPS.get(fabric, 100.0)

    def place() -> NodePlan:
        plan = _plan(arch, job, gpu, gpu_id, per_node, tokens)
        if min_nodes > 1 and fabric:  # an order of several machines: all of them, at least
            plan = _cluster(arch, job, gpu, plan, fabric, gbps(),
                            max(key["max_nodes"] or min_nodes, min_nodes), tokens, min_nodes)
        elif (not plan.feasible and plan.reason and plan.reason.startswith("memory wall")
                and fabric and per_node >= MIN_GPUS_FOR_MULTI_NODE):
            plan = _cluster(arch, job, gpu, plan, fabric, gbps(),
                            key["max_nodes"] or DEFAULT_MAX_CLUSTER_NODES, tokens)
        return plan

    return _kept(("placement", arch, job, gpu, gpu_id, per_node, fabric, key["fabric_gbps"],
                  key["max_nodes"], min_nodes, tokens), place)


def plan_shapes(arch: Architecture, job: JobSpec, shapes: list[dict[str, Any]], tokens: int,
                catalog: Catalog) -> list[tuple[dict, NodePlan]]:
    """One plan per placement key of `shapes` (see `placement_plan`)."""
    return [(key, placement_plan(arch, job, catalog.gpu(key["gpu_id"]), key, tokens))
            for key in shapes]


def plans_table(plans: list[tuple[dict, NodePlan]], *, checkpoint_gb: float,
                write_gbps: float, hw_failures_per_gpu_hour: float) -> pa.Table:
    """The plans as the SQL joins them: an id, the placement key, then the plan, its
    checkpoint write time and, across machines, the hardware failure rate of all its GPUs."""
    return pa.Table.from_pylist([{
        "plan_id": i, "gpu_id": k["gpu_id"], "gpus_per_node": k["gpus_per_node"],
        "fabric": k["fabric"], "min_nodes": k["min_nodes"],
        "variant_assumed": k["variant_assumed"],
        "fabric_gbps": k["fabric_gbps"], "max_nodes": k["max_nodes"],
        "nodes": p.shape.nodes, "feasible": p.feasible, "reason": p.reason,
        "sharding": p.sharding, "dtype": p.dtype, "peak_gb_per_gpu": p.peak_gb_per_gpu,
        "need_gb_per_gpu": p.need_gb_per_gpu,
        "usable_gb_per_gpu": p.usable_gb_per_gpu, "hours": p.hours,
        "tokens_per_s": p.tokens_per_s,
        "fabric_gbps_used": p.shape.fabric_gbps if p.shape.nodes > 1 else None,
        "ring_gbs": p.ring_gbs, "scaling_efficiency": p.scaling_efficiency,
        "checkpoint_writers": p.checkpoint_writers,
        "checkpoint_write_s": checkpoint_write_s(checkpoint_gb, p.checkpoint_writers,
                                                 write_gbps),
        # measured on a cluster job: applied to jobs on several machines (one machine's
        # hardware MTBF at this rate is > 6,000 h, which the model leaves out)
        "hw_interrupts_per_hour": (hw_failures_per_gpu_hour * p.shape.gpus
                                   if p.shape.nodes > 1 else 0.0),
    } for i, (k, p) in enumerate(plans)], schema=pa.schema([
        ("plan_id", pa.int32()), ("gpu_id", pa.string()), ("gpus_per_node", pa.int32()),
        ("fabric", pa.string()),
        ("fabric_gbps", pa.float64()), ("max_nodes", pa.int32()), ("min_nodes", pa.int32()),
        ("variant_assumed", pa.bool_()), ("nodes", pa.int32()),
        ("feasible", pa.bool_()), ("reason", pa.string()), ("sharding", pa.string()),
        ("dtype", pa.string()), ("peak_gb_per_gpu", pa.float64()),
        ("need_gb_per_gpu", pa.float64()),
        ("usable_gb_per_gpu", pa.float64()), ("hours", pa.float64()),
        ("tokens_per_s", pa.float64()), ("fabric_gbps_used", pa.float64()),
        ("ring_gbs", pa.float64()), ("scaling_efficiency", pa.float64()),
        ("checkpoint_writers", pa.int32()), ("checkpoint_write_s", pa.float64()),
        ("hw_interrupts_per_hour", pa.float64()),
    ]))
