"""A probe's results as rows of the sizing measurements file, and back.

The columns are those of `sizing/data/measurements.csv`, so `gpuscout.sizing.calibration`
reads a probe's rows with the rules it applies to every published row: "packed" in the notes
marks fixed-length batches, "AdamW (torch)" the multi-tensor optimizer, "yes (sdpa)" linear
attention memory. `measured_peak_gb` is `torch.cuda.max_memory_reserved`; the allocated peak,
which that file has no column for, is in the notes in the one form `allocated_gb()` reads.
Pure: no torch.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from gpuscout.probe.grid import Grid, Point

COLUMNS: tuple[str, ...] = (
    "source", "model", "params_b", "method", "lora_rank", "lora_targets", "base_dtype",
    "optimizer", "batch_size", "seq_len", "grad_accum", "grad_checkpointing", "flash_attention",
    "num_gpus", "sharding", "gpu", "measured_peak_gb", "memory_metric", "tokens_per_s", "notes",
    "naive_pred_gb", "accelerate_pred_gb",
)
GB = 1e9  # the sizing model's unit (sizing/memory.py)
RESERVED_METRIC = ("reserved (torch.cuda.max_memory_reserved over warm-up and timed steps, "
                   "peaks reset after the model was built; GB = 1e9 bytes)")
NO_MEMORY_METRIC = "not reported (CPU run: no CUDA allocator)"
QLORA_BASE = "nf4 (bitsandbytes 4-bit, double quant, bf16 compute)"
# The naive column of the measurements file: bytes per parameter of weights (+ gradients and
# AdamW states for full fine-tuning), the 16/2 rule with 0.5 for a 4-bit base.
NAIVE_BYTES_PER_PARAM = {"full": 16.0, "lora": 2.0, "qlora": 0.5}
_ALLOCATED = re.compile(r"max_memory_allocated ([0-9.]+) GB")


@dataclass(frozen=True)
class Env:
    """The machine and software a probe ran on, and the card's achieved rates."""

    device: str  # torch's device name, e.g. "NVIDIA H200", or "cpu"
    cuda: bool
    memory_gib: float | None
    driver: str | None
    cuda_version: str | None
    versions: dict[str, str]  # package -> version: torch, transformers, peft, bitsandbytes
    matmul_tflops: float | None = None  # achieved bf16 n x n x n matmul
    copy_gb_s: float | None = None  # device-to-device copy, bytes read + written per second

    def summary(self) -> str:
        bits = [f"{k} {v}" for k, v in self.versions.items()]
        if self.cuda_version:
            bits.append(f"CUDA {self.cuda_version}")
        if self.driver:
            bits.append(f"driver {self.driver}")
        card = self.device + (f" {self.memory_gib:.1f} GiB" if self.memory_gib else "")
        rates = []
        if self.matmul_tflops is not None:
            rates.append(f"bf16 matmul {self.matmul_tflops:.4g} TFLOP/s")
        if self.copy_gb_s is not None:
            rates.append(f"copy {self.copy_gb_s:.4g} GB/s (read + write)")
        return f"{card}; {', '.join(bits)}" + (f"; card: {', '.join(rates)}" if rates else "")


@dataclass
class Result:
    """One grid point as it ran. Only `status == "ok"` becomes a CSV row."""

    point: Point
    status: str  # ok | oom | time limit ... | skipped: ... | error: ...
    builder: str = ""  # how the model was built, for the notes
    params: int = 0  # base parameters, counted before any quantization
    trainable: int = 0
    step_s: list[float] = field(default_factory=list)
    warmup_s: float = 0.0
    allocated_gb: float | None = None
    reserved_gb: float | None = None
    resident_gb: float | None = None  # allocated before the first step: the model

    @property
    def tokens_per_s(self) -> float | None:
        if not self.step_s:
            return None
        return self.point.shape.tokens * len(self.step_s) / sum(self.step_s)

    def line(self) -> str:
        """One line for the log."""
        if self.status != "ok":
            return f"{self.point.label}: {self.status}"
        mem = (f", allocated {self.allocated_gb:.2f} GB, reserved {self.reserved_gb:.2f} GB"
               if self.reserved_gb is not None else "")
        return f"{self.point.label}: {self.tokens_per_s:,.0f} tokens/s{mem}"


def _base_dtype(point: Point) -> str:
    return QLORA_BASE if point.method == "qlora" else "bf16"


def _optimizer(point: Point) -> str:
    if point.method == "full":
        return "AdamW (torch; bf16 states)"
    return "AdamW (torch; fp32 adapter weights and states)"


