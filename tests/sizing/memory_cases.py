"""Shared cases of the memory tests: Llama-2-7B (h 4096, f 11008, 32 layers), whose terms the
tests compute by hand, and Qwen2.5-7B (a 152k vocabulary) for the knobs' effects."""

from __future__ import annotations

from gpuscout.sizing.architectures import lookup
from gpuscout.sizing.memory_units import GB
from gpuscout.sizing.types import JobSpec

A = lookup("meta-llama/Llama-2-7b-hf")
P = 6_738_415_616
LINEAR = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008)
H, F, L, V = 4096, 11008, 32, 32000
Q = lookup("Qwen/Qwen2.5-7B")


def gb(x: float) -> float:
    return round(x / GB, 3)


def full(**kw: object) -> JobSpec:
    base: dict[str, object] = {"method": "full", "grad_accum": 2, "seq_len": 512}
    return JobSpec(**{**base, **kw})  # type: ignore[arg-type]


def qlora(**kw: object) -> JobSpec:
    return JobSpec(method="qlora", batch_size=4, seq_len=4096, **kw)
