"""Saved activations of one micro-batch: per block, with and without recomputation, and what
activation offloading moves to CPU RAM."""

from __future__ import annotations

from dataclasses import dataclass

from gpuscout.sizing.architectures import Architecture, Linear
from gpuscout.sizing.fp8 import saved_linear_input_bytes
from gpuscout.sizing.memory_units import DTYPE_BYTES, FP32
from gpuscout.sizing.memory_weights import uses_kbit_upcast
from gpuscout.sizing.peft import is_lora_target
from gpuscout.sizing.types import Dtype, JobSpec

# Activation offloading (torchtune OffloadActivations, TRL activation_offloading, Unsloth's
# offloaded checkpointing): saved tensors are copied to pinned CPU memory on a side stream as
# the forward produces them and copied back just before the backward needs them; the layer in
# use and the one in transfer stay on the GPU.
OFFLOAD_RESIDENT_LAYERS = 2

# Models whose attention probabilities go through dropout during training (config defaults:
# T5 dropout_rate, BERT attention_probs_dropout_prob, GPT-2 attn_pdrop = 0.1). Llama-style
# models train with attention_dropout 0.
_ATTN_DROPOUT_TYPES = frozenset({"t5", "bert", "roberta", "gpt2"})


def _activation_split(arch: Architecture, job: JobSpec, dtype: Dtype) -> _ActivationSplit:
    """Saved activations of one micro-batch by layer (see `_ActivationSplit`)."""
    ab = FP32 if dtype == "fp32" or uses_kbit_upcast(job) else DTYPE_BYTES[dtype]
    b = job.batch_size
    s_enc = job.positions
    s_kv_extra = job.num_virtual_tokens if job.method == "prefix" else 0
    enc_dec = arch.arch == "encoder-decoder"
    s_dec = (job.decoder_seq_len or job.seq_len) if enc_dec else s_enc
    lora = job.method in ("lora", "qlora", "dora")
    n_enc = arch.num_layers
    blocks = arch.blocks()

    per_block: list[float] = []
    kinds = arch.block_kinds()
    seen: dict[tuple[int, int], float] = {}  # blocks repeat: count each kind once
    for i, block in enumerate(blocks):
        decoder = enc_dec and i >= n_enc
        s_self = (s_dec if decoder else s_enc) + s_kv_extra
        tokens = b * (s_dec if decoder else s_enc)
        shape = (kinds[i], s_self)
        if shape not in seen:
            seen[shape] = _block_bytes_per_token(arch, job, block, ab, s_self, s_enc, lora)
        per_tok = seen[shape]
        cross_kv = b * s_enc * 2 * arch.kv_dim * ab if decoder else 0.0
        per_block.append(tokens * per_tok + cross_kv)

    tokens_out = b * s_dec
    head_input = ab * arch.hidden_size if job.train_embeddings else 0  # a trainable head's input
    final = tokens_out * (arch.hidden_size * (FP32 + (2 * ab if job.method == "full" else 0))
                          + head_input)
    if not job.grad_checkpointing:
        return _ActivationSplit(kept=per_block, working=max(per_block), final=final)
    # Full recompute keeps each block's input and re-runs one block at a time during backward
    # (Korthikanti et al. 2022, §4: 2·s·b·h per layer plus one layer's activations).
    ckpt = [float(b) * (s_dec if enc_dec and i >= n_enc else s_enc) * arch.hidden_size * ab
            for i in range(len(blocks))]
    return _ActivationSplit(kept=ckpt, working=max(per_block), final=final)


@dataclass(frozen=True)
class _ActivationSplit:
    """What a micro-batch's forward leaves saved: `kept` per layer until its backward (the
    checkpointed block inputs, or every saved tensor without checkpointing), `working` the
    one block being recomputed/back-propagated, `final` the last norm and head input."""

    kept: list[float]
    working: float
    final: float


def _offloads(job: JobSpec) -> bool:
    return job.activation_offloading or (job.checkpoint_offload and job.grad_checkpointing)


def activation_bytes(arch: Architecture, job: JobSpec, dtype: Dtype) -> float:
    """Saved activations on the GPU for one micro-batch (bytes), including the final norm.

    With checkpointing, one input per block plus one block's activations; without, every
    block's saved tensors. Offloading (`activation_offloading`, or `checkpoint_offload` with
    checkpointing: Unsloth's offloaded gradient checkpointing) moves the per-layer tensors to
    CPU RAM and keeps only OFFLOAD_RESIDENT_LAYERS layers of them on the GPU.
    """
    split = _activation_split(arch, job, dtype)
    if not _offloads(job):
        if job.grad_checkpointing:
            return sum(split.kept) + split.working + split.final
        return sum(split.kept) + split.final
    resident = sum(sorted(split.kept)[-OFFLOAD_RESIDENT_LAYERS:])
    if job.grad_checkpointing:
        return resident + split.working + split.final
    return max(resident, split.working) + split.final


