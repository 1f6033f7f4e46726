"""The dashboard, driven headlessly with Streamlit's AppTest on the bundled samples.

Verdicts are read from the overview's session table (one row per session, a "first refusal"
and a "warnings" column per engine), so every test checks what a user would see.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import json5
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from loopscope import config_io
from loopscope.engines import get_engine

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
SAMPLES = ROOT / "sample_transcripts"
PAGES = ROOT / "src" / "loopscope" / "ui" / "pages"

WRITE_LOOP = "write_loop_refused_at_third_batch.json"
AB_CYCLE = "ab_cycle_escapes_gglib_trips_pingpong.json"
QUIET_POLL = "quiet_poll_refused_at_observation_ceiling.json"
RESCUED = "polling_rescued_by_changing_output.json"
STAGNATION = "prose_stagnation_same_reply_six_times.jsonl"
UNKNOWN_TOOL = "unknown_tool_retry_storm.jsonl"
EXEC_POLL = "exec_poll_durations_change.jsonl"
POST_COMPACTION = "post_compaction_loop.jsonl"


def run_app(query: dict[str, str] | None = None, page: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    if page is not None:
        at.switch_page(str((PAGES / f"{page}.py").relative_to(ROOT)))
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def table(at: AppTest) -> Any:
    """The overview's session table as a DataFrame, indexed by session name."""
    frames = [d.value for d in at.dataframe if "session" in getattr(d.value, "columns", [])]
    assert frames, "the session table is missing"
    return frames[0].set_index("session")


def cell(at: AppTest, session: str, column: str) -> Any:
    return table(at).loc[session, column]


def control(at: AppTest, key: str) -> Any:
    for kind in ("slider", "select_slider", "toggle", "text_area", "number_input", "text_input",
                 "selectbox"):
        found = [w for w in getattr(at, kind) if w.key == key]
        if found:
            return found[0]
    raise AssertionError(f"no control with key {key!r}")


def sidebar_warnings(at: AppTest) -> list[str]:
    return [w.value for w in at.sidebar.warning]


def sidebar_notes(at: AppTest) -> list[str]:
    return [w.value for w in (*at.sidebar.warning, *at.sidebar.info)]


# --------------------------------------------------------------------------- loading


def test_app_opens_on_the_samples_without_errors() -> None:
    at = run_app()
    sessions = table(at)
    assert len(sessions) >= 10
    assert WRITE_LOOP in sessions.index
    metrics = {m.label: m.value for m in at.metric}
    assert int(metrics["Sessions"]) == len(sessions)
    # The overview chart is drawn.
    assert at.get("plotly_chart")
    # Progress bars jump, and the page's style sheet applies (styles out of the page's flow,
    # sent on every run): not in the page.
    from loopscope.ui.layout import PAGE_STYLE
    from loopscope.ui.progress import STILL_BAR_STYLE

    assert not at.main.get("html")
    styles = [e.proto.body for block in at._tree.children.values() for e in block.get("html")]
    assert styles[:2] == [STILL_BAR_STYLE, PAGE_STYLE]
    assert all(s.startswith("<style>") and s.endswith("</style>") for s in styles)


