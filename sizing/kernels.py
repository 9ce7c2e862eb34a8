"""What one training pass launches: kernels and the bytes its memory-bound kernels move. Pure.

A step is three kinds of work (He, "Making Deep Learning Go Brrrr From First Principles",
horace.io/brrr_intro.html): matmuls, limited by the tensor cores; pointwise and reduction
kernels (norms, rotary embeddings, activations, residual adds, the LoRA scale and add, the loss
over the logits), limited by memory bandwidth; and overhead, the host time PyTorch spends on
every op it dispatches, a kernel or a view. This module counts the last two from the modules an
eager forward runs, written after the Hugging Face implementations (LlamaRMSNorm upcasts to
fp32 and back, apply_rotary_pos_emb rotates q and k with five tensor ops each, the gated MLP is
act(gate) * up, PEFT's LoRA adds `B(A(x)) * scaling` to the frozen output). Backward reads each
pointwise op's saved inputs and the incoming gradient and writes one gradient: twice the
forward's bytes and kernels. Under torch.compile Inductor fuses each chain of pointwise ops into
one kernel that reads its inputs and writes its output once, and views cost nothing; Unsloth's
and Liger's Triton kernels (`fused_kernels`) fuse the same chains, while the views stay.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from gpuscout.sizing.architectures import Architecture, Linear
from gpuscout.sizing.peft import is_lora_target
from gpuscout.sizing.types import JobSpec

FP32 = 4
# Models that train with dropout on the attention probabilities and hidden states (config
# defaults: BERT hidden_dropout_prob / attention_probs_dropout_prob, GPT-2 resid/attn_pdrop,
# T5 dropout_rate = 0.1); Llama-style models train without.
DROPOUT_TYPES = frozenset({"t5", "bert", "roberta", "gpt2"})
# Backward of a pointwise op: read its saved input(s) and the gradient, write one gradient.
BACKWARD_FACTOR = 2
LOSS_KERNELS = 8


@dataclass(frozen=True)
class Dequant:
    """What a quantized base spends making each matmul's 16-bit weight."""

    bytes_per_weight: float
    kernels: int  # per quantized linear, on every pass that dequantizes
    in_backward: bool  # the backward dequantizes again (else it reuses the forward's copy)


def dequant_cost(job: JobSpec) -> Dequant:
    """The dequantization of a quantized base, per weight and pass (forward and recompute always;
    backward too unless the backend keeps the forward's 16-bit copy for it).

    - bitsandbytes NF4 (Linear4bit): one `dequantize_4bit` kernel reads the packed half byte and
      writes the 16-bit weight; double quantization first dequantizes the absmax scales (one
      more, tiny kernel). Its autograd function dequantizes again in backward.
    - torchao NF4 (torchtune): `NF4Tensor.get_original_weight` in eager tensor ops
      (pytorch/ao torchao/dtypes/nf4tensor.py): `>> 4` and `& 0b1111` on the packed bytes, each
      cast to int64, two lookups into the 16-entry table, the block scalers dequantized and
      expanded, two multiplies and a stack: ~33 bytes per weight in ~14 kernels; under
      torch.compile one fused kernel, as bitsandbytes.
    - LLM.int8 (Linear8bitLt): the int8 weight scaled back per row to 16 bits (read 1, write 2)
      around the row-wise activation quantization and outlier split (~4 kernels).
    - GPTQ/AWQ int4 (auto-gptq's `QuantLinear`, qlinear_cuda_old.py at 179776b: a trainable
      layer turns its CUDA kernel off and unpacks in eager tensor ops): `bitwise_right_shift` of
      the packed int32 words broadcast to one int32 per weight (read 0.5, write 4), `.to(int8)`
      (4 + 1), `bitwise_and` in place (1 + 1), `- zeros` (1 + 1), `scales *` into fp16 (1 + 2):
      16.5 bytes per weight in 5 kernels, and 4 tiny ones unpacking the group zeros. The matmul
      is a plain `torch.matmul`, whose backward reuses that fp16 weight: no dequantization in
      backward.
    """
    if job.quant == "nf4":
        if job.nf4_backend == "torchao" and not job.compile:
            return Dequant(33.0, 14, True)
        double = 1 if job.double_quant and job.nf4_backend == "bitsandbytes" else 0
        return Dequant(0.5 + 2.0, 1 + double, True)
    if job.quant == "int8":
        return Dequant(1.0 + 2.0, 4, True)
    if job.quant == "gptq":
        return Dequant(0.5 + 4 + 4 + 1 + 1 + 1 + 1 + 1 + 1 + 2, 5 + 4, False)
    return Dequant(0.0, 0, True)


