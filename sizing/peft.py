"""Exact trainable-parameter counts per fine-tuning method, from the architecture's modules.

Counts follow Hugging Face PEFT's defaults, so they match `print_trainable_parameters()`:

- LoRA (Hu et al. 2021): r·(d_in + d_out) per adapted linear; DoRA (Liu et al. 2024) adds a
  magnitude vector of d_out. Targets: `qv` is PEFT's default for the family (q_proj+v_proj, or the
  fused qkv matrix where the model has one), `attn` adds k and o, `all-linear` is every linear in
  the blocks (PEFT's "all-linear": everything but the output layer).
- IA3 (Liu et al. 2022): one vector on the output of k and v and one on the input of the
  feed-forward down projection (PEFT's default target and feedforward modules).
- Prefix tuning (Li & Liang 2021): virtual tokens × layers × 2 (key and value) × kv width.
- Prompt tuning (Lester et al. 2021): virtual tokens × hidden.
- Bottleneck adapters (Pfeiffer et al. 2021, AdapterHub's default): one per block after the
  MLP, hidden → hidden/reduction → hidden with biases.
"""

from __future__ import annotations

from functools import cache

from gpuscout.sizing.architectures import Architecture, Linear
from gpuscout.sizing.types import JobSpec


def is_lora_target(m: Linear, targets: str) -> bool:
    """Whether LoRA with `targets` adapts linear `m` (same answer in every block)."""
    in_attn = m.group in ("attn", "cross_attn")
    if targets == "all-linear":
        return True
    if targets == "attn":
        return in_attn
    return in_attn and m.name in ("q", "v", "qkv")


def lora_targeted(arch: Architecture, targets: str) -> list[Linear]:
    """Every linear (with its per-block count) that LoRA adapts, over all blocks."""
    return [m for block in arch.blocks() for m in block if is_lora_target(m, targets)]


def _lora(arch: Architecture, job: JobSpec, dora: bool) -> int:
    # frozen models hash by value at run time; the stubs do not say so
    return _lora_params(arch, job.lora_targets, job.lora_rank, dora)  # pyright: ignore[reportArgumentType]


@cache  # a recommendation asks it for every machine shape of the same job
def _lora_params(arch: Architecture, targets: str, r: int, dora: bool) -> int:
    return sum(m.count * (r * (m.d_in + m.d_out) + (m.d_out if dora else 0))
               for m in lora_targeted(arch, targets))


def _ia3(arch: Architecture) -> int:
    n = 0
    for block in arch.blocks():
        for m in block:
            if m.group in ("attn", "cross_attn") and m.name in ("k", "v"):
                n += m.d_out
            elif m.group in ("attn", "cross_attn") and m.name == "qkv":
                n += m.d_out  # PEFT scales the fused qkv output as one vector
            elif m.name == "down":
                n += m.count * m.d_in
    return n


def trainable_params(arch: Architecture, job: JobSpec) -> int:
    """Parameters the optimizer updates. For PEFT these are new params added to the model,
    plus, with `train_embeddings` (PEFT modules_to_save=["embed_tokens", "lm_head"]), a
    trainable copy of the embeddings and of an untied LM head: ModulesToSaveWrapper deep-copies
    the module and keeps the frozen original beside it, so the copy adds to the frozen base."""
    return _peft_params(arch, job) + copied_module_params(arch, job)


def copied_module_params(arch: Architecture, job: JobSpec) -> int:
    """Of the trainable parameters, those in modules_to_save copies (embeddings, LM head)."""
    if job.method != "full" and job.train_embeddings:
        return arch.embedding_params + arch.lm_head_params
    return 0


def _peft_params(arch: Architecture, job: JobSpec) -> int:
    if job.method == "full":
        return arch.total_params
    if job.method in ("lora", "qlora"):
        return _lora(arch, job, dora=False)
    if job.method == "dora":
        return _lora(arch, job, dora=True)
    if job.method == "ia3":
        return _ia3(arch)
    if job.method == "prefix":
        return job.num_virtual_tokens * arch.total_layers * 2 * arch.kv_dim
    if job.method == "prompt":
        return job.num_virtual_tokens * arch.hidden_size
    # bottleneck adapter
    h = arch.hidden_size
    m = max(1, h // job.adapter_reduction)
    return arch.total_layers * (2 * h * m + m + h)


def adapter_flops_params(arch: Architecture, job: JobSpec) -> int:
    """Trainable params that sit in a matmul on every token (prompt/prefix ones do not)."""
    if job.method in ("prefix", "prompt"):
        return 0
    return trainable_params(arch, job) if job.is_peft else 0
