"""Framework presets (sizing/data/frameworks.csv) and the knobs they set."""

from __future__ import annotations

import csv
import re

import pytest

from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import UserInputError
from gpuscout.sizing.architectures import lookup
from gpuscout.sizing.frameworks import FRAMEWORKS_CSV, GENERIC, fill, presets
from gpuscout.sizing.job import Job
from gpuscout.sizing.memory import (
    CHUNKED_LOSS_CHUNKS,
    FP32,
    LOSS_FP32_BUFFERS,
    NF4_BYTES,
    NF4_DQ_BYTES,
    OFFLOAD_RESIDENT_LAYERS,
    activation_bytes,
    frozen_weight_bytes,
    logits_bytes,
    memory_estimate,
    offloaded_activation_bytes,
    trainable_bytes,
)
from gpuscout.sizing.peft import trainable_params
from gpuscout.sizing.precision import decide
from gpuscout.sizing.throughput import time_estimate
from gpuscout.sizing.types import JobSpec

A = lookup("meta-llama/Llama-2-7b-hf")
Q = lookup("Qwen/Qwen2.5-7B")
SOURCE = re.compile(r"^[\w.-]+/[\w.-]+:[\w./-]+@[0-9a-f]{40}$")


def test_every_preset_row_is_cited_to_a_file_at_a_commit() -> None:
    with FRAMEWORKS_CSV.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert rows
    for r in rows:
        assert SOURCE.match(r["source"]), r
        assert r["notes"].strip(), r
    assert set(presets()) == set(Job.model_fields["framework"].annotation.__args__)


def test_hf_default_keeps_the_generic_job_but_peft_s_adapter() -> None:
    _, spec, notes = Job(model="meta-llama/Llama-2-7b-hf").resolve()
    for setting, generic in GENERIC.items():
        expected = {"lora_rank": 8}.get(setting, generic)  # PEFT's LoraConfig r
        assert getattr(spec, setting) == expected, setting
    assert spec.loss == "eager" and not spec.chunked_loss
    assert any("lora_rank=8, lora_targets=qv, lora_dropout=0.0" in n for n in notes)


@pytest.mark.parametrize(("framework", "rank", "targets", "dropout"), [
    ("hf", 8, "qv", 0.0), ("trl", 16, "qv", 0.05), ("unsloth", 16, "all-linear", 0.0),
    ("torchtune", 8, "all-linear", 0.0), ("litgpt", 8, "qv", 0.05),
    ("llama-factory", 8, "all-linear", 0.0), ("ms-swift", 8, "all-linear", 0.05),
])
def test_each_framework_brings_its_own_lora_adapter(framework: str, rank: int, targets: str,
                                                    dropout: float) -> None:
    _, spec, _ = Job(model="Qwen/Qwen2.5-7B", framework=framework).resolve()
    assert (spec.lora_rank, spec.lora_targets, spec.lora_dropout) == (rank, targets, dropout)
    # the user's own adapter wins over the preset's
    _, spec, notes = Job(model="Qwen/Qwen2.5-7B", framework=framework, lora_rank=64,
                         lora_targets="attn", lora_dropout=0.1).resolve()
    assert (spec.lora_rank, spec.lora_targets, spec.lora_dropout) == (64, "attn", 0.1)
    assert not any("lora_rank=" in n for n in notes)


def test_a_framework_without_a_default_adapter_says_what_was_assumed() -> None:
    _, spec, notes = Job(model="Qwen/Qwen2.5-7B", framework="axolotl").resolve()
    assert (spec.lora_rank, spec.lora_targets) == (GENERIC["lora_rank"], GENERIC["lora_targets"])
    assert any("axolotl sets no default LoRA adapter: lora_rank=16, lora_targets=qv" in n
               for n in notes)
    # a full fine-tune has no adapter to speak of
    _, _, notes = Job(model="Qwen/Qwen2.5-7B", framework="axolotl", method="full").resolve()
    _, _, swift = Job(model="Qwen/Qwen2.5-7B", framework="ms-swift", method="full").resolve()
    assert not any("lora" in n for n in [*notes, *swift])


