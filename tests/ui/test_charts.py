"""The figure builders of ``loopscope.ui.charts`` on hand-built replays."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("plotly")

from tests.engines.openclaw import _openclaw_gen

from loopscope.engines import get_engine
from loopscope.engines.base import SessionReplay, Step, first_refusal_of
from loopscope.ui import charts


def step(turn: int, call: int | None, verdict: str = "pass", detector: str | None = None,
         count: int | None = None, tools: tuple[str, ...] = ("t",), after: bool = False,
         **extra: Any) -> Step:
    return Step(turn, call, tools if call is not None else (), None if call is None else f"{tools[0]}:x",
                verdict, detector, count, after, extra)  # type: ignore[arg-type]


def replay(engine: str, steps: list[Step], name: str = "s") -> SessionReplay:
    return SessionReplay(name, f"/x/{name}", "openai_chat", engine, tuple(steps), first_refusal_of(steps))


def info(trace: Any) -> charts.TraceInfo:
    """What an overview trace draws (engine, role, verdict, detector)."""
    found = charts.trace_info(trace)
    assert found is not None, trace
    return found


def role(fig: Any, name: str) -> list[Any]:
    return [t for t in fig.data if (charts.trace_info(t) or info_none).role == name]


info_none = charts.TraceInfo("", "")


def markers(fig: Any) -> list[Any]:
    """The shaped markers: one per run of consecutive flagged steps."""
    return role(fig, "start")


def runs(fig: Any) -> list[Any]:
    """The runs of consecutive flagged steps longer than one step, one trace per detector ×
    verdict: a dotted line per run of warnings, a filled band per run of refusals (None
    separates runs)."""
    return role(fig, "run")


def segments(trace: Any) -> list[tuple[float, float, float]]:
    """A run trace's runs: (first x, last x, row), from a line's two ends or a band's four
    corners (a band is centred on its row)."""
    out: list[tuple[float, float, float]] = []
    seg: list[tuple[float, float]] = []
    for x, y in zip([*trace.x, None], [*trace.y, None], strict=True):
        if x is None:
            if seg:
                xs, ys = [p[0] for p in seg], [p[1] for p in seg]
                if trace.fill == "toself":
                    assert len(seg) == 4 and len(set(xs)) == 2 and len(set(ys)) == 2, seg
                else:
                    assert len(seg) == 2 and len(set(ys)) == 1, seg
                out.append((min(xs), max(xs), (min(ys) + max(ys)) / 2))
            seg = []
        else:
            seg.append((float(x), float(y)))
    return out


def detector_traces(fig: Any) -> list[Any]:
    """The session figure's warn/refuse markers (one trace per detector × verdict)."""
    return [t for t in fig.data
            if t.type in ("scatter", "scattergl") and (t.meta or {}).get("detector") is not None]


def vertices(trace: Any) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in zip(trace.x, trace.y, strict=True) if x is not None]


# --------------------------------------------------------------------------- positions


def test_prose_steps_sit_between_calls() -> None:
    steps = [step(0, 0, tools=("a", "b")), step(1, None), step(2, 2), step(3, None)]
    assert charts.step_positions(steps) == [0.0, 1.5, 2.0, 2.5]


def test_divergence_is_the_first_refusal() -> None:
    r = replay("gglib", [step(0, 0), step(1, 1, "refuse", "loop", 3), step(2, 2, after=True)])
    assert charts.divergence_x(r) == 1.0
    assert charts.divergence_x(replay("gglib", [step(0, 0)])) is None


# --------------------------------------------------------------------------- overview


def _rows() -> list[charts.OverviewRow]:
    refused = replay("gglib", [step(0, 0), step(1, 1), step(2, 2, "refuse", "loop", 3),
                               step(3, 3, "refuse", "loop", 4, after=True)], "refused")
    prose = replay("gglib", [step(0, None), step(1, None, "refuse", "stagnation", 6)], "prose")
    clean = replay("gglib", [step(0, 0), step(1, 1)], "clean")
    oc_warn = replay("openclaw", [step(0, 0, "warn", "generic_repeat", 10),
                                  step(1, 1, "warn", "ping_pong", 10),
                                  step(2, 2, "refuse", "ping_pong", 20), step(3, 3, after=True)], "refused")
    oc_none = replay("openclaw", [], "prose")
    oc_clean = replay("openclaw", [step(0, 0), step(1, 1)], "clean")
    return [
        charts.OverviewRow("refused", {"gglib": refused, "openclaw": oc_warn}, 4, "loop"),
        charts.OverviewRow("prose", {"gglib": prose, "openclaw": oc_none}, 0, None),
        charts.OverviewRow("clean", {"gglib": clean, "openclaw": oc_clean}, 2, "ok"),
    ]


