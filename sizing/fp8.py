"""FP8 training (`--dtype fp8`): which GEMMs Transformer Engine and torchao.float8 run in FP8,
and what FP8 copies they keep. Pure.

Both keep the model in 16 bits (bf16 weights with fp32 masters in the optimizer, bf16
activations and gradients) and run the three GEMMs of every linear layer of the blocks in FP8:
the forward (input × weight), the input gradient and the weight gradient. Attention's own
matmuls stay 16-bit (Transformer Engine's recipes default to `fp8_dpa=False`), and so does the
LM head, which lies outside the blocks.

Transformer Engine (NVIDIA/TransformerEngine at d0067d0):
- `te.autocast` without a recipe takes `get_default_fp8_recipe()` (pytorch/quantization.py,
  line 242): MXFP8 block scaling where the GPU supports it (Blackwell, compute capability 10),
  current "tensorwise" scaling from compute capability 12, delayed scaling before (Ada,
  Hopper).
- a Linear quantizes its weight into a workspace it keeps, refreshed only on a step's first
  micro-batch (pytorch/module/linear.py lines 460-490: `quantize_weight(...,
  update_workspace=is_first_microbatch)`), row-wise for the forward and column-wise (the
  transposed layout the input gradient needs) while its input requires grad: two FP8 bytes per
  weight beside its bf16 one; MXFP8 adds one E8M0 scale per 32 values in each direction.
- it saves its input for the weight gradient in FP8, column-wise only (lines 598-621): one byte
  per element instead of two.
- delayed scaling keeps an fp32 amax history of `amax_history_len` = 1024 steps for each FP8
  tensor (common/recipe/__init__.py lines 173-259): a linear's input, weight and output
  gradient.
torchao.float8 (pytorch/ao at 36027d8, torchao/float8/float8_linear.py lines 29-200):
`matmul_with_hp_or_float8_args` saves the 16-bit input and weight (`ctx.save_for_backward(
input_hp, weight_hp_t)`) and casts them again in backward with dynamic tensorwise scales, so no
FP8 copy outlives its GEMM and the activations stay 16-bit.

How fast the FP8 GEMMs run: the GPU's dense FP8 rate at the same achievable fraction the
catalog measures for its 16-bit matmuls (sizing/data/kernel_efficiency.csv); no measurement of
FP8 GEMM efficiency is at hand, so that is an assumption, named in the estimate's notes.
"""

from __future__ import annotations

from gpuscout.core.catalog import GpuSpec
from gpuscout.sizing.architectures import Architecture
from gpuscout.sizing.types import JobSpec

AMAX_HISTORY_LEN = 1024  # DelayedScaling.amax_history_len
FP8_TENSORS_PER_LINEAR = 3  # input, weight, output gradient
MXFP8_BLOCK = 32  # one E8M0 scale per 32 values
# TE's recipes keep an FP8 weight copy per direction and save FP8 inputs; torchao does neither
TE_RECIPES = frozenset({"delayed", "tensorwise", "mxfp8"})
MXFP8_MIN_CC, CURRENT_SCALING_MIN_CC = 10.0, 12.0


def resolve_recipe(recipe: str, gpu: GpuSpec | None) -> str:
    """The recipe `te` stands for on `gpu` (delayed scaling without a GPU)."""
    if recipe != "te":
        return recipe
    cc = gpu.cuda_capability if gpu is not None else None
    if cc is not None and cc >= CURRENT_SCALING_MIN_CC:
        return "tensorwise"
    if cc is not None and cc >= MXFP8_MIN_CC:
        return "mxfp8"
    return "delayed"


def is_te(job: JobSpec) -> bool:
    return job.dtype == "fp8" and job.fp8_recipe != "torchao"


def _linear_modules(arch: Architecture) -> int:
    return sum(m.count for blk in arch.blocks() for m in blk)


