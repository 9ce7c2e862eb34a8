"""Probes: the proposed fixes for the targets not met, measured without changing shared code.

    python -m bench.probes [--offers 1000000] [--nights 60] [--db bench/out/work/queries.duckdb]

Each probe applies a proposed change by monkeypatching it into this process only (the SQL text
that `gpuscout.warehouse.load.statement` returns, or a method of a sizing class) and measures
it next to the code as it is, on the same data, in the same run. Nothing here is shipped; the
closing note of RESULTS.md names the module and owner for each change.

- load: a first load of N offers (bench/load.py's synthetic offers) with `stage_offers` hashing
  the typed columns with DuckDB's `hash()` instead of md5 over text casts, with the ART index
  `offer_versions_key` dropped, and both.
- history: nightly refreshes as in bench/load.py, with `merge_touch_unchanged` replaced by an
  update of the current-state columns only where they differ (so an unchanged night writes no
  row; `last_seen_at` would come from the provider's last observation in the run log).
- recommend: `recommend()` over the queries warehouse with `Architecture.blocks()` memoized.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import WORK, run_child, summary, timed

HASH_COLUMNS = (
    "instance_type, gpu_label, gpu_id, gpu_count, fractional_gpu, vram_gb, memory_type, "
    "form_factor, interconnect, interconnect_gbps, network, network_gbps, pricing_model, "
    "price_kind, currency, price_per_hour, billing_increment_s, region, geography, zone, "
    "vcpus, ram_gb, disk_gb")
STAGE_WITH_HASH = (
    "CREATE OR REPLACE TEMP TABLE stage AS SELECT i.*, "
    f"CAST(hash({HASH_COLUMNS}) AS VARCHAR) AS row_hash FROM incoming i")
TOUCH_IF_DIFFERENT = """
UPDATE recent_versions AS v
SET availability = s.availability, available_count = s.available_count,
    provider_data = s.provider_data, source_url = s.source_url,
    price_usd_per_hour = s.price_usd_per_hour, price_usd_per_gpu_hour = s.price_usd_per_gpu_hour
FROM stage s
WHERE v.provider = $1 AND v.valid_to IS NULL
  AND v.offer_key = s.offer_key AND v.row_hash = s.row_hash
  AND (v.availability IS DISTINCT FROM s.availability
       OR v.available_count IS DISTINCT FROM s.available_count
       OR v.provider_data IS DISTINCT FROM CAST(s.provider_data AS JSON)
       OR v.source_url IS DISTINCT FROM s.source_url
       OR v.price_usd_per_hour IS DISTINCT FROM s.price_usd_per_hour)
