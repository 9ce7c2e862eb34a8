"""`gpuscout probe`: time real fine-tuning steps on this machine's GPU, beside gpuscout's estimate.

Register with `app.command("probe")(probe_command)`. Only typer loads with the CLI: PyTorch
(the `probe` extra) and the probe's modules load when the command runs.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gpuscout.core.errors import UserInputError

if TYPE_CHECKING:  # the probe's modules load when the command runs
    from gpuscout.probe.grid import Grid

INSTALL_HINT = ("gpuscout probe needs PyTorch, transformers and peft: "
                "pip install 'gpuscout[probe]'")


def probe_command(
    grid: Annotated[str, typer.Option(
        "--grid", help="standard: 3 models x full/LoRA/QLoRA x 3 batch shapes x checkpointing "
                       "off/on (about 5 minutes on an H200); quick: Qwen2.5-0.5B, one shape; "
                       "tiny: a 2-layer model that checks the install, on the CPU too")] = "quick",
    model: Annotated[list[str] | None, typer.Option(
        "--model", help="only this model of the grid (repeatable)")] = None,
    method: Annotated[list[str] | None, typer.Option(
        "--method", help="only this method: full, lora or qlora (repeatable)")] = None,
    budget: Annotated[float | None, typer.Option(
        "--budget", help="seconds for the whole grid (points that would not fit are skipped)",
        min=1)] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="write the rows here, in the columns of the sizing measurements file",
        dir_okay=False)] = None,
    json_out: Annotated[Path | None, typer.Option(
        "--json", help="write every point (skipped and failed ones too) and the machine here",
        dir_okay=False)] = None,
    device: Annotated[str | None, typer.Option(
        "--device", help="torch device [default: cuda when there is one]")] = None,
    compare: Annotated[bool, typer.Option(
        "--compare/--no-compare", help="set each row beside gpuscout's estimate")] = True,
) -> None:
    """Time real fine-tuning steps on this machine's GPU and set them beside gpuscout's estimate.

    Random weights from config.json files (nothing is downloaded), packed fixed-length batches.
    """
    if importlib.util.find_spec("torch") is None:
        raise UserInputError(INSTALL_HINT)
    from dataclasses import replace

    from gpuscout.probe.grid import GRIDS

    chosen = GRIDS.get(grid)
    if chosen is None:
        raise UserInputError(f"unknown grid {grid!r}: choose {', '.join(GRIDS)}")
    bad = sorted(set(method or []) - set(chosen.methods))
    if bad:
        raise UserInputError(f"unknown method {', '.join(bad)}: choose full, lora or qlora")
    chosen = chosen.only(model, method)
    if not chosen.archs:
        names = ", ".join(a.model_id for a in GRIDS[grid].archs)
        raise UserInputError(f"no model of grid {grid!r} is called {', '.join(model or [])}: "
                             f"choose {names}")
    if budget is not None:
        chosen = replace(chosen, budget_s=budget)
    _run(chosen, device, out, json_out, compare)


def _run(grid: Grid, device: str | None, out: Path | None, json_out: Path | None,
         compare: bool) -> None:
    import torch  # pyright: ignore[reportMissingImports]

    from gpuscout.probe.run import probe_to_files

    if device is None and not torch.cuda.is_available() and grid.name != "tiny":
        raise UserInputError("no CUDA GPU here: the probe measures a GPU (--grid tiny checks "
                             "the install on the CPU)")
    _, made = probe_to_files(grid, csv_path=out, json_path=json_out, device=device,
                             echo=typer.echo)
    if out is not None:
        typer.echo(f"{len(made)} rows -> {out}")
    if compare and made:
        from gpuscout.probe.compare import compare_rows, markdown

        typer.echo(markdown(compare_rows(made)))
