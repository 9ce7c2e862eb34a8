"""Per-GPU peak memory of a fine-tuning job, term by term. Pure: no I/O, no globals mutated.

The peak is reached at the end of the forward pass / start of the backward pass, when the
model state, every saved activation and the vocabulary-sized loss buffers are live together:

    allocated = weights + master copy + autocast copy + gradients + optimizer states
                + activations + logits/loss + sharding buffers + dequantization buffer
    reserved  = allocated + fragmentation of what training allocates (not the loaded weights)
                + loss-buffer segments left by an earlier, shorter batch (variable lengths)
    peak      = reserved + CUDA context

Sources for every constant are in the comments; FORMULAS.md (shared/sizing) has the long form.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuscout.sizing.architectures import Architecture, Linear
from gpuscout.sizing.choices import ADAMW
from gpuscout.sizing.kernels import dequant_cost
from gpuscout.sizing.peft import copied_module_params, is_lora_target, trainable_params
from gpuscout.sizing.types import Dtype, JobSpec, MemoryEstimate

GB = 1e9
# GPU memory is sold in binary units: an "80GB" A100 holds 80 GiB (nvidia-smi lists 81920 MiB),
# and the ms-swift benchmark rows report up to 78.76 GiB = 84.6e9 bytes reserved on one.
GIB = 2**30


def vram_label(vram_gb: float) -> str:
    """A card's memory as sold and in the decimal GB every estimate is printed in."""
    return f"{vram_gb:g} GiB = {vram_gb * GIB / GB:.1f} GB"


DTYPE_BYTES: dict[str, int] = {"fp32": 4, "fp16": 2, "bf16": 2}
FP32 = 4

# NF4 (QLoRA, Dettmers et al. 2023, §3): 4-bit codes + one fp32 absmax per 64-weight block
# = 4.5 bits. Double quantization stores the absmax in 8 bits with one fp32 constant per 256
# blocks: 4 + 8/64 + 32/(64·256) ≈ 4.127 bits (the paper's "0.373 bits saved per parameter").
NF4_BYTES = 0.5 + FP32 / 64
NF4_DQ_BYTES = 0.5 + 1 / 64 + FP32 / (64 * 256)
# LLM.int8() (Dettmers et al. 2022): int8 weights plus one fp32 scale per output row.
INT8_BYTES = 1.0
# GPTQ (Frantar et al. 2022) and AWQ (Lin et al. 2023) checkpoints as transformers loads them:
# 4-bit codes packed in int32 plus, per group of 128 inputs and per output, an fp16 scale and a
# 4-bit zero point (quantize_config group_size 128, the default of both AutoGPTQ and AutoAWQ).
GPTQ_GROUP = 128
GPTQ_BYTES = 0.5 + (2 + 0.5) / GPTQ_GROUP
# auto-gptq's eager unpacking shifts the packed int32 words into one int32 per weight
GPTQ_UNPACK_BYTES = 4

# bitsandbytes 8-bit optimizers: two 8-bit states plus one fp32 absmax per 2048-value block
# (Dettmers et al. 2021, "8-bit Optimizers via Block-wise Quantization").
ADAM8BIT_STATE_BYTES = 2 * (1 + FP32 / 2048)

# The PyTorch caching allocator holds freed blocks it cannot reuse for differently sized
# requests: on LLM fine-tuning, GMLake (Guo et al., ASPLOS 2024, arXiv:2401.08156) measured
# fragmentation (reserved − allocated) / reserved of 15 % on average (up to 33 %). We use the
# average on what is allocated once training runs (activations, loss buffers, casts,
# gradients, optimizer states, sharding buffers), which interleaves with blocks freed by the
# previous step: reserved = allocated + training-time tensors · 0.15 / (1 − 0.15). Weights are
# loaded into an empty pool before the first step, each large tensor into a segment of its own
# size, and leave no gaps: the ms-swift benchmark's reserved − allocated at 2048 tokens is about
# the same 10–12 GB for Qwen-7B and Qwen-14B, in bf16, GPTQ or NF4: it does not follow weights.
FRAGMENTATION = 0.15

