"""Which current offer finishes a fine-tuning run cheapest (or fastest), and why.

`shapes.sql` lists the machine shapes on offer, `plans.py` sizes the job once per shape, and
`rank.sql` prices every offer against those plans (billing granularity, storage, egress, spot
interruptions, price age) and ranks them. Nothing loops over offers.
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path

import duckdb
import pyarrow.compute as pc

from gpuscout.core.catalog import Catalog, load_catalog
from gpuscout.core.clock import now_utc
from gpuscout.core.errors import DataError
from gpuscout.pipeline.recommend.plans import plan_shapes, plans_table, sizes_gb
from gpuscout.pipeline.recommend.request import RecommendRequest
from gpuscout.pipeline.recommend.result import RankedOffer, Recommendation, RejectedOffer
from gpuscout.sizing.architectures import Architecture
from gpuscout.sizing.types import JobSpec
from gpuscout.warehouse.queries import run_query

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
# The --explain list: at most this many cheaper offers that were rejected.
REJECTED_SHOWN = 20


@cache
def _sql(name: str) -> str:
    return (Path(__file__).parent / f"{name}.sql").read_text("utf-8")


def recommend(con: duckdb.DuckDBPyConnection, arch: Architecture, job: JobSpec,
              req: RecommendRequest, catalog: Catalog | None = None) -> Recommendation:
    catalog = catalog or load_catalog()
    filters = {"providers": req.providers or None, "region": req.region,
               "spot_policy": req.spot}
    shapes = run_query(con, _sql("shapes"), filters)
    if shapes.num_rows == 0:
        raise DataError("no current offers match: run `gpuscout refresh` or widen --provider/"
                        "--region/--spot")
    plans = plan_shapes(arch, job, shapes, req.tokens, catalog)
    checkpoint_gb, egress_gb, derived_storage = sizes_gb(arch, job, req.tokens)
    storage_gb = derived_storage if req.storage_gb is None else req.storage_gb
    con.register("plans", plans_table(plans))
    try:
        table = run_query(con, _sql("rank"), {
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
    why = pc.field("rejected_because")
    accepted = table.filter(why.is_null())
    rejected = table.filter(why.is_valid())
    if accepted.num_rows:
        # Cheaper by the hour than the winner, yet unable to run the job well: the --explain list.
        best_hourly = accepted["price_usd_per_hour"][0].as_py()
        rejected = rejected.filter(pc.field("price_usd_per_hour") < best_hourly)
    rejected = rejected.sort_by([("price_usd_per_hour", "ascending")])
    return Recommendation(
        model_id=arch.model_id, method=job.method, tokens=req.tokens,
        storage_gb=round(storage_gb, 2), checkpoint_gb=round(checkpoint_gb, 3),
        egress_gb=round(egress_gb, 3), shapes_evaluated=len(plans),
        offers_evaluated=table.num_rows,
        ranked=[RankedOffer.model_validate(r)
                for r in accepted.slice(0, req.limit).to_pylist()],
        rejected_cheaper=[RejectedOffer.model_validate(r)
                          for r in rejected.slice(0, REJECTED_SHOWN).to_pylist()],
    )
