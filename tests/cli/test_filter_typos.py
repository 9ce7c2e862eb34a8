"""A typo in a filter or a job value is one line and exit status 2, with the closest values,
in every face: the CLI and the API check the same way (warehouse/queries.py's
`check_filter_values`, core/catalog.py's `gpu_filter`, sizing/limits.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import gpuscout
from gpuscout.cli.app import app
from gpuscout.core.catalog import load_catalog
from gpuscout.core.errors import UserInputError
from gpuscout.pipeline.refresh import Source, refresh
from gpuscout.sizing.limits import MAX_BATCH_SIZE, MAX_SEQ_LEN

JOB = ["--model", "meta-llama/Llama-3.1-8B", "--tokens", "1e8"]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("typos") / "w.duckdb"
    assert refresh(None, db=path, source=Source.offline()).status != "failed"
    return path


def _gpuscout(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpuscout", *args], capture_output=True,
                          text=True, timeout=120)


def test_offers_gpu_h1000_exits_2_with_a_suggestion(db: Path) -> None:
    proc = _gpuscout("offers", "--gpu", "h1000", "--db", str(db))
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()  # one line, no traceback
    assert line.startswith("error: --gpu 'h1000' names no GPU in the catalog; did you mean: "
                           "h100")
    with pytest.raises(UserInputError, match="did you mean: h100"):
        gpuscout.offers(db=db, gpu="h1000")


@pytest.mark.parametrize(("text", "becomes"), [
    ("h100", "h100"), ("H100", "h100"), ("a100-sxm", "a100-sxm"),
    ("a100-sxm-80gb", "a100-sxm-80gb"), ("NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"),
])
def test_a_gpu_filter_is_an_id_its_start_or_a_printed_name(text: str, becomes: str) -> None:
    assert load_catalog().gpu_filter(text) == becomes


@pytest.mark.parametrize(("text", "close"), [
    ("h1000", "h100"), ("mi300", "mi300x"), ("a100-sxm-80", "a100-sxm"), ("rtx-409", "rtx-4090"),
])
def test_a_gpu_that_names_nothing_gets_ids_and_family_starts(text: str, close: str) -> None:
    with pytest.raises(UserInputError, match="did you mean: ") as err:
        load_catalog().gpu_filter(text)
    assert close in str(err.value).split("did you mean: ")[1].split(" (")[0].split(", ")


def test_a_gpu_filter_finds_what_it_found_before(db: Path) -> None:
    """h100 matches every H100 variant, as the query's prefix rule always did."""
    found = {o.gpu_id for o in gpuscout.offers(db=db, gpu="h100", limit=500)}
    assert found and all(g.startswith("h100-") for g in found)
    assert len(found) > 1


@pytest.mark.parametrize("command", [
    ["offers"], ["recommend", *JOB], ["report", "--out", "OUT"],
])
def test_a_misspelled_provider_exits_2_with_a_suggestion(db: Path, tmp_path: Path,
                                                         command: list[str]) -> None:
    args = [str(tmp_path) if a == "OUT" else a for a in command]
    proc = _gpuscout(*args, "--provider", "lamda", "--db", str(db))
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert "--provider 'lamda': no such provider in this warehouse; did you mean: lambda" in line
    assert not (tmp_path / "index.html").exists()  # the report was not written


def test_refresh_suggests_the_provider_too(tmp_path: Path) -> None:
    proc = _gpuscout("refresh", "--offline", "--provider", "lamda", "--db",
                     str(tmp_path / "w.duckdb"))
    assert proc.returncode == 2
    assert "unknown provider lamda; did you mean: lambda" in proc.stderr


def test_the_api_refuses_the_same_provider_and_region(db: Path) -> None:
    with pytest.raises(UserInputError, match="did you mean: lambda"):
        gpuscout.offers(db=db, providers=["lamda"])
    with pytest.raises(UserInputError, match="did you mean: lambda"):
        gpuscout.recommend(db=db, model="meta-llama/Llama-3.1-8B", tokens=1e8,
                           providers=["lamda"])
    with pytest.raises(UserInputError, match="did you mean: lambda"):
        gpuscout.refresh(db=db, offline=True, providers=["lamda"])
    with pytest.raises(UserInputError, match="did you mean: europe"):
        gpuscout.recommend(db=db, model="meta-llama/Llama-3.1-8B", tokens=1e8,
                           region="eurpoe")
    # a retired provider is still a provider of this warehouse: no offers, no error
    assert gpuscout.offers(db=db, providers=["cudo"]) == []


@pytest.mark.parametrize(("region", "matches"), [
    ("europe", True), ("us-east", True), ("EUROPE", True), ("eurpoe", False), ("mars", False),
])
def test_a_region_is_checked_against_the_regions_and_geographies_present(
        db: Path, region: str, matches: bool) -> None:
    if matches:
        assert gpuscout.offers(db=db, region=region, limit=5)
        return
    proc = _gpuscout("offers", "--region", region, "--db", str(db))
    assert proc.returncode == 2
    assert f"--region {region!r} matches no region code or geography" in proc.stderr
    assert "geographies: " in proc.stderr


def test_job_values_past_any_sane_limit_are_refused_with_the_limit(db: Path) -> None:
    long = _gpuscout("estimate", "--model", "meta-llama/Llama-3.1-8B", "--seq-len", "10000000")
    assert long.returncode == 2
    assert f"over the limit of {MAX_SEQ_LEN:,} tokens per sequence" in long.stderr
    assert "does not record meta-llama/Llama-3.1-8B's own context length" in long.stderr
    wide = _gpuscout("recommend", *JOB, "--batch-size", "100000", "--db", str(db))
    assert wide.returncode == 2
    assert f"--batch-size 100,000 is over the limit of {MAX_BATCH_SIZE:,}" in wide.stderr
    # a learned position table is the model's own context: GPT-2's 1,024 positions × 8
    with pytest.raises(UserInputError, match="over 8,192 tokens: openai-community/gpt2 has "
                                             "1,024 learned positions"):
        gpuscout.estimate(model="gpt2", seq_len=8193)
    assert gpuscout.estimate(model="gpt2", seq_len=8192).memory.peak_gb_per_gpu > 0
    # a long but real job is still sized
    assert gpuscout.estimate(model="meta-llama/Llama-3.1-8B", seq_len=131072,
                             method="qlora").memory.peak_gb_per_gpu > 0


def test_a_misspelled_organisation_stays_an_error() -> None:
    with pytest.raises(UserInputError, match="did you mean: meta-llama/Llama-3.1-8B"):
        gpuscout.estimate(model="meta-lama/Llama-3.1-8B")
    result = CliRunner().invoke(app, ["estimate", "--model", "meta-lama/Llama-3.1-8B"])
    assert isinstance(result.exception, UserInputError)
