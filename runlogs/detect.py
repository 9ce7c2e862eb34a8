"""Which reader a file needs, by its name and its first bytes; and a folder's run file."""

from __future__ import annotations

import json
from pathlib import Path

from gpuscout.runlogs import hf_trainer, litgpt, torchtune, unsloth, user_csv, wandb_summary
from gpuscout.runlogs.reading import LogFormatError, LogReading

# In a run folder, the file that says most about the run, first.
RUN_FILES = ("trainer_state.json", "all_results.json", "train_results.json",
             "wandb-summary.json", "files/wandb-summary.json")
MAX_BYTES = 64 * 2**20  # a log larger than this is not a run summary


def _file(path: Path) -> Path:
    if not path.exists():
        raise LogFormatError(f"{path}: no such file")
    if path.is_dir():
        for name in RUN_FILES:
            if (path / name).is_file():
                return path / name
        raise LogFormatError(f"{path}: a folder without {', '.join(RUN_FILES[:4])}")
    return path


def _json_keys(data: bytes) -> set[str]:
    try:
        obj = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return set()
    return set(obj) if isinstance(obj, dict) else set()


def parse_bytes(data: bytes, name: str, sibling: bytes | None = None) -> list[LogReading]:
    """The readings of one file's bytes; `name` chooses as much as the content does."""
    lower = name.lower()
    if lower.endswith(".csv"):
        return user_csv.parse(data, name)
    head = data.lstrip()[:1]
    if head == b"{" and not lower.endswith(".jsonl"):
        keys = _json_keys(data)
        if "log_history" in keys or "train_runtime" in keys and "_runtime" not in keys:
            return [hf_trainer.parse(data, name)]
        if keys & {"_runtime", "_timestamp", "_wandb"} or lower.endswith("wandb-summary.json"):
            return [wandb_summary.parse(data, name, sibling)]
    text = data[:MAX_BYTES].decode("utf-8", errors="replace")
    if "seconds used for training" in text or "Unsloth" in text:
        return [unsloth.parse(data, name)]
    if "tokens_per_second_per_gpu" in text:
        return [torchtune.parse(data, name)]
    if "iter time:" in text or "Training Time" in text or "Training time:" in text:
        return [litgpt.parse(data, name)]
    raise LogFormatError(f"{name}: not a training log gpuscout reads (the HF Trainer's "
                         "trainer_state/train_results/all_results.json, wandb-summary.json, "
                         "torchtune's log_*.txt, litgpt's or Unsloth's output, or a runs CSV)")


def read_log(path: Path | str) -> list[LogReading]:
    """Every run `path` (a file, or a run folder) describes: one, or a CSV's rows."""
    file = _file(Path(path))
    if file.stat().st_size > MAX_BYTES:
        raise LogFormatError(f"{file}: {file.stat().st_size:,} bytes is more than a training "
                             "log's summary; give the run's summary file")
    sibling = file.with_name("wandb-metadata.json")
    extra = sibling.read_bytes() if file.name == "wandb-summary.json" and sibling.is_file() \
        else None
    return parse_bytes(file.read_bytes(), file.name, extra)
