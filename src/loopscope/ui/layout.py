"""The page's layout at any window width from 1000 px up: one style sheet for every page, and
the helpers that draw a table or a row of panels that reflow rather than shrink or cut.

Streamlit cannot read the window's width on the server, so nothing here picks a column count
there: panels sit in a row that wraps (CSS ``flex-wrap``) at a minimum width each, and tables
whose text matters are HTML tables whose cells wrap.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from loopscope.ui.plain_words import md

__all__ = ["NARROW_PANEL_MIN_PX", "PAGE_STYLE", "PANEL_MIN_PX", "WRAPPED_MAX_ROWS",
           "apply_page_style", "legend", "panels", "wrapped_table"]

PANEL_MIN_PX = 470
"""The narrowest a guard's panel on the overview gets: room for the sessions' names (up to
~300 px) and a readable timeline beside them. Narrower, the panels wrap to the next row."""

NARROW_PANEL_MIN_PX = 300
"""The narrowest a small chart (a sweep's heatmap) gets: two to a row at 1000 px, three at 1400."""


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
/* HTML tables wrap their cells' text (wrapped_table breaks the long words of a column). */
[data-testid='stTable'] :is(td, th), [data-testid='stTable'] :is(td, th) * {{
  overflow-wrap: break-word !important; white-space: normal !important;
}}
</style>"""
"""The dashboard's style sheet (a ``<style>`` element only: Streamlit places it out of the
page's flow)."""


def apply_page_style() -> None:
    """Add :data:`PAGE_STYLE` to the page. Called on every run, outside any cached function
    (Streamlit cannot replay an element placed out of the page's flow from its cache)."""
    st.html(PAGE_STYLE)


def panels(key: str, min_px: int = PANEL_MIN_PX) -> Any:
    """A row of panels that wraps: each element drawn in it is at least ``min_px`` wide
    (or the whole row, when narrower) and grows to share the row; as many share a row as
    the window holds (a guard's timeline: one per row at 1000 px with the sidebar open, two
    at 1400 px). ``key`` names it (CSS class ``st-key-panels_<key>``); its style is sent with
    it (a ``<style>`` element, out of the page's flow)."""
    st.html(f"<style>.st-key-panels_{key} > div {{flex: 1 1 {min_px}px !important; "
            f"min-width: min({min_px}px, 100%) !important;}}</style>")
    return st.container(horizontal=True, gap="small", key=f"panels_{key}")


LEGEND_CHAR_PX = 5.8
"""Room per character of a legend entry's name (12 px sans-serif)."""
LEGEND_PAD_PX = 44
"""A legend entry's marker and the room around it."""


def legend(entries: Sequence[Any], key: str, *, columns: int = 2, alt: str = "") -> None:
    """A chart's legend (``charts.LegendEntry`` items) in up to ``columns`` columns side by
    side, each a small figure of its own, which wrap one under the other where the page is
    too narrow for their names (one legend figure of several columns printed names over the
    next column at 1000 px)."""
    from loopscope.ui import charts

    if not entries:
        return
    per = -(-len(entries) // max(columns, 1))
    widest = LEGEND_PAD_PX + round(LEGEND_CHAR_PX * max(len(e.name) for e in entries))
    with panels(f"legend_{key}", widest):
        for i in range(0, len(entries), per):
            st.plotly_chart(charts.legend_figure(list(entries[i:i + per]), columns=1),
                            key=f"{key}_{i // per}", theme=None, config={"staticPlot": True},
                            alt=alt or "Legend of the chart above.")


WRAPPED_MAX_ROWS = 300
"""Up to this many rows a table is HTML whose cells wrap; longer, an ``st.dataframe`` (which
draws only the rows in view: 20,000 files' rows as page elements would stall the browser)."""


def wrapped_table(rows: Sequence[Mapping[str, Any]], *, key: str, empty: str = "—",
                  column_config: Mapping[str, Any] | None = None) -> None:
    """``rows`` as a table every word of whose cells is on the page at any width: an HTML
    table whose cells wrap (an ``st.dataframe`` cuts a cell at its column's width), for up to
    :data:`WRAPPED_MAX_ROWS` rows; beyond, an ``st.dataframe`` (``column_config`` applies to
    it). Text is shown as itself (escaped for Markdown, which ``st.table`` cells render); a
    missing value is ``empty``, never "None".

    A column with a word longer than :data:`LONG_WORD` characters (a file name, a path) may
    break its words anywhere; the others break between words only ("cha-nge" otherwise).
    ``key`` names the table's container (CSS class ``st-key-table_<key>``), which its
    style sheet selects."""
    import pandas as pd

    with st.container(key=f"table_{key}"):
        if len(rows) > WRAPPED_MAX_ROWS:
            st.dataframe(pd.DataFrame(list(rows)), hide_index=True, width="stretch",
                         placeholder=empty, column_config=dict(column_config or {}))
            return
        names = list(dict.fromkeys(k for r in rows for k in r))
        long = [n for n, name in enumerate(names, start=1)
                if any(len(word) > LONG_WORD for r in rows
                       for word in str(r.get(name, "") or "").split())]
        if long:
            # (Streamlit's class for a key: each character but letters, digits, _ and -
            # made a "-".)
            css = re.sub(r"[^a-zA-Z0-9_-]", "-", f"table_{key}".strip())
            cells = ", ".join(f".st-key-{css} :is(td, th):nth-child({n}) *" for n in long)
            st.html(f"<style>{cells} {{overflow-wrap: anywhere !important;}}</style>")
        frame = pd.DataFrame([{md(str(k)): _cell(r.get(k), empty) for k in names}
                              for r in rows])
        st.table(frame, hide_index=True)


LONG_WORD = 18
"""A word longer than this (in characters) may be broken anywhere in a :func:`wrapped_table`."""


def _cell(value: Any, empty: str) -> str:
    if value is None or (isinstance(value, float) and value != value) or value == "":
        return empty
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return md(str(value))