def test_overview_has_a_run_line_and_a_start_marker_per_detector_and_verdict() -> None:
    fig = charts.overview_figure(_rows())
    key = lambda t: (info(t).engine, info(t).detector, info(t).verdict)  # noqa: E731
    # A run longer than one step goes from its first flagged step to its last ...
    assert {key(t): segments(t) for t in runs(fig)} == {("gglib", "loop", "refuse"): [(2.0, 3.0, 0)]}
    # ... and each run of consecutive steps gets one shaped marker where it starts, whose
    # hover says how many steps the run has.
    starts = {key(t): (list(t.x), [list(c) for c in t.customdata]) for t in markers(fig)}
    # (turn, call, count, steps in the run, last call, last count), turns and calls from 1
    assert starts[("gglib", "loop", "refuse")] == ([2.0], [[3, 3, 3, 2, 4, 4]])
    assert starts[("openclaw", "ping_pong", "refuse")] == ([2.0], [[3, 3, 20, 1, 3, 20]])
    assert len(starts) == 5
    # Only the markers answer hovers and clicks: a run cannot be selected, and would win the
    # hover at its first step.
    assert {t.hoverinfo for t in runs(fig)} == {"skip"}
    assert all("customdata[5]" in t.hovertemplate for t in markers(fig))


def test_a_run_breaks_at_a_pass_step_and_at_another_detector_or_verdict() -> None:
    steps = [step(0, 0, "refuse", "loop", 3), step(1, 1, "refuse", "loop", 4),
             step(2, 2),  # a pass step breaks the run
             step(3, 3, "refuse", "loop", 3), step(4, None, "refuse", "stagnation", 5),
             step(5, 5, "refuse", "loop", 4)]
    oc = [step(0, 0, "warn", "generic_repeat", 10), step(1, 1, "refuse", "generic_repeat", 20),
          step(2, 2, "refuse", "generic_repeat", 21)]
    row = charts.OverviewRow("r", {"gglib": replay("gglib", steps), "openclaw": replay("openclaw", oc)}, 6)
    fig = charts.overview_figure([row])
    loop = next(t for t in markers(fig) if info(t).detector == "loop")
    assert list(loop.x) == [0.0, 3.0, 5.0]
    assert [int(c[3]) for c in loop.customdata] == [2, 1, 1]
    line = next(t for t in runs(fig) if info(t).detector == "loop")
    # The first run's band, from call 0 to call 1; the single steps only have their markers.
    assert segments(line) == [(0.0, 1.0, 0)]
    # A refused run is a band as thick as a 5 px line.
    height = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    top, bottom = fig.layout.yaxis.range  # rows top down
    thickness = max(y for _, y in vertices(line)) - min(y for _, y in vertices(line))
    assert thickness * height / abs(top - bottom) == pytest.approx(charts.REFUSED_RUN_PX, abs=0.05)
    assert line.fillcolor == charts.detector_styles()["loop"].color and line.mode == "none"
    refused = next(t for t in markers(fig)
                   if info(t).engine == "openclaw" and info(t).verdict == "refuse")
    assert list(refused.x) == [1.0] and int(refused.customdata[0][3]) == 2


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["pass", "warn", "refuse"]),
                          st.sampled_from(["generic_repeat", "ping_pong"]),
                          st.booleans()), max_size=40))