@dataclass(frozen=True)
class PassCost:
    """One forward pass over the model for one token, or its kernel counts per micro-batch."""

    pointwise_bytes: float  # per token, memory-bound kernels of the blocks
    cast_bytes: float  # per token, dtype casts in the blocks (a backward of the same size)
    loss_bytes: float  # per token, the loss over the logits
    matmul_kernels: int  # per micro-batch: base linears (and their dequantization)
    other_kernels: int  # per micro-batch: everything else
    view_ops: int  # per micro-batch: ops that launch no kernel but pay the host's dispatch
    frozen_matmul_kernels: int  # of matmul_kernels, those whose weight gets no gradient
    forward_only_kernels: int = 0  # of matmul_kernels, those no backward runs (a dequantization)


def _rotary(arch: Architecture) -> bool:
    return arch.arch == "decoder" and not arch.learned_positions and \
        not arch.relative_attention_buckets


def _norm(arch: Architecture, ab: int, compiled: bool, autocast: bool = False
          ) -> tuple[float, int]:
    """(bytes per element, kernels) of one norm."""
    if arch.norm == "none":
        return 0.0, 0
    if compiled:
        return 2.0 * ab, 1  # one fused kernel
    if arch.norm == "layer":
        if autocast:  # layer_norm is on autocast's fp32 list: its input is cast up, then down
            return 2.0 * ab + 2 * (ab + FP32), 3
        return 2.0 * ab, 1  # F.layer_norm is one kernel already
    # LlamaRMSNorm: to(fp32), pow, mean, add eps, rsqrt, mul, to(dtype), mul by the weight
    upcast = 0 if ab == FP32 else ab + FP32
    return upcast + 2 * FP32 + FP32 + 2 * FP32 + (FP32 + ab) + 2 * ab, 8


@dataclass
class _Tally:
    """Forward pointwise bytes per token and kernels per micro-batch, summed over modules."""

    bytes_: float = 0.0
    cast_bytes: float = 0.0  # dtype casts: their backward casts the gradient, as many bytes
    linear: int = 0  # base matmuls and their dequantization
    frozen: int = 0  # of those, the ones whose weight gets no gradient
    forward_only: int = 0  # of those, the ones no backward runs again
    other: int = 0
    views: int = 0  # ops that launch nothing but pay the same dispatch (view, transpose, slice)


def _fused(job: JobSpec) -> bool:
    """Pointwise chains run as one kernel each: torch.compile, or hand-written Triton kernels."""
    return job.compile or job.fused_kernels


def _attention(arch: Architecture, job: JobSpec, group: str, ab: int, s_kv: int,
               t: _Tally) -> None:
    fused = _fused(job)
    if _rotary(arch) and group == "attn":
        width = arch.q_dim + arch.kv_dim  # q and k rotated
        t.bytes_ += width * (2 * ab if fused else 10 * ab)
        t.other += 1 if fused else 10
        t.views += 0 if fused else 6  # cos/sin unsqueezed, both halves of q and k sliced
    t.bytes_ += 2 * ab * arch.q_dim  # the output's transpose back to (tokens, heads·dim)
    t.other += 2  # the attention kernel and that copy
    # q, k, v viewed as heads and transposed; the output transposed and reshaped back (views
    # a compiled graph does not dispatch)
    t.views += 0 if job.compile else 8
    if not job.flash_attention:
        # scores scaled, masked, softmax in fp32 and back, (dropout), per head and key
        dropout = 2 * ab + 1 if arch.model_type in DROPOUT_TYPES else 0
        t.bytes_ += arch.num_heads * s_kv * (6 * ab + 2 * FP32 + dropout)
        t.other += 6


