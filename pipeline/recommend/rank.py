"""Which current offer finishes a fine-tuning run cheapest (or fastest), and why.

`facts.py` makes the per-offer facts that no job changes current on the connection (the
table a refresh stores, or one built there); `candidates.py` reads, once per set of facts and
filters, the offers a request may use, their pricing pairs (a machine placement and every term
of the price but the hourly one) and placements; `plans.py` sizes the job once per placement
(and keeps the plans across calls); `pair_costs.py` prices each pair for the run
(checkpoints, interruptions, billing granularity, storage, egress); `pricing.py` prices every
offer by its pair and picks the rows shown; `shown.sql` and `reasons.py` explain them. Nothing
loops over offers.

The whole-run time of an offer (pair_costs.py; the functions below state the same formulas):
    T   compute seconds (the plan), C = checkpoint write seconds (plans.checkpoint_write_s)
    λ   interruptions per hour of the job = spot rate of one machine × machines
        + HARDWARE_FAILURES_PER_GPU_HOUR × GPUs when on several machines
                                                             (job_interrupts_per_hour)
    τ   checkpoint interval: --checkpoint-every, else Young/Daly sqrt(2·C·MTBF) with
        MTBF = 1/λ' (λ' = the interruptions that lose work), within [1 min, T]; T when λ' = 0
    run = T·(1 + C/τ);  expected = run / (1 − (λ'·τ/2 + λ·R + λ_saved·C)/3600)
where R is the restart and λ_saved the spot interruptions whose notice is long enough to
write a checkpoint (they lose no work, only the restart and that write).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import duckdb
import pyarrow as pa

from gpuscout.core.catalog import Catalog, load_catalog
from gpuscout.core.clock import now_utc
from gpuscout.core.errors import DataError
from gpuscout.pipeline.measured.evidence import Evidence
from gpuscout.pipeline.measured.offers import (
    adjust_plans,
    offer_range,
    plan_key,
    uncertainty_notes,
)
from gpuscout.pipeline.profiles import dearest
from gpuscout.pipeline.recommend.candidates import candidates, sql_file
from gpuscout.pipeline.recommend.cost_range import cost_range
from gpuscout.pipeline.recommend.facts import use_facts
from gpuscout.pipeline.recommend.job_storage import job_storage
from gpuscout.pipeline.recommend.managed import managed_quotes
from gpuscout.pipeline.recommend.pair_costs import CostTerms, pair_costs, plan_rows
from gpuscout.pipeline.recommend.plans import (
    MIN_GPUS_FOR_MULTI_NODE,
    plan_shapes,
    plans_table,
)
from gpuscout.pipeline.recommend.pricing import Ranking, price_and_pick
from gpuscout.pipeline.recommend.reasons import Terms, charges, reasons, rejected_because
from gpuscout.pipeline.recommend.request import RecommendRequest
from gpuscout.pipeline.recommend.result import RankedOffer, Recommendation, RejectedOffer
from gpuscout.sizing.architectures import Architecture
from gpuscout.sizing.types import JobSpec

# Sequential write to local NVMe per machine, GB/s (datacenter NVMe drives write 2-4 GB/s;
# network volumes less): the pause each checkpoint costs, divided by the machines that write a
# sharded checkpoint at once. An assumption (no provider's storage throughput is sourced yet),
# stated in every checkpoint reason.
CHECKPOINT_WRITE_GBPS = 1.0
# Unexpected job interruptions per GPU-hour of a large synchronous training job: Llama 3 405B
# pre-training saw 419 unexpected interruptions in a 54-day snapshot on 16,384 H100 GPUs, ~78 %
# of them confirmed hardware (Llama Team, "The Llama 3 Herd of Models", arXiv:2407.21783,
# section 3.3.4). Measured on a cluster job (hosts, NICs, switches and GPUs together), it is
# applied to jobs that span several machines: it gives their on-demand runs an MTBF and adds to
# their spot interruptions. One machine's hardware MTBF at this rate (> 6,000 h) is left out.
HARDWARE_FAILURES_PER_GPU_HOUR = 419 / (16_384 * 54 * 24)
# Young/Daly intervals shorter than this are not used (the CLI's --checkpoint-every minimum).
MIN_CHECKPOINT_INTERVAL_S = 60.0
# A price observed longer ago than this is called out in the reasons.
PRICE_AGE_WARN_DAYS = 30
# The --explain list: at most this many cheaper offers that were rejected.
REJECTED_SHOWN = 20


def job_interrupts_per_hour(machine_rate: float, machines: int, gpus: int,
                            hw_rate_per_gpu_hour: float = HARDWARE_FAILURES_PER_GPU_HOUR,
                            ) -> float:
    """Interruptions per hour of a job on `machines`: losing any one machine stops it, so the
    spot rate of one machine counts once per machine, plus (across machines) hardware failures
    per GPU."""
    return machine_rate * machines + (hw_rate_per_gpu_hour * gpus if machines > 1 else 0.0)


def young_daly_interval_s(write_s: float, mtbf_s: float, run_s: float | None = None,
                          min_s: float = MIN_CHECKPOINT_INTERVAL_S) -> float:
    """The checkpoint interval sqrt(2·C·MTBF) (Young 1974; Daly 2006, first order), which
    minimizes the expected overhead C/τ + τ/(2·MTBF); at least `min_s`, at most the run."""
    tau = max(math.sqrt(2 * write_s * mtbf_s), min_s)
    return min(tau, max(run_s, min_s)) if run_s is not None else tau


def expected_run_s(compute_s: float, write_s: float, interval_s: float, losing_per_hour: float,
                   interrupts_per_hour: float, restart_s: float,
                   saved_per_hour: float = 0.0) -> float:
    """Expected wall seconds: checkpoint pauses, half an interval lost per interruption that
    loses work, a restart per interruption, a checkpoint write per notice that saved the work."""
    run = compute_s * (1 + write_s / interval_s)
    loss = (losing_per_hour * interval_s / 2 + interrupts_per_hour * restart_s
            + saved_per_hour * write_s) / 3600
    return run / (1 - loss)


def offer_filters(req: RecommendRequest) -> dict[str, object]:
    """The parameters of offers.sql (the offers a request may use)."""
    return {"providers": req.providers or None, "region": req.region, "spot_policy": req.spot}


def recommend(con: duckdb.DuckDBPyConnection, arch: Architecture, job: JobSpec,
              req: RecommendRequest, catalog: Catalog | None = None) -> Recommendation:
    catalog = catalog or load_catalog()
    found = candidates(con, use_facts(con), offer_filters(req))
    if not found.placements:
        raise DataError("no current offers match: run `gpuscout refresh` or widen "
                        "--provider/--region/--spot")
    storage = job_storage(arch, job, req.tokens, dataset_tokens=req.dataset_tokens,
                          storage_gb=req.storage_gb, keep_days=req.keep_days,
                          download_gb=req.download_gb)
    checkpoint_gb = storage.checkpoint_gb
    storage_bound, egress_bound = dearest("storage_usd_per_gb_month"), dearest(
        "egress_usd_per_gb")
    run = CostTerms(
        min_gpus_multi_node=MIN_GPUS_FOR_MULTI_NODE, max_hours=req.max_hours,
        checkpoint_s=None if req.checkpoint_every_min is None
        else req.checkpoint_every_min * 60.0,
        min_interval_s=MIN_CHECKPOINT_INTERVAL_S, restart_s=req.restart_s,
        storage_gb=storage.gb, egress_gb=storage.download_gb, keep_hours=storage.keep_hours,
        storage_bound=_rate(storage_bound), egress_bound=_rate(egress_bound),
        at_bound=req.pessimistic)
    terms = Terms(run=run, checkpoint_gb=checkpoint_gb, write_gbps=CHECKPOINT_WRITE_GBPS,
                  hw_failures_per_gpu_hour=HARDWARE_FAILURES_PER_GPU_HOUR, dtype=job.dtype,
                  stale_days=PRICE_AGE_WARN_DAYS, max_age_days=req.max_price_age_days,
                  commitment=req.commitment, max_commitment_months=req.max_commitment_months,
                  max_usd=req.max_usd, min_reliability=req.min_reliability, storage=storage,
                  storage_bound=storage_bound, egress_bound=egress_bound)
    plans = plan_shapes(arch, job, found.placements, req.tokens, catalog)
    evidence = Evidence.from_connection(con) if req.correction else Evidence.none()
    plans, adjusted = adjust_plans(plans, arch, job, req.framework, evidence, catalog,
                                   correction=req.correction, pessimistic=req.pessimistic)
    now = req.now or now_utc()
    plan_table = plans_table(plans, checkpoint_gb=checkpoint_gb,
                             write_gbps=CHECKPOINT_WRITE_GBPS,
                             hw_failures_per_gpu_hour=HARDWARE_FAILURES_PER_GPU_HOUR)
    costs = pair_costs(found.pairs, plan_table, plan_rows(found.pairs, plan_table), run)
    picked = price_and_pick(found, costs, Ranking(
        objective=req.objective, spot=req.spot, now=now, max_age_days=req.max_price_age_days,
        limit=req.limit, rejected_shown=REJECTED_SHOWN, commitment=req.commitment,
        max_commitment_months=req.max_commitment_months, max_usd=req.max_usd,
        min_reliability=req.min_reliability, balanced_slack=req.balanced_slack,
        require=req.require))
    with _registered(con, plans=plan_table, pair_costs=costs, shown=picked.shown):
        rows = _fetch(con, sql_file("shown"), {"now": now.isoformat()})
    ranked, rejected = [], []
    for row in rows:
        why = row.pop("why")
        if row["part"] == "ranked":
            adj = adjusted.get(plan_key(row))
            fix = [adj.correction.text] if adj and adj.correction else []
            ranked.append(RankedOffer.model_validate({
                **row, "reasons": [*reasons(row, why, terms), *fix],
                "range": cost_range(row, why, offer_range(row, why, adj) if adj else None),
                "charges": charges(row, why)}))
        else:
            rejected.append(RejectedOffer.model_validate(
                {**row, "rejected_because": rejected_because(row, why, terms)}))
    totals = {"offers_evaluated": found.offers.num_rows, **found.replayed,
              "too_old_offers": picked.too_old_offers}
    return Recommendation(
        model_id=arch.model_id, method=job.method, tokens=req.tokens,
        storage_gb=round(run.storage_gb, 2), checkpoint_gb=round(checkpoint_gb, 3),
        egress_gb=round(run.egress_gb, 3),
        storage_items={k: round(v, 3) for k, v in storage.items.items()},
        keep_days=storage.keep_days, required=[r.value for r in req.require],
        shapes_evaluated=len(plans),
        offers_evaluated=found.offers.num_rows, ranked=ranked, rejected_cheaper=rejected,
        price_notes=price_notes(totals, req.max_price_age_days, req),
        set_aside=picked.set_aside, folded_offers=picked.collapsed,
        uncertainty_notes=uncertainty_notes(ranked, req.objective, req.pessimistic),
        managed=managed_quotes(arch.model_id, arch.total_params / 1e9, job.method, req.tokens),
    )


def _rate(bound: Any) -> float:
    """An unknown price's bound as a number (none sourced: 0, and the reasons say so)."""
    return 0.0 if bound is None or bound.value is None else float(bound.value)


