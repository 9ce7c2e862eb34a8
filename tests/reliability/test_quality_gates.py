"""Quality gates: price bands, mass jumps, collapses and unread rows, their thresholds read from
`GPUSCOUT_*`, and what a refused or held-back night leaves for the next one."""

from __future__ import annotations

from pathlib import Path

import pytest
from offer_factory import make_offer
from reliability_harness import (
    NIGHT,
    Fault,
    NoSleepClient,
    SnapshotServer,
    inspect,
    json_edit,
    open_versions,
    rewrites,
    run_night,
    snapshot_fx,
)

from gpuscout.core.models import Reject
from gpuscout.pipeline.quality import gate_prices, hold_back, unread_rows
from gpuscout.pipeline.settings import Settings

H100 = "h100-sxm-80gb"
MEDIANS = {H100: (2.5, 10)}


def _offer(key: str, price: float, gpu_id: str | None = H100):
    return make_offer(key, price=price, gpu_count=1, gpu_id=gpu_id)


def test_a_row_outside_its_gpus_band_is_quarantined_with_the_band() -> None:
    out = gate_prices([_offer("a", 2.0), _offer("b", 60.0), _offer("c", 0.1)], MEDIANS, {},
                      Settings())
    assert [o.offer_key for o in out.offers] == ["a"]
    assert {r.offer_key for r in out.rejects} == {"b", "c"}
    assert out.rejects[0].reason.startswith("price out of band: $60.0000/GPU-hour is 24x the "
                                            "median $2.5000 of 10 open h100-sxm-80gb offers")
    assert out.refusal is not None  # two of three rows out: the prices jumped as a whole


def test_no_band_without_enough_offers_or_a_known_gpu() -> None:
    few = gate_prices([_offer("a", 90.0)], {H100: (2.5, 2)}, {}, Settings())
    unknown = gate_prices([_offer("a", 90.0, gpu_id=None)], MEDIANS, {}, Settings())
    assert few.offers and unknown.offers and not few.rejects and not unknown.rejects


def test_most_rows_moving_far_from_their_last_price_is_a_jump() -> None:
    previous = {f"k{i}": (2.0, "USD") for i in range(4)}
    moved = [_offer(f"k{i}", 2.0 * 8) for i in range(3)] + [_offer("k3", 2.0)]
    out = gate_prices(moved, {}, previous, Settings())
    assert not out.rejects and out.refusal and "3 of 4 rows" in out.refusal
    one = gate_prices([_offer("k0", 16.0)] + [_offer(f"k{i}", 2.1) for i in (1, 2, 3)], {},
                      previous, Settings())
    assert one.refusal is None and len(one.offers) == 4  # one offer's 8x change is loaded


def test_absurd_rows_count_as_jumped() -> None:
    out = gate_prices([_offer("a", 2.0)], MEDIANS, {}, Settings(), absurd=3)
    assert (out.checked, out.jumped) == (4, 3) and out.refusal


def test_thresholds_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUSCOUT_PRICE_BAND_FACTOR", "2")
    monkeypatch.setenv("GPUSCOUT_PRICE_JUMP_REFUSE_SHARE", "1")
    monkeypatch.setenv("GPUSCOUT_COLLAPSE_RATIO", "0.9")
    monkeypatch.setenv("GPUSCOUT_MAX_VRAM_GB", "300")
    monkeypatch.setenv("GPUSCOUT_DRIFT_FIELD_SHARE", "0.9")
    s = Settings()
    assert (s.price_band_factor, s.price_jump_refuse_share, s.collapse_ratio,
            s.max_vram_gb, s.drift_field_share) == (2.0, 1.0, 0.9, 300.0, 0.9)
    out = gate_prices([_offer("a", 6.0), _offer("b", 2.0)], MEDIANS, {}, s)
    assert [r.offer_key for r in out.rejects] == ["a"] and out.refusal is None
    assert hold_back(85, {}, [], 100, None, s) and not hold_back(95, {}, [], 100, None, s)
    assert hold_back(95, {"vram": 0.85}, [], 100, {"vram": 0.95}, s)  # under 0.9 now