def _linear(arch: Architecture, job: JobSpec, m: Linear, ab: int, t: _Tally,
            autocast: bool, compute_cast_bytes: int) -> None:
    if m.group == "router":
        t.other += 3  # softmax, top-k, the expert index bookkeeping
    t.linear += m.count  # one matmul per expert matrix in an eager MoE loop
    if compute_cast_bytes and job.quant != "none":
        # bitsandbytes' Linear4bit/Linear8bitLt: x.to(compute_dtype) before the matmul and
        # out.to(x.dtype) after it, when the activations are in another dtype
        through = arch.experts_per_token if m.group == "expert" else m.count
        t.cast_bytes += through * (ab + compute_cast_bytes) * (m.d_in + m.d_out)
        t.other += 2 * m.count
    if autocast:
        t.linear += m.count  # autocast casts the fp32 weight to 16 bits before each matmul
    if job.is_peft:
        t.frozen += m.count  # a PEFT job's base weights get no gradient
        if job.quant != "none":
            dequant = dequant_cost(job)
            kernels = dequant.kernels * m.count  # before each quantized matmul
            t.linear += kernels
            if dequant.in_backward:
                t.frozen += kernels
            else:
                t.forward_only += kernels
    tokens_through = arch.experts_per_token if m.group == "expert" else m.count
    if job.method in ("lora", "qlora", "dora") and is_lora_target(m, job.lora_targets):
        _lora(job, m, ab, tokens_through, t)
    elif job.method == "ia3" and m.name in ("k", "v", "qkv", "down"):
        t.bytes_ += 2 * ab * (m.d_in if m.name == "down" else m.d_out)
        t.other += 1


def _lora(job: JobSpec, m: Linear, ab: int, through: float, t: _Tally) -> None:
    """What one adapted module adds to the frozen one: the A and B matmuls, the scale and the
    add, the input's cast to the adapter's dtype and its dropout."""
    t.bytes_ += through * (2 if _fused(job) else 5) * ab * m.d_out
    t.other += m.count * (3 if _fused(job) else 4)
    lora_in = ab  # the element size the adapter's input arrives in
    if not _fused(job):
        if ab < FP32 and job.adapter_fp32:
            # PEFT's adapters are fp32 (autocast_adapter_dtype), and LoRA's forward casts each
            # module's 16-bit input to them (`_cast_input_dtype`: x.to(fp32)); under autocast
            # lora_A casts it back to 16 bits for its matmul
            lora_in = FP32
            casts = 2 if job.mixed_precision else 1
            t.cast_bytes += through * casts * (ab + FP32) * m.d_in
            t.other += m.count * casts
        else:
            t.views += m.count  # the cast is a no-op that still dispatches
    if job.lora_dropout > 0:
        # each module's own nn.Dropout on its input (PEFT applies it per adapted module, q, k
        # and v each): read the input, write the result and its one-byte mask
        t.bytes_ += through * (2 * lora_in + 1) * m.d_in
        t.other += m.count
    if job.method == "dora":
        t.other += m.count * 6  # the column norm of W + BA and the magnitude rescale


def _mlp(arch: Architecture, job: JobSpec, block: list[Linear], ab: int, t: _Tally) -> None:
    for group, through in (("mlp", 1.0), ("expert", float(arch.experts_per_token)),
                           ("shared_expert", 1.0)):
        mods = [m for m in block if m.group == group]
        if not mods:
            continue
        f = next(m.d_in for m in mods if m.name == "down")
        if arch.gated_mlp:
            t.bytes_ += through * (3 if _fused(job) else 5) * ab * f  # act(gate) * up
        else:
            t.bytes_ += through * 2 * ab * f
        kernels = 2 if arch.gated_mlp and not _fused(job) else 1
        if group == "expert":
            # eager MoE loops over the experts: gather each one's tokens, scatter them back
            kernels = mods[0].count * (kernels + 3)
            t.bytes_ += through * 2 * 3 * ab * arch.hidden_size
        t.other += kernels