def test_the_overview_leaves_each_shown_guards_first_re_run_work_for_idle_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With a large corpus (the idle collector on), the overview queues each shown guard's
    :meth:`Corpus.warm` for the next pause: the first slider move does not build the arrays."""
    from loopscope.ui import gc_policy, state

    collector = gc_policy.IdleCollector(delay=3600, collect=lambda: None)
    collector.enabled = True
    monkeypatch.setattr(gc_policy, "_collector", collector)
    warmed: list[tuple[str, str | None]] = []
    monkeypatch.setattr("loopscope.corpus.loaded.Corpus.warm",
                        lambda self, engine, version=None: warmed.append((engine.name, version)))
    run_app()
    assert warmed == []  # not during the run
    collector.collect_now()
    assert sorted(warmed) == sorted((e, state.get_engine(e).default_version)
                                    for e in state.engine_names())


def test_settings_that_replay_session_by_session_say_so_on_a_large_corpus(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every guard re-runs a corpus in vectorised passes, Gemini CLI's content what-ifs and
    Qwen Code's settings too: on a large corpus only Qwen Code's two reply-text what-ifs (with
    its opt-in checks on they replay the sessions with reply text one by one) say they are
    slow. A guard that declared settings replayed one by one has them named; a guard without a
    vectorised re-run says its every change is slow."""
    from loopscope.corpus import Corpus
    from loopscope.engines.gemini_cli.engine import GeminiCliEngine
    from loopscope.ui import settings

    def notes() -> list[str]:
        return [c.value for c in run_app().sidebar.caption if "one by one" in c.value]

    assert notes() == []  # (the samples: a small corpus)
    monkeypatch.setattr(settings, "SLOW_RERUNS_FROM", 1)
    found = notes()
    # (every re-run in columns; Qwen Code names its two reply-text what-ifs only)
    assert len(found) == 1, found
    assert found[0].startswith(":material/hourglass_top: A change to "), found
    assert "Repeats of a 50\\-character window that count as a loop" in found[0]  # (md)
    assert "Identical thoughts in a row that count as a loop" in found[0]
    assert "the other Qwen Code settings re-run them all at once" in found[0]
    assert "Tool calls allowed per prompt" not in found[0]
    qwen = found
    monkeypatch.setattr(GeminiCliEngine, "replayed_one_by_one",
                        ("CONTENT_CHUNK_SIZE", "MAX_HISTORY_LENGTH"))
    found = [n for n in notes() if n not in qwen]
    assert len(found) == 1, found
    assert "Length of the compared text window" in found[0]
    assert "Text remembered by the content check" in found[0] and "what-if" not in found[0]
    assert "the other Gemini CLI settings re-run them all at once" in found[0]
    # (a what-if's label says so once)
    labels = [s.label for s in run_app().sidebar.slider]
    assert any("what-if" in label for label in labels)
    assert not any(label.count("what-if") > 1 for label in labels), labels
    # A guard whose re-runs are not in columns: every change.
    monkeypatch.setattr(Corpus, "reruns_in_columns",
                        lambda self, engine, version=None: engine.name != "openhands")
    monkeypatch.setattr(GeminiCliEngine, "replayed_one_by_one", ())
    found = [n for n in notes() if n not in qwen]
    assert len(found) == 1 and "OpenHands replays each of the" in found[0], found
    assert "a change here takes seconds" in found[0]


@pytest.mark.parametrize(
    ("page", "heading"),
    [("overview", "Where would the guard refuse?"), ("session", "Why did it stop?"),
     ("import_report", "Import report"), ("export", "Export"), ("guide", "Guide")],
)
def test_every_page_renders(page: str, heading: str) -> None:
    at = run_app(page=page)  # fails on any exception
    titles = ([t.value for t in at.title] + [h.value for h in at.header]
              + [h.value for h in at.subheader])
    assert any(heading in t for t in titles), titles
    # Errors on a page are refusals being explained, never failures of the page itself.
    for e in at.error:
        assert "Traceback" not in e.value and "unavailable" not in e.value


def test_every_setting_has_a_labelled_control_with_its_upstream_name() -> None:
    from loopscope.engines import get_engine
    from loopscope.ui.state import all_fields, engines, fields_of, version_key

    # Each engine version with its own settings is drawn once (the version chosen by the URL).
    shown: set[str] = set()
    schemas: dict[tuple[str, ...], dict[str, str]] = {}
    for name in engines():
        for version in get_engine(name).versions:
            names = tuple(f.key for f in fields_of(name, version))
            schemas.setdefault(names, {})[version_key(name)] = version
    for query in schemas.values():
        at = run_app(query)
        for name in engines():
            version = query.get(version_key(name))
            for f in fields_of(name, version or get_engine(name).default_version):
                w = control(at, f.key)
                assert w.label and w.label != f.native
                assert f"`{f.native}`" in (w.help or "")
                shown.add(f.key)
    assert shown == {f.key for f in all_fields()}


# --------------------------------------------------------------------------- each control moves verdicts

# (starting URL, control key, new value, session, column, value before, value after)
# "before"/"after" are substrings of the cell; "" means the session is not refused.
CASES = [
    ({}, "gglib.max_repeated_batch_steps", 3, WRITE_LOOP, "gglib first refusal", "loop", ""),
    ({}, "gglib.max_observation_steps", 30, QUIET_POLL, "gglib first refusal", "loop", ""),
    ({}, "gglib.max_observation_steps", "off", RESCUED, "gglib first refusal", "", "loop"),
    ({}, "gglib.max_stagnation_steps", 6, STAGNATION, "gglib first refusal", "stagnation", ""),
    ({}, "gglib.observation_tools", "", QUIET_POLL, "gglib first refusal", "call 17", "call 4"),
    ({}, "openclaw.enabled", False, UNKNOWN_TOOL, "OpenClaw first refusal", "unknown_tool_repeat", ""),
    ({}, "openclaw.unknownToolThreshold", 20, UNKNOWN_TOOL, "OpenClaw first refusal",
     "unknown_tool_repeat", ""),
    ({}, "openclaw.criticalThreshold", 40, EXEC_POLL, "OpenClaw first refusal", "generic_repeat", ""),
    ({}, "openclaw.historySize", 5, EXEC_POLL, "OpenClaw first refusal", "generic_repeat", ""),
    ({}, "openclaw.detectors.genericRepeat", False, EXEC_POLL, "OpenClaw first refusal",
     "generic_repeat", ""),
    ({}, "openclaw.postCompactionGuard.windowSize", 5, POST_COMPACTION, "OpenClaw first refusal",
     "post_compaction_guard", ""),
    ({}, "openclaw.warningThreshold", 3, AB_CYCLE, "OpenClaw warnings", 3, 10),
    (
        {"openclaw.warningThreshold": "3", "openclaw.criticalThreshold": "5",
         "openclaw.globalCircuitBreakerThreshold": "7"},
        "openclaw.detectors.pingPong", False, AB_CYCLE, "OpenClaw first refusal", "ping_pong",
        "generic_repeat",
    ),
    (
        {"openclaw.warningThreshold": "2", "openclaw.criticalThreshold": "3",
         "openclaw.globalCircuitBreakerThreshold": "100", "openclaw.detectors.genericRepeat": "false",
         "openclaw.detectors.knownPollNoProgress": "false", "openclaw.detectors.pingPong": "false"},
        "openclaw.globalCircuitBreakerThreshold", 5, EXEC_POLL, "OpenClaw first refusal", "",
        "global_circuit_breaker",
    ),
]


