"""The `gpuscout` command line. It calls the same functions as the Prefect flows.

Start-up stays light: heavy modules (duckdb, pyarrow, httpx, adapters, the API's pydantic
models) are imported inside the commands that need them, the commands built from `Job` load
only when chosen (`deferred.py`), and prefect never is.
"""

from __future__ import annotations

import json
import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from gpuscout.cli.db_option import DbOption, remember, warehouse
from gpuscout.cli.deferred import DeferringGroup, defer
from gpuscout.cli.output import Format
from gpuscout.cli.probe import probe_command
from gpuscout.core.errors import GpuscoutError, UserInputError

app = typer.Typer(
    name="gpuscout",
    help="GPU cloud offers, their price history, and which one runs your fine-tuning job best.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=DeferringGroup,
)
gpus_app = typer.Typer(help="The GPU catalog and provider label resolution.",
                       invoke_without_command=True)
app.add_typer(gpus_app, name="gpus")
# The commands with the job options load when chosen (see deferred.py); the summaries are the
# first paragraphs of their docstrings, which tests/cli/test_cli_start.py holds them to.
defer(app, "estimate", "gpuscout.cli.estimate:estimate_command",
      "Estimate peak GPU memory (with a breakdown) and training time of a fine-tuning job.")
defer(app, "report", "gpuscout.cli.report:report_command",
      "Write a self-contained HTML report with charts: price history, $/VRAM-GB-hour, spot vs\n"
      "on-demand, provider freshness and a recommendation for a job with its cost breakdown.")

FormatOption = Annotated[Format, typer.Option("--format", help="output format")]
# The most rows a listing returns (warehouse/queries.py's bound, kept here to stay light).
MAX_ROWS = 1_000_000


@app.callback()
def root(db: DbOption = None) -> None:
    """GPU cloud offers, their price history, and which one runs your fine-tuning job best."""
    remember(db)


def _db(db: Path | None) -> Path:
    """The warehouse a reading command opens: --db (either place), $GPUSCOUT_DB, per-user."""
    given = warehouse(db)
    if given is not None:
        return given
    from gpuscout.pipeline.settings import Settings

    return Settings().db


class Sort(StrEnum):
    price = "price"
    gpu_hour = "gpu-hour"
    vram_hour = "vram-hour"


@app.command()
def refresh(
    provider: Annotated[list[str] | None, typer.Option(
        "--provider", "-p", help="provider to refresh (repeatable) [default: all]")] = None,
    offline: Annotated[bool, typer.Option(
        "--offline", help="replay the bundled recorded snapshots instead of the network")] = False,
    replay: Annotated[Path | None, typer.Option(
        "--replay", help="replay an archive directory (e.g. last night's --record)",
        file_okay=False)] = None,
    record: Annotated[Path | None, typer.Option(
        "--record", help="write every response to this archive directory",
        file_okay=False)] = None,
    check: Annotated[bool, typer.Option(
        "--check", help="fetch and parse only: report per provider whether it was reached, "
                        "its format recognised and its offers against the last good refresh; "
                        "write nothing")] = False,
    db: DbOption = None,
    format: FormatOption = Format.table,
) -> None:
    """Fetch offers, normalize them and merge them into the warehouse's price history."""
    from gpuscout.api import refresh as run_refresh
    from gpuscout.cli.refresh_view import progress_display, report_table

    if check:
        _check(provider, offline=offline, replay=replay, record=record, db=warehouse(db),
               format=format)
        return

    with progress_display(enabled=format is Format.table) as hook:
        report = run_refresh(db=warehouse(db), providers=provider, offline=offline, replay=replay,
                             record=record, progress=hook)
    if format is Format.table:
        report_table(report)
    else:
        import pyarrow as pa

        from gpuscout.cli.output import render

        render(pa.Table.from_pylist([r.model_dump() for r in report.providers]), format)
    # 0: every provider loaded (a partial load says what it held back in its `error`);
    # 3: some provider kept its last good data (failed, refused, drift, skipped); 1: none loaded.
    if report.status == "failed":
        raise typer.Exit(code=1)
    if report.not_loaded:
        raise typer.Exit(code=3)


def _check(providers: list[str] | None, *, offline: bool, replay: Path | None,
           record: Path | None, db: Path | None, format: Format) -> None:
    """`refresh --check`: exit 0 when every provider answered in a format it reads, else 3."""
    import pyarrow as pa

    from gpuscout.api import check
    from gpuscout.cli.output import render

    report = check(db=db, providers=providers, offline=offline, replay=replay, record=record)
    rows = [p.model_dump() for p in report.providers]
    render(pa.Table.from_pylist(rows), format, title="refresh check (nothing written)")
    if not report.healthy:
        raise typer.Exit(code=3)