def test_runs_and_starts_account_for_every_flagged_step(spec: list[tuple[str, str, bool]]) -> None:
    steps = [step(i, i if has_call else None, verdict, None if verdict == "pass" else detector, 1)
             for i, (verdict, detector, has_call) in enumerate(spec)]
    r = replay("openclaw", steps)
    fig = charts.overview_figure([charts.OverviewRow("r", {"openclaw": r}, len(steps))], ["openclaw"])
    flagged = r.markers
    # One line per run of consecutive steps, from the run's first step to its last (none when
    # those are the same place: a marker says it).
    expected = []
    for k, m in enumerate(flagged):
        if k and (flagged[k - 1].detector, flagged[k - 1].verdict, flagged[k - 1].position + 1) == (
                m.detector, m.verdict, m.position):
            expected[-1][1] = m.x
        else:
            expected.append([m.x, m.x, m.detector, m.verdict])
    drawn = [[x0, x1, info(t).detector, info(t).verdict]
             for t in runs(fig) for x0, x1, _ in segments(t)]
    assert sorted(drawn) == sorted(e for e in expected if e[0] != e[1])
    assert all(x0 < x1 for x0, x1, _, _ in drawn)
    # Run lengths at the starts add up to the flagged steps, one start per run.
    lengths = sum(int(c[3]) for t in markers(fig) for c in t.customdata)
    assert lengths == len(flagged)
    expected_runs = sum(1 for k, m in enumerate(r.markers)
                        if k == 0 or (r.markers[k - 1].detector, r.markers[k - 1].verdict,
                                      r.markers[k - 1].position + 1)
                        != (m.detector, m.verdict, m.position))
    assert sum(len(t.x) for t in markers(fig)) == expected_runs


def test_markers_are_shaped_per_detector_and_hollow_for_warnings() -> None:
    fig = charts.overview_figure(_rows())
    symbols = {(info(t).detector, info(t).verdict): t.marker.symbol for t in markers(fig)}
    assert symbols[("loop", "refuse")] == charts.detector_styles()["loop"].symbol
    assert symbols[("ping_pong", "refuse")] == charts.detector_styles()["ping_pong"].symbol
    assert symbols[("ping_pong", "warn")] == charts.detector_styles()["ping_pong"].symbol + "-open"
    # Every detector has its own shape (never colour alone), and its own colour.
    shapes = [s.symbol for s in charts.detector_styles().values()]
    colours = [s.color for s in charts.detector_styles().values()]
    assert len(set(shapes)) == len(shapes)
    assert len(set(colours)) == min(len(colours), 18)  # (past 18, colours repeat by design)


def test_after_divergence_is_shaded_from_the_first_refusal_to_the_end() -> None:
    fig = charts.overview_figure(_rows())
    div = {info(t).engine: t for t in role(fig, "divergence")}
    g = div["gglib"]
    assert list(g.y) == [0, 1]  # the refused row and the prose row
    assert g.base[0] == pytest.approx(2.5)  # just after the refusal at call 2
    assert g.marker.pattern.shape == "/"  # hatched, not colour alone
    o = div["openclaw"]
    assert list(o.y) == [0]
    assert o.base[0] == pytest.approx(2.5)


def test_overview_rows_are_labelled_and_sortable() -> None:
    rows = _rows()
    fig = charts.overview_figure(rows)
    ticks = list(fig.layout.yaxis.ticktext)
    assert ticks[0] == "refused [loop]" and ticks[2] == "clean [good]"
    assert [r.name for r in charts.sort_rows(rows, "refusals")] == ["refused", "prose", "clean"]
    assert charts.sort_rows(rows, "refusals", ["openclaw"])[0].name == "refused"
    assert [r.name for r in charts.sort_rows(rows, "label")] == ["refused", "clean", "prose"]
    assert [r.name for r in charts.sort_rows(rows, "length")] == ["refused", "clean", "prose"]
    assert [r.name for r in charts.sort_rows(rows, "name")] == ["clean", "prose", "refused"]
    with pytest.raises(ValueError):
        charts.sort_rows(rows, "colour")


def _sorted_by_keys(rows: list[charts.OverviewRow], by: str,
                    engines: list[str] | None = None) -> list[charts.OverviewRow]:
    """The row sort ``charts.row_order`` replaced (one key tuple per row): the reference."""
    def reps(r: charts.OverviewRow) -> list[SessionReplay]:
        return [r.replays[e] for e in (engines or r.replays) if e in r.replays]
    keys: dict[str, Any] = {
        "refusals": lambda r: (not any(x.first_refusal is not None for x in reps(r)),
                               -sum(x.refusal_count for x in reps(r)),
                               -sum(x.warning_count for x in reps(r)), r.name),
        "label": lambda r: ({"loop": 0, "ok": 1}.get(r.label or "", 2),
                            all(x.first_refusal is None for x in reps(r)), r.name),
        "length": lambda r: (-r.calls, r.name),
        "name": lambda r: r.name,
    }
    return sorted(rows, key=keys[by])


_VERDICTS = st.lists(st.sampled_from(["pass", "warn", "refuse"]), max_size=6)