def offloaded_activation_bytes(arch: Architecture, job: JobSpec, dtype: Dtype) -> float:
    """Bytes of saved activations that wait in CPU RAM per micro-batch (0 without offload)."""
    if not _offloads(job):
        return 0.0
    split = _activation_split(arch, job, dtype)
    return sum(split.kept) - sum(sorted(split.kept)[-OFFLOAD_RESIDENT_LAYERS:])


# Complex on purpose: every term of the per-token activation sum is one branch.
def _block_bytes_per_token(arch: Architecture, job: JobSpec, block: list[Linear], ab: int,  # noqa: C901
                           s_kv: int, s_enc: int, lora: bool) -> float:
    """Bytes one token leaves saved in one block when nothing is recomputed.

    Counted tensor by tensor as autograd saves them (PyTorch saves a matmul's input only when
    the weight needs a gradient, so frozen linears save nothing): HF norms upcast to fp32 and
    keep that input; FlashAttention/SDPA keep q, k, v and the output (Dao et al. 2022);
    eager attention also keeps the fp32 softmax and its 16-bit copy per key (Korthikanti et al.
    2022 count 5·a·s bytes with dropout); the gated MLP keeps gate, act(gate) and up.
    """
    h = arch.hidden_size
    full = job.method == "full"
    # a trained linear's input kept for its weight gradient: in FP8 under Transformer Engine
    # (LoRA's adapters save theirs in 16 bits; a frozen base linear saves none)
    lin = saved_linear_input_bytes(job, ab) if full else ab

    def adapted(m: Linear) -> bool:
        return lora and is_lora_target(m, job.lora_targets)

    def needs_input(m: Linear) -> bool:
        return full or adapted(m) or (job.method == "ia3" and m.name == "down")

    n_norms = arch.norms_per_layer + (1 if any(m.group == "cross_attn" for m in block) else 0)
    total = n_norms * (FP32 * h + (ab * h if full else 0))
    if job.method == "adapter":
        m_dim = max(1, h // job.adapter_reduction)
        total += ab * (h + 2 * m_dim)  # bottleneck input, hidden, activation

    for group in ("attn", "cross_attn"):
        mods = [m for m in block if m.group == group]
        if not mods:
            continue
        keys = s_enc if group == "cross_attn" else s_kv
        if any(needs_input(m) for m in mods if m.name in ("q", "k", "v", "qkv")):
            total += lin * h  # the normed input shared by q, k, v
        if job.flash_attention:
            total += ab * (2 * arch.q_dim + 2 * arch.kv_dim)  # q, k, v, output (+ tiny lse)
        else:
            total += ab * (arch.q_dim + 2 * arch.kv_dim)
            softmax = FP32 + (ab if ab < FP32 else 0)
            dropout = (1 + ab) if arch.model_type in _ATTN_DROPOUT_TYPES else 0
            total += arch.num_heads * keys * (softmax + dropout)
        if any(needs_input(m) for m in mods if m.name == "o"):
            total += lin * arch.q_dim

    mlp_kinds = [m for m in block if m.group in ("mlp", "expert", "shared_expert")]
    for group, weight in (("mlp", 1.0), ("expert", float(arch.experts_per_token)),
                          ("shared_expert", 1.0)):
        mods = [m for m in mlp_kinds if m.group == group]
        if not mods:
            continue
        f = next(m.d_in for m in mods if m.name == "down")
        # act input (+ act output and up). Under torch.compile the min-cut partitioner of
        # AOTAutograd recomputes cheap pointwise ops in the backward instead of saving them,
        # so the gated MLP keeps gate and up but not act(gate).
        saved = (3 if arch.gated_mlp else 1) * ab * f
        if job.compile and arch.gated_mlp:
            saved -= ab * f
        if any(needs_input(m) for m in mods if m.name == "down"):
            saved += lin * f
        if any(needs_input(m) for m in mods if m.name != "down"):
            saved += lin * h
        if group == "expert":
            saved += ab * h  # tokens gathered per expert
        total += weight * saved
    if arch.is_moe and any(m.group == "router" for m in block):
        total += FP32 * arch.num_experts  # router probabilities in fp32

    for m in block:
        if adapted(m):
            total += m.count * FP32 * job.lora_rank  # lora_A output, kept for lora_B's grad
            if job.lora_dropout > 0:
                # lora_A saves the dropped-out copy of its input, and dropout its mask
                total += m.count * (ab + 1) * m.d_in
            if job.method == "dora":
                total += m.count * ab * m.d_out  # base output, kept for the magnitude grad
    return total
