"""Pair costs (pipeline/recommend/pair_costs.py) computed in Arrow round as the SQL that shows
them does."""

from __future__ import annotations

import duckdb
import pytest

from gpuscout.pipeline.recommend.pair_costs import sql_round

VALUES = [0.285, 1.005, 2.675, 1.115, 0.145, 16.35, 8.25, -0.05, -2.5, 0.49999999999999994,
          32.75, 1e-9, 123456.789, 0.0]


@pytest.mark.parametrize("digits", [0, 1, 2])
def test_sql_round_is_duckdbs_round(digits: int) -> None:
    con = duckdb.connect()
    for x in VALUES:
        row = con.execute("SELECT round(CAST(? AS DOUBLE), ?)", [x, digits]).fetchone()
        assert row is not None
        assert sql_round(x, digits) == row[0], x
    assert sql_round(None, 1) is None


def test_sql_round_matches_duckdb_on_many_values() -> None:
    con = duckdb.connect()
    rows = con.execute("SELECT x, round(x, 1), round(x, 2) FROM (SELECT random() * 100 - 50 AS x "
                       "FROM range(2000)) UNION ALL SELECT x, round(x, 1), round(x, 2) FROM "
                       "(SELECT range / 40.0 AS x FROM range(4000))").fetchall()
    assert all(sql_round(x, 1) == r1 and sql_round(x, 2) == r2 for x, r1, r2 in rows)
