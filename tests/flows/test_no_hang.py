"""The nightly flow never waits for ever: repeated Dask runs finish, and a supervised run
(`python -m gpuscout.flows.refresh`) ends within seconds of SIGTERM or of its deadline, with
its whole process group (the temporary Prefect server included)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from processes import HAS_PROC, children_groups, kill_group, wait_gone

from gpuscout.flows.supervisor import DEADLINE_EXIT, SIGNAL_EXIT, run_supervised

pytest.importorskip("prefect_dask")

REPEAT = Path(__file__).with_name("repeat_dask.py")
RUNS = 3
# Generous for a loaded two-core machine; a hang is unbounded, so any bound tells them apart.
REPEAT_TIMEOUT_S = 600

# A child that ignores SIGTERM and starts a grandchild that does too: what a flow stuck in a
# library call, with its Prefect server beside it, looks like to a signal.
STUBBORN = ("import signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
            "subprocess.Popen([sys.executable, '-c', 'import signal, time; "
            "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)']);"
            "print('up', flush=True); time.sleep(600)")


def test_the_dask_flow_runs_repeatedly_without_a_hang(tmp_path: Path) -> None:
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect")}
    proc = subprocess.Popen([sys.executable, str(REPEAT), str(tmp_path / "w.duckdb"), str(RUNS)],
                            env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=REPEAT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        out, _ = proc.communicate()
        pytest.fail(f"the Dask flow hung (killed after {REPEAT_TIMEOUT_S} s):\n{out[-4000:]}")
    finally:
        kill_group(proc.pid)
    assert proc.returncode == 0, out[-4000:]
    assert [line.split()[2] for line in out.splitlines() if line.startswith("RUN ")] == (
        ["ok"] * RUNS)


@pytest.mark.skipif(not HAS_PROC, reason="reads /proc")
def test_sigterm_ends_a_stuck_run_and_its_group_within_seconds(tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    script = tmp_path / "supervise.py"
    script.write_text(
        "import os, sys\n"
        "from gpuscout.flows.supervisor import run_supervised\n"
        f"open({str(marker)!r}, 'w').write(str(os.getpid()))\n"
        f"sys.exit(run_supervised([sys.executable, '-c', {STUBBORN!r}], deadline_s=None, "
        "grace_s=2))\n")
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None and parent.stdout.readline().strip() == "up"
        child_groups = children_groups(parent.pid)
        started = time.monotonic()
        parent.send_signal(signal.SIGTERM)
        assert parent.wait(20) == SIGNAL_EXIT + signal.SIGTERM
        assert time.monotonic() - started < 15
        for pgid in child_groups:
            wait_gone(pgid, timeout_s=5)
    finally:
        if parent.poll() is None:
            parent.kill()


def test_a_run_past_its_deadline_is_stopped() -> None:
    started = time.monotonic()
    code = run_supervised([sys.executable, "-c", STUBBORN], deadline_s=1.0, grace_s=1.0)
    assert code == DEADLINE_EXIT
    assert time.monotonic() - started < 15


def test_the_childs_own_status_comes_back() -> None:
    assert run_supervised([sys.executable, "-c", "raise SystemExit(3)"], deadline_s=60) == 3


def test_a_stuck_collect_is_named_and_the_others_load(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuscout.flows import refresh as flow_mod
    from gpuscout.flows.refresh import RefreshFailed, nightly_refresh
    from gpuscout.warehouse.connection import connect

    real_collect = flow_mod.collect

    def slow(name: str, **kwargs: object) -> object:
        if name == "lambda":
            time.sleep(8)  # past the deadline below; the thread ends on its own
        return real_collect(name, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(flow_mod, "collect", slow)
    monkeypatch.setattr(flow_mod, "COLLECT_DEADLINE_S", 2.0)
    db = tmp_path / "w.duckdb"
    with pytest.raises(RefreshFailed, match="lambda did not finish collecting by the deadline"):
        nightly_refresh(providers=["lambda", "runpod"], db=str(db), archive_root=None,
                        offline=True, report_root=None)
    with connect(db, read_only=True) as con:
        runs = dict(con.execute("SELECT provider, status FROM refresh_runs").fetchall())
        (error,) = con.execute("SELECT error FROM refresh_runs WHERE provider = 'lambda'"
                               ).fetchone() or (None,)
    assert runs == {"lambda": "failed", "runpod": "ok"}
    assert "did not finish by the deadline" in error


@pytest.mark.skipif(not HAS_PROC, reason="reads /proc")
def test_a_child_ends_when_its_supervisor_is_killed_outright(tmp_path: Path) -> None:
    child = ("import time; from gpuscout.flows.supervisor import end_with_parent; "
             "end_with_parent(poll_s=0.1); print('up', flush=True); time.sleep(600)")
    script = tmp_path / "supervise.py"
    script.write_text(
        "import sys\n"
        "from gpuscout.flows.supervisor import run_supervised\n"
        f"sys.exit(run_supervised([sys.executable, '-c', {child!r}], deadline_s=None))\n")
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    groups: set[int] = set()
    try:
        assert parent.stdout is not None and parent.stdout.readline().strip() == "up"
        groups = children_groups(parent.pid)
        parent.kill()  # SIGKILL: the supervisor has no say
        parent.wait(10)
        for pgid in groups:
            wait_gone(pgid, timeout_s=10)
    finally:
        for pgid in groups:
            kill_group(pgid)
