"""A ranked offer's cost range with what its provider does not publish counted in.

The range of the estimate (pipeline/measured/offers.py) spans the run's hours. Its cost is
priced here at each end as the offer bills: the low end at the fast end of the hours, with an
unknown billing increment taken as per second and unknown storage and egress prices as nothing;
the high end at the slow end, with an unknown increment taken as hourly and unknown prices at
the dearest rate any provider's profile states (pair_costs.py's `*_low_usd` / `*_high_usd`). So
an unknown fact widens the range instead of counting as free.
"""

from __future__ import annotations

import math
from typing import Any

from gpuscout.pipeline.measured.offers import OfferRange
from gpuscout.sizing.uncertainty import Range

HOURLY_S = 3600.0


def _charged_s(hours: float, increment_s: float, minimum_s: float,
               term_s: float | None) -> float:
    """Seconds charged for `hours`: rounded up to the increment (the tiny float error of a
    whole number of increments is not a further one), at least the minimum and the term."""
    billed = max(math.ceil(round(hours * 3600 / increment_s, 9)) * increment_s, minimum_s)
    return max(billed, term_s or 0.0)


def run_cost(row: dict[str, Any], why: dict[str, Any], hours: float, end: str) -> float:
    """The whole run's cost at `hours`, with the unknowns at their `end` ("low" or "high")."""
    increment = why["billing_increment_s"]
    if increment is None:
        increment = 1.0 if end == "low" else HOURLY_S
    term = why["committed_term_s"] if row["term_kind"] == "committed" else None
    charged = _charged_s(hours, float(increment), float(why["min_charge_s"] or 0), term)
    compute = why["price_usd_per_machine_hour"] * row["nodes"] * charged / 3600
    storage = why[f"storage_{end}_usd"] or 0.0
    kept = why["storage_hours"]
    if kept:  # the storage priced for the expected hours and the days kept, at these hours
        storage *= (hours + kept - why["expected_hours"]) / kept
    return compute + storage + (why[f"egress_{end}_usd"] or 0.0)


def unknowns(why: dict[str, Any]) -> list[str]:
    """The charges whose rate the offer's provider does not publish."""
    return [name for name, unknown in (
        ("billing increment", why["billing_increment_s"] is None),
        ("storage price", why["storage_rate_unknown"]),
        ("egress price", why["egress_rate_unknown"])) if unknown]


def cost_range(row: dict[str, Any], why: dict[str, Any],
               estimate: OfferRange | None) -> OfferRange | None:
    """The offer's range with its cost priced at both ends (None: no range and nothing
    unknown). The total stays inside it."""
    missing = unknowns(why)
    if estimate is None and not missing:
        return None
    total, hours = row["total_usd"], row["expected_hours"]
    if estimate is None:
        estimate = OfferRange(tokens_per_s=Range(low=row["tokens_per_s"],
                                                 high=row["tokens_per_s"]),
                              expected_hours=Range(low=hours, high=hours),
                              total_usd=Range(low=total, high=total),
                              basis="the estimate's hours")
    span = estimate.expected_hours
    cost = Range(low=min(run_cost(row, why, span.low, "low"), total),
                 high=max(run_cost(row, why, span.high, "high"), total))
    basis = estimate.basis
    if missing:
        basis += (f"; the cost counts the {', '.join(missing)} its provider does not publish "
                  "from the cheapest case (per second, nothing) up to the dearest (hourly, "
                  "the dearest sourced rate)")
    return estimate.model_copy(update={"total_usd": cost, "basis": basis})