# What a job may use of a card: 95 % of its memory (sold in GiB: an "80GB" card holds 80 GiB).
# The estimate already holds the CUDA context; this margin covers driver/ECC reservations and
# run-to-run variance of the caching allocator (the calibration's errors are of this order).
VRAM_HEADROOM = 0.95

# CUDA context + cuBLAS/cuDNN handles outside the allocator: 0.3–2 GiB depending on driver,
# GPU and lazy module loading; HF's "model memory anatomy" measures 1,343 MB on a V100.
CUDA_CONTEXT_GB = 1.0

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
# Cut Cross-Entropy (Wijmans et al. 2024, arXiv:2411.09009, the axolotl plugin): logits are
# computed block by block in on-chip memory and never written out; the forward keeps one fp32
# log-sum-exp per token and the backward writes the fp32 gradient of the hidden states.
CCE_BYTES_PER_HIDDEN = FP32
# Activation offloading (torchtune OffloadActivations, TRL activation_offloading, Unsloth's
# offloaded checkpointing): saved tensors are copied to pinned CPU memory on a side stream as
# the forward produces them and copied back just before the backward needs them; the layer in
# use and the one in transfer stay on the GPU.
OFFLOAD_RESIDENT_LAYERS = 2

# DeepSpeed ZeRO default bucket sizes (reduce_bucket_size, allgather_bucket_size): 5e8 elements
# (DeepSpeed config docs; EleutherAI cookbook calc_transformer_mem.py uses the same). With
# contiguous_gradients (default true) the gradient bucket is allocated whole, in the model's
# dtype, whatever the number of trainable parameters: stage 3 at optimizer init
# (`__ipg_bucket_flat_buffer = torch.empty(reduce_bucket_size, dtype=self.dtype)`,
# deepspeed/runtime/zero/stage3.py), stages 1–2 at each backward (`ipg_buffer`,
# stage_1_and_2.py). accelerate's DeepSpeed plugin leaves it at the default.
ZERO_BUCKET_ELEMENTS = 5e8

# FSDP gathers one wrapped block for compute and prefetches the next (BackwardPrefetch
# .BACKWARD_PRE): two blocks unsharded at once. DeepSpeed ZeRO-3 keeps gathered parameters
# resident up to stage3_max_live_parameters (default 1e9) and does not release those reused
# within stage3_max_reuse_distance (default 1e9) (DeepSpeed config docs).
GATHERED_BLOCKS = 2
ZERO3_MAX_LIVE_PARAMETERS = 1e9

# Models whose attention probabilities go through dropout during training (config defaults:
# T5 dropout_rate, BERT attention_probs_dropout_prob, GPT-2 attn_pdrop = 0.1). Llama-style
# models train with attention_dropout 0.
_ATTN_DROPOUT_TYPES = frozenset({"t5", "bert", "roberta", "gpt2"})


@dataclass(frozen=True)
class _PerParam:
    """Bytes of each kind of trainable state: per parameter (`per_param_bytes`) or in all
    (`trainable_bytes`)."""

    weight: float
    master: float  # fp32 master copy held by the optimizer (ZeRO-style mixed precision)
    autocast: float  # 16-bit copy torch.autocast caches during forward/backward
    grad: float
    optimizer: float


def _optimizer_state_bytes(job: JobSpec, state_bytes: int, factored_ratio: float) -> float:
    """Optimizer state per parameter; `state_bytes` is the dtype the states are kept in."""
    if job.optimizer in ADAMW:
        return 2 * state_bytes  # momentum and variance (Loshchilov & Hutter 2019)
    if job.optimizer in ("adamw-8bit", "paged-adamw-8bit"):
        return ADAM8BIT_STATE_BYTES
    if job.optimizer == "sgd":
        return state_bytes  # momentum buffer
    # Adafactor (Shazeer & Stern 2018) without momentum (HF default beta1=None): row and column
    # second-moment factors for matrices, a full vector for 1-D params.
    return state_bytes * factored_ratio


