"""Overview: where refusals land across every loaded session, for every guard shown."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from loopscope.ui import charts, state, views

ALL = "all"
ROW_LIMITS: list[int | str] = [25, 50, 100, 200, 500, 1000, "all"]
# Drawing is the browser's cost (SVG: ~1 s per 10,000 markers in headless Chromium), so the
# timeline starts with the first 50 sessions in the chosen order; the table shows them all.
# (A comment, not a docstring: Streamlit's "magic" would print a bare string on the page.)
DEFAULT_ROWS = 50


def render() -> None:
    st.title("Where would the guard refuse?", anchor=False)
    corpus = state.corpus()
    if not corpus.sessions:
        st.info("No sessions are loaded. Pick a data source in the sidebar; problems are listed "
                "under *Import report*.")
        return
    results = {name: state.replays(name) for name in state.shown_engines()}
    _summary(corpus, results)
    _timelines(corpus, results)
    _table(corpus, results)


def _summary(corpus: Any, results: dict[str, Any]) -> None:
    cols = st.columns(1 + len(results))
    cols[0].metric("Sessions", len(corpus.sessions))
    for i, (name, reps) in enumerate(results.items()):
        refused, warned = state.refused_warned(reps)
        cols[1 + i].metric(
            f"{state.ENGINE_TITLES[name]}: refused", refused,
            help="Sessions where the guard would have blocked a call at least once.")
        cols[1 + i].caption(f"{warned} with warnings")


@st.fragment
def _timelines(corpus: Any, results: dict[str, Any]) -> None:
    c1, c2, c3 = st.columns([1, 1, 0.6])
    with c1:
        options = [ALL, *results]
        view = st.segmented_control(
            "Show", options=options,
            format_func=lambda k: "Every guard" if k == ALL else state.ENGINE_TITLES[k],
            default=ALL, key="view", bind="query-params", required=True,
            help="Which guard's timeline to show: one column per guard, the same rows.",
        )
    with c2:
        sort = st.selectbox(
            "Sort sessions", options=list(charts.SORT_KEYS),
            format_func=lambda k: charts.SORT_TITLES[k], key="sort", bind="query-params",
            help="Refusals: refused sessions first, most refusals first. Label: real loops, then "
            "good work, then unlabelled.",
        )
    with c3:
        limit = st.selectbox(
            "Rows shown", options=ROW_LIMITS, index=ROW_LIMITS.index(DEFAULT_ROWS), key="rows",
            bind="query-params",
            help="The timeline shows the first sessions in the chosen order; the table below and "
            "the counts above always cover every session.",
        )
    engines = list(results) if view in (None, ALL) or view not in results else [str(view)]
    st.caption(
        "One row per session; x is the tool call. Markers: filled = refused, hollow = warned; "
        "each detector has its own shape and colour. A line after a marker: the same verdict "
        "again on each following step (solid = refused, dotted = warned). Hatched grey: after "
        "the first refusal (would not have happened). Click a marker for a link to that session."
    )
    shown = {e: results[e] for e in engines}
    order = views.overview_order(corpus, shown, sort or "refusals")
    if limit != "all" and len(order) > int(limit):
        st.caption(f"Showing the first {limit} of {len(order)} sessions in this order.")
        order = order[: int(limit)]
    rows = views.overview_rows(corpus, shown, order)
    fig = charts.overview_figure(rows, engines, row_height=26 if len(rows) <= 250 else 16)
    refused = {e: sum(1 for r in rows if r.replays[e].refused) for e in engines}
    alt = (f"Timeline of {len(rows)} sessions, one row each, with a marker at every refusal and "
           "warning. " + "; ".join(f"{state.ENGINE_TITLES[e]} refuses {n}" for e, n in refused.items())
           + ". The table below lists the same verdicts.")
    event = st.plotly_chart(
        fig, key="overview_chart", on_select="rerun", selection_mode="points", theme=None, alt=alt,
        config={"displaylogo": False, "toImageButtonOptions": {"filename": "loopscope-overview"}},
    )
    _open_selected(event, rows)


def _open_selected(event: Any, rows: list[charts.OverviewRow]) -> None:
    points = (event or {}).get("selection", {}).get("points", []) if isinstance(event, dict) else (
        getattr(getattr(event, "selection", None), "points", []) or []
    )
    for p in points:
        y = p.get("y") if isinstance(p, dict) else None
        if isinstance(y, int | float) and 0 <= int(y) < len(rows):
            custom = p.get("customdata") if isinstance(p, dict) else None
            turn = int(custom[0]) if isinstance(custom, list | tuple) and custom else None
            views.session_link(next(iter(rows[int(y)].replays.values())).source, turn)
            return


LABEL_TEXT = {"loop": "real loop", "ok": "good work"}


def _table(corpus: Any, results: dict[str, Any]) -> None:
    st.header("Sessions", anchor=False)
    sessions = corpus.sessions
    # Built column by column: one list per column is several times cheaper than a dict per
    # row, and this table is rebuilt on every slider move.
    columns: dict[str, list[Any]] = {
        "session": corpus.session_names,
        "format": corpus.formats,
        "calls": corpus.call_counts,
        "turns": corpus.turn_counts,
        "label": [LABEL_TEXT.get(label or "", "") for label in views.session_labels(corpus)],
    }
    for name in results:
        title = state.ENGINE_TITLES[name]
        firsts, warnings = state.first_refusals_and_warnings(results[name])
        columns[f"{title} first refusal"] = [_refusal_text(f) for f in firsts]
        columns[f"{title} warnings"] = warnings
    event = st.dataframe(
        pd.DataFrame(columns), hide_index=True, on_select="rerun", selection_mode="single-row",
        key="session_table", width="stretch",
    )
    selected = getattr(getattr(event, "selection", None), "rows", None) or []
    if selected:
        views.session_link(sessions[selected[0]].source)
    else:
        st.caption("Select a row for a link to the session.")


def _refusal_text(first: Any) -> str:
    if first is None:
        return ""
    what = views.detector_title(first.detector)
    return f"call {first.call + 1} · {what}" if first.call is not None else (
        f"turn {first.turn + 1} · {what}")


if __name__ == "__main__":  # run as a Streamlit page
    render()
