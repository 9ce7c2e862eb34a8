"""A refresh for the crash test to kill: `python crash_refresh.py DB NIGHT VARIANT [HOLD]`.

Refreshes `reliability_harness.CRASH_PROVIDERS` in live mode from the bundled snapshots served
NIGHT days after they were recorded, as night A (the snapshots) or B (`night_b_fault`). Prints
`WRITE` when the write session opens (the load starts) and `DONE` when the refresh returned.
Its write sessions seal every closed version into a history segment before they publish.
With HOLD (a path), the write session waits, open, until that file exists: the reader test
runs its readers then.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE)]

from reliability_harness import (  # noqa: E402
    CRASH_PROVIDERS,
    NIGHT,
    SnapshotServer,
    night_b_fault,
    run_night,
    snapshot_fx,
)

import gpuscout.pipeline.refresh as refresh_mod  # noqa: E402

_connect = refresh_mod.connect
HOLD = Path(sys.argv[4]) if len(sys.argv) > 4 else None


_load = refresh_mod.load


@contextmanager
def _announcing(db: Any, **kwargs: Any) -> Iterator[Any]:
    if not kwargs.get("read_only"):
        kwargs["seal_rows"] = 1  # every session seals, so kills land in sealing too
    with _connect(db, **kwargs) as con:
        if not kwargs.get("read_only"):
            print("WRITE", flush=True)
        yield con


def _holding_load(*args: Any, **kwargs: Any) -> Any:
    """The real load; the first one then waits for HOLD, mid-session, its work committed."""
    record = _load(*args, **kwargs)
    if HOLD is not None and not HOLD.exists():
        print("HOLDING", flush=True)
        while not HOLD.exists():
            time.sleep(0.02)
    return record


def main() -> None:
    db, night, variant = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    refresh_mod.connect = _announcing  # type: ignore[assignment]
    refresh_mod.load = _holding_load  # type: ignore[assignment]
    server = SnapshotServer(shift=night * NIGHT,
                            fault=night_b_fault() if variant == "B" else None)
    report = run_night(db, CRASH_PROVIDERS, server, snapshot_fx())
    print("DONE", report.status, flush=True)


if __name__ == "__main__":
    main()
