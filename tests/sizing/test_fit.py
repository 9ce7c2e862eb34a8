"""Fit advice (`gpuscout estimate --fit`, `gpuscout.fit`): every figure is the estimator's on
the changed job, the largest batch and sequence are the boundaries, and the ranking is by
GPU-seconds per token."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import gpuscout
from gpuscout.cli.app import app
from gpuscout.core.catalog import load_catalog
from gpuscout.sizing.estimate import estimate
from gpuscout.sizing.fit import SEQ_STEP, candidate_changes, fit_advice
from gpuscout.sizing.job import Job
from gpuscout.sizing.types import JobSpec

L4 = load_catalog().gpu("l4-24gb")
# Qwen2.5-7B LoRA, batch 4 × 2048, HF defaults: the eager loss over a 152k vocabulary does not
# fit the 24.5 GB usable of an L4
JOB = Job(model="Qwen/Qwen2.5-7B", method="lora", batch_size=4, seq_len=2048)


@pytest.fixture(scope="module")
def advice():
    arch, spec, _ = JOB.resolve()
    return arch, spec, fit_advice(arch, spec, L4)


def _peak(arch, spec: JobSpec, **changes) -> tuple[float, bool]:
    data = {k: v for k, v in spec.model_dump().items() if k != "chunked_loss"}
    est = estimate(arch, JobSpec.model_validate({**data, **changes}), L4)
    return est.memory.need_gb_per_gpu, bool(est.memory.fits)


def test_the_job_does_not_fit_and_the_boundaries_are_exact(advice) -> None:
    arch, spec, a = advice
    assert not a.fits and a.need_gb_per_gpu > a.usable_gb_per_gpu
    assert a.max_batch_size is not None and a.max_batch_size < spec.batch_size
    assert _peak(arch, spec, batch_size=a.max_batch_size)[1]
    assert not _peak(arch, spec, batch_size=a.max_batch_size + 1)[1]
    assert a.max_seq_len is not None and a.max_seq_len % SEQ_STEP == 0
    assert _peak(arch, spec, seq_len=a.max_seq_len)[1]
    assert not _peak(arch, spec, seq_len=a.max_seq_len + SEQ_STEP)[1]


def test_changes_that_fit_come_first_cheapest_first_with_the_estimators_figures(advice) -> None:
    arch, spec, a = advice
    fitting = [c for c in a.changes if c.fits]
    assert fitting, "some change must make this job fit 24 GB"
    assert a.changes[:len(fitting)] == fitting
    costs = [c.cost_factor for c in fitting]
    assert costs == sorted(costs)
    names = [c.change for c in a.changes]
    assert any(n.startswith("a fused chunked loss") for n in names)
    assert any(n.startswith("QLoRA") for n in names)
    for c in a.changes:
        peak, fits = _peak(arch, spec, **c.options)
        assert (c.need_gb_per_gpu, c.fits) == (round(peak, 2), fits), c.change
        assert c.saves_gb == pytest.approx(a.need_gb_per_gpu - peak, abs=0.011)


def test_cost_factor_is_gpu_seconds_per_token(advice) -> None:
    arch, spec, a = advice
    two = next(c for c in a.changes if c.options == {"gpus": 2, "sharding": "zero3"})
    base = estimate(arch, spec, L4).time
    changed = estimate(arch, spec.model_copy(update={"gpus": 2, "sharding": "zero3"}), L4).time
    assert base is not None and changed is not None
    expected = (2 / changed.tokens_per_s) / (1 / base.tokens_per_s)
    assert two.cost_factor == pytest.approx(expected, abs=0.001)


def test_candidates_follow_the_job() -> None:
    full = JobSpec(method="full", optimizer="adamw", grad_checkpointing=False, batch_size=1)
    names = [n for n, _ in candidate_changes(full)]
    assert "turn on gradient checkpointing" in names
    assert "LoRA instead of full fine-tuning" in names
    assert not any(n.startswith("micro-batch") for n in names)  # batch 1 cannot halve
    qlora = JobSpec(method="qlora", optimizer="adamw-8bit", loss="fused")
    names = [n for n, _ in candidate_changes(qlora)]
    assert not any(n.startswith(("QLoRA", "8-bit", "a fused", "fused AdamW")) for n in names)
    assert not any(n.startswith("fused AdamW") for n, _ in candidate_changes(full))


def test_foreach_adamw_gets_the_fused_step_as_a_change() -> None:
    """Full fine-tuning with torch.optim.AdamW's foreach step: the fused one saves the step's
    state-sized buffer and a third of its traffic, so it costs less per token."""
    arch, _, _ = Job(model="meta-llama/Llama-2-7b-hf", method="full").resolve()
    job = JobSpec(method="full", optimizer="adamw-foreach", mixed_precision=False,
                  batch_size=1, seq_len=256)
    advice = fit_advice(arch, job, load_catalog().gpu("a100-sxm-80gb"))
    fused = next(c for c in advice.changes if c.change.startswith("fused AdamW"))
    assert fused.options == {"optimizer": "adamw"}
    assert fused.saves_gb > 0
    assert fused.cost_factor is not None and fused.cost_factor < 1


def test_api_and_cli() -> None:
    a = gpuscout.fit(model="Qwen/Qwen2.5-7B", method="lora", batch_size=4, seq_len=2048,
                     gpu="l4")
    assert a.gpu_id == "l4-24gb" and not a.fits
    runner = CliRunner()
    args = ["estimate", "--model", "Qwen/Qwen2.5-7B", "--method", "lora", "--batch-size", "4",
            "--seq-len", "2048", "--gpu", "l4-24gb", "--fit"]
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["fit"]["max_batch_size"] == a.max_batch_size
    assert [c["change"] for c in data["fit"]["changes"]] == [c.change for c in a.changes]
    table = runner.invoke(app, args)
    assert table.exit_code == 0 and "changes that make the job fit" in table.output
    no_gpu = runner.invoke(app, args[:-3] + ["--fit"])
    # the app raises; the console entry point prints it as "error: ..." (tests/test_cli.py)
    assert no_gpu.exit_code != 0 and "--fit needs --gpu" in str(no_gpu.exception)


def test_a_mean_length_above_the_searched_sequence_comes_down_with_it() -> None:
    """--mean-seq-len 210 with --fit: the search tries sequences shorter than the mean, which
    then is the sequence itself (it was an invalid job that ended the command)."""
    arch, spec, _ = Job(model="meta-llama/Llama-3.2-3B", method="lora", batch_size=4,
                        seq_len=768, mean_seq_len=210).resolve()
    advice = fit_advice(arch, spec, L4)
    assert advice.max_seq_len is not None and advice.max_seq_len >= 768
