"""The sizing side of a recommendation: one node plan per machine shape, and the job's sizes.

The sizing model runs once per distinct shape found in the warehouse (GPU × GPUs per node),
never per offer; the SQL then prices every offer against these plans.
"""

from __future__ import annotations

import pyarrow as pa

from gpuscout.core.catalog import Catalog
from gpuscout.sizing.architectures import Architecture
from gpuscout.sizing.peft import trainable_params
from gpuscout.sizing.plan import NodePlan, NodeShape, plan_node
from gpuscout.sizing.types import JobSpec

# Multi-node is tried only for full 8-GPU nodes on a fast fabric, with up to this many nodes.
MULTI_NODE_COUNTS = (2, 4, 8)
MIN_GPUS_FOR_MULTI_NODE = 8
# Bytes per trainable parameter in a checkpoint: bf16 weights plus optimizer states
# (EleutherAI "Transformer Math 101": AdamW 8 B of moments, + 4 B fp32 master when mixed;
# 8-bit AdamW 2 B; SGD momentum 4 B; Adafactor's factored second moment ~0).
OPTIMIZER_STATE_BYTES = {"adamw": 8.0, "adamw-8bit": 2.0, "paged-adamw-8bit": 2.0,
                         "sgd": 4.0, "adafactor": 0.0}
WEIGHT_BYTES = 2.0  # bf16/fp16 weights as saved and downloaded
DATASET_BYTES_PER_TOKEN = 4.0  # ~4 characters of UTF-8 text per token


def sizes_gb(arch: Architecture, job: JobSpec, tokens: int) -> tuple[float, float, float]:
    """(checkpoint, final weights to download, storage during the run) in GB."""
    trainable = trainable_params(arch, job)
    state = OPTIMIZER_STATE_BYTES[job.optimizer]
    if job.mixed_precision and job.optimizer == "adamw":
        state += 4.0
    checkpoint = trainable * (WEIGHT_BYTES + state) / 1e9
    final = (trainable if job.is_peft else arch.total_params) * WEIGHT_BYTES / 1e9
    base = arch.total_params * WEIGHT_BYTES / 1e9
    # base model + tokenized dataset + the two newest checkpoints
    storage = base + tokens * DATASET_BYTES_PER_TOKEN / 1e9 + 2 * checkpoint
    return checkpoint, final, storage



def plan_shapes(arch: Architecture, job: JobSpec, shapes: pa.Table, tokens: int,
                catalog: Catalog) -> list[NodePlan]:
    """One plan per (gpu_id, gpus_per_node); more nodes only on a fast fabric."""
    plans = []
    for gpu_id, per_node, fabric in zip(shapes["gpu_id"].to_pylist(),
                                        shapes["gpus_per_node"].to_pylist(),
                                        shapes["multinode_fabric"].to_pylist(), strict=True):
        gpu = catalog.gpu(gpu_id)
        plan = plan_node(arch, job, gpu, NodeShape(gpu_id=gpu_id, gpus_per_node=per_node),
                         tokens)
        if not plan.feasible and plan.reason and plan.reason.startswith("memory wall") \
                and fabric and per_node >= MIN_GPUS_FOR_MULTI_NODE:
            for nodes in MULTI_NODE_COUNTS:
                multi = plan_node(arch, job, gpu, NodeShape(
                    gpu_id=gpu_id, gpus_per_node=per_node, nodes=nodes), tokens)
                if multi.feasible:
                    plan = multi
                    break
        plans.append(plan)
    return plans


def plans_table(plans: list[NodePlan]) -> pa.Table:
    return pa.Table.from_pylist([{
        "gpu_id": p.shape.gpu_id, "gpus_per_node": p.shape.gpus_per_node,
        "nodes": p.shape.nodes, "feasible": p.feasible, "reason": p.reason,
        "sharding": p.sharding, "dtype": p.dtype, "peak_gb_per_gpu": p.peak_gb_per_gpu,
        "need_gb_per_gpu": p.need_gb_per_gpu,
        "usable_gb_per_gpu": p.usable_gb_per_gpu, "hours": p.hours,
        "tokens_per_s": p.tokens_per_s,
    } for p in plans], schema=pa.schema([
        ("gpu_id", pa.string()), ("gpus_per_node", pa.int32()), ("nodes", pa.int32()),
        ("feasible", pa.bool_()), ("reason", pa.string()), ("sharding", pa.string()),
        ("dtype", pa.string()), ("peak_gb_per_gpu", pa.float64()),
        ("need_gb_per_gpu", pa.float64()),
        ("usable_gb_per_gpu", pa.float64()), ("hours", pa.float64()),
        ("tokens_per_s", pa.float64()),
    ]))



