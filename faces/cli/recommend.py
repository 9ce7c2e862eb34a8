"""`gpuscout recommend`: the current offers ranked by the whole cost (or time) of a job.

Registered through `defer()` (`deferred.py`): its job options come from `Job`, so this module
loads only when the command is chosen.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated

import typer

from gpuscout.cli.db_option import DbOption, warehouse
from gpuscout.cli.job_options import job_options
from gpuscout.cli.run_options import (
    MAX_PRICE_AGE_DAYS,
    CheckpointEveryOpt,
    CommitmentOpt,
    DatasetTokensOpt,
    DownloadGbOpt,
    EpochsOpt,
    KeepDaysOpt,
    MaxHoursOpt,
    MaxPriceAgeOpt,
    MaxUsdOpt,
    MinReliabilityOpt,
    Objective,
    ObjectiveOpt,
    ProviderOpt,
    RegionOpt,
    RequireOpt,
    SpotOpt,
    SpotPolicy,
    StorageGbOpt,
    TokensOpt,
)
from gpuscout.sizing.job import Job


class TableOrJson(StrEnum):
    table = "table"
    json = "json"


@job_options(exclude=("gpus", "sharding", "interconnect", "network", "network_gbps"))
def recommend_command(
    job: Job,
    tokens: TokensOpt = None, dataset_tokens: DatasetTokensOpt = None, epochs: EpochsOpt = None,
    objective: ObjectiveOpt = Objective.cost, max_hours: MaxHoursOpt = None,
    max_usd: MaxUsdOpt = None, commitment: CommitmentOpt = "none",
    min_reliability: MinReliabilityOpt = None,
    spot: SpotOpt = SpotPolicy.allow, checkpoint_every: CheckpointEveryOpt = None,
    max_price_age: MaxPriceAgeOpt = MAX_PRICE_AGE_DAYS,
    storage_gb: StorageGbOpt = None, keep_days: KeepDaysOpt = 0.0,
    download_gb: DownloadGbOpt = None, require: RequireOpt = None,
    provider: ProviderOpt = None, region: RegionOpt = None,
    limit: Annotated[int, typer.Option("--limit", min=1)] = 10,
    explain: Annotated[bool, typer.Option(
        "--explain", help="every reason under each offer, and the cheaper offers that were "
                          "set aside, and why")] = False,
    wide: Annotated[bool, typer.Option(
        "--wide", help="the full table: prices per GPU, machine and order, price age, "
                       "charged hours, ranges and every reason in columns")] = False,
    pessimistic: Annotated[bool, typer.Option(
        "--pessimistic", help="rank every offer at the slow end of its range (the "
                              "calibration's spread, narrowed by your runs)")] = False,
    correction: Annotated[bool, typer.Option(
        "--correction/--no-correction", help="correct the machines of a GPU by your own runs "
                                             "of it (gpuscout runs add)")] = True,
    db: DbOption = None,
    format: Annotated[TableOrJson, typer.Option("--format")] = TableOrJson.table,
) -> None:
    """Rank the current offers by the whole cost (or time) of your fine-tuning run, with reasons.

    The parallelism is chosen per offer (one GPU, DDP, ZeRO-2 or ZeRO-3 over its GPUs, more
    nodes only on a fast fabric), so --gpus/--sharding of `estimate` do not apply here.
    """
    from gpuscout.api import recommend as run_recommend
    from gpuscout.cli.recommend_view import print_recommendation

    result = run_recommend(
        job, db=warehouse(db), tokens=tokens, dataset_tokens=dataset_tokens, epochs=epochs,
        objective=objective.value, spot=spot.value, max_hours=max_hours,
        checkpoint_every_min=checkpoint_every, max_price_age_days=max_price_age or None,
        storage_gb=storage_gb, keep_days=keep_days, download_gb=download_gb,
        require=require, providers=provider,
        region=region, limit=limit, commitment=commitment, max_usd=max_usd,
        min_reliability=min_reliability, correction=correction, pessimistic=pessimistic)
    if format is TableOrJson.json:
        typer.echo(json.dumps(result.model_dump(mode="json"), indent=1, default=str))
    else:
        print_recommendation(result, explain=explain, wide=wide, job=job)
