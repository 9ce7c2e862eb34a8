"""Every pricing pair priced for one fine-tuning run, all but the hourly price, column-wise.

A pair (pairs.sql) is a machine placement with the terms of its price that no job changes; its
plan (plans.py) says whether and how the job fits, on how many machines, how long it computes,
how long one checkpoint takes to write and how often its GPUs fail. This adds checkpoints,
interruptions, billing granularity, storage and egress (the formulas of rank.py's docstring,
in the same order of operations as SQL would do them, so a price is the same to the last bit),
over the ~1 k pairs of a warehouse in a few dozen Arrow kernels. pricing.py then prices each
offer as its hourly price × machines × billed seconds plus its pair's storage and egress.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute

# pyarrow generates its compute functions at import: the type checker cannot see them
pc: Any = pyarrow.compute

# The columns a plan is matched by: the placement (pairs.sql's whole_gpus is the GPUs of one
# machine as a whole number, as plans_table's gpus_per_node).
PAIR_PLACEMENT = ("gpu_id", "whole_gpus", "fabric", "fabric_gbps", "max_nodes", "min_nodes",
                  "variant_assumed")
PLAN_PLACEMENT = ("gpu_id", "gpus_per_node", "fabric", "fabric_gbps", "max_nodes",
                  "min_nodes", "variant_assumed")
NO_PLAN = "no sizing plan for this machine shape"
# Spot across machines is ranked only on a rate its provider publishes: any machine's
# interruption stops the whole job, so a stand-in or assumed rate, times the machines, is no
# basis for a promise (--explain shows these offers).
RANKED_SPOT_BASIS = "published"


@dataclass(frozen=True)
class CostTerms:
    """What the request adds to a pair's price."""

    min_gpus_multi_node: int  # only machines this full are placed on several
    max_hours: float | None
    checkpoint_s: float | None  # --checkpoint-every in seconds; None: Young/Daly per pair
    min_interval_s: float
    restart_s: float
    storage_gb: float
    egress_gb: float
    keep_hours: float = 0.0  # storage kept (and charged) after the run
    # an unknown storage or egress price is counted from nothing up to these (USD per GB-month,
    # per GB: the dearest sourced rates); `at_bound` charges it at the bound in the total
    storage_bound: float = 0.0
    egress_bound: float = 0.0
    at_bound: bool = False


def sql_round(x: float | None, digits: int) -> float | None:
    """round(x, digits) as DuckDB computes it: the exact binary value rounded, halves away from
    zero (2.675 is 2.67499… in binary: 2.67; -2.5: -3)."""
    if x is None:
        return None
    exact = Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return float(exact)


def plan_rows(pairs: pa.Table, plans: pa.Table) -> pa.Array:
    """Per pair, the row of its plan in `plans` (null: none), matched on the placement with
    missing values equal, as SQL's IS NOT DISTINCT FROM (a missing GPU matches nothing)."""
    index = {tuple(r[c] for c in PLAN_PLACEMENT): i
             for i, r in enumerate(plans.select(list(PLAN_PLACEMENT)).to_pylist())}
    return pa.array([None if r["gpu_id"] is None else
                     index.get(tuple(r[c] for c in PAIR_PLACEMENT))
                     for r in pairs.select(list(PAIR_PLACEMENT)).to_pylist()], pa.int32())


def _greatest(*values: Any) -> Any:
    """SQL's greatest(): the largest of the values present."""
    return pc.max_element_wise(*values, skip_nulls=True)


def _least(*values: Any) -> Any:
    return pc.min_element_wise(*values, skip_nulls=True)