def notes(result: Result, env: Env, grid: Grid) -> str:
    p = result.point
    steps = result.step_s
    parts = [
        f"own measurement: gpuscout probe, grid {grid.name!r}",
        "random weights from config.json",
        "packed fixed-length batches of random token ids (no padding, no attention mask, "
        "labels = inputs)",
        f"{grid.warmup_steps} warm-up + {len(steps)} timed optimizer steps (AdamW lr {grid.lr:g}, "
        f"clip_grad_norm {grid.max_grad_norm:g})",
        f"step time mean {sum(steps) / len(steps):.4f} s (min {min(steps):.4f}, "
        f"max {max(steps):.4f})",
    ]
    if result.allocated_gb is not None and result.resident_gb is not None:
        parts.append(f"max_memory_allocated {result.allocated_gb:.3f} GB")
        parts.append(f"memory_allocated before the first step {result.resident_gb:.3f} GB")
        parts.append("model built once per method; optimizer and gradients freed, allocator "
                     "emptied and peaks reset before each point")
    if p.method != "full":
        parts.append(f"LoRA r={grid.lora_rank} alpha={grid.lora_alpha} dropout 0 on every "
                     f"linear layer of the blocks")
    parts.append(f"trainable {result.trainable:,}")
    parts.append(result.builder)
    parts.append(env.summary())
    return "; ".join(parts)


def to_row(result: Result, env: Env, grid: Grid, source: str) -> dict[str, str]:
    p = result.point
    tokens = result.tokens_per_s
    lora = p.method != "full"
    params_b = result.params / 1e9
    return {
        "source": source,
        "model": p.arch.model_id,
        "params_b": f"{params_b:.4g}",
        "method": p.method,
        "lora_rank": str(grid.lora_rank) if lora else "",
        "lora_targets": "all-linear (q,k,v,o,gate,up,down)" if lora else "",
        "base_dtype": _base_dtype(p),
        "optimizer": _optimizer(p),
        "batch_size": str(p.shape.batch),
        "seq_len": str(p.shape.seq),
        "grad_accum": "1",
        "grad_checkpointing": "yes (non-reentrant)" if p.checkpointing else "no",
        "flash_attention": "yes (sdpa, causal, no mask)",
        "num_gpus": "1",
        "sharding": "none",
        "gpu": env.device,
        "measured_peak_gb": "" if result.reserved_gb is None else f"{result.reserved_gb:.3f}",
        "memory_metric": RESERVED_METRIC if result.reserved_gb is not None else NO_MEMORY_METRIC,
        "tokens_per_s": "" if tokens is None else f"{tokens:.0f}",
        "notes": notes(result, env, grid),
        "naive_pred_gb": f"{NAIVE_BYTES_PER_PARAM[p.method] * params_b:.2f}",
        "accelerate_pred_gb": "",
    }


def allocated_gb(row: dict[str, str]) -> float | None:
    """The allocated peak a probe row carries in its notes (None for other rows)."""
    m = _ALLOCATED.search(row.get("notes", ""))
    return float(m.group(1)) if m else None


def write(path: Path, rows: Iterable[dict[str, str]], *, append: bool = False) -> None:
    """Write (or append) rows with the measurements file's header and quoting."""
    new = not append or not path.exists() or path.stat().st_size == 0
    with path.open("w" if not append else "a", newline="", encoding="utf-8") as f:
        out = csv.DictWriter(f, fieldnames=COLUMNS)
        if new:
            out.writeheader()
        out.writerows(rows)


def read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def source(grid: Grid, started_utc: str, revision: str | None = None) -> str:
    """The source column of a probe's rows: what ran, when, and (when known) which code."""
    at = f" at {revision}" if revision else ""
    return f"gpuscout probe{at}, grid {grid.name!r}, run {started_utc} (own measurement)"


def report_json(grid: Grid, env: Env, results: list[Result], seconds: float) -> dict[str, object]:
    """Everything a run saw, the points that did not make a row included."""
    return {
        "grid": {k: v for k, v in vars(grid).items() if k != "archs"}
        | {"archs": [a.model_id for a in grid.archs],
           "shapes": [[s.batch, s.seq] for s in grid.shapes]},
        "env": vars(env),
        "seconds": round(seconds, 1),
        "points": [{
            "label": r.point.label, "status": r.status, "model": r.point.arch.model_id,
            "method": r.point.method, "batch": r.point.shape.batch, "seq": r.point.shape.seq,
            "checkpointing": r.point.checkpointing, "params": r.params,
            "trainable": r.trainable, "warmup_s": round(r.warmup_s, 4),
            "step_s": [round(s, 5) for s in r.step_s], "tokens_per_s": r.tokens_per_s,
            "allocated_gb": r.allocated_gb, "reserved_gb": r.reserved_gb,
            "resident_gb": r.resident_gb, "builder": r.builder,
        } for r in results],
    }
