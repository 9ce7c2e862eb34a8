"""The loss path's vocabulary-sized buffers: the eager, chunked, fused and Cut Cross-Entropy
losses, and the segments an earlier, shorter batch leaves in the caching allocator."""

from __future__ import annotations

import math

from gpuscout.sizing.architectures import Architecture
from gpuscout.sizing.memory_units import DTYPE_BYTES, FP32, GIB
from gpuscout.sizing.types import JobSpec

# Causal-LM loss, as the code runs it (transformers LlamaForCausalLM / ForCausalLMLoss,
# Qwen-1 modeling_qwen.py, BLOOM): the 16-bit logits are cast to fp32 (explicit .float(), or
# torch.autocast, which runs cross_entropy in fp32) and log_softmax keeps its fp32 output for
# the backward pass. The peak is at the start of the backward pass, in log_softmax's backward:
# its saved fp32 output, the fp32 gradient nll_loss scatters into a dense tokens × vocabulary
# tensor, and the fp32 gradient it returns — three fp32 buffers of tokens × vocabulary (the
# forward holds at most the same: 16-bit logits + 16-bit shifted copy + fp32 cast + fp32
# log-probabilities). Qwen's own fixed-length profile (QwenLM/Qwen README, "Profiling of Memory
# and Speed": LoRA on one A100, 256 → 8192 tokens) grows 1.9–2.1 MB per token for Qwen-1.8B and
# Qwen-7B, i.e. 12 bytes × 151,936 vocabulary (1.82 MB) plus the checkpointed hidden states.
LOSS_FP32_BUFFERS = 3
# Segments one step's loss path leaves in the caching allocator: the 16-bit logits, their
# 16-bit shifted copy (or 16-bit gradient) and the three fp32 buffers above, in bytes per
# token × vocabulary entry. Tensors above 1 MB get segments of their own size (rounded to
# 2 MB), and a freed segment only serves requests no larger than itself (PyTorch CUDA
# semantics docs, "Memory management"; c10 CUDACachingAllocator). When a longer batch follows
# shorter ones, its loss buffers need new segments while those of the earlier longest batch
# stay reserved, empty, until an allocation fails or torch.cuda.empty_cache() runs: one more
# set of loss segments. At 8192 tokens the ms-swift benchmark (variable lengths, cache never
# emptied) reserves 17–20 GB above the allocated peak for Qwen-1.8B/7B/14B LoRA, while Qwen's
# fixed-length profile of the same models at 8192 tokens is within 6 % of it; ms-swift runs
# with thousands of steps hold up to ~3 sets (more record-long batches); we count the one set
# a single longer batch leaves.
LOSS_SEGMENT_BYTES = 2 + 2 + FP32 * LOSS_FP32_BUFFERS

# Chunked / fused linear cross-entropy (Liger-Kernel, Hsu et al. 2024, arXiv:2410.10989) picks a
# chunk so that chunk × vocabulary ≈ tokens × hidden, and keeps an fp32 gradient of the hidden
# states: about tokens × hidden × (the fp32 loss buffers above + 1 fp32 gradient).
CHUNKED_LOSS_BYTES_PER_HIDDEN = FP32 * (LOSS_FP32_BUFFERS + 1)
# Chunked, not fused (torchtune LinearCrossEntropyLoss, num_output_chunks=8; litgpt
# chunked_cross_entropy): each chunk runs F.cross_entropy(logits.float()), and autograd keeps
# every chunk's fp32 log-softmax output until backward, which then handles one chunk at a time
# (its two fp32 gradient buffers). So one fp32 tokens × vocabulary buffer instead of three,
# plus two fp32 buffers of one chunk.
CHUNKED_LOSS_CHUNKS = 8
# Unsloth's fused cross-entropy (unsloth_zoo fused_losses/cross_entropy_loss.py at ce232d6,
# `get_chunk_size`, `_get_chunk_multiplier`): the tokens are cut into as few chunks as keep one
# chunk's fp32 logits within a target, min(half the free VRAM, 4 GiB), in multiples of 4 (or one
# chunk when everything fits), and each chunk's loss and gradients are computed in the forward
# pass (torch.func.grad_and_value) into a gradient of the hidden states allocated for the whole
# batch (`torch.empty_like(hidden_states)`). One chunk holds the eager loss's three fp32 buffers
# at its peak. The target is taken at its 4 GiB cap (cards with 8 GiB or more free then).
UNSLOTH_CE_TARGET_GIB = 4.0
# Cut Cross-Entropy (Wijmans et al. 2024, arXiv:2411.09009, the axolotl plugin): logits are
# computed block by block in on-chip memory and never written out; the forward keeps one fp32
# log-sum-exp per token and the backward writes the fp32 gradient of the hidden states.
CCE_BYTES_PER_HIDDEN = FP32


