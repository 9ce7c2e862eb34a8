"""Trainable parameters per PEFT method against hand counts and published trainable counts."""

from __future__ import annotations

from gpuscout.sizing.architectures import lookup
from gpuscout.sizing.peft import trainable_params
from gpuscout.sizing.types import JobSpec

L32 = lookup("meta-llama/Llama-3.2-3B")  # h 3072, kv 1024, f 8192, 28 layers


def test_lora_llama_3_1_8b_r16_qv() -> None:
    a = lookup("meta-llama/Llama-3.1-8B")
    hand = 32 * 16 * ((4096 + 4096) + (4096 + 1024))
    assert trainable_params(a, JobSpec(method="lora", lora_rank=16)) == hand == 6_815_744


def test_counts_published_by_the_peft_benchmark() -> None:
    # huggingface/peft method_comparison MetaMathQA results (trainable params per run)
    assert trainable_params(L32, JobSpec(method="lora", lora_rank=32)) == 9_175_040
    assert trainable_params(L32, JobSpec(method="lora", lora_rank=64)) == 18_350_080
    assert trainable_params(L32, JobSpec(method="dora", lora_rank=32)) == 9_289_728
    assert trainable_params(L32, JobSpec(method="ia3")) == 286_720
    assert trainable_params(L32, JobSpec(method="prefix", num_virtual_tokens=200)) == 11_468_800
    assert trainable_params(L32, JobSpec(method="prompt", num_virtual_tokens=200)) == 614_400
    assert trainable_params(L32, JobSpec(method="full")) == 3_212_749_824


def test_fused_qkv_and_all_linear_match_ms_swift() -> None:
    q = lookup("Qwen/Qwen-7B-Chat")  # c_attn is one 4096 -> 12288 matrix
    assert trainable_params(q, JobSpec(method="lora", lora_rank=64)) == 64 * 16384 * 32
    assert trainable_params(q, JobSpec(method="lora", lora_rank=8,
                                       lora_targets="all-linear")) == 17_891_328
    assert trainable_params(q, JobSpec(method="adapter", adapter_reduction=32)) == 33_689_600


def test_attn_targets_add_k_and_o() -> None:
    hand = 28 * 8 * (2 * (3072 + 3072) + 2 * (3072 + 1024))
    assert trainable_params(L32, JobSpec(method="lora", lora_rank=8,
                                         lora_targets="attn")) == hand


def test_qlora_counts_like_lora() -> None:
    assert trainable_params(L32, JobSpec(method="qlora", lora_rank=32)) == 9_175_040