"""


@contextmanager
def patched_statements(replace: dict[str, str]):
    """`gpuscout.warehouse.load.statement` gives `replace[name]`, not warehouse/sql/<name>.sql."""
    import gpuscout.warehouse.load as load_module

    original = load_module.statement
    load_module.statement = lambda name: replace.get(name) or original(name)
    try:
        yield
    finally:
        load_module.statement = original


def probe_load(n: int, runs: int) -> dict[str, Any]:
    from bench.load import T0, synthetic_offers
    from gpuscout.warehouse.connection import connect
    from gpuscout.warehouse.load import merge_offers, transaction

    table = synthetic_offers(n, observed_at=T0)
    variants = {
        "as is": ({}, False),
        "hash() in stage_offers": ({"stage_offers": STAGE_WITH_HASH}, False),
        "no offer_versions_key index": ({}, True),
        "hash() + no index": ({"stage_offers": STAGE_WITH_HASH}, True),
    }
    out: dict[str, Any] = {}
    for _ in range(runs):  # variants interleaved, so that a busy spell hits them alike
        for label, (replace, drop_index) in variants.items():
            with tempfile.TemporaryDirectory() as tmp, connect(Path(tmp) / "p.duckdb") as con:
                if drop_index:
                    con.execute("DROP INDEX IF EXISTS offer_versions_key")
                with patched_statements(replace):
                    start = time.perf_counter()
                    with transaction(con):
                        merge_offers(con, table, provider="bench", run_id="p", complete=True)
                    out.setdefault(label, []).append(time.perf_counter() - start)
    return {"offers": n, "seconds": out,
            "median_s": {k: statistics.median(v) for k, v in out.items()}}


def probe_history(nights: int, n: int) -> dict[str, Any]:
    from bench.load import bench_history

    out: dict[str, Any] = {"nights": nights, "offers": n}
    for label, replace in (("as is", {}),
                           ("touch only what differs", {"merge_touch_unchanged":
                                                        TOUCH_IF_DIFFERENT})):
        with tempfile.TemporaryDirectory() as tmp, patched_statements(replace):
            r = bench_history(nights, n, Path(tmp), size_every=nights)
        t = r["times"]
        out[label] = {"nights_2_6_s": statistics.median(t[1:6]),
                      "last_5_s": statistics.median(t[-5:]), "rows": r["rows"], "times": t}
    return out


def child_recommend(db: Path, runs: int) -> dict[str, Any]:
    from functools import cache

    from gpuscout.core.catalog import load_catalog
    from gpuscout.pipeline.recommend import RecommendRequest, recommend
    from gpuscout.sizing import architectures
    from gpuscout.sizing.job import Job
    from gpuscout.warehouse.connection import connect

    arch, job, _ = Job(model="meta-llama/Llama-3.1-8B", method="qlora",
                       batch_size=4).resolve()
    request = RecommendRequest(tokens=100_000_000,
                               now=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=366))
    catalog = load_catalog()
    out: dict[str, Any] = {}
    with connect(db, read_only=True) as con:
        recommend(con, arch, job, request, catalog)
        out["as is"] = timed(lambda: recommend(con, arch, job, request, catalog), runs)[0]
        original = architectures.Architecture.blocks
        cached = cache(original)
        architectures.Architecture.blocks = lambda self: cached(self)  # type: ignore[method-assign]
        recommend(con, arch, job, request, catalog)
        out["Architecture.blocks memoized"] = timed(
            lambda: recommend(con, arch, job, request, catalog), runs)[0]
        architectures.Architecture.blocks = original  # type: ignore[method-assign]
    return out


def bench_probes(offers: int, load_runs: int, nights: int, night_offers: int, db: Path,
                 runs: int) -> dict[str, Any]:
    out: dict[str, Any] = {"load": probe_load(offers, load_runs)}
    print(f"probe load: {out['load']['median_s']}", flush=True)
    out["history"] = probe_history(nights, night_offers)
    print("probe history: " + ", ".join(
        f"{k}: {v['nights_2_6_s']:.2f} → {v['last_5_s']:.2f} s" for k, v in
        out["history"].items() if isinstance(v, dict)), flush=True)
    if db.exists():
        try:
            rec = run_child("bench.probes", "--child", "recommend", "--db", str(db),
                            "--runs", str(runs))
            out["recommend"] = {k: summary(v) for k, v in rec.items()}
            print(f"probe recommend: { {k: v['p50'] for k, v in out['recommend'].items()} }",
                  flush=True)
        except RuntimeError as exc:
            out["recommend"] = {"error": str(exc)[-2000:]}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--offers", type=int, default=1_000_000)
    ap.add_argument("--load-runs", type=int, default=3)
    ap.add_argument("--nights", type=int, default=60)
    ap.add_argument("--night-offers", type=int, default=50_000)
    ap.add_argument("--db", type=Path, default=WORK / "queries.duckdb")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--child", choices=["recommend"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child_recommend(args.db, args.runs)))
        return
    print(json.dumps(bench_probes(args.offers, args.load_runs, args.nights, args.night_offers,
                                  args.db, args.runs), indent=1, default=str))


if __name__ == "__main__":
    main()
