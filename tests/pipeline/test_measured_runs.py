"""Runs read from real logs, joined to their jobs, stored, and used to correct an estimate."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import pytest

import gpuscout
from gpuscout.core.errors import UserInputError
from gpuscout.pipeline.measured import add_runs, compare_runs, stored_runs
from gpuscout.pipeline.measured.correction import (
    MAX_DISTANCE,
    RUN_NOISE,
    SHAPE_WEIGHT,
    Shape,
    distance,
    posterior,
)
from gpuscout.sizing.job import Job

RUNS = Path(__file__).parent.parent / "fixtures" / "runs"
LMY = RUNS / "hf_trainer/lmy-matrix"
NOW = datetime(2026, 5, 1, tzinfo=UTC)
# The lmy-matrix run (tests/fixtures/runs/PROVENANCE.md): LLaMA-Factory's llama3 LoRA example
LMY_OPTIONS = dict(model="meta-llama/Meta-Llama-3-8B-Instruct", method="lora",
                   framework="llama-factory", grad_accum=8, seq_len=2048, lora_rank=8,
                   lora_targets="all-linear")
# total_flos ÷ (6 × (8,030,261,248 + 20,971,520 LoRA − 525,336,576 embedding)) over the runtime
LMY_TOKENS = 4.839211458625536e16 / (6 * 7_525_896_192)
LMY_RATE = LMY_TOKENS / 953.7893


def _add(db: Path, *paths: Path, gpu: str | None = "rtx-4090-24gb", **options: object):
    opts = {**LMY_OPTIONS, **options}
    return add_runs(db, list(paths), Job(**opts), set(opts), gpu, NOW)


def test_a_trainer_state_becomes_a_run_with_its_sources(tmp_path: Path) -> None:
    report = _add(tmp_path / "w.duckdb", LMY / "trainer_state.json")
    (run,) = report.added
    assert run.tokens_per_s == pytest.approx(LMY_RATE)  # 1,123.6 tokens/s
    assert run.token_basis is not None and "total_flos" in run.token_basis
    assert run.token_count == "padded"
    assert run.mean_seq_len == round(LMY_TOKENS / (2.831 * 953.7893))  # 397 a sample
    assert (run.gpu_id, run.gpus, run.batch_size, run.grad_accum) == ("rtx-4090-24gb", 1, 1, 8)
    assert run.field_sources["batch_size"] == "log"  # train_batch_size
    assert run.field_sources["gpus"].startswith("derived: 8.04 samples a step")
    assert run.field_sources["mean_seq_len"].startswith("derived: total_flos")
    assert run.field_sources["gpu"] == run.field_sources["seq_len"] == "option"
    assert run.field_sources["sharding"] == "default"
    assert run.predicted_tokens_per_s is not None
    assert run.tokens_error_pct == pytest.approx(
        100 * (run.predicted_tokens_per_s - LMY_RATE) / LMY_RATE)
    assert run.added_at == NOW and run.source_format == "hf-trainer"


def test_the_same_run_read_again_is_kept_as_it_was(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    first = _add(db, LMY / "trainer_state.json").added[0]
    again = _add(db, LMY / "all_results.json", LMY / "train_results.json", gpu="a100-sxm-80gb")
    assert again.added == [] and [r.run_id for r in again.already] == [first.run_id]
    (stored,) = stored_runs(db)
    assert stored.gpu_id == "rtx-4090-24gb" and stored.tokens_per_s == first.tokens_per_s


def test_estimating_the_same_job_prints_the_measured_rate(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    run = _add(db, LMY / "trainer_state.json").added[0]
    job = dict(LMY_OPTIONS, mean_seq_len=run.mean_seq_len)
    est = gpuscout.estimate(db=db, gpu="rtx-4090-24gb", tokens=1e8, **job)
    assert est.time is not None and est.correction is not None
    assert abs(est.time.tokens_per_s / LMY_RATE - 1) < 0.05
    assert est.correction.text.startswith(
        "corrected by 1 of your runs on rtx-4090-24gb / llama-factory / lora: tokens/s ×0.7")
    assert est.correction.text in est.notes
    u = est.uncertainty
    assert u is not None and u.runs == 1
    assert u.tokens_per_s.low < LMY_RATE < u.tokens_per_s.high
    assert est.time.hours == pytest.approx(1e8 / est.time.tokens_per_s / 3600, rel=1e-3)
    plain = gpuscout.estimate(db=db, gpu="rtx-4090-24gb", correction=False, **job)
    assert plain.correction is None and plain.time is not None
    assert plain.time.tokens_per_s == pytest.approx(est.correction.model_tokens_per_s)


@pytest.mark.parametrize("change", [{"gpu": "a100-sxm-80gb"}, {"framework": "hf"},
                                    {"method": "qlora"}])
def test_a_correction_never_reaches_another_gpu_or_stack(tmp_path: Path,
                                                         change: dict[str, str]) -> None:
    db = tmp_path / "w.duckdb"
    run = _add(db, LMY / "trainer_state.json").added[0]
    job = {**LMY_OPTIONS, "mean_seq_len": run.mean_seq_len, **change}
    gpu = job.pop("gpu", "rtx-4090-24gb")
    est = gpuscout.estimate(db=db, gpu=gpu, **job)
    assert est.correction is None and est.uncertainty is not None
    assert est.uncertainty.runs == 0 and not any("corrected by" in n for n in est.notes)


def test_the_log_wins_over_defaults_and_a_contradicting_option_is_an_error(
        tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="--batch-size 2 contradicts the log"):
        _add(tmp_path / "w.duckdb", LMY / "trainer_state.json", batch_size=2)
    with pytest.raises(UserInputError, match="does not name its GPU; give --gpu"):
        _add(tmp_path / "w.duckdb", LMY / "trainer_state.json", gpu=None)
    with pytest.raises(UserInputError, match="--gpu h100-sxm-80gb contradicts the log"):
        _add(tmp_path / "w.duckdb", RUNS / "unsloth/llama3.1-8b-alpaca-t4.log",
             gpu="h100-sxm-80gb", framework="unsloth", model="meta-llama/Llama-3.1-8B",
             grad_accum=4)
    assert not (tmp_path / "w.duckdb").exists()  # nothing was written


def test_unsloth_names_its_gpu_and_samples_take_the_job_length(tmp_path: Path) -> None:
    job = Job(model="meta-llama/Llama-3.1-8B", method="qlora", seq_len=2048, mean_seq_len=300)
    (run,) = add_runs(tmp_path / "w.duckdb", [RUNS / "unsloth/llama3.1-8b-alpaca-t4.log"],
                      job, {"model", "method", "seq_len", "mean_seq_len"}, None, NOW).added
    assert (run.gpu_id, run.framework) == ("t4-16gb", "unsloth")
    assert run.field_sources["gpu"] == run.field_sources["framework"] == "log"
    assert (run.batch_size, run.grad_accum) == (2, 4)
    assert run.tokens_per_s == pytest.approx(480 / 462.7198 * 300)
    assert run.token_basis is not None and "--mean-seq-len 300 (option)" in run.token_basis
    assert run.token_count == "samples"
    assert (run.memory_metric, run.peak_gb) == ("reserved", pytest.approx(7.922 * 2**30 / 1e9))
    assert run.predicted_peak_gb is not None and run.memory_error_pct is not None


def test_torchtune_rate_per_gpu_times_the_gpus(tmp_path: Path) -> None:
    job = Job(model="codellama/CodeLlama-7b-hf", method="lora", framework="torchtune",
              gpus=2, sharding="fsdp")
    (run,) = add_runs(tmp_path / "w.duckdb", [RUNS / "torchtune/codellama-7b_log_1723844072.txt"],
                      job, {"model", "method", "gpus", "sharding"}, "a100-sxm-80gb", NOW).added
    assert run.tokens_per_s == pytest.approx(2 * 417.49818620797487)
    assert run.log_started_at == datetime(2024, 8, 16, 21, 34, 32, tzinfo=UTC)


def test_csv_rows_are_runs_and_correct_each_other(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    report = add_runs(db, [RUNS / "csv/qwen-profile-a100.csv"], Job(), set(), None, NOW)
    assert len(report.added) == 4
    assert {r.gpu_id for r in report.added} == {"a100-sxm-80gb"}
    assert all(r.field_sources["lora_rank"] == "log" for r in report.added)
    compared = {c.run.seq_len: c for c in compare_runs(db) if c.run.model == "Qwen/Qwen-7B"}
    assert {s: c.others_in_stack for s, c in compared.items()} == {256: 3, 2048: 3, 8192: 3}
    # each Qwen-7B row held out of its own correction: its neighbours pull it toward them
    assert all(c.corrected_tokens_per_s is not None for c in compared.values())


def test_one_run_of_the_very_job_moves_nearly_all_the_way() -> None:
    job = Shape(seq=400, batch=1, params=8e9, gpus=1, dtype="bf16", quant="none")
    post = posterior(job, [(job, math.log(0.75))], prior_sd=0.27)
    weight = (1 / RUN_NOISE**2) / (1 / 0.27**2 + 1 / RUN_NOISE**2)
    assert post.mean == pytest.approx(weight * math.log(0.75))
    assert post.runs == 1 and post.factor == pytest.approx(0.75 ** weight)


def test_thin_and_distant_evidence_is_shrunk_toward_one() -> None:
    job = Shape(seq=512, batch=1, params=8e9, gpus=1, dtype="bf16", quant="none")
    longer = Shape(seq=4096, batch=1, params=8e9, gpus=1, dtype="bf16", quant="none")
    d = distance(job, longer)
    assert d == pytest.approx(math.log(8))
    post = posterior(job, [(longer, math.log(0.5))], prior_sd=0.3)
    v = RUN_NOISE**2 + (SHAPE_WEIGHT * d) ** 2
    assert post.mean == pytest.approx((math.log(0.5) / v) / (1 / 0.09 + 1 / v))
    assert 0.5 < post.factor < 1.0  # one run of an eight times longer sequence: a little
    far = Shape(seq=65536, batch=8, params=8e9, gpus=1, dtype="bf16", quant="none")
    assert distance(job, far) > MAX_DISTANCE
    assert posterior(job, [(far, math.log(0.5))], prior_sd=0.3).runs == 0


def test_a_wandb_run_takes_its_gpu_from_the_metadata(tmp_path: Path) -> None:
    # bllossom-8b: LoRA r = 1 on every linear of a Llama-3-8B, batch 1 (PROVENANCE.md)
    job = Job(model="meta-llama/Meta-Llama-3-8B", method="lora", lora_rank=1,
              lora_targets="all-linear", seq_len=2048, grad_accum=1)
    (run,) = add_runs(tmp_path / "w.duckdb", [RUNS / "wandb/bllossom-8b/wandb-summary.json"],
                      job, {"model", "method", "lora_rank", "lora_targets", "seq_len",
                            "grad_accum"}, None, NOW).added
    assert (run.gpu_id, run.field_sources["gpu"]) == ("a100-sxm-80gb", "log")
    assert run.gpus == 1  # 0.465 samples a step ÷ (batch 1 × accumulation 1)
    # total_flos ÷ (6 × (8,030,261,248 + 2,621,440 LoRA − 525,336,576)): 823,300 slots over
    # 0.465 × 1727.749 = 803.4 samples (the rounded rate; 804 steps of one): 1,024 a sample
    assert run.mean_seq_len in (1024, 1025)
    assert run.tokens_per_s == pytest.approx(3.708559610295091e16 / (6 * 7_507_546_112)
                                             / 1727.749)
    assert run.log_started_at is not None and run.log_finished_at is not None


def test_a_run_with_peak_memory_corrects_the_memory_too(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    job = dict(model="meta-llama/Llama-3.1-8B", method="qlora", seq_len=2048,
               mean_seq_len=300, lora_rank=16, lora_targets="all-linear")
    add_runs(db, [RUNS / "unsloth/llama3.1-8b-alpaca-t4.log"], Job(**job), set(job), None, NOW)
    est = gpuscout.estimate(db=db, gpu="t4-16gb", framework="unsloth", batch_size=2,
                            grad_accum=4, **job)
    c = est.correction
    assert c is not None and c.memory_runs == 1 and c.memory_factor is not None
    assert c.runs == 1 and "memory ×" in c.text