def logits_bytes(arch: Architecture, job: JobSpec) -> float:
    """Vocabulary-sized loss buffers of one micro-batch (0 for encoder-only classifiers).

    eager: three fp32 tokens × vocabulary buffers (LOSS_FP32_BUFFERS); chunked: one, plus two
    of one chunk (CHUNKED_LOSS_CHUNKS); fused: tokens × hidden, no vocabulary-sized buffer
    survives a chunk; cce: one fp32 hidden-state gradient and log-sum-exp per token; unsloth:
    the three fp32 buffers of one chunk of up to 4 GiB of fp32 logits, and the hidden states'
    16-bit gradient (UNSLOTH_CE_TARGET_GIB). The eager
    and chunked buffers are 16-bit where nothing casts the logits up (`fp32_loss` off: litgpt's
    chunked_cross_entropy under bf16-true), and the model's 16-bit logits add to them where the
    training loop holds them through backward (`logits_kept`: litgpt's fit()).
    """
    if arch.arch == "encoder":
        return 0.0
    s = (job.decoder_seq_len or job.seq_len) if arch.arch == "encoder-decoder" else job.positions
    tokens = job.batch_size * s
    if job.loss == "fused":
        return tokens * arch.hidden_size * CHUNKED_LOSS_BYTES_PER_HIDDEN
    if job.loss == "cce":
        return tokens * (arch.hidden_size * CCE_BYTES_PER_HIDDEN + FP32)
    if job.loss == "unsloth":
        chunk = -(-tokens // unsloth_ce_chunks(tokens, arch.vocab_size))
        return (chunk * arch.vocab_size * FP32 * LOSS_FP32_BUFFERS
                + tokens * arch.hidden_size * DTYPE_BYTES[job.dtype])
    kept = tokens * arch.vocab_size * DTYPE_BYTES[job.dtype] if job.logits_kept else 0
    if job.loss == "chunked":
        chunk = -(-tokens // CHUNKED_LOSS_CHUNKS)
        return (tokens + 2 * chunk) * arch.vocab_size * _loss_element_bytes(job) + kept
    return tokens * arch.vocab_size * (_loss_element_bytes(job) * LOSS_FP32_BUFFERS
                                       + _softcap_bytes(arch, job)) + kept


def unsloth_ce_chunks(tokens: int, vocab: int) -> int:
    """Chunks of Unsloth's fused cross-entropy (`get_chunk_size` at its 4 GiB target)."""
    exact = tokens * vocab * FP32 / GIB / UNSLOTH_CE_TARGET_GIB
    return 1 if exact <= 1 + 1e-9 else math.ceil(exact / 4 - 1e-9) * 4


def _loss_element_bytes(job: JobSpec) -> int:
    """Bytes per element of the eager or chunked loss's tokens × vocabulary buffers: fp32 when
    autocast or the code casts the logits up (`fp32_loss`; torchtune's LinearCrossEntropyLoss
    calls logits.float()), else the 16-bit logits' own size (Qwen-1's QWenLMHeadModel runs
    CrossEntropyLoss on lm_logits as they are, and DeepSpeed's fp16/bf16 engine runs no
    autocast)."""
    return FP32 if job.fp32_loss else DTYPE_BYTES[job.dtype]


def _softcap_bytes(arch: Architecture, job: JobSpec) -> int:
    """Per logit, what final-logit soft-capping keeps for the eager loss's backward: Gemma-2
    (transformers Gemma2ForCausalLM) divides the logits by the cap, takes tanh and multiplies
    back, and tanh keeps its 16-bit output for its gradient."""
    return DTYPE_BYTES[job.dtype] if arch.final_logit_softcapping else 0


def stale_loss_bytes(arch: Architecture, job: JobSpec) -> float:
    """Loss-buffer segments an earlier, shorter longest batch leaves reserved (see
    LOSS_SEGMENT_BYTES); 0 for fixed-length batches (packing, padding to a fixed length) or
    when the cache is emptied between steps, and for encoder-only classifiers."""
    if not job.variable_lengths or arch.arch == "encoder":
        return 0.0
    if job.loss != "eager":
        return logits_bytes(arch, job)
    s = (job.decoder_seq_len or job.seq_len) if arch.arch == "encoder-decoder" else job.positions
    segment = (LOSS_SEGMENT_BYTES - (FP32 - _loss_element_bytes(job)) * LOSS_FP32_BUFFERS
               + _softcap_bytes(arch, job))
    return job.batch_size * s * arch.vocab_size * segment
