"""`gpuscout recommend` as a person reads it: one line per offer that fits the terminal, every
reason with --explain, the full table with --wide, units said once and words never split."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from gpuscout.cli.app import app
from gpuscout.cli.recommend_view import cited_by_host, fit_phrases, print_recommendation
from gpuscout.pipeline.recommend import Recommendation
from gpuscout.pipeline.refresh import Source, refresh
from gpuscout.sizing.job import Job

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
JOB = ["--model", "meta-llama/Llama-3.1-8B", "--tokens", "1e8"]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("view") / "w.duckdb"
    assert refresh(None, db=path, source=Source.offline()).status != "failed"
    return path


def _recommend(db: Path, **kw: object) -> Recommendation:
    import gpuscout

    return gpuscout.recommend(db=db, **{"model": "meta-llama/Llama-3.1-8B", "tokens": 1e8,
                                        "limit": 3, **kw})


def _render(rec: Recommendation, width: int, **kw: object) -> list[str]:
    buf = io.StringIO()
    out = Console(file=buf, width=width, force_terminal=True, color_system=None)
    print_recommendation(rec, out=out, **kw)  # type: ignore[arg-type]
    return buf.getvalue().splitlines()


def _words(rec: Recommendation) -> set[str]:
    """Every word the answer may print, as its sources spell it: a word printed that is not
    one of them was cut or glued by the layout."""
    text = " ".join([*(x for r in rec.ranked for x in r.reasons), *rec.warnings,
                     *rec.price_notes, *rec.uncertainty_notes])
    return set(text.split())


def test_limit_3_in_100_columns_is_one_line_per_offer_under_40_lines(db: Path) -> None:
    rec = _recommend(db)
    lines = _render(rec, 100, explain=False)
    assert len(lines) < 40, "\n".join(lines)
    assert max(len(line) for line in lines) <= 100
    rows = [line for line in lines if re.match(r"\s*\d+  ", line)]
    assert [int(r.split()[0]) for r in rows] == [1, 2, 3]  # one line per offer, in rank order
    for row, offer in zip(rows, rec.ranked, strict=True):
        assert offer.provider in row and offer.gpu_id in row
        assert f"{offer.price_usd_per_gpu_hour:,.2f}" in row
        assert f"{offer.total_usd:,.2f}" in row and f"{offer.expected_hours:,.2f}" in row
        # the short reason is the offer's own fit figure, word for word
        need = re.search(r"needs [\d.]+ of [\d.]+ GB", " ".join(offer.reasons))
        assert need is not None and need.group(0) in row
    # the units are said once, and the rule of the global batch
    text = "\n".join(lines)
    assert text.count("units:") == 1 and "$/GPU-h per GPU-hour" in text
    assert "global batch = micro-batch × accumulation × data-parallel GPUs" in text
    # the set-aside line, the replayed-capture note and the range are all still there
    assert "set aside" in text and "replayed captures" in text
    high = rec.ranked[0].range
    assert high is not None and f"–{high.total_usd.high:,.2f}" in rows[0]


def test_explain_wraps_every_reason_at_words_and_keeps_them_all(db: Path) -> None:
    rec = _recommend(db)
    lines = _render(rec, 100, explain=True)
    # a longer line is one word alone (a source's URL), printed whole rather than cropped
    assert all(len(line) <= 100 or len(line.replace(" - ", " ").split()) == 1
               for line in lines)
    text = " ".join(lines)
    known = _words(rec)
    # every reason of every offer is printed, whole
    for offer in rec.ranked:
        for reason in offer.reasons:
            assert " ".join(reason.split()) in " ".join(text.split()), reason
    # no word is split by the wrapping: each word printed inside the reasons block is a word
    # of some reason ("checkpoin t" would print two words that are neither)
    block, inside = [], False
    for line in lines:  # a reason's first line, and the lines it wraps onto
        inside = line.startswith("   - ") or (inside and line.startswith("     "))
        if inside:
            block.append(line)
    assert len(block) >= sum(len(r.reasons) for r in rec.ranked)
    for word in " ".join(block).replace(" - ", " ").split():
        assert word in known or word == "-", word
    assert "storage unknown (not counted)" in text  # not "0.00" where the reasons say unknown


def test_wide_keeps_todays_table_with_labelled_prices(db: Path) -> None:
    rec = _recommend(db)
    text = "\n".join(_render(rec, 100, explain=False, wide=True))
    assert "/GPU-h" in text and "/machine-h" in text and "price age" in text
    # the reasons column wraps at spaces: every word of it is a word of a reason ("checkpoin"
    # and "t" are neither), here "checkpoints", which the 9-column "why" used to split;
    # a source's URL is cut to its host there, and printed whole under --explain
    known = _words(rec) | {w for r in rec.ranked for x in r.reasons
                           for w in cited_by_host(x).split()}
    why = [line.rsplit("│", 2)[-2].strip() for line in text.splitlines()
           if line.startswith("│") and line.count("│") == 11]
    assert any("checkpoints" in w for w in why)
    assert "https://" not in text
    for word in " ".join(why).split():
        assert word in known, word


def test_a_two_machine_run_prices_its_order_per_hour_labelled(db: Path) -> None:
    """Voltage Park's 2 × 8 H100: $2.49 per GPU-hour is $19.92 per machine-hour and $39.84
    per hour for the order of two machines (2.49 × 8 × 2), each said as such."""
    rec = _recommend(db, model="meta-llama/Llama-3.1-70B", method="full",
                     providers=["voltagepark"])
    top = rec.ranked[0]
    assert (top.nodes, top.gpus_per_node) == (2, 8)
    assert top.price_usd_per_order_hour == pytest.approx(top.price_usd_per_gpu_hour * 16,
                                                         abs=0.01)
    text = "\n".join(_render(rec, 100, explain=True))
    assert (f"#1 {top.price_usd_per_order_hour:,.2f} for the order of 2 machines "
            f"({top.price_usd_per_machine_hour:,.2f} per machine)") in " ".join(text.split())
    assert "h100-sxm-80gb ×8 ×2" in text


def test_the_batch_line_names_the_jobs_own_batch(db: Path) -> None:
    import gpuscout

    job = Job(model="meta-llama/Llama-3.1-8B", batch_size=2, grad_accum=4, seq_len=1024)
    rec = gpuscout.recommend(job, db=db, tokens=1e8, limit=3)
    text = " ".join(" ".join(_render(rec, 100, explain=False, job=job)).split())
    dp = [r.gpus_per_node * r.nodes for r in rec.ranked]
    assert "micro-batch 2 × 1,024 tokens per GPU, accumulation 4" in text
    assert "data-parallel GPUs: " + ", ".join(f"#{i} {n}" for i, n in enumerate(dp, 1)) in text


def test_fit_phrases_takes_whole_phrases_and_never_splits_a_word() -> None:
    phrases = ["needs 21.2 of 81.6 GB", "GPU variant assumed", "DDP"]
    assert fit_phrases(phrases, 100) == "needs 21.2 of 81.6 GB, GPU variant assumed, DDP"
    assert fit_phrases(phrases, 30) == "needs 21.2 of 81.6 GB"
    assert fit_phrases(phrases, 12) == "needs 21.2…"
    assert fit_phrases(phrases, 4) == ""
    assert fit_phrases([], 40) == ""


def test_piped_output_is_160_columns_wide_at_most(db: Path) -> None:
    result = CliRunner().invoke(app, ["recommend", *JOB, "--limit", "10", "--db", str(db)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 160
    assert sum(bool(re.match(r"\s*\d+  ", line)) for line in lines) == 10


def _in_terminal(args: list[str], columns: int) -> str:
    """The command in a pseudo-terminal `columns` wide, as a person's shell runs it."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the command, with the terminal's own size and no COLUMNS
        for name in ("COLUMNS", "LINES"):
            os.environ.pop(name, None)
        os.execv(sys.executable, [sys.executable, "-m", "gpuscout", *args])
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    out, deadline = b"", time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 5)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, out.decode(errors="replace")
    return ANSI.sub("", out.decode()).replace("\r\n", "\n")


def test_in_a_100_column_terminal(db: Path) -> None:
    text = _in_terminal(["recommend", *JOB, "--limit", "3", "--db", str(db)], 100)
    lines = text.rstrip("\n").split("\n")
    assert len(lines) < 40, text
    assert max(len(line) for line in lines) <= 100, text
    assert sum(bool(re.match(r"\s*\d+  ", line)) for line in lines) == 3


def test_the_subprocess_and_the_console_agree(db: Path) -> None:
    """The same answer through a pipe (160 columns): the compact header and three rows."""
    proc = subprocess.run([sys.executable, "-m", "gpuscout", "recommend", *JOB, "--limit", "3",
                           "--db", str(db)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"#\s+provider\s+GPU ×n ×machines\s+term\s+\$/GPU-h\s+hours\s+total \$"
                     r"\s+why", proc.stdout)
