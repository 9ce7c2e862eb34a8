"""What a fine-tuning run keeps on persistent storage, and what it downloads at the end.

The run's volume holds the base model as downloaded, the dataset as text and as the tokenized
cache the trainer reads, the newest checkpoints (kept across stops, so that a stopped or
interrupted run resumes) and the final weights (the adapter of a PEFT run, else the whole
model). It is charged for the run's expected wall time and for the days it is kept after it
(`--keep-days`, for downloading and evaluating); the final weights are downloaded once
(`--download-gb` replaces their size).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from gpuscout.pipeline.recommend.plans import DATASET_BYTES_PER_TOKEN, WEIGHT_BYTES, sizes_gb
from gpuscout.sizing.architectures import Architecture
from gpuscout.sizing.types import JobSpec

# The tokenized cache as Hugging Face `datasets` writes it: input_ids as int32 and the
# attention mask as int8 per token (datasets/arrow_writer.py, OptimizedTypedSequence); labels
# are made by the collator at batch time, not stored.
TOKENIZED_BYTES_PER_TOKEN = 5.0
# The newest checkpoints kept on the volume (Trainer's save_total_limit=2 is the usual
# setting): the last one, and the one before it in case the last was cut off mid-write.
CHECKPOINTS_KEPT = 2
HOURS_PER_DAY = 24.0


class JobStorage(BaseModel):
    """GB the run keeps, item by item, and GB it downloads at the end."""

    model_config = ConfigDict(frozen=True)

    items: dict[str, float] = Field(description="GB per item: base model, dataset, tokenized "
                                    "cache, checkpoints, final weights")
    stated_gb: float | None = Field(default=None, description="--storage-gb: replaces the sum")
    keep_days: float = Field(default=0.0, ge=0, description="days kept after the run")
    checkpoint_gb: float
    final_gb: float = Field(description="the final weights (adapter, or the whole model)")
    download_gb: float = Field(description="egress at the end: the final weights unless "
                               "--download-gb")

    @property
    def gb(self) -> float:
        return self.stated_gb if self.stated_gb is not None else sum(self.items.values())

    @property
    def keep_hours(self) -> float:
        return self.keep_days * HOURS_PER_DAY

    def summary(self) -> str:
        """"132.4 GB (base model 16.1, dataset 0.4, ...)" for the reasons."""
        if self.stated_gb is not None:
            return f"{self.stated_gb:,.1f} GB (--storage-gb)"
        parts = ", ".join(f"{name} {_gb(gb)}" for name, gb in self.items.items())
        return f"{_gb(self.gb)} GB ({parts})"


def _gb(gb: float) -> str:
    """GB to a tenth, or to two figures below one (an adapter is a few MB)."""
    return f"{gb:,.1f}" if gb >= 1 or gb == 0 else f"{gb:.2g}"


def job_storage(arch: Architecture, job: JobSpec, tokens: int, *,
                dataset_tokens: int | None = None, storage_gb: float | None = None,
                keep_days: float = 0.0, download_gb: float | None = None) -> JobStorage:
    """The run's storage: `dataset_tokens` are the tokens on disk (one epoch of `tokens`;
    default all of them)."""
    checkpoint, final, _ = sizes_gb(arch, job, tokens)
    on_disk = tokens if dataset_tokens is None else dataset_tokens
    items = {
        "base model": arch.total_params * WEIGHT_BYTES / 1e9,
        "dataset": on_disk * DATASET_BYTES_PER_TOKEN / 1e9,
        "tokenized cache": on_disk * TOKENIZED_BYTES_PER_TOKEN / 1e9,
        f"{CHECKPOINTS_KEPT} checkpoints": CHECKPOINTS_KEPT * checkpoint,
        "final weights": final,
    }
    return JobStorage(items=items, stated_gb=storage_gb, keep_days=keep_days,
                      checkpoint_gb=checkpoint, final_gb=final,
                      download_gb=final if download_gb is None else download_gb)
