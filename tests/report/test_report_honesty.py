"""What the report says is what the data says: unknown costs are "unknown", a legend holds
only what is drawn, a retired provider is not stale, colour follows a price's age, a spot
premium is a premium, no two bars read alike, and the job priced is the one every face
defaults to."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from selectolax.lexbor import LexborHTMLParser as HTMLParser

import gpuscout
from gpuscout.report import (
    COST_PARTS,
    GLOBAL_BATCH,
    ReportData,
    age_band,
    build_report,
    freshness_figure,
    offer_labels,
    part_unknown,
    recommendation_figure,
    spot_label,
    undrawn_parts,
)
from gpuscout.sizing.job import MAIN_JOB, Job


def _tree(page: Path) -> HTMLParser:
    return HTMLParser(page.read_text("utf-8"))


@pytest.fixture(scope="module")
def rec(bundled_db: Path) -> Any:
    """What the API answers for the report's default job."""
    return gpuscout.recommend(db=bundled_db, model=MAIN_JOB.model, tokens=1e8, limit=10)


def test_the_report_prices_the_job_every_face_defaults_to(bundled_report: Path,
                                                          rec: Any) -> None:
    assert MAIN_JOB == Job(model="meta-llama/Llama-3.1-8B")  # Job's own defaults
    tree = _tree(bundled_report)
    head = tree.css_first('header [data-field="job"]').text()
    assert head == ("Recommendation priced for: meta-llama/Llama-3.1-8B · lora (r=8, qv) · "
                    "micro-batch 1 × 2,048 tokens per GPU, accumulation 1 · 100,000,000 tokens")
    job = tree.css_first("#recommendation dl.job").text()
    assert "global batch" in job and GLOBAL_BATCH in job
    keys = [tr.attributes["data-offer"] for tr in tree.css("table.recommendation tr.offer")]
    assert keys == [r.offer_key for r in rec.ranked]


def test_unknown_storage_and_egress_say_unknown_not_zero(bundled_report: Path,
                                                         rec: Any) -> None:
    top = rec.ranked[0]
    assert part_unknown(top, "storage_usd") and top.storage_usd == 0.0
    assert any(r.startswith("storage price unknown for ") for r in top.reasons)
    tree = _tree(bundled_report)
    verdict = tree.css_first("#recommendation .verdict").text()
    assert "storage unknown (not counted)" in verdict and "storage $0.00" not in verdict
    first = tree.css_first("table.recommendation tr.offer")
    cell = first.css_first('td[data-field="storage_usd"]')
    assert cell.text() == "unknown" and "unknown" in cell.attributes["class"]
    assert cell.attributes["data-value"] == "0.0"  # what the total counts, for scrapers
    note = tree.css_first('#recommendation [data-field="undrawn"]').text()
    assert re.search(r"persistent storage, its price unknown for (every offer|\d+ of \d+ "
                     r"offers) \(not counted\)", note), note


def test_the_cost_legend_holds_only_the_parts_drawn(rec: Any) -> None:
    fig = recommendation_figure(rec)
    assert [t.name for t in fig.data] == ["compute (billed hours × price)"]
    # an offer with a storage price: its part is drawn, and only then in the legend
    top = rec.ranked[0]
    priced = top.model_copy(update={
        "storage_usd": 0.42, "total_usd": top.total_usd + 0.42,
        "charges": [c.model_copy(update={"state": "known", "usd": 0.42})
                    if c.what == "storage" else c for c in top.charges]})
    two = rec.model_copy(update={"ranked": [priced, *rec.ranked[1:]]})
    fig = recommendation_figure(two)
    assert [t.name for t in fig.data] == [COST_PARTS[0][1], COST_PARTS[1][1]]
    assert fig.data[1].x[0] == 0.42 and fig.data[1].x[1] is None  # unknown: no bar, not 0
    assert not any(u.startswith("persistent storage") for u in undrawn_parts(two))


