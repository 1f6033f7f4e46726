"""End to end in headless Chromium: the real app, a real browser, real clicks.

Run with ``pytest -m browser``; the server fixture and Chromium set-up are in ``conftest.py``.
"""

from __future__ import annotations

import itertools
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
        timeout=60_000,
    )
    page.wait_for_timeout(300)


def upload(scope: Any, path: Path) -> None:
    """Give the file uploader in ``scope`` the file ``path`` and wait until it lists it. Once
    in a CI run the uploader never received a file set right after the page had settled (it
    listed nothing for 60 s; every run since passed): a file the uploader does not list within
    15 s is set again, twice at most, so a lost upload still fails the test."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(3):
        scope.get_by_test_id("stFileUploaderDropzoneInput").first.set_input_files(str(path))
        try:
            # (A long name is shortened in its middle: "..evil...rm -rf.json".)
            scope.get_by_test_id("stFileChipName").filter(has_text=path.name[-8:]).first.wait_for(
                timeout=15_000)
            return
        except PlaywrightTimeout:
            if attempt == 2:
                raise


def no_exception(page: Any) -> None:
    exceptions = page.get_by_test_id("stException")
    assert exceptions.count() == 0, exceptions.first.inner_text()


def metric(page: Any, label: str) -> int:
    label_el = page.get_by_test_id("stMetricLabel").get_by_text(label, exact=True)
    box = page.get_by_test_id("stMetric").filter(has=label_el)
    return int(box.get_by_test_id("stMetricValue").inner_text().strip())


def slider(page: Any, label: str) -> Any:
    return page.get_by_test_id("stSlider").filter(has_text=label).get_by_role("slider")


# Refused steps drawn in the overview's timeline (a chart per guard): the steps of every
# refusal run, as the hover of each run's start marker counts them (its fourth custom value).
# A trace's ``meta`` says what it draws: "engine/role/verdict/detector".
COUNT_REFUSALS_JS = """() => {
    const gds = Array.from(document.querySelectorAll('[class*=st-key-overview_chart] .js-plotly-plot'));
    if (!gds.length || gds.some(gd => !gd._fullData)) return -1;
    return gds.flatMap(gd => gd._fullData)
              .filter(t => typeof t.meta === 'string' && t.meta.split('/')[1] === 'start'
                           && t.meta.split('/')[2] === 'refuse')
              .reduce((n, t) => n + Array.from(t.customdata || [])
                                        .reduce((m, c) => m + Number(c[3]), 0), 0);
}"""


def refused_steps_drawn(page: Any) -> int:
    return int(page.evaluate(COUNT_REFUSALS_JS))


def shot(page: Any, name: str, *, full: bool = True) -> None:
    """With LOOPSCOPE_SCREENSHOT_DIR set, a screenshot (``full=False``: the first screen
    only, as the user sees it on opening)."""
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / name), full_page=full)


# --------------------------------------------------------------------------- tests


def test_the_app_loads_and_draws_the_timeline(page: Any, server: Any) -> None:
    open_app(page, server.url)
    no_exception(page)
    page.wait_for_selector("[class*=st-key-overview_chart] .js-plotly-plot .main-svg")
    assert page.locator("[class*=st-key-overview_chart] .scatterlayer path.point").count() > 0
    assert metric(page, "Sessions") >= 10
    assert refused_steps_drawn(page) > 0
    shot(page, "overview.png")


def test_moving_a_threshold_slider_changes_the_refusals_shown(page: Any, server: Any) -> None:
    open_app(page, server.url)
    page.wait_for_selector("[class*=st-key-overview_chart] .js-plotly-plot .main-svg")
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


# Streamlit mounts a new chart element for each new figure, Plotly draws it, then the element
# hands Plotly a copy of the figure (Plotly.react). Counts, for every such update of the overview
# chart, the changes Plotly made to the drawn traces: none when it found nothing to redraw.
WATCH_REDRAWS_JS = """() => {
    window.__redraws = [];
    const P = window.Plotly;
    if (P.__watched) return;
    P.__watched = true;
    const react = P.react;
    P.react = function (gd, ...rest) {
        const chart = gd && gd.closest && gd.closest('[class*=st-key-overview_chart]');
        if (!chart || !gd._fullData) return react.call(this, gd, ...rest);  // a first draw
        const changed = [];
        const watch = new MutationObserver((m) => changed.push(...m));
        gd.querySelectorAll('.scatterlayer, .barlayer').forEach(
            (layer) => watch.observe(layer, {subtree: true, childList: true, attributes: true}));
        const done = () => setTimeout(() => {
            watch.disconnect();
            window.__redraws.push(changed.length);
        }, 50);
        const result = react.call(this, gd, ...rest);
        Promise.resolve(result).then(done, done);
        return result;
    };
}"""


def test_a_slider_move_draws_the_timeline_once(page: Any, server: Any) -> None:
    open_app(page, server.url)
    page.wait_for_selector("[class*=st-key-overview_chart] .scatterlayer path.point")
    page.wait_for_function("() => !!window.Plotly")
    page.evaluate(WATCH_REDRAWS_JS)
    before = refused_steps_drawn(page)
    s = slider(page, "Repeats allowed for tools that change things")
    s.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"(n) => ({COUNT_REFUSALS_JS})() !== n", arg=before)
    wait_idle(page)
    page.wait_for_timeout(500)
    redraws = page.evaluate("() => window.__redraws")
    # Each update after the first draw left the chart's traces as they were (Streamlit 1.67
    # makes one; it redrew the whole chart, ~270 changes here, before the figure was built for it).
    assert all(n == 0 for n in redraws), redraws
    no_exception(page)


def test_a_url_with_settings_reproduces_them(page: Any, server: Any) -> None:
    open_app(page, server.url)
    default_refused = metric(page, "OpenClaw: refused")
    open_app(page, server.url + "/?openclaw.warningThreshold=3&openclaw.criticalThreshold=5"
                                "&openclaw.globalCircuitBreakerThreshold=7")
    no_exception(page)
    assert slider(page, "Warn after this many repeats").input_value() == "3"
    assert slider(page, "Block after this many repeats").input_value() == "5"
    assert metric(page, "OpenClaw: refused") > default_refused


def test_one_click_on_a_marker_opens_its_session_keeping_the_settings(page: Any, server: Any) -> None:
    open_app(page, server.url + "/?gglib.max_repeated_batch_steps=3")
    page.wait_for_selector("[class*=st-key-overview_chart] .scatterlayer path.point")
    point = page.locator("[class*=st-key-overview_chart] .scatterlayer .trace path.point").first
    point.scroll_into_view_if_needed()
    box = point.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_url(re.compile(r"/session\?"))
    wait_idle(page)
    no_exception(page)
    assert "gglib.max_repeated_batch_steps=3" in page.url
    assert "session=" in page.url and "turn=" in page.url  # opened at the marker's turn
    assert slider(page, "Repeats allowed for tools that change things").input_value() == "3"


def _names_as_sorted_by_name() -> list[str]:
    """The sessions' names in the overview's "By name" order."""
    from loopscope.formats import load_paths

    return sorted(Path(s.source).name + s.source.partition("#")[1] + s.source.partition("#")[2]
                  for s in load_paths([str(SAMPLES)]).sessions)


def _click_table_row(page: Any, row: int) -> None:
    """One click on the overview table's ``row`` (from 1), then wait for the session page."""
    grid = page.locator("[class*=st-key-session_table]")
    row_px = 35  # Streamlit's row height; the header is one row
    # The grid draws its rows after its frame: wait for them, then bring its top to the top of
    # the window (a grid scrolled only "into view" can leave the row below the window's edge).
    page.wait_for_function(
        "([sel, h]) => { const e = document.querySelector(sel);"
        " return e && e.getBoundingClientRect().height >= h; }",
        arg=["[class*=st-key-session_table]", row_px * (row + 1)])
    grid.evaluate("e => e.scrollIntoView({block: 'start'})")
    wait_idle(page)
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 80, box["y"] + row_px * row + row_px / 2)
    page.wait_for_url(re.compile(r"/session\?.*session="))
    wait_idle(page)
    no_exception(page)


