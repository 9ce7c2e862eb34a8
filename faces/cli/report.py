"""`gpuscout report --out DIR`: the HTML report with charts (see `gpuscout/report.py`).

Register with `app.command("report")(report_command)`. Only typer and the options are imported
here; plotly, duckdb and the sizing model load when the command runs.
"""

from __future__ import annotations

from pathlib import Path
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
)
from gpuscout.sizing.job import MAIN_JOB, MAIN_JOB_TOKENS, Job


@job_options(exclude=("gpus", "sharding", "interconnect", "network", "network_gbps"))
def report_command(
    job: Job,
    out: Annotated[Path, typer.Option(
        "--out", help="directory to write index.html into (created if missing)",
        file_okay=False)],
    db: DbOption = None,
    tokens: Annotated[float | None, typer.Option(
        "--tokens", help=f"training tokens in total [default: {MAIN_JOB_TOKENS:.0e} unless "
                         "--dataset-tokens]")] = None,
    dataset_tokens: DatasetTokensOpt = None, epochs: EpochsOpt = None,
    objective: ObjectiveOpt = Objective.cost, max_hours: MaxHoursOpt = None,
    max_usd: MaxUsdOpt = None, commitment: CommitmentOpt = "none",
    min_reliability: MinReliabilityOpt = None,
    spot: SpotOpt = SpotPolicy.allow, checkpoint_every: CheckpointEveryOpt = None,
    max_price_age: MaxPriceAgeOpt = MAX_PRICE_AGE_DAYS,
    storage_gb: StorageGbOpt = None, keep_days: KeepDaysOpt = 0.0,
    download_gb: DownloadGbOpt = None, require: RequireOpt = None,
    provider: ProviderOpt = None, region: RegionOpt = None,
    limit: Annotated[int, typer.Option(
        "--limit", min=1, help="offers in the recommendation")] = 10,
    top_gpus: Annotated[int, typer.Option(
        "--top-gpus", min=1, help="GPUs in the price-history chart")] = 8,
) -> None:
    """Write a self-contained HTML report with charts: price history, $/VRAM-GB-hour, spot vs
    on-demand, provider freshness and a recommendation for a job with its cost breakdown.

    The job is `recommend`'s: the same job options with the same defaults (LoRA, micro-batch
    1), on meta-llama/Llama-3.1-8B and 1e8 tokens unless --model (or --config, --params) and
    --tokens say otherwise; the page's header says which job it priced. The page needs no
    network to open.
    """
    from gpuscout.pipeline.profiles import parse_requirements
    from gpuscout.pipeline.recommend import (
        RecommendRequest,
        commitment_from_option,
        tokens_from_options,
    )
    from gpuscout.pipeline.settings import Settings
    from gpuscout.report import generate_report

    if job.model is None and job.config is None and job.params is None:
        job = job.model_copy(update={"model": MAIN_JOB.model})
    if tokens is None and dataset_tokens is None:
        tokens = MAIN_JOB_TOKENS
    arch, spec, warnings = job.resolve_per_offer()
    policy, months = commitment_from_option(commitment)
    request = RecommendRequest(
        tokens=tokens_from_options(tokens, dataset_tokens, epochs), objective=objective.value,
        spot=spot.value, max_hours=max_hours, checkpoint_every_min=checkpoint_every,
        max_price_age_days=max_price_age or None,
        storage_gb=storage_gb, keep_days=keep_days, download_gb=download_gb,
        dataset_tokens=None if dataset_tokens is None else max(1, int(dataset_tokens)),
        require=parse_requirements(require or ""),
        providers=provider or None, region=region, limit=limit,
        commitment=policy, max_commitment_months=months, max_usd=max_usd,
        min_reliability=min_reliability, framework=job.framework)
    page = generate_report(warehouse(db) or Settings().db, out, arch, spec, request,
                           top_gpus=top_gpus, warnings=warnings)
    typer.echo(f"report written to {page}")