def test_unread_rows_keep_their_offer_open_for_a_night() -> None:
    def rej(reason: str, key: str | None = None) -> Reject:
        return Reject(provider="p", reason=reason, raw="{}", offer_key=key)

    held = [rej("absurd price: ...", "held")]
    parser = [rej("x is not a price: None", "new"), rej("contact sales", "old"),
              rej("unrecognised price '-$1'"), rej("contact sales (on-demand)")]
    previous = [("old", "contact sales"), (None, "contact sales (on-demand)")]
    out = unread_rows(parser, held, previous)
    assert out.keep_open == {"held", "new"}  # "old" said the same last time: its verdict stands
    assert out.new_unkeyed == ["unrecognised price '-$1'"]


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gpuscout.pipeline.refresh.HttpClient", NoSleepClient)


def _lambda_price(old: bytes, new: bytes) -> Fault:
    return Fault(lambda r: r.url.host == "lambda.ai",
                 rewrites(lambda body: body.replace(old, new)))


def test_a_held_back_row_recovers_the_next_night(tmp_path: Path) -> None:
    db, fx = tmp_path / "w.duckdb", snapshot_fx()
    run_night(db, ["lambda", "vastai", "runpod"], SnapshotServer(), fx)  # the band's references
    key = "8x|NVIDIA H100 SXM|80GB|on_demand"
    before = open_versions(db, "lambda")[key]
    bad = run_night(db, ["lambda"], SnapshotServer(shift=NIGHT, fault=_lambda_price(
        b"$2.99", b"$99.00")), fx)
    assert bad.providers[0].error.startswith("held back 1 row (quarantined): price out of band")
    assert open_versions(db, "lambda")[key] == before  # the last good price, still current
    good = run_night(db, ["lambda"], SnapshotServer(shift=2 * NIGHT, fault=_lambda_price(
        b"$2.99", b"$3.09")), fx)
    assert (good.status, good.providers[0].changed_offers) == ("ok", 1)
    assert open_versions(db, "lambda")[key][0] == pytest.approx(3.09 * 8)


def test_a_row_unreadable_two_nights_running_is_then_closed(tmp_path: Path) -> None:
    """The one-night grace: a parser's verdict that recurs is believed (the row is gone)."""
    db, fx = tmp_path / "w.duckdb", snapshot_fx()
    run_night(db, ["scaleway"], SnapshotServer(), fx)
    key = "fr-par-2|H100-1-80G|on_demand"

    def drop_price(doc: dict) -> None:
        doc["servers"]["H100-1-80G"]["hourly_price"] = None

    fault = Fault(lambda r: r.url.params.get("page") == "1" and "availability" not in
                  r.url.path, rewrites(json_edit(drop_price)))
    first = run_night(db, ["scaleway"], SnapshotServer(shift=NIGHT, fault=fault), fx)
    assert first.providers[0].closed_offers == 0 and key in open_versions(db, "scaleway")
    fault.hits = 0
    second = run_night(db, ["scaleway"], SnapshotServer(shift=2 * NIGHT, fault=fault), fx)
    assert second.providers[0].closed_offers == 1 and key not in open_versions(db, "scaleway")


def test_a_refused_night_leaves_the_quarantine_and_a_stale_provider(tmp_path: Path) -> None:
    db, fx = tmp_path / "w.duckdb", snapshot_fx()
    run_night(db, ["vastai"], SnapshotServer(), fx)
    before = open_versions(db, "vastai")
    empty = Fault(lambda r: r.url.host == "console.vast.ai",
                  rewrites(lambda body: b'{"offers": []}'))
    report = run_night(db, ["vastai"], SnapshotServer(shift=NIGHT, fault=empty), fx)
    rec = report.providers[0]
    assert (report.status, rec.status) == ("failed", "refused")
    state = inspect(db, "vastai", report.run_id)
    assert state.open == before and state.stale == {True}
    # (not read: the slice of every other GPU, which the bundled recording does not answer)
    assert rec.error is not None and rec.error.startswith(
        "vastai: refresh produced no offers (not read: replay: no recorded response")
    later = run_night(db, ["vastai"], SnapshotServer(shift=2 * NIGHT), fx)
    assert later.status == "ok"
    assert inspect(db, "vastai", later.run_id).stale == {False}
    assert open_versions(db, "vastai").keys() == before.keys()
