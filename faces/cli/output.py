"""Rendering Arrow results as a rich table, JSON or CSV for the CLI."""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: `gpuscout --help` should not pay for them
    import pyarrow as pa
    from rich.console import Console


class Format(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


def console(*, stderr: bool = False) -> Console:
    """A console that stays readable when piped: wide instead of rich's 80-column default."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=None if stream.isatty() else 160)


def _plain(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.4f}".rstrip("0").rstrip(".") if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d")
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "-"
    return str(value)


def render(table: pa.Table, fmt: Format, *, title: str | None = None) -> None:
    render_rows(table.column_names, table.to_pylist(), fmt, title=title)


def render_rows(columns: Sequence[str], rows: Sequence[Mapping[str, Any]], fmt: Format, *,
                title: str | None = None) -> None:
    """`render` for rows already in Python: a mapping per row, its keys `columns`."""
    if fmt is Format.json:
        json.dump([{k: _plain(v) for k, v in r.items()} for r in rows], sys.stdout, indent=1,
                  default=str)
        sys.stdout.write("\n")
    elif fmt is Format.csv:
        buf = io.StringIO()
        writer = csv.writer(buf)
        writer.writerow(columns)
        writer.writerows([[_plain(r[c]) for c in columns] for r in rows])
        sys.stdout.write(buf.getvalue())
    else:
        from rich.table import Table

        out = Table(title=title, show_lines=False, header_style="bold")
        for c in columns:
            out.add_column(c, overflow="fold")
        for r in rows:
            out.add_row(*(_cell(r[c]) for c in columns))
        console().print(out)
