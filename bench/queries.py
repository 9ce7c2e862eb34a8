"""Queries side by side: gpuscout's warehouse vs gpuhunt.query() vs SkyPilot's list_accelerators.

    python -m bench.queries --history bench/out/work/history.duckdb [--offers 100000]

The warehouse is the history bench's file (365 nights of 50 k offers, kept as history: that
provider is then closed) plus `market_offers(100 k)` merged through the load path as the
current offers. The same 100 k offers are exported to gpuhunt's and SkyPilot's catalog formats
(bench/catalogs.py). Each tool runs in its own child process, several times:

- filter: current offers of one GPU family with a VRAM floor and a USD per GPU-hour ceiling,
  cheapest per GPU-hour first, every match returned. gpuscout: `warehouse/queries/offers.sql`
  through `run_named` (the `gpuscout offers` query). gpuhunt: `gpuhunt.query(provider=…,
  gpu_name=…, min_gpu_memory=…)`; SkyPilot: `sky.catalog.list_accelerators(name_filter=…,
  clouds=…, all_regions=True)`. Neither anchor filters on the price per GPU, so their price
  ceiling (and SkyPilot's VRAM floor) is applied to their result in Python and the result
  sorted by price per GPU-hour: what a user of theirs has to write. The three must return the
  same number of offers.
- all: every GPU offer, cheapest per GPU-hour first (gpuscout: offers.sql unfiltered).
- recommend (gpuscout only): `gpuscout.pipeline.recommend.recommend` for a QLoRA fine-tune of
  Llama-3.1-8B on 100 M tokens (the README's demo job). Neither anchor can price a job; their
  figure to compare is `all`, the full listing a user would start a ranking of their own from.

cold = the first call in a fresh process (catalog load included, imports not); warm = the calls
after it. Offline: every child runs under bench/netguard.py, and the anchors' catalogs are local
files (see bench/README.md for exactly how each is pointed at them).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench import netguard
from bench.common import WORK, loadavg, peak_rss_mb, run_child, summary, timed

GPU, GPU_HUNT, GPU_SKY = "a100", "A100", "A100"
MIN_VRAM = 80.0
MAX_PER_GPU_HOUR = 2.0
MARKET_AT = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=366)
MODEL, METHOD, BATCH, TOKENS = "meta-llama/Llama-3.1-8B", "qlora", 4, 100_000_000
ALL_ROWS = 10_000_000  # the LIMIT of a query that returns every match


# -- the warehouse ------------------------------------------------------------------------------


def build_warehouse(history_db: Path, work: Path, n_offers: int) -> dict[str, Any]:
    """history + n current market offers, through the load path; returns what it holds."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from bench.catalogs import PROVIDERS, market_offers
    from gpuscout.core.catalog import GPUS_CSV
    from gpuscout.pipeline.profiles import profiles_table
    from gpuscout.pipeline.recommend.facts import store_facts
    from gpuscout.warehouse.connection import connect
    from gpuscout.warehouse.load import (
        merge_offers,
        replace_gpu_catalog,
        replace_provider_profiles,
        transaction,
    )
    from gpuscout.warehouse.segments import copy_warehouse, segments_bytes

    db = work / "queries.duckdb"
    copy_warehouse(history_db, db)
    offers = market_offers(n_offers, observed_at=MARKET_AT)
    pq.write_table(offers, work / "market.parquet")
    with connect(db) as con:
        replace_gpu_catalog(con, GPUS_CSV)
        replace_provider_profiles(con, profiles_table())
        # The history bench's provider leaves the market: its versions stay as history only.
        con.execute("UPDATE recent_versions SET valid_to = $1, closed_by_run = 'bench-close' "
                    "WHERE provider = 'bench' AND valid_to IS NULL", [MARKET_AT])
        for i, provider in enumerate(PROVIDERS):
            part = offers.filter(pc.equal(offers["provider"], provider))
            with transaction(con):
                merge_offers(con, part, provider=provider, run_id=f"market-{i}", complete=True)
        store_facts(con)  # what a refresh leaves at the end of its write session
        held = con.execute(
            "SELECT (SELECT count(*) FROM offer_versions), (SELECT count(*) FROM current_offers)"
        ).fetchone()
    assert held is not None
    return {"db": str(db), "history_rows": int(held[0]), "current_offers": int(held[1]),
            "size_mb": db.stat().st_size / 1e6, "segments_mb": segments_bytes(db) / 1e6}


