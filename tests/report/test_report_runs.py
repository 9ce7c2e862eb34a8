"""The report's chart of your runs: predicted against measured, shown when there are runs."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser as HTMLParser

from gpuscout.pipeline.measured import add_runs
from gpuscout.pipeline.recommend import RecommendRequest
from gpuscout.report import RUNS_CHART, SECTIONS, build_report, load_report_data
from gpuscout.sizing.job import MAIN_JOB, Job
from gpuscout.warehouse.connection import connect

CSV = Path(__file__).parent.parent / "fixtures" / "runs" / "csv" / "qwen-profile-a100.csv"


def test_the_runs_section_plots_each_run_against_its_prediction(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    added = add_runs(db, [CSV], Job(), set(), None, datetime(2026, 5, 1, tzinfo=UTC)).added
    arch, job, _ = Job(model=MAIN_JOB.model, method=MAIN_JOB.method).resolve()
    with connect(db, read_only=True) as con:
        data = load_report_data(con, arch, job, RecommendRequest(tokens=10**6),
                                now=datetime(2026, 5, 2, tzinfo=UTC))
    assert len(data.runs) == 4 and data.recommendation is None  # no offers in this warehouse
    tree = HTMLParser(build_report(data))
    assert [s.attributes["id"] for s in tree.css("main > section")] == [*SECTIONS, "runs"]
    script = tree.css_first(f'figure[data-chart="{RUNS_CHART}"] script')
    assert script is not None
    found = re.search(r'Plotly\.newPlot\(\s*"[^"]+",\s*(\[.*?\]),\s*\{', script.text(), re.S)
    assert found is not None
    traces = {t["name"]: t for t in json.loads(found.group(1))}
    points = traces["a100-sxm-80gb / hf / lora"]
    assert sorted(points["y"]) == sorted(r.tokens_per_s for r in added)
    by_run = {c.run.run_id: c for c in data.runs}
    assert points["x"] == [by_run[d[0]].predicted_now_tokens_per_s
                           for d in points["customdata"]]
    assert "measured = predicted" in traces
    assert len(tree.css("#runs tr[data-run]")) == 4
