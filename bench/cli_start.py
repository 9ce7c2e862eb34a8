"""CLI start: wall time of `gpuscout --help` and `gpuscout offers --limit 5 --db DB`.

    python -m bench.cli_start --db bench/out/work/queries.duckdb [--runs 10]

Each command runs `runs` times in a fresh process (after one untimed warm-up that fills the OS
file cache), from exec to exit; the median is reported. The entry point is the `gpuscout`
script beside `--python` (the bench
uses a venv holding gpuscout alone: the anchors' packages, pandas among them, change what
pyarrow imports). `python -X importtime` then lists the modules
that cost most to import, which is what a start-up time is made of.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import REPO, loadavg


def _gpuscout(python: str) -> str:
    script = Path(python).with_name("gpuscout")
    return str(script) if script.exists() else "gpuscout"


def wall(cmd: list[str], runs: int) -> list[float]:
    subprocess.run(cmd, cwd=REPO, capture_output=True, check=True)  # warm-up
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=REPO, capture_output=True, check=True)
        samples.append(time.perf_counter() - start)
    return samples


def import_costs(python: str, argv: list[str], top: int = 10) -> list[tuple[str, float]]:
    """Cumulative import time (ms) of the outermost imports while `gpuscout argv` runs."""
    code = (f"import sys; sys.argv = {['gpuscout', *argv]!r}; "
            "from gpuscout.cli.app import main; main()")
    out = subprocess.run([python, "-X", "importtime", "-c", code], cwd=REPO,
                         capture_output=True, text=True)
    costs: dict[str, float] = {}
    for line in out.stderr.splitlines():
        if not line.startswith("import time:") or line.count("|") != 2:
            continue
        _, cumulative, name = line[12:].split("|")
        # The outermost imports: one space after the bar; nested ones are indented further.
        if cumulative.strip().isdigit() and name.startswith(" ") and name[1:2] != " ":
            costs[name.strip()] = costs.get(name.strip(), 0.0) + int(cumulative) / 1000
    return sorted(costs.items(), key=lambda kv: -kv[1])[:top]


def bench_cli(db: Path, runs: int, python: str = sys.executable) -> dict[str, Any]:
    exe = _gpuscout(python)
    commands = {
        "gpuscout --help": ["--help"],
        "gpuscout offers --limit 5": ["offers", "--limit", "5", "--db", str(db)],
    }
    results = {}
    for label, argv in commands.items():
        samples = wall([exe, *argv], runs)
        results[label] = {"median_s": statistics.median(samples), "min_s": min(samples),
                          "max_s": max(samples), "runs": runs,
                          "imports_ms": import_costs(python, argv)}
        print(f"cli {label}: {results[label]['median_s']:.3f} s", flush=True)
    python_only = wall([python, "-c", "pass"], runs)
    return {"commands": results, "python_start_s": statistics.median(python_only),
            "entry_point": exe, "loadavg": loadavg()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--python", default=sys.executable,
                    help="the interpreter whose gpuscout script is timed")
    args = ap.parse_args()
    print(json.dumps(bench_cli(args.db, args.runs, args.python), indent=1))


if __name__ == "__main__":
    main()
