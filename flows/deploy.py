"""Schedules and deployments of the nightly refresh, and nothing else.

    python -m gpuscout.flows.deploy serve  # run the schedule in this process (no work pool)
    prefect deploy --all                   # deploy prefect.yaml to a work pool instead

Both use the same cron schedule and parameters, defined here and mirrored in prefect.yaml.
"""

from __future__ import annotations

import os
import sys

from prefect.schedules import Cron, Schedule

from gpuscout.flows.refresh import nightly_refresh

# 02:30 UTC: after most providers' daily price updates, before European working hours.
NIGHTLY_CRON = "30 2 * * *"
TIMEZONE = "UTC"


def nightly_parameters() -> dict[str, object]:
    """Deployment parameters; the operator sets them in the environment of the server."""
    return {
        "providers": None,  # all registered providers
        "db": os.environ.get("GPUSCOUT_DB"),
        "archive_root": os.environ.get("GPUSCOUT_ARCHIVE", "var/archive"),
        "report_root": os.environ.get("GPUSCOUT_REPORTS", "var/report"),
    }


def nightly_schedule() -> Schedule:
    return Cron(NIGHTLY_CRON, timezone=TIMEZONE, parameters=nightly_parameters())


def serve() -> None:
    nightly_refresh.serve(name="gpuscout-nightly", schedules=[nightly_schedule()],
                          tags=["gpuscout"])


if __name__ == "__main__":
    if sys.argv[1:] != ["serve"]:
        sys.exit(__doc__)
    serve()
