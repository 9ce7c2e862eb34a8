"""Your own runs, from Python: `gpuscout.runs.add`, `list` and `compare`.

    import gpuscout
    report = gpuscout.runs.add(["out/trainer_state.json"], model="meta-llama/Llama-3.1-8B",
                               method="lora", gpu="h100-sxm-80gb", seq_len=2048)
    for run in gpuscout.runs.list():
        print(run.run_id, run.gpu_id, run.tokens_per_s, run.tokens_error_pct)

`add` reads each log (a file or a run folder), takes what the log does not say from the job
options (the fields of `gpuscout.Job`; those you pass are yours, the rest defaults, and the run
records which is which), and stores the runs in the warehouse `db`. `gpuscout.estimate` and
`gpuscout.recommend` then correct the jobs of the same GPU, framework and method by them.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuscout.api import _db, _job

if TYPE_CHECKING:
    from gpuscout.pipeline.measured import AddReport, Comparison
    from gpuscout.pipeline.measured.record import MeasuredRun
    from gpuscout.sizing.job import Job


def add(paths: Sequence[Path | str] | Path | str, *, db: Path | str | None = None,
        job: Job | None = None, gpu: str | None = None, **options: Any) -> AddReport:
    """Store the runs the logs at `paths` describe; `added` and `already` (stored before,
    kept as they were) in the report."""
    from gpuscout.pipeline.measured import add_runs

    the_job = _job(job, options)
    given = set(options) if job is None else set(job.model_fields_set)
    files = [paths] if isinstance(paths, str | Path) else builtins.list(paths)
    return add_runs(_db(db), files, the_job, given, gpu)


def list(*, db: Path | str | None = None) -> builtins.list[MeasuredRun]:
    """Every stored run, oldest first."""
    from gpuscout.pipeline.measured import stored_runs

    return stored_runs(_db(db))


def compare(*, db: Path | str | None = None) -> builtins.list[Comparison]:
    """Every stored run, measured against the prediction made when it was added and the one
    made now, and what your other runs of its stack correct its estimate to."""
    from gpuscout.pipeline.measured import compare_runs

    return compare_runs(_db(db))
