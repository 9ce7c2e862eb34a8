"""The offers a request may use, read once per set of facts and kept: the narrow per-offer
columns pricing.py ranks from (`candidates.sql`), the pricing pairs among them (`pairs.sql`)
and the machine placements the sizing model plans.

None of it depends on the job, only on the facts (their stamp: equal stamps are equal facts, see
facts.py) and on the request's filters, so recommendations over the same warehouse read the
offers once and then price only what the job changes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute

from gpuscout.pipeline.recommend.pair_costs import PLAN_PLACEMENT

# pyarrow generates its compute functions at import: the type checker cannot see them
pc: Any = pyarrow.compute

# Candidate sets kept (each is a few columns of the offers a request may use, ~5 MB for 100 k
# offers): enough for the filters one warehouse is asked with in a session.
KEPT_SETS = 16
# A pair's placement as pairs.sql gives it (whole_gpus: GPUs per machine; fractional shares and
# odd order shapes are rejected by their pair anyway).
PLACEMENT = ("gpu_id", "whole_gpus", "fabric", "fabric_gbps", "max_nodes", "min_nodes",
             "variant_assumed")


@dataclass(frozen=True)
class Candidates:
    offers: pa.Table  # candidates.sql, in fact_id order
    pairs: pa.Table  # pairs.sql, in pair_id order
    pair_index: pa.Array  # per offer, the row of its pair in `pairs`
    placements: list[dict[str, Any]]  # the distinct placements the sizing model can plan
    replayed: dict[str, Any]  # the offers whose prices were replayed from recorded captures


@cache
def sql_file(name: str) -> str:
    here = Path(__file__).parent
    offers = (here / "offers.sql").read_text("utf-8")
    return (here / f"{name}.sql").read_text("utf-8").replace("{offers}", offers)


_kept: dict[tuple[object, ...], Candidates] = {}


def candidates(con: duckdb.DuckDBPyConnection, stamp: str,
               filters: dict[str, Any]) -> Candidates:
    """The candidates of `filters` over the facts stamped `stamp` (current on `con`)."""
    key = (stamp, *(tuple(v) if isinstance(v, list) else v for v in filters.values()))
    found = _kept.get(key)
    if found is None:
        if len(_kept) >= KEPT_SETS:
            _kept.clear()
        found = _kept[key] = _read(con, filters)
    return found


def forget_candidates() -> None:
    """Drop every candidate set kept (they are read again when next asked for)."""
    _kept.clear()


def _read(con: duckdb.DuckDBPyConnection, filters: dict[str, Any]) -> Candidates:
    offers = con.sql(sql_file("candidates"), params=filters).to_arrow_table()
    pairs = con.sql(sql_file("pairs"), params=filters).to_arrow_table()
    return Candidates(offers=offers, pairs=pairs,
                      pair_index=pc.index_in(offers["pair_id"], value_set=pairs["pair_id"]),
                      placements=placements(pairs), replayed=_replayed(offers))


def placements(pairs: pa.Table) -> list[dict[str, Any]]:
    """The distinct machine placements of the pricing pairs that the sizing model can plan (a
    known GPU, whole machines of a whole number of them), in a stable order."""
    keys = {tuple(r[c] for c in PLACEMENT)
            for r in pairs.select([*PLACEMENT, "gpu_count", "offer_reject"]).to_pylist()
            if r["gpu_id"] is not None and r["gpu_count"] >= 1 and r["whole_gpus"] >= 1
            and r["gpu_count"] == math.floor(r["gpu_count"]) and r["offer_reject"] is None}
    return [dict(zip(PLAN_PLACEMENT, k, strict=True)) for k in sorted(keys, key=repr)]


def _replayed(offers: pa.Table) -> dict[str, Any]:
    """How many offers carry replayed prices, of which providers, observed when."""
    replayed = offers.filter(offers["replayed"])
    seen = pc.min_max(replayed["last_seen_at"])
    return {"replayed_offers": replayed.num_rows,
            "replayed_providers": sorted(set(replayed["provider"].to_pylist())),
            "replayed_from": seen["min"].as_py(), "replayed_to": seen["max"].as_py()}
