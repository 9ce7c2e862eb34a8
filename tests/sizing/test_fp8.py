"""--dtype fp8 (sizing/fp8.py): where it runs, what it keeps, which GEMMs it speeds up."""

from __future__ import annotations

import pytest

from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import UserInputError
from gpuscout.sizing.architectures import lookup
from gpuscout.sizing.estimate import estimate
from gpuscout.sizing.fp8 import (
    AMAX_HISTORY_LEN,
    amax_history_bytes,
    resolve_recipe,
    weight_copy_bytes,
)
from gpuscout.sizing.memory import memory_estimate
from gpuscout.sizing.memory_activations import activation_bytes
from gpuscout.sizing.precision import decide
from gpuscout.sizing.throughput import micro_batch
from gpuscout.sizing.types import JobSpec

CAT = load_catalog()
L31 = lookup("meta-llama/Llama-3.1-8B")
H, F, L = 4096, 14336, 32


def full(**kw: object) -> JobSpec:
    return JobSpec(**{"method": "full", "seq_len": 1024, **kw})  # type: ignore[arg-type]


def test_fp8_runs_only_where_there_are_fp8_tensor_cores() -> None:
    job = full(dtype="fp8")
    refusal = decide(job, CAT.gpu("a100-sxm-80gb")).refusal
    assert refusal is not None and "compute capability ≥ 8.9" in refusal and "8.0" in refusal
    for ok in ("h100-sxm-80gb", "l40s-48gb", "rtx-4090-24gb"):
        assert decide(job, CAT.gpu(ok)).refusal is None, ok
    with pytest.raises(UserInputError, match="cannot run on a100-sxm-80gb"):
        estimate(L31, job, CAT.gpu("a100-sxm-80gb"))
    with pytest.raises(UserInputError, match="fp8"):
        JobSpec(method="qlora", dtype="fp8")


def test_transformer_engine_default_recipe_follows_the_gpu() -> None:
    assert resolve_recipe("te", CAT.gpu("h100-sxm-80gb")) == "delayed"
    assert resolve_recipe("te", CAT.gpu("l40s-48gb")) == "delayed"
    blackwell = next(g for g in CAT.gpus.values()
                     if g.cuda_capability is not None and 10.0 <= g.cuda_capability < 12.0)
    assert resolve_recipe("te", blackwell) == "mxfp8"
    assert resolve_recipe("torchao", CAT.gpu("h100-sxm-80gb")) == "torchao"
    est = estimate(L31, full(dtype="fp8"), CAT.gpu("h100-sxm-80gb"))
    assert est.job.fp8_recipe == "delayed"


def test_transformer_engine_keeps_fp8_weight_copies_and_saves_fp8_inputs() -> None:
    """Two FP8 bytes per block weight (row- and column-wise workspaces), 1024-step fp32 amax
    histories for each linear's input, weight and gradient, and each trained linear's input
    saved in one byte instead of two."""
    te = full(dtype="fp8", fp8_recipe="delayed", grad_checkpointing=False)
    assert weight_copy_bytes(L31, te) == L31.linear_weight_params * 2
    modules = L * 7  # q, k, v, o, gate, up, down
    assert amax_history_bytes(L31, te) == modules * 3 * AMAX_HISTORY_LEN * 4
    mem = memory_estimate(L31, te).breakdown["fp8_copies"]
    assert mem == pytest.approx((L31.linear_weight_params * 2 + modules * 3 * 1024 * 4) / 1e9,
                                abs=1e-3)
    bf16 = te.model_copy(update={"dtype": "bf16"})
    # per token and layer one byte less for the inputs of qkv (h), o (q_dim), up/gate (h) and
    # down (f)
    saved = activation_bytes(L31, bf16, "bf16") - activation_bytes(L31, te, "fp8")
    assert saved == L * 1024 * (H + L31.q_dim + H + F)
    # current scaling keeps no history; torchao keeps no FP8 copy and saves 16-bit inputs
    assert amax_history_bytes(L31, te.model_copy(update={"fp8_recipe": "tensorwise"})) == 0
    ao = te.model_copy(update={"fp8_recipe": "torchao"})
    assert weight_copy_bytes(L31, ao) == 0
    assert activation_bytes(L31, ao, "fp8") == activation_bytes(L31, bf16, "bf16")


def test_fp8_speeds_up_the_block_gemms_only() -> None:
    """The blocks' GEMMs run at the FP8 rate; the head and attention stay at bf16's; the
    quantization kernels add pointwise traffic."""
    gpu = CAT.gpu("h100-sxm-80gb")
    job = full(batch_size=4, seq_len=2048)
    bf16 = micro_batch(L31, job, gpu, "bf16")
    fp8 = micro_batch(L31, job.model_copy(update={"dtype": "fp8"}), gpu, "fp8")
    assert fp8.attention_s == bf16.attention_s
    assert fp8.pointwise_s > bf16.pointwise_s
    ratio = fp8.matmul_s / bf16.matmul_s
    rate = gpu.bf16_dense_tflops / gpu.fp8_dense_tflops
    head_share = L31.output_projection_params / (L31.linear_weight_params
                                                 + L31.output_projection_params)
    assert rate < ratio < rate + head_share  # the head stays at the bf16 rate
    est = estimate(L31, job.model_copy(update={"dtype": "fp8"}), gpu)
    assert est.dtype == "fp8" and est.time is not None
    assert any("FP8" in n for n in est.memory.notes)
    # the tensors themselves stay 16-bit: no note calls them fp8
    lora = estimate(L31, JobSpec(method="lora", dtype="fp8", adapter_fp32=False), gpu)
    assert any("in bf16, with bf16 gradients" in n for n in lora.memory.notes)
