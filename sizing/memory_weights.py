"""The model's state in memory: frozen and trainable weights, master copies, gradients and
optimizer states, by storage type, before any sharding divides them; and the 16-bit weights a
quantized base makes on the fly."""

from __future__ import annotations

from dataclasses import dataclass

from gpuscout.sizing.architectures import Architecture
from gpuscout.sizing.choices import ADAMW
from gpuscout.sizing.kernels import dequant_cost
from gpuscout.sizing.memory_units import DTYPE_BYTES, FP32
from gpuscout.sizing.peft import copied_module_params, trainable_params
from gpuscout.sizing.types import Dtype, JobSpec

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
    - PEFT adapters are fp32 (PEFT autocast_adapter_dtype=True): 4 + 4 + fp32 states; where
      the framework builds them in the model's dtype (`adapter_fp32` off: torchtune, litgpt
      under bf16-true) 2 + 2 + states made like the parameter, in 16 bits.
    """
    b = DTYPE_BYTES[dtype]
    ratio = _adafactor_ratio(arch, job) if job.optimizer == "adafactor" else 1.0
    if job.is_peft and not job.adapter_fp32 and dtype != "fp32":
        return _PerParam(b, 0, 0, b, _optimizer_state_bytes(job, b, ratio))
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


def largest_trainable_param(arch: Architecture, job: JobSpec) -> float:
    """Elements of the largest single trainable tensor (a gradient freed on its own)."""
    if job.is_peft:
        biggest = max(max(m.d_in, m.d_out) * job.lora_rank for blk in arch.blocks() for m in blk)
        if job.train_embeddings:
            biggest = max(biggest, arch.vocab_size * arch.hidden_size)
        return float(min(biggest, trainable_params(arch, job)))
    linear = max(m.d_in * m.d_out for blk in arch.blocks() for m in blk)
    return float(max(linear, arch.vocab_size * arch.hidden_size))


def quantized_head_params(arch: Architecture, job: JobSpec) -> int:
    """The untied LM head's weight when the framework quantizes it with the blocks
    (`quantize_head`: Lightning's BitsandbytesPrecision replaces every nn.Linear)."""
    if job.quant == "none" or not job.quantize_head or not arch.lm_head_params:
        return 0
    return arch.vocab_size * arch.hidden_size


def frozen_weight_bytes(arch: Architecture, job: JobSpec, dtype: Dtype) -> float:
    """The frozen base model of a PEFT job, by storage type: fp32 where the framework keeps
    the base in fp32 under autocast (`base_fp32`: Lightning Fabric's bf16-mixed)."""
    b = DTYPE_BYTES[dtype]
    if job.quant == "none":
        return arch.total_params * (FP32 if job.base_fp32 else b)
    rest = FP32 if uses_kbit_upcast(job) else b
    head = quantized_head_params(arch, job)
    linear = arch.linear_weight_params + head
    non_linear = arch.non_linear_params - head
    if job.quant == "nf4":
        return linear * nf4_bytes(job) + non_linear * rest
    if job.quant == "gptq":
        return linear * GPTQ_BYTES + non_linear * rest
    rows = sum(m.count * m.d_out for blk in arch.blocks() for m in blk)
    scales = (rows + (arch.vocab_size if head else 0)) * FP32
    return linear * INT8_BYTES + scales + non_linear * rest


def base_cast_bytes(arch: Architecture, job: JobSpec, b: int) -> float:
    """The 16-bit copies of an fp32 frozen base (`base_fp32`) that autograd holds at the peak.

    torch.autocast casts a weight to 16 bits at every matmul and caches the cast only for
    leaves that require grad, so each frozen weight is cast anew, and the matmul saves the
    cast for its input's gradient: every linear of the block being recomputed under
    checkpointing (every block's without), and the head's, until their backward.
    """
    if not (job.is_peft and job.base_fp32 and job.quant == "none"):
        return 0.0
    per_block = [sum(m.d_in * m.d_out * m.count for m in blk) for blk in arch.blocks()]
    held = max(per_block) if job.grad_checkpointing else sum(per_block)
    return (held + arch.output_projection_params) * b


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
