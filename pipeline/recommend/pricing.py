"""Every candidate offer priced for one run and ranked, column-wise in Arrow.

`pair_costs.py` has priced each pricing pair for the run, all but the hourly price; an offer's
whole-run cost is then its hourly price × machines × billed seconds plus its pair's storage and
egress, which is a few Arrow kernels over the candidate columns (candidates.py) rather than a
query planned again per call. The result is the rows shown: the best `limit` (part 'ranked')
and up to `rejected_shown` of those that cannot serve the run (part 'rejected'): cheaper by the
hour than the winner, the most GPU memory first, so that `--explain` can say why a cheaper offer
lost; with the totals over every offer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute

from gpuscout.pipeline.recommend.candidates import Candidates
from gpuscout.pipeline.recommend.request import Objective, SpotPolicy

# pyarrow generates its compute functions at import: the type checker cannot see them
pc: Any = pyarrow.compute

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# The ranking: what can be rented now first, spot first when preferred, then the objective,
# the total, and a stable order ((provider, offer_key), which fact_id follows).
# Missing values (a rejected offer has no total) sort last, as in SQL.
BEST_ORDER = [("no_stock", "ascending", "at_end"), ("spot_last", "ascending", "at_end"),
              ("objective_value", "ascending", "at_end"), ("total_usd", "ascending", "at_end"),
              ("fact_id", "ascending", "at_end")]
# The rejected offers shown: the machines nearest to holding the job (the most GPU memory, so a
# big machine that is not sold as a cluster rather than the smallest cards), then the cheapest.
REJECTED_ORDER = [("memory_gb", "descending", "at_end"),
                  ("price_usd_per_hour", "ascending", "at_end"), *BEST_ORDER]


@dataclass(frozen=True)
class Ranking:
    objective: Objective
    spot: SpotPolicy
    now: datetime
    max_age_days: float | None
    limit: int
    rejected_shown: int


@dataclass(frozen=True)
class Picked:
    shown: pa.Table  # fact_id, part, ord, total_usd, too_old, od_total_usd, od_price_usd_per_hour
    too_old_offers: int


def epoch_s(when: datetime) -> float:
    """Seconds since 1970 as DuckDB's epoch() gives them (whole microseconds / 1e6)."""
    return ((when - EPOCH) // timedelta(microseconds=1)) / 1e6


def price_and_pick(cands: Candidates, costs: pa.Table, how: Ranking) -> Picked:
    """Price every candidate by its pair's costs (pair_costs.py, in `cands.pairs` order) and
    pick the rows shown."""
    if costs.num_rows != cands.pairs.num_rows:
        raise ValueError(f"{costs.num_rows} pair costs for {cands.pairs.num_rows} pairs")
    offers, pair_rows = cands.offers, cands.pair_index

    def of_pair(name: str, rows: Any = pair_rows) -> Any:
        return pc.take(costs[name], rows)

    price = offers["price_usd_per_hour"]
    compute = pc.divide(pc.multiply(pc.multiply(price, pc.cast(of_pair("nodes"), pa.float64())),
                                    of_pair("billed_s")), 3600.0)
    total = pc.add(pc.add(compute, of_pair("storage_usd")), of_pair("egress_usd"))
    if how.max_age_days is None:
        too_old = pa.array([False] * offers.num_rows, pa.bool_())
    else:
        age = pc.subtract(epoch_s(how.now), offers["seen_s"])
        too_old = pc.fill_null(pc.and_(pc.invert(offers["replayed"]),
                                       pc.greater(age, how.max_age_days * 86400)), False)
    if how.objective == "cost":
        objective = total
    else:
        hours = of_pair("expected_hours")
        objective = hours if how.objective == "time" else pc.multiply(total, hours)
    priced = pa.table({
        "fact_id": offers["fact_id"], "pair_row": pair_rows, "provider": offers["provider"],
        "price_usd_per_hour": price, "total_usd": total, "too_old": too_old,
        "rejected": pc.or_(of_pair("rejected"), too_old), "no_stock": offers["no_stock"],
        "spot_last": pc.not_equal(of_pair("pricing_model"), "spot") if how.spot == "prefer"
        else pa.array([False] * offers.num_rows, pa.bool_()),
        "objective_value": objective,
    })
    best = _with_pair(_first(priced.filter(pc.invert(priced["rejected"])), how.limit,
                             BEST_ORDER), costs)
    rejected = priced.filter(priced["rejected"])
    if best.num_rows:  # cheaper by the hour than the winner; all of them when nothing runs
        winner = best["price_usd_per_hour"][0].as_py()
        rejected = rejected.filter(pc.less(rejected["price_usd_per_hour"], winner))
    rejected = _first(_with_pair(rejected, costs, "memory_gb"), how.rejected_shown,
                      REJECTED_ORDER)
    od_total, od_price = _on_demand(priced, best, costs)
    rows = [{"fact_id": r["fact_id"], "part": part, "total_usd": r["total_usd"],
             "too_old": r["too_old"],
             "od_total_usd": od_total.get(_run_key(r)) if part == "ranked" else None,
             "od_price_usd_per_hour": od_price.get(_run_key(r)[:3]) if part == "ranked"
             else None}
            for part, table in (("ranked", best), ("rejected", rejected))
            for r in table.select(["fact_id", "total_usd", "too_old", "provider", "gpu_id",
                                   "gpu_count", "nodes"]).to_pylist()]
    shown = pa.Table.from_pylist([{**r, "ord": i} for i, r in enumerate(rows)], schema=SHOWN)
    old = priced.filter(too_old)
    placed = pc.is_null(of_pair("reject_reason", old["pair_row"]))
    return Picked(shown=shown, too_old_offers=int(pc.sum(placed).as_py() or 0))


SHOWN = pa.schema([("fact_id", pa.int64()), ("part", pa.string()), ("total_usd", pa.float64()),
                   ("too_old", pa.bool_()), ("od_total_usd", pa.float64()),
                   ("od_price_usd_per_hour", pa.float64()), ("ord", pa.int32())])


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