def _adafactor_ratio(arch: Architecture, job: JobSpec) -> float:
    if job.is_peft:
        return 1.0  # adapters are tiny; count a full second moment
    factored = sum(m.count * (m.d_in + m.d_out) for b in arch.blocks() for m in b)
    factored += 2 * (arch.vocab_size + arch.hidden_size)  # embedding (+ head) factors
    vectors = arch.total_params - arch.linear_weight_params - arch.embedding_params \
        - arch.lm_head_params
    return (factored + vectors) / arch.total_params


def per_param_bytes(arch: Architecture, job: JobSpec, dtype: Dtype) -> _PerParam:
    """Bytes per trainable parameter, before sharding.

    - fp32: 4 weight + 4 grad + optimizer in fp32 (Transformer Math 101).
    - pure 16-bit (`--pure`): 2 + 2 + states in 16-bit, 8 B/P with AdamW (PEFT MetaMathQA
      benchmark, LLaMA-Factory "pure_bf16").
    - mixed precision, unsharded (torch.autocast/AMP): fp32 weights 4 + 16-bit autocast copy 2 +
      fp32 grads 4 + fp32 states (HF "model memory anatomy": 18 B/P with AdamW).
    - mixed precision under ZeRO/FSDP: 16-bit weights 2 + 16-bit grads 2 + fp32 master 4 +
      fp32 states (ZeRO paper §3.1: 2 + 2 + 12 = 16 B/P with AdamW).
    - PEFT adapters are fp32 (PEFT autocast_adapter_dtype=True): 4 + 4 + fp32 states.
    """
    b = DTYPE_BYTES[dtype]
    ratio = _adafactor_ratio(arch, job) if job.optimizer == "adafactor" else 1.0
    if job.is_peft or dtype == "fp32":
        return _PerParam(FP32, 0, 0, FP32, _optimizer_state_bytes(job, FP32, ratio))
    if not job.mixed_precision:
        return _PerParam(b, 0, 0, b, _optimizer_state_bytes(job, b, ratio))
    if job.sharding in ("zero1", "zero2", "zero3", "fsdp"):
        return _PerParam(b, FP32, 0, b, _optimizer_state_bytes(job, FP32, ratio))
    return _PerParam(FP32, 0, b, FP32, _optimizer_state_bytes(job, FP32, ratio))


def trainable_bytes(arch: Architecture, job: JobSpec, dtype: Dtype) -> _PerParam:
    """Bytes of all trainable parameters' state, by kind, before sharding.

    A PEFT job's adapters follow `per_param_bytes` (fp32). Its trained embeddings and LM head
    (`train_embeddings`, PEFT modules_to_save) do not: ModulesToSaveWrapper deep-copies the
    module in the base model's dtype, and PEFT's `_cast_adapter_dtype` upcasts only the
    parameters of tuner layers (BaseTunerLayer), which the wrapper is not. So the copies train
    like a pure 16-bit model: 16-bit weights and gradients, and AdamW states made like the
    parameter (`torch.zeros_like`), in 16 bits too. Qwen's own profile (QwenLM/Qwen README,
    LoRA with and without trainable embeddings, 1.8B/7B/14B) grows by about 8 bytes per
    copied parameter, not the 16 an fp32 copy would take.
    """
    pp = per_param_bytes(arch, job, dtype)
    pt = trainable_params(arch, job)
    saved = copied_module_params(arch, job)
    b = DTYPE_BYTES[dtype]
    own = _PerParam(b, 0, 0, b, _optimizer_state_bytes(job, b, 1.0))
    rest = pt - saved
    return _PerParam(*(rest * getattr(pp, f) + saved * getattr(own, f)
                       for f in ("weight", "master", "autocast", "grad", "optimizer")))


def uses_kbit_upcast(job: JobSpec) -> bool:
    """PEFT's prepare_model_for_kbit_training runs (and casts non-quantized params to fp32).

    TRL skips it for sharded QLoRA (ZeRO-3/FSDP), whose 4-bit params live in a bf16 storage
    type (PEFT docs accelerate/fsdp.md); GPTQ bases are skipped by PEFT itself.
    """
    return (job.quant in ("nf4", "int8") and job.upcast_non_quantized
            and job.sharding not in ("zero3", "fsdp"))