def _block_forward(arch: Architecture, job: JobSpec, block: list[Linear], ab: int,
                   s_kv: int, t: _Tally, autocast: bool, compute_cast_bytes: int) -> None:
    h = arch.hidden_size
    norm_b, norm_k = _norm(arch, ab, _fused(job), autocast)
    n_norms = arch.norms_per_layer + (1 if any(m.group == "cross_attn" for m in block) else 0)
    t.bytes_ += n_norms * h * norm_b + 2 * 3 * ab * h  # the norms, two residual adds
    t.other += n_norms * norm_k + (0 if _fused(job) else 2)
    if arch.model_type in DROPOUT_TYPES:
        t.bytes_ += 2 * (2 * ab + 1) * h  # hidden dropout after attention and MLP (+ mask)
        t.other += 2
    for group in ("attn", "cross_attn"):
        if any(m.group == group for m in block):
            _attention(arch, job, group, ab, s_kv, t)
    for m in block:
        _linear(arch, job, m, ab, t, autocast, compute_cast_bytes)
    _mlp(arch, job, block, ab, t)


def _loss_bytes(arch: Architecture, job: JobSpec, ab: int) -> float:
    """Bytes per token the loss moves over the vocabulary, forward and backward together."""
    v = arch.vocab_size
    if arch.arch == "encoder":
        return 0.0  # a task head over a few labels
    if job.loss == "cce":
        return 0.0  # logits live in on-chip memory only (Wijmans et al. 2024)
    if job.loss in ("fused", "unsloth"):
        return 2 * 2 * ab * v  # one fused kernel reads the logits chunk and writes its grad
    # logits.float(), log_softmax; backward: the NLL gradient written whole, log_softmax's
    # backward, the cast back (transformers ForCausalLMLoss; torchtune and litgpt run the same
    # ops per chunk). A 16-bit loss (`fp32_loss` off) runs the same ops without the casts.
    le = FP32 if job.fp32_loss or job.loss not in ("eager", "chunked") else ab
    casts = 2 * (ab + le) if le != ab else 0
    # final-logit soft-capping (Gemma-2): divide, tanh, multiply, each reading and writing the
    # 16-bit logits (6 × ab), and their backward (2 + 3 + 2 reads and writes)
    softcap = 13 * ab if arch.final_logit_softcapping else 0
    return float((casts + 6 * le + softcap) * v)


def forward_pass(arch: Architecture, job: JobSpec, ab: int, autocast: bool = False,
                 compute_cast_bytes: int = 0) -> PassCost:
    """The pointwise traffic per token and the kernels per micro-batch of one forward.
    `ab`: bytes per activation element; `autocast`: fp32 weights run under torch.autocast
    (mixed precision without sharding); `compute_cast_bytes`: a quantized layer's compute
    dtype when the activations are in another one (0: no casts)."""
    t = _Tally()
    blocks = arch.blocks()
    for kind, n in Counter(arch.block_kinds()).items():  # each kind of block once, times n
        one = _Tally()
        _block_forward(arch, job, blocks[kind], ab, job.seq_len, one, autocast,
                       compute_cast_bytes)
        t.bytes_ += n * one.bytes_
        t.cast_bytes += n * one.cast_bytes
        t.linear += n * one.linear
        t.frozen += n * one.frozen
        t.forward_only += n * one.forward_only
        t.other += n * one.other
        t.views += n * one.views
    # the embedding lookup, the final norm, the head and the loss's handful of kernels
    t.other += 1 + _norm(arch, ab, _fused(job))[1] + 1 + LOSS_KERNELS
    return PassCost(pointwise_bytes=t.bytes_, cast_bytes=t.cast_bytes,
                    loss_bytes=_loss_bytes(arch, job, ab),
                    matmul_kernels=t.linear, other_kernels=t.other, view_ops=t.views,
                    frozen_matmul_kernels=t.frozen, forward_only_kernels=t.forward_only)