def _matches(value: Any, expected: Any) -> bool:
    """``expected``: "" (not refused), a count, or a detector id / text in the cell (the table
    shows a detector by its plain label)."""
    from loopscope.ui import charts

    if expected == "":
        return value == ""
    if isinstance(expected, int):
        return int(value) == expected
    text = str(value)
    if str(expected) in charts.detector_styles():
        return charts.style_of(str(expected)).title in text
    return str(expected) in text


@pytest.mark.parametrize(
    ("query", "key", "value", "session", "column", "before", "after"),
    CASES,
    ids=[f"{c[1]}={c[2]}" for c in CASES],
)
def test_moving_a_control_changes_the_verdicts(
    query: dict[str, str], key: str, value: Any, session: str, column: str, before: Any, after: Any
) -> None:
    at = run_app(query)
    assert _matches(cell(at, session, column), before), cell(at, session, column)
    control(at, key).set_value(value)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert _matches(cell(at, session, column), after), cell(at, session, column)


def test_openclaw_thresholds_3_5_7_refuse_the_ping_pong() -> None:
    at = run_app()
    assert cell(at, AB_CYCLE, "OpenClaw first refusal") == ""
    for key, value in (("openclaw.warningThreshold", 3), ("openclaw.criticalThreshold", 5),
                       ("openclaw.globalCircuitBreakerThreshold", 7)):
        control(at, key).set_value(value)
        at.run()
    assert _matches(cell(at, AB_CYCLE, "OpenClaw first refusal"), "ping_pong")
    # gglib lets the same A/B cycle through (its known limitation).
    assert cell(at, AB_CYCLE, "gglib first refusal") == ""


def test_gglib_repeat_limit_2_to_3_lets_the_write_loop_through() -> None:
    at = run_app()
    assert _matches(cell(at, WRITE_LOOP, "gglib first refusal"), "loop")
    before = {m.label: m.value for m in at.metric}["gglib: refused"]
    control(at, "gglib.max_repeated_batch_steps").set_value(3)
    at.run()
    assert cell(at, WRITE_LOOP, "gglib first refusal") == ""
    after = {m.label: m.value for m in at.metric}["gglib: refused"]
    assert int(after) < int(before)


# --------------------------------------------------------------------------- URL and notices


def test_url_query_parameters_set_the_configuration() -> None:
    at = run_app({
        "gglib.max_repeated_batch_steps": "3",
        "gglib.max_observation_steps": "off",
        "openclaw.warningThreshold": "3",
        "openclaw.criticalThreshold": "5",
        "openclaw.globalCircuitBreakerThreshold": "7",
        "openclaw.detectors.genericRepeat": "false",
    })
    assert control(at, "gglib.max_repeated_batch_steps").value == 3
    assert control(at, "gglib.max_observation_steps").value == "off"
    assert control(at, "openclaw.warningThreshold").value == 3
    assert control(at, "openclaw.detectors.genericRepeat").value is False
    assert _matches(cell(at, AB_CYCLE, "OpenClaw first refusal"), "ping_pong")
    assert cell(at, WRITE_LOOP, "gglib first refusal") == ""


def _unescape(text: str) -> str:
    import re

    return re.sub(r"\\(.)", r"\1", text)