def test_no_two_offers_read_alike(rec: Any) -> None:
    labels = offer_labels(rec.ranked)
    assert len(set(labels)) == len(labels)
    # the bundled job's #3 and #4: one provider's RTX 4090 sold alike, told apart by the
    # words of their keys that differ (24 or 12 vCPUs)
    twins = [label for label, r in zip(labels, rec.ranked, strict=True)
             if r.provider == "computepulse" and r.gpu_id == "rtx-4090-24gb"
             and r.gpus_per_node == 1]
    assert sorted(t.rsplit(" · ", 1)[1] for t in twins) == ["12cpu", "24cpu"]


@pytest.mark.parametrize(("share", "label"), [
    (0.48, "48 % off"), (-1.19, "119 % dearer"), (-0.03, "3 % dearer"), (0.004, "same price"),
])
def test_a_spot_premium_is_labelled_a_premium(share: float, label: str) -> None:
    assert spot_label(share) == label


def test_the_spot_chart_calls_every_premium_dearer(bundled_report: Path,
                                                   bundled_db: Path) -> None:
    rows = gpuscout.sql("select gpu_id, spot_usd, on_demand_usd from ("
                        "select gpu_id, min(price_usd_per_gpu_hour) filter (where "
                        "pricing_model = 'spot') spot_usd, min(price_usd_per_gpu_hour) filter "
                        "(where pricing_model = 'on_demand') on_demand_usd from current_offers "
                        "group by 1) where spot_usd > on_demand_usd * 1.01",
                        db=bundled_db).to_pylist()
    assert rows  # the bundled data has spot premiums (A100 40GB: +119 %)
    page = bundled_report.read_text("utf-8")
    assert "% dearer" in page and "119 % dearer" in page


def _fresh(provider: str, age: float | None, *, stale: bool = False,
           status: str = "ok") -> dict[str, Any]:
    at = datetime(2026, 12, 1, tzinfo=UTC)
    return {"provider": provider, "price_age_days": age, "stale": stale, "last_status": status,
            "newest_observed_at": at if age is not None else None, "last_success_at": at,
            "last_run_at": at, "offers": 0 if age is None else 3, "last_error": None}


ROWS = [_fresh("today", 0.4), _fresh("week", 3.0), _fresh("ancient", 1352.0),
        _fresh("failing", 2.0, stale=True, status="failed"),
        _fresh("gone", None, stale=True, status="retired")]


def test_freshness_colour_follows_the_prices_age_and_retired_is_not_stale() -> None:
    assert [age_band(r, 7) for r in ROWS] == ["fresh", "aging", "old", "aging", "ended"]
    traces = {t.name: (list(t.y), t.marker.color, t.marker.pattern.shape)
              for t in freshness_figure(ROWS, 7).data}
    assert traces["price at most a day old"] == (["today"], "#54a24b", "")
    assert traces["price 1 to 7 days old"] == (["week"], "#eeca3b", "")
    assert traces["price over 7 days old (a live one is not ranked by default)"][:2] == (
        ["ancient"], "#e45756")  # 1,352 days old is red, whatever the last run did
    stale = [n for n in traces if n.startswith("stale")]
    assert stale == ["stale (last refresh failed), price 1 to 7 days old"]
    assert traces[stale[0]][0] == ["failing"] and traces[stale[0]][2] == "/"
    assert traces["retired or no public prices: no longer refreshed"][0] == ["gone"]


def test_the_header_counts_retired_apart_from_stale() -> None:
    data = ReportData(generated_at=datetime(2026, 12, 5, tzinfo=UTC), source="x", history=[],
                      vram=[], spot=[], freshness=ROWS, job={}, recommendation=None)
    tree = HTMLParser(build_report(data))
    stats = {d.attributes["data-stat"]: d.css_first("b").text()
             for d in tree.css("header [data-stat]")}
    assert stats["stale providers"] == "1"  # "failing" only
    assert stats["providers ended (retired, no public prices)"] == "1"
    assert stats["providers"] == "4"  # those still selling
    assert stats["providers with prices over 7 days old"] == "1"
    rows = {tr.css_first("td").text(): tr.attributes["class"]
            for tr in tree.css("#freshness table tbody tr")}
    assert rows["gone"] == "age-ended" and rows["failing"].startswith("stale ")
