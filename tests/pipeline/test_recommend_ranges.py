"""A recommendation's ranges, the overlap note, --pessimistic, and your runs' correction on the
machines of their GPU only (pipeline/measured/offers.py)."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

import gpuscout
from gpuscout.pipeline.measured import add_runs
from gpuscout.pipeline.measured.offers import PlanAdjustment, offer_range, overlap_note
from gpuscout.sizing.job import Job
from gpuscout.sizing.uncertainty import Range

CSV = Path(__file__).parent.parent / "fixtures" / "runs" / "csv" / "qwen-profile-a100.csv"
# The job of the CSV's Qwen-7B rows (QwenLM/Qwen's profile) at 2048 tokens
QWEN = dict(model="Qwen/Qwen-7B-Chat", method="lora", lora_rank=64, lora_targets="all-linear",
            lora_dropout=0.05, packed=True, seq_len=2048, grad_accum=8)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ranges") / "w.duckdb"
    gpuscout.refresh(db=path, providers=["runpod", "vastai", "lambda"], offline=True)
    return path


def test_offer_range_by_hand() -> None:
    row = {"expected_hours": 10.0, "total_usd": 21.5, "tokens_per_s": 1000.0,
           "price_usd_per_hour": 2.0, "nodes": 1, "storage_usd": 1.0, "egress_usd": 0.5}
    adj = PlanAdjustment(factor=1.0, low=0.5, high=1.25, correction=None, basis="b")
    r = offer_range(row, {"billing_increment_s": None, "min_charge_s": None}, adj)
    assert (r.tokens_per_s.low, r.tokens_per_s.high) == (500.0, 1250.0)
    assert (r.expected_hours.low, r.expected_hours.high) == (8.0, 20.0)
    # 8 h: 2 $/h × 8 h + storage 1 × 8/10 + egress 0.5; 20 h: 40 + 2 + 0.5 (hourly billing)
    assert r.total_usd.low == pytest.approx(17.3) and r.total_usd.high == pytest.approx(42.5)
    # a day's minimum charge: 10 h cost 2 × 24 + 1 + 0.5, 8 h 2 × 24 + 0.8 + 0.5, 20 h too
    daily = {**row, "total_usd": 49.5}
    billed = offer_range(daily, {"billing_increment_s": 3600.0, "min_charge_s": 86400.0}, adj)
    assert billed.total_usd.low == pytest.approx(49.3)
    assert billed.total_usd.high == pytest.approx(50.5)


def _offer(gpu: str, low: float, high: float, count: int = 1) -> SimpleNamespace:
    r = Range(low=low, high=high)
    return SimpleNamespace(gpu_id=gpu, gpus_per_node=count, nodes=1,
                           range=SimpleNamespace(total_usd=r, expected_hours=r))


def test_the_overlap_note_names_other_machines_only() -> None:
    ranked = [_offer("a100", 10, 15), _offer("a100", 11, 16), _offer("h100", 14, 20),
              _offer("l4", 16, 30)]
    note = overlap_note(ranked, "cost")
    assert note is not None
    assert note.startswith("#1 and #3 are within the estimate's uncertainty "
                           "(total $: #1 10.00–15.00; #3 14.00–20.00)")
    assert overlap_note([_offer("a100", 10, 15), _offer("h100", 16, 20)], "cost") is None
    assert "hours" in (overlap_note(ranked, "time") or "")


def test_every_ranked_offer_carries_its_range(warehouse: Path) -> None:
    rec = gpuscout.recommend(db=warehouse, tokens=1e8, limit=5, **QWEN)
    assert rec.ranked
    for r in rec.ranked:
        assert r.range is not None
        assert r.range.total_usd.low <= r.total_usd <= r.range.total_usd.high
        assert r.range.expected_hours.low <= r.expected_hours <= r.range.expected_hours.high
        assert r.range.basis.startswith("the calibration's spread in")


def test_pessimistic_ranks_at_the_slow_end(warehouse: Path) -> None:
    plain = gpuscout.recommend(db=warehouse, tokens=1e8, limit=50, **QWEN)
    slow = gpuscout.recommend(db=warehouse, tokens=1e8, limit=50, pessimistic=True, **QWEN)
    assert slow.uncertainty_notes[0].startswith("ranked at the slow end")
    central = {r.offer_key: r for r in plain.ranked}
    for r in slow.ranked:
        if r.offer_key in central and r.range is not None:
            c = central[r.offer_key]
            assert r.expected_hours >= c.expected_hours
            assert r.range.expected_hours.high == pytest.approx(r.expected_hours)


def test_your_runs_correct_the_machines_of_their_gpu_only(warehouse: Path,
                                                          tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    shutil.copyfile(warehouse, db)
    add_runs(db, [CSV], Job(), set(), None, datetime(2026, 5, 1, tzinfo=UTC))
    rec = gpuscout.recommend(db=db, tokens=1e8, limit=200, **QWEN)
    fixed = [r for r in rec.ranked if any(x.startswith("corrected by") for x in r.reasons)]
    assert fixed and {r.gpu_id for r in fixed} == {"a100-sxm-80gb"}
    assert all(r.range is not None and r.range.basis.startswith(
        "corrected by 3 of your runs on a100-sxm-80gb / hf / lora") for r in fixed
        if r.gpus_per_node == 1)
    off = gpuscout.recommend(db=db, tokens=1e8, limit=200, correction=False, **QWEN)
    assert not any("corrected by" in x for r in off.ranked for x in r.reasons)


def test_recommend_explain_names_the_overlapping_ranges(warehouse: Path) -> None:
    from typer.testing import CliRunner

    from gpuscout.cli.app import app

    args = ["recommend", "--model", "meta-llama/Llama-3.1-8B", "--method", "qlora",
            "--batch-size", "4", "--tokens", "1e8", "--limit", "5", "--db", str(warehouse)]
    out = CliRunner().invoke(app, [*args, "--explain"])
    assert out.exit_code == 0, out.output
    assert "are within the estimate's uncertainty (total $: #1 " in out.stdout
    slow = CliRunner().invoke(app, [*args, "--pessimistic", "--format", "json"])
    assert slow.exit_code == 0, slow.output
    data = json.loads(slow.stdout)
    assert data["uncertainty_notes"][0].startswith("ranked at the slow end")
    assert all(r["range"]["total_usd"]["high"] >= r["total_usd"] for r in data["ranked"])
