"""The nightly flow's wall time on Prefect's thread pool and on a local Dask cluster.

Two nights, each timed on both runners in a fresh process (the flow's temporary Prefect server
starts during a warm-up run that is not timed):

- **bundled**: every provider's bundled snapshots, replayed as they are (AWS in one task per
  region);
- **simulated**: a night of `--providers` providers (default 100): synthetic providers that
  each reuse a keyless adapter (fetch and parse of a real provider, their replayed captures),
  under their own name, with `--latency` seconds added to every replayed response, what a
  provider's API takes to answer. It measures how much of the night's waiting the runner
  overlaps, not any provider.

    python -m bench.runners --providers 100 --latency 0.5
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import signal
import statistics
import tempfile
import time
import types
from pathlib import Path
from typing import Any

from bench.common import REPO, run_child

# Keyless adapters whose bundled snapshots a synthetic provider can replay under its own name.
BASES = ("lambda", "runpod", "vastai", "scaleway", "lium", "crusoe", "nebius", "civo",
         "coreweave", "latitude")


def _renamed(parse: Any, name: str) -> Any:
    """The base adapter's parse, its offers and rejects under the synthetic provider's name."""
    def parse_as(captures: Any) -> Any:
        result = parse(captures)
        return result.model_copy(update={
            "offers": [o.model_copy(update={"provider": name}) for o in result.offers],
            "rejects": [r.model_copy(update={"provider": name}) for r in result.rejects]})
    return parse_as


def _simulate(n: int, latency_s: float) -> list[str]:
    """Register n synthetic providers (in this process) and slow every replayed response."""
    import gpuscout.adapters.registry as registry
    import gpuscout.pipeline.collect_parts as parts
    import gpuscout.pipeline.refresh as pipeline_refresh
    from gpuscout.adapters.archive import ReplayTransport

    real = registry.get_adapter
    fakes: dict[str, Any] = {}
    for i in range(n):
        base = real(BASES[i % len(BASES)])
        name = f"sim{i:03d}"
        fakes[name] = types.SimpleNamespace(
            NAME=name, SOURCE_KIND=base.SOURCE_KIND, CREDENTIALS=(),
            fetch=base.fetch, parse=_renamed(base.parse, name))
        registry.PROVIDERS[name] = BASES[i % len(BASES)]

    def get_adapter(name: str) -> Any:
        return fakes[name] if name in fakes else real(name)

    for module in (registry, pipeline_refresh, parts):
        module.get_adapter = get_adapter  # type: ignore[attr-defined]
    handle = ReplayTransport.handle_request

    def slow(self: ReplayTransport, request: Any) -> Any:
        time.sleep(latency_s)
        return handle(self, request)

    ReplayTransport.handle_request = slow  # type: ignore[method-assign]
    return list(fakes)


def child(runner: str, night: str, n: int, latency_s: float) -> dict[str, Any]:
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    from gpuscout.flows.refresh import run_nightly

    providers = _simulate(n, latency_s) if night == "simulated" else None
    with tempfile.TemporaryDirectory() as tmp:
        # warm-up: starts Prefect's temporary server (and the cluster code paths)
        run_nightly(runner, providers=["lambda"], db=str(Path(tmp) / "warm.duckdb"),
                    archive_root=None, offline=True, report_root=None)
        start = time.perf_counter()
        result = run_nightly(runner, providers=providers, db=str(Path(tmp) / "w.duckdb"),
                             archive_root=None, offline=True, report_root=None)
        wall = time.perf_counter() - start
    return {"runner": runner, "night": night, "wall_s": wall, "status": result["status"],
            "providers": len(result["providers"]), "offers": result["offers_loaded"]}


def bench_runners(n: int = 100, latency_s: float = 0.5, runs: int = 1) -> dict[str, Any]:
    out: dict[str, Any] = {"providers": n, "latency_s": latency_s, "runs": runs, "rows": []}
    for night in ("bundled", "simulated"):
        for runner in ("threads", "dask"):
            samples = [run_child("bench.runners", "--child", runner, night, str(n),
                                 str(latency_s), timeout=600, retries=1) for _ in range(runs)]
            row = dict(samples[-1])
            row["wall_s"] = statistics.median(s["wall_s"] for s in samples)
            row["all_s"] = [s["wall_s"] for s in samples]
            out["rows"].append(row)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", nargs=4, metavar=("RUNNER", "NIGHT", "N", "LATENCY"))
    ap.add_argument("--providers", type=int, default=100)
    ap.add_argument("--latency", type=float, default=0.5)
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    if args.child:
        # a hung child (run_child's timeout) writes every thread's stack before it is killed
        faulthandler.register(signal.SIGUSR1, all_threads=True)
        runner, night, n, latency = args.child
        print(json.dumps(child(runner, night, int(n), float(latency))))
        return
    os.chdir(REPO)
    print(json.dumps(bench_runners(args.providers, args.latency, args.runs)))


if __name__ == "__main__":
    main()
