"""The user's own runs: read their logs, keep them, and correct and bound the estimates with them.

- `add_runs`: each log read (`gpuscout.runlogs`), joined to the job's options, predicted by
  the sizing model as it is now, and stored in the warehouse's `measured_runs` (a run already
  stored is kept as it is);
- `stored_runs`, `compare_runs`: the runs, predicted against measured (then and now);
- `estimate_job`: an estimate with the calibration's range for its regime, narrowed and
  corrected by the runs of the same GPU, framework and method (`evidence.py`,
  `correction.py`); `offers.py` does the same for each machine a recommendation sizes.
"""

from gpuscout.pipeline.measured.usecases import (
    AddReport,
    Comparison,
    add_runs,
    compare_runs,
    estimate_job,
    load_evidence,
    stored_runs,
)

__all__ = ["AddReport", "Comparison", "add_runs", "compare_runs", "estimate_job",
           "load_evidence", "stored_runs"]
