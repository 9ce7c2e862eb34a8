"""Weights, master copies, gradients and optimizer states (sizing/memory_weights.py), each
against a hand computation on Llama-2-7B (h 4096, f 11008, 32 layers) or Qwen2.5-7B."""

from __future__ import annotations

import pytest
from memory_cases import LINEAR, A, F, H, L, P, Q, V, full, gb, qlora

from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import UserInputError
from gpuscout.sizing.memory import memory_estimate
from gpuscout.sizing.memory_weights import (
    NF4_BYTES,
    NF4_DQ_BYTES,
    frozen_weight_bytes,
    trainable_bytes,
)
from gpuscout.sizing.peft import trainable_params
from gpuscout.sizing.precision import decide
from gpuscout.sizing.types import JobSpec


def test_pure_bf16_adamw_is_8_bytes_per_param() -> None:
    b = memory_estimate(A, full(mixed_precision=False)).breakdown
    assert b["weights_trainable"] == gb(2 * P)
    assert b["gradients"] == gb(2 * P)
    assert b["optimizer_states"] == gb(4 * P)
    assert b["master_weights"] == b["autocast_copy"] == 0


def test_amp_mixed_precision_is_18_bytes_per_param() -> None:
    b = memory_estimate(A, full()).breakdown
    assert (b["weights_trainable"], b["autocast_copy"], b["gradients"],
            b["optimizer_states"]) == (gb(4 * P), gb(2 * P), gb(4 * P), gb(8 * P))


def test_fp32_and_optimizer_variants() -> None:
    assert memory_estimate(A, full(dtype="fp32")).breakdown["optimizer_states"] == gb(8 * P)
    b8 = memory_estimate(A, full(optimizer="adamw-8bit")).breakdown
    assert b8["optimizer_states"] == gb(P * 2 * (1 + 4 / 2048))
    assert memory_estimate(A, full(optimizer="sgd")).breakdown["optimizer_states"] == gb(4 * P)
    ada = memory_estimate(A, full(optimizer="adafactor")).breakdown["optimizer_states"]
    assert 0 < ada < gb(0.01 * P * 4)  # factored second moments only


@pytest.mark.parametrize(("stage", "w", "g", "o"), [
    ("zero1", 1, 1, 8), ("zero2", 1, 8, 8), ("zero3", 8, 8, 8), ("fsdp", 8, 8, 8)])
def test_zero_stages_divide_the_right_states(stage: str, w: int, g: int, o: int) -> None:
    b = memory_estimate(A, full(gpus=8, sharding=stage)).breakdown
    # ZeRO mixed precision: 16-bit weights 2 + 16-bit grads 2 + fp32 master 4 + Adam 8
    assert b["weights_trainable"] == gb(2 * P / w)
    assert b["gradients"] == gb(2 * P / g)
    assert b["master_weights"] == gb(4 * P / o)
    assert b["optimizer_states"] == gb(8 * P / o)


def test_offload_moves_states_to_host_ram() -> None:
    m = memory_estimate(A, full(gpus=4, sharding="zero3", offload="optimizer"))
    assert m.breakdown["optimizer_states"] == m.breakdown["master_weights"] == 0
    assert m.host_ram_gb == pytest.approx(gb(12 * P), rel=1e-3)
    mp = memory_estimate(A, full(gpus=4, sharding="zero3", offload="params"))
    assert mp.breakdown["weights_trainable"] == mp.breakdown["gradients"] == 0
    assert mp.host_ram_gb == pytest.approx(gb(16 * P), rel=1e-3)


def test_nf4_weights_with_and_without_double_quant() -> None:
    nonlin = P - LINEAR
    dq = memory_estimate(A, JobSpec(method="qlora")).breakdown["weights_frozen"]
    assert dq == gb(LINEAR * (0.5 + 1 / 64 + 4 / (64 * 256)) + nonlin * 4)  # fp32 upcast
    nodq = memory_estimate(A, JobSpec(method="qlora", double_quant=False))
    assert nodq.breakdown["weights_frozen"] == gb(LINEAR * 0.5625 + nonlin * 4)
    noup = memory_estimate(A, JobSpec(method="qlora", upcast_non_quantized=False))
    assert noup.breakdown["weights_frozen"] == gb(LINEAR * (0.5 + 1 / 64 + 4 / 16384)
                                                  + nonlin * 2)
    i8 = memory_estimate(A, JobSpec(method="lora", quant="int8")).breakdown["weights_frozen"]
    row_scales = 32 * (4 * H + 2 * F + H) * 4
    assert i8 == gb(LINEAR + row_scales + nonlin * 4)


def test_peft_adapters_are_fp32_with_fp32_states() -> None:
    b = memory_estimate(A, JobSpec(method="lora", lora_rank=8)).breakdown
    pt = 32 * 8 * (2 * (H + H))
    assert (b["weights_trainable"], b["gradients"], b["optimizer_states"]) == (
        gb(4 * pt), gb(4 * pt), gb(8 * pt))
    assert b["weights_frozen"] == gb(2 * P)