@app.command()
def offers(
    gpu: Annotated[str | None, typer.Option(
        "--gpu", help="canonical GPU id or its start: h100, h100-sxm, a100-sxm-80gb")] = None,
    min_vram: Annotated[float | None, typer.Option(
        "--min-vram", help="minimum VRAM per GPU as sold, GiB (80 for an H100)",
        min=0)] = None,
    max_price: Annotated[float | None, typer.Option(
        "--max-price", help="maximum USD per GPU-hour", min=0)] = None,
    spot: Annotated[bool, typer.Option(
        "--spot", help="only spot/interruptible offers")] = False,
    on_demand: Annotated[bool, typer.Option(
        "--on-demand", help="only on-demand offers")] = False,
    provider: Annotated[list[str] | None, typer.Option(
        "--provider", "-p", help="provider (repeatable)")] = None,
    region: Annotated[str | None, typer.Option(
        "--region", help="region code substring or geography (us, europe, asia...)")] = None,
    sort: Annotated[Sort, typer.Option("--sort", help="order by")] = Sort.gpu_hour,
    limit: Annotated[int, typer.Option("--limit", min=1, max=MAX_ROWS)] = 50,
    db: DbOption = None,
    format: FormatOption = Format.table,
) -> None:
    """Current offers from the warehouse, cheapest first."""
    # The query `gpuscout.offers_table` runs, read without pyarrow or the API's models.
    from gpuscout.cli.output import render_rows
    from gpuscout.warehouse.connection import connect
    from gpuscout.warehouse.queries import check_filter_values, fetch_named, offers_params

    if spot and on_demand:
        raise UserInputError("--spot and --on-demand exclude each other: give one (or neither "
                             "for both)")
    params = offers_params(gpu=gpu, min_vram=min_vram, max_price=max_price,
                           spot=True if spot else (False if on_demand else None),
                           providers=provider, region=region, sort=sort.value, limit=limit)
    with connect(_db(db), read_only=True) as con:
        check_filter_values(con, providers=provider, region=region)
        columns, values = fetch_named(con, "offers", params)
    rows = [dict(zip(columns, v, strict=True)) for v in values]
    title = f"{len(rows)} current offers"
    if format is Format.table:
        columns, rows = list(SHOWN_OFFER_COLUMNS.values()), [_shown_offer(r) for r in rows]
        title += " (n GPUs of GiB each, as sold; $/offer-h: all n GPUs)"
    render_rows(columns, rows, format, title=title)


# The columns `offers` prints as a table, and their headers.
# n GPUs per offer, each with GiB of memory as sold (binary: an "80GB" H100 holds 80 GiB);
# $/offer-h is one order of the offer, all its GPUs (a cluster's whole price where it is sold
# as one).
SHOWN_OFFER_COLUMNS = {
    "provider": "provider", "gpu_id": "gpu", "gpu_count": "n", "vram_gb": "GiB",
    "interconnect": "link", "sold_as": "sold as", "price_usd_per_gpu_hour": "$/GPU-h",
    "price_usd_per_hour": "$/offer-h", "region": "region", "listings": "hosts",
    "availability": "avail",
    "interruption": "interrupt", "observed_at": "observed", "stale": "stale"}


def _shown_offer(row: dict[str, Any]) -> dict[str, Any]:
    # An unknown GPU shows the provider's label rather than an empty cell.
    if row["gpu_id"] is None:
        row = {**row, "gpu_id": f"? {row['gpu_label']}"}
    elif row.get("gpu_variant_assumed"):  # the label does not state the variant
        row = {**row, "gpu_id": f"{row['gpu_id']} (assumed)"}
    return {header: row[column] for column, header in SHOWN_OFFER_COLUMNS.items()}


@app.command()
def sql(
    query: Annotated[str, typer.Argument(help="SQL over the views current_offers, "
                                              "offer_history, gpus, refresh_runs, ...")],
    allow_files: Annotated[bool, typer.Option(
        "--allow-files", help="let the SQL read and write files (COPY, read_csv, ATTACH)",
    )] = False,
    db: DbOption = None,
    format: FormatOption = Format.table,
) -> None:
    """Run read-only SQL against the warehouse: it reads the warehouse and nothing else."""
    from gpuscout.api import sql as run_sql
    from gpuscout.cli.output import render

    render(run_sql(query, db=_db(db), allow_files=allow_files), format)


