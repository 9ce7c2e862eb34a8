"""Precision and quantization gates per GPU."""

from __future__ import annotations

import pytest

from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import UserInputError
from gpuscout.sizing.architectures import lookup
from gpuscout.sizing.estimate import estimate
from gpuscout.sizing.precision import decide, supports_dtype
from gpuscout.sizing.types import JobSpec

CAT = load_catalog()


def test_bf16_needs_ampere_else_fp16_with_a_note() -> None:
    d = decide(JobSpec(dtype="bf16"), CAT.gpu("v100-sxm2-16gb"))
    assert d.dtype == "fp16" and any("bf16" in n for n in d.notes)
    assert decide(JobSpec(dtype="bf16"), CAT.gpu("a100-sxm-80gb")).dtype == "bf16"
    assert decide(JobSpec(dtype="fp16"), CAT.gpu("tpu-v5e")).dtype == "bf16"


def test_fp8_needs_compute_capability_8_9() -> None:
    assert supports_dtype(CAT.gpu("l4-24gb"), "fp8")
    assert supports_dtype(CAT.gpu("h100-sxm-80gb"), "fp8")
    assert not supports_dtype(CAT.gpu("a100-sxm-80gb"), "fp8")
    assert supports_dtype(CAT.gpu("mi300x-192gb"), "fp8")


def test_4bit_needs_bitsandbytes_kernels() -> None:
    qlora = JobSpec(method="qlora")
    assert decide(qlora, CAT.gpu("t4-16gb")).refusal is None
    assert decide(qlora, CAT.gpu("mi300x-192gb")).refusal is None
    assert "bitsandbytes" in (decide(qlora, CAT.gpu("tpu-v5p")).refusal or "")
    assert decide(qlora, CAT.gpu("gaudi2-96gb")).refusal is None  # partial support, noted
    assert decide(JobSpec(method="lora", quant="int8"), CAT.gpu("gaudi2-96gb")).refusal
    assert decide(JobSpec(optimizer="adamw-8bit"), CAT.gpu("gaudi3-128gb")).refusal


def test_amd_and_tpu_rows_say_what_applies() -> None:
    assert any("ROCm" in n for n in decide(JobSpec(), CAT.gpu("mi300x-192gb")).notes)
    assert any("XLA" in n for n in decide(JobSpec(), CAT.gpu("tpu-v5e")).notes)


def test_estimate_refuses_what_the_gpu_cannot_run() -> None:
    with pytest.raises(UserInputError, match="tpu-v4"):
        estimate(lookup("meta-llama/Llama-3.1-8B"), JobSpec(method="qlora"), CAT.gpu("tpu-v4"))
