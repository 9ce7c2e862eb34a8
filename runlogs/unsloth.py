"""Unsloth's printed summary: its banners and the memory/time cells of its notebooks.

What is printed (unsloth's loader and trainer banners, and the notebooks' "Show final memory
and time stats" cell):

- the loader: `GPU: Tesla T4. Max memory: 14.748 GB.` (2024) or `NVIDIA A100-SXM4-80GB. Num
  GPUs = 1. Max memory: 79.318 GB.` (2025);
- the trainer: `Num GPUs = 1` or `Num GPUs used = 1`, `Batch size per device = 2 | Gradient
  accumulation steps = 4`, `Total batch size = 8 | Total steps = 60` or `Total batch size
  (2 x 4 x 1) = 8` with `Total steps = 60` on another line;
- the summary: `462.7198 seconds used for training.` (the Trainer's train_runtime) and `Peak
  reserved memory = 7.922 GB.`, torch.cuda.max_memory_reserved() / 1024³: GiB, over the whole
  session (the loaded model included).

No tokens are counted: total steps × total batch give the samples, and the job's length
options the tokens (Unsloth's notebooks pad each batch to its longest sample).
"""

from __future__ import annotations

import re

from gpuscout.runlogs.reading import GIB_IN_GB, LogFormatError, LogReading

_INT = r"(\d[\d,]*)"
PATTERNS = {
    "gpu": re.compile(r"(?:GPU = |\|\s{2,}(?:GPU: )?)([^|\n]*?)\. "
                      r"(?:Num GPUs = \d+\. )?Max memory"),
    "gpus": re.compile(r"Num GPUs(?: used)? = (\d+)\s*$", re.MULTILINE),
    "batch": re.compile(r"Batch size per device = (\d+)"),
    "accum": re.compile(r"Gradient [Aa]ccumulation steps = (\d+)"),
    "total_batch": re.compile(r"Total batch size(?: \([^)]*\))? = " + _INT),
    "steps": re.compile(r"Total steps = " + _INT),
    "runtime": re.compile(r"([\d.]+) seconds used for training"),
    "reserved": re.compile(r"Peak reserved memory = ([\d.]+) GB"),
}


def _found(name: str, text: str) -> str | None:
    m = PATTERNS[name].search(text)
    return m.group(1).replace(",", "").strip() if m else None


def parse(data: bytes, source: str) -> LogReading:
    text = data.decode("utf-8", errors="replace")
    runtime = _found("runtime", text)
    if runtime is None:
        raise LogFormatError(f"{source}: no 'seconds used for training': not Unsloth's "
                             "printed summary, or the run did not finish")
    seconds = float(runtime)
    total_batch, steps = _found("total_batch", text), _found("steps", text)
    samples = int(total_batch) * int(steps) if total_batch and steps else None
    reserved = _found("reserved", text)
    gpus, batch, accum = _found("gpus", text), _found("batch", text), _found("accum", text)
    return LogReading(
        format="unsloth", source=source, framework="unsloth", runtime_s=seconds,
        samples=samples, samples_per_s=samples / seconds if samples else None,
        token_count="samples" if samples else None,
        token_note="no token count: total steps × total batch samples over the "
                   "training time" if samples else None,
        steps=int(steps) if steps else None, gpu_name=_found("gpu", text),
        gpus=int(gpus) if gpus else None, batch_size=int(batch) if batch else None,
        grad_accum=int(accum) if accum else None,
        peak_gb=float(reserved) * GIB_IN_GB if reserved else None,
        memory_metric="reserved" if reserved else None,
        notes=["peak reserved memory covers the whole session, the loaded model included"]
        if reserved else [])
