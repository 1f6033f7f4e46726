"""What a slider move on the overview works out, and when (issue #34: a move at 20,000
sessions). Driven with Streamlit's AppTest on the bundled samples: the page must show the same
things, with less made per move — the guards' comparison only while it is open, what the
settings change after the timeline, and the table's verdicts for its page of rows only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from loopscope.engines import get_engine
from loopscope.engines.base import RunColumns
from loopscope.ui import baseline, state, summaries
from loopscope.ui.pages import overview

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
SLIDER = "gglib.max_repeated_batch_steps"


def run_app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def move(at: AppTest, key: str, value: int) -> None:
    at.slider(key=key).set_value(value)
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def guards_table(at: AppTest) -> Any:
    frames = [t.value for t in at.table if "sessions refused" in getattr(t.value, "columns", [])]
    return frames[0] if frames else None


def test_the_guards_comparison_is_made_only_while_it_is_open(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Closed (as the page opens), a slider move neither works out the comparison over every
    session nor sends its table; opened, it shows a row per guard, and follows the slider."""
    calls: list[int] = []
    real = summaries.guard_rows

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(summaries, "guard_rows", counting)
    at = run_app()
    # The expander is there (closed), the page keeps its place.
    assert [e for e in at.expander if e.label == "How the guards compare on these sessions"]
    move(at, SLIDER, 3)
    assert calls == [] and guards_table(at) is None
    at.session_state[overview.GUARDS_KEY] = True  # (what a click on the expander sets)
    at.run()
    table = guards_table(at)
    assert calls and table is not None
    assert set(table["guard"]) == set(state.engine_titles().values())
    gglib = get_engine("gglib").title
    refused_at_3 = table.set_index("guard").loc[gglib, "sessions refused"]
    move(at, SLIDER, 2)
    assert guards_table(at).set_index("guard").loc[gglib, "sessions refused"] != refused_at_3


def test_what_the_settings_change_is_worked_out_after_the_timeline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a pill chosen, the timeline does not wait for the comparison with the baseline:
    every overview chart is sent before it is asked for."""
    import streamlit as st

    events: list[str] = []
    real_effects, real_chart = baseline.effects, st.plotly_chart

    def effects(*args: Any, **kwargs: Any) -> Any:
        events.append("effects")
        return real_effects(*args, **kwargs)

    def chart(*args: Any, **kwargs: Any) -> Any:
        if str(kwargs.get("key", "")).startswith("overview_chart_"):
            events.append("chart")
        return real_chart(*args, **kwargs)

    monkeypatch.setattr(baseline, "effects", effects)
    monkeypatch.setattr(st, "plotly_chart", chart)
    at = run_app()
    events.clear()
    move(at, SLIDER, 3)
    assert events.count("chart") == len(state.engines())
    assert "effects" in events
    assert events.index("effects") > max(i for i, e in enumerate(events) if e == "chart")
    # The box still says what the move changed.
    assert any("no longer refused" in m.value for m in at.markdown)


def test_a_chosen_pill_still_narrows_the_timeline_and_the_table() -> None:
    """With a pill chosen, the comparison comes before the timeline again: the rows are that
    group's sessions only."""
    at = run_app()
    move(at, SLIDER, 3)
    everyone = len(session_rows(at))
    at.session_state[baseline.ONLY_KEY] = "gglib:no_longer_refused"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Showing only gglib" in c.value for c in at.caption)
    assert 0 < len(session_rows(at)) < everyone


def session_rows(at: AppTest) -> Any:
    (frame,) = [d.value for d in at.dataframe if "session" in getattr(d.value, "columns", [])]
    return frame


def test_the_table_reads_its_rows_verdicts_alone() -> None:
    """The verdicts of a page of rows, read off a batch run's columns, are those of the whole
    run at those rows (and of a plain list of replays)."""
    from loopscope.corpus import build_corpus
    from loopscope.formats import expand_paths

    samples = ROOT / "sample_transcripts"
    targets, _ = expand_paths([str(samples)])
    corpus = build_corpus([(p, not s) for p, s in targets], fingerprint="t", origin="folder",
                          root=str(samples))
    engine = get_engine("openclaw")  # (it warns and refuses on the samples)
    run = corpus.run_many(engine, engine.default_config())
    assert isinstance(run, RunColumns)
    firsts, warnings = state.first_refusals_and_warnings(run)
    assert any(f is not None for f in firsts) and any(warnings)
    window = [5, 0, 3, len(run) - 1]
    assert state.window_refusals_and_warnings(run, window) == (
        [firsts[i] for i in window], [warnings[i] for i in window])
    plain = list(run)
    assert state.window_refusals_and_warnings(plain, window) == (
        [firsts[i] for i in window], [warnings[i] for i in window])
