"""`--db`, before the command (`gpuscout --db PATH offers`) or after it (`offers --db PATH`).

The root callback records the one given before the command; a command's own `--db` wins.
Neither given: None, and the API falls back to $GPUSCOUT_DB, else a per-user data directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

DbOption = Annotated[Path | None, typer.Option(
    "--db", help="warehouse file [default: $GPUSCOUT_DB, else a per-user data dir]",
    dir_okay=False)]

_before_command: list[Path | None] = [None]


def remember(db: Path | None) -> None:
    """Called by the root callback on every invocation (so nothing leaks between runs)."""
    _before_command[0] = db


def warehouse(db: Path | None) -> Path | None:
    """The --db given (after the command, else before it); `:memory:` is refused: every
    command is its own process, so an in-memory warehouse would vanish as it ends."""
    chosen = db if db is not None else _before_command[0]
    if chosen is not None and str(chosen) == ":memory:":
        from gpuscout.core.errors import UserInputError

        raise UserInputError("--db :memory: would vanish when the command ends; give a file "
                             "path for the warehouse")
    return chosen
