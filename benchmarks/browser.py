"""The dashboard in a real browser: slider move → updated chart, and the app's peak memory.

    python benchmarks/browser.py FOLDER [--moves 6]

Starts ``streamlit run app.py`` on a free local port with ``LOOPSCOPE_ALLOWED_ROOTS=FOLDER``,
opens ``/?source=folder&folder=FOLDER`` in Debian's Chromium (Playwright), waits for the corpus
to load and the overview chart to draw, then moves threshold sliders with the keyboard (as a
person would) and times each move in the page itself, from the key press to two moments:

- *chart*: the overview chart shows the new replay (its markers changed) and is no longer
  marked stale — what the person moving the slider is looking at;
- *settled*: Streamlit has finished the whole run (the session table below the chart, which
  is sent after it, included; no element stale, no "running" indicator).
The server's peak resident memory (``VmHWM``, and psutil samples) covers loading, preparing and
every move. :func:`slider_to_chart` is what ``benchmarks/bench.py`` calls.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]

# (slider label, key) pairs moved in turn; each move changes what the overview shows on the
# benchmark corpus. The labels are the dashboard's (loopscope.ui.state.all_fields()).
MOVES = [
    ("Warn after this many repeats", "ArrowLeft"),  # OpenClaw warningThreshold 10 → 9
    ("Repeats allowed for tools that change things", "ArrowRight"),  # gglib 2 → 3
    ("Block after this many repeats", "ArrowLeft"),  # OpenClaw criticalThreshold 20 → 19
    ("Warn after this many repeats", "ArrowLeft"),
    ("Repeats allowed for tools that change things", "ArrowRight"),
    ("Block after this many repeats", "ArrowLeft"),
]

# The same for the guards whose detectors are sequential per session (OpenHands' nudges,
# Gemini CLI's prompts): ``--sliders session-guards``.
SESSION_GUARD_MOVES = [
    ("identical call + result pairs", "ArrowRight"),  # OpenHands action_observation 4 → 5
    ("Repeats of a tool-call cycle", "ArrowLeft"),  # Gemini CLI TOOL_CALL_LOOP_THRESHOLD 5 → 4
    ("identical call + result pairs", "ArrowRight"),
    ("Repeats of a tool-call cycle", "ArrowLeft"),
    ("identical call + result pairs", "ArrowLeft"),
    ("Repeats of a tool-call cycle", "ArrowRight"),
]
SLIDERS = {"thresholds": MOVES, "session-guards": SESSION_GUARD_MOVES}

FIRST_LOOK_S = 2.5
"""A person looks at the first chart before moving a slider: the dashboard uses that pause
(its idle work: a garbage collection, each guard's first re-run arrays). The moves after it
come 0.3 s apart, faster than a person moves."""

# The overview's timeline, a chart per guard (the legend under it is a Plotly figure too, one
# that never changes).
CHART_SELECTOR = "[class*=st-key-overview_chart] .js-plotly-plot"

# A fingerprint of what the overview's charts show: every marker trace's name, length and the
# sum of its x values (Plotly's full data holds the decoded arrays), chart by chart.
CHART_SIGNATURE_JS = f"""() => {{
    const gds = Array.from(document.querySelectorAll('{CHART_SELECTOR}'));
    if (!gds.length || gds.some(gd => !gd._fullData)) return null;
    return gds.map(gd => gd._fullData.map(t => {{
        const x = t.x || [];
        let s = 0;
        for (let i = 0; i < x.length; i++) s += +x[i] || 0;
        return `${{t.name}}:${{t._length || 0}}:${{s}}`;
    }}).join('|')).join('||');
}}"""

# The charts show a replay other than ``before`` and none of their elements is stale
# (Streamlit fades the elements of the previous run until the new run has redrawn them).
CHART_UPDATED_JS = f"""(before) => {{
    const sig = ({CHART_SIGNATURE_JS})();
    if (sig === null || sig === before) return false;
    return Array.from(document.querySelectorAll('{CHART_SELECTOR}')).every(gd => {{
        const box = gd.closest('[data-stale]');
        return !box || box.getAttribute('data-stale') !== 'true';
    }});
}}"""

IDLE_JS = """() => !document.querySelector("[data-testid='stStatusWidget'] [data-testid='stStatusWidgetRunningIcon']")
    && !document.querySelector("[data-stale='true']")"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _vm_hwm_mb(pid: int) -> float | None:
    """The process's peak resident set (Linux ``VmHWM``), in MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


class _RssSampler(threading.Thread):
    """Samples the server's resident memory (psutil) every 100 ms; keeps the peak."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        import psutil

        self.process = psutil.Process(pid)
        self.peak = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.peak = max(self.peak, self.process.memory_info().rss)
            except Exception:
                return
            self.stop.wait(0.1)


def _start_server(folder: Path, log: Path, cache_dir: Path | None = None
                  ) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "LOOPSCOPE_ALLOWED_ROOTS": str(folder)}
    if cache_dir is not None:  # the on-disk cache of prepared sessions the server uses
        env["LOOPSCOPE_CACHE_DIR"] = str(cache_dir)
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1",
             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
            cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env=env,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("streamlit did not start:\n" + log.read_text(errors="replace"))
        time.sleep(0.3)


