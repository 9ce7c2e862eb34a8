"""Crash safety: a refresh killed (SIGKILL) at random points of its load, 20 times.

Each trial runs `crash_refresh.py` in a subprocess, alternating night A (the bundled snapshots)
and night B (prices up 10 %, one offer gone per provider), a day later each time, waits until it
opens its write session, sleeps a random (seeded) part of the load's duration and kills it.
After every trial the warehouse must open, hold every migration, hold for each provider either
its state before the trial or the state the trial was loading (compared with references
computed once), and hold no half-written rows; the writer lock and the copy a dead writer left
are no obstacle to the next refresh. The killed sessions seal their closed versions into history
segments (`crash_refresh.py`), so kills also land while a segment is written and the file
compacted: every segment a published file lists must be on disk.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from reliability_harness import (
    CRASH_PROVIDERS,
    NIGHT,
    SnapshotServer,
    copy_db,
    night_b_fault,
    open_content,
    run_night,
    snapshot_fx,
)

from gpuscout.warehouse.connection import connect
from gpuscout.warehouse.migrate import migration_files
from gpuscout.warehouse.segments import segments_dir

HELPER = Path(__file__).with_name("crash_refresh.py")
TRIALS = 20
SEED = 20261202


def _helper(db: Path, night: int, variant: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(HELPER), str(db), str(night), variant],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(proc: subprocess.Popen[str], marker: str, timeout: float = 60.0) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith(marker):
            return
        if not line and proc.poll() is not None:
            stderr = proc.stderr.read() if proc.stderr else ""
            raise AssertionError(f"refresh exited {proc.returncode} before {marker}: {stderr}")
    raise AssertionError(f"no {marker} within {timeout} s")


def _load_seconds(db: Path, night: int, variant: str) -> float:
    """How long the write session of one uninterrupted refresh lasts."""
    proc = _helper(db, night, variant)
    _wait_for(proc, "WRITE")
    start = time.monotonic()
    _wait_for(proc, "DONE")
    took = time.monotonic() - start
    assert proc.wait(30) == 0
    return took


def _consistency_problems(db: Path) -> list[str]:
    """Rows a half-written load would leave: each query lists what should not exist."""
    checks = {
        "open version whose run is not an ok run of its provider": """
            SELECT v.provider, v.offer_key FROM offer_versions v
            WHERE NOT EXISTS (SELECT 1 FROM refresh_run_log r WHERE r.run_id = v.opened_by_run
                              AND r.provider = v.provider AND r.status = 'ok')""",
        "closed version whose closing run is not logged": """
            SELECT v.provider, v.offer_key FROM offer_versions v
            WHERE v.closed_by_run IS NOT NULL AND NOT EXISTS (
                SELECT 1 FROM refresh_run_log r WHERE r.run_id = v.closed_by_run
                AND r.provider = v.provider)""",
        "offer with two open versions": """
            SELECT provider, offer_key FROM offer_versions WHERE valid_to IS NULL
            GROUP BY ALL HAVING count(*) > 1""",
        "version closed before it opened": """
            SELECT provider, offer_key FROM offer_versions WHERE valid_to < valid_from""",
        "quarantined row of an unlogged run": """
            SELECT q.provider, q.run_id FROM quarantine q WHERE NOT EXISTS (
                SELECT 1 FROM refresh_run_log r WHERE r.run_id = q.run_id
                AND r.provider = q.provider)""",
        "run logged for only some of its providers": f"""
            SELECT run_id FROM refresh_run_log GROUP BY run_id
            HAVING count(DISTINCT provider) <> {len(CRASH_PROVIDERS)}""",
        "run log counts that do not match the history": """
            SELECT r.run_id, r.provider FROM refresh_run_log r WHERE r.status = 'ok' AND
            r.new_offers + r.changed_offers <> (SELECT count(*) FROM offer_versions v
                WHERE v.opened_by_run = r.run_id AND v.provider = r.provider)""",
    }
    problems = []
    folder = segments_dir(db)
    with connect(db, read_only=True) as con:
        listed = [f for (f,) in con.execute("SELECT file FROM history_segments").fetchall()]
        missing = [f for f in listed if not (folder / f).is_file()]
        if missing:
            problems.append(f"history segments listed but not on disk: {missing}")
        for table in ("offer_versions", "refresh_run_log", "quarantine", "gpu_catalog",
                      "provider_profiles", "fx_rates"):
            con.execute(f"SELECT * FROM {table}").fetchall()  # every block is readable
        for what, sql in checks.items():
            rows = con.execute(sql).fetchall()
            if rows:
                problems.append(f"{what}: {rows[:3]}")
    return problems


def _migrations(db: Path) -> list[int]:
    with connect(db, read_only=True) as con:
        return [v for (v,) in con.execute("SELECT version FROM schema_migrations ORDER BY 1")
                .fetchall()]


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_sigkill_during_load_leaves_old_or_new_state_20_trials(tmp_path: Path) -> None:
    fx = snapshot_fx()
    # The two states, computed once in this process.
    refs = {}
    for variant in ("A", "B"):
        ref_db = tmp_path / f"ref_{variant}.duckdb"
        server = SnapshotServer(fault=night_b_fault() if variant == "B" else None)
        assert run_night(ref_db, CRASH_PROVIDERS, server, fx).status == "ok"
        refs[variant] = open_content(ref_db)
    assert all(refs["A"][p] != refs["B"][p] for p in CRASH_PROVIDERS)  # old and new differ

    db = tmp_path / "w.duckdb"
    assert run_night(db, CRASH_PROVIDERS, SnapshotServer(), fx).status == "ok"  # night 0: A
    # How long a load lasts here: one uninterrupted refresh on a copy of the warehouse.
    window = max(_load_seconds(copy_db(db, tmp_path / "calibrate.duckdb"), 1, "B"), 0.05)
    rng = random.Random(SEED)
    migrations = [v for v, _ in migration_files()]
    state = "A"
    outcomes = []
    for trial in range(1, TRIALS + 1):
        variant = "B" if state == "A" else "A"
        proc = _helper(db, trial, variant)
        _wait_for(proc, "WRITE")
        time.sleep(rng.uniform(0, 1.5 * window))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()

        assert _migrations(db) == migrations, f"trial {trial}"
        content = open_content(db)
        per_provider = {}
        for p in CRASH_PROVIDERS:
            if content.get(p) == refs[state][p]:
                per_provider[p] = "old"
            elif content.get(p) == refs[variant][p]:
                per_provider[p] = "new"
            else:
                raise AssertionError(f"trial {trial}: {p} holds neither its old nor its new "
                                     "state")
        assert not _consistency_problems(db), f"trial {trial}: {_consistency_problems(db)}"
        # A write session publishes as a whole: every provider moved, or none did.
        assert len(set(per_provider.values())) == 1, f"trial {trial}: {per_provider}"
        outcome = next(iter(per_provider.values()))
        outcomes.append(outcome)
        if outcome == "new":
            state = variant

    # The warehouse is still writable after 20 kills: a refresh runs to the end.
    final = "B" if state == "A" else "A"
    server = SnapshotServer(shift=(TRIALS + 1) * NIGHT,
                            fault=night_b_fault() if final == "B" else None)
    assert run_night(db, CRASH_PROVIDERS, server, fx).status == "ok"
    assert open_content(db) == refs[final]
    # The delays are seeded; which side of the publish a kill lands on depends on the machine's
    # speed, so the counts are reported, and only kills inside the load are required.
    print(f"crash trials: {outcomes.count('old')} old, {outcomes.count('new')} new state")
    assert "old" in outcomes
