"""The per-offer facts a recommendation ranks from, kept as a table so that a call prices only
what depends on the job.

`facts.sql` derives from the rows of `inputs.sql` everything about an offer that no job and no
request changes: its provider's profile, how it is sold (its term), what one order is and the
fabric and cluster size it can be placed on, the resold twin, the price scope, the spot
interruption rate of one machine and its basis (pipeline/data/spot_interruptions.csv), the
market behind its price, whether its prices were replayed. A
refresh stores the result as the table `recommend_offers` at the end of its write session
(`store_facts`). The table's comment is its stamp: the recipe (this SQL and its parameters) and
a hash of every input row it was built from.

Before it ranks, a recommendation makes the name `recommend_offers` current on its connection
(`use_facts`): the stored table while its stamp is the warehouse's own, else a temporary table
of the same name built on the connection (which shadows the stored one), so a warehouse written
by something other than a refresh, or by an older gpuscout, is ranked from its current rows and
never from stale ones. A read-only file cannot change while it is open (DuckDB refuses a writer
then, and a refresh publishes a new file instead), so there the check is made once per
connection.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from functools import cache
from pathlib import Path

import duckdb

from gpuscout.pipeline.recommend.plans import DEFAULT_MAX_CLUSTER_NODES, MIN_GPUS_FOR_MULTI_NODE
from gpuscout.pipeline.sale_facts import interruption_rates
from gpuscout.warehouse.load import transaction
from gpuscout.warehouse.sqlfiles import sql_literal

FACTS = "recommend_offers"
# Providers that resell, or list, other clouds' machines; their adapters keep the cloud in
# provider_data.cloud (adapters/shadeform.py, adapters/primeintellect.py,
# adapters/computepulse.py), in the aggregator's spelling where it differs from the warehouse's
# provider id (ComputePulse also keeps the id it maps to in provider_data.resold_from).
AGGREGATORS = ("shadeform", "primeintellect", "computepulse")
CLOUD_NAMES = {"lambdalabs": "lambda",
               # ComputePulse's display names of the clouds gpuscout reads directly (Verda is
               # DataCrunch's name since 2025)
               "Vast.ai": "vastai", "Verda": "datacrunch", "Hyperstack": "hyperstack",
               "Scaleway": "scaleway", "TensorPool": "tensorpool", "GPU.ai": "gpuai"}
# A marketplace's lowest ask below this share of the median of its asks is a lone outlier: the
# offer is ranked at the median (a single ask far below the market is the likeliest to be gone,
# or on the least reliable host), and its reasons show both.
OUTLIER_SHARE = 0.5


@cache
def _text(name: str) -> str:
    return (Path(__file__).parent / f"{name}.sql").read_text("utf-8")


def fact_params() -> dict[str, object]:
    """The parameters of facts.sql."""
    rates = interruption_rates()
    return {"min_gpus_multi_node": MIN_GPUS_FOR_MULTI_NODE,
            "default_max_nodes": DEFAULT_MAX_CLUSTER_NODES, "aggregators": list(AGGREGATORS),
            "cloud_from": list(CLOUD_NAMES), "cloud_to": list(CLOUD_NAMES.values()),
            "outlier_share": OUTLIER_SHARE,
            "rate_provider": [r.provider for r in rates],
            "rate_kind": [r.kind.value for r in rates],
            "rate_per_hour": [r.per_hour for r in rates],
            "rate_basis": [r.basis for r in rates], "rate_label": [r.label for r in rates]}


@cache
def recipe() -> str:
    """What a facts table is built by: its SQL and parameters (a new gpuscout may change them)."""
    text = "\n".join((_text("inputs"), _text("facts"), repr(sorted(fact_params().items()))))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def stamp(con: duckdb.DuckDBPyConnection) -> str:
    """The stamp a facts table built from this warehouse now would carry."""
    row = con.execute(_text("stamp").replace("{inputs}", _text("inputs"))).fetchone()
    assert row is not None
    return f"{recipe()}:{row[0]}"


def _build_sql(*, temporary: bool, name: str) -> str:
    kind = "TEMP TABLE" if temporary else "TABLE"
    return f"CREATE OR REPLACE {kind} {name} AS WITH {_text('inputs')} {_text('facts')}"


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _stored_name(con: duckdb.DuckDBPyConnection) -> str:
    """The warehouse's own table, named past a temporary one (an unqualified `main.` would
    resolve to the temporary catalog first)."""
    row = con.execute("SELECT current_database()").fetchone()
    assert row is not None
    return f"{_quoted(row[0])}.main.{FACTS}"


def _write(con: duckdb.DuckDBPyConnection, name: str, *, temporary: bool, mark: str) -> None:
    con.execute(_build_sql(temporary=temporary, name=name), fact_params())
    con.execute(f"COMMENT ON TABLE {name} IS {sql_literal(mark)}")


def store_facts(con: duckdb.DuckDBPyConnection) -> None:
    """Rebuild the warehouse's facts table from its current rows (a write session, after its
    loads)."""
    with transaction(con):  # the stamp and the rows it vouches for, read together
        _write(con, _stored_name(con), temporary=False, mark=stamp(con))


def _marks(con: duckdb.DuckDBPyConnection) -> Mapping[bool, str | None]:
    """The stamps of the facts on this connection: temporary (True) and stored (False)."""
    rows = con.execute(f"""
        SELECT temporary, comment FROM duckdb_tables()
        WHERE table_name = '{FACTS}' AND schema_name = 'main'
          AND database_name IN (current_database(), 'temp')
        UNION ALL
        SELECT temporary, comment FROM duckdb_views()
        WHERE view_name = '{FACTS}' AND schema_name = 'main' AND database_name = 'temp'
    """).fetchall()
    return {bool(temporary): comment for temporary, comment in rows}


def _frozen(con: duckdb.DuckDBPyConnection) -> bool:
    """A local DuckDB file opened read-only: its rows cannot change while it is open."""
    row = con.execute("SELECT readonly AND path IS NOT NULL AND type = 'duckdb' FROM "
                  "duckdb_databases() WHERE database_name = current_database()").fetchone()
    return bool(row and row[0])


def use_facts(con: duckdb.DuckDBPyConnection) -> str:
    """Make `recommend_offers` name facts current with the warehouse on this connection;
    returns their stamp (equal stamps: equal facts, whichever file they are read from)."""
    frozen = _frozen(con)
    marks = _marks(con)
    here = marks.get(True)
    if frozen and here is not None and here.startswith(recipe() + ":"):
        return here  # checked on this connection already, and nothing can have changed since
    with transaction(con):  # the stamp and the rows it vouches for, read together
        now = stamp(con)
        if here == now:
            return now
        if marks.get(False) == now:
            if frozen:  # remember the check: a temporary view of the stored table
                con.execute(f"CREATE OR REPLACE TEMP VIEW {FACTS} AS "
                            f"SELECT * FROM {_stored_name(con)}")
                con.execute(f"COMMENT ON VIEW temp.main.{FACTS} IS {sql_literal(now)}")
            elif here is not None:
                _drop_temporary(con)
            return now
        _drop_temporary(con)
        _write(con, f"temp.main.{FACTS}", temporary=True, mark=now)
        return now


def _drop_temporary(con: duckdb.DuckDBPyConnection) -> None:
    for (kind,) in con.execute(f"""
            SELECT 'TABLE' FROM duckdb_tables() WHERE database_name = 'temp'
               AND table_name = '{FACTS}'
            UNION ALL
            SELECT 'VIEW' FROM duckdb_views() WHERE database_name = 'temp'
               AND view_name = '{FACTS}'""").fetchall():
        con.execute(f"DROP {kind} temp.main.{FACTS}")