def test_one_click_on_a_table_row_opens_its_session(page: Any, server: Any) -> None:
    # Sorted by name (the URL holds the sort as the page shows it), row 3 is the third name.
    open_app(page, server.url + "/?sort=" + quote("By name") + "&openclaw.warningThreshold=5")
    names = _names_as_sorted_by_name()
    _click_table_row(page, 3)
    assert "openclaw.warningThreshold=5" in page.url
    assert quote(names[2]) in page.url, (names[2], page.url)


def test_after_a_slider_move_a_click_on_a_table_row_opens_its_session(
        page: Any, server: Any) -> None:
    # After a slider move the page runs before the sidebar's controls are drawn
    # (settings.page_runs_first): a click on its table must still open the session, with the
    # moved setting in the URL.
    open_app(page, server.url + "/?sort=" + quote("By name"))
    names = _names_as_sorted_by_name()
    slider(page, "Repeats allowed for tools that change things").focus()
    page.keyboard.press("ArrowRight")  # 2 → 3
    page.wait_for_url(re.compile(r"gglib\.max_repeated_batch_steps=3"))
    wait_idle(page)
    _click_table_row(page, 2)
    assert "gglib.max_repeated_batch_steps=3" in page.url
    assert quote(names[1]) in page.url, (names[1], page.url)


