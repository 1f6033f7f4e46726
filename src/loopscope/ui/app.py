"""The dashboard's entry point: page config, the sidebar, and navigation.

``app.py`` at the repository root calls :func:`main`. The order matters: the sidebar's data
source decides the corpus, which is loaded (with progress, cached) before any page runs; the
settings controls are drawn before the page so every page sees the same configuration.
"""

from __future__ import annotations

import streamlit as st

from loopscope.ui import data, pages, settings, state


def main() -> None:
    st.set_page_config(
        page_title="loopscope",
        page_icon=":material/all_inclusive:",
        layout="wide",
        initial_sidebar_state="expanded",
    )
    nav_pages = pages.build_pages()
    pages.register(nav_pages)
    page = st.navigation(nav_pages, position="sidebar")
    with st.sidebar:
        settings.render_data_source()
    corpus = data.load_current_corpus(show_progress=True)
    state.set_corpus(corpus)
    with st.sidebar:
        settings.render_corpus_status(corpus)
        settings.render_sidebar_settings()
    page.run()
