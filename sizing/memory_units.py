"""Units of the memory model: bytes per element of each dtype, and GB against GiB."""

from __future__ import annotations

GB = 1e9
# GPU memory is sold in binary units: an "80GB" A100 holds 80 GiB (nvidia-smi lists 81920 MiB),
# and the ms-swift benchmark rows report up to 78.76 GiB = 84.6e9 bytes reserved on one.
GIB = 2**30


# What a job may use of a card: 95 % of its memory (sold in GiB: an "80GB" card holds 80 GiB).
# The estimate already holds the CUDA context; this margin covers driver/ECC reservations and
# run-to-run variance of the caching allocator (the calibration's errors are of this order).
VRAM_HEADROOM = 0.95


def usable_gb(vram_gb: float) -> float:
    """GB (10^9 bytes) a job may use of a card of `vram_gb` GiB (VRAM_HEADROOM)."""
    return vram_gb * GIB / GB * VRAM_HEADROOM


def vram_label(vram_gb: float) -> str:
    """A card's memory as sold and in the decimal GB every estimate is printed in."""
    return f"{vram_gb:g} GiB = {vram_gb * GIB / GB:.1f} GB"


# fp8 training keeps its weights, gradients and activations in bf16: only the linear layers'
# GEMM operands are FP8 (sizing/fp8.py counts those copies)
DTYPE_BYTES: dict[str, int] = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 2}
FP32 = 4
