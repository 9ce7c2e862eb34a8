"""`gpuscout report --out DIR`: the HTML report with charts (see `pipeline/report.py`).

Register with `app.command("report")(report_command)`. Only typer and the option aliases are
imported here; plotly, duckdb and the sizing model load when the command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from gpuscout.cli.estimate import (
    AccumOpt,
    BatchOpt,
    CheckpointOpt,
    ChunkedOpt,
    ConfigOpt,
    DoubleQuantOpt,
    DtypeOpt,
    FlashOpt,
    MethodOpt,
    MixedOpt,
    ModelOpt,
    OffloadOpt,
    OptimizerOpt,
    PackedOpt,
    ParamsOpt,
    QuantOpt,
    RankOpt,
    SeqOpt,
    TargetsOpt,
)
from gpuscout.cli.run_options import (
    CheckpointEveryOpt,
    DatasetTokensOpt,
    EpochsOpt,
    MaxHoursOpt,
    Objective,
    ObjectiveOpt,
    ProviderOpt,
    RegionOpt,
    SpotOpt,
    SpotPolicy,
    StorageGbOpt,
    run_from_options,
)

# The README's main job (`make demo`): QLoRA of Llama-3.1-8B on 100 M tokens.
DEFAULT_MODEL = "meta-llama/Llama-3.1-8B"
DEFAULT_METHOD = "qlora"
DEFAULT_BATCH = 4
DEFAULT_TOKENS = 10**8


def report_command(
    out: Annotated[Path, typer.Option(
        "--out", help="directory to write index.html into (created if missing)",
        file_okay=False)],
    db: Annotated[Path | None, typer.Option(
        "--db", help="warehouse file [default: $GPUSCOUT_DB, else a per-user data dir]")] = None,
    model: ModelOpt = None, config: ConfigOpt = None, params: ParamsOpt = None,
    method: MethodOpt = DEFAULT_METHOD, lora_rank: RankOpt = 16, lora_targets: TargetsOpt = "qv",
    dtype: DtypeOpt = "bf16", quant: QuantOpt = "none", double_quant: DoubleQuantOpt = True,
    optimizer: OptimizerOpt = "adamw", mixed_precision: MixedOpt = True,
    batch_size: BatchOpt = DEFAULT_BATCH, seq_len: SeqOpt = 2048, grad_accum: AccumOpt = 1,
    grad_checkpointing: CheckpointOpt = True, flash_attention: FlashOpt = True,
    chunked_loss: ChunkedOpt = False, packed: PackedOpt = False, offload: OffloadOpt = "none",
    tokens: Annotated[float | None, typer.Option(
        "--tokens", help=f"training tokens in total [default: {DEFAULT_TOKENS:.0e} unless "
                         "--dataset-tokens]")] = None,
    dataset_tokens: DatasetTokensOpt = None, epochs: EpochsOpt = None,
    objective: ObjectiveOpt = Objective.cost, max_hours: MaxHoursOpt = None,
    spot: SpotOpt = SpotPolicy.allow, checkpoint_every: CheckpointEveryOpt = 30.0,
    storage_gb: StorageGbOpt = None, provider: ProviderOpt = None, region: RegionOpt = None,
    limit: Annotated[int, typer.Option(
        "--limit", min=1, help="offers in the recommendation")] = 10,
    top_gpus: Annotated[int, typer.Option(
        "--top-gpus", min=1, help="GPUs in the price-history chart")] = 8,
) -> None:
    """Write a self-contained HTML report with charts: price history, $/VRAM-GB-hour, spot vs
    on-demand, provider freshness and a recommendation for a job with its cost breakdown.

    The job defaults to QLoRA of meta-llama/Llama-3.1-8B, batch 4, on 1e8 tokens; --model,
    --config or --params replace the model. The page needs no network to open.
    """
    from gpuscout.report import generate_report

    if model is None and config is None and params is None:
        model = DEFAULT_MODEL
    if tokens is None and dataset_tokens is None:
        tokens = DEFAULT_TOKENS
    arch, job, request, warnings = run_from_options(
        model=model, config=config, params=params, method=method, lora_rank=lora_rank,
        lora_targets=lora_targets, dtype=dtype, quant=quant, double_quant=double_quant,
        optimizer=optimizer, mixed_precision=mixed_precision, batch_size=batch_size,
        seq_len=seq_len, grad_accum=grad_accum, grad_checkpointing=grad_checkpointing,
        flash_attention=flash_attention, chunked_loss=chunked_loss, packed=packed,
        offload=offload, tokens=tokens, dataset_tokens=dataset_tokens, epochs=epochs,
        objective=objective, max_hours=max_hours, spot=spot, checkpoint_every=checkpoint_every,
        storage_gb=storage_gb, provider=provider, region=region, limit=limit)
    if db is None:
        from gpuscout.pipeline.settings import Settings

        db = Settings().db
    page = generate_report(db, out, arch, job, request, top_gpus=top_gpus, warnings=warnings)
    typer.echo(f"report written to {page}")
