"""Every benchmark, side by side with gpuhunt and SkyPilot, into bench/RESULTS.md.

    python3 -m bench                 # or: make bench-all
    python3 -m bench --only queries  # one section again (the others are kept from the last run)
    python3 -m bench --quick         # small sizes, a smoke test: writes bench/out/RESULTS.quick.md
    python3 -m bench --report        # rewrite RESULTS.md from bench/out/results.json only

Run from the repository root with any Python >= 3.11. The first run creates two virtual
environments (both gitignored) and re-runs itself in the first:

- bench/.venv: gpuscout with its flows extra (`pip install -e .[flows]`, Prefect and
  prefect-dask for the runners section) + bench/requirements.txt (gpuhunt[aws], skypilot);
- bench/.venv-cli: gpuscout alone, for the CLI start timings (the anchors bring pandas, which
  pyarrow then imports; a user's gpuscout install does not have it).

The project's own requirements are untouched. Sections: parse, load, history, queries, cli,
copy, runners (in that order; queries needs history's warehouse, cli the queries one); probes
(the earlier proposals, now shipped) run only when asked. Raw results: bench/out/results.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
VENV = BENCH / ".venv"
VENV_CLI = BENCH / ".venv-cli"
REQUIREMENTS = BENCH / "requirements.txt"
SECTIONS = ("parse", "load", "history", "queries", "cli", "copy", "runners")


def _stamp(*files: Path) -> str:
    digest = hashlib.sha256(sys.version.encode())
    for f in files:
        digest.update(f.read_bytes())
    return digest.hexdigest()


def _ensure_venv(venv: Path, pip_args: list[str], stamp: str) -> Path:
    """Create/update venv unless its stamp says it already holds pip_args; its python."""
    python = venv / "bin" / "python"
    mark = venv / ".bench-installed"
    # what is installed counts too: a changed extra reinstalls
    stamp = hashlib.sha256((stamp + " ".join(pip_args)).encode()).hexdigest()
    if python.exists() and mark.exists() and mark.read_text() == stamp:
        return python
    print(f"bench: installing {venv.relative_to(REPO)} ({' '.join(pip_args)})", flush=True)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    *pip_args], cwd=REPO, check=True)
    mark.write_text(stamp)
    return python


def bootstrap() -> None:
    """Make sure both venvs exist, then continue inside bench/.venv."""
    pyproject = REPO / "pyproject.toml"
    _ensure_venv(VENV_CLI, ["-e", "."], _stamp(pyproject))
    python = _ensure_venv(VENV, ["-e", ".[flows]", "-r", str(REQUIREMENTS)],
                          _stamp(pyproject, REQUIREMENTS))
    if Path(sys.prefix).resolve() != VENV.resolve():
        os.execv(str(python), [str(python), "-m", "bench", *sys.argv[1:]])


def main() -> None:  # noqa: C901 - one branch per benchmark section and option
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", choices=(*SECTIONS, "probes"),
                    help="run only these sections (probes: the older proposals, on demand)")
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    ap.add_argument("--sizes", help="parse file sizes, MB (default 100,1000,3000)")
    ap.add_argument("--parse-runs", type=int, default=3)
    ap.add_argument("--offers", type=int, help="load bench offers (default 1,000,000)")
    ap.add_argument("--load-runs", type=int, default=3)
    ap.add_argument("--nights", type=int, help="history nights (default 365)")
    ap.add_argument("--night-offers", type=int, help="offers per night (default 50,000)")
    ap.add_argument("--query-offers", type=int, help="current offers (default 100,000)")
    ap.add_argument("--query-runs", type=int, default=20)
    ap.add_argument("--query-procs", type=int, default=3)
    ap.add_argument("--cli-runs", type=int, default=10)
    ap.add_argument("--copy-sizes", default="100,1000,10000",
                    help="warehouse sizes for the copy-and-swap bench, MB")
    ap.add_argument("--copy-runs", type=int, default=3)
    ap.add_argument("--sim-providers", type=int, default=100)
    ap.add_argument("--sim-latency", type=float, default=0.5)
    ap.add_argument("--report", action="store_true",
                    help="only rewrite the RESULTS file from the saved results.json")
    ap.add_argument("--no-install", action="store_true",
                    help="use the running interpreter as it is (no venvs)")
    args = ap.parse_args()
    if not args.no_install:
        bootstrap()

    from bench.common import OUT, WORK, loadavg, machine, versions
    from bench.report import closing_note, render

    quick = args.quick
    if quick:  # small sizes everywhere
        args.copy_sizes, args.sim_providers, args.sim_latency = "20,100", 10, 0.1
    sizes = args.sizes or ("20,60" if quick else "100,1000,3000")
    offers = args.offers or (100_000 if quick else 1_000_000)
    nights = args.nights or (10 if quick else 365)
    night_offers = args.night_offers or (5_000 if quick else 50_000)
    query_offers = args.query_offers or (10_000 if quick else 100_000)
    results_path = OUT / ("results.quick.json" if quick else "results.json")
    results_md = OUT / "RESULTS.quick.md" if quick else BENCH / "RESULTS.md"
    WORK.mkdir(parents=True, exist_ok=True)
    keep = args.only or args.report
    res = json.loads(results_path.read_text()) if keep and results_path.exists() else {}
    if args.report and not res:
        sys.exit(f"bench: no {results_path.relative_to(REPO)} to report from")
    command = "python3 -m bench" + (" --quick" if quick else "")
    now = f"{datetime.now(UTC):%Y-%m-%d %H:%M}"
    if not args.report:
        res["meta"] = {"started": now, "loadavg_start": loadavg(), **res.get("meta", {}),
                       "command": command, "machine": machine(), "versions": versions()}
    history_db = WORK / "history.duckdb"
    cli_python = str(VENV_CLI / "bin" / "python") if not args.no_install else sys.executable

    def save() -> None:
        res["meta"]["finished"] = f"{datetime.now(UTC):%Y-%m-%d %H:%M}"
        res["meta"]["loadavg_end"] = loadavg()
        results_path.write_text(json.dumps(res, indent=1, default=str))

    for section in [] if args.report else args.only or SECTIONS:
        start = time.perf_counter()
        print(f"bench: {section} …", flush=True)
        if section == "parse":
            from bench.parse_compare import bench_parse

            res["parse"] = bench_parse([int(s) for s in sizes.split(",")], args.parse_runs,
                                       None)
        elif section == "load":
            from bench.load import bench_load, profile_merge

            runs = [bench_load(offers, WORK) for _ in range(args.load_runs)]
            res["load"] = {"offers": offers, "runs": runs,
                           "profile": profile_merge(offers, WORK)}
            for name in ("load.duckdb", "rows.duckdb", "load.duckdb.lock",
                         "profile.duckdb.lock"):
                (WORK / name).unlink(missing_ok=True)
        elif section == "history":
            from bench.load import bench_history

            res["history"] = bench_history(nights, night_offers, WORK)
        elif section == "queries":
            from bench.queries import bench_queries

            if not history_db.exists():
                sys.exit("bench: queries needs the history warehouse: run the history section")
            res["queries"] = bench_queries(history_db, WORK, n_offers=query_offers,
                                           runs=args.query_runs, procs=args.query_procs)
        elif section == "copy":
            from bench.copy_cost import bench_copy

            res["copy"] = bench_copy([int(x) for x in args.copy_sizes.split(",")],
                                     args.copy_runs)
        elif section == "runners":
            from bench.runners import bench_runners

            res["runners"] = bench_runners(args.sim_providers, args.sim_latency)
        elif section == "probes":
            from bench.probes import bench_probes

            res["probes"] = bench_probes(offers, args.load_runs, min(nights, 60), night_offers,
                                         WORK / "queries.duckdb", max(3, args.query_runs // 2))
        elif section == "cli":
            from bench.cli_start import bench_cli

            db = WORK / "queries.duckdb"
            if not db.exists():
                sys.exit("bench: cli needs the queries warehouse: run the queries section")
            res["cli"] = bench_cli(db, args.cli_runs, cli_python)
        res.setdefault("durations_s", {})[section] = round(time.perf_counter() - start, 1)
        res.setdefault("ran_at", {})[section] = f"{datetime.now(UTC):%Y-%m-%d %H:%M}"
        save()
    text, targets = render(res)
    text += closing_note(res, targets)
    results_md.write_text(text)
    print(f"bench: wrote {results_md.relative_to(REPO)}")


if __name__ == "__main__":
    main()