def test_the_why_block_starts_within_the_first_screen_on_the_longest_session(
        page: Any, server: Any) -> None:
    from loopscope.formats import load_paths

    longest = max(load_paths([str(SAMPLES)]).sessions, key=lambda s: len(s.calls))
    name = Path(longest.source).name
    open_app(page, server.url + "/session?session=" + quote(name))
    no_exception(page)
    why = page.locator(".st-key-why")
    why.wait_for()
    top = why.bounding_box()["y"]
    assert 0 <= top < 900 / 2, f"the why block starts {top:.0f} px down a 900 px window"
    assert "would have refused this session" in why.inner_text()
    shot(page, "long-session.png", full=False)


def test_a_link_to_a_session_that_is_not_loaded_says_so(page: Any, server: Any) -> None:
    """A shared link names a session this dashboard has not loaded: the page says so and
    shows no other session's verdicts under the empty picker."""
    open_app(page, server.url + "/session?session=" + quote("not_loaded_here.jsonl"))
    no_exception(page)
    page.get_by_text("No loaded session is called not_loaded_here.jsonl").wait_for()
    assert page.locator(".st-key-why").count() == 0
    assert page.get_by_text("Why did it stop?").count() == 0


def test_a_settings_change_in_the_url_shows_what_it_changed(page: Any, server: Any) -> None:
    from loopscope.advice import corpus_effect
    from loopscope.engines import get_engine
    from loopscope.formats import load_paths

    engine = get_engine("gglib")
    sessions = load_paths([str(SAMPLES)]).sessions
    before = [engine.replay(s, engine.default_config()).first_refusal for s in sessions]
    changed = engine.config({"max_repeated_batch_steps": 3}).config
    after = [engine.replay(s, changed).first_refusal for s in sessions]
    expected = corpus_effect(before, after)
    assert expected.no_longer_refused

    open_app(page, server.url + "/?gglib.max_repeated_batch_steps=3")
    no_exception(page)
    box = page.locator(".st-key-delta")
    box.wait_for()
    text = box.inner_text()
    assert f"{len(expected.no_longer_refused)} no longer refused" in text, text
    assert "against the shipped defaults" in text
    shot(page, "delta.png", full=False)
    # Each count narrows the overview to its sessions.
    box.get_by_role("radio", name=re.compile("no longer refused")).first.click()
    page.wait_for_function("() => location.search.includes('only=')")
    wait_idle(page)
    main = page.get_by_test_id("stMain").inner_text()
    assert f"Showing only gglib: {len(expected.no_longer_refused)} no longer refused" in main


