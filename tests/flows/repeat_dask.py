"""`python repeat_dask.py DB N`: the nightly flow on a local Dask cluster N times in a row, in
one Prefect test harness, printing `RUN i <status>` after each. The test that starts it
bounds the whole with a timeout: a run that hangs fails that test instead of the suite."""

from __future__ import annotations

import os
import sys

os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")

from prefect.testing.utilities import prefect_test_harness

from gpuscout.flows.refresh import run_nightly


def main() -> None:
    db, runs = sys.argv[1], int(sys.argv[2])
    with prefect_test_harness(server_startup_timeout=240):
        for i in range(runs):
            result = run_nightly("dask", providers=["lambda", "runpod", "hyperbolic", "vastai"],
                                 db=db, archive_root=None, offline=True, report_root=None)
            print("RUN", i, result["status"], flush=True)
    sys.stdout.flush()
    os._exit(0)  # a stuck worker thread must not keep the process alive


if __name__ == "__main__":
    main()
