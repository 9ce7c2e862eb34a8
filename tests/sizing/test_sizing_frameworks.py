"""Framework presets (sizing/data/frameworks.csv): what they set, and the time their knobs cost.

The knobs' memory effects are tested beside their terms (tests/sizing/test_memory_*.py)."""

from __future__ import annotations

import csv
import re

import pytest
from memory_cases import qlora

from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import UserInputError
from gpuscout.sizing.architectures import lookup
from gpuscout.sizing.estimate import estimate
from gpuscout.sizing.frameworks import FRAMEWORKS_CSV, GENERIC, cited, fill, presets
from gpuscout.sizing.job import Job
from gpuscout.sizing.memory import memory_estimate
from gpuscout.sizing.memory_activations import activation_bytes
from gpuscout.sizing.memory_loss import CHUNKED_LOSS_CHUNKS, logits_bytes
from gpuscout.sizing.memory_weights import (
    NF4_BYTES,
    frozen_weight_bytes,
    trainable_bytes,
)
from gpuscout.sizing.peft import trainable_params
from gpuscout.sizing.throughput import time_estimate
from gpuscout.sizing.types import JobSpec

A = lookup("meta-llama/Llama-2-7b-hf")
Q = lookup("Qwen/Qwen2.5-7B")
L31 = lookup("meta-llama/Llama-3.1-8B")
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
        if setting not in JobSpec.model_fields:
            continue  # distributed_optimizer: a sharding, checked through it
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
    assert spec.checkpoint_offload and spec.loss == "unsloth" and not spec.upcast_non_quantized
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


def test_offloading_costs_time_only_when_pcie_cannot_keep_up() -> None:
    gpu = load_catalog().gpu("l4-24gb")
    base = time_estimate(Q, qlora(), gpu, "bf16")
    off = time_estimate(Q, qlora(checkpoint_offload=True), gpu, "bf16")
    assert off.step_time_s >= base.step_time_s
    assert any("offloading" in n for n in off.notes)


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


# --- each framework's preset acts only through the rows it cites ---------------------------

FRAMEWORKS = Job.model_fields["framework"].annotation.__args__
GPU = load_catalog().gpu("a100-sxm-80gb")
# One job per code path the presets tell apart: method, one or several GPUs, short or long
# sequences, with and without accumulation.
SHAPES = [dict(method="qlora", seq_len=2048, batch_size=2),
          dict(method="lora", seq_len=1024),
          dict(method="lora", seq_len=256, grad_accum=4),
          dict(method="full", seq_len=2048, batch_size=2),
          dict(method="full", seq_len=512, gpus=2, sharding="fsdp"),
          dict(method="lora", seq_len=2048, gpus=4, sharding="zero2")]


def _given(shape: dict[str, object]) -> dict[str, object]:
    """The options as Job hands them to the preset (before any is filled)."""
    return {"gpus": 1, "grad_accum": 1, "quant": "none", **shape}


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_preset_changes_the_estimate_only_through_the_values_it_cites(
        framework: str) -> None:
    """The job a preset makes is the generic job with exactly the cited values of the rows
    that hold for it set explicitly, so memory and time move only through them; and every
    setting the preset moves away from the generic job has a row, cited to a file at a
    commit, that holds for this job."""
    for shape in SHAPES:
        rows = cited(framework, _given(shape))
        explicit = {k: rows[k].value if k in rows else GENERIC[k] for k in GENERIC}
        _, preset, _ = Job(model="meta-llama/Llama-3.1-8B", framework=framework,
                           **shape).resolve()  # type: ignore[arg-type]
        _, stated, _ = Job(model="meta-llama/Llama-3.1-8B", framework="hf",
                           **shape, **explicit).resolve()  # type: ignore[arg-type]
        assert preset == stated, (framework, shape)
        a = estimate(L31, preset, GPU)
        b = estimate(L31, stated, GPU)
        assert a.memory == b.memory and a.time == b.time
        generic = JobSpec(**fill(None, {**preset.model_dump(exclude=set(GENERIC)),
                                        **{k: None for k in GENERIC}})[0])
        moved = {k for k in GENERIC if k in JobSpec.model_fields
                 and getattr(preset, k) != getattr(generic, k)}
        assert moved <= set(rows), (framework, shape, moved - set(rows))
        assert all(SOURCE.match(rows[k].source) for k in moved)


