"""A markdown account of one refresh run: what changed, what failed, the cheapest GPUs."""

from __future__ import annotations

import duckdb

from gpuscout.warehouse.queries import run_named


def _md_table(headers: list[str], rows: list[list[object]]) -> str:
    def cell(v: object) -> str:
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:.4g}"
        if isinstance(v, list):
            return ", ".join(map(str, v)) or "-"
        return str(v).replace("|", "\\|")
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def run_summary_markdown(con: duckdb.DuckDBPyConnection, run_id: str) -> str:
    providers = run_named(con, "run_providers", {"run_id": run_id}).to_pylist()
    cheapest = run_named(con, "cheapest_per_gpu").to_pylist()
    ok = [p for p in providers if p["status"] == "ok"]
    stale = [p["provider"] for p in providers if p["status"] != "ok"]
    unknown = sorted({f"{p['provider']}: {label}" for p in providers
                      for label in p["unknown_labels"]})
    total = {k: sum(p[k] for p in providers) for k in
             ("offers_loaded", "new_offers", "changed_offers", "closed_offers", "quarantined")}
    parts = [
        f"# Refresh {run_id}",
        f"{len(ok)}/{len(providers)} providers loaded; {total['offers_loaded']} offers, "
        f"{total['new_offers']} new, {total['changed_offers']} changed, "
        f"{total['closed_offers']} vanished, {total['quarantined']} quarantined.",
        "## Stale providers (kept their last good data)",
        "\n".join(f"- **{p['provider']}** ({p['status']}): {p['error']}"
                  for p in providers if p["provider"] in stale) or "none",
        "## Providers",
        _md_table(["provider", "status", "offers", "new", "changed", "unchanged", "vanished",
                   "quarantined", "seconds"],
                  [[p["provider"], p["status"], p["offers_loaded"], p["new_offers"],
                    p["changed_offers"], p["unchanged_offers"], p["closed_offers"],
                    p["quarantined"], p["duration_s"]] for p in providers]),
        "## Unknown GPU labels",
        "\n".join(f"- {u}" for u in unknown) or "none",
        "## Cheapest offer per GPU (USD per GPU-hour)",
        _md_table(["gpu", "pricing", "provider", "usd/gpu-h", "region", "offers"],
                  [[c["gpu_id"], c["pricing_model"], c["provider"], c["usd_per_gpu_hour"],
                    c["region"], c["offers"]] for c in cheapest]),
    ]
    return "\n\n".join(parts) + "\n"
