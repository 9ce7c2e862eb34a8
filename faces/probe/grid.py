"""What a probe runs: the architectures, methods, batch shapes and step counts of each grid.

Pure data: no torch here. A grid is walked architecture by architecture and method by method,
so each model is built once and serves every checkpointing setting and batch shape of that
method (`run.py` frees the optimizer and gradients and empties the allocator between points).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

CONFIGS = Path(__file__).parent / "configs"

Method = Literal["full", "lora", "qlora"]
METHODS: tuple[Method, ...] = ("full", "lora", "qlora")


@dataclass(frozen=True)
class Arch:
    """A model the probe builds: its id in sizing/data/architectures.csv and its config file."""

    model_id: str
    config: Path

    def config_dict(self) -> dict[str, Any]:
        return json.loads(self.config.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Shape:
    """One micro-batch: `batch` packed sequences of exactly `seq` tokens."""

    batch: int
    seq: int

    @property
    def tokens(self) -> int:
        return self.batch * self.seq


@dataclass(frozen=True)
class Point:
    arch: Arch
    method: Method
    shape: Shape
    checkpointing: bool

    @property
    def label(self) -> str:
        gc = "GC" if self.checkpointing else "noGC"
        return (f"{self.arch.model_id} {self.method} "
                f"{self.shape.batch}x{self.shape.seq} {gc}")


@dataclass(frozen=True)
class Grid:
    """A probe run. `budget_s` bounds the whole grid: a point (or a model build) that could not
    finish inside what is left is skipped and reported, never started."""

    name: str
    archs: tuple[Arch, ...]
    methods: tuple[Method, ...]
    shapes: tuple[Shape, ...]
    checkpointing: tuple[bool, ...] = (False, True)
    warmup_steps: int = 2
    timed_steps: int = 4
    point_limit_s: float = 40.0
    budget_s: float = 420.0
    lora_rank: int = 16
    lora_alpha: int = 32
    lr: float = 1e-5
    max_grad_norm: float = 1.0  # clip_grad_norm_ before each step, as the HF Trainer does
    matmul_n: int = 8192  # the card's bf16 matmul: n x n x n
    copy_mib: int = 2048  # the card's copy bandwidth: one tensor this large, copied

    def points(self, arch: Arch, method: Method) -> Iterator[Point]:
        for checkpointing in self.checkpointing:
            for shape in self.shapes:
                yield Point(arch, method, shape, checkpointing)

    def all_points(self) -> Iterator[Point]:
        for arch in self.archs:
            for method in self.methods:
                yield from self.points(arch, method)

    def only(self, models: list[str] | None, methods: list[str] | None) -> Grid:
        """The grid restricted to some of its models and methods (None keeps all)."""
        from dataclasses import replace

        archs = self.archs if not models else tuple(
            a for a in self.archs if a.model_id.lower() in {m.lower() for m in models}
            or a.model_id.split("/")[-1].lower() in {m.lower() for m in models})
        kept = self.methods if not methods else tuple(m for m in self.methods if m in methods)
        return replace(self, archs=archs, methods=kept)


def arch(model_id: str, config_file: str) -> Arch:
    return Arch(model_id, CONFIGS / config_file)


QWEN_05B = arch("Qwen/Qwen2.5-0.5B", "Qwen2.5-0.5B.json")
LLAMA_3B = arch("meta-llama/Llama-3.2-3B", "Llama-3.2-3B.json")
LLAMA_8B = arch("meta-llama/Llama-3.1-8B", "Llama-3.1-8B.json")
TINY = arch("tiny-llama", "tiny-llama.json")

GRIDS: dict[str, Grid] = {
    # One H200 in about 4-5 minutes by FLOP count (budget 6 min, under 8 with start-up): 3
    # architectures x 3 methods x 3 shapes x checkpointing off/on = 54 points. A short
    # sequence, a batch of 4 and one long sequence: the token count, the batch and the
    # sequence each move once.
    "standard": Grid(
        name="standard", archs=(QWEN_05B, LLAMA_3B, LLAMA_8B), methods=METHODS,
        shapes=(Shape(1, 2048), Shape(4, 2048), Shape(1, 8192)), budget_s=360.0),
    # A minute on a rented card: the smallest model, each method, one shape.
    "quick": Grid(
        name="quick", archs=(QWEN_05B,), methods=METHODS, shapes=(Shape(2, 1024),),
        budget_s=120.0),
    # The test grid: a 2-layer model on the CPU in seconds, through the same code path.
    "tiny": Grid(
        name="tiny", archs=(TINY,), methods=METHODS, shapes=(Shape(1, 32), Shape(2, 16)),
        warmup_steps=1, timed_steps=2, point_limit_s=60.0, budget_s=300.0, lora_rank=4,
        lora_alpha=8, matmul_n=128, copy_mib=4),
}