class ExportFormat(StrEnum):
    parquet = "parquet"
    csv = "csv"


@app.command()
def export(
    views: Annotated[list[str] | None, typer.Argument(
        help="views to export: current_offers, offer_history, gpus, refresh_runs, ...")] = None,
    all_views: Annotated[bool, typer.Option("--all", help="every view")] = False,
    to: Annotated[Path, typer.Option("--to", help="directory for <view>.<format> files",
                                     file_okay=False)] = Path("export"),
    format: Annotated[ExportFormat, typer.Option("--format")] = ExportFormat.parquet,
    db: DbOption = None,
) -> None:
    """Write views as Parquet or CSV files, for pandas, polars, Spark or another DuckDB."""
    from gpuscout.api import export as run_export

    if bool(views) == all_views:
        raise UserInputError("name the views to export, or give --all")
    for path in run_export(None if all_views else views, db=_db(db), to=to,
                           format=format.value):
        typer.echo(str(path))


@app.command()
def providers(
    db: DbOption = None,
    format: FormatOption = Format.table,
    checklist: Annotated[bool, typer.Option(
        "--checklist", help="billing, storage, egress, spot, environment, fabric and "
        "commitments of every provider, each with its source's age (reads no warehouse)",
    )] = False,
) -> None:
    """Every provider at a glance: offers, last success, its last failure, refusal or drift and
    why, the age of its newest price, and the keys it reads (set or not, what each would add).
    Registered providers never refreshed into this warehouse show too. `--checklist`: the
    seed's checklist of facts beyond the price, for every provider."""
    if checklist:
        from gpuscout.api import provider_checklist
        from gpuscout.cli.checklist_view import show_checklist

        show_checklist(provider_checklist(), format)
        return
    from gpuscout.api import provider_health
    from gpuscout.cli.providers_view import show

    show(provider_health(db=_db(db)), format)


runs_app = typer.Typer(
    help="The refresh run log; and your own training runs: add, list, compare.",
    invoke_without_command=True, cls=DeferringGroup)
app.add_typer(runs_app, name="runs")
# Your own runs (faces/cli/runs.py): `add` takes the job options, so all three load when chosen.
defer(runs_app, "add", "gpuscout.cli.runs:add_command",
      "Read training logs and store their runs: measured tokens/s and memory, the job, and\n"
      "what gpuscout predicted for it.")
defer(runs_app, "list", "gpuscout.cli.runs:list_command",
      "Your stored runs: measured against what gpuscout predicted when each was added.")
defer(runs_app, "compare", "gpuscout.cli.runs:compare_command",
      "Your runs, measured against predicted (when added and now), and what your other runs\n"
      "of the same GPU, framework and method correct each one's estimate to.")

LimitOption = Annotated[int, typer.Option("--limit", min=1, max=MAX_ROWS)]


@runs_app.callback()
def runs(
    ctx: typer.Context,
    limit: LimitOption = 20,
    db: DbOption = None,
    format: FormatOption = Format.table,
) -> None:
    """The refresh run log (`gpuscout runs`, or `runs log`); your own training runs with
    `runs add`, `runs list` and `runs compare`."""
    if ctx.invoked_subcommand is None:
        _refresh_log(limit, db, format)


@runs_app.command("log")
def runs_log(
    limit: LimitOption = 20,
    db: DbOption = None,
    format: FormatOption = Format.table,
) -> None:
    """The refresh run log: per provider, status, counts, unknown labels and errors."""
    _refresh_log(limit, db, format)


def _refresh_log(limit: int, db: Path | None, format: Format) -> None:
    from gpuscout.cli.output import render
    from gpuscout.warehouse.connection import connect
    from gpuscout.warehouse.queries import run_named

    with connect(_db(db), read_only=True) as con:
        render(run_named(con, "runs", {"limit": limit}), format, title="refresh runs")


defer(app, "recommend", "gpuscout.cli.recommend:recommend_command",
      "Rank the current offers by the whole cost (or time) of your fine-tuning run, with "
      "reasons.")
app.command("probe")(probe_command)  # PyTorch loads only when it runs (the `probe` extra)


