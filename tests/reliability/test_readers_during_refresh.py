"""Readers during a refresh: `gpuscout sql`, `offers`, `runs` and `recommend` started while a
refresh is in the middle of its load work, and see the last published state; a second writer is
refused with a clear error; a reader that opened before the publish keeps its snapshot; and
readers hammering the warehouse while refreshes publish never fail.

The design (warehouse/connection.py): a refresh writes a private copy of the warehouse and
renames it over the published file when it is done; readers open the published file read-only,
which no writer ever holds.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from reliability_harness import (
    CRASH_PROVIDERS,
    NIGHT,
    SnapshotServer,
    night_b_fault,
    open_content,
    run_night,
    snapshot_fx,
)

from gpuscout.core.errors import DataError
from gpuscout.warehouse.connection import WarehouseBusyError, connect, writer_lock

HELPER = Path(__file__).with_name("crash_refresh.py")
CLI = [sys.executable, "-m", "gpuscout"]
PRICE_SQL = ("select offer_key, price_per_hour from current_offers where provider = 'lambda' "
             "order by 1")


def _cli(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _wait_for(proc: subprocess.Popen[str], marker: str, timeout: float = 60.0) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith(marker):
            return
        if not line and proc.poll() is not None:
            raise AssertionError(f"refresh exited before {marker}: {proc.stderr.read()}")
    raise AssertionError(f"no {marker} within {timeout} s")


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    db = tmp_path / "w.duckdb"
    assert run_night(db, CRASH_PROVIDERS, SnapshotServer(), snapshot_fx()).status == "ok"
    return db


def test_cli_readers_work_while_a_refresh_writes(warehouse: Path, tmp_path: Path) -> None:
    db = str(warehouse)
    before_prices = json.loads(subprocess.run([*CLI, "sql", PRICE_SQL, "--db", db, "--format",
                                               "json"], capture_output=True, text=True,
                                              check=True).stdout)
    hold = tmp_path / "release"
    writer = subprocess.Popen([sys.executable, str(HELPER), db, "1", "B", str(hold)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(writer, "HOLDING")  # mid-load: a provider merged, the session still open
        readers = {
            "sql": _cli("sql", PRICE_SQL, "--db", db, "--format", "json"),
            "offers": _cli("offers", "--gpu", "h100", "--db", db, "--format", "json"),
            "runs": _cli("runs", "--db", db, "--format", "json"),
            "recommend": _cli("recommend", "--model", "meta-llama/Llama-3.1-8B", "--method",
                              "qlora", "--tokens", "1e8", "--limit", "3", "--db", db,
                              # the night's live prices are dated NIGHT, long past: no age limit
                              "--max-price-age", "0", "--format", "json"),
        }
        second_writer = _cli("refresh", "--offline", "--provider", "lambda", "--db", db)
        outputs = {}
        for name, proc in readers.items():
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, f"{name} failed during the refresh: {err}"
            outputs[name] = json.loads(out)
        _, err = second_writer.communicate(timeout=120)
        assert writer.poll() is None, "the refresh was not held while the readers ran"
    finally:
        hold.touch()
    _wait_for(writer, "DONE")
    assert writer.wait(60) == 0

    # The readers saw the last published state, whole: the held refresh's work was invisible.
    assert outputs["sql"] == before_prices
    assert outputs["offers"] and all(o["gpu_id"].startswith("h100") for o in outputs["offers"])
    assert {r["status"] for r in outputs["runs"]} == {"ok"} and len(outputs["runs"]) == 4
    assert outputs["recommend"]["ranked"]
    # The second writer was refused at once, in one line, and changed nothing.
    assert second_writer.returncode == 2
    assert "is being written by pid" in err and "Traceback" not in err
    # New readers see the new state once the refresh has published it.
    after = json.loads(subprocess.run([*CLI, "sql", PRICE_SQL, "--db", db, "--format", "json"],
                                      capture_output=True, text=True, check=True).stdout)
    assert after != before_prices and {r["price_per_hour"] for r in after} >= {26.32}


def test_a_reader_keeps_its_snapshot_across_a_publish(warehouse: Path) -> None:
    with connect(warehouse, read_only=True) as con:
        old = con.execute(PRICE_SQL).fetchall()
        server = SnapshotServer(shift=NIGHT, fault=night_b_fault())
        assert run_night(warehouse, CRASH_PROVIDERS, server, snapshot_fx()).status == "ok"
        assert con.execute(PRICE_SQL).fetchall() == old  # still the file it opened
    with connect(warehouse, read_only=True) as con:
        assert con.execute(PRICE_SQL).fetchall() != old


def test_readers_never_fail_while_refreshes_publish(warehouse: Path) -> None:
    """In-process readers in a loop while three refreshes run one after another."""
    failures: list[BaseException] = []
    reads = [0]
    seen: set[frozenset[tuple]] = set()
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            try:
                seen.add(open_content(warehouse)["lambda"])
                reads[0] += 1
            except BaseException as exc:  # any failure is the finding
                failures.append(exc)

    readers = [threading.Thread(target=read) for _ in range(2)]
    for t in readers:
        t.start()
    try:
        fx = snapshot_fx()
        for night in (1, 2, 3):
            fault = night_b_fault() if night % 2 else None
            server = SnapshotServer(shift=night * NIGHT, fault=fault)
            assert run_night(warehouse, CRASH_PROVIDERS, server, fx).status == "ok"
    finally:
        stop.set()
        for t in readers:
            t.join()
    assert not failures, failures[:3]
    assert reads[0] > 0 and len(seen) <= 2  # only ever a whole published state


def test_a_second_writer_is_refused_not_merged(warehouse: Path) -> None:
    started = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with writer_lock(warehouse):
            started.set()
            release.wait(30)

    t = threading.Thread(target=hold)
    t.start()
    try:
        assert started.wait(30)
        with pytest.raises(WarehouseBusyError, match="another thread of this process"), \
                connect(warehouse):
            pass
        assert isinstance(WarehouseBusyError("x"), DataError)  # the CLI prints it in one line
    finally:
        release.set()
        t.join()
    with connect(warehouse):  # free again once the holder is done
        pass