@st.composite
def overview_rows(draw: Any) -> list[charts.OverviewRow]:
    rows = []
    for i in range(draw(st.integers(0, 12))):
        replays = {}
        for engine in draw(st.sets(st.sampled_from(["gglib", "openclaw"]), min_size=1)):
            verdicts = draw(_VERDICTS)
            replays[engine] = replay(engine, [
                step(k, k, v, None if v == "pass" else "loop", None if v == "pass" else 3)
                for k, v in enumerate(verdicts)])
        # Few names and lengths: ties must keep the given order, as the reference does.
        rows.append(charts.OverviewRow(draw(st.sampled_from(["a", "b", f"s{i}"])), replays,
                                       draw(st.integers(0, 3)),
                                       draw(st.sampled_from([None, "loop", "ok"]))))
    return rows


@settings(max_examples=300, deadline=None)
@given(overview_rows(), st.sampled_from(list(charts.SORT_KEYS)),
       st.sampled_from([None, ["gglib"], ["openclaw"], ["gglib", "openclaw"]]))
def test_sorting_by_columns_equals_sorting_rows_by_key(
        rows: list[charts.OverviewRow], by: str, engines: list[str] | None) -> None:
    assert charts.sort_rows(rows, by, engines) == _sorted_by_keys(rows, by, engines)


def test_overview_tick_labels_are_not_measured_on_every_draw() -> None:
    # Plotly's default ("hide past div") measures each label on every draw: a third of a draw.
    layout = charts.overview_figure(_rows()).layout
    axes = [layout[k] for k in layout if k.startswith(("xaxis", "yaxis"))]
    assert len(axes) == 4 and all(a.ticklabeloverflow == "allow" for a in axes)


def test_the_overview_is_drawn_once_per_change() -> None:
    """Streamlit hands Plotly a copy of the figure after its first draw: nothing in the figure
    as sent may look changed in the copy, or Plotly draws every trace again."""
    import json

    import plotly.io as pio

    fig = charts.overview_figure(_rows())
    spec = json.loads(pio.to_json(fig.to_dict(), validate=False))  # as Streamlit sends it
    layout = spec["layout"]
    assert "template" not in layout  # an object: compared by identity
    assert layout["datarevision"]  # arrays compared by it, not by identity
    # The modes Streamlit sets on a chart that selects points, set already.
    assert (layout["clickmode"], layout["dragmode"], layout["hovermode"]) == (
        "event+select", "pan", "closest")
    rows = [layout[k] for k in layout if k.startswith("yaxis")]
    assert all(a["autorange"] is False and len(a["range"]) == 2 for a in rows)
    for t in spec["data"]:
        assert isinstance(t["meta"], str)  # not an object
        for key in ("x", "y", "base", "text"):  # lists, not typed arrays (never equal)
            assert key not in t or isinstance(t[key], list), (t["meta"], key)
    # The revision follows the data.
    assert charts.overview_figure(_rows()).layout.datarevision == layout["datarevision"]
    assert charts.overview_figure(_rows()[:2]).layout.datarevision != layout["datarevision"]
    legend = charts.legend_figure(charts.legend_entries(fig))
    assert "template" not in json.loads(pio.to_json(legend.to_dict(), validate=False))["layout"]
    assert legend.layout.datarevision


def test_one_engine_overview() -> None:
    fig = charts.overview_figure(_rows(), ["openclaw"])
    assert {info(t).engine for t in fig.data} == {"openclaw"}


def test_overview_of_2000_sessions_stays_a_handful_of_traces() -> None:
    rows = []
    for i in range(2000):
        steps = [step(k, k) for k in range(48)] + [
            step(48, 48, "refuse", "loop", 3), step(49, 49, "refuse", "loop", 4, after=True)]
        oc = [step(k, k, "warn", "generic_repeat", 10) for k in range(50)]
        rows.append(charts.OverviewRow(f"s{i}", {"gglib": replay("gglib", steps),
                                                 "openclaw": replay("openclaw", oc)}, 50))
    t0 = time.perf_counter()
    fig = charts.overview_figure(rows)
    elapsed = time.perf_counter() - t0
    assert len(fig.data) <= 10
    # A run is drawn from its first step to its last, however long the run.
    assert sum(len(segments(t)) for t in runs(fig)) == 2000 * 2
    assert sum(len(t.x) for t in markers(fig)) == 2000 * 2  # one run per row and engine
    assert elapsed < 5.0
    # So many rows make a chart too tall for a WebGL canvas: SVG markers.
    assert {t.type for t in markers(fig)} == {"scatter"}


