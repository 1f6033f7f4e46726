"""The dashboard's entry point: page config, the sidebar, and navigation.

``app.py`` at the repository root calls :func:`main`. The order matters: the sidebar's data
source decides the corpus, which is loaded (with progress, cached) before any page runs. The
settings controls have their place in the sidebar from the start but, after a setting is
moved, are drawn after the page (see :func:`loopscope.ui.settings.page_runs_first`), so a slider
move's chart reaches the browser before the ~50 controls.
"""

from __future__ import annotations

import importlib
import threading
import time

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from loopscope.ui import charts, data_source, gc_policy, layout, notices, progress, settings, state
from loopscope.ui.pages import registry

LAST_RUN_KEY = "_loopscope_last_run_ms"
"""Server-side duration of the previous full run, in ms (shown in the sidebar)."""


def main() -> None:
    gc_policy.before_run()
    try:
        _run()
    finally:  # (a run stopped by a rerun, st.stop or an error has ended too)
        gc_policy.after_run()


def _run() -> None:
    started = time.perf_counter()
    st.set_page_config(
        page_title="loopscope",
        # An emoji, not a Material icon: the browser would fetch a Material icon's image
        # from a font server, and the dashboard makes no network requests.
        page_icon="♾️",
        layout="wide",
        initial_sidebar_state="expanded",
    )
    progress.still_bars()  # (the loading bar's redraws take the cores the loading runs on)
    layout.apply_page_style()
    nav_pages = registry.build_pages()
    registry.register(nav_pages)
    page = st.navigation(nav_pages, position="sidebar")
    with st.sidebar:
        settings.render_data_source()
    with progress.run_slot() as slot:
        with slot.container():
            _prime_browser_charts()
            _preload_page_libraries()
            corpus = data_source.load_current_corpus(show_progress=True)
        slot.empty()  # (the primer and the loading bar go)
        _await_page_libraries()
        state.set_corpus(corpus)
        with st.sidebar:
            settings.render_corpus_status(corpus)
            settings_slot = st.container()
        notices.render(corpus, getattr(page, "url_path", None))
        # A slider move re-runs everything; the browser applies the run's elements in the
        # order they are sent, so after a move the page (the chart the user is watching) goes
        # before the sidebar's ~50 controls when it can (see settings.page_runs_first).
        page_first = settings.page_runs_first()
        if not page_first:
            _render_settings(settings_slot)
        try:
            page.run()
        finally:  # (the controls stay drawn when a page fails)
            if page_first:
                _render_settings(settings_slot)
    st.session_state[LAST_RUN_KEY] = (time.perf_counter() - started) * 1000


PAGE_LIBRARIES = ("pandas", "plotly.graph_objects")
"""What the pages import and the loading does not: importing pandas alone is a noticeable
wait, which a background import hides behind the loading."""
_preloading: list[threading.Thread] = []
_importing = threading.Lock()
"""Held while the preload imports: plotly.py reads a half-imported pandas from
``sys.modules`` (and fails) when it builds a figure meanwhile. Pages run only after the import
(:func:`_await_page_libraries`); the chart primer, drawn before the load, checks this lock."""


def _preload_page_libraries() -> None:
    """Import :data:`PAGE_LIBRARIES` on a thread of their own, once per server, while the
    corpus loads: a large folder's cold load is a minute of this process waiting on its
    workers, and the first page then starts without the import (a second start, from the
    on-disk cache, overlaps it with reading the snapshot). Python's import lock makes a page
    that imports them meanwhile wait for this import rather than start its own, and
    :func:`_await_page_libraries` makes every page wait for it."""
    if _preloading:
        return

    def preload() -> None:
        with _importing:
            for module in PAGE_LIBRARIES:
                importlib.import_module(module)

    thread = threading.Thread(target=preload, name="loopscope-preload", daemon=True)
    _preloading.append(thread)
    thread.start()


def _await_page_libraries() -> None:
    """Wait for :func:`_preload_page_libraries` to finish before a page runs. A page must not
    start while pandas is half imported: plotly.py (and Streamlit) look pandas up in
    ``sys.modules`` without importing it, find the half-imported module there and fail
    ("partially initialized module 'pandas' has no attribute 'Series'") — a session page
    opened as the server's very first request did. Once the import is done this returns at
    once; the import still overlaps the corpus's loading."""
    for thread in _preloading:
        thread.join()


CHARTS_PRIMED_KEY = "_loopscope_charts_primed"


def _prime_browser_charts() -> None:
    """On a browser session's first run, an empty chart one pixel tall while the corpus loads
    (in the run's progress slot, emptied after the load): the browser fetches, compiles and
    starts Plotly's code (a script of megabytes) only when the page first holds a Plotly
    chart, so a large folder's first chart waited several times as long as a slider move's to
    be drawn. Loaded meanwhile, Plotly is ready when the first chart arrives. Not after the
    first run (the browser keeps Plotly loaded), nor while another browser session's preload
    imports pandas (the primer is only a head start)."""
    if st.session_state.get(CHARTS_PRIMED_KEY) or not _importing.acquire(blocking=False):
        return
    try:
        st.session_state[CHARTS_PRIMED_KEY] = True
        with st.container(height=1, border=False):
            st.plotly_chart(charts.primer_figure(), key="loopscope_plotly_primer", theme=None,
                            config={"staticPlot": True, "displayModeBar": False})
    finally:
        _importing.release()


def _render_settings(slot: DeltaGenerator) -> None:
    with slot:
        settings.render_sidebar_settings()
        last = st.session_state.get(LAST_RUN_KEY)
        if last is not None:
            st.caption(f"Last full re-run on the server: {last:.0f} ms.")
