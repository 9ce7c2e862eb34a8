"""The report command on a small typer app, as `pipeline/cli.py` registers it, and a runner.

A plain module (not conftest.py) so test modules can import it by a name no other test
directory uses.
"""

from __future__ import annotations

from pathlib import Path

import typer
from typer.testing import CliRunner

from gpuscout.cli.report import report_command

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
app.command("report")(report_command)


@app.callback()
def _root() -> None:
    """A group, so `report` stays a subcommand as in `gpuscout report`."""


def run_report(*args: str) -> Path:
    """`gpuscout report ARGS...`; returns the page it wrote, or raises what the command raised."""
    result = CliRunner().invoke(app, ["report", *args])
    if result.exception is not None:
        raise result.exception
    assert result.exit_code == 0, result.output
    assert "report written to" in result.output
    return Path(result.output.rsplit("report written to", 1)[1].strip())
