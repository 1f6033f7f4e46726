"""Overview: where refusals land across every loaded session, for both engines."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from loopscope.ui import charts, state, views
from loopscope.ui.pages import page_for

VIEW_OPTIONS = {"both": "Both engines", "gglib": "gglib", "openclaw": "OpenClaw"}


def render() -> None:
    st.title("Where would the guard refuse?", anchor=False)
    corpus = state.corpus()
    if not corpus.sessions:
        st.info("No sessions are loaded. Pick a data source in the sidebar; problems are listed "
                "under *Import report*.")
        return
    results = {name: state.replays(name) for name in state.ENGINES}
    _summary(corpus, results)
    _timelines(corpus, results)
    _table(corpus, results)


def _summary(corpus: Any, results: dict[str, list[Any]]) -> None:
    cols = st.columns(5)
    cols[0].metric("Sessions", len(corpus.sessions))
    for i, name in enumerate(state.ENGINES):
        reps = results[name]
        refused = sum(1 for r in reps if r.refused)
        warned = sum(1 for r in reps if r.warned)
        cols[1 + 2 * i].metric(f"{state.ENGINE_TITLES[name]}: sessions refused", refused,
                               help="Sessions where the guard would have blocked a call at least once.")
        cols[2 + 2 * i].metric(f"{state.ENGINE_TITLES[name]}: sessions warned", warned,
                               help="Sessions with at least one warning (OpenClaw only logs these; "
                               "gglib never warns).")


@st.fragment
def _timelines(corpus: Any, results: dict[str, list[Any]]) -> None:
    c1, c2 = st.columns([1, 1])
    with c1:
        view = st.segmented_control(
            "Show", options=list(VIEW_OPTIONS), format_func=lambda k: VIEW_OPTIONS[k],
            default="both", key="view", bind="query-params", required=True,
            help="Which engine's timeline to show.",
        )
    with c2:
        sort = st.selectbox(
            "Sort sessions", options=list(charts.SORT_KEYS),
            format_func=lambda k: charts.SORT_TITLES[k], key="sort", bind="query-params",
            help="Refusals: refused sessions first, most refusals first. Label: real loops, then "
            "good work, then unlabelled.",
        )
    engines = list(state.ENGINES) if view in (None, "both") else [str(view)]
    st.caption(
        "One row per session; x is the tool call. Markers: filled = refused, hollow = warned; "
        "each detector has its own shape and colour. Hatched grey: after the first refusal "
        "(would not have happened). Click a marker to open the session."
    )
    rows = charts.sort_rows(views.overview_rows(corpus, results), sort or "refusals", engines)
    fig = charts.overview_figure(rows, engines)
    event = st.plotly_chart(
        fig, key="overview_chart", on_select="rerun", selection_mode="points", theme=None,
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
            st.session_state["session"] = next(iter(rows[int(y)].replays.values())).source
            target = page_for("session")
            if target is not None:
                st.switch_page(target)
            return


def _table(corpus: Any, results: dict[str, list[Any]]) -> None:
    st.header("Sessions", anchor=False)
    records = []
    for i, s in enumerate(corpus.sessions):
        row: dict[str, Any] = {
            "session": corpus.display(s.source),
            "format": s.format,
            "calls": len(s.calls),
            "turns": len(s.turns),
            "label": {"loop": "real loop", "ok": "good work"}.get(views.label_of(corpus, s.source) or "", ""),
        }
        for name in state.ENGINES:
            r = results[name][i]
            fr = r.first_refusal
            row[f"{state.ENGINE_TITLES[name]} first refusal"] = (
                f"call {fr.call} · {fr.detector}" if fr and fr.call is not None
                else (f"turn {fr.turn} · {fr.detector}" if fr else "")
            )
            row[f"{state.ENGINE_TITLES[name]} warnings"] = charts.warning_count(r)
        records.append(row)
    frame = pd.DataFrame.from_records(records)
    event = st.dataframe(
        frame, hide_index=True, on_select="rerun", selection_mode="single-row", key="session_table",
        width="stretch",
    )
    selected = getattr(getattr(event, "selection", None), "rows", None) or []
    if selected:
        st.session_state["session"] = corpus.sessions[selected[0]].source
        target = page_for("session")
        if target is not None:
            st.switch_page(target)
    st.caption("Select a row to open the session.")


if __name__ == "__main__":  # run as a Streamlit page
    render()
