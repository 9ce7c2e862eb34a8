"""What a write session costs before any work, before and after history segments.

A refresh never writes the published file: it copies it to `<file>.next`, migrates, works,
CHECKPOINTs, fsyncs and renames the copy over the published file (`warehouse.connection`). The
copy used to carry the whole history; now a session moves closed versions to immutable Parquet
segments beside the file once there are `SEAL_ROWS` of them (`warehouse.segments`), so the copy
carries the open versions and at most that many closed ones.

For each size this bench builds a migrated warehouse of 100 k open offers (the load path's
synthetic offers) and closed versions of them until the file reaches about that size (prices
random and `provider_data` an md5, so the rows do not compress away), all in the file as the
old design kept them. It times, median of `runs`:

- an empty write session with sealing held off: what every refresh paid before;
- the bare `shutil.copyfile` + fsync of that file, and the same empty session run in place
  (DuckDB's own transaction on the file, no copy);
- the one session that seals the whole history (what the first refresh after the upgrade pays,
  once) and the sizes of the file and of the segments after it;
- an empty write session after the seal: what every refresh pays now.

The page cache is warm (the file was just written), the nightly case on a machine that also
serves the readers.

    python -m bench.copy_cost --sizes 100,1000,10000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb

from bench.common import WORK

OPEN_OFFERS = 100_000
CHUNK = 5  # closed versions added per open offer per step: 500 k rows (~30 MB)
NEVER = 10**15  # a seal threshold no warehouse reaches


def build(path: Path, size_mb: int) -> tuple[float, int]:
    """A warehouse of OPEN_OFFERS open versions and closed ones up to ~size_mb, all in the
    file; its size in MB and how many closed versions it holds."""
    from bench.load import T0, synthetic_offers
    from gpuscout.warehouse.connection import connect
    from gpuscout.warehouse.load import merge_offers, transaction

    _remove(path)
    with connect(path, seal_rows=NEVER) as con, transaction(con):
        merge_offers(con, synthetic_offers(OPEN_OFFERS, observed_at=T0 + timedelta(days=3650)),
                     provider="bench", run_id="open", complete=True)
    con = duckdb.connect(str(path))
    closed = 0
    try:
        while path.stat().st_size / 1e6 < size_mb:
            step = closed // (OPEN_OFFERS * CHUNK)
            con.execute(f"""
                INSERT INTO recent_versions
                SELECT v.* REPLACE (
                    random() * 10 AS price_per_hour,
                    json_object('bench', md5(random()::VARCHAR)) AS provider_data,
                    TIMESTAMPTZ '{T0.isoformat()}' + to_days(({step} * {CHUNK} + r.range)::INT)
                        AS valid_from,
                    TIMESTAMPTZ '{T0.isoformat()}' + to_days(({step} * {CHUNK} + r.range + 1)::INT)
                        AS valid_to,
                    'closed' AS closed_by_run)
                FROM recent_versions v, range({CHUNK}) r
                WHERE v.valid_to IS NULL""")
            con.execute("CHECKPOINT")
            closed += OPEN_OFFERS * CHUNK
    finally:
        con.close()
    return path.stat().st_size / 1e6, closed


def _remove(path: Path) -> None:
    from gpuscout.warehouse.segments import segments_dir

    for suffix in ("", ".lock", ".next", ".next.compact", ".wal"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    shutil.rmtree(segments_dir(path), ignore_errors=True)


def _session(path: Path, seal_rows: int) -> float:
    from gpuscout.warehouse.connection import connect

    start = time.perf_counter()
    with connect(path, seal_rows=seal_rows) as con:
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


def _median(fn: Any, runs: int) -> tuple[float, list[float]]:
    samples = [fn() for _ in range(runs)]
    return statistics.median(samples), samples


def _measure(path: Path, size: int, runs: int) -> dict[str, Any]:
    from gpuscout.warehouse.segments import SEAL_ROWS, segments_bytes

    actual, closed = build(path, size)
    row: dict[str, Any] = {"target_mb": size, "file_mb": round(actual, 1),
                           "closed_versions": closed}
    row["before_s"], row["before_all"] = _median(lambda: _session(path, NEVER), runs)
    row["copy_s"], row["copy_all"] = _median(lambda: _copy(path), runs)
    row["in_place_s"], row["in_place_all"] = _median(lambda: _in_place(path), runs)
    row["copy_mb_s"] = actual / row["copy_s"]
    row["seal_s"] = _session(path, SEAL_ROWS)
    row["sealed_file_mb"] = path.stat().st_size / 1e6
    row["segments_mb"] = segments_bytes(path) / 1e6
    row["session_s"], row["session_all"] = _median(lambda: _session(path, SEAL_ROWS), runs)
    _remove(path)
    return row


def bench_copy(sizes_mb: list[int], runs: int = 3) -> dict[str, Any]:
    from gpuscout.warehouse.segments import SEAL_ROWS

    WORK.mkdir(parents=True, exist_ok=True)
    return {"runs": runs, "seal_rows": SEAL_ROWS, "open_offers": OPEN_OFFERS,
            "sizes": [_measure(WORK / f"copy_{size}.duckdb", size, runs) for size in sizes_mb]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    print(json.dumps(bench_copy([int(s) for s in args.sizes.split(",")], args.runs)))


if __name__ == "__main__":
    main()
