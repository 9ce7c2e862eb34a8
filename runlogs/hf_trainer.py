"""The HF Trainer's run files: `trainer_state.json`, `train_results.json`, `all_results.json`.

TRL, axolotl and LLaMA-Factory train with this Trainer and write the same files. What their
figures count (transformers' trainer.py, trainer_utils.speed_metrics, modeling_utils):

- `train_runtime`: seconds of the training loop, evaluations inside it included;
  `train_samples_per_second` its samples (max_steps × the total batch when max_steps is set,
  else the dataset's length × epochs) over that time; `train_steps_per_second` likewise.
- `train_tokens_per_second` (`include_tokens_per_second`): `Trainer.num_tokens` over the
  process's own dataloader, `input_ids.numel()` of its batches (padded slots; with max_steps
  the first batch × max_steps): one GPU's rate.
- `num_input_tokens_seen` (`include_num_input_tokens_seen`): `input_ids.numel()` gathered
  over the processes: the padded slots of all GPUs (newer versions count the attention mask
  instead when it is set to "non_padding", which the file does not say).
- `total_flos`: per micro-batch 6 × `input_ids.numel()` × `num_parameters(exclude_embeddings=
  True)` (`floating_point_ops`), summed over the processes: the padded slots of all GPUs
  once the model's non-embedding parameters are known, which the use case divides out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gpuscout.runlogs.reading import LogFormatError, LogReading, number, whole

PADDED_SEEN = ("num_input_tokens_seen: input_ids.numel() gathered over the processes "
               "(padded slots of all GPUs, unless the run set it to count non-padding tokens)")
PADDED_PER_DEVICE = ("train_tokens_per_second: Trainer.num_tokens over one process's "
                     "dataloader (padded slots of one GPU)")


def load_json(data: bytes, source: str) -> dict[str, Any]:
    try:
        obj = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LogFormatError(f"{source}: not JSON ({exc})") from exc
    if not isinstance(obj, dict):
        raise LogFormatError(f"{source}: expected a JSON object")
    return obj


def trainer_fields(values: Mapping[str, Any]) -> dict[str, Any]:
    """The LogReading fields of the Trainer's final metrics (train_runtime and the rest)."""
    runtime = number(values, "train_runtime")
    samples_per_s = number(values, "train_samples_per_second")
    steps_per_s = number(values, "train_steps_per_second")
    seen = number(values, "num_input_tokens_seen")
    per_device = number(values, "train_tokens_per_second")
    fields: dict[str, Any] = {
        "runtime_s": runtime, "samples_per_s": samples_per_s,
        "samples": samples_per_s * runtime if samples_per_s and runtime else None,
        "steps": whole(steps_per_s * runtime) if steps_per_s and runtime else None,
        "total_flos": number(values, "total_flos") or None,
    }
    if seen and runtime:  # 0 when the option was off
        fields.update(tokens=seen, tokens_per_s=seen / runtime, token_count="padded",
                      token_note=PADDED_SEEN)
    elif per_device:
        fields.update(tokens_per_s_per_gpu=per_device, token_count="padded",
                      token_note=PADDED_PER_DEVICE)
    return fields


def parse(data: bytes, source: str) -> LogReading:
    """A trainer_state.json (its log history's train summary) or a *_results.json."""
    obj = load_json(data, source)
    if "log_history" in obj:
        history = obj["log_history"]
        if not isinstance(history, list):
            raise LogFormatError(f"{source}: log_history is not a list")
        summaries = [e for e in history if isinstance(e, dict) and "train_runtime" in e]
        if not summaries:
            raise LogFormatError(f"{source}: the log history has no train summary "
                                 "(train_runtime): the run did not finish")
        values = {**summaries[-1], **{k: obj[k] for k in ("total_flos", "num_input_tokens_seen")
                                      if k in obj}}
        fields = trainer_fields(values)
        steps = number(obj, "global_step")
        fields["steps"] = whole(steps) if steps else fields["steps"]
        batch = number(obj, "train_batch_size")
        fields["batch_size"] = whole(batch) if batch else None
    else:
        if number(obj, "train_runtime") is None:
            raise LogFormatError(f"{source}: no train_runtime: not the HF Trainer's "
                                 "train_results.json or all_results.json")
        fields = trainer_fields(obj)
    return LogReading(format="hf-trainer", source=source, **fields)