BANDS_JS = """() => {
    // Every bar the overview draws (a chart per guard): its chart and subplot, where it is on
    // the page, and whether it is hatched (the 'after divergence' band has a pattern fill);
    // and the rows' tick centres.
    const gds = Array.from(document.querySelectorAll('[class*=st-key-overview_chart] .js-plotly-plot'));
    const bars = [];
    const ticks = [];
    let refused = 0;
    gds.forEach((gd, k) => {
        gd.querySelectorAll('.barlayer .trace').forEach((g) => {
            const sub = k + ':' + (g.closest('.subplot') ? g.closest('.subplot').classList[1] : '');
            g.querySelectorAll('path').forEach((p) => {
                const b = p.getBoundingClientRect();
                if (b.height === 0) return;
                const fill = p.style.fill || p.getAttribute('fill') || '';
                bars.push({sub, top: b.top, bottom: b.bottom, hatched: fill.includes('url(')});
            });
        });
        gd.querySelectorAll('.yaxislayer-above .ytick, .ytick').forEach((t) => {
            const b = t.getBoundingClientRect();
            if (b.top + b.height / 2 > 0) ticks.push(b.top + b.height / 2);
        });
        refused += gd._fullData.filter(t => typeof t.meta === 'string' && t.meta.endsWith('/divergence'))
            .reduce((n, t) => n + Array.from(t.y || []).length, 0);
    });
    ticks.sort((a, b) => a - b);
    return {bars, ticks: Array.from(new Set(ticks.map(y => Math.round(y * 10) / 10))), refused};
}"""


def test_each_refused_sessions_band_is_exactly_one_row_tall(page: Any, server: Any) -> None:
    open_app(page, server.url + "/?openclaw.warningThreshold=3&openclaw.criticalThreshold=5"
                                "&openclaw.globalCircuitBreakerThreshold=7")
    page.wait_for_selector("[class*=st-key-overview_chart] .barlayer path")
    wait_idle(page)
    found = page.evaluate(BANDS_JS)
    ticks = found["ticks"]
    pitch = min(b - a for a, b in itertools.pairwise(ticks) if b - a > 1)
    extents = [b for b in found["bars"] if not b["hatched"]]
    bands = [b for b in found["bars"] if b["hatched"]]
    assert bands and len(bands) == found["refused"]  # one band per refused session and guard
    for band in bands:
        height = band["bottom"] - band["top"]
        centre = (band["top"] + band["bottom"]) / 2
        assert min(abs(t - centre) for t in ticks) < 1.5, "a band sits on its session's row"
        assert height < pitch, f"a band {height:.1f} px tall covers other rows (rows {pitch:.1f} px)"
        # Exactly as tall as its session's own bar, in the same column and row.
        mine = [e for e in extents if e["sub"] == band["sub"]
                and abs((e["top"] + e["bottom"]) / 2 - centre) < 1.5]
        assert mine and abs((mine[0]["bottom"] - mine[0]["top"]) - height) < 1.0


def test_the_session_page_shows_every_guard_and_the_transcript(page: Any, server: Any) -> None:
    from loopscope.engines import engine_names

    name = "ab_cycle_escapes_gglib_trips_pingpong.json"
    open_app(page, server.url + "/session?session=" + quote(name)
             + "&openclaw.warningThreshold=3&openclaw.criticalThreshold=5"
               "&openclaw.globalCircuitBreakerThreshold=7")
    no_exception(page)
    # Every guard's chart, drawn one after the other: wait for the last, not just the first.
    n = len(engine_names())
    page.wait_for_function(
        "(n) => document.querySelectorAll('[class*=st-key-detail_] .js-plotly-plot .main-svg')"
        ".length >= n", arg=2 * n)  # each chart and its legend
    wait_idle(page)
    body = page.get_by_test_id("stMain").inner_text()
    assert "Transcript" in body
    assert "Why did it stop?" in body and "would have refused this session" in body
    assert "back and forth" in body.lower()  # OpenClaw's ping-pong, explained in plain words
    # Stacked charts share the call axis: every guard's x axis spans the same calls.
    ranges = page.evaluate("""() => Array.from(document.querySelectorAll(
        '[class*=st-key-detail_] .js-plotly-plot')).filter(g => g._fullLayout && g._fullLayout.xaxis2)
        .map(g => g._fullLayout.xaxis2.range.join(','))""")
    assert len(ranges) == n and len(set(ranges)) == 1, ranges
    shot(page, "session.png")