def test_many_markers_in_a_short_chart_are_drawn_with_webgl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(charts, "WEBGL_FROM_MARKERS", 3000)
    rows = [charts.OverviewRow(f"s{i}", {"gglib": replay(
        "gglib", [step(k, k, "refuse" if k % 2 == 0 else "pass", "loop" if k % 2 == 0 else None, 3,
                       after=k > 0) for k in range(80)])}, 80)
        for i in range(100)]  # 40 separate runs per row: 4,000 markers
    fig = charts.overview_figure(rows, ["gglib"])
    assert {t.type for t in markers(fig)} == {"scattergl"}
    small = charts.overview_figure(rows[:2], ["gglib"])
    assert {t.type for t in markers(small)} == {"scatter"}


# --------------------------------------------------------------------------- session detail


def _calls(names: list[str]) -> list[charts.CallInfo]:
    return [charts.CallInfo(n, '{"path": "a"}', f"answer {i}") for i, n in enumerate(names)]


def test_session_figure_puts_each_tool_on_its_lane_and_annotates_the_refusal() -> None:
    steps = [
        step(0, 0, tools=("write_file",), kind="batch", total=1, effective_max=2, ceiling=15),
        step(1, 1, tools=("run_tests",), kind="batch", total=1, effective_max=2, ceiling=15),
        step(2, 2, count=1, tools=("write_file",), kind="batch", total=1, effective_max=2,
             ceiling=15, identical=True),
        step(3, 3, "refuse", "loop", 3, tools=("write_file",), kind="batch", total=3,
             effective_max=2, ceiling=15, rule="strike"),
        step(4, 4, count=1, tools=("read_file",), after=True, kind="batch", total=1,
             effective_max=15, ceiling=None, rescued=True),
    ]
    r = replay("gglib", steps)
    engine = get_engine("gglib")
    counters = engine.counters(None, r, engine.default_config())
    fig = charts.session_figure(r, _calls(["write_file", "run_tests", "write_file", "write_file",
                                           "read_file"]), counters=counters, breaks=[1.5],
                                selected_step=3)
    assert list(fig.layout.yaxis.ticktext) == ["write_file", "run_tests", "read_file"]
    calls = next(t for t in fig.data if t.name == "tool call")
    assert list(calls.x) == [0, 1, 2, 3, 4] and list(calls.y) == [0, 1, 0, 0, 2]
    assert "answer 3" in calls.text[3]
    refused = [t for t in detector_traces(fig) if t.meta["verdict"] == "refuse"]
    assert len(refused) == 1 and list(refused[0].x) == [3]
    assert any("refused" in (a.text or "") for a in fig.layout.annotations)
    assert any((t.meta or {}).get("role") == "divergence" for t in fig.data)  # legend entry
    shapes = [s for s in fig.layout.shapes if s.type == "rect"]
    assert shapes and shapes[0].x0 == pytest.approx(3.5)
    count = next(t for t in fig.data if t.name and t.name.startswith("same answer in a row"))
    assert list(count.x) == [2, 3, 4] and list(count.y) == [1, 3, 1]  # no count: no point
    thresholds = next(t for t in fig.data if t.name == "allowed repeats")
    assert list(thresholds.y) == [2, 2, 2, 2, 15]  # per step: it depends on the batch's class
    names = {t.name for t in fig.data}
    assert "rescued: an answer changed" in names
    assert "same answer again after other work (a cycle)" in names
    assert any("user message" in n for n in names)


def test_unrefused_session_has_no_divergence_shading() -> None:
    r = replay("gglib", [step(0, 0, kind="batch", total=1, effective_max=2, ceiling=15)])
    fig = charts.session_figure(r, _calls(["t"]))
    assert not [s for s in fig.layout.shapes if s.type == "rect"]
    assert not any((t.meta or {}).get("role") == "divergence" for t in fig.data)