# -- children -----------------------------------------------------------------------------------


def _offers_params(**given: Any) -> dict[str, Any]:
    """Every $parameter of offers.sql: the given ones, NULL for the rest (as the CLI passes)."""
    from gpuscout.warehouse.sqlfiles import query

    names = set(re.findall(r"\$([a-z_]+)", query("offers")))
    params = {name: None for name in names}
    params.update({"sort": "gpu-hour", "limit": ALL_ROWS})
    params.update({k: v for k, v in given.items() if k in names})
    return params


def child_gpuscout(work: Path, runs: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    from gpuscout.core.catalog import load_catalog
    from gpuscout.pipeline.recommend import RecommendRequest, recommend
    from gpuscout.sizing.job import Job
    from gpuscout.warehouse.connection import connect
    from gpuscout.warehouse.queries import run_named

    import_s = time.perf_counter() - t0
    filt = _offers_params(gpu=GPU, min_vram=MIN_VRAM, max_price=MAX_PER_GPU_HOUR)
    every = _offers_params()
    arch, job, _ = Job(model=MODEL, method=METHOD, batch_size=BATCH).resolve()
    request = RecommendRequest(tokens=TOKENS, now=MARKET_AT)
    out: dict[str, Any] = {"import_s": import_s}
    with connect(work / "queries.duckdb", read_only=True) as con:
        start = time.perf_counter()
        table = run_named(con, "offers", filt)
        out["filter_cold_s"] = time.perf_counter() - start
        samples, table = timed(lambda: run_named(con, "offers", filt), runs)
        out["filter"] = samples
        out["filter_count"] = table.num_rows
        samples, table = timed(lambda: run_named(con, "offers", every), max(3, runs // 4))
        out["all"] = samples
        out["all_count"] = table.num_rows
        start = time.perf_counter()
        catalog = load_catalog()
        result = recommend(con, arch, job, request, catalog)
        out["recommend_cold_s"] = time.perf_counter() - start
        samples, result = timed(lambda: recommend(con, arch, job, request, catalog), runs)
        out["recommend"] = samples
        out["recommend_offers"] = result.offers_evaluated
        out["recommend_shapes"] = result.shapes_evaluated
        best = result.ranked[0] if result.ranked else None
        out["recommend_best"] = (best.provider, best.offer_key, best.total_usd) if best else None
        out["recommend_sizing"] = _sizing_samples(con, arch, job, request, catalog, runs)
        out["recommend_reread"] = _reread_samples(con, arch, job, request, catalog, runs)
    return out


def _sizing_samples(con: Any, arch: Any, job: Any, request: Any, catalog: Any,
                    runs: int) -> list[float] | str:
    """The part of recommend() that sizes the job per machine shape (no offer is priced)."""
    try:
        from gpuscout.pipeline.recommend.candidates import candidates
        from gpuscout.pipeline.recommend.facts import use_facts
        from gpuscout.pipeline.recommend.plans import plan_shapes
        from gpuscout.pipeline.recommend.rank import offer_filters

        def sizing() -> Any:
            found = candidates(con, use_facts(con), offer_filters(request))
            return plan_shapes(arch, job, found.placements, request.tokens, catalog)

        return timed(sizing, runs)[0]
    except Exception as exc:  # recommend's internals moved: report, do not fail the bench
        return f"not measured: {exc!r}"


def _reread_samples(con: Any, arch: Any, job: Any, request: Any, catalog: Any,
                    runs: int) -> list[float] | str:
    """recommend() with its candidates read again each call (a process's first request over a
    warehouse and filters; the warm calls above reuse them)."""
    try:
        from gpuscout.pipeline.recommend import recommend
        from gpuscout.pipeline.recommend.candidates import forget_candidates

        def reread() -> Any:
            forget_candidates()
            return recommend(con, arch, job, request, catalog)

        return timed(reread, runs)[0]
    except Exception as exc:  # recommend's internals moved: report, do not fail the bench
        return f"not measured: {exc!r}"


def _per_gpu_sorted(items: list[Any], price: Any, count: Any) -> list[Any]:
    return sorted(items, key=lambda i: price(i) / count(i))


def child_gpuhunt(work: Path, runs: int) -> dict[str, Any]:
    import pyarrow.parquet as pq

    t0 = time.perf_counter()
    import gpuhunt
    from gpuhunt._internal import catalog as hunt_catalog
    from gpuhunt._internal.storage import CATALOG_V2_FIELDS

    import_s = time.perf_counter() - t0
    from bench.catalogs import PROVIDERS, export_gpuhunt

    root = work / "gpuhunt-bucket"
    shutil.rmtree(root, ignore_errors=True)
    counts = export_gpuhunt(pq.read_table(work / "market.parquet"), root,
                            fields=list(CATALOG_V2_FIELDS),
                            offline_providers=list(hunt_catalog.OFFLINE_PROVIDERS))
    # gpuhunt downloads its catalogs from GPUHUNT_CATALOG_URL with urllib: a file:// URL reads
    # the bucket layout written above, so default_catalog().load() runs unchanged, offline.
    os.environ["GPUHUNT_CATALOG_URL"] = root.resolve().as_uri()
    providers = sorted({PROVIDERS[p][2] for p in PROVIDERS})

    def filt() -> list[Any]:
        items = gpuhunt.query(provider=providers, gpu_name=GPU_HUNT, min_gpu_memory=MIN_VRAM)
        kept = [i for i in items if i.price / i.gpu_count <= MAX_PER_GPU_HOUR]
        return _per_gpu_sorted(kept, lambda i: i.price, lambda i: i.gpu_count)

    def every() -> list[Any]:
        items = gpuhunt.query(provider=providers, min_gpu_count=1)
        return _per_gpu_sorted(items, lambda i: i.price, lambda i: i.gpu_count)

    out: dict[str, Any] = {"import_s": import_s, "exported": counts}
    start = time.perf_counter()
    result = filt()
    out["filter_cold_s"] = time.perf_counter() - start
    samples, result = timed(filt, runs)
    out["filter"], out["filter_count"] = samples, len(result)
    samples, result = timed(every, max(3, runs // 4))
    out["all"], out["all_count"] = samples, len(result)
    return out


def child_skypilot(work: Path, runs: int) -> dict[str, Any]:
    import pyarrow.parquet as pq

    home = work / "sky-home"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    # SkyPilot resolves its catalog directory from SKY_RUNTIME_DIR (else ~) when sky.catalog is
    # imported; HOME and the AWS variables keep it from reading this machine's own config or
    # credentials. Set before the first `import sky`.
    os.environ.update({
        "SKY_RUNTIME_DIR": str(home), "HOME": str(home),
        "SKYPILOT_DISABLE_USAGE_COLLECTION": "1", "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(home / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(home / "no-aws-credentials"),
    })
    t0 = time.perf_counter()
    from sky import catalog as sky_catalog
    from sky.skylet import constants as sky_constants

    import_s = time.perf_counter() - t0
    from bench.catalogs import PROVIDERS, export_skypilot

    # A vms.csv with no .meta/<cloud>/vms.csv.md5 beside it counts as edited by the user, so
    # read_catalog() never replaces it from the hosted catalog (sky/catalog/common.py).
    catalog_dir = home / ".sky" / "catalogs" / sky_constants.CATALOG_SCHEMA_VERSION
    counts = export_skypilot(pq.read_table(work / "market.parquet"), catalog_dir)
    clouds = sorted({PROVIDERS[p][3] for p in PROVIDERS})

    def price(i: Any) -> float:
        return i.spot_price if i.price is None or math.isnan(i.price) else i.price

    def listing(name: str | None) -> list[Any]:
        found = sky_catalog.list_accelerators(gpus_only=True, name_filter=name, clouds=clouds,
                                              case_sensitive=False, all_regions=True)
        return [i for infos in found.values() for i in infos]

    def filt() -> list[Any]:
        kept = [i for i in listing(GPU_SKY) if (i.device_memory or 0) >= MIN_VRAM
                and price(i) / i.accelerator_count <= MAX_PER_GPU_HOUR]
        return _per_gpu_sorted(kept, price, lambda i: i.accelerator_count)

    def every() -> list[Any]:
        return _per_gpu_sorted(listing(None), price, lambda i: i.accelerator_count)

    out: dict[str, Any] = {"import_s": import_s, "exported": counts,
                           "catalog_dir": str(catalog_dir)}
    start = time.perf_counter()
    result = filt()
    out["filter_cold_s"] = time.perf_counter() - start
    samples, result = timed(filt, runs)
    out["filter"], out["filter_count"] = samples, len(result)
    samples, result = timed(every, max(3, runs // 4))
    out["all"], out["all_count"] = samples, len(result)
    return out


CHILDREN = {"gpuscout": child_gpuscout, "gpuhunt": child_gpuhunt, "skypilot": child_skypilot}


def bench_queries(history_db: Path, work: Path, *, n_offers: int, runs: int,
                  procs: int) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    held = build_warehouse(history_db, work, n_offers)
    held["build_s"] = time.perf_counter() - start
    tools: dict[str, Any] = {}
    for tool in CHILDREN:
        per_proc = []
        for _ in range(procs):
            try:
                per_proc.append(run_child("bench.queries", "--child", tool, "--work", str(work),
                                          "--runs", str(runs)))
            except RuntimeError as exc:
                per_proc = [{"error": str(exc)[-2000:]}]
                break
            print(f"queries {tool}: filter p50 "
                  f"{sorted(per_proc[-1]['filter'])[len(per_proc[-1]['filter']) // 2]:.4f} s",
                  flush=True)
        tools[tool] = _combine(per_proc)
    return {"warehouse": held, "tools": tools, "runs": runs, "procs": procs,
            "filter": {"gpu": GPU, "min_vram_gb": MIN_VRAM,
                       "max_usd_per_gpu_hour": MAX_PER_GPU_HOUR},
            "job": {"model": MODEL, "method": METHOD, "batch_size": BATCH, "tokens": TOKENS}}


def _combine(per_proc: list[dict[str, Any]]) -> dict[str, Any]:
    """Pool the warm samples of every process; the median of the cold ones."""
    if not per_proc or "error" in per_proc[0]:
        return per_proc[0] if per_proc else {"error": "not run"}
    first = per_proc[0]
    out: dict[str, Any] = {k: v for k, v in first.items() if not isinstance(v, list)}
    for key in ("filter", "all", "recommend", "recommend_sizing", "recommend_reread"):
        if isinstance(first.get(key), list):
            out[key] = summary([s for p in per_proc for s in p[key]])
    for key in ("filter_cold_s", "recommend_cold_s", "import_s"):
        if key in first:
            values = sorted(p[key] for p in per_proc)
            out[key] = values[len(values) // 2]
    out["peak_rss_mb"] = max(p["peak_rss_mb"] for p in per_proc)
    out["network_attempts"] = sorted({a for p in per_proc for a in p["network_attempts"]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--history", type=Path, default=WORK / "history.duckdb")
    ap.add_argument("--work", type=Path, default=WORK)
    ap.add_argument("--offers", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--procs", type=int, default=3)
    ap.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        netguard.install()
        result = CHILDREN[args.child](args.work, args.runs)
        result["peak_rss_mb"] = peak_rss_mb()
        result["network_attempts"] = netguard.attempts()
        print(json.dumps(result, default=str))
        return
    print(json.dumps({"loadavg": loadavg(), **bench_queries(
        args.history, args.work, n_offers=args.offers, runs=args.runs, procs=args.procs)},
        indent=1, default=str))


if __name__ == "__main__":
    main()
