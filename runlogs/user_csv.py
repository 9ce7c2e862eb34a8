"""A plain CSV of the user's own runs, one run per row.

Columns (a header row; names as below, any order):

- `model`, `method`, `gpu` (a catalog id or a GPU's name, `A100-SXM4-80GB`), required;
- `tokens_per_s` (the whole job, all GPUs) and/or `peak_gb` (per GPU, GB of 10⁹ bytes),
  at least one;
- optional: `memory_metric` (allocated | reserved | active | device, default device: what
  nvidia-smi shows), `token_count` (padded | non-padding | labels, default padded),
  `started_at`, `finished_at` (ISO 8601), `notes`, and any job option by its name (`framework`,
  `gpus`, `batch_size`, `seq_len`, `mean_seq_len`, `grad_accum`, `lora_rank`, `packed`, ...),
  which the run takes as the log's own statement.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from typing import Any, get_args

from gpuscout.runlogs.reading import (
    LogFormatError,
    LogReading,
    MemoryMetric,
    TokenCount,
    number,
)

REQUIRED = ("model", "method", "gpu")
OWN = {"model", "method", "gpu", "tokens_per_s", "peak_gb", "memory_metric", "token_count",
       "started_at", "finished_at", "notes"}


def _when(text: str, where: str) -> datetime | None:
    if not text.strip():
        return None
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError as exc:
        raise LogFormatError(f"{where}: {text!r} is not an ISO 8601 time") from exc
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _choice(value: str, allowed: tuple[str, ...], default: str, where: str, column: str) -> Any:
    v = value.strip().lower() or default
    if v not in allowed:
        raise LogFormatError(f"{where}: {column} {value!r} is not one of {'|'.join(allowed)}")
    return v


def parse(data: bytes, source: str) -> list[LogReading]:
    text = data.decode("utf-8-sig", errors="replace")
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in reader.fieldnames or []]
    missing = [c for c in REQUIRED if c not in header]
    if missing or not {"tokens_per_s", "peak_gb"} & set(header):
        raise LogFormatError(f"{source}: a runs CSV needs the columns model, method, gpu and "
                             f"tokens_per_s or peak_gb (missing: "
                             f"{', '.join(missing) or 'tokens_per_s/peak_gb'})")
    out = []
    for n, raw in enumerate(reader, start=2):
        row = {k.strip(): (v or "").strip() for k, v in raw.items() if k}
        where = f"{source} line {n}"
        if not any(row.values()):
            continue
        if not all(row.get(c) for c in REQUIRED):
            raise LogFormatError(f"{where}: model, method and gpu are required")
        tokens, peak = number(row, "tokens_per_s"), number(row, "peak_gb")
        if tokens is None and peak is None:
            raise LogFormatError(f"{where}: neither tokens_per_s nor peak_gb is a number")
        if (tokens is not None and tokens <= 0) or (peak is not None and peak <= 0):
            raise LogFormatError(f"{where}: tokens_per_s and peak_gb must be positive")
        out.append(LogReading(
            format="csv", source=where, model=row["model"], method=row["method"],
            gpu_name=row["gpu"], tokens_per_s=tokens,
            token_count=_choice(row.get("token_count", ""), get_args(TokenCount)[:3],
                                "padded", where, "token_count") if tokens else None,
            token_note="tokens_per_s as the CSV states it" if tokens else None,
            peak_gb=peak,
            memory_metric=_choice(row.get("memory_metric", ""), get_args(MemoryMetric),
                                  "device", where, "memory_metric") if peak else None,
            started_at=_when(row.get("started_at", ""), where),
            finished_at=_when(row.get("finished_at", ""), where),
            notes=[row["notes"]] if row.get("notes") else [],
            settings={k: v for k, v in row.items() if k not in OWN and v}))
    if not out:
        raise LogFormatError(f"{source}: no rows")
    return out
