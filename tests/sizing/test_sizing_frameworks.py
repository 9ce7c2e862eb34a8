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
from gpuscout.sizing.frameworks import FRAMEWORKS_CSV, GENERIC, fill, presets
from gpuscout.sizing.job import Job
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
