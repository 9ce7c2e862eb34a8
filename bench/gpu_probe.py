"""First-hand measurements: the probe's grid on this machine's GPU, and the sizing model's error.

    python -m bench.gpu_probe run [--grid standard] [--out-dir bench/measured]
    python -m bench.gpu_probe compare bench/measured/<date>.csv [--gpu h200-sxm-141gb]

`run` writes `<out-dir>/<UTC date>.csv` (the columns of sizing/data/measurements.csv, one row
per point as it ends) and `<UTC date>.json` (every point, skipped and failed ones too, and the
machine). It needs only PyTorch (transformers, peft and bitsandbytes where present) and
imports no part of gpuscout beyond the probe, so `bench/gpu_probe_run.sh` runs it on a GPU
machine without installing gpuscout. `compare` sets each row beside gpuscout's estimate (the
calibration's rules) and prints the markdown of CALIBRATION.md's own-measurements section.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

BENCH = Path(__file__).resolve().parent
MEASURED = BENCH / "measured"


def _revision() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=BENCH,
                             capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _free_name(out_dir: Path) -> str:
    """<UTC date>, or <UTC date>-<HHMM> when that date already has a run."""
    now = datetime.now(UTC)
    stem = now.strftime("%Y-%m-%d")
    if (out_dir / f"{stem}.csv").exists():
        stem = now.strftime("%Y-%m-%d-%H%M")
    return stem


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from gpuscout.probe.grid import GRIDS
    from gpuscout.probe.run import probe_to_files

    grid = GRIDS[args.grid]
    if args.budget is not None:
        grid = replace(grid, budget_s=args.budget)
    out_dir: Path = args.out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = _free_name(out_dir)
    csv_path, json_path = out_dir / f"{stem}.csv", out_dir / f"{stem}.json"
    report, made = probe_to_files(grid, csv_path=csv_path, json_path=json_path,
                                  device=args.device, backend=args.backend,
                                  echo=lambda line: print(line, flush=True),
                                  revision=_revision())
    failed = [r for r in report.results if r.status.startswith("error")]
    print(f"{len(made)} rows -> {csv_path}; every point -> {json_path}; "
          f"{len(failed)} failed")
    return 1 if not made else 0


def compare(args: argparse.Namespace) -> int:
    from gpuscout.probe.compare import compare_file, markdown

    print(markdown(compare_file(args.csv, args.gpu)), end="")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu_probe", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run a probe grid and write its rows")
    r.add_argument("--grid", default="standard", choices=("standard", "quick", "tiny"))
    r.add_argument("--out-dir", type=Path, default=MEASURED)
    r.add_argument("--budget", type=float, help="seconds for the whole grid")
    r.add_argument("--device", help="torch device [default: cuda when there is one]")
    r.add_argument("--backend", default="auto", choices=("auto", "transformers", "plain"))
    r.set_defaults(func=run)
    c = sub.add_parser("compare", help="a probe's rows beside gpuscout's estimate")
    c.add_argument("csv", type=Path)
    c.add_argument("--gpu", help="catalog GPU id, when the device name does not resolve")
    c.set_defaults(func=compare)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
