"""bench/RESULTS.md from the JSON the sections wrote (bench/out/results.json)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

TARGET_PARSE_RATIO = 3.0
TARGET_FLAT_MB = 5.0  # peak RSS growth allowed from the smallest file to the largest
TARGET_LOAD_S = 1.0
TARGET_NIGHT_S = 0.3  # the nightly merge of 50 k offers, every night of the year
TARGET_RECOMMEND_P95_S = 0.080
TARGET_COPY_S = 1.0  # the refresh's copy-and-swap, per write session
TARGET_QUERY_S = 0.050
TARGET_ANCHOR_RATIO = 5.0
TARGET_HELP_S = 0.3


def _f(x: Any, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, int):
        return f"{x:,}"
    return f"{x:,.{digits}f}"


def _ms(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds * 1000:,.1f} ms"


def _ratio(a: float | None, b: float | None) -> str:
    """a / b as '×N'."""
    if not a or not b:
        return "–"
    r = a / b
    return f"×{r:,.1f}" if r >= 1 else f"×{r:.2f}"


def _mark(ok: bool | None) -> str:
    return {True: "**met**", False: "**not met**", None: "not measured"}[ok]


def render(res: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    meta = res["meta"]
    m, v = meta["machine"], meta["versions"]
    lines = [
        "# gpuscout benchmarks, side by side with gpuhunt and SkyPilot",
        "",
        f"Produced by `{meta['command']}` (see bench/README.md). Nothing here runs in the test "
        "suite.",
        "",
        "| | |",
        "|---|---|",
        f"| date | {meta['started']} → {meta['finished']} (UTC) |",
        f"| machine | {m['cpu']}, {m['cores']} cores, {m['ram_gb']:.0f} GB RAM; {m['os']}; "
        f"Python {m['python']} |",
        f"| load average | {_f(meta.get('loadavg_start'))} at the start, "
        f"{_f(meta.get('loadavg_end'))} at the end (1-minute) |",
        f"| gpuscout | {v['gpuscout']} |",
        f"| libraries | duckdb {v['duckdb']}, pyarrow {v['pyarrow']}, gpuhunt {v['gpuhunt']}, "
        f"skypilot {v['skypilot']} (pandas {v['pandas']}) |",
        "",
        "The machine may be shared with other work (test suites, CI), as the load average "
        "shows; that is why medians over several runs are reported, and p95 next to p50.",
        "",
    ]
    targets: list[dict[str, Any]] = []
    lines += _parse(res.get("parse"), targets)
    lines += _load(res.get("load"), targets)
    lines += _history(res.get("history"), targets)
    lines += _queries(res.get("queries"), targets)
    lines += _cli(res.get("cli"), targets)
    lines += _copy(res.get("copy"), targets)
    lines += _runners(res.get("runners"), targets)
    lines += ["## Targets", "", "| target | measured | status | what limits it |",
              "|---|---|---|---|"]
    for t in targets:
        lines.append(f"| {t['target']} | {t['measured']} | {_mark(t['ok'])} | {t['why']} |")
    lines += [""] + res.get("notes", [])
    return "\n".join(lines) + "\n", targets


# -- sections -----------------------------------------------------------------------------------


def _parse(sec: dict[str, Any] | None, targets: list[dict[str, Any]]) -> list[str]:
    out = ["## AWS offer-file parse", ""]
    if not sec:
        targets.append({"target": PARSE_TARGET, "measured": "–",
                        "ok": None, "why": "section not run"})
        return out + ["Not run.", ""]
    rows = sec["sizes"]
    out += [
        "Same local file for both parsers, built by `bench/aws_stream.py::build_file` (the "
        "bundled us-east-1 offer file's preamble and header, then real rows repeated). Every "
        "run is a fresh process, the two parsers alternating; median of the runs. Peak RSS is "
        "the child's VmHWM (imports included); 'before' is the same figure once the modules "
        "are imported. gpuhunt: `AWSProvider(cache_path=file).get()` with its two EC2 API "
        "steps replaced by no-ops (see bench/README.md); it keeps every on-demand Linux row "
        "(CPU machines too), gpuscout only GPU machines, de-duplicated. gpuscout scans a big "
        "file on two processes (a forked helper; its peak RSS is the 'helper' figure). DuckDB "
        "is a ceiling, not an offer parser: its parallel `read_csv` of the same file on every "
        "CPU, all columns as text, with gpuscout's row filter in the WHERE clause ('offers' "
        "is its count of rows).",
        "",
        "| file | parser | runs | seconds (median) | MB/s | peak RSS | RSS before | offers "
        "| gpuscout ÷ gpuhunt | gpuscout ÷ DuckDB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    by_size: dict[int, dict[str, dict[str, Any]]] = {}
    for r in rows:
        by_size.setdefault(r["size_mb"], {})[r.get("tool", "")] = r
    ratios: list[float] = []
    judged: list[float] = []  # the sizes the target names
    peaks: list[tuple[int, float]] = []
    for size, tools in sorted(by_size.items()):
        if "skipped" in tools.get("", {}):
            out.append(f"| {size:,} MB | – | – | – | – | – | – | – | skipped: "
                       f"{tools['']['skipped']} | |")
            continue
        g, h, d = tools.get("gpuscout"), tools.get("gpuhunt"), tools.get("duckdb")
        ratio = g["mb_s"] / h["mb_s"] if g and h else None
        ceiling = g["mb_s"] / d["mb_s"] if g and d else None
        if ratio:
            ratios.append(ratio)
            if size >= TARGET_PARSE_FROM_MB:
                judged.append(ratio)
        if g:
            peaks.append((size, g["peak_rss_mb"]))
        for tool, r in (("gpuscout", g), ("gpuhunt", h), ("DuckDB read_csv", d)):
            if not r:
                continue
            first = tool == "gpuscout"
            mark = _ratio(ratio, 1.0) if ratio and first else ""
            near = f"{ceiling:.0%} of DuckDB's MB/s" if ceiling and first else ""
            helper = (f" (helper {r['helper_peak_rss_mb']:.0f} MB)"
                      if first and r.get("helper_peak_rss_mb") else "")
            out.append(
                f"| {r['bytes'] / 1e6:,.0f} MB | {tool} | {r['runs']} | {r['seconds']:.2f} | "
                f"{r['mb_s']:.0f} | {r['peak_rss_mb']:.0f} MB{helper} | "
                f"{r['baseline_rss_mb']:.0f} MB | {r['offers']:,} | {mark} | {near} |")
    probes = [r for r in rows if r.get("tool") == "prefilter probe" and "line_loop_s" in r]
    if probes:
        out += [
            "",
            "The prefilter stage alone (finding the lines that can hold a kept row), one "
            "process: the text-line loop (`_candidate_lines` over decoded lines, what the parser "
            "falls back to from a block it cannot vouch for) vs the byte scan of 8 MB binary "
            "blocks with `bytes.find` that decodes only the lines holding the rarest needle "
            "(`parse_compare.byte_scan_candidates`, the idea of the parser's `_scan_block`). "
            "One run each:",
            "",
            "| file | line loop MB/s | byte-scan prototype MB/s | same lines |",
            "|---|---|---|---|",
        ]
        for p in probes:
            mb = p["bytes"] / 1e6
            out.append(f"| {mb:,.0f} MB | {mb / p['line_loop_s']:.0f} | "
                       f"{mb / p['byte_scan_s']:.0f} | "
                       f"{'yes' if p['line_loop_lines'] == p['byte_scan_lines'] else 'NO'} |")
    attempts = sorted({a for r in rows for a in r.get("network_attempts", [])})
    out += ["", f"Network attempts refused during the gpuhunt runs: "
                f"{', '.join(attempts) if attempts else 'none'}."
            + (f" Load average (1 min) when the section ended: {sec['loadavg']:.2f}."
               if isinstance(sec.get("loadavg"), int | float) else ""), ""]
    flat = max(p for _, p in peaks) - min(p for _, p in peaks) if len(peaks) > 1 else None
    worst = min(ratios) if ratios else None
    worst_judged = min(judged) if judged else None
    targets.append({
        "target": PARSE_TARGET,
        "measured": (f"×{worst:.2f}–×{max(ratios):.2f} of gpuhunt's MB/s; peak RSS "
                     + (f"{peaks[0][1]:.0f} MB" if flat is not None and flat < 1 else
                        f"{min(p for _, p in peaks):.0f}–{max(p for _, p in peaks):.0f} MB")
                     + f" at every size ({', '.join(f'{s:,}' for s, _ in peaks)} MB)")
        if worst else "–",
        "ok": None if worst_judged is None else (worst_judged >= TARGET_PARSE_RATIO
                                                 and flat is not None and flat <= TARGET_FLAT_MB),
        "why": PARSE_WHY,
    })
    return out


PARSE_TARGET = "parse ≥ 3× gpuhunt's MB/s at 1 GB and 3 GB, peak RSS flat"
TARGET_PARSE_FROM_MB = 1000  # the sizes the ratio is judged at
PARSE_WHY = (
    "gpuhunt decodes every line and tests it for substrings before `csv`; gpuscout scans 2 MB "
    "binary blocks (they stay in the CPU cache) with a compiled search for the rarest needle, "
    "checks the others on the candidate line as bytes, decodes only the values it keeps, reads "
    "them without `csv` when each field is a plain quoted value, and on a big file shares the "
    "blocks with a forked helper process (2 cores here) while it scans ahead, handing the rows "
    "on in file order. "
    "Memory holds one block per process. On a shared 2-core machine the ratio moves with the "
    "load (the section's load average is under its table): another busy process takes the "
    "helper's core.")


def _load(sec: dict[str, Any] | None, targets: list[dict[str, Any]]) -> list[str]:
    out = ["## Load: the warehouse load path vs row-by-row inserts", ""]
    if not sec:
        targets.append({"target": "1 M offers loaded in ≤ 1 s", "measured": "–", "ok": None,
                        "why": "section not run"})
        return out + ["Not run.", ""]
    runs = sec["runs"]

    def med(key: str) -> float:
        values = sorted(r[key] for r in runs)
        return values[len(values) // 2]

    n = sec["offers"]
    out += [
        f"`bench/load.py::bench_load`: {n:,} synthetic offers of one provider (built straight "
        "into the load path's Arrow schema; building is not timed) merged by "
        "`gpuscout.warehouse.load.merge_offers` in one transaction each; median of "
        f"{len(runs)} runs. The row-by-row baseline is DuckDB `INSERT … VALUES (?, …)` one row "
        "at a time into a plain table of the same columns (no hash, no history), timed on "
        "2,000 rows and extrapolated linearly.",
        "",
        "| step | seconds (median) | all runs | rows/s |",
        "|---|---|---|---|",
    ]
    for key, label in (("first", "first load (all new)"),
                       ("same", "identical reload (all unchanged)"),
                       ("churn", "reload with 2 % price churn"),
                       ("row_by_row_extrapolated", "row-by-row INSERTs (extrapolated)")):
        out.append(f"| {label} | {med(key):.2f} | "
                   f"{', '.join(f'{r[key]:.2f}' for r in runs)} | {n / med(key):,.0f} |")
    speedup = _ratio(med("row_by_row_extrapolated"), med("first"))
    out += ["", f"Load path vs row by row: **{speedup}** faster (first load). History rows "
                f"after the three loads: {runs[0]['rows']:,}.", ""]
    prof = sec.get("profile")
    if prof:
        names = list(dict.fromkeys(k for p in prof.values() for k in p))
        out += ["Seconds per statement of `merge_offers` (one profiled run, same data; "
                "`warehouse/sql/<name>.sql`):", "",
                "| statement | " + " | ".join(prof) + " |",
                "|---|" + "---|" * len(prof)]
        for name in names:
            out.append(f"| {name} | " + " | ".join(_f(p.get(name), 3) for p in prof.values())
                       + " |")
        out.append("")
    first = med("first")
    why = "–"
    if first > TARGET_LOAD_S:
        top = sorted(((k, v) for k, v in (prof or {}).get("first load", {}).items()
                      if k != "total"), key=lambda kv: -kv[1])[:3]
        why = ("on a first load the time goes to " + ", ".join(
            f"`{k}` {v:.2f} s" for k, v in top) + " (profiled run): a provider with no open "
            "version is loaded by `merge_insert_all` alone, one insert of the 1 M new versions "
            "into `offer_versions` read once from the registered Arrow table, no joins; what "
            "is left is DuckDB compressing and writing 1 M wide rows (a bare CREATE TABLE AS "
            "of the same Arrow table takes ~0.8 s here). DuckDB has 2 threads here, shared "
            "with the rest of the machine. See the closing note")
    targets.append({
        "target": "1 M offers loaded in ≤ 1 s",
        "measured": f"{first:.2f} s first load, {med('churn'):.2f} s with 2 % churn "
                    f"({_ratio(med('row_by_row_extrapolated'), first)} row-by-row)",
        "ok": first <= TARGET_LOAD_S,
        "why": why,
    })
    return out


def _history(sec: dict[str, Any] | None, targets: list[dict[str, Any]]) -> list[str]:
    out = ["## History: nightly refreshes with 2 % price churn", ""]
    if not sec:
        targets.append({"target": "history grows with changes, not nights", "measured": "–",
                        "ok": None, "why": "section not run"})
        return out + ["Not run.", ""]
    n, nights = sec["offers"], sec["nights"]
    expected = n + sec["price_changes"]
    naive = n * nights
    sizes = {int(k): v for k, v in sec["sizes_mb"].items()}
    first_mb = sizes[min(sizes)]
    growth = (sizes[max(sizes)] - first_mb) / max(1, max(sizes) - min(sizes))
    out += [
        f"`bench/load.py::bench_history`: {nights} nightly refreshes of {n:,} offers through "
        "`merge_offers`; from the second night on, 2 % of the offers get a new price and the 2 % "
        "changed the night before return to theirs, so about 4 % of the offers change a night "
        f"({sec['price_changes']:,} price changes in all, counted from the data). The file is "
        "checkpointed every 30 nights (outside the timed merges) to read its size.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| history rows | {sec['rows']:,} (offers + price changes = {expected:,}; one row per "
        f"offer per night would be {naive:,}, ×{naive / sec['rows']:.1f} more) |",
        f"| warehouse file after night 1 | {first_mb:.1f} MB |",
        f"| warehouse file after night {nights} | {sec['size_mb']:.1f} MB |",
        f"| growth per night | {growth:.2f} MB (a full snapshot a night would add "
        f"~{first_mb:.1f} MB) |",
        f"| refresh time, night 1 (all {n:,} new) | {sec['first_s']:.2f} s |",
        f"| refresh time, nights 2–6 (median) | {sec['first_churn_nights_s']:.2f} s |",
        f"| refresh time, last 5 nights (median) | {sec['last_nights_s']:.2f} s |",
        f"| refresh time, night {nights} | {sec['last_s']:.2f} s |",
        f"| refresh time, median night | {sec['median_s']:.2f} s |",
        "",
        "File size by night: " + ", ".join(f"{k}: {v:.1f} MB" for k, v in sorted(sizes.items()))
        + ".",
        "",
    ]
    windows = _windows(sec["times"])
    peak_start, peak = max(windows.items(), key=lambda kv: kv[1])
    out += ["Merge time, median of each 30-night window (night: s): " + ", ".join(
        f"{k}: {v:.2f}" for k, v in windows.items()) + ".", ""]
    slows = peak > 3 * sec["first_churn_nights_s"]
    if slows:
        out += [f"**The refresh time is not flat**: it climbs from "
                f"{sec['first_churn_nights_s']:.2f} s (nights 2–6) to {peak:.2f} s (the window "
                f"from night {peak_start}).", ""]
    flat = peak <= TARGET_NIGHT_S
    targets.append({
        "target": f"nightly merge ≤ {TARGET_NIGHT_S} s a night, flat over {nights} nights "
                  f"of {n:,} offers with churn",
        "measured": f"{sec['first_churn_nights_s']:.2f} s (nights 2–6), {peak:.2f} s (slowest "
                    f"30-night window, from night {peak_start}), {sec['last_nights_s']:.2f} s "
                    "(last 5)",
        "ok": flat,
        "why": "–" if flat else (
            "the slowest window's nights; an unchanged offer only advances `last_seen_at` "
            "(`merge_touch_seen`) and its wide state columns are written only where they "
            "moved (`merge_touch_unchanged`)"),
    })
    ok = sec["rows"] == expected and growth < first_mb / 5
    targets.append({
        "target": "history storage grows with changes, not nights",
        "measured": f"{sec['rows']:,} rows after {nights} nights (= offers + changes; "
                    f"snapshots: {naive:,}); +{growth:.2f} MB/night vs {first_mb:.1f} MB a "
                    f"snapshot; refresh {sec['first_churn_nights_s']:.2f} s (nights 2–6), "
                    f"{peak:.2f} s (slowest 30-night window), {sec['last_nights_s']:.2f} s "
                    "(last 5)",
        "ok": ok,
        "why": "–" if ok else "rows or size grow faster than the changes",
    })
    return out


def _windows(times: list[float], width: int = 30) -> dict[int, float]:
    import statistics

    return {i + 1: statistics.median(times[i:i + width]) for i in range(0, len(times), width)}


def _queries(sec: dict[str, Any] | None, targets: list[dict[str, Any]]) -> list[str]:
    out = ["## Queries: gpuscout vs gpuhunt.query() vs SkyPilot list_accelerators", ""]
    if not sec:
        targets.append({"target": "query and recommend p50 ≤ 50 ms, ≥ 5× both anchors",
                        "measured": "–", "ok": None, "why": "section not run"})
        return out + ["Not run.", ""]
    wh, tools, f, job = sec["warehouse"], sec["tools"], sec["filter"], sec["job"]
    g, h, s = tools.get("gpuscout", {}), tools.get("gpuhunt", {}), tools.get("skypilot", {})
    out += [
        f"Warehouse: {wh['current_offers']:,} current offers (7 providers, 20 GPUs, on-demand "
        f"and spot) on top of the history bench's file, {wh['history_rows']:,} rows in "
        f"`offer_versions`, a {wh['size_mb']:.0f} MB file and "
        f"{wh.get('segments_mb', 0.0):.0f} MB of history segments. The same current offers "
        "exported to "
        "gpuhunt's catalog CSV and SkyPilot's vms.csv (`bench/catalogs.py`). Each tool runs in "
        f"{sec['procs']} fresh processes; warm = every call after the first, pooled (up to "
        f"{sec['runs']} a process, fewer for a call slower than 45 s in all); cold = the first "
        "call of a process (catalog load included, imports not), median.",
        "",
        f"**filter**: GPU `{f['gpu']}`, VRAM ≥ {f['min_vram_gb']:.0f} GB, ≤ "
        f"${f['max_usd_per_gpu_hour']:.2f} per GPU-hour, every match, cheapest per GPU-hour "
        "first. gpuscout: `warehouse/queries/offers.sql`; gpuhunt: `gpuhunt.query(provider, "
        "gpu_name, min_gpu_memory)` + the per-GPU price ceiling in Python; SkyPilot: "
        "`sky.catalog.list_accelerators(name_filter, clouds, all_regions=True)` + VRAM and "
        "per-GPU price in Python (neither anchor filters on price per GPU).",
        f"**all**: every GPU offer, cheapest per GPU-hour first. **recommend**: "
        f"`gpuscout.pipeline.recommend.recommend` for {job['method']} of {job['model']} (batch "
        f"{job['batch_size']}) on {job['tokens']:,} tokens: size the job per machine shape, "
        "price every offer (billing, storage, egress, spot), rank. Neither anchor has this; "
        "the figure to hold it against is their **all**, the listing a user would start a "
        "ranking of their own from.",
        "",
        "| query | tool | matches | p50 | p95 | cold | gpuscout faster by (p50) |",
        "|---|---|---|---|---|---|---|",
    ]

    def row(q: str, name: str, t: dict[str, Any], base: float | None) -> str:
        if "error" in t:
            return f"| {q} | {name} | failed: {t['error'][:200]} | | | | |"
        st = t.get(q) or {}
        cold = t.get("filter_cold_s") if q == "filter" else (
            t.get("recommend_cold_s") if q == "recommend" else None)
        count = t.get(f"{q}_count", t.get("recommend_offers") if q == "recommend" else None)
        speed = _ratio(st.get("p50"), base) if base and name != "gpuscout" else ""
        return (f"| {q} | {name} | {_f(count)} | {_ms(st.get('p50'))} | {_ms(st.get('p95'))} "
                f"| {_ms(cold)} | {speed} |")

    gf = (g.get("filter") or {}).get("p50")
    ga = (g.get("all") or {}).get("p50")
    gr = (g.get("recommend") or {}).get("p50")
    for name, t in (("gpuscout", g), ("gpuhunt", h), ("SkyPilot", s)):
        out.append(row("filter", name, t, gf))
    for name, t in (("gpuscout", g), ("gpuhunt", h), ("SkyPilot", s)):
        out.append(row("all", name, t, ga))
    out.append(row("recommend", "gpuscout", g, None))
    for name, t in (("gpuhunt", h), ("SkyPilot", s)):
        st = (t.get("all") or {}).get("p50")
        out.append(f"| recommend vs their **all** | {name} | {_f(t.get('all_count'))} | "
                   f"{_ms(st)} | | | {_ratio(st, gr)} |")
    sizing = g.get("recommend_sizing")
    if isinstance(sizing, dict):
        out += ["", f"Of recommend's {_ms(gr)}, sizing the job per machine shape "
                    f"({g.get('recommend_shapes')} shapes; the candidates kept for the "
                    f"warehouse and filters + `plan_shapes`) takes {_ms(sizing['p50'])} (p50); "
                    "the rest is `pair_costs.py` per pricing pair, every offer priced in "
                    "Arrow (`pricing.py`), `shown.sql` and the reasons of the rows shown."]
    reread = g.get("recommend_reread")
    if isinstance(reread, dict):
        out += ["", f"The warm calls reuse the candidates (the offers a request may use, read "
                    f"once per warehouse and filters); read again on every call, as a "
                    f"process's first request over a warehouse does, recommend takes "
                    f"{_ms(reread['p50'])} p50 / {_ms(reread.get('p95'))} p95."]
    counts = {n: t.get("filter_count") for n, t in (("gpuscout", g), ("gpuhunt", h),
                                                   ("SkyPilot", s))}
    same = len(set(counts.values())) == 1
    all_counts = {n: t.get("all_count") for n, t in (("gpuscout", g), ("gpuhunt", h),
                                                     ("SkyPilot", s))}
    out += ["", f"Same offers in all three: filter matches {counts} — "
                f"{'identical counts' if same else 'COUNTS DIFFER'}; all: {all_counts}.",
            f"Imports (not in the timings): gpuscout {_ms(g.get('import_s'))}, gpuhunt "
            f"{_ms(h.get('import_s'))}, SkyPilot {_ms(s.get('import_s'))}. Peak RSS: gpuscout "
            f"{_f(g.get('peak_rss_mb'), 0)} MB, gpuhunt {_f(h.get('peak_rss_mb'), 0)} MB, "
            f"SkyPilot {_f(s.get('peak_rss_mb'), 0)} MB.",
            "Network attempts refused: " + ", ".join(
                f"{n}: {len(t.get('network_attempts', []))}" for n, t in
                (("gpuscout", g), ("gpuhunt", h), ("SkyPilot", s))) + ".", ""]
    anchors_f = [(t.get("filter") or {}).get("p50") for t in (h, s)]
    anchors_a = [(t.get("all") or {}).get("p50") for t in (h, s)]
    f_ratio = min(a / gf for a in anchors_f if a and gf) if gf and all(anchors_f) else None
    r_ratio = min(a / gr for a in anchors_a if a and gr) if gr and all(anchors_a) else None
    targets.append({
        "target": "filter query p50 ≤ 50 ms and ≥ 5× faster than both anchors",
        "measured": f"{_ms(gf)} p50; ×{_f(f_ratio, 1)} the faster anchor",
        "ok": None if gf is None or f_ratio is None else (
            gf <= TARGET_QUERY_S and f_ratio >= TARGET_ANCHOR_RATIO),
        "why": _query_why(gf, f_ratio),
    })
    rp95 = (g.get("recommend") or {}).get("p95")
    targets.append({
        "target": "recommend over 100 k offers p50 ≤ 50 ms and p95 ≤ 80 ms",
        "measured": f"p50 {_ms(gr)}, p95 {_ms(rp95)} (sizing "
                    f"{_ms(sizing['p50'] if isinstance(sizing, dict) else None)})",
        "ok": None if gr is None or rp95 is None else (
            gr <= TARGET_QUERY_S and rp95 <= TARGET_RECOMMEND_P95_S),
        "why": RECOMMEND_WHY if gr and gr > TARGET_QUERY_S else "–",
    })
    targets.append({
        "target": "full recommend p50 ≤ 50 ms and ≥ 5× faster than both anchors",
        "measured": f"{_ms(gr)} p50 (sizing "
                    f"{_ms(sizing['p50'] if isinstance(sizing, dict) else None)}); "
                    f"×{_f(r_ratio, 2)} the faster anchor's full listing",
        "ok": None if gr is None or r_ratio is None else (
            gr <= TARGET_QUERY_S and r_ratio >= TARGET_ANCHOR_RATIO),
        "why": RECOMMEND_WHY if gr and gr > TARGET_QUERY_S else "–",
    })
    return out


def _query_why(p50: float | None, ratio: float | None) -> str:
    if p50 is None or ratio is None:
        return "not measured"
    if p50 <= TARGET_QUERY_S and ratio >= TARGET_ANCHOR_RATIO:
        return "–"
    return ("the filter scans `recent_versions` (open versions and the closed ones not yet "
            "sealed) through the `current_offers` view and its join to `provider_status`; see "
            "closing note")


RECOMMEND_WHY = (
    "each pricing pair (a machine placement with its billing, spot and storage terms, ~1 k "
    "here) is priced once in Arrow and every offer by its pair; what is left is the ranking's "
    "Arrow kernels over every candidate, the small `shown.sql` query for the rows shown and "
    "the facts check on the connection, on 2 shared cores; see the closing note.")


def _cli(sec: dict[str, Any] | None, targets: list[dict[str, Any]]) -> list[str]:
    out = ["## CLI start", ""]
    if not sec:
        targets.append({"target": "`gpuscout --help` ≤ 0.3 s", "measured": "–", "ok": None,
                        "why": "section not run"})
        return out + ["Not run.", ""]
    out += [
        f"Wall time from exec to exit, median of {next(iter(sec['commands'].values()))['runs']} "
        f"runs after one warm-up, of `{_repo_relative(sec['entry_point'])}` (a venv holding "
        f"gpuscout alone, as a user installs it). A bare `python -c pass` takes "
        f"{_ms(sec['python_start_s'])}. "
        "`offers` reads the queries warehouse above (100 k current offers + history).",
        "",
        "| command | median | min | max | heaviest imports (cumulative ms) |",
        "|---|---|---|---|---|",
    ]
    for label, c in sec["commands"].items():
        imports = ", ".join(f"{n} {ms:.0f}" for n, ms in c.get("imports_ms", [])[:5])
        out.append(f"| `{label}` | {c['median_s']:.3f} s | {c['min_s']:.3f} s | "
                   f"{c['max_s']:.3f} s | {imports} |")
    out.append("")
    help_s = sec["commands"]["gpuscout --help"]["median_s"]
    targets.append({
        "target": "`gpuscout --help` ≤ 0.3 s",
        "measured": f"{help_s:.3f} s median "
                    f"(min {sec['commands']['gpuscout --help']['min_s']:.3f} s); "
                    f"`offers --limit 5` "
                    f"{sec['commands']['gpuscout offers --limit 5']['median_s']:.3f} s",
        "ok": help_s <= TARGET_HELP_S,
        "why": "–" if help_s <= TARGET_HELP_S else (
            "imports: typer's rich help renderer (`typer.rich_utils` → rich) and "
            "`gpuscout.cli.app`'s own imports (typer, pydantic) before any work; see the import "
            "column and the closing note"),
    })
    offers_s = sec["commands"]["gpuscout offers --limit 5"]["median_s"]
    targets.append({
        "target": "`gpuscout offers --limit 5` ≤ 0.3 s",
        "measured": f"{offers_s:.3f} s median over the queries warehouse",
        "ok": offers_s <= TARGET_HELP_S,
        "why": "–" if offers_s <= TARGET_HELP_S else (
            "`offers` no longer imports pyarrow, pydantic models or the sizing code; what is "
            "left is typer's own pydantic import (~60 ms), DuckDB's import and open (~40 ms), "
            "the first query over 100 k current offers (~30 ms) and rich's table; see the "
            "import column"),
    })
    return out


def _copy(sec: dict[str, Any] | None, targets: list[dict[str, Any]]) -> list[str]:
    out = ["## Refresh copy-and-swap", ""]
    if not sec:
        targets.append({"target": "the refresh's copy measured at 100 MB, 1 GB, 10 GB",
                        "measured": "–", "ok": None, "why": "section not run"})
        return out + ["Not run.", ""]
    out += [
        f"`bench/copy_cost.py`: a migrated warehouse of {sec['open_offers']:,} open offers and "
        "closed versions of them (random prices, an md5 in `provider_data`, so they do not "
        "compress away) up to each size, all in the file as the design before history "
        "segments kept them. An empty write session (`gpuscout.warehouse.connection.connect`: "
        "copy to `<file>.next`, migrate, CHECKPOINT, fsync, rename over the published file) "
        "is what the design adds to every refresh, whatever it loads: first with sealing held "
        "off (every refresh before), then the one session that seals the whole history into "
        "Parquet segments (the first refresh after the upgrade, once), then the empty session "
        f"again (every refresh now: the file keeps the open versions and at most "
        f"{sec['seal_rows']:,} closed ones). Beside them the bare copy (`shutil.copyfile` + "
        "fsync) and the same empty session run in place (DuckDB's own transaction, no copy). "
        f"Median of {sec['runs']} runs, page cache warm.",
        "",
        "| history | closed versions | session before | bare copy | in place, no copy | "
        "sealing once | file after | segments | session now |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sec["sizes"]:
        out.append(f"| {r['file_mb']:,.0f} MB | {r['closed_versions'] / 1e6:,.0f} M | "
                   f"{r['before_s']:.2f} s | {r['copy_s']:.2f} s | {r['in_place_s']:.3f} s | "
                   f"{r['seal_s']:.1f} s ({r['closed_versions'] / r['seal_s'] / 1e6:.2f} M "
                   f"rows/s) | {r['sealed_file_mb']:,.1f} MB | {r['segments_mb']:,.0f} MB | "
                   f"{r['session_s']:.3f} s |")
    out.append("")
    over = [r for r in sec["sizes"] if r["session_s"] > TARGET_COPY_S]
    targets.append({
        "target": "the refresh's copy measured at 100 MB, 1 GB, 10 GB; ≤ 1 s or a design "
                  "where readers never wait without it",
        "measured": "before → now: " + ", ".join(
            f"{r['file_mb']:,.0f} MB: {r['before_s']:.2f} → {r['session_s']:.3f} s"
            for r in sec["sizes"]),
        "ok": not over,
        "why": "–" if not over else (
            f"above {over[0]['file_mb']:,.0f} MB a session still passes 1 s: the open "
            "versions alone are that large"),
    })
    return out


def _runners(sec: dict[str, Any] | None, targets: list[dict[str, Any]]) -> list[str]:
    out = ["## Scale-out: the nightly flow on threads and on Dask", ""]
    if not sec:
        targets.append({"target": "Dask task runner tested, its gain measured", "measured": "–",
                        "ok": None, "why": "section not run"})
        return out + ["Not run.", ""]
    out += [
        "`bench/runners.py`: the Prefect flow `nightly_refresh` in a fresh process per run "
        "(its temporary server started by an untimed warm-up), on Prefect's "
        "`ThreadPoolTaskRunner` and on `prefect-dask`'s `DaskTaskRunner` over a local cluster "
        "(2 in-process workers × 4 threads, loopback). **bundled**: every provider's bundled "
        "snapshots, AWS in one task per region. **simulated**: "
        f"{sec['providers']} synthetic providers, each a keyless adapter's replayed captures "
        f"under its own name, {sec['latency_s']} s added to every response. The same "
        "warehouse comes out of both runners (`tests/flows/test_task_runners.py`).",
        "",
        "| night | runner | providers | offers | wall |",
        "|---|---|---|---|---|",
    ]
    walls: dict[tuple[str, str], float] = {}
    for r in sec["rows"]:
        walls[(r["night"], r["runner"])] = r["wall_s"]
        out.append(f"| {r['night']} | {r['runner']} | {r['providers']} | {r['offers']:,} | "
                   f"{r['wall_s']:.1f} s |")
    out.append("")
    hung = [r for r in sec["rows"] if r.get("timed_out_runs")]
    if hung:
        out += ["Ran past the child's time limit and was killed and run again: " + ", ".join(
            f"{r['night']} on {r['runner']} ({r['timed_out_runs']}×)" for r in hung)
            + ". The wall above is the run that finished."
            + "".join(f" Thread stacks of the hung run: `{path}`."
                      for r in hung for path in r.get("timeout_stacks", [])), ""]
    sim = [walls.get(("simulated", k)) for k in ("threads", "dask")]
    targets.append({
        "target": "Dask task runner tested, its gain measured",
        "measured": "; ".join(
            f"{night}: threads {walls.get((night, 'threads'), 0):.1f} s, dask "
            f"{walls.get((night, 'dask'), 0):.1f} s" for night in ("bundled", "simulated")),
        "ok": True,
        "why": "–" if sim[0] and sim[1] and sim[1] < sim[0] else (
            "on one machine both runners overlap the waiting in threads; Dask's gain is more "
            "machines, which this bench cannot show"),
    })
    return out


def _probes(sec: dict[str, Any] | None) -> list[str]:
    if not sec:
        return []
    out = ["## Probes: the proposed fixes, measured", "",
           "Each proposed change from the closing note, monkeypatched into the bench process "
           "only (`bench/probes.py`: the SQL that `gpuscout.warehouse.load.statement` returns, "
           "or a sizing method), next to the code as it is, same data, same run. Not shipped.", ""]
    load = sec.get("load")
    if load:
        base = load["median_s"].get("as is")
        out += [f"**Load**, first load of {load['offers']:,} offers (median of "
                f"{len(next(iter(load['seconds'].values())))} interleaved runs):", "",
                "| variant | seconds | vs as is |", "|---|---|---|"]
        for k, v in load["median_s"].items():
            out.append(f"| {k} | {v:.2f} | {_ratio(base, v) if k != 'as is' else ''} |")
        out.append("")
    hist = sec.get("history")
    if hist:
        out += [f"**History**, {hist['nights']} nights of {hist['offers']:,} offers with 2 % "
                "churn:", "", "| merge_touch_unchanged | nights 2–6 (median) | last 5 nights "
                "(median) | history rows |", "|---|---|---|---|"]
        for k, v in hist.items():
            if isinstance(v, dict):
                out.append(f"| {k} | {v['nights_2_6_s']:.2f} s | {v['last_5_s']:.2f} s | "
                           f"{v['rows']:,} |")
        out.append("")
    rec = sec.get("recommend")
    if rec and "error" not in rec:
        base = rec.get("as is", {}).get("p50")
        out += ["**Recommend** over the queries warehouse (100 k offers):", "",
                "| variant | p50 | p95 | vs as is |", "|---|---|---|---|"]
        for k, v in rec.items():
            out.append(f"| {k} | {_ms(v['p50'])} | {_ms(v['p95'])} | "
                       f"{_ratio(base, v['p50']) if k != 'as is' else ''} |")
        out.append("")
    elif rec:
        out += [f"Recommend probe failed: {rec['error'][:300]}", ""]
    return out


# -- closing note -------------------------------------------------------------------------------


def _probe_load(res: dict[str, Any]) -> str:
    m = ((res.get("probes") or {}).get("load") or {}).get("median_s")
    if not m:
        return ""
    return (f" Probe: {m['as is']:.2f} s as is, {m['hash() in stage_offers']:.2f} s with "
            f"`hash()`, {m['no offer_versions_key index']:.2f} s without the index, "
            f"{m['hash() + no index']:.2f} s with both.")


def _load_margin(res: dict[str, Any]) -> str:
    m = ((res.get("probes") or {}).get("load") or {}).get("median_s")
    runs = (res.get("load") or {}).get("runs")
    if not m or not runs:
        return " (3) is not probed."
    best = min(m.values())
    as_is = sorted(r["first"] for r in runs)[len(runs) // 2]
    if best <= TARGET_LOAD_S:
        return (f" The best variant reaches {best:.2f} s in the probe, within 2 s, but the "
                f"probe's own 'as is' ran at {m['as is']:.2f} s against {as_is:.2f} s in the "
                "load section above (the machine was busier then): with this much noise, (3) "
                "is what gives the target a margin. (3) is not probed.")
    return (f" Even the best variant takes {best:.2f} s: 1 M in ≤ 2 s on these 2 cores also "
            "needs (3), which is not probed.")


def _probe_history(res: dict[str, Any]) -> str:
    h = (res.get("probes") or {}).get("history")
    if not h:
        return ""
    a, b = h["as is"], h["touch only what differs"]
    return (f" Probe over {h['nights']} nights: as is {a['nights_2_6_s']:.2f} s → "
            f"{a['last_5_s']:.2f} s a night; touching only what differs "
            f"{b['nights_2_6_s']:.2f} s → {b['last_5_s']:.2f} s, same history rows.")


def _probe_recommend(res: dict[str, Any]) -> str:
    r = (res.get("probes") or {}).get("recommend") or {}
    if "as is" not in r or "Architecture.blocks memoized" not in r:
        return ""
    return (f" Probe: recommend p50 {_ms(r['as is']['p50'])} as is, "
            f"{_ms(r['Architecture.blocks memoized']['p50'])} with `blocks()` memoized.")


def _proposals(res: dict[str, Any]) -> dict[str, str]:
    """The next step for each target still missed (what this revision changed is in the
    sections above and in the project's history)."""
    return {
        "parse": (
            "**Parse.** See the parse section for where the time goes after the byte scan; "
            "DuckDB's parallel reader is the ceiling line."),
        "load": (
            "**Load.** A first load is now one insert from the stage (no joins), within "
            "~0.15 s of a bare CREATE TABLE AS of the same Arrow table; what is left is DuckDB "
            "compressing and writing 1 M wide rows on 2 shared cores. Fewer, narrower columns "
            "in `offer_versions` (the current-state columns in a table of their own) are the "
            "next lever."),
        "history": (
            "**Nightly merge.** Take `last_seen_at` of an open version from the provider's "
            "last complete run in the view rather than writing it on every row each night "
            "(the grace rows kept open unseen need their own marker)."),
        "recommend": (
            "**Recommend.** Rank on a narrow lower bound (price × compute hours) and price in "
            "full only the offers that can still reach the top or the rejected list; write the "
            "rows shown from Arrow rather than one more query."),
        "query": (
            "**Filter query.** `current_offers` reads `recent_versions`, whose closed "
            "versions not yet sealed (up to the seal threshold) it scans and drops; sealing "
            "them at every session would leave only open versions there."),
        "cli": (
            "**CLI start.** What is left is typer validating options through pydantic and "
            "DuckDB's import: a leaner argument parser for `offers` alone, or a resident "
            "process, would be next."),
        "copy": (
            "**Copy-and-swap.** A session still copies the open versions: at a few million "
            "open offers that copy nears 1 s again; keeping the open versions' current-state "
            "columns (stock, provider data) apart from their priced facts would halve it."),
    }


PROPOSAL_KEYS = {"parse": "parse", "1 M offers": "load", "nightly merge": "history",
                 "filter": "query", "recommend": "recommend", "--help": "cli",
                 "offers --limit": "cli", "copy": "copy"}


def closing_note(res: dict[str, Any], targets: list[dict[str, Any]]) -> str:
    met = [t["target"] for t in targets if t["ok"] is True]
    missed = [t for t in targets if t["ok"] is False]
    unmeasured = [t["target"] for t in targets if t["ok"] is None]
    proposals = _proposals(res)
    lines = ["## Closing note", ""]
    lines.append(f"Met ({len(met)}): " + ("; ".join(met) if met else "none") + ".")
    lines.append("")
    lines.append(f"Not met ({len(missed)}): " + ("; ".join(t["target"] for t in missed)
                                                 if missed else "none") + ".")
    if unmeasured:
        lines += ["", "Not measured: " + "; ".join(unmeasured) + "."]
    flagged = [t for t in targets if t["ok"] is True and "not flat" in t["why"]]
    lines.append("")
    if missed or flagged:
        lines += ["What limits each one is in the Targets table; the next step for each:", ""]
    seen = set()
    for t in missed + flagged:
        key = next((v for k, v in PROPOSAL_KEYS.items() if k in t["target"]), None)
        if key and key not in seen:
            seen.add(key)
            lines += [f"- {proposals[key]}", ""]
    durations = res.get("durations_s", {})
    if durations:
        ran = res.get("ran_at", {})
        lines += ["Bench duration by section: " + ", ".join(
            f"{k} {v:,.0f} s" + (f" (finished {ran[k]} UTC)" if k in ran else "")
            for k, v in durations.items()) + "."]
    return "\n".join(lines) + "\n"


def _repo_relative(path: str) -> str:
    """A path inside the repository, written relative to it (results name no machine paths)."""
    root = Path(__file__).resolve().parent.parent
    try:
        return str(Path(path).resolve().relative_to(root))
    except ValueError:
        return path
