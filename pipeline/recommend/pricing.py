"""Every candidate offer priced for one run and ranked, column-wise in Arrow.

`pair_costs.py` has priced each pricing pair for the run, all but the hourly price; an offer's
whole-run cost is then its price per machine-hour × machines × charged seconds plus its pair's
storage and egress, which is a few Arrow kernels over the candidate columns (candidates.py)
rather than a query planned again per call. The charged seconds are the billed ones, and for a
committed offer at least its whole minimum term. The request's rules then set offers aside
(a term longer than the job unless commitments are allowed, --max-usd, --min-reliability),
offers that differ only by their host fold into one row, and the result is the rows shown: the
best `limit` (part 'ranked') and up to `rejected_shown` of those that cannot serve the run (part
'rejected'): set aside by a rule although their run alone would beat the winner, or cheaper by
the hour than the winner, so that `--explain` can say why they lost; with the count of offers
set aside per reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute

from gpuscout.core.models import TERM_UNIT_HOURS, TermUnit
from gpuscout.pipeline.profiles import REQUIREMENT_FACT, Requirement
from gpuscout.pipeline.recommend.candidates import Candidates
from gpuscout.pipeline.recommend.request import Commitment, Objective, SpotPolicy

# pyarrow generates its compute functions at import: the type checker cannot see them
pc: Any = pyarrow.compute

HOURS_PER_MONTH = TERM_UNIT_HOURS[TermUnit.MONTH]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# The ranking: what can be rented now first, spot first when preferred, under --objective
# balanced the offers within the slack of the fastest first, then the objective, the total,
# and a stable order ((provider, offer_key), which fact_id follows). Missing values (a
# rejected offer has no total) sort last, as in SQL.
BEST_ORDER = [("no_stock", "ascending", "at_end"), ("spot_last", "ascending", "at_end"),
              ("outside_slack", "ascending", "at_end"),
              ("objective_value", "ascending", "at_end"), ("total_usd", "ascending", "at_end"),
              ("fact_id", "ascending", "at_end")]
# The rejected offers shown: those only a rule of the request set aside although their run
# alone would beat the winner (a term longer than the job, a budget, a host's reliability,
# spot across machines without a published rate), the best would-be winners first; then those
# cheaper by the hour than the winner, the machines nearest to holding the job first (the most
# GPU memory, so a big machine that is not sold as a cluster rather than the smallest cards),
# then the cheapest.
RULE_ORDER = [("run_total_usd", "ascending", "at_end"), *BEST_ORDER]
REJECTED_ORDER = [("memory_gb", "descending", "at_end"),
                  ("price_usd_per_hour", "ascending", "at_end"), *BEST_ORDER]
# Why an offer was set aside, in the order the reasons are checked (the first that applies);
# `--require` comes last, so that its counts are the offers that would otherwise run: per name
# "--require NAME ✗" (its provider documents that it lacks it), then per name
# "--require NAME unknown" (no source says, or it is set per offer).
SET_ASIDE = ("pair", "never finishes", "over --max-hours", "price older than --max-price-age",
             "committed beyond the job", "committed beyond --commitment",
             "host below --min-reliability", "over --max-usd", "--require")
MISSING, UNKNOWN = "✗", "unknown"


@dataclass(frozen=True)
class Ranking:
    objective: Objective
    spot: SpotPolicy
    now: datetime
    max_age_days: float | None
    limit: int
    rejected_shown: int
    rule_shown: int = 10
    commitment: Commitment = "none"
    max_commitment_months: float | None = None
    max_usd: float | None = None
    min_reliability: float | None = None
    balanced_slack: float = 0.25
    require: tuple[Requirement, ...] = ()


@dataclass(frozen=True)
class Picked:
    shown: pa.Table  # SHOWN below
    too_old_offers: int
    set_aside: dict[str, int] = field(default_factory=dict)  # why -> offers, most first
    collapsed: int = 0  # ranked offers folded into a row of the same machine at another host


def epoch_s(when: datetime) -> float:
    """Seconds since 1970 as DuckDB's epoch() gives them (whole microseconds / 1e6)."""
    return ((when - EPOCH) // timedelta(microseconds=1)) / 1e6


def _false(n: int) -> pa.Array:
    return pa.array([False] * n, pa.bool_())


def _term_blocked(offers: pa.Table, expected: Any, how: Ranking) -> tuple[Any, Any]:
    """(beyond the job, beyond --commitment max-months): the committed offers set aside."""
    n = offers.num_rows
    term, committed = offers["term_s"], offers["committed"]
    if how.commitment == "allow":
        return _false(n), _false(n)
    if how.commitment == "max-months":
        assert how.max_commitment_months is not None
        limit = how.max_commitment_months * HOURS_PER_MONTH * 3600.0
        return _false(n), pc.fill_null(pc.and_(committed, pc.greater(term, limit)), False)
    return pc.fill_null(pc.and_(committed, pc.greater(term, expected)), False), _false(n)


def required_kind(requirement: Requirement | str, answer: str) -> str:
    """The set-aside count's key: "--require docker ✗", "--require ssh unknown"."""
    return f"--require {Requirement(requirement).value} {answer}"


def _requirement_flags(offers: pa.Table, require: tuple[Requirement, ...],
                       ) -> list[tuple[str, Any]]:
    """Per --require name, the offers whose provider documents that they lack it, then per
    name those where no source says (candidates.sql's facts of the offer)."""
    missing, unknown = [], []
    for req in require:
        value = offers[REQUIREMENT_FACT[req]]
        lacks = (pc.greater(value, 1) if req is Requirement.PER_SECOND_BILLING
                 else pc.invert(value))
        missing.append((required_kind(req, MISSING), pc.fill_null(lacks, False)))
        unknown.append((required_kind(req, UNKNOWN), pc.is_null(value)))
    return missing + unknown


def _why(flags: list[tuple[str, Any]], pair_kind: Any) -> Any:
    """Per offer, the first reason it was set aside (null: it runs)."""
    why = pa.scalar(None, pa.string())
    for name, flag in reversed(flags):
        why = pc.if_else(flag, pa.scalar(name), why)
    return pc.coalesce(pair_kind, why)


def price_and_pick(cands: Candidates, costs: pa.Table, how: Ranking) -> Picked:
    """Price every candidate by its pair's costs (pair_costs.py, in `cands.pairs` order) and
    pick the rows shown."""
    if costs.num_rows != cands.pairs.num_rows:
        raise ValueError(f"{costs.num_rows} pair costs for {cands.pairs.num_rows} pairs")
    offers, pair_rows = cands.offers, cands.pair_index
    n = offers.num_rows

    def of_pair(name: str, rows: Any = pair_rows) -> Any:
        return pc.take(costs[name], rows)

    price = offers["price_usd_per_machine_hour"]
    machines = pc.cast(of_pair("nodes"), pa.float64())
    billed = of_pair("billed_s")
    # a committed offer costs at least its whole term, on every machine
    charged = pc.if_else(pc.and_(offers["committed"], pc.is_valid(billed)),
                         pc.max_element_wise(billed, offers["term_s"], skip_nulls=True), billed)
    extras = pc.add(of_pair("storage_usd"), of_pair("egress_usd"))
    compute = pc.divide(pc.multiply(pc.multiply(price, machines), charged), 3600.0)
    total = pc.add(compute, extras)
    run_only = pc.add(pc.divide(pc.multiply(pc.multiply(price, machines), billed), 3600.0),
                      extras)
    if how.max_age_days is None:
        too_old = _false(n)
    else:
        age = pc.subtract(epoch_s(how.now), offers["seen_s"])
        too_old = pc.fill_null(pc.and_(pc.invert(offers["replayed"]),
                                       pc.greater(age, how.max_age_days * 86400)), False)
    beyond_job, beyond_limit = _term_blocked(offers, of_pair("expected_s"), how)
    required = _requirement_flags(offers, how.require)
    unreliable = (_false(n) if how.min_reliability is None else pc.fill_null(
        pc.less(offers["host_reliability"], how.min_reliability), False))
    over_budget = (_false(n) if how.max_usd is None
                   else pc.fill_null(pc.greater(total, how.max_usd), False))
    why = _why([("never finishes", pc.and_(pc.is_null(of_pair("reject_kind")),
                                           pc.is_null(of_pair("expected_s")))),
                ("over --max-hours", of_pair("too_slow")),
                ("price older than --max-price-age", too_old),
                ("committed beyond the job", beyond_job),
                ("committed beyond --commitment", beyond_limit),
                ("host below --min-reliability", unreliable),
                ("over --max-usd", over_budget), *required], of_pair("reject_kind"))
    rejected = pc.is_valid(why)
    # set aside by --require (not by a reason that comes first, such as not fitting)
    unmet = pc.fill_null(pc.starts_with(why, "--require "), False)
    hours = of_pair("expected_hours")
    outside = _false(n)
    if how.objective == "time":
        objective = hours
    else:
        objective = total
        if how.objective == "balanced":
            fastest = pc.min(pc.filter(hours, pc.invert(rejected))).as_py()
            if fastest is not None:
                outside = pc.fill_null(pc.greater(
                    hours, fastest * (1 + how.balanced_slack)), True)
    priced = pa.table({
        "fact_id": offers["fact_id"], "pair_row": pair_rows, "provider": offers["provider"],
        "price_usd_per_hour": price, "total_usd": total, "compute_usd": compute,
        "charged_s": charged, "run_total_usd": run_only, "too_old": too_old,
        "rejected": rejected, "why": why, "no_stock": offers["no_stock"],
        "spot_last": pc.not_equal(of_pair("pricing_model"), "spot") if how.spot == "prefer"
        else _false(n),
        "outside_slack": outside, "objective_value": objective, "same_as": offers["same_as"],
        "by_rule": pc.or_(pc.or_(pc.or_(pc.or_(pc.or_(beyond_job, beyond_limit), unreliable),
                                         over_budget), of_pair("unrated_spot")), unmet),
    })
    runnable, collapsed = _collapse(priced.filter(pc.invert(rejected)))
    best = _with_pair(_first(runnable, how.limit, BEST_ORDER), costs)
    rejected_rows = _with_pair(priced.filter(rejected), costs, "memory_gb")
    by_rule, cheaper = (rejected_rows.filter(rejected_rows["by_rule"]),
                        rejected_rows.filter(pc.invert(rejected_rows["by_rule"])))
    if best.num_rows:  # set aside by a rule of the request although the run alone would beat
        # the winner; cheaper by the hour than the winner; all of them when nothing runs
        winner = best["price_usd_per_hour"][0].as_py()
        winner_total = best["total_usd"][0].as_py()
        by_rule = by_rule.filter(pc.fill_null(pc.less(by_rule["run_total_usd"], winner_total),
                                              False))
        cheaper = cheaper.filter(pc.less(cheaper["price_usd_per_hour"], winner))
    rejected_rows = pa.concat_tables([
        _first(by_rule, how.rule_shown, RULE_ORDER),
        _first(cheaper, how.rejected_shown, REJECTED_ORDER)])
    od_total, od_price = _on_demand(priced, best, costs)
    columns = ["fact_id", "total_usd", "compute_usd", "charged_s", "run_total_usd", "too_old",
               "why", "provider", "gpu_id", "gpu_count", "nodes"]
    rows = []
    for part, table in (("ranked", best), ("rejected", rejected_rows)):
        extra = ["similar_offers", "price_low", "price_high"] if part == "ranked" else []
        for r in table.select(columns + extra).to_pylist():
            rows.append({**{c: r[c] for c in SHOWN.names if c in r}, "part": part,
                         "od_total_usd": od_total.get(_run_key(r)) if part == "ranked" else None,
                         "od_price_usd_per_hour": od_price.get(_run_key(r)[:3])
                         if part == "ranked" else None})
    shown = pa.Table.from_pylist([{**r, "ord": i} for i, r in enumerate(rows)], schema=SHOWN)
    old = priced.filter(too_old)
    placed = pc.is_null(of_pair("reject_reason", old["pair_row"]))
    counts = pc.value_counts(priced["why"].drop_null()).to_pylist()
    set_aside = dict(sorted(((c["values"], c["counts"]) for c in counts),
                            key=lambda kv: (-kv[1], kv[0])))
    return Picked(shown=shown, too_old_offers=int(pc.sum(placed).as_py() or 0),
                  set_aside=set_aside, collapsed=collapsed)


def _collapse(runnable: pa.Table) -> tuple[pa.Table, int]:
    """The runnable offers with those that differ only by their host folded into the best of
    them (candidates.sql's `same_as`), which carries how many there are and their hourly price
    range; and how many were folded."""
    ordered = runnable.take(pc.sort_indices(runnable, BEST_ORDER))
    ordered = ordered.append_column("position", pa.array(range(ordered.num_rows), pa.int64()))
    groups = ordered.group_by("same_as").aggregate([
        ("position", "min"), ("position", "count"), ("price_usd_per_hour", "min"),
        ("price_usd_per_hour", "max")])
    firsts = ordered.take(groups["position_min"])
    kept = (firsts.append_column("similar_offers", pc.cast(groups["position_count"], pa.int32()))
            .append_column("price_low", groups["price_usd_per_hour_min"])
            .append_column("price_high", groups["price_usd_per_hour_max"]))
    return kept, runnable.num_rows - kept.num_rows


SHOWN = pa.schema([("fact_id", pa.int64()), ("part", pa.string()), ("total_usd", pa.float64()),
                   ("compute_usd", pa.float64()), ("charged_s", pa.float64()),
                   ("run_total_usd", pa.float64()), ("too_old", pa.bool_()),
                   ("why", pa.string()), ("similar_offers", pa.int32()),
                   ("price_low", pa.float64()), ("price_high", pa.float64()),
                   ("od_total_usd", pa.float64()), ("od_price_usd_per_hour", pa.float64()),
                   ("ord", pa.int32())])


def _first(table: pa.Table, k: int, order: list[tuple[str, str, str]]) -> pa.Table:
    """The first `k` rows of `table` in `order` (nulls last), in that order."""
    if table.num_rows > k:
        table = table.take(pc.select_k_unstable(table, k, order))
    return table.take(pc.sort_indices(table, order))


PAIR_KEY = ("pricing_model", "gpu_id", "gpu_count", "nodes")


def _with_pair(table: pa.Table, costs: pa.Table, *names: str) -> pa.Table:
    """`table` (a few of the priced offers) with its pairs' placement and pricing model, and
    `names` of its pairs' costs."""
    rows = table["pair_row"]
    for name in (*PAIR_KEY, "runs", *names):
        table = table.append_column(name, pc.take(costs[name], rows))
    return table


def _run_key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["provider"], row["gpu_id"], row["gpu_count"], row["nodes"])


def _on_demand(priced: pa.Table, best: pa.Table, costs: pa.Table) -> tuple[dict, dict]:
    """For the spot offers ranked, the same provider's on-demand offers of the same machines:
    the cheapest whole run on as many machines (of those that run), the lowest hourly price."""
    spot = best.filter(pc.equal(best["pricing_model"], "spot"))
    if not spot.num_rows:
        return {}, {}
    od = _with_pair(priced.filter(pc.is_in(priced["provider"], value_set=spot["provider"])),
                    costs)
    od = od.filter(pc.equal(od["pricing_model"], "on_demand"))
    totals = (od.filter(od["runs"]).group_by(["provider", "gpu_id", "gpu_count", "nodes"])
              .aggregate([("total_usd", "min")]).to_pylist())
    prices = (od.group_by(["provider", "gpu_id", "gpu_count"])
              .aggregate([("price_usd_per_hour", "min")]).to_pylist())
    return ({_run_key(r): r["total_usd_min"] for r in totals},
            {(r["provider"], r["gpu_id"], r["gpu_count"]): r["price_usd_per_hour_min"]
             for r in prices})
