"""What the operator sees during and after `gpuscout refresh`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from gpuscout.cli.output import console as make_console
from gpuscout.pipeline.refresh import ProgressHook, RunReport
from gpuscout.warehouse.load import RunRecord, RunStatus

# One style per run status (tests/test_cli.py checks that none is missing).
STYLE: dict[RunStatus, str] = {"ok": "green", "failed": "red", "refused": "yellow",
                               "drift": "magenta", "skipped": "dim", "retired": "dim",
                               "no_public_prices": "dim"}


@contextmanager
def progress_display(*, enabled: bool) -> Iterator[ProgressHook | None]:
    if not enabled:
        yield None
        return
    console = make_console(stderr=True)
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        task = progress.add_task("refreshing", total=None)

        def hook(provider: str, record: RunRecord | None) -> None:
            if record is None:
                progress.update(task, description=f"refreshing {provider}")
            else:
                style = STYLE[record.status]
                console.print(f"[{style}]{record.status:>7}[/] {provider}: "
                              f"{record.offers_loaded} offers "
                              f"({record.duration_s:.2f} s)")

        yield hook


def report_table(report: RunReport) -> None:
    table = Table(title=f"refresh {report.run_id} ({report.mode}): {report.status}",
                  header_style="bold")
    for col in ("provider", "status", "offers", "new", "changed", "unchanged", "closed",
                "quarantined", "unknown labels", "error"):
        table.add_column(col, overflow="fold")
    for r in report.providers:
        table.add_row(r.provider, f"[{STYLE[r.status]}]{r.status}[/]",
                      str(r.offers_loaded), str(r.new_offers), str(r.changed_offers),
                      str(r.unchanged_offers), str(r.closed_offers), str(r.quarantined),
                      str(len(r.unknown_labels)), r.error or "-")
    out = make_console()
    out.print(table)
    if report.fx is not None and report.fx.origin != "given":
        fx = report.fx
        line = f"USD rates: {fx.origin}, ECB reference date {fx.as_of or '-'}"
        out.print(line + (f" ({fx.error})" if fx.error else ""))
    if any(r.unknown_labels for r in report.providers):
        listed = "; ".join(f"{r.provider}: {', '.join(r.unknown_labels)}"
                           for r in report.providers if r.unknown_labels)
        out.print(f"unknown GPU labels (kept with gpu_id NULL): {listed}")
