"""merge_offers against a plain-Python model of the change-only history, row for row.

A first load (the provider has no open version: inserted without pairing) and the loads after
it (paired with the open versions once, then closed, touched and inserted through the pairs)
must leave exactly the rows the model says, with every other table and provider untouched.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from offer_factory import T0, make_offer

from gpuscout.core.models import Availability, Offer, PricingModel
from gpuscout.warehouse.arrow import offers_to_table
from gpuscout.warehouse.connection import connect
from gpuscout.warehouse.load import (
    MergeCounts,
    OutOfOrderError,
    close_provider,
    merge_offers,
    transaction,
)

# The columns whose change opens a new version (warehouse/sql/stage_offers.sql); the rest of an
# offer's state is refreshed in place on its open version.
HASHED = ("instance_type", "gpu_label", "gpu_id", "gpu_count", "fractional_gpu", "vram_gb",
          "memory_type", "form_factor", "interconnect", "interconnect_gbps", "network",
          "network_gbps", "pricing_model", "price_kind", "currency", "price_per_hour",
          "billing_increment_s", "region", "geography", "zone", "vcpus", "ram_gb", "disk_gb")
STATE = ("availability", "available_count", "provider_data", "source_url",
         "price_usd_per_hour", "price_usd_per_gpu_hour")
PROVIDER = "testprov"

Row = dict[str, Any]


class Model:
    """The history merge_offers should write, kept as plain rows."""

    def __init__(self) -> None:
        self.rows: list[Row] = []

    def merge(self, offers: list[Offer], *, run: str, complete: bool,
              keep_open: frozenset[str] = frozenset()) -> MergeCounts:
        staged = {r["offer_key"]: r for r in offers_to_table(offers).to_pylist()}
        latest = max((r["observed_at"] for r in staged.values()), default=None)
        new = changed = unchanged = closed = 0
        for v in [v for v in self.rows if v["provider"] == PROVIDER and v["valid_to"] is None]:
            s = staged.get(v["offer_key"])
            if s is None:
                if complete and latest is not None and v["offer_key"] not in keep_open:
                    v.update(valid_to=latest, closed_by_run=run)
                    closed += 1
            elif any(s[c] != v[c] for c in HASHED):
                v.update(valid_to=s["observed_at"], closed_by_run=run)
                changed += 1
            else:
                v.update({c: s[c] for c in STATE}, last_seen_at=s["observed_at"])
                unchanged += 1
                del staged[v["offer_key"]]
        for s in staged.values():
            new += 1
            self.rows.append({**s, "valid_from": s["observed_at"], "valid_to": None,
                              "last_seen_at": s["observed_at"], "opened_by_run": run,
                              "closed_by_run": None})
        return MergeCounts(new=new - changed, changed=changed, unchanged=unchanged,
                           closed=closed)

    def sorted_rows(self) -> list[Row]:
        return sorted(self.rows, key=_order)


def _order(r: Row) -> tuple[str, str, datetime]:
    return (r["provider"], r["offer_key"], r["valid_from"])


def _stored(con: duckdb.DuckDBPyConnection) -> list[Row]:
    cur = con.execute("SELECT * EXCLUDE (row_hash, provider_data), "
                      "provider_data::VARCHAR AS provider_data FROM offer_versions")
    names = [d[0] for d in cur.description]
    return sorted((dict(zip(names, r, strict=True)) for r in cur.fetchall()), key=_order)


def _other_tables(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[Any, ...]]]:
    names = [n for (n,) in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE NOT temporary "
        "AND table_name <> 'recent_versions' ORDER BY 1").fetchall()]
    return {n: con.execute(f'SELECT * FROM "{n}" ORDER BY ALL').fetchall() for n in names}


def _batch(rng: random.Random, keys: list[str], at: datetime) -> list[Offer]:
    return [_offer(rng, key, at) for key in keys]


def _offer(rng: random.Random, key: str, at: datetime, **fields: Any) -> Offer:
    gpus = rng.choice([1, 2, 8])
    price = round(rng.uniform(1, 40), 2)
    base: dict[str, Any] = dict(
        price=price, gpu_count=gpus, observed_at=at, price_usd_per_hour=price,
        price_usd_per_gpu_hour=price / gpus, region=rng.choice(["us-east-1", "eu-west-1", None]),
        vcpus=rng.choice([None, 8.0, 96.0]), billing_increment_s=rng.choice([None, 1, 3600]),
        pricing_model=rng.choice([PricingModel.ON_DEMAND, PricingModel.SPOT]),
        availability=rng.choice(list(Availability)),
        available_count=rng.choice([None, 0, 3]), provider_data={"n": rng.randint(0, 2)})
    base.update(fields)
    return make_offer(key, **base)


def _again(offer: Offer, at: datetime, **changes: Any) -> Offer:
    return offer.model_copy(update={"observed_at": at, **changes})


def _moved(offer: Offer, which: int) -> dict[str, Any]:
    """A change of one current-state column (which % 6), or of all of them at once."""
    changes: list[dict[str, Any]] = [
        {"availability": Availability.LOW if offer.availability != Availability.LOW
         else Availability.IN_STOCK},
        {"available_count": (offer.available_count or 0) + 1},
        {"provider_data": {"stock": "low"}},
        {"source_url": "https://example.test/v2"},
        _fx(offer, 1.1),
    ]
    if which % 6 < len(changes):
        return changes[which % 6]
    return {k: v for change in changes for k, v in change.items()}


def _fx(offer: Offer, rate: float) -> dict[str, float]:
    usd = offer.price_per_hour * rate
    return {"price_usd_per_hour": usd, "price_usd_per_gpu_hour": usd / offer.gpu_count}


@pytest.fixture
def con(tmp_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    with connect(tmp_path / "w.duckdb") as c:
        c.execute("INSERT INTO refresh_run_log VALUES ('r0', 'other', 'replay', $1, $1, 1.0, "
                  "'ok', true, 1, 1, 1, 1, 0, 0, 0, 0, [], $1, NULL)", [T0])
        yield c


def _check(con: duckdb.DuckDBPyConnection, model: Model, offers: list[Offer], *, run: str,
           complete: bool = True, keep_open: frozenset[str] = frozenset()) -> MergeCounts:
    others = _other_tables(con)
    with transaction(con):
        got = merge_offers(con, offers_to_table(offers), provider=PROVIDER, run_id=run,
                           complete=complete, keep_open=keep_open)
    expected = model.merge(offers, run=run, complete=complete, keep_open=keep_open)
    assert got == expected
    assert _stored(con) == model.sorted_rows()
    assert _other_tables(con) == others
    stale_hash = con.execute(f"SELECT count(*) FROM offer_versions "
                             f"WHERE row_hash <> hash({', '.join(HASHED)})").fetchone()
    assert stale_hash == (0,)
    temp = con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary UNION ALL "
                       "SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal "
                       "ORDER BY 1").fetchall()
    assert temp in ([], [("keep_open",)])  # the pairs and the stage do not outlive the merge
    return got


def _seed_other_provider(con: duckdb.DuckDBPyConnection, model: Model) -> None:
    """Another provider's open and closed versions, which no load of PROVIDER may touch."""
    other = [make_offer("o1", provider="other"), make_offer("o2", provider="other", price=3.0)]
    with transaction(con):
        merge_offers(con, offers_to_table(other), provider="other", run_id="o", complete=True)
        merge_offers(con, offers_to_table([_again(other[0], T0 + timedelta(days=1))]),
                     provider="other", run_id="o2", complete=True)
    for r in offers_to_table(other).to_pylist():
        gone = r["offer_key"] == "o2"
        model.rows.append({**r, "valid_from": T0, "last_seen_at": T0 + timedelta(days=0 if gone
                                                                               else 1),
                           "valid_to": T0 + timedelta(days=1) if gone else None,
                           "opened_by_run": "o", "closed_by_run": "o2" if gone else None})


