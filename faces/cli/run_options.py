"""The options of a priced run, shared by `gpuscout recommend` and `gpuscout report`.

The job options themselves (model, method, precision, batch, ...) are `sizing/cli.py`'s; this
module adds the training volume and the ranking options, and turns all of them into the
architecture, job and request the recommendation takes. Only typer is imported at start-up.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from gpuscout.pipeline.recommend import RecommendRequest
    from gpuscout.sizing.architectures import Architecture
    from gpuscout.sizing.types import JobSpec


class Objective(StrEnum):
    cost = "cost"
    time = "time"
    balanced = "balanced"


class SpotPolicy(StrEnum):
    allow = "allow"
    prefer = "prefer"
    forbid = "forbid"


TokensOpt = Annotated[float | None, typer.Option("--tokens", help="training tokens in total")]
DatasetTokensOpt = Annotated[float | None, typer.Option(
    "--dataset-tokens", help="tokens in the dataset (with --epochs)")]
EpochsOpt = Annotated[float | None, typer.Option(
    "--epochs", min=0, help="passes over the dataset")]
ObjectiveOpt = Annotated[Objective, typer.Option("--objective")]
MaxHoursOpt = Annotated[float | None, typer.Option("--max-hours", min=0)]
SpotOpt = Annotated[SpotPolicy, typer.Option("--spot", help="spot offers")]
CheckpointEveryOpt = Annotated[float, typer.Option(
    "--checkpoint-every", min=1, help="minutes between checkpoints")]
StorageGbOpt = Annotated[float | None, typer.Option(
    "--storage-gb", min=0, help="persistent storage during the run [default: base model "
                                "+ dataset + 2 checkpoints]")]
ProviderOpt = Annotated[list[str] | None, typer.Option("--provider", "-p")]
RegionOpt = Annotated[str | None, typer.Option("--region")]


def run_from_options(
    *, model: str | None, config: Path | None, params: float | None, method: str,
    lora_rank: int, lora_targets: str, dtype: str, quant: str, double_quant: bool,
    optimizer: str, mixed_precision: bool, batch_size: int, seq_len: int, grad_accum: int,
    grad_checkpointing: bool, flash_attention: bool, chunked_loss: bool, packed: bool,
    offload: str, tokens: float | None, dataset_tokens: float | None, epochs: float | None,
    objective: Objective, max_hours: float | None, spot: SpotPolicy, checkpoint_every: float,
    storage_gb: float | None, provider: list[str] | None, region: str | None, limit: int,
) -> tuple[Architecture, JobSpec, RecommendRequest, list[str]]:
    """Architecture, job, request and warnings for the command-line options of a priced run.

    The parallelism is chosen per offer, so the job starts on one GPU; --offload applies to
    whichever ZeRO stage the offer gets.
    """
    from gpuscout.cli.estimate import job_from_options
    from gpuscout.pipeline.recommend import RecommendRequest, tokens_from_options

    arch, job, warnings = job_from_options(
        model=model, config=config, params=params, method=method, lora_rank=lora_rank,
        lora_targets=lora_targets, dtype=dtype, quant=quant, double_quant=double_quant,
        optimizer=optimizer, mixed_precision=mixed_precision, batch_size=batch_size,
        seq_len=seq_len, grad_accum=grad_accum, grad_checkpointing=grad_checkpointing,
        flash_attention=flash_attention, chunked_loss=chunked_loss, packed=packed,
        offload="none")
    if offload != "none":
        job = job.model_copy(update={"offload": offload})
    request = RecommendRequest(
        tokens=tokens_from_options(tokens, dataset_tokens, epochs), objective=objective.value,
        spot=spot.value, max_hours=max_hours, checkpoint_every_min=checkpoint_every,
        storage_gb=storage_gb, providers=provider or None, region=region, limit=limit)
    return arch, job, request, warnings