def test_an_uploaded_file_appears(page: Any, server: Any, tmp_path: Path) -> None:
    hostile = tmp_path / "..evil name;rm -rf.json"
    shutil.copy(SAMPLES / "write_loop_refused_at_third_batch.json", hostile)
    open_app(page, server.url + "/?source=upload")
    upload(page, hostile)
    page.get_by_text(re.compile(r"1\s+sessions from\s+1\s+files")).wait_for()
    wait_idle(page)
    no_exception(page)
    table = page.locator("[class*=st-key-session_table]")
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
    from loopscope.engines import engine_names

    assert set(doc) == set(engine_names())


def test_loading_an_openclaw_config_file_sets_the_controls(page: Any, server: Any, tmp_path: Path) -> None:
    cfg = tmp_path / "openclaw.json5"
    cfg.write_text("// mine\n{ tools: { loopDetection: { enabled: true, warningThreshold: 25 } } }\n")
    open_app(page, server.url)
    page.get_by_text("Presets and config files").click()
    uploader = page.get_by_test_id("stFileUploader").filter(has_text="Load a config file")
    upload(uploader, cfg)
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
    "path", ["/", "/session", "/guide", "/export", "/import-report", "/compare", "/sweep",
             "/upgrade"]
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


def test_a_comparison_is_shared_by_its_url(page: Any, server: Any) -> None:
    open_app(page, server.url + "/compare")
    # B's control (Streamlit names a keyed element's class after its key, dots as dashes).
    side_b = page.locator("[class*=st-key-compare-b-gglib-max_repeated_batch_steps]").get_by_role(
        "slider")
    side_b.wait_for()
    side_b.focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    # The URL is rewritten in place (no navigation): wait for it to hold B's value.
    page.wait_for_function(
        "() => location.search.includes('compare.b.gglib.max_repeated_batch_steps=4')")
    wait_idle(page)
    shared = page.url
    open_app(page, shared)
    no_exception(page)
    main = page.get_by_test_id("stMain").inner_text()
    assert "“Repeats allowed for tools that change things” 2 → 4" in main


def test_the_report_opens_without_loopscope_or_a_network(page: Any, server: Any,
                                                         tmp_path: Path) -> None:
    from loopscope.engines import engine_names

    open_app(page, server.url + "/session?session="
             + quote("quiet_poll_refused_at_observation_ceiling.json"))
    with page.expect_download() as info:
        page.get_by_role("button", name=re.compile("Report")).click()
    report = tmp_path / "report.html"
    report.write_bytes(Path(info.value.path()).read_bytes())
    fetched: list[str] = []
    page.context.route(re.compile(r"^https?://"),
                       lambda route: (fetched.append(route.request.url), route.abort()))
    page.goto(report.as_uri())
    page.wait_for_function(
        "(n) => document.querySelectorAll('.js-plotly-plot .main-svg').length >= n",
        arg=len(engine_names()))
    text = page.inner_text("body")
    assert "false refusal" in text and "Settings used" in text
    assert fetched == []


def test_a_click_anywhere_on_a_sweep_tile_applies_that_tile(page: Any, server: Any) -> None:
    """Tiles narrower than a marker once overlapped, and a click applied a neighbour's values:
    each click here lands off-centre inside a tile and must apply exactly that tile."""
    open_app(page, server.url + "/sweep")
    page.get_by_role("button", name="Run sweep").click()
    chart = "[class*=st-key-sweep] .js-plotly-plot"
    page.wait_for_selector(chart + " .main-svg")
    wait_idle(page)
    for index in (2, 13, 30):
        first = page.locator(chart).first
        first.scroll_into_view_if_needed()
        wait_idle(page)
        x, y = page.evaluate(
            "([sel, i]) => { const gd = document.querySelector(sel); "
            "return [gd.data[0].x[i], gd.data[0].y[i]]; }", [chart, index])
        point = first.locator(".scatterlayer .trace").first.locator("path.point").nth(index)
        box = point.bounding_box()
        page.mouse.click(box["x"] + box["width"] / 2 + 3, box["y"] + box["height"] / 2 + 8)
        page.wait_for_function(
            "(v) => document.body.innerText.includes(v)", arg=f"read-only tools” = {x}")
        wait_idle(page)
        no_exception(page)
        applied = page.get_by_test_id("stAlert").filter(has_text="Applied").inner_text()
        assert f"change things” = {y}" in applied and f"read-only tools” = {x}" in applied, (
            index, x, y, applied)