def test_litgpt_runs_its_single_device_recipes_without_checkpointing() -> None:
    """finetune/lora.py and full.py pick strategy "auto" on one device (no activation
    checkpointing) and checkpoint every block only under their multi-GPU strategies; the
    config_hub recipes run bf16-true: bf16 adapters, a bf16 loss over 16-bit logits that
    fit() holds through backward."""
    _, one, notes = Job(model="meta-llama/Llama-3.1-8B", framework="litgpt").resolve()
    _, two, _ = Job(model="meta-llama/Llama-3.1-8B", framework="litgpt", gpus=2,
                    sharding="fsdp").resolve()
    assert not one.grad_checkpointing and two.grad_checkpointing
    assert (one.adapter_fp32, one.fp32_loss, one.logits_kept, one.loss) == (
        False, False, True, "chunked")
    assert not one.base_fp32 and not one.mixed_precision
    assert any("grad_checkpointing=false" in n for n in notes)
    # without checkpointing every block keeps its saved tensors: much more than the inputs
    kept = activation_bytes(L31, one, "bf16")
    ckpt = activation_bytes(L31, one.model_copy(update={"grad_checkpointing": True}), "bf16")
    assert kept > 5 * ckpt


def test_litgpt_qlora_quantizes_the_head_and_leaves_the_embedding_a_gradient() -> None:
    """BitsandbytesPrecision replaces every nn.Linear (the head too); the StableEmbedding swap
    after freezing leaves a dense bf16 embedding gradient; the eager/chunked loss buffers are
    bf16 and the 16-bit logits stay allocated."""
    _, spec, _ = Job(model="meta-llama/Llama-3.1-8B", framework="litgpt",
                     method="qlora").resolve()
    assert spec.quantize_head and spec.embedding_grad and spec.quant == "nf4"
    plain = spec.model_copy(update={"quantize_head": False, "embedding_grad": False})
    head = L31.vocab_size * L31.hidden_size
    assert frozen_weight_bytes(L31, plain, "bf16") - frozen_weight_bytes(L31, spec, "bf16") \
        == pytest.approx(head * (2 - NF4_BYTES))  # bnb.nf4: no double quantization
    grads = memory_estimate(L31, spec).breakdown["gradients"] - \
        memory_estimate(L31, plain).breakdown["gradients"]
    assert grads == pytest.approx(L31.embedding_params * 2 / 1e9, abs=2e-3)
    t = spec.batch_size * spec.seq_len
    chunk = -(-t // CHUNKED_LOSS_CHUNKS)
    assert logits_bytes(L31, spec) == (t + 2 * chunk) * L31.vocab_size * 2 + \
        t * L31.vocab_size * 2
    # a LoRA run has no quantized head nor the swap
    _, lora, _ = Job(model="meta-llama/Llama-3.1-8B", framework="litgpt").resolve()
    assert not lora.quantize_head and not lora.embedding_grad


def test_the_bare_litgpt_cli_keeps_an_fp32_base_under_autocast() -> None:
    """--base-fp32 (Fabric bf16-mixed, litgpt's CLI default without a config): the frozen
    base in fp32 and the 16-bit casts the matmuls save for backward."""
    job = JobSpec(method="lora", seq_len=1024, grad_checkpointing=False)
    fp32 = job.model_copy(update={"base_fp32": True})
    assert frozen_weight_bytes(L31, fp32, "bf16") == 2 * frozen_weight_bytes(L31, job, "bf16")
    blocks = L31.linear_weight_params
    casts = memory_estimate(L31, fp32).breakdown["autocast_copy"]
    assert casts == pytest.approx((blocks + L31.output_projection_params) * 2 / 1e9, abs=2e-3)
    ckpt = memory_estimate(L31, fp32.model_copy(update={"grad_checkpointing": True}))
    assert ckpt.breakdown["autocast_copy"] < casts / 10  # one block's casts at a time
    with pytest.raises(UserInputError, match="base-fp32"):
        JobSpec(method="qlora", base_fp32=True)
    with pytest.raises(UserInputError, match="quantize-head"):
        JobSpec(method="lora", quantize_head=True)
    with pytest.raises(UserInputError, match="embedding-grad"):
        JobSpec(method="full", embedding_grad=True)


def test_torchtune_builds_bf16_adapters_and_steps_full_single_device_in_backward() -> None:
    """lora_finetune_single_device builds the model, adapters included, in bf16 and checks
    it; the full single-device config pages 8-bit AdamW states and steps in backward, the
    distributed one uses fused AdamW."""
    _, lora, _ = Job(model="meta-llama/Llama-3.1-8B", framework="torchtune").resolve()
    assert not lora.adapter_fp32
    pt = trainable_params(L31, lora)
    state = trainable_bytes(L31, lora, "bf16")
    assert (state.weight, state.grad, state.optimizer) == (2 * pt, 2 * pt, 4 * pt)
    _, full1, _ = Job(model="meta-llama/Llama-3.1-8B", framework="torchtune",
                      method="full").resolve()
    assert (full1.optimizer, full1.optimizer_in_backward, full1.grad_clipping) == (
        "paged-adamw-8bit", True, False)
    _, accum, _ = Job(model="meta-llama/Llama-3.1-8B", framework="torchtune", method="full",
                      grad_accum=4).resolve()
    assert not accum.optimizer_in_backward  # the recipe refuses accumulation with it
    _, dist, _ = Job(model="meta-llama/Llama-3.1-8B", framework="torchtune", method="full",
                     gpus=2, sharding="fsdp").resolve()
    assert (dist.optimizer, dist.optimizer_in_backward) == ("adamw", False)


def test_unsloth_offloads_checkpoints_only_from_512_tokens() -> None:
    """apply_unsloth_gradient_checkpointing turns "unsloth" into plain checkpointing below a
    max_seq_length of 512."""
    def offload(seq: int) -> bool:
        _, spec, _ = Job(model="meta-llama/Llama-3.1-8B", framework="unsloth",
                         seq_len=seq).resolve()
        return spec.checkpoint_offload and spec.grad_checkpointing
    assert offload(512) and offload(4096) and not offload(511) and not offload(128)


def test_axolotl_checkpoints_only_when_its_config_says_so() -> None:
    """gradient_checkpointing defaults to False in axolotl's schema."""
    _, spec, notes = Job(model="meta-llama/Llama-3.1-8B", framework="axolotl").resolve()
    assert not spec.grad_checkpointing
    assert any("grad_checkpointing=false" in n for n in notes)
    _, spec, _ = Job(model="meta-llama/Llama-3.1-8B", framework="axolotl",
                     grad_checkpointing=True).resolve()
    assert spec.grad_checkpointing


def test_conditions_in_the_file_are_read_and_one_row_holds_at_a_time() -> None:
    rows = presets()["litgpt"]["grad_checkpointing"]
    assert {r.when for r in rows} == {(("gpus", "=", "1"),), (("gpus", ">", "1"),)}
    assert cited("litgpt", {"gpus": 1})["grad_checkpointing"].value is False
    assert cited("litgpt", {"gpus": 8})["grad_checkpointing"].value is True
    # qlora means an NF4 base whatever --quant says, as JobSpec rules
    assert "quantize_head" in cited("litgpt", {"method": "qlora", "quant": "none"})
    assert "quantize_head" not in cited("litgpt", {"method": "lora", "quant": "none"})
