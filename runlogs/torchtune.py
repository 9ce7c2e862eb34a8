"""torchtune's metric log: the DiskLogger's `log_<unix time>.txt` (or `.jsonl`).

One line per logged step (`metric_logging.DiskLogger.log_dict`): `Step 12 | loss:1.11 lr:2e-05
tokens_per_second_per_gpu:543.0 ...` in txt, `{"step": 12, "loss": 1.11, ...}` in jsonl. What
the recipes log (recipes/*_finetune_*.py, training/memory.py):

- `tokens_per_second_per_gpu`: the step's tokens over the step's seconds (distributed recipes
  all-reduce the tokens and divide by the world size). Since October 2024 (torchtune #1875,
  23c8829) the tokens are `labels != ignore_index`: padding and masked prompt tokens are left
  out; before, `batch["tokens"].numel()`: the padded slots. The log does not say which.
- `peak_memory_active`, `peak_memory_alloc`, `peak_memory_reserved` (`log_peak_memory_stats`):
  GiB, the allocator's peaks since the previous log (they are reset after each one).

The run's rate is the median of the logged steps after the first (the first carries the
warm-up); its peak memory the largest logged. The default file name carries the Unix time the
logger was made, the run's start.
"""

from __future__ import annotations

import json
import re
import statistics
from datetime import UTC, datetime
from typing import Any

from gpuscout.runlogs.reading import (
    GIB_IN_GB,
    LogFormatError,
    LogReading,
    MemoryMetric,
    number,
)

LABELS_NOTE = ("tokens_per_second_per_gpu: labels other than ignore_index per second of the "
               "step (padding and masked prompts left out; the padded slots before torchtune's "
               "October 2024 change)")
# The memory the log reports, the most inclusive first.
MEMORY_KEYS: tuple[tuple[str, MemoryMetric], ...] = (
    ("peak_memory_reserved", "reserved"), ("peak_memory_alloc", "allocated"),
    ("peak_memory_active", "active"))
_TXT_STEP = re.compile(r"^Step (\d+) \| (.*)$")
_FILE_TIME = re.compile(r"log_(\d{9,11})\.(?:txt|jsonl)$")


def _txt_steps(text: str) -> list[dict[str, Any]]:
    steps = []
    for line in text.splitlines():
        m = _TXT_STEP.match(line.strip())
        if not m:
            continue
        values: dict[str, Any] = {"step": int(m.group(1))}
        for pair in m.group(2).split():
            name, _, value = pair.partition(":")
            values[name] = value
        steps.append(values)
    return steps


def _jsonl_steps(text: str) -> list[dict[str, Any]]:
    steps = []
    for line in text.splitlines():
        if line.strip():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict) and "step" in row:
                steps.append(row)
    return steps


def parse(data: bytes, source: str) -> LogReading:
    text = data.decode("utf-8", errors="replace")
    steps = _jsonl_steps(text) if text.lstrip().startswith("{") else _txt_steps(text)
    rates = [(s["step"], r) for s in steps
             if (r := number(s, "tokens_per_second_per_gpu")) is not None]
    if not rates:
        raise LogFormatError(f"{source}: no step with tokens_per_second_per_gpu: not a "
                             "torchtune metric log")
    later = [r for step, r in rates if step != rates[0][0]] or [rates[0][1]]
    fields: dict[str, Any] = {}
    for key, metric in MEMORY_KEYS:
        peaks = [p for s in steps if (p := number(s, key)) is not None]
        if peaks:
            fields.update(peak_gb=max(peaks) * GIB_IN_GB, memory_metric=metric)
            break
    stamp = _FILE_TIME.search(source)
    return LogReading(
        format="torchtune", source=source, framework="torchtune",
        tokens_per_s_per_gpu=statistics.median(later), token_count="labels",
        token_note=LABELS_NOTE, steps=max(step for step, _ in rates),
        started_at=datetime.fromtimestamp(int(stamp.group(1)), UTC) if stamp else None,
        notes=[f"rate: the median of {len(later)} logged steps after the first"], **fields)
