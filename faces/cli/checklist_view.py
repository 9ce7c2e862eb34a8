"""`gpuscout providers --checklist`: the provider checklist as plain text for a 100-column
terminal, or as JSON / CSV with every fact's value and age."""

from __future__ import annotations

from collections.abc import Sequence

from gpuscout.cli.output import Format, render_rows
from gpuscout.pipeline.checklist import (
    COLUMNS,
    NO,
    UNKNOWN,
    VARIES,
    YES,
    ChecklistRow,
    age,
)

STALE = "*"
LEGEND = (
    f"{YES} yes  {NO} no  {UNKNOWN} unknown  {VARIES} set per offer or host  {STALE} read over a "
    "year ago  age: of the oldest fact",
    "bill, min: billing increment, minimum charge   stor, $/GB, stop, term: persistent storage,",
    "  USD per GB-month, survives a stop, survives termination   egr$: egress USD per GB",
    "spot, ntc: interruptible capacity, its notice   ssh, dck, jup, root, img: SSH, own Docker "
    "images,",
    "  Jupyter, root access, images with pinned CUDA   fab: multi-node fabric   cmt: commitments",
)


def table_lines(rows: Sequence[ChecklistRow]) -> list[str]:
    """Header, one line per provider and the legend; columns one space apart, each as wide as
    its widest entry, so the table fits 100 columns."""
    header = ["provider", *(c.key for c in COLUMNS), "age"]
    body = [[r.provider, *(c.text + (STALE if c.stale else "") for c in r.cells),
             age(r.age_days) if r.age_days is not None else "-"] for r in rows]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = (cell.rjust(w) for cell, w in zip(cells[1:], widths[1:], strict=True))
        return " ".join([first, *rest]).rstrip()

    return [line(header), *(line(b) for b in body), "", *LEGEND]


def show_checklist(rows: Sequence[ChecklistRow], fmt: Format) -> None:
    if fmt is Format.table:
        print("\n".join(table_lines(rows)))
        return
    if fmt is Format.json:
        render_rows([], [r.model_dump(mode="json") for r in rows], fmt)
        return
    flat = [r.flat() for r in rows]
    render_rows(list(flat[0]) if flat else ["provider"], flat, fmt)
