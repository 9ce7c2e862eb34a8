"""`gpuscout runs add|list|compare`: your own training runs.

`add` takes the job options (from `Job`), so it loads when chosen (`deferred.py`), as `list`
and `compare` do; `gpuscout runs` alone, and `gpuscout runs log`, print the refresh run log
(app.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gpuscout.cli.db_option import DbOption, warehouse
from gpuscout.cli.job_options import job_options
from gpuscout.cli.output import Format
from gpuscout.sizing.job import Job  # the command's annotation: typer reads it at start-up

if TYPE_CHECKING:
    from gpuscout.pipeline.measured import Comparison
    from gpuscout.pipeline.measured.record import MeasuredRun

PathsArg = Annotated[list[Path], typer.Argument(
    help="training logs: trainer_state.json, train_results.json, all_results.json, "
         "wandb-summary.json, torchtune's log_*.txt, litgpt's or Unsloth's output, a runs "
         "CSV; or a run folder")]
GpuOpt = Annotated[str | None, typer.Option(
    "--gpu", help="the GPU the runs trained on, when the log does not name it")]
FormatOpt = Annotated[Format, typer.Option("--format", help="output format")]


def _given(ctx: typer.Context) -> set[str]:
    """The job options given on the command line (not left at their defaults)."""
    return {name for name in Job.model_fields
            if (source := ctx.get_parameter_source(name)) is not None
            and source.name not in ("DEFAULT", "DEFAULT_MAP")}


def _db(db: Path | None) -> Path:
    given = warehouse(db)
    if given is not None:
        return given
    from gpuscout.pipeline.settings import Settings

    return Settings().db


def _gb(x: float | None) -> str:
    return "-" if x is None else f"{x:,.1f}"


def _rate(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1f} %"


def _sources(run: MeasuredRun) -> str:
    """Where the run's options came from: "from the log: batch_size; from your options: ..."."""
    labels = {"log": "from the log", "option": "from your options",
              "derived": "derived from the log", "default": "defaults"}
    by: dict[str, list[str]] = {}
    for name, source in sorted(run.field_sources.items()):
        head, _, how = source.partition(": ")
        by.setdefault(labels.get(head, head), []).append(f"{name} ({how})" if how else name)
    return "; ".join(f"{label}: {', '.join(names)}" for label, names in by.items())


def _run_row(run: MeasuredRun) -> dict[str, Any]:
    return {"run": run.run_id, "source": Path(run.source_path).name,
            "format": run.source_format, "model": run.model, "gpu": run.gpu_id,
            "gpus": run.gpus, "stack": f"{run.framework} / {run.method}",
            "batch×len": f"{run.batch_size}×{run.mean_seq_len or run.seq_len}",
            "tokens/s": _rate(run.tokens_per_s),
            "predicted": _rate(run.predicted_tokens_per_s),
            "error": _pct(run.tokens_error_pct),
            "peak GB": _gb(run.peak_gb) + (f" ({run.memory_metric})" if run.memory_metric
                                           else ""),
            "started": f"{run.log_started_at:%Y-%m-%d %H:%M}" if run.log_started_at else "-"}


def _print_runs(runs: list[MeasuredRun], title: str) -> None:
    from gpuscout.cli.output import render_rows

    rows = [_run_row(r) for r in runs]
    columns = list(rows[0]) if rows else ["run"]
    render_rows(columns, rows, Format.table, title=title)


@job_options()
def add_command(job: Job, ctx: typer.Context, paths: PathsArg, gpu: GpuOpt = None,
                db: DbOption = None, format: FormatOpt = Format.table) -> None:
    """Read training logs and store their runs: measured tokens/s and memory, the job, and
    what gpuscout predicted for it.

    What a log does not say (the model, the GPU, the sequence length, packing, ...) comes from
    the job options; each run records which of its options came from the log and which from
    you. `gpuscout estimate` and `recommend` then correct jobs of the same GPU, framework and
    method by these runs.
    """
    from gpuscout.pipeline.measured import add_runs

    report = add_runs(_db(db), paths, job, _given(ctx), gpu)
    if format is Format.json:
        typer.echo(json.dumps({"added": [r.model_dump(mode="json") for r in report.added],
                               "already": [r.run_id for r in report.already]}, indent=1))
        return
    from gpuscout.cli.output import console

    out = console()
    if report.added:
        _print_runs(report.added, f"{len(report.added)} run(s) added")
        for run in report.added:
            out.print(f"- {run.run_id}: tokens/s {run.token_basis or 'not in the log'}",
                      highlight=False)
            out.print(f"  {_sources(run)}", highlight=False)
            for note in run.notes:
                out.print(f"  {note}", highlight=False)
    for run in report.already:
        out.print(f"- {run.run_id} ({Path(run.source_path).name}) is stored already; "
                  "kept as it was", highlight=False)


def list_command(db: DbOption = None, format: FormatOpt = Format.table) -> None:
    """Your stored runs: measured against what gpuscout predicted when each was added."""
    import gpuscout.runs

    runs = gpuscout.runs.list(db=_db(db))
    if format is Format.table:
        _print_runs(runs, f"{len(runs)} of your runs")
        return
    from gpuscout.cli.output import render_rows

    rows = [r.row() | {"field_sources": r.field_sources} for r in runs]
    render_rows(list(rows[0]) if rows else [], rows, format)


def _compare_row(c: Comparison) -> dict[str, Any]:
    r = c.run
    return {"run": r.run_id, "model": r.model, "gpu": r.gpu_id,
            "stack": f"{r.framework} / {r.method}", "tokens/s": _rate(r.tokens_per_s),
            "predicted then": _rate(r.predicted_tokens_per_s),
            "predicted now": _rate(c.predicted_now_tokens_per_s),
            "error now": _pct(c.tokens_error_now_pct),
            "your other runs": str(c.others_in_stack),
            "corrected by them": _rate(c.corrected_tokens_per_s),
            "corrected error": _pct(c.corrected_error_pct),
            "peak GB": _gb(r.peak_gb), "predicted GB": _gb(c.predicted_now_peak_gb),
            "memory error": _pct(c.memory_error_now_pct)}


def compare_command(db: DbOption = None, format: FormatOpt = Format.table) -> None:
    """Your runs, measured against predicted (when added and now), and what your other runs
    of the same GPU, framework and method correct each one's estimate to."""
    import gpuscout.runs
    from gpuscout.cli.output import render_rows
    from gpuscout.pipeline.measured.usecases import stack_summary

    comparisons = gpuscout.runs.compare(db=_db(db))
    if format is not Format.table:
        rows = [{"run_id": c.run.run_id, **c.model_dump(mode="json", exclude={"run"}),
                 "measured_tokens_per_s": c.run.tokens_per_s,
                 "predicted_then_tokens_per_s": c.run.predicted_tokens_per_s,
                 "measured_peak_gb": c.run.peak_gb} for c in comparisons]
        render_rows(list(rows[0]) if rows else [], rows, format)
        return
    rows = [_compare_row(c) for c in comparisons]
    render_rows(list(rows[0]) if rows else ["run"], rows, Format.table,
                title="your runs: measured against predicted")
    stacks = stack_summary(comparisons)
    if stacks:
        render_rows(list(stacks[0]), stacks, Format.table,
                    title="per GPU / framework / method: measured ÷ predicted now")
