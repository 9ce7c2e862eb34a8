"""The HTML report without a browser: sections, self-containment, numbers from `recommend()`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from offer_factory import make_offer
from reportkit import run_report
from selectolax.lexbor import LexborHTMLParser as HTMLParser

from gpuscout.core.errors import DataError, UserInputError
from gpuscout.pipeline.recommend import Recommendation, RecommendRequest, recommend
from gpuscout.pipeline.refresh import Source, refresh
from gpuscout.report import (
    CHARTS,
    COST_PARTS,
    SECTIONS,
    ReportData,
    build_report,
    load_report_data,
    part_unknown,
    publish_report,
)
from gpuscout.sizing.job import MAIN_JOB, MAIN_JOB_TOKENS, Job
from gpuscout.warehouse.arrow import offers_to_table
from gpuscout.warehouse.connection import connect
from gpuscout.warehouse.load import merge_offers, transaction

EXTERNAL = re.compile(r"^\s*(https?:)?//", re.IGNORECASE)
NUMBERS = ("price_usd_per_machine_hour", "expected_hours", "charged_hours", "compute_usd",
           "storage_usd", "egress_usd", "total_usd")


def _tree(page: Path) -> HTMLParser:
    return HTMLParser(page.read_text("utf-8"))


def _text(tree: HTMLParser, selector: str) -> str:
    node = tree.css_first(selector)
    assert node is not None, f"nothing matches {selector}"
    return node.text()


def _plot_data(tree: HTMLParser, chart: str) -> list[dict[str, Any]]:
    """The traces handed to Plotly.newPlot in one chart's inline script."""
    script = _text(tree, f'figure[data-chart="{chart}"] script')
    found = re.search(r'Plotly\.newPlot\(\s*"[^"]+",\s*(\[.*?\]),\s*\{', script, re.S)
    assert found is not None
    return json.loads(found.group(1))


def _table_rows(tree: HTMLParser) -> list[dict]:
    """The recommendation table as the page states it (raw values from data-value)."""
    rows = []
    for tr in tree.css("#recommendation table.recommendation tr.offer"):
        cells = {td.attributes["data-field"]: td.attributes.get("data-value")
                 for td in tr.css("td[data-field]")}
        rows.append({"offer_key": tr.attributes["data-offer"],
                     "provider": tr.css("td")[1].text(strip=True),
                     **{k: float(v) for k, v in cells.items() if v is not None}})
    return rows


def _expected(db: Path, *, model: str = MAIN_JOB.model, method: str = MAIN_JOB.method,
              batch_size: int = MAIN_JOB.batch_size, **req: Any) -> Recommendation:
    arch, job, _ = Job(model=model, method=method, batch_size=batch_size).resolve()
    request = RecommendRequest(**{"tokens": MAIN_JOB_TOKENS, **req})
    with connect(db, read_only=True) as con:
        return recommend(con, arch, job, request)


def _assert_matches(page: Path, rec: Recommendation) -> None:
    shown = _table_rows(_tree(page))
    assert len(shown) == len(rec.ranked) > 0
    for got, want in zip(shown, rec.ranked, strict=True):
        assert (got["provider"], got["offer_key"]) == (want.provider, want.offer_key)
        for name in NUMBERS:
            assert got[name] == pytest.approx(getattr(want, name), abs=1e-9), name
        # the breakdown adds up to the total, as the page claims
        assert got["compute_usd"] + got["storage_usd"] + got["egress_usd"] == pytest.approx(
            got["total_usd"], abs=0.011)


def test_every_section_and_chart_is_on_the_page(bundled_report: Path) -> None:
    tree = _tree(bundled_report)
    assert [s.attributes["id"] for s in tree.css("main > section")] == list(SECTIONS)
    assert [f.attributes["data-chart"] for f in tree.css("figure.chart")] == list(CHARTS)
    for name in CHARTS:  # each container holds a plotly div and its data
        assert tree.css_first(f'figure[data-chart="{name}"] div#chart-{name}') is not None
    assert "No data" not in _text(tree, "body")
    assert _text(tree, "#recommendation .verdict").startswith("Best: #1 ")