def weight_copy_bytes(arch: Architecture, job: JobSpec) -> float:
    """Transformer Engine's FP8 weight workspaces (row-wise and column-wise) of the blocks'
    linears, frozen ones included; 0 for torchao and for 16-bit jobs."""
    if not is_te(job):
        return 0.0
    per_weight = 2.0 * (1 + 1 / MXFP8_BLOCK) if job.fp8_recipe == "mxfp8" else 2.0
    return arch.linear_weight_params * per_weight


def amax_history_bytes(arch: Architecture, job: JobSpec) -> float:
    """Delayed scaling's fp32 amax histories: AMAX_HISTORY_LEN per FP8 tensor."""
    if not (is_te(job) and job.fp8_recipe == "delayed"):
        return 0.0
    return _linear_modules(arch) * FP8_TENSORS_PER_LINEAR * AMAX_HISTORY_LEN * 4.0


def saved_linear_input_bytes(job: JobSpec, ab: int) -> int:
    """Bytes per element of the input a linear saves for its weight gradient."""
    return 1 if is_te(job) else ab


def cast_bytes(arch: Architecture, job: JobSpec, tokens: int) -> float:
    """Bytes the FP8 quantization kernels move in one micro-batch.

    Transformer Engine: each linear's input is read in 16 bits and written row- and
    column-wise in FP8 (2 + 2 bytes per element), and so is its output gradient in backward;
    the weights are quantized on a step's first micro-batch only (2 + 2 per weight, spread over
    the step's micro-batches). torchao: the input and the weight are cast for the forward
    (2 + 1 each), and in backward the output gradient twice (both layouts), the weight and the
    input again.
    """
    return cast_activation_bytes(arch, job, tokens) + cast_weight_bytes(arch, job)


def cast_activation_bytes(arch: Architecture, job: JobSpec, tokens: int) -> float:
    """The part of `cast_bytes` that follows the tokens (inputs and output gradients)."""
    if job.dtype != "fp8":
        return 0.0
    d_in = d_out = 0.0
    for blk in arch.blocks():
        for m in blk:
            through = arch.experts_per_token / m.count if m.group == "expert" else 1.0
            d_in += m.count * m.d_in * through
            d_out += m.count * m.d_out * through
    if is_te(job):
        return tokens * 4.0 * (d_in + d_out)
    return tokens * (3.0 * d_in * 2 + 3.0 * d_out * 2)


def cast_weight_bytes(arch: Architecture, job: JobSpec) -> float:
    """The part of `cast_bytes` that follows the weights, per micro-batch."""
    if job.dtype != "fp8":
        return 0.0
    if is_te(job):
        return arch.linear_weight_params * 4.0 / job.grad_accum
    return arch.linear_weight_params * 3.0 * 2


def gemm_tflops(gpu: GpuSpec) -> float:
    """The dense FP8 rate the blocks' GEMMs run at."""
    if not gpu.fp8_dense_tflops:
        raise ValueError(f"{gpu.canonical_id} lists no fp8 rate")
    return gpu.fp8_dense_tflops


def notes(job: JobSpec) -> list[str]:
    if job.dtype != "fp8":
        return []
    if is_te(job):
        kept = ("an FP8 copy of every block weight in each layout, inputs saved in FP8 for the "
                "weight gradient"
                + (", fp32 amax histories of 1024 steps" if job.fp8_recipe == "delayed" else ""))
        how = f"Transformer Engine, {job.fp8_recipe} scaling"
    else:
        kept = "16-bit inputs and weights saved, cast again in backward"
        how = "torchao float8, dynamic tensorwise scaling"
    return [f"fp8 ({how}): the blocks' forward, input-gradient and weight-gradient GEMMs in "
            f"FP8; attention and the LM head in bf16; bf16 weights, activations and "
            f"gradients with fp32 masters; {kept}. FP8 GEMMs are timed at the 16-bit matmul "
            f"efficiency of the GPU (no FP8 measurement at hand)"]
