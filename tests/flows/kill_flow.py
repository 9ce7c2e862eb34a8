"""A nightly flow for the kill test: `python kill_flow.py DB`.

Runs the flow on the bundled snapshots for lambda and runpod in a Prefect test harness.
After the first provider's load returns (committed in the write session) it prints `LOADED`
and waits, mid-session, to be killed.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

from prefect.testing.utilities import prefect_test_harness

import gpuscout.pipeline.refresh as refresh_mod
from gpuscout.flows.refresh import nightly_refresh

_load = refresh_mod.load


def _load_then_wait(*args: Any, **kwargs: Any) -> Any:
    record = _load(*args, **kwargs)
    print("LOADED", record.provider, flush=True)
    while True:
        time.sleep(1)


def main() -> None:
    refresh_mod.load = _load_then_wait  # type: ignore[assignment]
    with prefect_test_harness(server_startup_timeout=240):
        nightly_refresh(providers=["lambda", "runpod"], db=sys.argv[1], archive_root=None,
                        offline=True, report_root=None)


if __name__ == "__main__":
    main()
