"""Helpers shared by the side-by-side benches: child processes, peak memory, statistics."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import resource
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
OUT = BENCH / "out"
WORK = OUT / "work"


def peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM), MB; ru_maxrss where /proc is missing."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_child(module: str, *args: str, env: dict[str, str] | None = None,
              timeout: float = 1800, retries: int = 0) -> dict[str, Any]:
    """Run `python -m module args` with this interpreter; its last stdout line is JSON.

    The child runs in a session of its own, so a timeout kills what it started too (a Prefect
    server holding the pipes would otherwise keep the wait from ending). Before the kill it gets
    SIGUSR1: a child that registered `faulthandler` for it writes every thread's stack, kept in
    `bench/out/timeout-<module>-<n>.txt`. A child that times out is run again up to `retries`
    times; the result then says how often (`timed_out_runs`).
    """
    stacks: list[str] = []
    for attempt in range(retries + 1):
        proc = subprocess.Popen([sys.executable, "-m", module, *args], cwd=REPO,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, **(env or {})}, start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGUSR1)
            time.sleep(2)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            _, stderr = proc.communicate()
            OUT.mkdir(parents=True, exist_ok=True)
            kept = OUT / f"timeout-{module}-{attempt + 1}.txt"
            kept.write_text(stderr[-200_000:])
            stacks.append(str(kept.relative_to(REPO)))
            if attempt == retries:
                raise RuntimeError(f"{module} {' '.join(args)} ran past {timeout:.0f} s "
                                   f"{retries + 1} times") from None
            continue
        if proc.returncode != 0:
            raise RuntimeError(f"{module} {' '.join(args)} failed ({proc.returncode}):\n"
                               f"{stderr[-4000:]}")
        result = json.loads(stdout.strip().splitlines()[-1])
        if attempt:
            result["timed_out_runs"] = attempt
            result["timeout_stacks"] = stacks
        return result
    raise AssertionError("unreachable")


def timed(fn: Callable[[], Any], runs: int, budget_s: float = 45.0,
          min_runs: int = 3) -> tuple[list[float], Any]:
    """Wall seconds of `runs` calls of fn (fewer, but at least min_runs, once budget_s is
    spent: the slow anchors), and the last result."""
    samples, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - start)
        if len(samples) >= min_runs and sum(samples) > budget_s:
            break
    return samples, result


def pct(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), linear between closest ranks."""
    data = sorted(samples)
    if not data:
        return float("nan")
    if len(data) == 1:
        return data[0]
    pos = (len(data) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def summary(samples: Sequence[float]) -> dict[str, float]:
    return {"n": len(samples), "p50": statistics.median(samples), "p95": pct(samples, 95),
            "min": min(samples), "max": max(samples)}


def loadavg() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram_gb = float("nan")
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram_gb = int(line.split()[1]) / 1024**2
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "ram_gb": ram_gb,
            "os": platform.platform(), "python": platform.python_version()}


def git_commit() -> str:
    """HEAD and whether the tree differs from it (read-only: no index refresh)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO, text=True,
                              capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "--no-optional-locks", "status", "--porcelain",
                                "--untracked-files=no"], cwd=REPO, text=True,
                               capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head}{' + uncommitted changes' if dirty else ''}"


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"gpuscout": git_commit()}
    for name in ("duckdb", "pyarrow", "gpuhunt", "skypilot", "pandas"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out
