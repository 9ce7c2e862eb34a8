"""Saved activations, recomputation and activation offloading (sizing/memory_activations.py)
against hand computations on Llama-2-7B and Qwen2.5-7B."""

from __future__ import annotations

import pytest
from memory_cases import A, F, H, L, Q, qlora

from gpuscout.sizing.memory import memory_estimate
from gpuscout.sizing.memory_activations import (
    OFFLOAD_RESIDENT_LAYERS,
    activation_bytes,
    offloaded_activation_bytes,
)
from gpuscout.sizing.memory_weights import (
    frozen_weight_bytes,
)
from gpuscout.sizing.types import JobSpec


def _lora_block_bytes_per_token(r: int) -> int:
    norms = 2 * 4 * H  # HF norms keep their fp32 input; frozen weights keep nothing else
    qkv_input = 2 * H  # saved for LoRA's A matrix on q and v
    flash = 2 * (2 * H + 2 * H)  # q, k, v, output
    mlp = 3 * 2 * F  # act input, act output, up
    lora = 2 * 4 * r  # lora_A outputs (fp32) on q and v
    return norms + qkv_input + flash + mlp + lora


def test_activations_with_checkpointing() -> None:
    job = JobSpec(method="lora", lora_rank=8, seq_len=2048, mixed_precision=False)
    ckpt = L * 2048 * H * 2
    block = 2048 * _lora_block_bytes_per_token(8)
    final = 2048 * H * 4
    assert activation_bytes(A, job, "bf16") == ckpt + block + final


def test_activations_without_checkpointing_and_eager_attention() -> None:
    fa = JobSpec(method="lora", lora_rank=8, seq_len=1024, grad_checkpointing=False)
    per_tok = _lora_block_bytes_per_token(8)
    assert activation_bytes(A, fa, "bf16") == L * 1024 * per_tok + 1024 * H * 4
    eager = JobSpec(method="lora", lora_rank=8, seq_len=1024, grad_checkpointing=False,
                    flash_attention=False)
    extra_per_tok = -2 * (2 * H + 2 * H) + 2 * (H + 2 * H) + 32 * 1024 * (4 + 2)
    assert activation_bytes(A, eager, "bf16") - activation_bytes(A, fa, "bf16") == (
        L * 1024 * extra_per_tok)


def test_full_training_keeps_more_activations_than_lora() -> None:
    lora = JobSpec(method="lora", grad_checkpointing=False, seq_len=512)
    fft = JobSpec(method="full", grad_checkpointing=False, seq_len=512)
    assert activation_bytes(A, fft, "bf16") > activation_bytes(A, lora, "bf16")


def test_checkpoint_offload_moves_block_inputs_to_host() -> None:
    on, off = qlora(checkpoint_offload=True), qlora()
    moved = offloaded_activation_bytes(Q, on, "bf16")
    per_layer = 4 * 4096 * Q.hidden_size * 4  # fp32 hidden states (kbit upcast)
    assert moved == pytest.approx((Q.num_layers - OFFLOAD_RESIDENT_LAYERS) * per_layer)
    assert activation_bytes(Q, off, "bf16") - activation_bytes(Q, on, "bf16") == \
        pytest.approx(moved)
    m = memory_estimate(Q, on)
    assert m.host_ram_gb == pytest.approx(moved / 1e9, abs=1e-3)
    assert offloaded_activation_bytes(Q, off, "bf16") == 0


def test_activation_offloading_without_checkpointing_keeps_two_layers() -> None:
    job = qlora(grad_checkpointing=False, activation_offloading=True)
    full_acts = activation_bytes(Q, qlora(grad_checkpointing=False), "bf16")
    kept = activation_bytes(Q, job, "bf16")
    moved = offloaded_activation_bytes(Q, job, "bf16")
    assert kept + moved == pytest.approx(full_acts)
    assert kept < full_acts / (Q.num_layers / (OFFLOAD_RESIDENT_LAYERS + 1))


def test_compile_drops_the_saved_activation_output_of_the_gated_mlp() -> None:
    job = JobSpec(method="full", grad_checkpointing=False, batch_size=1, seq_len=1024)
    saved = activation_bytes(A, job, "bf16") - activation_bytes(
        A, job.model_copy(update={"compile": True}), "bf16")
    # one 16-bit tensor of the intermediate size per token per layer
    assert saved == pytest.approx(A.num_layers * 1024 * A.intermediate_size * 2)


def test_kbit_upcast_off_halves_hidden_state_checkpoints() -> None:
    up = activation_bytes(Q, qlora(), "bf16")
    down = activation_bytes(Q, qlora(upcast_non_quantized=False), "bf16")
    assert down < up
    assert frozen_weight_bytes(Q, qlora(upcast_non_quantized=False), "bf16") < \
        frozen_weight_bytes(Q, qlora(), "bf16")
