"""`gpuscout providers`: each provider's health at a glance, in a 100-column terminal.

The table holds the short facts (status, offers, last success, price age, keys set); the long
ones follow it as wrapped lines: each last failure, refusal or drift and why, and what each key
that is not set would add.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gpuscout.cli.output import Format, render_rows

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from gpuscout.pipeline.health import ProviderHealth

COLUMNS = ["provider", "source", "offers", "spot_offers", "last_status", "last_run_at",
           "last_success_at", "stale", "unknown_labels", "last_error", "last_problem_status",
           "last_problem_at", "last_problem_error", "newest_observed_at", "price_age_days",
           "not_fetched", "not_fetched_why", "keys"]


def show(rows: Sequence[ProviderHealth], fmt: Format, console: Console | None = None) -> None:
    if fmt is Format.table:
        from gpuscout.cli.output import console as make_console

        print_table(rows, console or make_console())
        return
    flat = [_flat(r, fmt) for r in rows]
    render_rows(COLUMNS, flat, fmt)


def _flat(row: ProviderHealth, fmt: Format) -> dict[str, Any]:
    out = row.model_dump(include=set(COLUMNS))
    if fmt is Format.csv:  # one cell: "GCP_API_KEY=unset (needed); ..."
        out["keys"] = "; ".join(f"{k.variable}={'set' if k.set else 'unset'}"
                                f"{' (needed)' if k.required else ''}" for k in row.keys)
        out["unknown_labels"] = "; ".join(row.unknown_labels)
    return out


def print_table(rows: Sequence[ProviderHealth], console: Console) -> None:
    from rich.table import Table

    table = Table(title=f"{len(rows)} providers", header_style="bold")
    for name, justify in (("provider", "left"), ("status", "left"), ("offers", "right"),
                          ("last success", "left"), ("price age", "right"), ("keys", "left"),
                          ("problem", "left")):
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for r in rows:
        status = r.last_status + (" (stale)" if r.stale and r.last_status == "ok" else "")
        table.add_row(r.provider, status, f"{r.offers:,}",
                      f"{r.last_success_at:%Y-%m-%d}" if r.last_success_at else "never",
                      "-" if r.price_age_days is None else f"{r.price_age_days:.1f} d",
                      r.keys_summary, r.last_problem_status or "-")
    console.print(table)
    why = [(r.provider, f"{r.not_fetched}: {r.not_fetched_why}") for r in rows
           if r.not_fetched]
    why += [(r.provider, f"{r.last_problem_status} {r.last_problem_at:%Y-%m-%d %H:%M} UTC: "
             f"{r.last_problem_error or '-'}")
            for r in rows if r.last_problem_status and r.last_problem_at]
    if why:
        console.print("[bold]Why: each last failure, refusal, drift or skip; providers not "
                      "fetched[/]")
        console.print(_hanging(why))
    keys = [(r.provider, f"{k.variable} ({'set' if k.set else 'not set'}"
             f"{', needed' if k.required else ''}): {k.adds}") for r in rows for k in r.keys]
    if keys:
        console.print("[bold]Keys the adapters read: set or not, and what each adds[/]")
        console.print(_hanging(keys))


def _hanging(lines: Sequence[tuple[str, str]]) -> Table:
    """Two columns: a provider, and text that wraps under itself."""
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for provider, text in lines:
        grid.add_row(f"  {provider}", Text(text))
    return grid