def test_the_page_is_self_contained(bundled_report: Path) -> None:
    tree = _tree(bundled_report)
    scripts = tree.css("script")
    assert scripts and all("src" not in s.attributes for s in scripts)
    assert any("plotly" in (s.text() or "")[:200] for s in scripts), "plotly.js inlined"
    for node in tree.css("[src], link[href], [srcset], iframe, object, embed"):
        for attr in ("src", "href", "srcset", "data"):
            value = node.attributes.get(attr) or ""
            assert not EXTERNAL.match(value), f"<{node.tag} {attr}={value!r}>"
    for style in tree.css("style"):
        assert "url(" not in style.text() and "@import" not in style.text()
    assert bundled_report.stat().st_size > 1_000_000  # the library itself is in the file


def test_recommendation_numbers_match_recommend(bundled_db: Path,
                                                bundled_report: Path) -> None:
    rec = _expected(bundled_db, limit=10)
    _assert_matches(bundled_report, rec)
    tree = _tree(bundled_report)
    assert f"${rec.ranked[0].total_usd:,.2f}" in _text(tree, "#recommendation .verdict")
    # the cost chart draws the same breakdown, and only the parts with a price (the bundled
    # providers publish no storage price: that part is "unknown", not a bar of $0.00)
    data = _plot_data(tree, "recommendation-cost")
    drawn = [name for key, name, _ in COST_PARTS
             if any(getattr(r, key) and not part_unknown(r, key) for r in rec.ranked)]
    assert [t["name"] for t in data] == drawn and drawn[0].startswith("compute")
    assert data[0]["x"] == [r.compute_usd for r in rec.ranked]
    # managed fine-tuning beside the rented offers, and the price notes (replayed captures)
    managed = tree.css("#recommendation table.managed tr.managed")
    assert [(tr.css_first("td").text(), float(tr.css_first('td[data-field="cost_usd"]')
             .attributes["data-value"] or "nan")) for tr in managed] == \
        [(q.service, q.cost_usd) for q in rec.managed]
    assert rec.managed and rec.price_notes
    assert rec.price_notes[0] in _text(tree, "#recommendation")


def test_job_options_reach_the_recommendation(bundled_db: Path, tmp_path: Path) -> None:
    page = run_report("--out", str(tmp_path), "--db", str(bundled_db),
                      "--model", "Qwen/Qwen2.5-7B", "--method", "lora",
                      "--batch-size", "1", "--tokens", "5e7", "--spot", "forbid",
                      "--limit", "3")
    rec = _expected(bundled_db, model="Qwen/Qwen2.5-7B", method="lora", batch_size=1,
                    tokens=50_000_000, spot="forbid", limit=3)
    _assert_matches(page, rec)
    assert all(r.pricing_model != "spot" for r in rec.ranked)
    job = _text(_tree(page), "#recommendation dl.job")
    assert "Qwen/Qwen2.5-7B" in job and "50,000,000" in job and "forbid" in job


def test_option_mistakes_are_user_errors(bundled_db: Path, tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="not both"):
        run_report("--out", str(tmp_path), "--db", str(bundled_db), "--tokens", "1e8",
                   "--dataset-tokens", "1e8")
    with pytest.raises(DataError, match="no warehouse"):
        run_report("--out", str(tmp_path), "--db", str(tmp_path / "missing.duckdb"))
    assert not (tmp_path / "index.html").exists()


def test_a_stale_provider_is_marked(bundled_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "stale.duckdb"
    db.write_bytes(bundled_db.read_bytes())
    # Replaying an empty archive fails lambda's refresh: its offers stay, now stale.
    empty = tmp_path / "empty-archive"
    empty.mkdir()
    assert refresh(["lambda"], db=db, source=Source("replay", empty, None)).status == "failed"
    page = run_report("--out", str(tmp_path / "out"), "--db", str(db))
    tree = _tree(page)
    stale = [tr.css("td")[0].text() for tr in tree.css("#freshness tr.stale")]
    assert "lambda" in stale
    red = [t for t in _plot_data(tree, "freshness") if t["name"].startswith("stale")]
    assert len(red) == 1 and "lambda" in red[0]["y"]


def _history_db(path: Path) -> None:
    """One GPU whose price changed once, and one seen once."""
    t0, t1 = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 2, 1, tzinfo=UTC)
    with connect(path) as con:
        for observed, price in ((t0, 16.0), (t1, 12.0)):
            with transaction(con):
                merge_offers(con, offers_to_table([make_offer("8x-h100", price=price,
                                                              observed_at=observed)]),
                             provider="testprov", run_id=f"r{price}", complete=True)
        with transaction(con):
            merge_offers(con, offers_to_table([make_offer(
                "1x-a100", provider="other", price=1.5, gpu_count=1, gpu_id="a100-sxm-80gb",
                gpu_label="A100", observed_at=t1)]), provider="other", run_id="r3",
                complete=True)


