"""The loss path's vocabulary-sized buffers (sizing/memory_loss.py)."""

from __future__ import annotations

import pytest
from memory_cases import A, H, Q, V, gb, qlora

from gpuscout.sizing.architectures import lookup
from gpuscout.sizing.memory import memory_estimate
from gpuscout.sizing.memory_loss import (
    CHUNKED_LOSS_CHUNKS,
    LOSS_FP32_BUFFERS,
    logits_bytes,
    stale_loss_bytes,
    unsloth_ce_chunks,
)
from gpuscout.sizing.memory_units import FP32
from gpuscout.sizing.types import JobSpec


def test_logits_are_three_fp32_vocabulary_buffers() -> None:
    # log_softmax's backward holds its saved fp32 output, the dense fp32 gradient from nll_loss
    # and the fp32 gradient it returns: 3 × 4 bytes per token and vocabulary entry
    job = JobSpec(batch_size=2, seq_len=1024)
    assert logits_bytes(A, job) == 2 * 1024 * V * 12
    chunked = JobSpec(batch_size=2, seq_len=1024, chunked_loss=True)
    assert logits_bytes(A, chunked) == 2 * 1024 * H * 16  # 3 fp32 buffers + fp32 grad
    assert logits_bytes(lookup("bert-large-uncased"), job) == 0


def test_loss_implementations_order_and_sizes() -> None:
    t = 4 * 4096
    eager = logits_bytes(Q, qlora())
    chunked = logits_bytes(Q, qlora(loss="chunked"))
    fused = logits_bytes(Q, qlora(loss="fused"))
    cce = logits_bytes(Q, qlora(loss="cce"))
    assert eager == t * Q.vocab_size * FP32 * LOSS_FP32_BUFFERS
    # one fp32 log-prob buffer for all tokens plus two buffers of one chunk
    assert chunked == pytest.approx((t + 2 * t / CHUNKED_LOSS_CHUNKS) * Q.vocab_size * FP32)
    assert fused == t * Q.hidden_size * FP32 * (LOSS_FP32_BUFFERS + 1)
    assert cce == t * (Q.hidden_size + 1) * FP32
    assert eager > chunked > fused > cce


def test_stale_loss_segments_only_with_variable_lengths() -> None:
    # one more set of loss segments: 16-bit logits + 16-bit copy + the three fp32 buffers
    job = JobSpec(batch_size=2, seq_len=1024)
    assert stale_loss_bytes(A, job) == 2 * 1024 * V * (2 + 2 + 12)
    fixed = JobSpec(batch_size=2, seq_len=1024, variable_lengths=False)
    assert stale_loss_bytes(A, fixed) == 0
    assert stale_loss_bytes(lookup("bert-large-uncased"), job) == 0  # no vocabulary logits
    m = memory_estimate(A, job).breakdown
    assert m["stale_loss_segments"] == gb(2 * 1024 * V * 16)
    assert memory_estimate(A, fixed).breakdown["stale_loss_segments"] == 0


def test_a_16_bit_loss_keeps_its_buffers_in_the_logits_dtype() -> None:
    """Cross-entropy on bf16 logits with no autocast and no .float(): the three tokens ×
    vocabulary buffers are 2 bytes, not 4, and the stale set shrinks by as much."""
    fp32 = qlora(loss="eager")
    bf16 = fp32.model_copy(update={"fp32_loss": False})
    t = 4 * 4096
    assert logits_bytes(Q, fp32) == t * Q.vocab_size * FP32 * LOSS_FP32_BUFFERS
    assert logits_bytes(Q, bf16) == t * Q.vocab_size * 2 * LOSS_FP32_BUFFERS
    assert memory_estimate(Q, bf16).breakdown["logits_and_loss"] < \
        memory_estimate(Q, fp32).breakdown["logits_and_loss"]
    # a chunked loss keeps its log-probabilities in the logits' dtype too (litgpt's
    # chunked_cross_entropy under bf16-true); a fused loss casts per chunk whatever the flag
    chunked = qlora(loss="chunked")
    chunk = t // CHUNKED_LOSS_CHUNKS
    assert logits_bytes(Q, chunked.model_copy(update={"fp32_loss": False})) == \
        (t + 2 * chunk) * Q.vocab_size * 2
    fused = qlora(loss="fused")
    assert logits_bytes(Q, fused) == logits_bytes(
        Q, fused.model_copy(update={"fp32_loss": False}))


def test_logits_the_loop_holds_add_to_the_loss_buffers() -> None:
    """litgpt's fit() keeps `logits` (16-bit, every chunk) alive through backward."""
    job = qlora(loss="chunked")
    t = 4 * 4096
    assert logits_bytes(Q, job.model_copy(update={"logits_kept": True})) - \
        logits_bytes(Q, job) == t * Q.vocab_size * 2
    fused = qlora(loss="fused")
    assert logits_bytes(Q, fused.model_copy(update={"logits_kept": True})) == \
        logits_bytes(Q, fused)  # a fused loss never materializes them


def test_gemma_2_soft_caps_its_logits_and_keeps_tanh_for_the_backward() -> None:
    """Gemma-2's config sets final_logit_softcapping 30; the eager loss then keeps tanh's 16-bit
    output beside its buffers, a fused loss applies the cap inside its kernel."""
    gemma2 = lookup("google/gemma-2-9b")
    assert gemma2.final_logit_softcapping == 30.0
    assert lookup("google/gemma-7b").final_logit_softcapping == 0.0
    job = JobSpec(method="lora", batch_size=1, seq_len=1024, loss="eager")
    plain = gemma2.model_copy(update={"final_logit_softcapping": 0.0})
    extra = logits_bytes(gemma2, job) - logits_bytes(plain, job)
    assert extra == 1024 * gemma2.vocab_size * 2
    fused = job.model_copy(update={"loss": "fused"})
    assert logits_bytes(gemma2, fused) == logits_bytes(plain, fused)


def test_unsloth_fused_loss_runs_one_chunk_of_up_to_4_gib_of_fp32_logits() -> None:
    """unsloth-zoo's get_chunk_size: as few chunks (multiples of 4) as keep a chunk's fp32
    logits within 4 GiB, one chunk when they fit; at its peak a chunk holds the eager loss's
    three fp32 buffers, beside the hidden states' 16-bit gradient."""
    assert unsloth_ce_chunks(2048, 128256) == 1  # 1.0 GB of fp32 logits
    assert unsloth_ce_chunks(16384, 152064) == 4  # 9.3 GiB: 2.3 chunks, rounded up to 4
    assert unsloth_ce_chunks(65536, 152064) == 12  # 37 GiB: 9.3, rounded up to 12
    job = JobSpec(method="qlora", batch_size=1, seq_len=2048, loss="unsloth")
    assert logits_bytes(Q, job) == 2048 * Q.vocab_size * 12 + 2048 * Q.hidden_size * 2
    long = JobSpec(method="qlora", batch_size=4, seq_len=4096, loss="unsloth")
    chunk = 4 * 4096 // 4
    assert logits_bytes(Q, long) == chunk * Q.vocab_size * 12 + 4 * 4096 * Q.hidden_size * 2
