"""What a training log says about its run, as the stack that wrote it counts it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gpuscout.core.errors import UserInputError

LogFormat = Literal["hf-trainer", "wandb", "torchtune", "litgpt", "unsloth", "csv"]
# How a log counts its tokens: `padded` the slots of the padded batches (input_ids.numel()),
# `non-padding` the real tokens of the samples, `labels` the tokens the loss is taken over
# (padding and masked prompts left out), `samples` no tokens at all: only samples (sequences),
# which the job's length options turn into tokens.
TokenCount = Literal["padded", "non-padding", "labels", "samples"]
# torch.cuda.max_memory_allocated, max_memory_reserved, the allocator's active bytes, or the
# whole device as nvidia-smi shows it (reserved + CUDA context).
MemoryMetric = Literal["allocated", "reserved", "active", "device"]

GIB_IN_GB = 2**30 / 1e9  # a GiB in GB: logs that divide bytes by 1024³ print GiB


class LogReading(BaseModel):
    """One run as its log describes it. Rates are of the whole job unless named per GPU;
    memory in GB (10⁹ bytes), per GPU; every field the log does not give is None."""

    model_config = ConfigDict(frozen=True)

    format: LogFormat
    source: str = Field(description="the file (and row, for a CSV) read")
    framework: str | None = Field(
        default=None, description="the stack the format belongs to (unsloth, torchtune, "
        "litgpt); None where several stacks write it (the HF Trainer's files)")
    tokens_per_s: float | None = None
    tokens_per_s_per_gpu: float | None = None
    tokens: float | None = Field(default=None, description="tokens trained, all GPUs")
    token_count: TokenCount | None = Field(
        default=None, description="how the rate and tokens above were counted")
    token_note: str | None = Field(default=None, description="the source's counting, in words")
    samples: float | None = Field(default=None, description="sequences trained, all GPUs")
    samples_per_s: float | None = None
    steps: int | None = Field(default=None, description="optimizer steps")
    runtime_s: float | None = Field(default=None, description="the training's wall time")
    total_flos: float | None = Field(
        default=None, description="the HF Trainer's 6 × input slots × non-embedding "
        "parameters, summed over the processes")
    peak_gb: float | None = None
    memory_metric: MemoryMetric | None = None
    gpu_name: str | None = Field(default=None, description="the GPU as the log names it")
    gpus: int | None = None
    batch_size: int | None = Field(default=None, description="micro-batch per GPU")
    grad_accum: int | None = None
    seq_len: int | None = None
    model: str | None = None
    method: str | None = None
    settings: dict[str, str] = Field(
        default_factory=dict, description="further job options the log states (CSV columns "
        "named after them)")
    started_at: datetime | None = None
    finished_at: datetime | None = None
    notes: list[str] = Field(default_factory=list)


class LogFormatError(UserInputError):
    """A file that is not a training log of a format gpuscout reads, or one cut short."""


def number(values: Mapping[str, Any], key: str) -> float | None:
    """`values[key]` as a finite number, None when absent or not one (JSON has no NaN, but a
    W&B summary may hold "NaN" or "Infinity" strings)."""
    value = values.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        out = float(value)
    except ValueError:
        return None
    return out if math.isfinite(out) else None


def whole(value: float | None) -> int | None:
    return None if value is None else round(value)