def test_preset_fills_and_explicit_options_win() -> None:
    _, spec, notes = Job(model="Qwen/Qwen2.5-7B", method="qlora", framework="unsloth").resolve()
    assert spec.checkpoint_offload and spec.loss == "fused" and not spec.upcast_non_quantized
    assert any("unsloth preset applied" in n and "checkpoint_offload=true" in n for n in notes)
    _, spec, notes = Job(model="Qwen/Qwen2.5-7B", method="qlora", framework="unsloth",
                         loss="cce", upcast_non_quantized=True).resolve()
    assert spec.loss == "cce" and spec.upcast_non_quantized
    assert not any("loss=" in n for n in notes)
    # switching checkpointing off drops the offloaded flavour instead of failing
    _, spec, _ = Job(model="Qwen/Qwen2.5-7B", method="qlora", framework="unsloth",
                     grad_checkpointing=False).resolve()
    assert not spec.checkpoint_offload


def test_torchtune_preset() -> None:
    _, spec, _ = Job(model="Qwen/Qwen2.5-7B", method="qlora", framework="torchtune").resolve()
    assert (spec.loss, spec.nf4_backend, spec.mixed_precision, spec.upcast_non_quantized) == (
        "chunked", "torchao", False, False)


def test_chunked_loss_flag_still_means_fused() -> None:
    _, spec, _ = Job(model="Qwen/Qwen2.5-7B", chunked_loss=True).resolve()
    assert spec.loss == "fused" and spec.chunked_loss
    _, spec, _ = Job(model="Qwen/Qwen2.5-7B", framework="trl", chunked_loss=False).resolve()
    assert spec.loss == "eager"
    assert JobSpec(chunked_loss=True).loss == "fused"
    assert JobSpec(loss="cce").chunked_loss


def test_fill_reports_nothing_for_generic_values() -> None:
    fields, notes = fill("hf", {"loss": "chunked"})
    assert fields["loss"] == "chunked" and fields["compile"] is False


# --- the knobs' memory effects -------------------------------------------------------------

def _q(**kw: object) -> JobSpec:
    return JobSpec(method="qlora", batch_size=4, seq_len=4096, **kw)


def test_loss_implementations_order_and_sizes() -> None:
    t = 4 * 4096
    eager = logits_bytes(Q, _q())
    chunked = logits_bytes(Q, _q(loss="chunked"))
    fused = logits_bytes(Q, _q(loss="fused"))
    cce = logits_bytes(Q, _q(loss="cce"))
    assert eager == t * Q.vocab_size * FP32 * LOSS_FP32_BUFFERS
    # one fp32 log-prob buffer for all tokens plus two buffers of one chunk
    assert chunked == pytest.approx((t + 2 * t / CHUNKED_LOSS_CHUNKS) * Q.vocab_size * FP32)
    assert fused == t * Q.hidden_size * FP32 * (LOSS_FP32_BUFFERS + 1)
    assert cce == t * (Q.hidden_size + 1) * FP32
    assert eager > chunked > fused > cce


def test_checkpoint_offload_moves_block_inputs_to_host() -> None:
    on, off = _q(checkpoint_offload=True), _q()
    moved = offloaded_activation_bytes(Q, on, "bf16")
    per_layer = 4 * 4096 * Q.hidden_size * 4  # fp32 hidden states (kbit upcast)
    assert moved == pytest.approx((Q.num_layers - OFFLOAD_RESIDENT_LAYERS) * per_layer)
    assert activation_bytes(Q, off, "bf16") - activation_bytes(Q, on, "bf16") == \
        pytest.approx(moved)
    m = memory_estimate(Q, on)
    assert m.host_ram_gb == pytest.approx(moved / 1e9, abs=1e-3)
    assert offloaded_activation_bytes(Q, off, "bf16") == 0


def test_activation_offloading_without_checkpointing_keeps_two_layers() -> None:
    job = _q(grad_checkpointing=False, activation_offloading=True)
    full_acts = activation_bytes(Q, _q(grad_checkpointing=False), "bf16")
    kept = activation_bytes(Q, job, "bf16")
    moved = offloaded_activation_bytes(Q, job, "bf16")
    assert kept + moved == pytest.approx(full_acts)
    assert kept < full_acts / (Q.num_layers / (OFFLOAD_RESIDENT_LAYERS + 1))


def test_offloading_costs_time_only_when_pcie_cannot_keep_up() -> None:
    gpu = load_catalog().gpu("l4-24gb")
    base = time_estimate(Q, _q(), gpu, "bf16")
    off = time_estimate(Q, _q(checkpoint_offload=True), gpu, "bf16")
    assert off.step_time_s >= base.step_time_s
    assert any("offloading" in n for n in off.notes)


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


