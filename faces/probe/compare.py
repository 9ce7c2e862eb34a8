"""A probe's rows against gpuscout's estimate: the error of the sizing model on each row.

Each row goes through `gpuscout.sizing.calibration.job_for_row`, the rule the calibration
applies to every published measurement, so a probe row is judged exactly as one of those
would be. The GPU is torch's device name resolved through the GPU catalog.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuscout.core.catalog import GpuSpec, Resolved, load_catalog
from gpuscout.core.errors import UserInputError
from gpuscout.probe.rows import allocated_gb, read
from gpuscout.sizing.architectures import lookup
from gpuscout.sizing.calibration import Summary, job_for_row, model_id, summarize
from gpuscout.sizing.estimate import estimate


@dataclass(frozen=True)
class Comparison:
    index: int
    model: str
    method: str
    batch: str
    seq: str
    checkpointing: bool
    gpu_id: str | None
    measured_reserved: float | None = None
    ours_reserved: float | None = None
    measured_allocated: float | None = None
    ours_allocated: float | None = None
    measured_tokens_s: float | None = None
    ours_tokens_s: float | None = None
    skipped: str | None = None

    @staticmethod
    def error(ours: float | None, measured: float | None) -> float | None:
        if ours is None or measured is None or measured == 0:
            return None
        return 100.0 * (ours - measured) / measured

    @property
    def reserved_error(self) -> float | None:
        return self.error(self.ours_reserved, self.measured_reserved)

    @property
    def allocated_error(self) -> float | None:
        return self.error(self.ours_allocated, self.measured_allocated)

    @property
    def tokens_error(self) -> float | None:
        return self.error(self.ours_tokens_s, self.measured_tokens_s)


def resolve_gpu(device_name: str) -> GpuSpec | None:
    """The catalog GPU torch's device name means, or None (a CPU, an unknown card).

    CUDA names a PCIe or NVL card in its device name ("NVIDIA H100 PCIe", "NVIDIA H200 NVL")
    and the SXM module plainly ("NVIDIA H200"), so a plain name that the catalog finds in
    several form factors is the SXM one.
    """
    catalog = load_catalog()
    found = catalog.resolve("cuda", device_name)
    if not isinstance(found, Resolved) and "several GPUs" in found.reason:
        found = catalog.resolve("cuda", f"{device_name} SXM")
    return catalog.gpu(found.gpu_id) if isinstance(found, Resolved) else None


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def compare_rows(rows: list[dict[str, str]], gpu_id: str | None = None) -> list[Comparison]:
    """gpuscout's estimate for each probe row; `gpu_id` overrides the device name's GPU."""
    catalog = load_catalog()
    out: list[Comparison] = []
    for i, r in enumerate(rows):
        base: dict[str, Any] = dict(
            index=i, model=r["model"], method=r["method"], batch=r["batch_size"],
            seq=r["seq_len"], checkpointing=r["grad_checkpointing"].startswith("yes"))
        gpu = catalog.gpu(gpu_id) if gpu_id else resolve_gpu(r["gpu"])
        try:
            arch = lookup(model_id(r["model"]))
        except UserInputError:
            out.append(Comparison(**base, gpu_id=None,
                                  skipped="model not in the architecture catalog"))
            continue
        est = estimate(arch, job_for_row(r, arch), gpu)
        out.append(Comparison(
            **base, gpu_id=gpu.canonical_id if gpu else None,
            measured_reserved=_float(r["measured_peak_gb"]), ours_reserved=est.memory.reserved_gb,
            measured_allocated=allocated_gb(r), ours_allocated=est.memory.allocated_gb,
            measured_tokens_s=_float(r["tokens_per_s"]),
            ours_tokens_s=est.time.tokens_per_s if est.time else None,
            skipped=None if gpu else f"no catalog GPU for {r['gpu']!r}: memory only"))
    return out


def compare_file(path: Path, gpu_id: str | None = None) -> list[Comparison]:
    return compare_rows(read(path), gpu_id)


def summaries(found: list[Comparison]) -> dict[str, Summary]:
    def errs(values: list[float | None]) -> list[float]:
        return [v for v in values if v is not None]

    return {
        "reserved": summarize(errs([c.reserved_error for c in found])),
        "allocated": summarize(errs([c.allocated_error for c in found])),
        "tokens/s": summarize(errs([c.tokens_error for c in found])),
    }


def _cell(x: float | None, fmt: str) -> str:
    return "–" if x is None else format(x, fmt)


HEADER = ("| # | model | method | batch×seq | GC | tokens/s meas. | ours | % | reserved GB meas. "
          "| ours | % | allocated GB meas. | ours | % |")


def markdown(found: list[Comparison]) -> str:
    """The table and summary lines of CALIBRATION.md's own-measurements section."""
    lines = [HEADER, "|" + "---|" * 14]
    for c in found:
        if c.skipped and c.gpu_id is None and c.ours_reserved is None:
            lines.append(f"| {c.index} | {c.model} | {c.method} | {c.batch}×{c.seq} | "
                         f"{'yes' if c.checkpointing else 'no'} | {c.skipped} |" + " |" * 8)
            continue
        lines.append(
            f"| {c.index} | {c.model} | {c.method} | {c.batch}×{c.seq} | "
            f"{'yes' if c.checkpointing else 'no'} | "
            f"{_cell(c.measured_tokens_s, ',.0f')} | {_cell(c.ours_tokens_s, ',.0f')} | "
            f"{_cell(c.tokens_error, '+.1f')} | "
            f"{_cell(c.measured_reserved, '.2f')} | {_cell(c.ours_reserved, '.2f')} | "
            f"{_cell(c.reserved_error, '+.1f')} | "
            f"{_cell(c.measured_allocated, '.2f')} | {_cell(c.ours_allocated, '.2f')} | "
            f"{_cell(c.allocated_error, '+.1f')} |")
    kept = {name: s for name, s in summaries(found).items() if s.rows}
    if kept:
        lines += ["", "| what | rows | median abs. error % | within ±20 % |", "|---|---|---|---|"]
    for name, s in kept.items():
        lines.append(f"| {name} | {s.rows} | {s.median_abs_error_pct:.1f} | "
                     f"{s.within_20_pct:.0%} |")
    return "\n".join(lines) + "\n"
