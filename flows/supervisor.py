"""A flow run in a child process that always ends: on a signal, or at its deadline.

A nightly refresh that hangs is worse than one that fails: nobody is told, and the next night
finds the writer lock held. Inside a flow run, Prefect takes SIGTERM for itself and then reports
the crash to its API, which a stopping machine may already have taken down; worker threads stuck
in a call keep the interpreter from exiting. So `python -m gpuscout.flows.refresh` runs the flow
in a child process group and this parent owns the end of it:

- SIGTERM or SIGINT is passed on to the child's whole group (the flow and the temporary Prefect
  server it started); what is still alive `GRACE_S` later is killed;
- a run past its deadline is ended the same way, and the exit status says so;
- a killed writer publishes nothing and its lock goes with it (warehouse/connection.py), so the
  warehouse stays as it was and the next run is not blocked;
- should the parent itself be killed outright (SIGKILL gives it no say), the child notices
  that its parent is gone (`end_with_parent`) and ends its group itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from contextlib import suppress
from types import FrameType

GRACE_S = 10.0
# Exit statuses of the parent: the child's own, else these.
DEADLINE_EXIT = 124  # as timeout(1)
SIGNAL_EXIT = 128


def run_supervised(argv: Sequence[str], *, deadline_s: float | None,
                   grace_s: float = GRACE_S) -> int:
    """Run `argv` in its own process group until it exits, a signal arrives, or `deadline_s`
    passes; the child's exit status, else 128+signal or `DEADLINE_EXIT`."""
    child = subprocess.Popen(list(argv), start_new_session=True)
    received: list[int] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        _signal_group(child.pid, signal.SIGTERM)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        end = None if deadline_s is None else time.monotonic() + deadline_s
        while child.poll() is None:
            if received or (end is not None and time.monotonic() >= end):
                if not received:
                    print(f"error: the flow run passed its deadline of {deadline_s:g} s; it "
                          "was stopped and the warehouse is as it was", file=sys.stderr)
                    _signal_group(child.pid, signal.SIGTERM)
                _stop(child, grace_s)
                return SIGNAL_EXIT + received[0] if received else DEADLINE_EXIT
            time.sleep(0.2)
        return child.returncode
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _signal_group(child.pid, signal.SIGKILL)  # whatever the child left behind


def _stop(child: subprocess.Popen[bytes], grace_s: float) -> None:
    """The group got SIGTERM: wait `grace_s` for the child, then kill the whole group."""
    with suppress(subprocess.TimeoutExpired):
        child.wait(grace_s)
    _signal_group(child.pid, signal.SIGKILL)
    child.wait()


def _signal_group(pgid: int, signum: int) -> None:
    with suppress(ProcessLookupError, PermissionError):  # the group is gone already
        os.killpg(pgid, signum)


def end_with_parent(poll_s: float = 1.0) -> None:
    """In the child: end the whole group as soon as the supervising parent is gone (a daemon
    thread watching the parent's pid; the parent's death re-parents this process)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        _signal_group(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=watch, name="end-with-parent", daemon=True).start()
