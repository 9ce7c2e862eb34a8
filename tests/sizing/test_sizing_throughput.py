"""FLOPs per token, rates and multi-GPU scaling."""

from __future__ import annotations

import pytest

from gpuscout.core.catalog import load_catalog
from gpuscout.sizing.architectures import lookup
from gpuscout.sizing.peft import trainable_params
from gpuscout.sizing.throughput import flops_per_token, matmul_params, peak_tflops, time_estimate
from gpuscout.sizing.types import JobSpec

CAT = load_catalog()
A = lookup("meta-llama/Llama-2-7b-hf")
N = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008) + 32000 * 4096  # blocks + output projection


def test_flops_per_token_full_peft_and_recompute() -> None:
    assert matmul_params(A) == N
    attn = 4 * 32 * 4096 * 2048
    model, hw = flops_per_token(A, JobSpec(method="full", grad_checkpointing=False))
    assert model == hw == 6 * N + 3 * attn
    lora = JobSpec(method="lora", lora_rank=8)
    model, hw = flops_per_token(A, lora)
    assert model == 4 * N + 6 * trainable_params(A, lora) + 3 * attn
    assert hw == model + 2 * N + attn


def test_moe_counts_active_experts_only() -> None:
    m = lookup("mistralai/Mixtral-8x7B-v0.1")
    assert matmul_params(m) < 0.3 * m.total_params


def test_rates_follow_the_dtype() -> None:
    a100 = CAT.gpu("a100-sxm-80gb")
    assert peak_tflops(a100, "bf16") == 312
    assert peak_tflops(a100, "fp32") == a100.fp32_tflops
    assert peak_tflops(CAT.gpu("v100-sxm2-16gb"), "fp16") == 125


def test_hours_and_qlora_slowdown() -> None:
    h100 = CAT.gpu("h100-sxm-80gb")
    t = time_estimate(A, JobSpec(method="lora"), h100, "bf16", tokens=10**9)
    assert t.hours == pytest.approx(1e9 / t.tokens_per_s / 3600, rel=1e-3)
    q = time_estimate(A, JobSpec(method="qlora"), h100, "bf16")
    assert q.tokens_per_s == pytest.approx(t.tokens_per_s / 1.5, rel=1e-3)


def test_roofline_bound_and_optimizer_step() -> None:
    h100 = CAT.gpu("h100-sxm-80gb")
    big = time_estimate(A, JobSpec(method="qlora", batch_size=4, seq_len=2048), h100, "bf16")
    assert big.bound == "compute"
    # one 16-token micro-batch: reading the dequantized weights three times (forward,
    # recompute, backward) takes longer than its matmuls
    tiny = time_estimate(A, JobSpec(method="qlora", batch_size=1, seq_len=16), h100, "bf16")
    assert tiny.bound == "memory"
    # at least the dequantized 16-bit copy, written and read on each of the three passes
    dequant = 3 * A.linear_weight_params * 4 / (h100.mem_bandwidth_gbs * 1e9 * 0.8)
    assert tiny.step_time_s > dequant
    assert any(n.startswith("memory-bound") for n in tiny.notes)
    # the optimizer update moves every full-fine-tuning parameter's state once per step
    full = time_estimate(A, JobSpec(method="full", batch_size=1, seq_len=512), h100, "bf16")
    lora = time_estimate(A, JobSpec(method="lora", batch_size=1, seq_len=512), h100, "bf16")
    assert full.optimizer_step_s > 100 * lora.optimizer_step_s > 0


def test_scaling_depends_on_interconnect_and_sharding() -> None:
    job = JobSpec(method="full", gpus=8, sharding="zero3", batch_size=1, seq_len=1024)
    nvlink = time_estimate(A, job, CAT.gpu("h100-sxm-80gb"), "bf16")
    pcie = time_estimate(A, job, CAT.gpu("h100-pcie-80gb"), "bf16")
    assert nvlink.scaling_efficiency > pcie.scaling_efficiency
    ddp = JobSpec(method="lora", gpus=8, sharding="ddp")
    assert time_estimate(A, ddp, CAT.gpu("l40s-48gb"), "bf16").scaling_efficiency > 0.95
