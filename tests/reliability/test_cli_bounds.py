"""Nonsense on the command line is one line and exit 2, never a traceback or a silent
guess: values past any sane bound, flags that exclude each other, names that do not exist."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile import cli, one_line

import gpuscout
from gpuscout.core.errors import UserInputError

JOB = ["--model", "meta-llama/Llama-3.1-8B", "--method", "qlora"]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bounds") / "w.duckdb"
    gpuscout.refresh(db=path, offline=True, providers=["lambda", "runpod"])
    return path


@pytest.mark.parametrize(("args", "says"), [
    (["offers", "--limit", "99999999999999999999999"], "less than or equal to 1000000"),
    (["offers", "--spot", "--on-demand"], "exclude each other"),
    (["runs", "--limit", "0"], "--limit"),
    (["recommend", *JOB, "--tokens", "nan"], "finite number"),
    (["recommend", *JOB, "--tokens", "inf"], "finite number"),
    (["recommend", *JOB, "--tokens", "1e30"], "between 1 and 1e+15"),
    (["recommend", *JOB, "--dataset-tokens", "1e6", "--epochs", "0"], "above 0"),
    (["recommend", *JOB, "--tokens", "1e6", "--epochs", "2"], "--epochs multiplies"),
    (["estimate", *JOB, "--gpu", "l4", "--tokens", "nan"], "between 1 and"),
    (["gpus", "resolve", "nosuch", "H100"], "unknown provider 'nosuch'"),
    (["estimate", "--params", "1e308", "--method", "lora"], "over the limit"),
    (["estimate", "--params", "nan", "--method", "lora"], "--params"),
    (["estimate", "--config", "/dev/zero", "--method", "lora"], "not a regular file"),
    (["report", "--out", "/proc/nope"], "cannot write the report"),
])
def test_nonsense_is_one_line_and_exit_2(db: Path, args: list[str], says: str,
                                         monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(monkeypatch, capsys, "--db", str(db), *args)
    assert code == 2, err
    assert says in one_line(err)


def test_gpus_resolve_suggests_a_close_provider(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(monkeypatch, capsys, "gpus", "resolve", "lamda", "H100")
    assert code == 2 and "did you mean lambda" in one_line(err)


def test_the_api_bounds_the_same_values(db: Path) -> None:
    with pytest.raises(UserInputError, match="limit must be between"):
        gpuscout.offers(db=db, limit=10**30)
    with pytest.raises(UserInputError, match="finite number"):
        gpuscout.recommend(db=db, model="meta-llama/Llama-3.1-8B", method="qlora",
                           tokens=float("nan"))


def test_an_unexpected_failure_is_one_line_and_exit_1(db: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    import gpuscout.cli.output as output

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError(5, "Input/output error", "/dev/stdout")

    monkeypatch.setattr(output, "render_rows", broken)
    code, _, err = cli(monkeypatch, capsys, "--db", str(db), "offers")
    assert code == 1
    line = one_line(err)
    assert "OSError: Input/output error: /dev/stdout" in line and "GPUSCOUT_DEBUG=1" in line


def test_a_binary_config_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.json"
    config.write_bytes(bytes(range(256)) * 8)
    code, _, err = cli(monkeypatch, capsys, "estimate", "--config", str(config))
    assert code == 2 and "cannot read" in one_line(err)
