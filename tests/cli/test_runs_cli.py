"""`gpuscout runs add|list|compare|log`, and `estimate` with the runs (the README's example)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from gpuscout.cli.app import app

runner = CliRunner()
LMY = Path(__file__).parent.parent / "fixtures" / "runs" / "hf_trainer" / "lmy-matrix"
JOB = ["--model", "meta-llama/Meta-Llama-3-8B-Instruct", "--method", "lora", "--framework",
       "llama-factory", "--grad-accum", "8", "--seq-len", "2048", "--lora-rank", "8",
       "--lora-targets", "all-linear"]


def _cli(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_add_then_estimate_the_same_job_and_another_gpu(tmp_path: Path) -> None:
    db = str(tmp_path / "w.duckdb")
    added = json.loads(_cli("runs", "add", str(LMY / "trainer_state.json"), *JOB, "--gpu",
                            "rtx-4090-24gb", "--db", db, "--format", "json"))["added"]
    (run,) = added
    measured, mean = run["tokens_per_s"], run["mean_seq_len"]
    assert run["field_sources"]["batch_size"] == "log" and mean == 397
    est = json.loads(_cli("estimate", *JOB, "--mean-seq-len", str(mean), "--gpu",
                          "rtx-4090-24gb", "--tokens", "1e8", "--db", db, "--format", "json"))
    assert abs(est["tokens_per_s"] / measured - 1) < 0.05
    assert est["correction"]["text"].startswith("corrected by 1 of your runs on "
                                                "rtx-4090-24gb / llama-factory / lora")
    assert est["range"]["tokens_per_s"]["low"] < measured < est["range"]["tokens_per_s"]["high"]
    assert est["range"]["hours"]["low"] < est["hours"] < est["range"]["hours"]["high"]
    table = _cli("estimate", *JOB, "--mean-seq-len", str(mean), "--gpu", "rtx-4090-24gb",
                 "--db", db)
    assert "corrected by 1 of your runs" in table and "range " in table
    other = json.loads(_cli("estimate", *JOB, "--mean-seq-len", str(mean), "--gpu",
                            "a100-sxm-80gb", "--db", db, "--format", "json"))
    assert other["correction"] is None and other["range"]["runs"] == 0
    off = json.loads(_cli("estimate", *JOB, "--mean-seq-len", str(mean), "--gpu",
                          "rtx-4090-24gb", "--db", db, "--no-correction", "--format", "json"))
    assert off["correction"] is None
    assert off["tokens_per_s"] == est["correction"]["model_tokens_per_s"]


def test_list_compare_and_the_refresh_log_stay_reachable(tmp_path: Path) -> None:
    db = str(tmp_path / "w.duckdb")
    _cli("runs", "add", str(LMY), *JOB, "--gpu", "rtx-4090-24gb", "--db", db)
    again = _cli("runs", "add", str(LMY / "all_results.json"), *JOB, "--gpu",
                 "rtx-4090-24gb", "--db", db)
    assert "is stored already; kept as it was" in again
    listed = json.loads(_cli("runs", "list", "--db", db, "--format", "json"))
    assert len(listed) == 1 and listed[0]["source_format"] == "hf-trainer"
    compared = json.loads(_cli("runs", "compare", "--db", db, "--format", "json"))
    assert compared[0]["others_in_stack"] == 0
    assert "measured against predicted" in _cli("runs", "compare", "--db", db)
    # `gpuscout runs` alone, and `runs log`, are still the refresh run log
    assert json.loads(_cli("runs", "--db", db, "--format", "json")) == []
    assert json.loads(_cli("runs", "log", "--db", db, "--format", "json", "--limit", "5")) == []


def test_a_file_that_is_no_log_is_one_line(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a log\n")
    proc = subprocess.run([sys.executable, "-m", "gpuscout", "runs", "add", str(notes),
                           "--model", "llama-3.1-8b", "--gpu", "h100", "--db",
                           str(tmp_path / "w.duckdb")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and "not a training log gpuscout reads" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
