"""Benchmark of the warehouse write path and of history growth.

    python -m bench.load [--offers 1000000] [--nights 30] [--night-offers 50000]

Writes bench/RESULTS_LOAD.md. Synthetic offers are built column-wise straight into the Arrow
schema the pipeline uses, so the timings are the load path alone (stage, hash, merge).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from gpuscout.warehouse.arrow import offer_schema
from gpuscout.warehouse.connection import connect
from gpuscout.warehouse.load import merge_offers, transaction

RESULTS = Path(__file__).parent / "RESULTS_LOAD.md"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def synthetic_offers(n: int, *, observed_at: datetime, churn_seed: int = 0,
                     churn: float = 0.0) -> pa.Table:
    """n offers of one provider; `churn` of them get a different price for `churn_seed`."""
    idx = pa.array(range(n), pa.int64())
    keys = pc.binary_join_element_wise("offer-", pc.cast(idx, pa.string()), "")
    base = pc.add(pc.multiply(pc.cast(pc.bit_wise_and(idx, 255), pa.float64()), 0.05), 0.5)
    if churn:
        period = max(1, round(1 / churn))
        changed = pc.equal(pc.call_function("modulo", [pc.add(idx, churn_seed), period]), 0)
        base = pc.if_else(changed, pc.add(base, 0.01 * (churn_seed + 1)), base)
    gpu_count = pc.cast(pc.add(pc.bit_wise_and(idx, 7), 1), pa.float64())
    price = pc.multiply(base, gpu_count)
    schema = offer_schema()
    cols = {
        "provider": pa.array(["bench"] * n), "offer_key": keys, "instance_type": keys,
        "gpu_label": pa.array(["H100 SXM"] * n), "gpu_id": pa.array(["h100-sxm-80gb"] * n),
        "gpu_count": gpu_count, "fractional_gpu": pa.array([False] * n),
        "vram_gb": pa.array([80.0] * n), "memory_type": pa.array(["HBM3"] * n),
        "form_factor": pa.array(["SXM"] * n), "interconnect": pa.array(["NVSwitch"] * n),
        "interconnect_gbps": pa.array([900.0] * n), "network": pa.array(["unknown"] * n),
        "network_gbps": pa.nulls(n, pa.float64()), "pricing_model": pa.array(["on_demand"] * n),
        "price_kind": pa.array(["listed"] * n), "currency": pa.array(["USD"] * n),
        "price_per_hour": price, "price_usd_per_hour": price,
        "price_usd_per_gpu_hour": pc.divide(price, gpu_count),
        "billing_increment_s": pa.nulls(n, pa.int64()),
        "region": pc.binary_join_element_wise("region-", pc.cast(pc.bit_wise_and(idx, 31),
                                                                 pa.string()), ""),
        "geography": pa.array(["us"] * n), "zone": pa.nulls(n, pa.string()),
        "vcpus": pa.nulls(n, pa.float64()), "ram_gb": pa.nulls(n, pa.float64()),
        "disk_gb": pa.nulls(n, pa.float64()), "availability": pa.array(["unknown"] * n),
        "available_count": pa.nulls(n, pa.int64()),
        "source_url": pa.array(["https://bench.invalid"] * n),
        "observed_at": pa.array([observed_at] * n, pa.timestamp("us", tz="UTC")),
        "provider_data": pa.array(["{}"] * n),
    }
    return pa.Table.from_pydict({name: cols[name] for name in schema.names}, schema=schema)


def _merge(con: duckdb.DuckDBPyConnection, table: pa.Table, run: str) -> float:
    start = time.perf_counter()
    with transaction(con):
        merge_offers(con, table, provider="bench", run_id=run, complete=True)
    return time.perf_counter() - start


def bench_load(n: int, workdir: Path) -> dict[str, float]:
    first = synthetic_offers(n, observed_at=T0)
    same = synthetic_offers(n, observed_at=T0 + timedelta(days=1))
    churned = synthetic_offers(n, observed_at=T0 + timedelta(days=2), churn=0.02, churn_seed=1)
    for name in ("load.duckdb", "rows.duckdb"):
        (workdir / name).unlink(missing_ok=True)  # every run starts from an empty warehouse
    with connect(workdir / "load.duckdb") as con:
        t_first = _merge(con, first, "r1")
        t_same = _merge(con, same, "r2")
        t_churn = _merge(con, churned, "r3")
        rows = con.execute("SELECT count(*) FROM offer_versions").fetchone()[0]
    # The row-by-row baseline on a slice, extrapolated linearly (a full run would take hours).
    k = min(n, 2_000)
    slice_rows = first.slice(0, k).to_pylist()
    con = duckdb.connect(str(workdir / "rows.duckdb"))
    con.register("first_slice", first.slice(0, 1))
    con.execute("CREATE TABLE t AS SELECT * FROM first_slice LIMIT 0")
    cols = first.column_names
    sql = f"INSERT INTO t VALUES ({', '.join('?' * len(cols))})"
    start = time.perf_counter()
    for r in slice_rows:
        con.execute(sql, [r[c] for c in cols])
    t_rows = (time.perf_counter() - start) * n / k
    con.close()
    return {"first": t_first, "same": t_same, "churn": t_churn, "rows": rows,
            "row_by_row_extrapolated": t_rows}


def _db_size_mb(path: Path) -> float:
    """The file a write session is working on (`<path>.next` while one is open), in MB."""
    staging = path.with_name(path.name + ".next")
    return (staging if staging.exists() else path).stat().st_size / 1e6


def bench_history(nights: int, n: int, workdir: Path,
                  size_every: int = 30) -> dict[str, Any]:
    """`nights` refreshes of n offers, 2 % of them repriced each night after the first.

    Returns the history rows, the file size (and its growth: a CHECKPOINT every `size_every`
    nights, outside the timed merges, then the size) and every night's merge time.
    """
    path = workdir / "history.duckdb"
    path.unlink(missing_ok=True)
    times = []
    sizes: dict[int, float] = {}
    changes = 0  # offers whose price differs from the night before, counted from the data
    previous = None
    with connect(path) as con:
        for night in range(nights):
            table = synthetic_offers(n, observed_at=T0 + timedelta(days=night),
                                     churn=0.02 if night else 0.0, churn_seed=night)
            price = table.column("price_per_hour")
            if previous is not None:
                changes += pc.sum(pc.not_equal(price, previous)).as_py() or 0
            previous = price
            times.append(_merge(con, table, f"n{night}"))
            if night % size_every == 0 or night == nights - 1:
                con.execute("CHECKPOINT")
                sizes[night + 1] = _db_size_mb(path)
        rows = con.execute("SELECT count(*) FROM offer_versions").fetchone()[0]
    return {"nights": nights, "offers": n, "rows": rows, "price_changes": changes,
            "first_s": times[0],
            "last_s": times[-1], "median_s": statistics.median(times),
            "first_churn_nights_s": statistics.median(times[1:6] or times),
            "last_nights_s": statistics.median(times[-5:]),
            "size_mb": path.stat().st_size / 1e6, "sizes_mb": sizes, "times": times}


class _TimedConnection:
    """A connection whose execute() adds up seconds per statement (warehouse/sql/<name>)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        from gpuscout.warehouse.sqlfiles import SQL_DIR

        self._con = con
        self._names = {p.read_text("utf-8"): p.stem for p in SQL_DIR.glob("*.sql")}
        self.seconds: dict[str, float] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)

    def _add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def execute(self, sql: str, params: Any = None) -> Any:
        start = time.perf_counter()
        result = self._con.execute(sql, params or [])
        name = self._names.get(sql, " ".join(sql.split())[:40])
        self._add(name, time.perf_counter() - start)
        return _TimedResult(result, name, self)

    def register(self, name: str, table: Any) -> Any:
        start = time.perf_counter()
        result = self._con.register(name, table)
        self._add("register (Arrow)", time.perf_counter() - start)
        return result