def test_compile_drops_the_saved_activation_output_of_the_gated_mlp() -> None:
    job = JobSpec(method="full", grad_checkpointing=False, batch_size=1, seq_len=1024)
    saved = activation_bytes(A, job, "bf16") - activation_bytes(
        A, job.model_copy(update={"compile": True}), "bf16")
    # one 16-bit tensor of the intermediate size per token per layer
    assert saved == pytest.approx(A.num_layers * 1024 * A.intermediate_size * 2)


def test_train_embeddings_adds_trainable_copies() -> None:
    base, emb = _q(), _q(train_embeddings=True)
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
    bnb = frozen_weight_bytes(Q, _q(double_quant=False), "bf16")
    tao = frozen_weight_bytes(Q, _q(double_quant=False, nf4_backend="torchao"), "bf16")
    assert bnb - tao == pytest.approx(Q.linear_weight_params * (NF4_BYTES - NF4_DQ_BYTES))
    # torchao needs no bitsandbytes kernel: a GPU bitsandbytes refuses can still run it
    old = next(g for g in load_catalog().gpus.values()
               if g.vendor == "NVIDIA" and g.cuda_capability and g.cuda_capability < 6.0)
    assert decide(_q(), old).refusal
    assert decide(_q(nf4_backend="torchao"), old).refusal is None


def test_kbit_upcast_off_halves_hidden_state_checkpoints() -> None:
    up = activation_bytes(Q, _q(), "bf16")
    down = activation_bytes(Q, _q(upcast_non_quantized=False), "bf16")
    assert down < up
    assert frozen_weight_bytes(Q, _q(upcast_non_quantized=False), "bf16") < \
        frozen_weight_bytes(Q, _q(), "bf16")


def test_grad_clipping_follows_the_framework_and_optimizer_in_backward() -> None:
    """HF's max_grad_norm=1.0 clips by default, torchtune's recipes do not, and a job whose
    optimizer runs in backward cannot clip (torchtune raises the same)."""
    hf, _ = fill("hf", {})
    assert hf["grad_clipping"] is True
    tt, notes = fill("torchtune", {})
    assert tt["grad_clipping"] is False and "grad_clipping=false" in notes[0]
    inbwd, _ = fill("hf", {"optimizer_in_backward": True})
    assert inbwd["grad_clipping"] is False
    with pytest.raises(UserInputError, match="no-grad-clipping"):
        JobSpec(method="full", optimizer_in_backward=True, grad_clipping=True)


def test_a_16_bit_loss_keeps_its_buffers_in_the_logits_dtype() -> None:
    """Cross-entropy on bf16 logits with no autocast and no .float(): the three tokens ×
    vocabulary buffers are 2 bytes, not 4, and the stale set shrinks by as much."""
    fp32 = _q(loss="eager")
    bf16 = fp32.model_copy(update={"fp32_loss": False})
    t = 4 * 4096
    assert logits_bytes(Q, fp32) == t * Q.vocab_size * FP32 * LOSS_FP32_BUFFERS
    assert logits_bytes(Q, bf16) == t * Q.vocab_size * 2 * LOSS_FP32_BUFFERS
    assert memory_estimate(Q, bf16).breakdown["logits_and_loss"] < \
        memory_estimate(Q, fp32).breakdown["logits_and_loss"]
    # a chunked or fused loss casts per chunk whatever the flag
    chunked = _q(loss="chunked")
    assert logits_bytes(Q, chunked) == logits_bytes(
        Q, chunked.model_copy(update={"fp32_loss": False}))


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


def test_padded_batches_under_transformers_sdpa_are_named() -> None:
    """HF and TRL pad each batch unless told to pack: SDPA then gets a mask and leaves its flash
    kernel; the estimate, which counts causal FlashAttention, says so. Not for one sample per
    batch, packed data, eager attention, or frameworks with attention of their own."""
    def noted(**kw: object) -> bool:
        _, _, notes = Job(model="meta-llama/Llama-2-7b-hf", **kw).resolve()  # type: ignore[arg-type]
        return any(n.startswith("padded batches") for n in notes)

    assert noted(batch_size=4) and noted(batch_size=2, framework="trl")
    assert not noted(batch_size=1)
    assert not noted(batch_size=4, packed=True)
    assert not noted(batch_size=4, flash_attention=False)
    assert not noted(batch_size=4, framework="torchtune")
    assert not noted(batch_size=4, framework="unsloth")
