"""Which precisions and quantization kernels a GPU supports, and what a job falls back to.

- bf16 tensor cores need NVIDIA compute capability ≥ 8.0 (Ampere); older GPUs run fp16 with
  loss scaling instead (NVIDIA Ampere whitepaper; PyTorch `torch.cuda.is_bf16_supported`).
- fp8 needs compute capability ≥ 8.9 (Ada/Hopper FP8 tensor cores, Transformer Engine docs);
  on AMD the catalog's `fp8_support` (MI300 gfx942 and later).
- bitsandbytes (4-bit NF4, LLM.int8, 8-bit optimizers): NVIDIA SM60+ (SM75+ recommended); AMD
  CDNA gfx908/gfx90a/gfx942/gfx950; Intel Gaudi: 4-bit only partially, no 8-bit optimizers;
  no TPU backend (bitsandbytes README, accelerator support table).
- FlashAttention-2 needs Ampere or newer (Dao 2023); older NVIDIA GPUs still get linear-memory
  attention from PyTorch SDPA's memory-efficient kernel. TPUs use XLA/Pallas attention.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from gpuscout.core.catalog import GpuSpec
from gpuscout.sizing.types import Dtype, JobSpec

BNB_AMD_TARGETS = frozenset({"gfx908", "gfx90a", "gfx942", "gfx950"})
BNB_MIN_CC = 6.0
BF16_MIN_CC = 8.0
FP8_MIN_CC = 8.9
FLASH_ATTN_MIN_CC = 8.0


class PrecisionDecision(BaseModel):
    model_config = ConfigDict(frozen=True)

    dtype: Dtype = Field(description="the compute precision the job will run in")
    refusal: str | None = Field(default=None, description="why the job cannot run on this GPU")
    notes: tuple[str, ...] = ()


def _kind(gpu: GpuSpec) -> str:
    if gpu.form_factor == "TPU" or gpu.vendor == "Google":
        return "tpu"
    return {"NVIDIA": "nvidia", "AMD": "amd", "Intel": "gaudi"}.get(gpu.vendor, "other")


def supports_bf16(gpu: GpuSpec) -> bool:
    cc = gpu.cuda_capability
    if cc is not None:
        return cc >= BF16_MIN_CC
    return gpu.bf16_support


def supports_fp8(gpu: GpuSpec) -> bool:
    cc = gpu.cuda_capability
    if cc is not None:
        return cc >= FP8_MIN_CC
    return gpu.fp8_support


def bitsandbytes_support(gpu: GpuSpec) -> tuple[bool, bool, str | None]:
    """(quantized weights, 8-bit optimizers, why not) for bitsandbytes on this GPU."""
    kind = _kind(gpu)
    if kind == "nvidia":
        cc = gpu.cuda_capability or 0.0
        if cc < BNB_MIN_CC:
            return False, False, f"bitsandbytes needs compute capability ≥ {BNB_MIN_CC}, " \
                                 f"{gpu.canonical_id} has {cc}"
        return True, True, None
    if kind == "amd":
        if gpu.compute_capability in BNB_AMD_TARGETS:
            return True, True, None
        return False, False, f"bitsandbytes' ROCm build does not target " \
                             f"{gpu.compute_capability}"
    if kind == "gaudi":
        return True, False, "bitsandbytes on Gaudi: 4-bit only partially supported, no 8-bit " \
                            "optimizers and no LLM.int8"
    return False, False, f"bitsandbytes has no backend for {gpu.canonical_id} " \
                         f"({gpu.vendor} {gpu.family})"


def decide(job: JobSpec, gpu: GpuSpec | None) -> PrecisionDecision:  # noqa: C901 - the precision decision table, one branch per rule
    """The precision `job` runs in on `gpu`, with notes, or the reason it cannot run there."""
    if gpu is None:
        return PrecisionDecision(dtype=job.dtype)
    notes: list[str] = []
    dtype: Dtype = job.dtype
    kind = _kind(gpu)
    if dtype == "fp8" and not (supports_fp8(gpu) and gpu.fp8_dense_tflops):
        cc = gpu.cuda_capability
        has = f"compute capability {cc}" if cc is not None else "no FP8 support"
        return PrecisionDecision(
            dtype=dtype, refusal=f"--dtype fp8 needs FP8 tensor cores (NVIDIA compute "
            f"capability ≥ {FP8_MIN_CC}: Ada, Hopper, Blackwell; AMD MI300 and later); "
            f"{gpu.canonical_id} has {has}: use --dtype bf16")
    if dtype == "bf16" and not supports_bf16(gpu):
        dtype = "fp16"
        notes.append(f"{gpu.canonical_id} has no bf16 tensor cores (compute capability "
                     f"{gpu.compute_capability} < {BF16_MIN_CC}): running fp16 with loss "
                     f"scaling")
    if dtype == "fp16" and kind == "tpu":
        dtype = "bf16"
        notes.append("TPUs compute in bf16, not fp16")
    if dtype == "fp16" and gpu.fp16_dense_tflops is None and gpu.bf16_dense_tflops:
        dtype = "bf16"
        notes.append(f"{gpu.canonical_id} lists no fp16 rate; using bf16")
    if dtype in ("fp16", "bf16") and gpu.fp16_dense_tflops is None \
            and gpu.bf16_dense_tflops is None and gpu.fp32_tflops:
        dtype = "fp32"  # Maxwell/Pascal consumer parts: 16-bit math runs at 1/64 rate
        notes.append(f"{gpu.canonical_id} has no fast 16-bit path: running fp32")

    quant_ok, opt8_ok, why = bitsandbytes_support(gpu)
    if job.quant == "gptq":
        # GPTQ/AWQ kernels (AutoGPTQ/GPTQModel, AutoAWQ) build for CUDA and ROCm only
        if kind not in ("nvidia", "amd"):
            return PrecisionDecision(dtype=dtype, refusal="--quant gptq: GPTQ/AWQ kernels "
                                     f"build for CUDA and ROCm, not {gpu.canonical_id}",
                                     notes=tuple(notes))
        quant_ok, why = True, None if opt8_ok else why
    if job.quant == "nf4" and job.nf4_backend == "torchao":
        # torchao's NF4Tensor is plain PyTorch tensor code: no bitsandbytes kernel involved.
        quant_ok = True
        if kind == "tpu":
            return PrecisionDecision(dtype=dtype, refusal="torchao NF4 targets CUDA/ROCm "
                                     "PyTorch, not XLA", notes=tuple(notes))
        why = None if opt8_ok else why
    if job.quant != "none" and not quant_ok:
        return PrecisionDecision(dtype=dtype, refusal=f"--quant {job.quant}: {why}",
                                 notes=tuple(notes))
    if job.quant == "int8" and kind == "gaudi":
        return PrecisionDecision(dtype=dtype, refusal="LLM.int8 is not supported on Gaudi",
                                 notes=tuple(notes))
    if job.optimizer in ("adamw-8bit", "paged-adamw-8bit") and not opt8_ok:
        return PrecisionDecision(dtype=dtype, refusal=f"--optimizer {job.optimizer}: "
                                 f"{why or 'no 8-bit optimizer kernels'}", notes=tuple(notes))
    if job.quant != "none" and why:
        notes.append(why)
    if job.quant in ("nf4", "int8") and kind == "nvidia" and (gpu.cuda_capability or 0) < 7.5:
        notes.append("bitsandbytes recommends SM75+; expect slower 4/8-bit kernels")

    if job.flash_attention:
        cc = gpu.cuda_capability
        if kind == "nvidia" and cc is not None and cc < FLASH_ATTN_MIN_CC:
            notes.append("FlashAttention-2 needs Ampere+; PyTorch SDPA's memory-efficient "
                         "kernel keeps attention memory linear on this GPU")
        elif kind == "amd":
            notes.append("AMD: FlashAttention via ROCm (CK/Triton) on MI200/MI300")
        elif kind == "tpu":
            notes.append("TPU: PyTorch/XLA or JAX; CUDA-only kernels (bitsandbytes, "
                         "FlashAttention-2, Liger) do not apply; XLA's memory planner differs "
                         "from the CUDA caching allocator")
        elif kind == "gaudi":
            notes.append("Gaudi: Habana's fused SDPA; CUDA-only kernels do not apply")
    if kind == "amd":
        notes.append("AMD: ROCm builds of PyTorch; the HIP caching allocator behaves like "
                     "CUDA's")
    return PrecisionDecision(dtype=dtype, notes=tuple(notes))


def supports_dtype(gpu: GpuSpec, dtype: str) -> bool:
    """Whether `gpu` runs `dtype` natively (fp8 included, for callers that rank GPUs)."""
    if dtype == "fp8":
        return supports_fp8(gpu)
    if dtype == "bf16":
        return supports_bf16(gpu)
    if dtype == "fp16":
        return _kind(gpu) != "tpu"
    return True
