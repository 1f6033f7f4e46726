"""The page's layout at any window width from 1000 px up: one style sheet for every page, and
the helpers that draw a table or a row of panels that reflow rather than shrink or cut.

Streamlit cannot read the window's width on the server, so nothing here picks a column count
there: panels sit in a row that wraps (CSS ``flex-wrap``) at a minimum width each, and tables
whose text matters are HTML tables whose cells wrap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from loopscope.ui.plain import md

__all__ = ["PAGE_STYLE", "PANEL_MIN_PX", "apply_page_style", "panels", "wrapped_table"]

PANEL_MIN_PX = 470
"""The narrowest a guard's panel on the overview gets: room for the sessions' names (up to
~300 px) and a readable timeline beside them. Narrower, the panels wrap to the next row."""

FOCUS = "#0b57d0"
"""The keyboard focus ring's colour: 7:1 against the sidebar's and the page's backgrounds."""

PAGE_STYLE = f"""<style>
/* Less empty room above and beside the page: the first screen holds the page's chart. */
[data-testid='stMainBlockContainer'] {{
  padding-top: 2.75rem; padding-bottom: 3rem;
  padding-left: clamp(1rem, 3vw, 3rem); padding-right: clamp(1rem, 3vw, 3rem);
}}
[data-testid='stMainBlockContainer'] h1 {{ font-size: 2rem; padding: 0.25rem 0 0.5rem; }}
/* A visible keyboard focus on the menu's links and the page links (WCAG 2.4.7). */
[data-testid='stSidebarNavLink']:focus-visible, [data-testid='stPageLink'] a:focus-visible,
[data-testid='stPageLink-NavLink']:focus-visible {{
  outline: 3px solid {FOCUS} !important; outline-offset: 1px; border-radius: 0.5rem;
}}
/* A metric's label and value wrap rather than end in "…". */
[data-testid='stMetricLabel'] *, [data-testid='stMetricLabel'] {{
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
}}
[data-testid='stMetricValue'] {{ font-size: 1.9rem; }}
/* A button's label wraps rather than end in "…" in a narrow column. */
[data-testid^='stBaseButton'] p, [data-testid='stDownloadButton'] p,
[data-testid='stPageLink'] p {{
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
}}
/* Panels in a row: each at least PANEL_MIN_PX wide, wrapping to the next row when the
   window is narrower (see panels()). */
[class*='st-key-panels_'] > div {{
  flex: 1 1 {PANEL_MIN_PX}px !important; min-width: min({PANEL_MIN_PX}px, 100%) !important;
}}
/* HTML tables wrap long words (file names, paths) inside their cells. */
[data-testid='stTable'] td, [data-testid='stTable'] th {{
  overflow-wrap: anywhere; word-break: normal; white-space: normal;
}}
</style>"""
"""The dashboard's style sheet (a ``<style>`` element only: Streamlit places it out of the
page's flow)."""


def apply_page_style() -> None:
    """Add :data:`PAGE_STYLE` to the page. Called on every run, outside any cached function
    (Streamlit cannot replay an element placed out of the page's flow from its cache)."""
    st.html(PAGE_STYLE)


def panels(key: str) -> Any:
    """A row of panels that wraps: each element drawn in it gets at least
    :data:`PANEL_MIN_PX` of width, and as many share a row as the window holds (one per row
    at 1000 px with the sidebar open, two at 1400 px). ``key`` names it (CSS class
    ``st-key-panels_<key>``)."""
    return st.container(horizontal=True, gap="small", key=f"panels_{key}")


def wrapped_table(rows: Sequence[Mapping[str, Any]], *, key: str | None = None,
                  empty: str = "—") -> None:
    """``rows`` as an HTML table whose cells wrap: every word of every cell is on the page,
    at any width (an ``st.dataframe`` cuts a cell at its column's width). Text is shown as
    itself (escaped for Markdown, which ``st.table`` cells render); a missing value is
    ``empty``. For the tables of a few hundred rows at most: each cell is a page element."""
    import pandas as pd

    frame = pd.DataFrame([{md(str(k)): _cell(v, empty) for k, v in r.items()} for r in rows])
    with st.container(key=f"table_{key}" if key else None):
        st.table(frame, hide_index=True)


def _cell(value: Any, empty: str) -> str:
    if value is None or (isinstance(value, float) and value != value) or value == "":
        return empty
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return md(str(value))