@gpus_app.callback()
def gpus(
    ctx: typer.Context,
    format: FormatOption = Format.table,
) -> None:
    """List the GPU catalog (the source of every row is in pipeline/data/gpus.csv)."""
    if ctx.invoked_subcommand is not None:
        return
    import pyarrow as pa

    from gpuscout.cli.output import render
    from gpuscout.core.catalog import load_catalog

    if format is not Format.table:
        rows = [g.model_dump(mode="json") for g in load_catalog().gpus.values()]
        render(pa.Table.from_pylist(rows), format)
        return
    # VRAM as sold is binary: an "80GB" H100 holds 80 GiB, 85.9 GB of 10⁹ bytes (the unit of
    # every estimate); the table says both.
    rows = [{"canonical_id": g.canonical_id, "vram GiB": g.vram_gb,
             "= GB": round(g.vram_gb * 2**30 / 1e9, 1), "memory_type": g.memory_type,
             "form_factor": g.form_factor, "bf16_dense_tflops": g.bf16_dense_tflops,
             "compute_capability": g.compute_capability}
            for g in load_catalog().gpus.values()]
    render(pa.Table.from_pylist(rows), format,
           title=f"{len(rows)} GPUs (VRAM as sold, in GiB; estimates count GB of 10⁹ bytes)")


@gpus_app.command("resolve")
def gpus_resolve(
    provider: Annotated[str, typer.Argument(help="provider name, e.g. vastai")],
    label: Annotated[str, typer.Argument(help="the provider's GPU label")],
    vram: Annotated[float | None, typer.Option("--vram", help="reported VRAM per GPU, GB",
                                               min=0)] = None,
    format: Annotated[Format, typer.Option("--format")] = Format.table,
) -> None:
    """Show how a provider's GPU label resolves to a catalog GPU (or why it does not); a label
    that fixes the family but not the variant shows the conservative variant it is sized as."""
    from gpuscout.adapters.registry import PROVIDERS
    from gpuscout.core.catalog import FamilyLevel, Resolved, load_catalog

    if provider not in PROVIDERS:
        import difflib

        close = difflib.get_close_matches(provider, list(PROVIDERS), n=3)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise UserInputError(f"unknown provider {provider!r}; {hint}known: "
                             f"{', '.join(PROVIDERS)}")
    res = load_catalog().identify(provider, label, vram)
    payload = {"provider": provider, "label": label, "gpu_id": res.gpu_id,
               "gpu_count": res.gpu_count, "confidence": res.confidence, "layer": res.layer,
               "reason": None if isinstance(res, Resolved) else
               res.note if isinstance(res, FamilyLevel) else res.reason}
    if format is Format.json:
        typer.echo(json.dumps(payload))
    else:
        for k, v in payload.items():
            typer.echo(f"{k:>10}: {'-' if v is None else v}")


def main() -> None:
    """Console entry point: every failure is one line on stderr, never a traceback.

    2: the user's input or the data is wrong (a `GpuscoutError`, a usage error); 1: an
    operational failure nobody anticipated (an OS or database error), named with where it
    happened (`GPUSCOUT_DEBUG=1` shows the traceback); 130: interrupted (Ctrl-C), after any
    write session has discarded its copy.
    """
    try:
        code = app(standalone_mode=False)
    except GpuscoutError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        _interrupted()
    except Exception as exc:
        # Usage errors (unknown option, bad value) are click exceptions; typer vendors click,
        # so they are recognised by shape rather than by an import of a private module.
        format_message = getattr(exc, "format_message", None)
        if callable(format_message) and isinstance(getattr(exc, "exit_code", None), int):
            typer.echo(f"error: {format_message()} (see --help)", err=True)
            sys.exit(exc.exit_code)  # type: ignore[attr-defined]
        if os.environ.get("GPUSCOUT_DEBUG") == "1":
            raise
        typer.echo(f"error: {unexpected(exc)}", err=True)
        sys.exit(1)
    if code == INTERRUPTED:  # typer turns Ctrl-C in a command into this status
        _interrupted()
    sys.exit(code if isinstance(code, int) else 0)


INTERRUPTED = 130


def _interrupted() -> NoReturn:
    typer.echo("interrupted: nothing was written (the warehouse is as it was)", err=True)
    sys.exit(INTERRUPTED)


def unexpected(exc: BaseException) -> str:
    """One line for an error no code path turned into a message: what, and where."""
    import traceback

    text = (str(exc).strip().splitlines() or [""])[0]
    if isinstance(exc, OSError) and exc.strerror:
        text = f"{exc.strerror}" + (f": {exc.filename}" if exc.filename else "")
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    where = f" ({Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    return (f"{type(exc).__name__}: {text}{where}; the warehouse is unchanged "
            "(GPUSCOUT_DEBUG=1 shows the traceback)")