def pair_costs(pairs: pa.Table, plans: pa.Table, rows: pa.Array, t: CostTerms) -> pa.Table:
    """The run's costs of every pair (one row per row of `pairs`, in its order); `rows` is
    `plan_rows(pairs, plans)`."""
    def plan(name: str) -> Any:
        return pc.take(plans[name], rows)

    nodes, feasible, reason = plan("nodes"), plan("feasible"), plan("reason")
    hours, write_s = plan("hours"), plan("checkpoint_write_s")
    hw_rate, usable = plan("hw_interrupts_per_hour"), plan("usable_gb_per_gpu")
    no_plan = pa.array([NO_PLAN] * pairs.num_rows, pa.string())
    none = pa.scalar(None, pa.string())
    plan_reject = pc.if_else(pc.is_null(feasible), no_plan, pc.if_else(feasible, none, reason))
    spot = pc.equal(pairs["pricing_model"], "spot")
    unrated = pc.fill_null(pc.and_(pc.and_(spot, pc.greater(nodes, 1)), pc.not_equal(
        pc.fill_null(pairs["interruption_basis"], ""), RANKED_SPOT_BASIS)), False)
    spot_reject = pc.if_else(unrated, pc.binary_join_element_wise(
        "spot on ", pc.cast(nodes, pa.string()),
        " machines: no interruption rate published for this provider (a stand-in or an "
        "assumed one only), and any machine's interruption stops the job; spot is ranked on "
        "one machine", ""), none)
    # an offer that cannot run the job at all; multi-machine spot without a published rate is
    # priced all the same (--explain shows what it would cost) but not ranked
    cannot = pc.coalesce(pairs["offer_reject"], plan_reject)
    reject = pc.coalesce(cannot, spot_reject)
    # the short name of the reason, for the count of offers set aside
    reject_kind = pc.coalesce(
        pairs["offer_reject_kind"],
        pc.if_else(pc.is_null(feasible), pa.scalar("no sizing plan"), pc.if_else(
            feasible, none, pc.if_else(pc.starts_with(reason, "memory wall"),
                                       pa.scalar("does not fit"),
                                       pa.scalar("GPU cannot run the job")))),
        pc.if_else(unrated, pa.scalar("multi-machine spot without a published rate"), none))
    # the reasons then add that the provider names no fabric to place the machine on more
    no_fabric_note = pc.and_(pc.and_(pc.and_(pc.is_null(pairs["offer_reject"]),
                                             pc.invert(pc.fill_null(feasible, True))),
                                     pc.starts_with(reason, "memory wall")),
                             pc.and_(pc.is_null(pairs["fabric"]),
                                     pc.greater_equal(pairs["whole_gpus"],
                                                      t.min_gpus_multi_node)))
    compute_s = pc.multiply(hours, 3600.0)
    # an interruption of any machine stops the whole job
    spot_rate = pc.multiply(pairs["machine_interrupts_per_hour"], pc.cast(nodes, pa.float64()))
    # a notice long enough to write a checkpoint saves the work since the last one
    notice_saves = pc.fill_null(pc.and_(spot, pc.greater_equal(
        pc.cast(pairs["spot_notice_s"], pa.float64()), write_s)), False)
    rate = pc.add(hw_rate, spot_rate)
    losing = pc.add(hw_rate, pc.if_else(notice_saves, 0.0, spot_rate))
    # Young (1974) / Daly (2006): the interval sqrt(2·C·MTBF) minimizes C/τ + τ/(2·MTBF)
    young_daly = pc.if_else(pc.greater(losing, 0.0), pc.sqrt(pc.divide(
        pc.multiply(pc.multiply(write_s, 2.0), 3600.0), losing)), pa.scalar(None, pa.float64()))
    floor_run = _greatest(compute_s, t.min_interval_s)
    if t.checkpoint_s is not None:
        interval = pa.array([t.checkpoint_s] * pairs.num_rows, pa.float64())
    else:  # nothing that loses work: one checkpoint, at the end
        interval = pc.if_else(pc.is_null(young_daly), floor_run,
                              _least(_greatest(young_daly, t.min_interval_s), floor_run))
    # checkpoint writes pause training for write_s every interval of compute
    checkpoint_total = pc.divide(pc.multiply(compute_s, write_s), interval)
    run_s = pc.add(compute_s, checkpoint_total)
    # share of wall time lost: half an interval of work per losing interruption, a restart per
    # interruption, an extra checkpoint per notice that saved the work
    loss = pc.divide(pc.add(pc.add(pc.divide(pc.multiply(losing, interval), 2.0),
                                   pc.multiply(rate, t.restart_s)),
                            pc.if_else(notice_saves, pc.multiply(spot_rate, write_s), 0.0)),
                     3600.0)
    expected = pc.if_else(pc.and_(pc.is_null(cannot), pc.less(loss, 0.9)),
                          pc.divide(run_s, pc.subtract(1.0, loss)),
                          pa.scalar(None, pa.float64()))
    increment = pairs["increment_s"]
    billed = _greatest(pc.multiply(pc.ceil(pc.divide(expected, increment)), increment),
                       pairs["min_charge_s"])
    expected_hours = pc.divide(expected, 3600.0)
    too_slow = (pa.array([False] * pairs.num_rows, pa.bool_()) if t.max_hours is None
                else pc.fill_null(pc.greater(expected_hours, t.max_hours), False))
    runs = pc.and_(pc.and_(pc.is_null(reject), pc.is_valid(expected)), pc.invert(too_slow))
    storage = _storage(pairs, expected, t)
    egress = _egress(pairs, t)
    whole = pc.fill_null(pc.cast(pairs["whole_gpus"], pa.float64()), 0.0)
    rounded = pa.array([sql_round(u, 1) for u in usable.to_pylist()], pa.float64())
    return pa.table({
        "pair_id": pairs["pair_id"], "plan_id": plan("plan_id"),
        "gpu_id": pairs["gpu_id"], "gpu_count": pairs["gpu_count"],
        "pricing_model": pairs["pricing_model"], "nodes": nodes,
        "usable_gb_per_gpu": usable, "reject_reason": reject, "reject_kind": reject_kind,
        "unrated_spot": unrated,
        "no_fabric_note": no_fabric_note,
        "compute_s": compute_s, "write_s": write_s, "hw_interrupts_per_hour": hw_rate,
        "machine_interrupts_per_hour": pairs["machine_interrupts_per_hour"],
        "spot_interrupts_per_hour": spot_rate, "notice_saves": notice_saves,
        "interrupts_per_hour": rate, "losing_per_hour": losing, "young_daly_s": young_daly,
        "interval_s": interval, "checkpoint_total_s": checkpoint_total, "run_s": run_s,
        "loss_share": loss, "expected_s": expected,
        "expected_interruptions": pc.divide(pc.multiply(expected, rate), 3600.0),
        "billed_s": billed, **storage, **egress,
        "expected_hours": expected_hours, "too_slow": too_slow, "runs": runs,
        "rejected": pc.invert(runs),
        # how near the machine comes to holding the job: the rejected offers shown are the
        # largest first
        "memory_gb": pc.multiply(whole, pc.fill_null(rounded, 0.0)),
    })



