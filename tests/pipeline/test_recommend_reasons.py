"""The sentences written next to offers shown (pipeline/recommend/reasons.py): a sentence that
needs a missing fact is left out, and a rejected offer gets the first reason that applies."""

from __future__ import annotations

from typing import Any

from gpuscout.pipeline.recommend.pair_costs import CostTerms
from gpuscout.pipeline.recommend.reasons import Terms, _billing, _text, rejected_because

TERMS = Terms(run=CostTerms(min_gpus_multi_node=8, max_hours=2.0, checkpoint_s=None,
                            min_interval_s=60.0, restart_s=600.0, storage_gb=10.0,
                            egress_gb=1.0),
              checkpoint_gb=1.0, write_gbps=1.0, hw_failures_per_gpu_hour=1e-5, dtype="bf16",
              stale_days=30, max_age_days=7.0)
ROW: dict[str, Any] = {"provider": "cloud", "nodes": 1, "pricing_model": "spot",
                       "price_age_days": 12}
WHY: dict[str, Any] = {"reject_reason": None, "no_fabric_note": False, "too_old": False,
                       "expected_s": 9000.0, "expected_hours": 2.5, "run_s": 7000.0,
                       "interrupts_per_hour": 0.1, "interval_s": 600.0, "too_slow": True}


def test_a_sentence_missing_a_fact_is_left_out() -> None:
    assert _text("fits: needs %.1f of %.1f GB", 10.0, None) is None
    assert _text("fits: needs %.1f of %.1f GB", 10.0, 24.0) == "fits: needs 10.0 of 24.0 GB"


def test_billing_names_the_unit_and_the_minimum() -> None:
    assert _billing({"billing_increment_s": 60, "min_charge_s": 3600}) == \
        "billed per minute, minimum 3600 s"
    assert _billing({"billing_increment_s": 300, "min_charge_s": None}) == "billed per 300 s"
    assert _billing({"billing_increment_s": None, "min_charge_s": 60}) == \
        "billing granularity unknown: assumed hourly"


def test_the_first_reason_that_applies_is_the_one_given() -> None:
    assert rejected_because(ROW, WHY, TERMS) == (
        "takes 2.5 h with the expected spot restarts (1.9 h without interruptions), over "
        "--max-hours 2.0")
    old = {**WHY, "too_old": True}
    assert rejected_because(ROW, old, TERMS) == \
        "price last seen 12 days ago, older than --max-price-age 7 days"
    walled = {**old, "reject_reason": "memory wall: needs 90 GB", "no_fabric_note": True}
    assert rejected_because(ROW, walled, TERMS) == (
        "memory wall: needs 90 GB; no inter-node fabric known for cloud: not placed on "
        "several machines")
    assert rejected_because(ROW, {**WHY, "too_slow": False}, TERMS) is None
