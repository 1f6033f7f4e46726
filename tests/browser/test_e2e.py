"""End to end in headless Chromium: the real app, a real browser, real clicks.

Run with ``pytest -m browser``; the server fixture and Chromium set-up are in ``conftest.py``.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import quote

import json5
import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_transcripts"
SHOTS = os.environ.get("LOOPSCOPE_SCREENSHOT_DIR")


def open_app(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("[data-testid='stAppViewContainer']")
    wait_idle(page)


def wait_idle(page: Any) -> None:
    """Until Streamlit has finished the current run (no 'running' indicator, no stale elements)."""
    page.wait_for_timeout(300)
    page.wait_for_function(
        """() => !document.querySelector("[data-testid='stStatusWidget'] [data-testid='stStatusWidgetRunningIcon']")
                 && !document.querySelector("[data-stale='true']")""",
        timeout=30_000,
    )
    page.wait_for_timeout(300)


def no_exception(page: Any) -> None:
    exceptions = page.get_by_test_id("stException")
    assert exceptions.count() == 0, exceptions.first.inner_text()


def metric(page: Any, label: str) -> int:
    label_el = page.get_by_test_id("stMetricLabel").get_by_text(label, exact=True)
    box = page.get_by_test_id("stMetric").filter(has=label_el)
    return int(box.get_by_test_id("stMetricValue").inner_text().strip())


def slider(page: Any, label: str) -> Any:
    return page.get_by_test_id("stSlider").filter(has_text=label).get_by_role("slider")


# Refused steps drawn in the overview chart: the vertices of the refusal run lines (NaN
# separates runs). Plotly's full data holds the decoded arrays (the figure itself ships numeric
# arrays base64-encoded).
COUNT_REFUSALS_JS = """() => {
    const gd = document.querySelector('.js-plotly-plot');
    if (!gd || !gd._fullData) return -1;
    return gd._fullData.filter(t => t.meta && t.meta.verdict === 'refuse' && t.meta.role === 'run')
                       .reduce((n, t) => n + Array.from(t.x || []).filter(Number.isFinite).length, 0);
}"""


def refused_steps_drawn(page: Any) -> int:
    return int(page.evaluate(COUNT_REFUSALS_JS))


def shot(page: Any, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / name), full_page=True)


# --------------------------------------------------------------------------- tests


def test_the_app_loads_and_draws_the_timeline(page: Any, server: Any) -> None:
    open_app(page, server.url)
    no_exception(page)
    page.wait_for_selector(".js-plotly-plot .main-svg")
    assert page.locator(".js-plotly-plot .scatterlayer path.point").count() > 0
    assert metric(page, "Sessions") >= 10
    assert refused_steps_drawn(page) > 0
    shot(page, "overview.png")


def test_moving_a_threshold_slider_changes_the_refusals_shown(page: Any, server: Any) -> None:
    open_app(page, server.url)
    page.wait_for_selector(".js-plotly-plot .main-svg")
    refused_before = metric(page, "gglib: refused")
    refused_before = refused_steps_drawn(page)
    s = slider(page, "Repeats allowed for tools that change things")
    s.focus()
    page.keyboard.press("ArrowRight")  # 2 → 3
    page.wait_for_function(f"(n) => ({COUNT_REFUSALS_JS})() !== n", arg=refused_before)
    wait_idle(page)
    no_exception(page)
    assert metric(page, "gglib: refused") < refused_before
    assert refused_steps_drawn(page) < refused_before
    # The URL now carries the setting, so the view can be shared.
    assert "gglib.max_repeated_batch_steps=3" in page.url


def test_a_url_with_settings_reproduces_them(page: Any, server: Any) -> None:
    open_app(page, server.url)
    default_refused = metric(page, "OpenClaw: refused")
    open_app(page, server.url + "/?openclaw.warningThreshold=3&openclaw.criticalThreshold=5"
                                "&openclaw.globalCircuitBreakerThreshold=7")
    no_exception(page)
    assert slider(page, "Warn after this many repeats").input_value() == "3"
    assert slider(page, "Block after this many repeats").input_value() == "5"
    assert metric(page, "OpenClaw: refused") > default_refused


def test_clicking_a_marker_links_to_its_session_keeping_the_settings(page: Any, server: Any) -> None:
    open_app(page, server.url + "/?gglib.max_repeated_batch_steps=3")
    page.wait_for_selector(".js-plotly-plot .scatterlayer path.point")
    point = page.locator(".js-plotly-plot .scatterlayer .trace path.point").first
    box = point.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    link = page.get_by_role("link", name=re.compile("^Open "))
    link.wait_for()
    link.click()
    page.wait_for_url(re.compile(r"/session\?"))
    wait_idle(page)
    no_exception(page)
    assert "gglib.max_repeated_batch_steps=3" in page.url
    assert "session=" in page.url or page.get_by_test_id("stSelectbox").count() > 0
    assert slider(page, "Repeats allowed for tools that change things").input_value() == "3"


def test_the_session_page_shows_both_engines_and_the_transcript(page: Any, server: Any) -> None:
    name = "ab_cycle_escapes_gglib_trips_pingpong.json"
    open_app(page, server.url + "/session?session=" + quote(name)
             + "&openclaw.warningThreshold=3&openclaw.criticalThreshold=5"
               "&openclaw.globalCircuitBreakerThreshold=7")
    no_exception(page)
    # Both engines' charts (drawn one after the other: wait for the second, not just the first).
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 2")
    wait_idle(page)
    body = page.get_by_test_id("stMain").inner_text()
    assert "Transcript" in body
    assert "First refusal" in body
    assert "back and forth" in body.lower()  # OpenClaw's ping-pong, explained in plain words
    shot(page, "session.png")


def test_an_uploaded_file_appears(page: Any, server: Any, tmp_path: Path) -> None:
    hostile = tmp_path / "..evil name;rm -rf.json"
    shutil.copy(SAMPLES / "write_loop_refused_at_third_batch.json", hostile)
    open_app(page, server.url + "/?source=upload")
    page.get_by_test_id("stFileUploaderDropzoneInput").first.set_input_files(str(hostile))
    page.get_by_text(re.compile(r"1\s+sessions from\s+1\s+files")).wait_for()
    wait_idle(page)
    no_exception(page)
    table = page.get_by_test_id("stDataFrame").first
    table.wait_for()
    assert metric(page, "Sessions") == 1
    assert metric(page, "gglib: refused") == 1


def test_downloading_the_openclaw_config_gives_valid_json5(page: Any, server: Any) -> None:
    open_app(page, server.url + "/export?openclaw.warningThreshold=25")
    no_exception(page)
    with page.expect_download() as info:
        page.get_by_role("button", name=re.compile("openclaw-loopDetection.json5")).click()
    text = Path(info.value.path()).read_text()
    block = json5.loads(text)["tools"]["loopDetection"]
    assert block["enabled"] is True
    assert block["warningThreshold"] == 25 and block["criticalThreshold"] == 26
    with page.expect_download() as info:
        page.get_by_role("button", name=re.compile("loopscope-config.json")).click()
    doc = json5.loads(Path(info.value.path()).read_text())
    assert set(doc) == {"gglib", "openclaw"}


def test_loading_an_openclaw_config_file_sets_the_controls(page: Any, server: Any, tmp_path: Path) -> None:
    cfg = tmp_path / "openclaw.json5"
    cfg.write_text("// mine\n{ tools: { loopDetection: { enabled: true, warningThreshold: 25 } } }\n")
    open_app(page, server.url)
    page.get_by_text("Presets and config files").click()
    uploader = page.get_by_test_id("stFileUploader").filter(has_text="Load a config file")
    uploader.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(cfg))
    page.get_by_role("button", name="Apply this config").click()
    wait_idle(page)
    no_exception(page)
    assert slider(page, "Warn after this many repeats").input_value() == "25"
    assert slider(page, "Block after this many repeats").input_value() == "26"
    assert "openclaw.warningThreshold=25" in page.url


# Streamlit-internal markup that axe flags and this app cannot change. Kept empty unless a
# violation is proven to come from Streamlit's own components; each entry says why.
IGNORED_AXE_RULES: dict[str, str] = {}


@pytest.mark.parametrize(
    "path", ["/", "/session", "/guide", "/export", "/import-report", "/compare", "/sweep"]
)
def test_no_serious_accessibility_violations(page: Any, server: Any, path: str) -> None:
    from axe_playwright_python.sync_playwright import Axe

    open_app(page, server.url + path)
    page.wait_for_timeout(500)
    results = Axe().run(page)
    serious = [
        v for v in results.response["violations"]
        if v.get("impact") in ("serious", "critical") and v["id"] not in IGNORED_AXE_RULES
    ]
    report = "\n".join(
        f"{v['id']} ({v['impact']}): {v['help']} — "
        + "; ".join(n["target"][0] if n.get("target") else "?" for n in v["nodes"][:5])
        for v in serious
    )
    assert not serious, report