def _ends(name: str, known: Any, low: Any, high: Any, t: CostTerms) -> dict[str, Any]:
    """A charge's two ends (equal where its rate is known), the one the total counts, and
    whether its rate is unknown."""
    return {f"{name}_low_usd": low, f"{name}_high_usd": high,
            f"{name}_usd": high if t.at_bound else low,
            f"{name}_rate_unknown": pc.invert(known)}


def _storage(pairs: pa.Table, expected: Any, t: CostTerms) -> dict[str, Any]:
    """The run's storage for its expected wall time (stops and restarts included) and the
    days it is kept after: nothing where the provider keeps nothing beyond the machine's own
    disk (in the hourly price); an unknown rate from nothing up to the bound."""
    rate = pairs["storage_usd_per_gb_month"]
    kept_s = pc.add(expected, t.keep_hours * 3600.0)

    def cost(per_gb_month: Any) -> Any:
        return pc.divide(pc.divide(pc.multiply(pc.multiply(t.storage_gb, per_gb_month),
                                               kept_s), 3600.0), 730.0)

    none = pc.fill_null(pc.equal(pairs["persistent_storage"], False), False)
    known = pc.or_(pc.is_valid(rate), none)
    at_rate = pc.if_else(none, 0.0, cost(rate))
    nothing = pc.multiply(kept_s, 0.0)  # null, as the rest, where the run has no time
    return {"storage_hours": pc.divide(kept_s, 3600.0), "storage_none": none,
            **_ends("storage", known, pc.if_else(known, at_rate, nothing),
                    pc.if_else(known, at_rate, cost(t.storage_bound)), t)}


def _egress(pairs: pa.Table, t: CostTerms) -> dict[str, Any]:
    """The download at the end: the GB beyond the provider's free monthly allowance at its rate
    (the allowance is counted as this run's alone); an unknown rate from nothing up to the
    bound, on every GB."""
    rate = pairs["egress_usd_per_gb"]
    billable = pc.max_element_wise(pc.subtract(t.egress_gb, pairs["egress_free_gb_month"]), 0.0)
    known = pc.is_valid(rate)
    at_rate = pc.multiply(billable, rate)
    n = pairs.num_rows
    return {"egress_billable_gb": billable,
            **_ends("egress", known, pc.if_else(known, at_rate, pa.array([0.0] * n)),
                    pc.if_else(known, at_rate, pa.array([t.egress_gb * t.egress_bound] * n)),
                    t)}
