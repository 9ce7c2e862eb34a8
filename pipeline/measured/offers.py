"""The user's runs and the calibration's spread on every machine a recommendation sizes.

A recommendation sizes the job once per machine shape (pipeline/recommend/plans.py). Each
feasible plan is corrected here by the user's runs of its GPU, framework and method
(`evidence.py`; never on another GPU or stack), and, with `pessimistic`, moved to the slow end
of its range, before any offer is priced: the ranking then orders what it would cost at that
end. Each ranked offer gets the range of its tokens/s, hours and total cost, and
`overlap_note` says when the best offer's range overlaps the next ones' on another machine
(the same machine at another price shares the model's error, so its order stands).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from gpuscout.core.catalog import Catalog
from gpuscout.pipeline.measured.evidence import Evidence
from gpuscout.sizing.architectures import Architecture
from gpuscout.sizing.plan import NodePlan
from gpuscout.sizing.types import JobSpec
from gpuscout.sizing.uncertainty import Correction, Range

PlanKey = tuple[str, int, int]  # GPU, GPUs per machine, machines
OVERLAP_CHECKED = 5  # the offers after the best that the overlap note looks at


class OfferRange(BaseModel):
    """The span of one ranked offer's figures: the estimate's uncertainty carried through."""

    model_config = ConfigDict(frozen=True)

    tokens_per_s: Range
    expected_hours: Range
    total_usd: Range
    basis: str


@dataclass(frozen=True)
class PlanAdjustment:
    factor: float  # applied to the plan's tokens/s: the correction, times the slow end
    low: float  # the range's ends as multipliers of the priced tokens/s
    high: float
    correction: Correction | None
    basis: str


def adjust_plans(plans: list[tuple[dict[str, Any], NodePlan]], arch: Architecture,
                 spec: JobSpec, framework: str, evidence: Evidence, catalog: Catalog, *,
                 correction: bool = True, pessimistic: bool = False,
                 ) -> tuple[list[tuple[dict[str, Any], NodePlan]], dict[PlanKey, PlanAdjustment]]:
    """The plans with their hours corrected (and, `pessimistic`, at the slow end), and per
    machine shape what was done and the range left."""
    out: list[tuple[dict[str, Any], NodePlan]] = []
    done: dict[PlanKey, PlanAdjustment] = {}
    for key, plan in plans:
        if not plan.feasible or plan.hours is None or plan.tokens_per_s is None:
            out.append((key, plan))
            continue
        shape = plan.shape
        on_plan = spec.model_copy(update={"gpus": shape.gpus,
                                          "sharding": plan.sharding or spec.sharding})
        verdict = evidence.verdict(arch, on_plan, framework, catalog.gpu(shape.gpu_id),
                                   plan.bound, plan.tokens_per_s)
        fixed = correction and verdict.speed is not None
        low, high = verdict.speed_factors() if fixed else verdict.spread.factors()
        slow = low if pessimistic else 1.0
        factor = (verdict.factor if fixed else 1.0) * slow
        basis = (verdict.correction.text if fixed and verdict.correction else
                 f"the calibration's spread in {verdict.spread.regime} "
                 f"({verdict.spread.rows} rows)")
        done.setdefault((shape.gpu_id, shape.gpus_per_node, shape.nodes), PlanAdjustment(
            factor=factor, low=low / slow, high=high / slow,
            correction=verdict.correction if fixed else None, basis=basis))
        if factor != 1.0:
            plan = plan.model_copy(update={"hours": round(plan.hours / factor, 3),
                                           "tokens_per_s": round(plan.tokens_per_s * factor, 1)})
        out.append((key, plan))
    return out, done


class _Priced(Protocol):
    gpu_id: str
    gpus_per_node: int
    nodes: int
    range: OfferRange | None


def plan_key(row: dict[str, Any]) -> PlanKey:
    return row["gpu_id"], row["gpus_per_node"], row["nodes"]


def offer_range(row: dict[str, Any], why: dict[str, Any], adj: PlanAdjustment) -> OfferRange:
    """A ranked offer's range: its hours at the range's ends, billed as the offer bills
    (its increment, else hourly, and its minimum charge), with storage for as long."""
    hours, total = row["expected_hours"], row["total_usd"]
    increment = why.get("billing_increment_s") or 3600.0
    minimum = why.get("min_charge_s") or 0.0

    def cost(h: float) -> float:
        billed = max(math.ceil(round(h * 3600 / increment, 9)) * increment, minimum)
        storage = row["storage_usd"] * h / hours if hours else 0.0
        return row["price_usd_per_hour"] * row["nodes"] * billed / 3600 + storage \
            + row["egress_usd"]

    fast, slow = hours / adj.high, hours / adj.low
    return OfferRange(
        tokens_per_s=Range(low=row["tokens_per_s"] * adj.low,
                           high=row["tokens_per_s"] * adj.high),
        expected_hours=Range(low=fast, high=slow),
        total_usd=Range(low=min(cost(fast), total), high=max(cost(slow), total)),
        basis=adj.basis)


def _span(offer: _Priced, objective: str) -> tuple[float, float]:
    r = offer.range
    assert r is not None
    if objective == "time":
        return r.expected_hours.low, r.expected_hours.high
    if objective == "balanced":
        return (r.expected_hours.low * r.total_usd.low, r.expected_hours.high * r.total_usd.high)
    return r.total_usd.low, r.total_usd.high


def _machine(offer: _Priced) -> PlanKey:
    return offer.gpu_id, offer.gpus_per_node, offer.nodes


def overlap_note(ranked: Sequence[_Priced], objective: str) -> str | None:
    """"#1 and #2 are within the estimate's uncertainty ...": the offers after the best
    whose range of the objective overlaps the best's, on another machine."""
    if len(ranked) < 2 or ranked[0].range is None:
        return None
    first = _span(ranked[0], objective)
    close = []
    for i, offer in enumerate(ranked[1:OVERLAP_CHECKED + 1], start=2):
        if offer.range is None or _machine(offer) == _machine(ranked[0]):
            continue
        lo, hi = _span(offer, objective)
        if lo <= first[1] and first[0] <= hi:
            close.append((i, lo, hi))
    if not close:
        return None
    unit, fmt = {"time": ("hours", "{:,.1f}".format),
                 "balanced": ("$ × hours", "{:,.0f}".format)}.get(
        objective, ("total $", "{:,.2f}".format))
    spans = [f"#1 {fmt(first[0])}–{fmt(first[1])}",
             *(f"#{i} {fmt(lo)}–{fmt(hi)}" for i, lo, hi in close)]
    ranks = ["#1", *(f"#{i}" for i, _, _ in close)]
    names = ", ".join(ranks[:-1]) + " and " + ranks[-1]
    return (f"{names} are within the estimate's uncertainty ({unit}: {'; '.join(spans)}): "
            "their order may change; --pessimistic ranks by the slow end of each range")


def uncertainty_notes(ranked: Sequence[_Priced], objective: str,
                      pessimistic: bool) -> list[str]:
    """What a recommendation says of its figures' uncertainty."""
    notes = []
    if pessimistic:
        notes.append("ranked at the slow end of each offer's range (--pessimistic): the hours "
                     "and costs shown are that end's")
    if (note := overlap_note(ranked, objective)) is not None:
        notes.append(note)
    return notes