def slider_to_chart(corpus_folder: Path, moves: int = len(MOVES),
                    cache_dir: Path | None = None, timeout_s: float = 300,
                    query: str = "", sliders: list[tuple[str, str]] = MOVES) -> dict[str, Any]:
    """``{"slider_to_chart_ms" (median), "slider_to_chart_max_ms", "app_load_s",
    "app_peak_rss_mb", ...}`` for the dashboard on ``corpus_folder`` (a fresh server, using
    ``cache_dir`` as its on-disk cache of prepared sessions when given). Every wait gives up
    after ``timeout_s`` (loading a large corpus cold included). ``query`` is added to the
    page's URL (``&engines=gglib&engines=OpenClaw``: only those guards shown); ``sliders``
    are the ``(label, key)`` moves made in turn."""
    from playwright.sync_api import sync_playwright

    folder = Path(corpus_folder).resolve()
    log = Path(tempfile.mkdtemp(prefix="loopscope-bench-app-")) / "streamlit.log"
    proc, url = _start_server(folder, log, cache_dir)
    sampler = _RssSampler(proc.pid)
    sampler.start()
    times: list[float] = []
    settled: list[float] = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_context(viewport={"width": 1600, "height": 1000}).new_page()
            page.set_default_timeout(timeout_s * 1000)
            started = time.perf_counter()
            page.goto(f"{url}/?source=folder&folder={quote(str(folder))}{query}")
            page.wait_for_function(f"() => ({CHART_SIGNATURE_JS})() !== null")
            page.wait_for_function(IDLE_JS)
            load_s = time.perf_counter() - started
            sessions_caption = page.get_by_text(re.compile(r"[\d,]+\s+sessions from")).first.inner_text()
            page.wait_for_timeout(FIRST_LOOK_S * 1000)
            for label, key in (sliders * (1 + moves // len(sliders)))[:moves]:
                page.wait_for_timeout(300)
                page.wait_for_function(IDLE_JS)
                before = page.evaluate(CHART_SIGNATURE_JS)
                handle = (page.get_by_test_id("stSlider").filter(has_text=label)
                          .get_by_role("slider"))
                handle.focus()
                page.evaluate("() => { window.__lsT0 = performance.now(); }")
                page.evaluate("() => { window.__lsChart = null; }")
                page.keyboard.press(key)
                page.wait_for_function(
                    f"""(before) => {{
                        if (window.__lsChart === null && ({CHART_UPDATED_JS})(before))
                            window.__lsChart = performance.now();
                        if (window.__lsChart === null || !({IDLE_JS})()) return false;
                        window.__lsT1 = performance.now();
                        return true;
                    }}""", arg=before, polling="raf")
                chart_ms, settled_ms = page.evaluate(
                    "() => [window.__lsChart - window.__lsT0, window.__lsT1 - window.__lsT0]")
                times.append(chart_ms)
                settled.append(settled_ms)
            browser.close()
    finally:
        hwm = _vm_hwm_mb(proc.pid)
        sampler.stop.set()
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    peak = max(hwm or 0.0, sampler.peak / 2**20)
    return {
        "slider_to_chart_ms": statistics.median(times),
        "slider_to_chart_max_ms": max(times),
        "slider_to_chart_all_ms": [round(t) for t in times],
        "slider_to_settled_ms": statistics.median(settled),
        "slider_to_settled_all_ms": [round(t) for t in settled],
        "app_load_s": load_s,
        "app_sessions": sessions_caption.strip(),
        "app_peak_rss_mb": peak,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--moves", type=int, default=len(MOVES))
    parser.add_argument("--query", default="",
                        help="added to the page's URL, e.g. '&engines=gglib&engines=OpenClaw'")
    parser.add_argument("--sliders", choices=sorted(SLIDERS), default="thresholds",
                        help="the sliders moved: gglib's and OpenClaw's thresholds (default), "
                             "or OpenHands' and Gemini CLI's")
    args = parser.parse_args()
    print(json.dumps(slider_to_chart(args.folder, args.moves, query=args.query,
                                     sliders=SLIDERS[args.sliders]), indent=2))


if __name__ == "__main__":
    main()
