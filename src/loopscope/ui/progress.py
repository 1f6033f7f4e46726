"""Progress bars for long work on the server's cores (loading a folder, preparing it for another
guard version, a sweep), drawn so that the browser takes as little of those cores as it can.

On a machine that serves the dashboard and runs its browser (a laptop; the benchmark's two
cores), every redraw of a bar is browser work taken from the workers importing the files:
- Streamlit's bar glides to each new value (a CSS transition on its transform), and a
  software-drawn page paints every frame of that glide: the glide is switched off and the
  bar redrawn at most twice a second, which gives the import workers most of the core the
  browser took (the measurements are in ``benchmarks/README.md``).
- Each redraw is also a message and a React render: one per part of files is thousands on
  a large folder, a noticeable share of a cold start, hence :func:`throttled`.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import streamlit as st

from loopscope.corpus import Progress

PROGRESS_EVERY_S = 0.5
"""A progress bar is redrawn at most this often (plus its first and its last value)."""

STILL_BAR_STYLE = (
    "<style>[data-testid='stProgress'] * "
    "{transition: none !important; animation: none !important;}</style>"
)
"""Streamlit's progress bars jump to each new value instead of gliding there. Only a
``<style>`` element: Streamlit places such HTML out of the page's flow, taking no room."""


def throttled(show: Progress, every_s: float = PROGRESS_EVERY_S,
              clock: Callable[[], float] = time.monotonic) -> Progress:
    """``show`` for at most one update every ``every_s`` seconds, plus the first and the last
    (fraction 1)."""
    last: list[float] = []

    def progress(fraction: float, text: str) -> None:
        now = clock()
        if last and fraction < 1.0 and now - last[0] < every_s:
            return
        last[:] = [now]
        show(fraction, text)

    return progress


def still_bars() -> None:
    """Make every progress bar of the page jump rather than glide (:data:`STILL_BAR_STYLE`).
    Called on every run, outside any cached function: Streamlit cannot replay an element
    placed out of the page's flow from its cache."""
    st.html(STILL_BAR_STYLE)


_run_slot = threading.local()
"""This script run's :func:`run_slot` (a script runs on its session's own thread)."""


@contextlib.contextmanager
def run_slot() -> Iterator[Any]:
    """A place at the top of the main area for the run's progress bars (loading a folder,
    preparing it for another guard version), made on every full run whether or not a bar is
    shown, and emptied when the run ends. Streamlit matches a run's elements to the last
    run's by position: a bar shown in one run only, then emptied, left an element the next
    run did not make, every element after it moved up one place, and the browser built each
    of them (every chart) again. Yields the slot; :func:`new_bar` draws into it."""
    slot = st.empty()
    _run_slot.value = slot
    try:
        yield slot
    finally:
        _run_slot.value = None


def new_bar(text: str) -> Any:
    """A progress bar at 0, in this run's :func:`run_slot` (in place where there is none: a
    fragment's own re-run). ``.empty()`` it when done."""
    slot = getattr(_run_slot, "value", None)
    if slot is None:
        return st.progress(0.0, text=text)
    return slot.progress(0.0, text=text)


def bar_progress(bar: Any, every_s: float = PROGRESS_EVERY_S) -> Progress:
    """A throttled ``(fraction, text)`` callback that moves ``bar`` (an ``st.progress``;
    fractions clipped to 0-1)."""
    return throttled(lambda fraction, text: bar.progress(min(max(fraction, 0.0), 1.0),
                                                         text=text), every_s)