def test_ordering_clamps_are_shown_as_they_apply() -> None:
    at = run_app({"openclaw.warningThreshold": "10", "openclaw.criticalThreshold": "10"})
    notes = _unescape(" ".join(sidebar_warnings(at)))
    # In the sidebar's words, with the guard's own names in a muted aside.
    assert ("“Block after this many repeats” raised to 11 because it must exceed “Warn after "
            "this many repeats” (10)") in notes
    assert "OpenClaw would refuse to load this config" in notes
    asides = _unescape(" ".join(c.value for c in at.sidebar.caption))
    assert "criticalThreshold raised to 11 because it must exceed warningThreshold (10)" in asides
    # The control shows the value the guard really uses, and can be moved to it.
    assert "In use: **11**" in asides
    at.button(key="_use_openclaw.criticalThreshold").click()
    at.run()
    assert control(at, "openclaw.criticalThreshold").value == 11
    assert not any("raised to" in w for w in sidebar_warnings(at))
    at = run_app()
    assert not any("raised to" in w for w in sidebar_warnings(at))


def test_a_value_beyond_the_slider_is_typed() -> None:
    at = run_app({"openclaw.historySize": "250"})
    box = control(at, "openclaw.historySize")
    assert type(box).__name__ == "NumberInput" and box.value == 250
    slider = control(at, "openclaw.warningThreshold")
    assert type(slider).__name__ == "Slider" and slider.max <= 30
    at.toggle(key="typed").set_value(True)
    at.run()
    assert type(control(at, "openclaw.warningThreshold")).__name__ == "NumberInput"


def test_short_or_empty_observation_patterns_are_flagged() -> None:
    at = run_app({"gglib.observation_tools": 'read_file\n""\nls'})
    notes = _unescape(" ".join(sidebar_notes(at)))
    assert "matches every tool" in notes
    assert "(ls;" in notes


def test_presets_restore_the_upstream_defaults() -> None:
    at = run_app({"gglib.max_repeated_batch_steps": "5", "openclaw.historySize": "7"})
    at.button(key="_preset_defaults").click()
    at.run()
    assert control(at, "gglib.max_repeated_batch_steps").value == 2
    assert control(at, "openclaw.historySize").value == 30


def test_restore_default_patterns() -> None:
    at = run_app({"gglib.observation_tools": "read_file"})
    at.button(key="_restore_gglib.observation_tools").click()
    at.run()
    from loopscope.engines.gglib.config import DEFAULT_OBSERVATION_TOOLS

    assert control(at, "gglib.observation_tools").value.splitlines() == list(DEFAULT_OBSERVATION_TOOLS)


def _main_errors(at: AppTest) -> list[str]:
    import re

    return [re.sub(r"\\(.)", r"\1", e.value) for e in at.main.error]


def test_a_folder_outside_the_allowed_roots_is_refused_in_the_main_area() -> None:
    at = run_app({"source": "folder", "folder": "/etc"})
    errors = _main_errors(at)
    assert any("The folder cannot be opened" in e and "allowed roots" in e for e in errors), errors
    assert WRITE_LOOP in table(at).index  # the samples are shown instead, and it says so
    assert any("bundled samples are shown instead" in e for e in errors)


