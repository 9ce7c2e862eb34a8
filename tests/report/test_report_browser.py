"""The report in a real browser: headless Chromium opens it from file://, with no JavaScript
error, every chart draws marks, nothing is fetched from the network, and a screenshot is kept.

Debian's `chromium` is driven over the DevTools protocol on a pipe (see chromium_cdp.py).
Without it the test skips, unless GPUSCOUT_REQUIRE_BROWSER=1 (set by .ci/run, which installs
it) turns the skip into a failure. GPUSCOUT_SCREENSHOT_DIR, when set, receives a copy of the
screenshot.
"""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest
from chromium_cdp import find_chromium, render_page

from gpuscout.report import CHARTS

LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")


@pytest.fixture(scope="module")
def chromium() -> str:
    path = find_chromium()
    if path is None:
        reason = ("chromium is not installed: `apt-get install -y chromium` (Debian), or set "
                  "GPUSCOUT_CHROMIUM; .ci/run installs it")
        if os.environ.get("GPUSCOUT_REQUIRE_BROWSER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", head[16:24])


def test_report_renders_in_headless_chromium(chromium: str, bundled_report: Path,
                                             tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    result = render_page(chromium, bundled_report.as_uri(), shot, tmp_path)
    keep = os.environ.get("GPUSCOUT_SCREENSHOT_DIR")
    if keep:  # before the assertions: a failing render is the one worth looking at
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, Path(keep) / "report.png")
    log = f"(chromium log: {result['log']})"
    assert result["problems"] == [], log
    assert [u for u in result["urls"] if not u.startswith(LOCAL_SCHEMES)] == [], log
    assert [c["chart"] for c in result["charts"]] == list(CHARTS)
    for chart in result["charts"]:
        assert chart["traces"] >= 1, chart
        assert chart["svg"] or chart["canvas"], f"{chart['chart']} drew no marks {log}"
    width, height = _png_size(shot)
    assert width == 1280 and height > 3000  # the whole page, not just the first screen


def test_the_harness_catches_errors_and_empty_charts(chromium: str, tmp_path: Path) -> None:
    """A control page: the checks above would fail on errors, fetches and blank charts."""
    page = tmp_path / "broken.html"
    page.write_text(
        "<!doctype html><html><head><link rel='icon' href='data:,'></head><body>"
        "<figure class='chart' data-chart='blank'><svg width='10' height='10'></svg></figure>"
        "<script>console.error('console says no')</script>"
        "<script src='https://cdn.example.invalid/lib.js'></script>"
        "<script>undefinedFunction()</script></body></html>", encoding="utf-8")
    result = render_page(chromium, page.as_uri(), tmp_path / "broken.png", tmp_path,
                         marks_timeout=2)
    problems = "\n".join(result["problems"])
    assert "console.error: console says no" in problems
    assert "undefinedFunction is not defined" in problems
    assert "ERR_NAME_NOT_RESOLVED" in problems or "ERR_NAME_RESOLUTION_FAILED" in problems
    assert "https://cdn.example.invalid/lib.js" in result["urls"]
    assert result["charts"] == [{"chart": "blank", "svg": 0, "canvas": 0, "traces": 0}]