@contextmanager
def _registered(con: duckdb.DuckDBPyConnection, **tables: pa.Table) -> Iterator[None]:
    """The Arrow tables under their names on `con` for the queries inside."""
    for name, table in tables.items():
        con.register(name, table)
    try:
        yield
    finally:
        for name in tables:
            con.unregister(name)


def _fetch(con: duckdb.DuckDBPyConnection, sql: str,
           params: dict[str, object]) -> list[dict[str, Any]]:
    """The rows of a query that returns a few: run once (a relation is bound first, which
    costs as much as planning this query again), as the Python values Arrow would give."""
    cursor = con.execute(sql, params)
    names = [d[0] for d in cursor.description or ()]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def price_notes(totals: dict[str, Any], max_age_days: float | None,
                req: RecommendRequest | None = None) -> list[str]:
    """What the user must know about the prices behind the ranking: replayed captures (with
    their dates), the offers the age limit set aside, and how the ranking was asked for."""
    notes = []
    if req is not None and req.objective == "balanced":
        notes.append(f"--objective balanced: the cheapest of the offers within "
                     f"{100 * req.balanced_slack:.0f} % of the fastest one's hours first")
    if req is not None and req.commitment != "none":
        limit = ("" if req.commitment == "allow" else
                 f" of at most {req.max_commitment_months:g} months")
        notes.append(f"--commitment {req.commitment}: committed offers{limit} are ranked at "
                     "the cost of their whole minimum term")
    if totals["replayed_offers"]:
        first, last = totals["replayed_from"], totals["replayed_to"]
        span = f" recorded {first:%Y-%m-%d} to {last:%Y-%m-%d}" if first and last else ""
        providers = totals["replayed_providers"] or []
        notes.append(f"{totals['replayed_offers']} offers of {len(providers)} providers are "
                     f"replayed captures{span}: historical prices, not today's (a live "
                     "`gpuscout refresh` reads current ones)")
    if max_age_days is not None and totals["too_old_offers"]:
        notes.append(f"{totals['too_old_offers']} offers with prices older than "
                     f"{max_age_days:g} days were set aside (--max-price-age; --explain lists "
                     "the cheaper ones)")
    return notes