class _TimedResult:
    """A query result whose fetches count towards its statement (DuckDB runs a SELECT lazily)."""

    def __init__(self, result: Any, name: str, owner: _TimedConnection) -> None:
        self._result, self._name, self._owner = result, name, owner

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._result, attr)
        if not attr.startswith("fetch"):
            return value

        def fetch(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return value(*args, **kwargs)
            finally:
                self._owner._add(self._name, time.perf_counter() - start)
        return fetch


def profile_merge(n: int, workdir: Path) -> dict[str, dict[str, float]]:
    """Seconds per statement of merge_offers: a first load of n offers, then 2 % churn."""
    path = workdir / "profile.duckdb"
    path.unlink(missing_ok=True)
    out = {}
    with connect(path) as con:
        for label, table in (
                ("first load", synthetic_offers(n, observed_at=T0)),
                ("2 % churn", synthetic_offers(n, observed_at=T0 + timedelta(days=1),
                                               churn=0.02, churn_seed=1))):
            timed_con = _TimedConnection(con)
            start = time.perf_counter()
            with transaction(timed_con):  # type: ignore[arg-type]
                merge_offers(timed_con, table, provider="bench",  # type: ignore[arg-type]
                             run_id=label, complete=True)
            timed_con.seconds["total"] = time.perf_counter() - start
            out[label] = timed_con.seconds
    path.unlink(missing_ok=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--offers", type=int, default=1_000_000)
    ap.add_argument("--nights", type=int, default=30)
    ap.add_argument("--night-offers", type=int, default=50_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        load = bench_load(args.offers, Path(tmp))
        hist = bench_history(args.nights, args.night_offers, Path(tmp))
    naive_rows = hist["offers"] * hist["nights"]
    text = f"""# Warehouse load benchmark

Command: `python -m bench.load --offers {args.offers} --nights {args.nights} \
--night-offers {args.night_offers}`
Machine: {platform.machine()}, {platform.processor() or platform.platform()}, Python \
{platform.python_version()}, DuckDB {duckdb.__version__}; date {datetime.now(UTC):%Y-%m-%d}.

## Load path ({args.offers:,} synthetic offers, one provider, one transaction each)
| step | seconds |
|---|---|
| first load (all new) | {load['first']:.2f} |
| identical reload (all unchanged) | {load['same']:.2f} |
| reload with 2 % price churn | {load['churn']:.2f} |
| row-by-row INSERTs, extrapolated from 2,000 rows | {load['row_by_row_extrapolated']:.1f} |

History rows after the three loads: {load['rows']:,} (= offers + 2 % changed versions).

## History growth ({hist['nights']} nightly refreshes of {hist['offers']:,} offers, 2 % churn)
| measure | value |
|---|---|
| history rows | {hist['rows']:,} (one row per night would be {naive_rows:,}) |
| warehouse file | {hist['size_mb']:.1f} MB |
| merge time, first night | {hist['first_s']:.2f} s |
| merge time, last night | {hist['last_s']:.2f} s |
| merge time, median night | {hist['median_s']:.2f} s |
"""
    RESULTS.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