# What a person sees, read back from the rendered page: the headline total and the table's
# cells as printed, the cost bars as drawn (their length in pixels, on the x axis's scale),
# the legend's entries, the job the header says was priced and the header's counts.
READ_JS = r"""
(() => {
  const text = sel => {
    const n = document.querySelector(sel);
    return n ? n.innerText.trim() : null;
  };
  const gd = document.getElementById('chart-recommendation-cost');
  const xa = gd._fullLayout.xaxis;
  const perPx = xa.p2l(1) - xa.p2l(0);
  const bars = Array.from(gd.querySelectorAll('.barlayer .trace')).map(tr =>
      Array.from(tr.querySelectorAll('.point path')).map(p => p.getBBox().width * perPx));
  const rows = Array.from(document.querySelectorAll('table.recommendation tr.offer')).map(tr => {
    const cell = f => tr.querySelector(`[data-field="${f}"]`).innerText.trim();
    return {provider: tr.cells[1].innerText.trim(), total: cell('total_usd'),
            hours: cell('expected_hours'), storage: cell('storage_usd'),
            egress: cell('egress_usd')};
  });
  const stats = {};
  for (const d of document.querySelectorAll('header [data-stat]'))
    stats[d.dataset.stat] = d.querySelector('b').innerText.trim();
  return {best: text('[data-field="best_total"]'), job: text('[data-field="job"]'),
          rows, bars, perPx, stats,
          labels: Array.from(gd.querySelectorAll('.yaxislayer-above .ytick text'))
                       .map(t => t.textContent),
          legend: Array.from(gd.querySelectorAll('.legend .legendtext'))
                       .map(t => t.textContent)};
})()
"""


def test_the_page_shows_the_apis_numbers_for_the_same_job(chromium: str, bundled_db: Path,
                                                           bundled_report: Path,
                                                           tmp_path: Path) -> None:
    """`gpuscout report` with its defaults and `gpuscout.recommend` with the API's defaults
    price the same job; what the browser shows is what the API answers."""
    import gpuscout
    from gpuscout.report import COST_PARTS, part_unknown

    shot = tmp_path / "report.png"
    result = render_page(chromium, bundled_report.as_uri(), shot, tmp_path, read=READ_JS)
    keep = os.environ.get("GPUSCOUT_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, Path(keep) / "report-read-back.png")
    page = result["read"]
    api = gpuscout.recommend(db=bundled_db, model="meta-llama/Llama-3.1-8B", tokens=1e8,
                             limit=10)
    # the job: the API's defaults, as the header says
    assert page["job"].startswith("Recommendation priced for: meta-llama/Llama-3.1-8B · lora")
    assert "micro-batch 1 × 2,048 tokens per GPU, accumulation 1" in page["job"]
    # the headline and every row, as printed
    best = api.ranked[0]
    assert page["best"] == f"${best.total_usd:,.2f}"
    assert [r["provider"] for r in page["rows"]] == [r.provider for r in api.ranked]
    assert [r["total"] for r in page["rows"]] == [f"{r.total_usd:,.2f}" for r in api.ranked]
    assert [r["hours"] for r in page["rows"]] == [f"{r.expected_hours:,.2f}"
                                                  for r in api.ranked]
    for shown, offer in zip(page["rows"], api.ranked, strict=True):
        for key, cell in (("storage_usd", shown["storage"]), ("egress_usd", shown["egress"])):
            want = "unknown" if part_unknown(offer, key) else f"{getattr(offer, key):,.2f}"
            assert cell == want, (offer.offer_key, key)
    # the bars as drawn: one trace per part with a price, each bar as long as its part
    drawn = [(key, name) for key, name, _ in COST_PARTS
             if any(getattr(r, key) and not part_unknown(r, key) for r in api.ranked)]
    assert page["legend"] == [name for _, name in drawn]
    assert len(page["bars"]) == len(drawn)
    for (key, _), lengths in zip(drawn, page["bars"], strict=True):
        want = [getattr(r, key) for r in api.ranked]
        assert lengths == pytest.approx(want, abs=2 * page["perPx"]), key
    # no two bars read the same
    assert len(page["labels"]) == len(api.ranked) == len(set(page["labels"]))
    # the header counts a retired provider as retired, not stale
    status = gpuscout.sql("select provider, last_status, stale from provider_status",
                          db=bundled_db).to_pylist()
    ended = [r for r in status if r["last_status"] in ("retired", "no_public_prices")]
    stale = [r for r in status if r["stale"] and r not in ended]
    assert page["stats"]["stale providers"] == str(len(stale))
    assert page["stats"].get("providers ended (retired, no public prices)", "0") == str(len(ended))
    assert ended, "the bundled snapshots include a retired provider (cudo)"