def test_openclaw_session_figure_draws_the_three_thresholds() -> None:
    engine = get_engine("openclaw")
    session = _openclaw_gen.random_session(random.Random(4), calls=12)
    config = engine.config({"warningThreshold": 2, "criticalThreshold": 4,
                            "globalCircuitBreakerThreshold": 6}).config
    prepared = engine.prepare(session)
    r = engine.run(prepared, config)
    fig = charts.session_figure(r, _calls(["x"] * len(session.calls)),
                                counters=engine.counters(prepared, r, config))
    lines = {t.name: t.y[0] for t in fig.data if t.name and t.name.split()[-1].isdigit()}
    assert lines == {"warn at 2": 2, "block at 4": 4, "hard stop at 6": 6}
    assert any(t.name.startswith("same result in a row") for t in fig.data)


def _walk_counters(steps: list[Step], history_size: int) -> tuple[list[int], list[int]]:
    """An independent, step-level walk of OpenClaw's two counts before each call: the streak of
    identical results of the same call (a changed result stops it; calls without a result are
    skipped) and the times the same call appears in the run's part of the window."""
    streaks: list[int] = []
    recents: list[int] = []
    for i, cur in enumerate(steps):
        run = cur.extra.get("run_id")
        streak = recent = 0
        latest: Any = None
        stopped = False
        for j in range(i - 1, max(0, i - history_size) - 1, -1):
            rec = steps[j]
            if rec.extra.get("run_id") != run or rec.signature != cur.signature:
                continue
            recent += 1
            h = rec.extra.get("result_hash")
            if stopped or h is None:
                continue
            if latest is None:
                latest, streak = h, 1
            elif h == latest:
                streak += 1
            else:
                stopped = True
        streaks.append(streak)
        recents.append(recent)
    return streaks, recents


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), history=st.sampled_from([2, 5, 30]))
def test_openclaw_counters_follow_the_detector_walks(seed: int, history: int) -> None:
    """The chart's counts come from the engine's own counters (no UI copy of the rules); an
    independent walk over the steps agrees with them."""
    engine = get_engine("openclaw")
    session = _openclaw_gen.random_session(random.Random(seed), calls=25)
    config = engine.config({"historySize": history}).config
    prepared = engine.prepare(session)
    r = engine.run(prepared, config)
    series = {c.label: list(c.values) for c in engine.counters(prepared, r, config)}
    streaks, recents = _walk_counters(list(r.steps), history)
    assert series["same result in a row (before this call)"] == streaks
    assert series["same call in the window"] == recents


def test_the_row_titles_get_a_left_margin_without_a_second_draw() -> None:
    rows = [*_rows(), charts.OverviewRow("x" * 200, {"gglib": replay("gglib", [step(0, 0)])}, 1)]
    fig = charts.overview_figure(rows, ["gglib"])
    longest = max(len(t) for t in fig.layout.yaxis.ticktext)
    assert longest <= 48 + 8  # long names are shortened from the left
    assert fig.layout.yaxis.automargin is False  # automargin draws the chart twice
    assert fig.layout.margin.l >= charts.ROW_TITLE_CHAR_PX * longest
    short = charts.overview_figure(_rows()[:1], ["gglib"])
    assert short.layout.margin.l < fig.layout.margin.l


def test_thirty_detectors_keep_a_shape_each() -> None:
    styles = charts.styles_for_detectors([(f"d{i}", f"detector {i}") for i in range(30)])
    shapes = [s.symbol for s in styles.values()]
    assert len(set(shapes)) == 30
    assert charts.UNKNOWN_STYLE.symbol not in shapes  # an unknown detector stays apart
    colours = [s.color for s in styles.values()]
    assert len(set(colours[:18])) == 18


def test_call_axes_count_from_one() -> None:
    vals, text = charts.call_ticks(23)
    assert text[0] == "1" and vals[0] == 0.0  # call 1 is the first call (x = 0)
    assert all(float(t) - 1 == v for v, t in zip(vals, text, strict=True))
    assert len(text) <= 9
    fig = charts.overview_figure(_rows())
    assert fig.layout.xaxis.ticktext[0] == "1"


def test_the_overview_legend_lists_each_detector_once_in_columns() -> None:
    same = replay("gglib", [step(0, 0, "refuse", "loop", 3)])
    rows = [charts.OverviewRow("a", {"gglib": same, "openclaw": replay("openclaw", [
        step(0, 0, "refuse", "loop", 3)])}, 2)]
    fig = charts.overview_figure(rows)
    assert fig.layout.showlegend is False  # drawn apart, across the page
    entries = charts.legend_entries(fig)
    assert [e.name for e in entries] == ["after divergence (would not have happened)",
                                         "the same set of tool calls again and again — refused"]
    assert entries[1].symbol == charts.detector_styles()["loop"].symbol
    many = [charts.LegendEntry(f"detector {i}", "circle", "#000") for i in range(11)]
    legend = charts.legend_figure(many)
    texts = [t for t in legend.data if t.mode == "text"]
    assert len(texts) == 11
    assert {t.x[0] for t in texts} == {0.07, 1.07, 2.07}  # three columns: four lines
    assert legend.layout.height == 4 * charts.LEGEND_ROW_PX + 12


