"""A minimal headless-Chromium driver over the DevTools protocol, standard library only.

Chromium is started with `--remote-debugging-pipe`: it reads protocol messages from fd 3 and
writes them to fd 4, NUL-separated JSON. No port, no websocket client and no browser download
(Playwright's bundled browsers cannot be fetched here); the system's Debian `chromium` is used.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import queue
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")

# Headless, offline and quiet: no sandbox (root in a container), no GPU, no background
# traffic, and every host name resolves to nothing so a stray external load fails loudly.
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-extensions", "--disable-default-apps", "--no-first-run",
    "--no-default-browser-check", "--mute-audio", "--hide-scrollbars",
    "--host-resolver-rules=MAP * ~NOTFOUND", "--remote-debugging-pipe",
)


def find_chromium() -> str | None:
    """$GPUSCOUT_CHROMIUM, else Debian's chromium (or a Chrome) where it usually lives."""
    env = os.environ.get("GPUSCOUT_CHROMIUM")
    if env:
        return env if os.access(env, os.X_OK) else None
    for path in CANDIDATES:
        if os.access(path, os.X_OK):
            return path
    return shutil.which("chromium")


class BrowserError(RuntimeError):
    pass


def _high_fd(fd: int) -> int:
    # Out of the way of 3 and 4, so the shell's `3<&r 4>&w` never overwrites its own source.
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class Chromium:
    """One browser process; `call()` sends a command and waits for its answer, keeping events."""

    def __init__(self, executable: str, profile_dir: Path, log_path: Path) -> None:
        # The pipes are close-on-exec in Python; bash maps them onto 3 and 4 for Chromium
        # (dash cannot: it only redirects single-digit fds).
        to_browser_r, to_browser_w = map(_high_fd, os.pipe())
        from_browser_r, from_browser_w = map(_high_fd, os.pipe())
        self._log = log_path.open("wb")
        self.proc = subprocess.Popen(
            ["/bin/bash", "-c", 'r=$1 w=$2; shift 2; exec "$@" 3<&"$r" 4>&"$w"', "bash",
             str(to_browser_r), str(from_browser_w), executable, *FLAGS,
             f"--user-data-dir={profile_dir}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            pass_fds=(to_browser_r, from_browser_w))
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._out = os.fdopen(to_browser_w, "wb", buffering=0)
        self._inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, args=(from_browser_r,), daemon=True)
        self._reader.start()
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def _read(self, fd: int) -> None:
        buf = b""
        with os.fdopen(fd, "rb", buffering=0) as src:
            while chunk := src.read(1 << 16):
                buf += chunk
                *messages, buf = buf.split(b"\0")
                for raw in messages:
                    self._inbox.put(json.loads(raw))
        self._inbox.put(None)  # the browser went away

    def call(self, method: str, params: dict[str, Any] | None = None, *,
             session: str | None = None, timeout: float = 30.0) -> dict[str, Any]:
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self._out.write(json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._get(deadline, method)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def _get(self, deadline: float, waiting_for: str) -> dict[str, Any]:
        try:
            item = self._inbox.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise BrowserError(f"no answer to {waiting_for} in time") from None
        if item is None:
            raise BrowserError(f"chromium exited (status {self.proc.poll()}) during "
                               f"{waiting_for}")
        return item

    def wait_event(self, method: str, *, timeout: float = 30.0) -> dict[str, Any]:
        for ev in self.events:
            if ev.get("method") == method:
                return ev
        deadline = time.monotonic() + timeout
        while True:
            ev = self._get(deadline, method)
            self.events.append(ev)
            if ev.get("method") == method:
                return ev

    def close(self) -> None:
        with contextlib.suppress(BrowserError, OSError):  # it may be gone already
            self.call("Browser.close", timeout=5)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._out.close()
        self._log.close()


def page_problems(events: list[dict[str, Any]]) -> list[str]:
    """JavaScript errors, console errors and failed loads among the page's events."""
    problems = []
    for ev in events:
        method, p = ev.get("method"), ev.get("params", {})
        if method == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            text = d.get("exception", {}).get("description") or d.get("text")
            problems.append(f"uncaught exception: {text} at {d.get('url')}:{d.get('lineNumber')}")
        elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            args = " ".join(str(a.get("value", a.get("description", ""))) for a in p["args"])
            problems.append(f"console.{p['type']}: {args}")
        elif method == "Log.entryAdded" and p["entry"].get("level") == "error":
            problems.append(f"log error ({p['entry'].get('source')}): {p['entry'].get('text')} "
                            f"{p['entry'].get('url', '')}".rstrip())
        elif method == "Network.loadingFailed":
            problems.append(f"load failed: {p.get('errorText')} ({p.get('requestId')})")
    return problems


def requested_urls(events: list[dict[str, Any]]) -> list[str]:
    return [ev["params"]["request"]["url"] for ev in events
            if ev.get("method") == "Network.requestWillBeSent"]


# Per chart container: marks drawn in its SVG data layers (plotly's `.overplot`, or any
# `.trace` group: paths, rects and images with a real size) and canvases with at least one
# non-transparent pixel.
MARKS_JS = """
(() => Array.from(document.querySelectorAll('figure.chart')).map(fig => {
  let svg = 0, canvas = 0;
  for (const el of fig.querySelectorAll(
      'svg .overplot :is(path, rect, image, circle), svg .trace :is(path, rect, image)')) {
    const box = el.getBBox();
    if (box.width > 0 && box.height > 0) svg++;
    else if (el.tagName === 'path' && (box.width > 0 || box.height > 0)) svg++;  // a line
  }
  for (const c of fig.querySelectorAll('canvas')) {
    if (!c.width || !c.height) continue;
    const ctx = c.getContext('2d');
    if (!ctx) continue;
    const px = ctx.getImageData(0, 0, c.width, c.height).data;
    for (let i = 3; i < px.length; i += 4) if (px[i]) { canvas++; break; }
  }
  return {chart: fig.dataset.chart, svg, canvas,
          traces: ((fig.querySelector('.js-plotly-plot') || {}).data || []).length};
}))()
"""


def render_page(executable: str, url: str, screenshot: Path, workdir: Path, *,
                width: int = 1280, timeout: float = 60.0,
                marks_timeout: float = 30.0, read: str | None = None) -> dict[str, Any]:
    """Open `url`, wait (up to `marks_timeout`) for every chart's marks, save a full-page PNG.

    Returns {"charts": [...], "problems": [...], "urls": [...], "log": path, "read": ...}; a
    chart that never drew is returned with zero marks rather than raised, so the caller can
    say which. `read`, a JavaScript expression, is evaluated once the charts have drawn and
    its value (JSON) returned as "read": what the page shows, read back.
    """
    log = workdir / "chromium.log"
    browser = Chromium(executable, workdir / "profile", log)
    try:
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.call("Target.attachToTarget",
                               {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            browser.call(f"{domain}.enable", session=session)
        browser.call("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
            session=session)
        browser.events.clear()
        nav = browser.call("Page.navigate", {"url": url}, session=session)
        if nav.get("errorText"):
            raise BrowserError(f"navigation to {url} failed: {nav['errorText']}")
        browser.wait_event("Page.loadEventFired", timeout=timeout)
        deadline = time.monotonic() + marks_timeout
        while True:
            marks = browser.call("Runtime.evaluate", {
                "expression": MARKS_JS, "returnByValue": True}, session=session)
            charts: list[dict[str, Any]] = marks["result"].get("value") or []
            # The containers are static HTML, so after the load event the list is complete.
            if all(c["svg"] or c["canvas"] for c in charts) or time.monotonic() > deadline:
                break
            time.sleep(0.25)
        values = None
        if read is not None:
            answer = browser.call("Runtime.evaluate", {
                "expression": read, "returnByValue": True}, session=session)
            if "exceptionDetails" in answer:
                raise BrowserError(f"reading the page failed: {answer['exceptionDetails']}")
            values = answer["result"].get("value")
        size = browser.call("Page.getLayoutMetrics", session=session)["cssContentSize"]
        shot = browser.call("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"],
                     "scale": 1}}, session=session, timeout=timeout)
        screenshot.write_bytes(base64.b64decode(shot["data"]))
        # Let late errors (from plotly's deferred work) arrive before judging the page.
        time.sleep(0.5)
        browser.call("Runtime.evaluate", {"expression": "1"}, session=session)
        events = [e for e in browser.events if e.get("sessionId") == session]
        return {"charts": charts, "problems": page_problems(events),
                "urls": requested_urls(events), "log": log, "read": values}
    finally:
        browser.close()
