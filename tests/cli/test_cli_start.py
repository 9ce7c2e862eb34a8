"""What the CLI loads to start, and that the lighter paths print what the heavy ones did.

Start-up cost is measured by `bench/cli_start.py`, never here; these tests pin its causes: the
modules a command imports (read from `sys.modules` in a fresh interpreter), the placeholders of
the commands built from `Job`, and the `offers` rows read without Arrow.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import gpuscout
from gpuscout.cli.app import app
from gpuscout.cli.deferred import Placeholder

runner = CliRunner()

# Modules none of `gpuscout --help`, `import gpuscout.cli.app` or `offers` needs.
HEAVY = ("pyarrow", "prefect", "gpuscout.sizing", "gpuscout.pipeline.recommend", "gpuscout.api",
         "gpuscout.report", "gpuscout.adapters", "plotly", "httpx")
# ... and those `gpuscout --help` and the import need neither (typer imports pydantic itself to
# coerce a command's option values, so `offers` does load it).
NOT_AT_START = (*HEAVY, "duckdb", "pydantic", "gpuscout.warehouse", "gpuscout.core.models")


def _loaded(code: str) -> list[str]:
    """The modules of HEAVY or NOT_AT_START that `code` leaves in a fresh interpreter."""
    probe = (f"{code}\nimport json, sys\n"
             f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
             f"{{'pyarrow', 'prefect', 'plotly', 'httpx', 'duckdb', 'pydantic'}} "
             f"or m.startswith('gpuscout.'))))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _present(loaded: list[str], banned: tuple[str, ...]) -> list[str]:
    return [m for m in loaded if any(m == b or m.startswith(b + ".") for b in banned)]


def _run_main(*argv: str) -> str:
    # main() ends with sys.exit; stdout goes to the void so the probe's line is the last one.
    return ("import io, contextlib, sys\n"
            f"sys.argv = ['gpuscout', *{list(argv)!r}]\n"
            "from gpuscout.cli.app import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n"
            "        main()\n"
            "    except SystemExit as exc:\n"
            "        assert exc.code in (0, None), exc.code\n")


def test_importing_the_cli_loads_no_heavy_module() -> None:
    assert _present(_loaded("import gpuscout.cli.app"), NOT_AT_START) == []


def test_help_loads_no_heavy_module() -> None:
    assert _present(_loaded(_run_main("--help")), NOT_AT_START) == []


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Bundled snapshots of providers with unknown GPU labels and with spot offers."""
    path = tmp_path_factory.mktemp("start") / "w.duckdb"
    gpuscout.refresh(db=path, providers=["civo", "coreweave", "runpod", "vastai"], offline=True)
    return path


def test_offers_loads_neither_the_api_nor_pyarrow_nor_the_job_model(db: Path) -> None:
    loaded = _loaded(_run_main("offers", "--limit", "5", "--db", str(db)))
    assert _present(loaded, HEAVY) == []
    assert "gpuscout.warehouse.queries" in loaded  # the probe did see the query run


def test_the_deferred_commands_are_listed_as_their_docstrings_summarise_them() -> None:
    group = _root()
    deferred = {name: c for name, c in group.commands.items() if isinstance(c, Placeholder)}
    assert set(deferred) == {"estimate", "recommend", "report"}
    for name, placeholder in deferred.items():
        real = placeholder.load()
        assert real.help is not None and placeholder.help is not None
        assert placeholder.help == inspect.cleandoc(real.help).split("\n\n")[0], name
        assert real.name == name and len(real.params) > 10  # the job options are there


def _root() -> Any:
    import typer.main

    return typer.main.get_command(app)


@pytest.mark.parametrize("command", ["estimate", "recommend", "report"])
def test_a_deferred_command_shows_its_own_options(command: str) -> None:
    result = runner.invoke(app, [command, "--help"])
    assert result.exit_code == 0, result.output
    assert "--model" in result.output and "--batch-size" in result.output


def test_a_deferred_command_runs_with_its_job_options() -> None:
    result = runner.invoke(app, ["estimate", "--params", "1e9", "--method", "lora",
                                 "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["method"] == "lora"


def test_a_typo_still_suggests_a_deferred_command() -> None:
    result = runner.invoke(app, ["recomend"])
    assert result.exit_code != 0
    assert "Did you mean 'recommend'" in result.output


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


@pytest.mark.parametrize("args", [
    [], ["--limit", "3"], ["--gpu", "h100", "--sort", "price"], ["--spot"],
    ["--on-demand", "--max-price", "2", "--sort", "vram-hour"], ["-p", "civo", "--region", "eu"],
    ["--min-vram", "40", "--limit", "500"], ["--gpu", "b200"],
])
def test_offers_prints_the_rows_of_the_api(db: Path, args: list[str]) -> None:
    """The CLI reads the `offers` query without Arrow; the API reads it into Arrow."""
    result = runner.invoke(app, ["offers", *args, "--db", str(db), "--format", "json"])
    assert result.exit_code == 0, result.output
    options = {"--gpu": "gpu", "--sort": "sort", "--max-price": "max_price",
               "--region": "region", "--min-vram": "min_vram", "--limit": "limit"}
    kwargs: dict[str, Any] = {options[a]: v for a, v in zip(args, args[1:], strict=False)
                              if a in options}
    for number in ("max_price", "min_vram"):
        if number in kwargs:
            kwargs[number] = float(kwargs[number])
    if "limit" in kwargs:
        kwargs["limit"] = int(kwargs["limit"])
    if "-p" in args:
        kwargs["providers"] = [args[args.index("-p") + 1]]
    if "--spot" in args or "--on-demand" in args:
        kwargs["spot"] = "--spot" in args
    expected = [{k: _plain(v) for k, v in row.items()}
                for row in gpuscout.offers_table(db=db, **kwargs).to_pylist()]
    assert json.loads(result.stdout) == expected


def test_offers_table_labels_unknown_gpus_and_assumed_variants(db: Path) -> None:
    result = runner.invoke(app, ["offers", "-p", "civo", "--limit", "500", "--db", str(db)])
    assert result.exit_code == 0, result.output
    # Civo's "NVIDIA A100 80GB" states no form factor: sized as the PCIe card, marked
    assert "a100-pcie-80gb (assumed)" in result.output
    from gpuscout.cli.app import SHOWN_OFFER_COLUMNS, _shown_offer

    row = {c: None for c in SHOWN_OFFER_COLUMNS} | {"gpu_label": "Mystery GPU"}
    assert _shown_offer(row)["gpu"] == "? Mystery GPU"  # an unknown GPU: its label, marked
