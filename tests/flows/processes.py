"""Process groups seen through /proc, for the tests that kill flows: what is still running
(a zombie waiting to be reaped has ended), and killing what is left."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

HAS_PROC = Path("/proc/self/stat").exists()


def _stats() -> list[tuple[int, str, int, int]]:
    """(pid, state, parent pid, process group) of every process."""
    rows = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended while we looked
        rows.append((int(stat.parent.name), fields[0], int(fields[1]), int(fields[2])))
    return rows


def alive_in_group(group: int) -> list[int]:
    return [pid for pid, state, _, pgid in _stats() if pgid == group and state != "Z"]


def children_groups(parent: int) -> set[int]:
    return {pgid for _, _, ppid, pgid in _stats() if ppid == parent}


def wait_gone(group: int, timeout_s: float = 30) -> None:
    """Nothing of the group is left within `timeout_s`, else an AssertionError."""
    if not HAS_PROC:
        return
    deadline = time.monotonic() + timeout_s
    while alive_in_group(group):
        assert time.monotonic() < deadline, f"process group {group} outlived its kill"
        time.sleep(0.2)


def kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
