"""W&B run summaries: `wandb-summary.json`, with the run's `wandb-metadata.json` beside it.

The summary holds the last value of every metric the run logged. The HF Trainer's W&B
callback logs its final metrics either at the top level (`train_runtime`, `total_flos`, newer
transformers) or under `train/` (`train/train_runtime`, older ones): both are the Trainer's
figures (`hf_trainer.py` says what they count). torchtune's W&B logger logs its step metrics
by name (`tokens_per_second_per_gpu`, `peak_memory_*` in GiB): the last step's. `_timestamp`
is the Unix time of the last record and `_runtime` the seconds since the run started. The
metadata names the machine's GPU (`gpu`) and how many it had (`gpu_count`), not how many the
job used.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from gpuscout.runlogs.hf_trainer import load_json, trainer_fields
from gpuscout.runlogs.reading import GIB_IN_GB, LogFormatError, LogReading, number
from gpuscout.runlogs.torchtune import LABELS_NOTE, MEMORY_KEYS


def _flattened(summary: dict[str, Any]) -> dict[str, Any]:
    """The Trainer's `train/<metric>` keys without the prefix (top-level keys win)."""
    out = {k.removeprefix("train/"): v for k, v in summary.items() if k.startswith("train/")}
    return {**out, **{k: v for k, v in summary.items() if not k.startswith("train/")}}


def parse(data: bytes, source: str, metadata: bytes | None = None) -> LogReading:
    summary = _flattened(load_json(data, source))
    notes: list[str] = []
    fields: dict[str, Any] = {}
    if number(summary, "train_runtime") is not None:
        fields = trainer_fields(summary)
        steps = number(summary, "global_step")
        if steps:
            fields["steps"] = round(steps)
    elif number(summary, "tokens_per_second_per_gpu") is not None:
        fields = {"framework": "torchtune", "token_count": "labels", "token_note": LABELS_NOTE,
                  "tokens_per_s_per_gpu": number(summary, "tokens_per_second_per_gpu")}
        notes.append("torchtune's W&B summary keeps the last step's rate")
        for key, metric in MEMORY_KEYS:
            if (gib := number(summary, key)) is not None:
                fields.update(peak_gb=gib * GIB_IN_GB, memory_metric=metric)
                break
    else:
        raise LogFormatError(f"{source}: a W&B summary without the HF Trainer's train metrics "
                             "or torchtune's tokens_per_second_per_gpu")
    end, elapsed = number(summary, "_timestamp"), number(summary, "_runtime")
    finished = datetime.fromtimestamp(end, UTC) if end is not None else None
    started = finished - timedelta(seconds=elapsed) if finished and elapsed is not None else None
    gpu_name = None
    if metadata is not None:
        meta = load_json(metadata, "wandb-metadata.json")
        gpu_name = meta.get("gpu") if isinstance(meta.get("gpu"), str) else None
        if (count := number(meta, "gpu_count")) is not None:
            notes.append(f"the machine had {count:g} GPU(s) (wandb-metadata.json); how many "
                         "trained is not in the summary")
        if started is None and isinstance(meta.get("startedAt"), str):
            started = datetime.fromisoformat(meta["startedAt"]).replace(tzinfo=UTC)
    return LogReading(format="wandb", source=source, gpu_name=gpu_name, started_at=started,
                      finished_at=finished, notes=notes, **fields)