def test_history_steps_at_each_change_and_keeps_single_points(tmp_path: Path) -> None:
    db = tmp_path / "h.duckdb"
    _history_db(db)
    arch, job, _ = Job(model=MAIN_JOB.model, method=MAIN_JOB.method).resolve()
    with connect(db, read_only=True) as con:
        data = load_report_data(con, arch, job, RecommendRequest(tokens=10**6),
                                now=datetime(2026, 3, 1, tzinfo=UTC))
    series = {(r["gpu_id"], r["at"].date().isoformat()): r["cheapest_usd_per_gpu_hour"]
              for r in data.history}
    assert series == {("h100-sxm-80gb", "2026-01-01"): 2.0,
                      ("h100-sxm-80gb", "2026-02-01"): 1.5,
                      ("a100-sxm-80gb", "2026-02-01"): 1.5}
    page = build_report(data)
    tree = HTMLParser(page)
    assert [f.attributes["data-chart"] for f in tree.css("figure.chart")][0] == "price-history"
    traces = {t["name"]: t for t in _plot_data(tree, "price-history")}
    assert len(traces["a100-sxm-80gb"]["y"]) == 1  # one observation: one point, still drawn
    assert traces["a100-sxm-80gb"]["mode"] == "lines+markers"
    assert traces["h100-sxm-80gb"]["y"] == [2.0, 1.5]


def test_an_empty_warehouse_still_gets_a_page(tmp_path: Path) -> None:
    data = ReportData(generated_at=datetime(2026, 1, 1, tzinfo=UTC), source="empty",
                      history=[], vram=[], spot=[], freshness=[], job={"model": "x"},
                      recommendation=None, recommendation_error="no current offers match")
    tree = HTMLParser(build_report(data))
    assert [s.attributes["id"] for s in tree.css("main > section")] == list(SECTIONS)
    assert tree.css("figure.chart") == []
    assert "no current offers match" in _text(tree, "#recommendation")


def test_publish_report_writes_under_the_night(bundled_db: Path, tmp_path: Path) -> None:
    page = publish_report(bundled_db, tmp_path, date(2026, 12, 1))
    assert page == tmp_path / "2026-12-01" / "index.html"
    assert page.read_text("utf-8").startswith("<!doctype html>")
    again = publish_report(str(bundled_db), str(tmp_path),
                           datetime(2026, 12, 1, 23, 59, tzinfo=UTC))
    assert again == page
    assert [p.name for p in page.parent.iterdir()] == ["index.html"]  # no temp file left


def test_the_command_module_does_not_load_plotly() -> None:
    code = ("import sys, gpuscout.cli.report, gpuscout.report; "
            "print(sorted(m for m in ('plotly', 'duckdb') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]"


def test_checklist_section_has_a_row_per_provider_with_sources() -> None:
    from gpuscout.api import provider_checklist
    from gpuscout.pipeline.checklist import COLUMNS
    from gpuscout.pipeline.profiles import PROVIDERS

    rows = provider_checklist(today=date(2026, 12, 5))
    data = ReportData(generated_at=datetime(2026, 12, 5, tzinfo=UTC), source="facts",
                      history=[], vram=[], spot=[], freshness=[], job={},
                      recommendation=None, checklist=rows)
    tree = HTMLParser(build_report(data))
    body = tree.css("#checklist table.checklist tbody tr")
    assert sorted(tr.css_first("td").text() for tr in body) == sorted(PROVIDERS)
    runpod = next(tr for tr in body if tr.css_first("td").text() == "runpod")
    cell = runpod.css_first('td[data-field="billing_increment_s"]')
    assert cell.text() == "1s" and "docs.runpod.io" in cell.attributes["title"]
    assert len(runpod.css("td")) == len(COLUMNS) + 2  # provider, the facts, oldest age
    unknown = runpod.css_first('td[data-field="root_access"]')
    if unknown.text() == "?":
        assert "unknown" in unknown.attributes["class"]
        assert unknown.attributes["title"] == "no public source found"
