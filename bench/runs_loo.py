"""The correction by a user's own runs, left one out on the published measurements.

    python -m bench.runs_loo

Each source of sizing/data/measurements.csv plays one user; every row with a measured tokens/s
is held back and estimated with the correction its source's other rows of the same GPU and
method give (gpuscout.pipeline.measured.loo). Prints the table per source: the held-back rows'
error (|predicted − measured| / measured) before and after, and the rows of other stacks,
which the correction must leave as they were.
"""

from __future__ import annotations

from gpuscout.pipeline.measured.loo import hold_back, rows, table


def _n(x: float | None) -> str:
    return "–" if x is None else f"{x:.1f}"


def render() -> str:
    lines = ["| source | rows | held back with runs of their stack | median error % before → "
             "after | mean error % before → after | better / worse | other stacks: rows, "
             "changed |", "|---|---|---|---|---|---|---|"]
    for s in table(hold_back(rows())):
        lines.append(f"| {s.user} | {s.rows} | {s.corrected} | {_n(s.median_before)} → "
                     f"{_n(s.median_after)} | {_n(s.mean_before)} → {_n(s.mean_after)} | "
                     f"{s.better} / {s.worse} | {s.others}, {s.others_changed} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render())
