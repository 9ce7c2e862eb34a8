"""Commands that typer builds only once they are chosen, to run or to show their own help.

Typer turns every registered command into a click command, reading all its options, each time
the CLI starts. `estimate`, `recommend` and `report` take their job options from `Job`'s fields
(`job_options.py`), so building them imports the job model and the sizing modules behind it:
a cost that `gpuscout offers` and `gpuscout --help` should not pay. `defer()` registers such a
command as a placeholder that carries its name and summary (all the root's help shows of a
command) and `DeferringGroup`, the root group, swaps in the real command when it is resolved.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:  # the click that typer vendors and its own classes derive from
    from typer._click import Command, Context


class Placeholder(TyperCommand):
    """A deferred command as `gpuscout --help` lists it; `load()` builds the real one."""

    target: ClassVar[str] = ""  # "module:function", set per command by `defer()`

    def load(self) -> TyperCommand:
        module, _, name = self.target.partition(":")
        function: Callable[..., Any] = getattr(importlib.import_module(module), name)
        holder = typer.Typer(add_completion=False, rich_markup_mode=self.rich_markup_mode)
        holder.command(self.name)(function)
        command = typer.main.get_command(holder)
        assert isinstance(command, TyperCommand)
        return command


def _placeholder() -> None:
    """Never called: the group resolves a placeholder to its real command first."""
    raise AssertionError("a deferred command ran as its placeholder")


def defer(app: typer.Typer, name: str, target: str, summary: str) -> None:
    """Register `target` ("module:function", a typer command) on `app` as `name`, built when
    chosen. `summary` is the first paragraph of its docstring, which the root's help lists."""
    cls = type(f"Deferred_{name}", (Placeholder,), {"target": target})
    app.command(name, help=summary, cls=cls)(_placeholder)


class DeferringGroup(TyperGroup):
    """The root group: a placeholder it resolves becomes the command it stands for."""

    def resolve_command(self, ctx: Context,
                        args: list[str]) -> tuple[str | None, Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if isinstance(command, Placeholder):
            command = command.load()
        return name, command, rest