def test_stacked_session_charts_share_the_call_axis() -> None:
    short = replay("gglib", [step(0, 0), step(1, None, "refuse", "stagnation", 6)])
    long = replay("openclaw", [step(0, 0), step(1, 1)])
    calls = _calls(["a", "b"])
    end = 3.0
    a = charts.session_figure(short, calls, x_end=end)
    b = charts.session_figure(long, calls, x_end=end)
    assert a.layout.xaxis2.range == b.layout.xaxis2.range
    assert a.layout.margin.l == b.layout.margin.l and a.layout.margin.r == b.layout.margin.r


# --------------------------------------------------------------------------- unchecked specs


def _figures_both_ways(monkeypatch: pytest.MonkeyPatch, build: Any) -> list[tuple[Any, Any]]:
    """``build()`` run with the figures wrapped as the dashboard wraps them (unchecked) and
    each spec also validated by plotly.py: (unchecked JSON, validated JSON) per figure."""
    import copy

    import plotly.io as pio

    made: list[tuple[Any, dict[str, Any]]] = []
    real = charts._figure_of_spec

    def recording(spec: dict[str, Any], **kwargs: Any) -> Any:
        kept = copy.deepcopy(spec)
        fig = real(spec, **kwargs)
        made.append((fig, kept))
        return fig

    monkeypatch.setattr(charts, "_figure_of_spec", recording)
    build()
    assert made
    return [(_as_sent(pio.to_json(fig.to_dict(), validate=False)),
             _as_sent(pio.to_json(real(spec, validate=True).to_dict(), validate=False)))
            for fig, spec in made]


def _as_sent(spec_json: str) -> Any:
    """A figure's JSON as Plotly reads it: objects compared whatever their key order
    (plotly.py's checks sort them; JavaScript reads them the same)."""
    import json

    return json.loads(spec_json)


def test_the_figures_wrapped_unchecked_are_what_plotly_would_make_of_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The overview, its legend and the primer skip plotly.py's checks (a third of a slider move): every
    spec must come out exactly as the checked figure would, as Streamlit sends it."""
    from loopscope.corpus import build_corpus
    from loopscope.engines import engine_names
    from loopscope.formats import expand_paths
    from loopscope.ui import page_helpers

    samples = Path(__file__).resolve().parents[2] / "sample_transcripts"
    targets, _ = expand_paths([str(samples)])
    corpus = build_corpus([(p, not s) for p, s in targets], fingerprint="t", origin="folder",
                          root=str(samples))
    configs = {n: get_engine(n).default_config() for n in engine_names()}
    replays = {n: [get_engine(n).replay(s, c) for s in corpus.sessions]
               for n, c in configs.items()}
    real_rows = page_helpers.overview_rows(corpus, replays)
    assert any(r.replays[e].first_refusal is not None for r in real_rows for e in replays)

    def build() -> None:
        for rows, engines in ((_rows(), None), (_rows(), ["openclaw"]),
                              (real_rows, list(replays)), (real_rows[:1], ["gglib"])):
            fig = charts.overview_figure(rows, engines)
            charts.legend_figure(charts.legend_entries(fig))
            charts.legend_figure(charts.legend_entries(fig), columns=2)
        charts.primer_figure()  # (the empty chart that loads Plotly while a corpus loads)

    pairs = _figures_both_ways(monkeypatch, build)
    assert len(pairs) == 13
    for unchecked, checked in pairs:
        assert unchecked == checked


def test_a_spec_plotly_would_coerce_is_caught_by_the_comparison(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The comparison above can fail: a number where Plotly wants a string (a name, a text)
    # is written differently once plotly.py has checked (coerced) it.
    def build() -> None:
        charts._figure_of_spec({"data": [{"type": "scatter", "x": [1, 2], "y": [1, 2],
                                          "name": 5, "text": [1, 2]}], "layout": {}})

    [(unchecked, checked)] = _figures_both_ways(monkeypatch, build)
    assert unchecked != checked