def test_first_load_then_churn_match_the_model(con) -> None:
    rng = random.Random(7)
    model = Model()
    _seed_other_provider(con, model)
    assert _stored(con) == model.sorted_rows()
    keys = [f"k{i:03d}" for i in range(60)]
    first = _batch(rng, keys, T0)
    counts = _check(con, model, first, run="r1")
    assert counts == MergeCounts(new=60, changed=0, unchanged=0, closed=0)

    t1 = T0 + timedelta(days=1)
    night: list[Offer] = []
    for i, offer in enumerate(first):
        kind = i % 6
        if kind == 0:  # the same offer seen again: no new version, last_seen_at moves
            night.append(_again(offer, t1))
        elif kind == 1:  # repriced: its version closes and a new one opens
            night.append(_again(offer, t1, price_per_hour=offer.price_per_hour + 1,
                                **_fx(offer, 1.0 + 1 / offer.price_per_hour)))
        elif kind == 2:  # one part of its state moved (stock, data, FX): updated in place
            night.append(_again(offer, t1, **_moved(offer, i // 6)))
        elif kind == 3:  # a spec change (region) is a new version too
            night.append(_again(offer, t1, region="ap-south-1"))
        # kinds 4 and 5 vanish; of those, the held-back ones (keep_open) stay open
    night += [_offer(rng, f"n{i}", t1) for i in range(5)]
    held = frozenset(k for i, k in enumerate(keys) if i % 6 == 5 and i < 30)
    counts = _check(con, model, night, run="r2", keep_open=held)
    assert counts == MergeCounts(new=5, changed=20, unchanged=20, closed=15)

    t2 = T0 + timedelta(days=2)  # a partial refresh closes nothing it did not see
    partial = [_again(o, t2) for o in night[:10]]
    counts = _check(con, model, partial, run="r3", complete=False)
    assert counts.closed == 0 and counts.unchanged == 10

    t3 = T0 + timedelta(days=3)  # vanished offers come back: each opens a new version
    back = [_again(o, t3) for o in first[4::6]] + [_again(o, t3) for o in night]
    _check(con, model, back, run="r4")


def test_a_provider_that_closed_everything_reloads_as_a_first_load(con) -> None:
    rng = random.Random(11)
    model = Model()
    offers = _batch(rng, [f"k{i}" for i in range(12)], T0)
    _check(con, model, offers, run="r1")
    t1 = T0 + timedelta(days=1)
    with transaction(con):
        assert close_provider(con, PROVIDER, run_id="gone", at=t1) == 12
    for r in model.rows:
        r.update(valid_to=t1, closed_by_run="gone")
    t2 = T0 + timedelta(days=2)
    counts = _check(con, model, [_again(o, t2) for o in offers], run="r2")
    assert counts == MergeCounts(new=12, changed=0, unchanged=0, closed=0)


def test_an_empty_complete_refresh_closes_nothing(con) -> None:
    model = Model()
    _check(con, model, _batch(random.Random(3), ["a", "b"], T0), run="r1")
    assert _check(con, model, [], run="r2") == MergeCounts(new=0, changed=0, unchanged=0,
                                                           closed=0)


def test_a_refresh_older_than_the_stored_one_is_refused_even_with_new_keys(con) -> None:
    """No offer of the old refresh pairs with an open version: the whole-refresh check (its
    newest observation against the newest stored one) is what refuses it."""
    model = Model()
    _check(con, model, [make_offer("a", observed_at=T0 + timedelta(days=5))], run="r1")
    with pytest.raises(OutOfOrderError, match="older than the stored state"), transaction(con):
        merge_offers(con, offers_to_table([make_offer("b", observed_at=T0)]), provider=PROVIDER,
                     run_id="r2", complete=True)
    assert _stored(con) == model.sorted_rows()
