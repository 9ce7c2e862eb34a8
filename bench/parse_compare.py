"""AWS offer-file parse: gpuscout's streaming parser vs gpuhunt's AWS parser, same local file.

    python -m bench.parse_compare [--sizes 100,1000,3000] [--runs 3] [--workdir DIR]

The file is bench/aws_stream.py's (`build_file`: the bundled us-east-1 offer file's preamble
and header, then real rows repeated to the size). Each run is a fresh child process, the two
parsers alternating, so that peak RSS (VmHWM) is that run's alone:

- gpuscout: bench/aws_stream.py's `parse` child (`aws.parse()` on a capture of the file).
- gpuhunt: `gpuhunt.providers.aws.AWSProvider(cache_path=<file>).get()`. With the file at
  `cache_path` its download is skipped; the two steps of `get()` that call the EC2 API for each
  offer - `_fill_gpu_details` (DescribeInstanceTypes) and `_with_spot_offers`
  (DescribeSpotPriceHistory) - are replaced by no-ops, so what is timed is its file parse:
  line prefilter, csv.DictReader, row filter, one CatalogItem per kept row, sort. The child
  also runs under bench/netguard.py (any connection attempt fails and is reported).
- duckdb (a ceiling, not a parser of offers): DuckDB's parallel `read_csv` of the same file on
  every CPU, every column as text, with gpuscout's row filter (ROW_FILTER and the product
  families) in the WHERE clause: a multi-threaded C++ CSV reader doing the same selection.

The big files are deleted as soon as a size is measured.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import netguard
from bench.common import loadavg, peak_rss_mb, run_child


def child_gpuhunt(path: Path) -> dict[str, Any]:
    netguard.install()
    from gpuhunt.providers import aws as hunt_aws

    provider = hunt_aws.AWSProvider(cache_path=str(path))
    provider._fill_gpu_details = lambda offers: None  # type: ignore[method-assign]
    provider._with_spot_offers = lambda offers: offers  # type: ignore[method-assign]
    baseline = peak_rss_mb()
    start = time.perf_counter()
    offers = provider.get()
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "offers": len(offers), "gpu_offers":
            sum(1 for o in offers if o.gpu_count), "peak_rss_mb": peak_rss_mb(),
            "baseline_rss_mb": baseline, "network_attempts": netguard.attempts()}


def child_duckdb(path: Path) -> dict[str, Any]:
    import os

    import duckdb

    from bench.aws_stream import PREAMBLE_LINES
    from gpuscout.adapters.aws import PRODUCT_FAMILIES, ROW_FILTER

    con = duckdb.connect(config={"threads": os.cpu_count() or 1})
    where = " AND ".join(f'"{c}" = ?' for c in ROW_FILTER)
    families = ", ".join("?" for _ in PRODUCT_FAMILIES)
    sql = (f"SELECT count(*) FROM read_csv(?, skip = {PREAMBLE_LINES - 1}, header = true, "
           "all_varchar = true, delim = ',', quote = '\"', escape = '\"', parallel = true) "
           f'WHERE {where} AND "Product Family" IN ({families})')
    params = [str(path), *ROW_FILTER.values(), *sorted(PRODUCT_FAMILIES)]
    baseline = peak_rss_mb()
    start = time.perf_counter()
    (rows,) = con.execute(sql, params).fetchone() or (0,)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "offers": rows, "threads": os.cpu_count(),
            "peak_rss_mb": peak_rss_mb(), "baseline_rss_mb": baseline}


def byte_scan_candidates(path: Path, chunk: int = 8 << 20) -> int:
    """PROTOTYPE of a faster prefilter (not gpuscout's parser; see RESULTS.md): find the rarest
    needle in 8 MB binary blocks with bytes.find and cut out only the lines that hold it,
    instead of decoding and testing every line. Counts the lines that hold every needle."""
    from gpuscout.adapters.aws import LINE_NEEDLES

    needles = [n.encode() for n in LINE_NEEDLES]
    first = needles[0][:-1]  # '"Linux': a last byte other than '"' keeps the search fast
    found, tail = 0, b""
    with path.open("rb") as f:
        while buf := f.read(chunk):
            if tail:
                buf = tail + buf
            end = buf.rfind(b"\n") + 1
            tail = buf[end:]
            i = buf.find(first, 0, end)
            while i >= 0:
                start = buf.rfind(b"\n", 0, i) + 1
                stop = buf.find(b"\n", i, end) + 1
                line = buf[start:stop]
                if all(n in line for n in needles):
                    found += 1
                i = buf.find(first, stop, end)
    return found


def child_probe(path: Path) -> dict[str, Any]:
    """The prefilter stage alone: gpuscout's line loop (`_candidate_lines` over decoded lines)
    vs the byte-scan prototype, on the same file: the ceiling a faster prefilter could reach."""
    import io

    from gpuscout.adapters.aws import _candidate_lines

    out: dict[str, Any] = {}
    start = time.perf_counter()
    with path.open("rb") as raw, io.TextIOWrapper(raw, encoding="utf-8", newline="") as text:
        out["line_loop_lines"] = sum(1 for _ in _candidate_lines(text))
    out["line_loop_s"] = time.perf_counter() - start
    start = time.perf_counter()
    out["byte_scan_lines"] = byte_scan_candidates(path)
    out["byte_scan_s"] = time.perf_counter() - start
    return out


def measure(tool: str, path: Path, sha: str) -> dict[str, Any]:
    if tool == "gpuscout":
        from bench.aws_stream import measure as stream_measure

        return stream_measure("parse", path, sha)
    return run_child("bench.parse_compare", "--child", tool, "--file", str(path))


def bench_parse(sizes: list[int], runs: int, workdir: Path | None) -> dict[str, Any]:
    from bench.aws_stream import build_file

    rows: list[dict[str, Any]] = []
    for size in sizes:
        free = shutil.disk_usage(workdir or tempfile.gettempdir()).free
        if free < size * 1_000_000 * 2 + 2_000_000_000:
            rows.append({"size_mb": size, "skipped": f"only {free / 1e9:.1f} GB free"})
            continue
        work = Path(tempfile.mkdtemp(prefix="gpuscout-parse-bench-", dir=workdir))
        try:
            path = work / "index.csv"
            n_bytes, n_rows, sha = build_file(path, size)
            samples: dict[str, list[dict[str, Any]]] = {"gpuscout": [], "gpuhunt": [],
                                                        "duckdb": []}
            for _ in range(runs):
                for tool in samples:
                    m = measure(tool, path, sha)
                    samples[tool].append(m)
                    print(f"parse {size} MB {tool}: {n_bytes / 1e6 / m['seconds']:.0f} MB/s, "
                          f"peak RSS {m['peak_rss_mb']:.0f} MB", flush=True)
            try:
                probe = run_child("bench.parse_compare", "--child", "probe", "--file",
                                  str(path))
                rows.append({"size_mb": size, "bytes": n_bytes, "tool": "prefilter probe",
                             **probe})
            except RuntimeError as exc:
                rows.append({"size_mb": size, "tool": "prefilter probe", "error": str(exc)})
            for tool, ms in samples.items():
                secs = [m["seconds"] for m in ms]
                rows.append({
                    "size_mb": size, "bytes": n_bytes, "rows": n_rows, "tool": tool,
                    "runs": len(ms), "seconds": statistics.median(secs),
                    "seconds_all": secs, "mb_s": n_bytes / 1e6 / statistics.median(secs),
                    "peak_rss_mb": statistics.median(m["peak_rss_mb"] for m in ms),
                    "baseline_rss_mb": statistics.median(m["baseline_rss_mb"] for m in ms),
                    **({"helper_peak_rss_mb": statistics.median(m["helper_peak_rss_mb"]
                                                                for m in ms)}
                       if all("helper_peak_rss_mb" in m for m in ms) else {}),
                    "offers": ms[-1]["offers"],
                    "network_attempts": sorted({a for m in ms
                                                for a in m.get("network_attempts", [])}),
                })
        finally:
            shutil.rmtree(work, ignore_errors=True)  # never leave GBs behind
    return {"sizes": rows, "loadavg": loadavg()}


CHILDREN = {"gpuhunt": child_gpuhunt, "duckdb": child_duckdb, "probe": child_probe}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,1000,3000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--child", choices=list(CHILDREN), help=argparse.SUPPRESS)
    ap.add_argument("--file", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child](args.file)))
        return
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    print(json.dumps(bench_parse(sizes, args.runs, args.workdir), indent=1))


if __name__ == "__main__":
    main()