def test_samples_outside_the_allowed_roots_are_not_shown_silently(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import streamlit as st

    monkeypatch.setenv("LOOPSCOPE_ALLOWED_ROOTS", str(tmp_path))
    st.cache_resource.clear()
    try:
        at = run_app()
        errors = _main_errors(at)
        assert any("bundled sample sessions lie outside" in e and str(tmp_path) in e
                   for e in errors), errors
        assert any("No sessions are loaded" in i.value for i in at.info)
    finally:
        st.cache_resource.clear()


def test_a_folder_inside_the_allowed_roots_loads() -> None:
    at = run_app({"source": "folder", "folder": str(SAMPLES)})
    assert WRITE_LOOP in table(at).index
    assert not _main_errors(at)


def test_counts_past_a_thousand_are_written_with_separators(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    import streamlit as st

    folder = tmp_path / "sessions"
    folder.mkdir()
    one = SAMPLES / "write_loop_refused_at_third_batch.json"
    for i in range(1001):
        shutil.copy(one, folder / f"s{i:04d}.json")
    monkeypatch.setenv("LOOPSCOPE_ALLOWED_ROOTS", str(tmp_path))
    monkeypatch.setenv("LOOPSCOPE_CACHE", "off")
    st.cache_resource.clear()
    try:
        at = run_app({"source": "folder", "folder": str(folder)})
        metrics = {m.label: m.value for m in at.metric}
        assert metrics["Sessions"] == "1,001"
        assert metrics["gglib: refused"] == "1,001"  # (every copy is the write loop)
        assert any("**1,001** sessions from **1,001** files" in c.value
                   for c in at.sidebar.caption), [c.value for c in at.sidebar.caption]
        assert any("of 1,001, in this order" in c.value for c in at.caption)
        at.switch_page(str((PAGES / "compare.py").relative_to(ROOT)))
        at.run()
        assert {m.label: m.value for m in at.metric}["Unchanged"] == "1,001"
        assert any(m.label == "Sessions refused" and m.value == "1,001" for m in at.metric)
        at.switch_page(str((PAGES / "sweep.py").relative_to(ROOT)))
        at.run()
        assert any("labelled good work, of 1,001." in c.value for c in at.caption)
    finally:
        st.cache_resource.clear()


# --------------------------------------------------------------------------- session page


def _plain_text(values: list[str]) -> str:
    """Rendered Markdown text as a reader sees it (backslash escapes removed)."""
    import re

    return re.sub(r"\\(.)", r"\1", " ".join(values))


def test_session_page_explains_the_first_refusal() -> None:
    # The URL names a session as the page shows it (relative to the loaded folder).
    at = run_app({"session": WRITE_LOOP}, page="session")
    errors = _plain_text([e.value for e in at.error])
    assert "gglib would have refused this session at call 4 (turn 4)" in errors
    assert "write_file" in errors
    markdown = _plain_text([m.value for m in at.markdown])
    assert "labelled a real loop from turn 3, and gglib stops it" in markdown
    assert "Nothing to change" in markdown  # the label agrees: no advice to undo it


def test_a_false_refusal_gets_honest_advice_that_can_be_applied_and_undone() -> None:
    at = run_app({"session": QUIET_POLL}, page="session")
    markdown = _plain_text([m.value for m in at.markdown])
    assert "this is a false refusal" in markdown
    # Every change is judged on the other sessions too, and the page says when none is free.
    assert "of the other 12 sessions" in markdown or "no other session changes" in markdown
    apply = [b for b in at.button if b.key and b.key.startswith("x_gglib_")]
    assert apply
    before = control(at, "gglib.max_observation_steps").value
    apply[0].click()
    at.run()
    assert not at.exception
    # Every change here stops catching a labelled loop: Apply asks first, naming the cost,
    # and nothing is applied until the answer is yes.
    asked = [_plain_text([w.value]) for w in at.warning
             if "Apply it anyway?" in _plain_text([w.value])]
    assert asked and "labelled a real loop" in _plain_text(asked)
    assert "for all 13 loaded sessions" in _plain_text(asked)
    assert control(at, "gglib.max_observation_steps").value == before
    assert not [m for m in at.markdown if "Applied for every session" in m.value]
    at.button(key=f"{apply[0].key}_yes").click()
    at.run()
    assert not at.exception
    assert control(at, "gglib.max_observation_steps").value != before or any(
        control(at, k).value != v for k, v in (("gglib.max_repeated_batch_steps", 2),))
    banner = _plain_text([m.value for m in at.markdown if "Applied for every session" in m.value])
    assert "Across the 13 loaded sessions" in banner
    at.button(key="applied.undo").click()
    at.run()
    assert control(at, "gglib.max_observation_steps").value == before
    assert control(at, "gglib.max_repeated_batch_steps").value == 2
    assert not [m for m in at.markdown if "Applied for every session" in m.value]


def test_advice_that_switches_a_guard_off_asks_first_and_cancel_applies_nothing() -> None:
    """OpenHands lets the quiet poll through only with stuck detection off: its Apply names
    what that costs over every loaded session, and Cancel leaves the settings alone."""
    at = run_app({"session": QUIET_POLL}, page="session")
    block = at.get_by_key("advice-openhands")
    shown = _plain_text([m.value for m in block.markdown])
    assert "[last resort: switches “Stuck detection on” off]" in shown.replace(
        ":red-badge[:material/power_settings_new: ", "[")
    assert control(at, "openhands.enabled").value is True
    at.button(key="x_openhands_0").click()
    at.run()
    asked = _plain_text([w.value for w in at.warning if "anyway" in w.value])
    assert asked == ("This switches “Stuck detection on” off in OpenHands for all 13 loaded "
                     "sessions: 3 refusals go away, 2 of them labelled real loops. Apply it "
                     "anyway?")
    assert control(at, "openhands.enabled").value is True  # not applied by the first click
    at.button(key="x_openhands_0_cancel").click()
    at.run()
    assert control(at, "openhands.enabled").value is True
    assert not [w for w in at.warning if "anyway" in w.value]
    assert not [m for m in at.markdown if "Applied for every session" in m.value]
    at.button(key="x_openhands_0").click()
    at.run()
    at.button(key="x_openhands_0_yes").click()
    at.run()
    assert not at.exception
    assert control(at, "openhands.enabled").value is False


# --------------------------------------------------------------------------- export


def _codes(at: AppTest) -> list[str]:
    return [c.value for c in at.code]


def test_export_holds_valid_configs_for_both_engines() -> None:
    at = run_app({"openclaw.warningThreshold": "25", "gglib.max_observation_steps": "off",
                  "openclaw.detectors.knownPollNoProgress": "false"}, page="export")
    codes = _codes(at)
    oc_text = next(c for c in codes if "loopDetection" in c and c.lstrip().startswith("//"))
    assert "// OpenClaw's default is false; loopscope replays with true" in oc_text
    block = json5.loads(oc_text)["tools"]["loopDetection"]
    assert block["enabled"] is True
    assert block["warningThreshold"] == 25
    assert block["criticalThreshold"] == 26  # the effective (clamped) value
    assert block["detectors"]["knownPollNoProgress"] is False
    # OpenClaw's own schema check accepts it: no ordering messages, no type errors.
    from loopscope.engines.openclaw.v2026_6.config import validate_block

    assert validate_block(block, "tools.loopDetection") == []

    gg = json.loads(next(c for c in codes if c.lstrip().startswith("{") and "max_repeated" in c
                         and "gglib" not in c))
    assert gg["max_observation_steps"] is None

    doc = json.loads(next(c for c in codes if '"gglib"' in c and '"openclaw"' in c))
    # The loopscope config round-trips through each engine's resolve_config.
    for name in ("gglib", "openclaw"):
        settings = config_io.engine_settings(doc, name)
        resolved = get_engine(name).resolve_config(settings, [], None).config
        assert resolved == get_engine(name).resolve_config(settings, [], None).config
    oc = get_engine("openclaw").resolve_config(config_io.engine_settings(doc, "openclaw"), []).config
    assert oc.warning_threshold == 25 and oc.critical_threshold == 26
    ggc = get_engine("gglib").resolve_config(config_io.engine_settings(doc, "gglib"), []).config
    assert ggc.max_observation_steps is None


def test_verdict_report_downloads_are_offered() -> None:
    at = run_app(page="export")
    keys = {b.key for b in at.get("download_button")} if at.get("download_button") else set()
    assert {"dl_csv", "dl_jsonl", "dl_openclaw", "dl_gglib", "dl_loopscope"} <= keys or len(
        at.get("download_button")
    ) >= 5


def test_page_scripts_hold_no_bare_strings_that_magic_would_print() -> None:
    """Streamlit's "magic" writes every bare expression of a page script on the page (all but
    the module docstring): an attribute docstring at module level showed above the overview's
    title. ``.streamlit/config.toml`` turns magic off, but only when run from the repository."""
    import ast

    pages = Path(__file__).resolve().parents[2] / "src" / "loopscope" / "ui" / "pages"
    found = []
    for path in sorted(pages.glob("*.py")):
        body = ast.parse(path.read_text(encoding="utf-8")).body
        found += [f"{path.name}:{node.lineno}" for node in body[1:] if isinstance(node, ast.Expr)]
    assert found == []


def test_import_problems_are_shown_in_the_main_area(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    import streamlit as st

    shutil.copy(SAMPLES / WRITE_LOOP, tmp_path / WRITE_LOOP)
    (tmp_path / "broken.json").write_text('{"messages": [', encoding="utf-8")
    monkeypatch.setenv("LOOPSCOPE_ALLOWED_ROOTS", str(tmp_path))
    st.cache_resource.clear()
    try:
        at = run_app({"source": "folder", "folder": str(tmp_path)})
        warnings = [w.value for w in at.main.warning]
        assert any(w.startswith("Import:") and "1 file could not be imported" in w for w in warnings), warnings
        assert not [w for w in at.sidebar.warning if "Import" in w.value]
        links = [el.proto.label for el in at.get("page_link")]
        assert "See the import report" in links
    finally:
        st.cache_resource.clear()


class _Upload:
    def __init__(self, name: str, data: bytes, file_id: str) -> None:
        self.name, self.size, self.file_id, self._data = name, len(data), file_id, data

    def getvalue(self) -> bytes:
        return self._data


def test_the_same_file_uploaded_twice_is_loaded_once(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import streamlit as st

    from loopscope.ui import data_source, settings

    monkeypatch.setattr(data_source, "upload_dir", lambda: str(tmp_path))
    body = (SAMPLES / WRITE_LOOP).read_bytes()
    state: dict[str, Any] = {}
    monkeypatch.setattr(st, "session_state", state)
    settings._store_uploads([_Upload("a.json", body, "1"), _Upload("copy of a.json", body, "2"),
                             _Upload("b.json", body + b" ", "3")])
    stored = state[data_source.UPLOADS_KEY]
    assert [u.original_name for u in stored] == ["a.json", "b.json"]
    assert state[settings.DUPLICATES_KEY] == ["copy of a.json"]


def _delta_text(at: AppTest) -> str:
    return _unescape(" ".join(m.value for m in at.markdown))


def test_a_pinned_baseline_is_what_later_changes_are_measured_against() -> None:
    import json as _json

    at = run_app({"gglib.max_repeated_batch_steps": "3"})
    assert "against the shipped defaults" in _delta_text(at)
    assert "no longer refused" in _delta_text(at)
    # The table says which sessions, each as the two runs' first refusals differ.
    before = table(run_app())["gglib first refusal"]
    after, changed = table(at)["gglib first refusal"], table(at)["against the baseline"]
    assert changed[WRITE_LOOP] == "gglib: no longer refused"
    for name, text in changed.items():
        was, now = before[name], after[name]
        assert text == ("" if was == now else "gglib: no longer refused" if not now
                        else "gglib: newly refused" if not was else "gglib: refused elsewhere")
    assert "" in set(changed)
    at.button(key="delta.pin").click()
    at.run()
    text = _delta_text(at)
    assert "against your pinned baseline" in text and "Nothing changes against" in text
    control(at, "gglib.max_repeated_batch_steps").set_value(2)
    at.run()
    text = _delta_text(at)
    assert "newly refused" in text and "no longer refused" not in text
    # A link with the baseline reproduces the comparison.
    shared = run_app({"baseline": _json.dumps({"gglib.max_repeated_batch_steps": 3})})
    assert "against your pinned baseline" in _delta_text(shared)
    assert "newly refused" in _delta_text(shared)
    at.button(key="delta.unpin").click()
    at.run()
    assert "These are the shipped defaults" in _delta_text(at)


def test_rows_keep_their_places_while_a_setting_moves_and_follow_a_pinned_baseline() -> None:
    at = run_app({"rows": "25"})
    first = list(table(at).index)
    control(at, "gglib.max_repeated_batch_steps").set_value(3)
    at.run()
    assert cell(at, WRITE_LOOP, "gglib first refusal") == ""  # (no longer refused) ...
    assert list(table(at).index) == first  # ... yet in the same place
    assert any("by the baseline's verdicts" in c.value for c in at.caption)
    # Sorted by the current verdicts, the rows move: what pinning them as the baseline does.
    at.button(key="delta.pin").click()
    at.run()
    pinned = list(table(at).index)
    assert pinned != first and pinned.index(WRITE_LOOP) > first.index(WRITE_LOOP)
    # A sort that reads no verdict says nothing of the baseline.
    control(at, "sort").set_value("name")
    at.run()
    assert list(table(at).index) == sorted(first)
    assert not any("baseline's verdicts" in c.value for c in at.caption)


def _main_shape(at: AppTest) -> list[str]:
    """The main area's elements, in order, by type and key (what the browser matches a run's
    elements to the last run's by)."""
    def name(node: Any) -> str:
        proto = getattr(node, "proto", None)
        return f"{node.type}:{getattr(proto, 'id', '') or getattr(node, 'key', '') or ''}"
    return [name(node) for node in at.main.children.values()]


def test_a_slider_move_keeps_every_element_in_its_place() -> None:
    """The first run's loading bar and chart primer leave no element the next run lacks:
    otherwise every element after them moves up a place and the browser builds every chart
    again on the first slider move."""
    at = run_app()
    first = _main_shape(at)
    control(at, "openclaw.warningThreshold").set_value(9)
    at.run()
    assert not at.exception
    assert _main_shape(at) == first


# --------------------------------------------------------------------------- run order


def test_the_page_runs_before_the_sidebar_controls_once_their_values_are_known(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A slider move sends the page (the chart being watched) before the sidebar's ~50
    controls; other runs (the first, one that adds a guard, a button's) draw the controls
    first: a control reads the URL only when drawn, and a page opening another page keeps
    only the settings of controls drawn by then."""
    from loopscope.ui import page_helpers, settings

    order: list[str] = []
    drawn, opened = settings.render_sidebar_settings, page_helpers.open_pending
    monkeypatch.setattr(settings, "render_sidebar_settings",
                        lambda: (order.append("controls"), drawn())[1])
    monkeypatch.setattr(page_helpers, "open_pending", lambda: (order.append("page"), opened())[1])

    at = run_app({"engines": ["gglib"], "gglib.max_repeated_batch_steps": "3"})
    assert order == ["controls", "page"]
    assert cell(at, WRITE_LOOP, "gglib first refusal") == ""  # the URL's value, on run one

    order.clear()
    control(at, "gglib.max_repeated_batch_steps").set_value(2)
    at.run()
    assert order == ["page", "controls"]
    assert _matches(cell(at, WRITE_LOOP, "gglib first refusal"), "loop")  # the new value

    order.clear()
    at.multiselect(key="engines").set_value(["gglib", "openclaw"])
    at.run()
    assert order == ["controls", "page"]  # OpenClaw's controls were not in the state yet

    order.clear()
    control(at, "openclaw.warningThreshold").set_value(3)
    at.run()
    assert order == ["page", "controls"]
    order.clear()
    at.button(key="_preset_defaults").click()
    at.run()
    assert order == ["controls", "page"]  # not a setting moved
    assert control(at, "openclaw.warningThreshold").value == 10
    assert not at.exception, [e.value for e in at.exception]


# --------------------------------------------------------------------------- start-up


def test_the_pages_libraries_are_imported_once_on_a_thread_while_the_corpus_loads(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from loopscope.ui import app, data_source

    monkeypatch.setattr(app, "_preloading", [])
    monkeypatch.setattr(app, "PAGE_LIBRARIES", ("colorsys",))
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    seen: list[bool] = []
    loading = data_source.load_current_corpus

    def load(**kwargs: Any) -> Any:  # (the thread was started before the load)
        seen.append(bool(app._preloading))
        return loading(**kwargs)

    monkeypatch.setattr(data_source, "load_current_corpus", load)
    at = run_app()
    at.run()  # (a second run starts no second thread)
    assert seen and all(seen) and len(app._preloading) == 1
    thread = app._preloading[0]
    assert thread.name == "loopscope-preload" and thread.daemon
    thread.join(10)
    assert "colorsys" in sys.modules


def test_the_browser_loads_plotly_while_the_corpus_loads_once_per_session(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The first run of a browser session holds an empty chart while the corpus loads (the
    browser then fetches Plotly's code meanwhile) and removes it after; later runs don't."""
    from loopscope.ui import app, charts, data_source

    events: list[str] = []
    primer, loading = charts.primer_figure, data_source.load_current_corpus

    def primed() -> Any:
        events.append("primer")
        return primer()

    def load(**kwargs: Any) -> Any:
        events.append("load")
        return loading(**kwargs)

    monkeypatch.setattr(charts, "primer_figure", primed)
    monkeypatch.setattr(data_source, "load_current_corpus", load)
    at = run_app()
    assert events == ["primer", "load"]
    assert at.get("plotly_chart")  # (the overview's charts)
    assert not [c for c in at.get("plotly_chart") if '"data":[]' in c.proto.spec]  # removed
    assert at.session_state[app.CHARTS_PRIMED_KEY]
    events.clear()
    at.run()
    assert events == ["load"]
    assert not at.exception, [e.value for e in at.exception]


def test_no_chart_is_primed_while_another_session_imports_pandas(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """plotly.py serialising a figure reads a half-imported pandas (and fails): while the
    preload imports, a new session starts without the primer, and without an error."""
    import threading

    from loopscope.ui import app, charts

    calls: list[int] = []
    primer = charts.primer_figure
    monkeypatch.setattr(charts, "primer_figure", lambda: calls.append(1) or primer())
    holding, release = threading.Event(), threading.Event()

    def importing() -> None:  # (the other session's preload, mid-import)
        with app._importing:
            holding.set()
            release.wait(30)

    preload = threading.Thread(target=importing, daemon=True)
    monkeypatch.setattr(app, "_preloading", [preload])
    preload.start()
    assert holding.wait(30)
    # (the page then waits for that import: let it end a moment after the run starts)
    threading.Timer(1.0, release.set).start()
    at = run_app()
    assert calls == [] and app.CHARTS_PRIMED_KEY not in at.session_state
    assert not preload.is_alive()
    assert not at.exception, [e.value for e in at.exception]


def test_no_page_runs_while_the_pages_libraries_are_half_imported(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A page waits for the preload: a session page opened as the server's first request ran
    while pandas was half imported, and plotly.py failed on it ("partially initialized module
    'pandas' has no attribute 'Series'"). Here the preloaded library takes 3 s to import and
    the corpus loads in far less: the page must still find it whole."""
    import sys

    import streamlit as st

    from loopscope.ui import app

    (tmp_path / "loopscope_slow_library.py").write_text(
        "import time\ntime.sleep(3)\nWHOLE = True\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "loopscope_slow_library", raising=False)
    monkeypatch.setattr(app, "_preloading", [])
    monkeypatch.setattr(app, "PAGE_LIBRARIES", ("loopscope_slow_library",))
    whole: list[bool] = []
    navigation = st.navigation

    def navigate(*args: Any, **kwargs: Any) -> Any:
        page = navigation(*args, **kwargs)
        run = page.run

        def run_when_whole() -> None:
            module = sys.modules.get("loopscope_slow_library")
            whole.append(getattr(module, "WHOLE", False))
            run()

        page.run = run_when_whole
        return page

    monkeypatch.setattr(st, "navigation", navigate)
    at = run_app()
    assert whole == [True]
    assert not at.exception, [e.value for e in at.exception]
