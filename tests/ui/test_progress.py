"""Progress bars: redrawn at most twice a second, and jumping rather than gliding."""

from __future__ import annotations

import itertools

import pytest

pytest.importorskip("streamlit")

from streamlit.testing.v1 import AppTest

from loopscope.ui import progress


def test_a_load_is_drawn_at_most_twice_a_second_with_the_first_and_last() -> None:
    shown: list[tuple[float, str]] = []
    now = [0.0]
    show = progress.throttled(lambda f, t: shown.append((f, t)), clock=lambda: now[0])
    for part in range(1, 1251):  # 20,000 files in parts of 16, one part every 40 ms
        now[0] = part * 0.04
        show(part / 1250, f"Read {part * 16} files")
    show(1.0, "Loaded 20000 sessions")
    assert shown[0] == (1 / 1250, "Read 16 files")
    assert shown[-2:] == [(1.0, "Read 20000 files"), (1.0, "Loaded 20000 sessions")]
    assert 95 <= len(shown) <= 105  # 50 s at up to 2 a second, not 1,250
    fractions = [f for f, _ in shown]
    assert fractions == sorted(fractions)
    times = [round(f * 1250 * 0.04, 6) for f in fractions[:-2]]
    assert all(b - a >= progress.PROGRESS_EVERY_S for a, b in itertools.pairwise(times))


def test_a_custom_interval_is_kept() -> None:
    shown: list[float] = []
    now = [0.0]
    show = progress.throttled(lambda f, t: shown.append(f), every_s=0.25, clock=lambda: now[0])
    for step in range(1, 101):  # 10 s in steps of 0.1 s
        now[0] = step * 0.1
        show(step / 101, "")
    assert 30 <= len(shown) <= 40


def _bar_script() -> None:
    import streamlit as st

    from loopscope.ui.progress import bar_progress, still_bars

    still_bars()
    bar = st.progress(0.0, text="Loading")
    show = bar_progress(bar, every_s=1000.0)
    for i in range(1, 10):
        show(i / 10, f"{i}/10")
    show(1.5, "done")  # the last, clipped


def test_the_bar_jumps_to_its_values_and_its_style_takes_no_room() -> None:
    at = AppTest.from_function(_bar_script).run()
    assert not at.exception
    # On the page: the bar alone, at its last value (clipped to 1).
    bars = at.get("progress")
    assert len(bars) == 1 and bars[0].value == 100 and bars[0].proto.text == "done"
    assert not at.main.get("html")
    # Beside the page, out of its flow: the style that stops the glide.
    styles = [e.proto.body for block in at._tree.children.values() for e in block.get("html")]
    assert styles == [progress.STILL_BAR_STYLE]


def test_the_style_is_only_a_style_element_that_stops_transitions_on_progress_bars() -> None:
    from streamlit.elements.html import _html_only_style_tags  # what Streamlit keeps out of flow

    assert _html_only_style_tags(progress.STILL_BAR_STYLE)
    style = progress.STILL_BAR_STYLE
    assert "[data-testid='stProgress']" in style and "transition: none" in style