def test_no_accumulation_frees_gradients_until_backward() -> None:
    ga1 = memory_estimate(A, JobSpec(method="full", seq_len=512, mixed_precision=False))
    b = ga1.breakdown
    dynamic = b["activations"] + b["logits_and_loss"]
    assert b["gradients"] == pytest.approx(max(gb(V * H * 2), gb(2 * P) - dynamic), abs=2e-3)


def test_optimizer_in_backward_keeps_one_gradient() -> None:
    job = JobSpec(method="full", dtype="bf16", mixed_precision=False, grad_accum=1)
    base = memory_estimate(A, job).breakdown["gradients"]
    inbwd = memory_estimate(A, job.model_copy(update={"optimizer_in_backward": True}))
    assert inbwd.breakdown["gradients"] == pytest.approx(
        A.vocab_size * A.hidden_size * 2 / 1e9, abs=1e-3)  # the largest tensor: embedding/head
    assert inbwd.breakdown["gradients"] < base
    with pytest.raises(UserInputError, match="grad-accum 1"):
        JobSpec(method="full", optimizer_in_backward=True, grad_accum=4)
    # LoRA with a trained embedding: its bf16 copy is the largest tensor, with a bf16 gradient
    lora = JobSpec(method="lora", train_embeddings=True, optimizer_in_backward=True,
                   grad_clipping=False)
    assert memory_estimate(A, lora).breakdown["gradients"] == pytest.approx(
        A.vocab_size * A.hidden_size * 2 / 1e9, abs=1e-3)


def test_train_embeddings_adds_trainable_copies() -> None:
    base, emb = qlora(), qlora(train_embeddings=True)
    extra = trainable_params(Q, emb) - trainable_params(Q, base)
    assert extra == Q.embedding_params + Q.lm_head_params
    # the frozen originals stay; each copy keeps the base's bf16: weight, gradient and two
    # AdamW states of 2 bytes (PEFT upcasts tuner layers only), not fp32's 4 + 4 + 8
    with_copies, without = memory_estimate(Q, emb).breakdown, memory_estimate(Q, base).breakdown
    for term, per_param in (("weights_trainable", 2), ("gradients", 2),
                            ("optimizer_states", 4)):
        d = with_copies[term] - without[term]
        assert d == pytest.approx(extra * per_param / 1e9, abs=2e-3), term
    assert trainable_bytes(Q, emb, "bf16").grad - trainable_bytes(Q, base, "bf16").grad == \
        pytest.approx(extra * 2)
    assert frozen_weight_bytes(Q, emb, "bf16") == frozen_weight_bytes(Q, base, "bf16")
    with pytest.raises(UserInputError):
        JobSpec(method="full", train_embeddings=True)


def test_nf4_backends() -> None:
    bnb = frozen_weight_bytes(Q, qlora(double_quant=False), "bf16")
    tao = frozen_weight_bytes(Q, qlora(double_quant=False, nf4_backend="torchao"), "bf16")
    assert bnb - tao == pytest.approx(Q.linear_weight_params * (NF4_BYTES - NF4_DQ_BYTES))
    # torchao needs no bitsandbytes kernel: a GPU bitsandbytes refuses can still run it
    old = next(g for g in load_catalog().gpus.values()
               if g.vendor == "NVIDIA" and g.cuda_capability and g.cuda_capability < 6.0)
    assert decide(qlora(), old).refusal
    assert decide(qlora(nf4_backend="torchao"), old).refusal is None


def test_a_gptq_base_holds_the_recomputed_blocks_fp16_weights() -> None:
    """auto-gptq's trainable layer multiplies with its unpacked fp16 weight, which autograd
    keeps for the input's gradient: the recomputed block's seven matrices (every block without
    recomputation), plus the int32 unpacking of one matrix. bitsandbytes NF4 dequantizes one
    matrix at a time and again in backward."""
    block = 4 * H * H + 3 * H * F
    gptq = JobSpec(method="qlora", quant="gptq", dtype="fp16", lora_rank=8)
    est = memory_estimate(A, gptq)
    assert est.breakdown["dequant_buffer"] == pytest.approx(
        gb(block * 2 + H * F * 4), abs=1e-3)
    no_gc = memory_estimate(A, gptq.model_copy(update={"grad_checkpointing": False}))
    assert no_gc.breakdown["dequant_buffer"] == pytest.approx(
        gb(L * block * 2 + H * F * 4), abs=1e-3)
    nf4 = memory_estimate(A, JobSpec(method="qlora", lora_rank=8))
    assert nf4.breakdown["dequant_buffer"] == pytest.approx(gb(H * F * 2), abs=1e-3)
