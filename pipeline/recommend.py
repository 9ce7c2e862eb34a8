"""Which current offer finishes a fine-tuning run cheapest (or fastest), and why.

The sizing model runs once per distinct machine shape found in the warehouse (GPU × GPUs per
node), then one SQL query prices every offer against those plans (billing granularity,
storage, egress, spot interruptions, price age) and ranks them. Nothing loops over offers.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Literal

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
from gpuscout.core.catalog import Catalog, load_catalog
from gpuscout.core.clock import now_utc
from gpuscout.core.errors import DataError, UserInputError
from gpuscout.sizing.architectures import Architecture
from gpuscout.sizing.peft import trainable_params
from gpuscout.sizing.plan import NodePlan, NodeShape, plan_node
from gpuscout.sizing.types import JobSpec
from gpuscout.warehouse.queries import run_named
from pydantic import BaseModel, Field

Objective = Literal["cost", "time", "balanced"]
SpotPolicy = Literal["allow", "prefer", "forbid"]

# Multi-node is tried only for full 8-GPU nodes on a fast fabric, with up to this many nodes.
MULTI_NODE_COUNTS = (2, 4, 8)
MIN_GPUS_FOR_MULTI_NODE = 8
# Restart after an interruption: provision, pull the image, load model and checkpoint. Ten
# minutes is an assumption (no provider publishes it); it is a parameter of the request.
RESTART_S = 600.0
# Sequential write to local NVMe, GB/s (datacenter NVMe drives write 2-4 GB/s; network volumes
# less): the pause each checkpoint costs. An assumption, stated in every spot reason.
CHECKPOINT_WRITE_GBPS = 1.0
# Interruption rates where the provider publishes none. Bid marketplaces (RunPod spot, Vast
# interruptible) reclaim on outbids: assumed one interruption per 20 hours, which is also used
# when a provider's spot mechanics are unknown. Market spot (cloud spot/preemptible): AWS Spot
# Advisor's worst band for GPU families, >20 %/month.
BID_INTERRUPTS_PER_HOUR = 0.05
MARKET_INTERRUPTS_PER_HOUR = -math.log(1 - 0.25) / 730
# A price observed longer ago than this is called out in the reasons.
PRICE_AGE_WARN_DAYS = 30
# Bytes per trainable parameter in a checkpoint: bf16 weights plus optimizer states
# (EleutherAI "Transformer Math 101": AdamW 8 B of moments, + 4 B fp32 master when mixed;
# 8-bit AdamW 2 B; SGD momentum 4 B; Adafactor's factored second moment ~0).
OPTIMIZER_STATE_BYTES = {"adamw": 8.0, "adamw-8bit": 2.0, "paged-adamw-8bit": 2.0,
                         "sgd": 4.0, "adafactor": 0.0}
WEIGHT_BYTES = 2.0  # bf16/fp16 weights as saved and downloaded
DATASET_BYTES_PER_TOKEN = 4.0  # ~4 characters of UTF-8 text per token


class RecommendRequest(BaseModel):
    tokens: int = Field(gt=0, description="training tokens in total (dataset × epochs)")
    objective: Objective = "cost"
    spot: SpotPolicy = "allow"
    max_hours: float | None = Field(None, gt=0)
    checkpoint_every_min: float = Field(30.0, gt=0)
    storage_gb: float | None = Field(None, ge=0, description="else derived from the job")
    providers: list[str] | None = None
    region: str | None = None
    limit: int = Field(10, ge=1)
    restart_s: float = Field(RESTART_S, ge=0)
    now: datetime | None = None


class Recommendation(BaseModel):
    model_id: str
    method: str
    tokens: int
    storage_gb: float
    checkpoint_gb: float
    egress_gb: float
    shapes_evaluated: int
    offers_evaluated: int
    ranked: list[dict]
    rejected_cheaper: list[dict]


def _sizes_gb(arch: Architecture, job: JobSpec, tokens: int) -> tuple[float, float, float]:
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


def _plans_table(plans: list[NodePlan]) -> pa.Table:
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


def recommend(con: duckdb.DuckDBPyConnection, arch: Architecture, job: JobSpec,
              req: RecommendRequest, catalog: Catalog | None = None) -> Recommendation:
    catalog = catalog or load_catalog()
    filters = {"providers": req.providers or None, "region": req.region,
               "spot_policy": req.spot}
    shapes = run_named(con, "recommend_shapes", filters)
    if shapes.num_rows == 0:
        raise DataError("no current offers match: run `gpuscout refresh` or widen --provider/"
                        "--region/--spot")
    plans = plan_shapes(arch, job, shapes, req.tokens, catalog)
    checkpoint_gb, egress_gb, derived_storage = _sizes_gb(arch, job, req.tokens)
    storage_gb = derived_storage if req.storage_gb is None else req.storage_gb
    con.register("plans", _plans_table(plans))
    try:
        table = run_named(con, "recommend", {
            **filters, "objective": req.objective, "max_hours": req.max_hours,
            "checkpoint_s": req.checkpoint_every_min * 60, "checkpoint_gb": checkpoint_gb,
            "write_gbps": CHECKPOINT_WRITE_GBPS, "restart_s": req.restart_s,
            "storage_gb": storage_gb, "egress_gb": egress_gb,
            "bid_interrupts_per_hour": BID_INTERRUPTS_PER_HOUR,
            "market_interrupts_per_hour": MARKET_INTERRUPTS_PER_HOUR,
            "now": (req.now or now_utc()).isoformat(), "stale_days": PRICE_AGE_WARN_DAYS,
            "dtype": job.dtype,
        })
    finally:
        con.unregister("plans")
    accepted = table.filter(pc.is_null(table["rejected_because"]))
    rejected = table.filter(pc.is_valid(table["rejected_because"]))
    if accepted.num_rows:
        # Cheaper by the hour than the winner, yet unable to run the job well: the --explain list.
        best_hourly = accepted["price_usd_per_hour"][0].as_py()
        rejected = rejected.filter(pc.less(rejected["price_usd_per_hour"], best_hourly))
    rejected = rejected.sort_by([("price_usd_per_hour", "ascending")])
    return Recommendation(
        model_id=arch.model_id, method=job.method, tokens=req.tokens,
        storage_gb=round(storage_gb, 2), checkpoint_gb=round(checkpoint_gb, 3),
        egress_gb=round(egress_gb, 3), shapes_evaluated=len(plans),
        offers_evaluated=table.num_rows,
        ranked=accepted.slice(0, req.limit).to_pylist(),
        rejected_cheaper=rejected.select(
            ["provider", "offer_key", "gpu_id", "gpus_per_node", "pricing_model",
             "price_usd_per_hour", "rejected_because"]).slice(0, 20).to_pylist(),
    )


def tokens_from_options(tokens: float | None, dataset_tokens: float | None,
                        epochs: float | None) -> int:
    """--tokens, or --dataset-tokens × --epochs (exactly one way)."""
    if tokens is not None and dataset_tokens is not None:
        raise UserInputError("give --tokens or --dataset-tokens (with --epochs), not both")
    if tokens is None and dataset_tokens is None:
        raise UserInputError("give the training volume: --tokens N, or --dataset-tokens N "
                             "--epochs E")
    total = tokens if tokens is not None else dataset_tokens * (epochs or 1.0)  # type: ignore[operator]
    if total is None or total < 1:
        raise UserInputError(f"the training volume must be at least 1 token, got {total}")
    return int(total)
