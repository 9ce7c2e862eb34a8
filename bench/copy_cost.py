"""What a write session costs before any work: the copy-and-swap of `warehouse.connection`.

A refresh never writes the published file: it copies it to `<file>.next`, migrates, works,
CHECKPOINTs, fsyncs and renames the copy over the published file. This bench builds warehouses
of about 100 MB, 1 GB and 10 GB (the migrated schema plus a table of incompressible doubles, so
the file is as large on disk as it says) and times an empty write session on each: everything
the design adds to a refresh, and nothing a refresh does. The bare `shutil.copyfile` of the
same file is timed beside it, as is the same empty session run in place (`connect` on the file
itself, DuckDB's own transaction and WAL, no copy), the design the issue names as the
alternative. Median of `runs`; the page cache is warm (the file was just written), which is the
nightly case on a machine that also serves the readers.

    python -m bench.copy_cost --sizes 100,1000,10000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import duckdb

from bench.common import WORK

BYTES_PER_ROW = 8  # one DOUBLE; random values do not compress


def build(path: Path, size_mb: int) -> float:
    """A migrated warehouse padded to ~size_mb with random doubles; its size in MB."""
    from gpuscout.warehouse.connection import connect

    path.unlink(missing_ok=True)
    with connect(path):
        pass  # creates and migrates the schema through the normal write session
    rows = size_mb * 1_000_000 // BYTES_PER_ROW
    con = duckdb.connect(str(path))
    try:
        con.execute("CREATE TABLE bench_padding AS SELECT random() AS x FROM range($1)", [rows])
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return path.stat().st_size / 1e6


def _session(path: Path) -> float:
    from gpuscout.warehouse.connection import connect

    start = time.perf_counter()
    with connect(path) as con:
        con.execute("SELECT 1").fetchone()
    return time.perf_counter() - start


def _copy(path: Path) -> float:
    target = path.with_suffix(".copy")
    start = time.perf_counter()
    shutil.copyfile(path, target)
    with open(target, "rb") as f:
        os.fsync(f.fileno())
    elapsed = time.perf_counter() - start
    target.unlink()
    return elapsed


def _in_place(path: Path) -> float:
    start = time.perf_counter()
    con = duckdb.connect(str(path))
    try:
        con.execute("BEGIN TRANSACTION")
        con.execute("SELECT 1").fetchone()
        con.execute("COMMIT")
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return time.perf_counter() - start


def bench_copy(sizes_mb: list[int], runs: int = 3) -> dict[str, Any]:
    WORK.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"runs": runs, "sizes": []}
    for size in sizes_mb:
        path = WORK / f"copy_{size}.duckdb"
        actual = build(path, size)
        row: dict[str, Any] = {"target_mb": size, "file_mb": round(actual, 1)}
        for name, fn in (("session_s", _session), ("copy_s", _copy), ("in_place_s", _in_place)):
            samples = [fn(path) for _ in range(runs)]
            row[name] = statistics.median(samples)
            row[name.replace("_s", "_all")] = samples
        row["copy_mb_s"] = actual / row["copy_s"]
        out["sizes"].append(row)
        for suffix in ("", ".lock", ".next"):
            Path(str(path) + suffix).unlink(missing_ok=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    print(json.dumps(bench_copy([int(s) for s in args.sizes.split(",")], args.runs)))


if __name__ == "__main__":
    main()