def nf4_bytes(job: JobSpec) -> float:
    """Bytes per NF4 weight. bitsandbytes quantizes the absmax scales only with double
    quantization; torchao's NF4Tensor (torchtune's QLoRA) always does (to_nf4 block_size 64,
    scaler_block_size 256 with int8 scalers: the same 4.127 bits), whatever --double-quant."""
    if job.nf4_backend == "torchao" or job.double_quant:
        return NF4_DQ_BYTES
    return NF4_BYTES


def _largest_trainable_param(arch: Architecture, job: JobSpec) -> float:
    """Elements of the largest single trainable tensor (a gradient freed on its own)."""
    if job.is_peft:
        biggest = max(max(m.d_in, m.d_out) * job.lora_rank for blk in arch.blocks() for m in blk)
        if job.train_embeddings:
            biggest = max(biggest, arch.vocab_size * arch.hidden_size)
        return float(min(biggest, trainable_params(arch, job)))
    linear = max(m.d_in * m.d_out for blk in arch.blocks() for m in blk)
    return float(max(linear, arch.vocab_size * arch.hidden_size))


def frozen_weight_bytes(arch: Architecture, job: JobSpec, dtype: Dtype) -> float:
    """The frozen base model of a PEFT job, by storage type."""
    b = DTYPE_BYTES[dtype]
    if job.quant == "none":
        return arch.total_params * b
    rest = FP32 if uses_kbit_upcast(job) else b
    linear = arch.linear_weight_params
    if job.quant == "nf4":
        return linear * nf4_bytes(job) + arch.non_linear_params * rest
    if job.quant == "gptq":
        return linear * GPTQ_BYTES + arch.non_linear_params * rest
    scales = sum(m.count * m.d_out for blk in arch.blocks() for m in blk) * FP32
    return linear * INT8_BYTES + scales + arch.non_linear_params * rest


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
            total += ab * h  # the normed input shared by q, k, v
        if job.flash_attention:
            total += ab * (2 * arch.q_dim + 2 * arch.kv_dim)  # q, k, v, output (+ tiny lse)
        else:
            total += ab * (arch.q_dim + 2 * arch.kv_dim)
            softmax = FP32 + (ab if ab < FP32 else 0)
            dropout = (1 + ab) if arch.model_type in _ATTN_DROPOUT_TYPES else 0
            total += arch.num_heads * keys * (softmax + dropout)
        if any(needs_input(m) for m in mods if m.name == "o"):
            total += ab * arch.q_dim

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
            saved += ab * f
        if any(needs_input(m) for m in mods if m.name != "down"):
            saved += ab * h
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


