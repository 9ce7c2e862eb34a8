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