def logits_bytes(arch: Architecture, job: JobSpec) -> float:
    """Vocabulary-sized loss buffers of one micro-batch (0 for encoder-only classifiers).

    eager: three fp32 tokens × vocabulary buffers (LOSS_FP32_BUFFERS); chunked: one, plus two
    of one chunk (CHUNKED_LOSS_CHUNKS); fused: tokens × hidden, no vocabulary-sized buffer
    survives a chunk; cce: one fp32 hidden-state gradient and log-sum-exp per token.
    """
    if arch.arch == "encoder":
        return 0.0
    s = (job.decoder_seq_len or job.seq_len) if arch.arch == "encoder-decoder" else job.positions
    tokens = job.batch_size * s
    if job.loss == "fused":
        return tokens * arch.hidden_size * CHUNKED_LOSS_BYTES_PER_HIDDEN
    if job.loss == "cce":
        return tokens * (arch.hidden_size * CCE_BYTES_PER_HIDDEN + FP32)
    if job.loss == "chunked":
        chunk = -(-tokens // CHUNKED_LOSS_CHUNKS)
        return (tokens + 2 * chunk) * arch.vocab_size * FP32
    return tokens * arch.vocab_size * (_loss_element_bytes(job) * LOSS_FP32_BUFFERS
                                       + _softcap_bytes(arch, job))


def _loss_element_bytes(job: JobSpec) -> int:
    """Bytes per element of the eager loss's tokens × vocabulary buffers: fp32 when autocast
    or the model's code casts the logits up (`fp32_loss`), else the 16-bit logits' own size
    (Qwen-1's QWenLMHeadModel runs CrossEntropyLoss on lm_logits as they are, and DeepSpeed's
    fp16/bf16 engine runs no autocast)."""
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


def dequant_buffer_bytes(arch: Architecture, job: JobSpec, b: int) -> float:
    """The 16-bit weights a quantized base makes on the fly and holds at the peak.

    bitsandbytes (NF4, LLM.int8) and torchao dequantize one matrix at a time and again in the
    backward pass (kernels.dequant_cost `in_backward`): one matrix. auto-gptq's trainable
    `QuantLinear` (qlinear_cuda_old.py at 179776b) unpacks in eager tensor ops and multiplies
    with `torch.matmul(x.half(), weight)`, and autograd keeps that fp16 weight for the input's
    gradient: every linear of the recomputed block holds its 16-bit weight until its backward
    (every block, without recomputation), while the next matrix is being unpacked through an
    int32 tensor of one element per weight (`bitwise_right_shift` of the broadcast words).
    """
    if job.quant == "none":
        return 0.0
    biggest = max(m.d_in * m.d_out for blk in arch.blocks() for m in blk)
    if dequant_cost(job).in_backward:
        return biggest * b
    per_block = [sum(m.d_in * m.d_out * m.count for m in blk) for blk in arch.blocks()]
    held = max(per_block) if job.grad_checkpointing else sum(per_block)
    return held * b + biggest * GPTQ_UNPACK_BYTES


def _fsdp_gathered_bytes(arch: Architecture, unit_b: float, root_b: float) -> float:
    """Unsharded FSDP parameters at the peak: the running decoder-layer unit and the prefetched
    next one (GATHERED_BLOCKS), plus the root unit. With the layers wrapped, the root holds what
    lies outside them (embeddings, LM head, final norm), and FULL_SHARD does not free the root's
    parameters after its forward, "with the intention that they are immediately used for
    backward computation" (torch/distributed/fsdp/_runtime_utils.py `_post_forward_reshard`):
    they stay unsharded from the first forward op to the end of backward."""
    biggest = max(sum(m.params for m in block) for block in arch.blocks())
    root = arch.embedding_params + arch.lm_head_params + arch.other_params
    return GATHERED_BLOCKS * biggest * unit_b + root * root_b


# Complex on purpose: one branch per memory term of the breakdown.
def memory_estimate(arch: Architecture, job: JobSpec, dtype: Dtype | None = None,  # noqa: C901
                    vram_gb: float | None = None) -> MemoryEstimate:
    """Peak memory per GPU. `dtype` is the effective precision (after the GPU's gates)."""
    dt: Dtype = dtype or job.dtype
    b = DTYPE_BYTES[dt]
    notes: list[str] = []
    pt = trainable_params(arch, job)
    pp = per_param_bytes(arch, job, dt)
    state = trainable_bytes(arch, job, dt)
    n = job.gpus
    sharded = job.sharding in ("zero1", "zero2", "zero3", "fsdp")
    shards_params = job.sharding in ("zero3", "fsdp")
    div_opt = n if sharded else 1
    div_grad = n if job.sharding in ("zero2", "zero3", "fsdp") else 1
    div_w = n if shards_params else 1

    frozen = frozen_weight_bytes(arch, job, dt) if job.is_peft else 0.0
    terms: dict[str, float] = {
        "weights_frozen": frozen / div_w,
        "weights_trainable": state.weight / div_w,
        "master_weights": state.master / div_opt,
        "autocast_copy": state.autocast,
        "gradients": state.grad / div_grad,
        "optimizer_states": state.optimizer / div_opt,
    }
    host = 0.0
    if job.offload in ("optimizer", "params"):
        host += (terms["optimizer_states"] + terms["master_weights"]) * n
        terms["optimizer_states"] = terms["master_weights"] = 0.0
        notes.append("optimizer states and fp32 master weights live in CPU RAM (ZeRO-Offload)")
    if job.offload == "params":
        host += (terms["weights_frozen"] + terms["weights_trainable"] + terms["gradients"]) * n
        terms["weights_frozen"] = terms["weights_trainable"] = terms["gradients"] = 0.0
        notes.append("parameters and gradients live in CPU RAM; each block is copied in when "
                     "it runs")

    terms["activations"] = activation_bytes(arch, job, dt)
    offloaded = offloaded_activation_bytes(arch, job, dt)
    if offloaded:
        host += offloaded * n
        notes.append(f"activation offloading: {offloaded / GB:.2f} GB of saved activations per "
                     f"GPU wait in pinned CPU RAM; {OFFLOAD_RESIDENT_LAYERS} layers stay on the "
                     f"GPU")
    terms["logits_and_loss"] = logits_bytes(arch, job)
    all_gradients = terms["gradients"]
    if job.grad_accum == 1 and not job.is_peft and terms["gradients"] > 0:
        # Without accumulation the previous step's gradients were freed (zero_grad sets them
        # to None, PyTorch ≥ 2.0), so at the start of backward only the output layer's
        # gradient exists; the rest grow as activations are freed. The peak is the larger of
        # the two moments: start of backward, or all gradients at the end of it.
        head = arch.vocab_size * arch.hidden_size * pp.grad / div_grad
        dynamic = terms["activations"] + terms["logits_and_loss"]
        live = max(min(head, terms["gradients"]), terms["gradients"] - dynamic)
        if live < terms["gradients"]:
            notes.append("no gradient accumulation: most gradients are allocated only as "
                         "the backward pass frees activations")
        terms["gradients"] = live

    if job.optimizer_in_backward and terms["gradients"] > 0:
        # torchtune optimizer_in_bwd: a post-accumulate-grad hook steps each parameter and
        # frees its gradient at once, so at most the largest parameter's gradient is alive.
        # a trained embedding (the largest then) has a 16-bit gradient (`trainable_bytes`)
        grad_b = b if copied_module_params(arch, job) else pp.grad
        terms["gradients"] = min(terms["gradients"],
                                 _largest_trainable_param(arch, job) * grad_b / div_grad)
        notes.append("optimizer in backward: each gradient is applied and freed as soon as "
                     "it is computed")

    buffers = 0.0
    if job.sharding == "ddp" and n > 1:
        # DDP's gradient buckets are a second copy of the gradients unless
        # gradient_as_bucket_view=True (PyTorch DistributedDataParallel docs).
        buffers += state.grad
    if shards_params:
        if job.is_peft and job.quant == "nf4":
            unit_b = nf4_bytes(job)
        elif job.is_peft and job.quant == "int8":
            unit_b = INT8_BYTES
        elif job.is_peft and job.quant == "gptq":
            unit_b = GPTQ_BYTES
        else:
            unit_b = FP32 if dt == "fp32" else b
        if job.sharding == "fsdp":
            buffers += _fsdp_gathered_bytes(arch, unit_b, FP32 if dt == "fp32" else b)
        else:
            live = max(min(ZERO3_MAX_LIVE_PARAMETERS, arch.total_params),
                       arch.largest_block_params)
            buffers += live * unit_b
    if job.sharding in ("zero1", "zero2", "zero3"):
        buffers += ZERO_BUCKET_ELEMENTS * (FP32 if dt == "fp32" else b)
    terms["sharding_buffers"] = buffers

    if uses_kbit_upcast(job) and dt != "fp32" and arch.output_projection_params:
        # The fp32-upcast LM head runs under autocast: its 16-bit cast is made every forward
        # and saved by the matmul for the backward pass (torch.autocast caches casts only of
        # trainable leaves, so the frozen head is re-cast and held each step).
        terms["autocast_copy"] += arch.output_projection_params * b
    terms["dequant_buffer"] = dequant_buffer_bytes(arch, job, b)

    step = _foreach_step_bytes(terms, all_gradients, job, state.optimizer / 2 / div_opt)
    allocated = sum(terms.values())
    training_time = allocated - terms["weights_frozen"] - terms["weights_trainable"]
    reserve = training_time * FRAGMENTATION / (1 - FRAGMENTATION)
    stale = stale_loss_bytes(arch, job)
    margin = {"fragmentation": reserve, "stale_loss_segments": stale}
    if vram_gb is not None:
        # The allocator frees cached blocks and retries before it reports out-of-memory, so the
        # cache cannot push the pool past the device (PyTorch CUDA semantics docs).
        room = vram_gb * GIB - CUDA_CONTEXT_GB * GB - allocated
        if room > 0:
            stale = min(stale, room)
            reserve = min(reserve, room - stale)
    if stale:
        notes.append("variable-length batches: the allocator also keeps the loss-buffer "
                     "segments of an earlier, shorter batch (stale_loss_segments; packing, "
                     "fixed-length padding or torch.cuda.empty_cache() between steps avoid it)")
    # The step's buffer is carved from the segments the freed activations leave cached: only
    # what the training pool cannot hold grows the pool.
    excess = max(0.0, step - (allocated + reserve + stale))
    allocated += excess
    terms["optimizer_step_buffer"] = excess
    terms["allocator_reserve"] = reserve
    terms["stale_loss_segments"] = stale
    terms["cuda_context"] = CUDA_CONTEXT_GB * GB
    peak = allocated + reserve + stale + CUDA_CONTEXT_GB * GB

    notes += _notes(arch, job, dt, pt)
    total = arch.total_params + (pt if job.is_peft else 0)
    need = allocated + CUDA_CONTEXT_GB * GB
    usable = usable_gb(vram_gb) if vram_gb is not None else None
    with_margin = (need + sum(margin.values())) / GB
    return MemoryEstimate(
        need_gb_per_gpu=round(need / GB, 3),
        margin_gb={k: round(v / GB, 3) for k, v in margin.items() if v},
        usable_gb_per_gpu=None if usable is None else round(usable, 3),
        fits_with_margin=None if usable is None else with_margin <= usable,
        peak_gb_per_gpu=round(peak / GB, 3),
        allocated_gb=round(allocated / GB, 3),
        reserved_gb=round((allocated + reserve + stale) / GB, 3),
        breakdown={k: round(v / GB, 3) for k, v in terms.items()},
        trainable_params=pt,
        total_params=total,
        host_ram_gb=round(host / GB, 3),
        fits=None if usable is None else need / GB <= usable,
        notes=notes,
    )


def usable_gb(vram_gb: float) -> float:
    """GB (10^9 bytes) a job may use of a card of `vram_gb` GiB (VRAM_HEADROOM)."""
    return vram_gb * GIB / GB * VRAM_HEADROOM


def fit_verdict(m: MemoryEstimate, where: str = "per GPU") -> str | None:
    """The one fit line every face prints: what the job needs of what the card gives, and
    whether the allocator's margin (fragmentation, stale loss segments) fits too. The verdict
    is on what the job needs: the caching allocator gives its cache back and retries before it
    fails (PyTorch CUDA semantics docs), so its margin costs time, not the run."""
    if m.usable_gb_per_gpu is None or m.fits is None:
        return None
    margin = sum(m.margin_gb.values())
    head = (f"{'fits' if m.fits else 'does not fit'}: needs {m.need_gb_per_gpu:,.1f} of "
            f"{m.usable_gb_per_gpu:,.1f} GB usable {where}")
    if not m.fits or not margin:
        return head
    parts = ", ".join(f"{k.replace('_', ' ')} {v:,.1f} GB" for k, v in m.margin_gb.items())
    total = m.need_gb_per_gpu + margin
    if m.fits_with_margin:
        return f"{head}; with the allocator's margin ({parts}) {total:,.1f} GB, within it too"
    return (f"{head} on its tensors; with the allocator's margin ({parts}) it would hold "
            f"{total:,.1f} GB, more than the card: the allocator gives back cached segments "
            f"and retries, which slows steps")


def _foreach_step_bytes(terms: dict[str, float], all_gradients: float, job: JobSpec,
                        one_state: float) -> float:
    """What torch.optim.AdamW's multi-tensor step (`adamw-foreach`) holds at once (0 for the
    other optimizers): it runs after backward, when activations and the loss are freed but
    every gradient is alive, and `torch._foreach_sqrt` makes one new buffer of a state's
    size for all parameters together."""
    if job.optimizer != "adamw-foreach":
        return 0.0
    resident = ("weights_frozen", "weights_trainable", "master_weights", "optimizer_states",
                "sharding_buffers", "dequant_buffer")
    return sum(terms[k] for k in resident) + all_gradients + one_state


def _notes(arch: Architecture, job: JobSpec, dt: Dtype, pt: int) -> list[str]:
    out: list[str] = []
    if job.is_peft:
        out.append(f"{job.method}: {pt:,} trainable parameters, kept in fp32 with fp32 "
                   f"gradients and optimizer states (PEFT default)")
    elif dt == "fp32":
        out.append("fp32 weights, gradients and optimizer states")
    elif job.mixed_precision:
        out.append("mixed precision: fp32 master weights and optimizer states, 16-bit compute")
    else:
        out.append(f"pure {dt}: weights, gradients and optimizer states all in {dt}")
    if uses_kbit_upcast(job):
        out.append("prepare_model_for_kbit_training casts embeddings, LM head and norms to "
                   "fp32, so the hidden states and activations run in fp32 too")
    elif (job.quant in ("nf4", "int8") and job.upcast_non_quantized
          and job.sharding in ("zero3", "fsdp")):
        out.append("sharded k-bit base: FSDP and ZeRO-3 keep one dtype per flattened unit, so "
                   "PEFT's k-bit preparation is skipped (TRL) and embeddings, head, norms and "
                   "hidden states stay 16-bit: less memory traffic per token than the one-GPU "
                   "default, which --no-upcast-non-quantized times the same way")
    if job.grad_checkpointing:
        out.append("gradient checkpointing: one block input kept per layer, one block "
                   "recomputed at a time")
    out += _knob_notes(job)
    if not job.flash_attention:
        out.append("eager attention keeps the heads × seq × seq softmax per layer")
    if arch.arch == "encoder":
        out.append("encoder-only model: a small classification head, no vocabulary logits")
    if job.optimizer == "paged-adamw-8bit":
        out.append("paged optimizer states can spill to CPU RAM under pressure; the estimate "
                   "keeps them on the GPU")
    if job.optimizer == "adamw":
        out.append("AdamW fused (the HF Trainer default adamw_torch_fused from torch 2.8); "
                   "--optimizer adamw-foreach for torch.optim.AdamW without fused=True, which "
                   "moves ~2.7x the bytes and needs one more state-sized buffer at the step")
    return out


def _knob_notes(job: JobSpec) -> list[str]:
    out: list[str] = []
    if job.loss != "eager":
        out.append({"chunked": "chunked cross-entropy: the fp32 log-probabilities of every "
                               "chunk are kept for backward, one chunk's gradients at a time",
                    "fused": "fused linear cross-entropy: no vocabulary-sized buffer outlives "
                             "a chunk",
                    "cce": "Cut Cross-Entropy: logits never materialized, one fp32 hidden-state "
                           "gradient per token"}[job.loss])
    if job.compile:
        out.append("torch.compile: the gated MLP's activation output is recomputed, not "
                   "saved; speed-up not modeled")
    if job.train_embeddings:
        out.append("embeddings and LM head trained (modules_to_save): trainable copies beside "
                   "the frozen originals, in the base model's dtype with 16-bit gradients and "
                   "optimizer states")
    if job.quant == "nf4" and job.nf4_backend == "torchao":
        out.append("torchao NF4Tensor base (double-quantized scales always)")
    if job.loss == "eager" and not job.fp32_loss:
        out.append("the eager loss runs on the 16-bit logits (no autocast, no logits.float()): "
                   "its buffers are 16-bit")
    if job.lora_dropout > 0 and job.method in ("lora", "qlora", "dora"):
        out.append(f"LoRA dropout {job.lora_dropout:g}: each adapted module keeps its dropped-"
                   "out input and a one-byte mask")
    return out
