"""Overview: where refusals land across every loaded session, for every guard shown; what the
current settings change against a baseline; how the guards compare; and the sessions, a page
at a time, each one click from its explanation."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from loopscope.ui import baseline, charts, labelling, layout, page_helpers, state, summaries
from loopscope.ui.plain_words import md
from loopscope.words import plural

ALL = "all"
PAGE_SIZES: list[int] = [25, 50, 100, 200]
# The timeline and the table show one page of sessions, in the chosen order: the browser
# draws (and the server sends) only that page. (A comment, not a docstring: Streamlit's
# "magic" would print a bare string on the page.)
DEFAULT_PAGE_SIZE = 50
WELCOME_KEY = "_loopscope_welcome_done"
LABEL_TEXT = {"loop": "real loop", "ok": "good work"}


def render() -> None:
    page_helpers.open_pending()
    st.title("Where would the guard refuse?", anchor=False)
    corpus = state.corpus()
    if not corpus.sessions:
        st.info("No sessions are loaded. Pick a data source in the sidebar; problems are listed "
                "under *Import report*.")
        return
    _welcome()
    engines = state.shown_engines()
    results = {name: state.replays(name) for name in engines}
    # What the settings change, the counts and the guards' table keep their place above the
    # timeline but are filled after it: on a slider move the browser draws the elements in
    # the order they arrive, and the timeline is what the person moving the slider watches.
    # What the settings change is worked out after the timeline too, unless a pill narrows
    # the timeline to one of its groups.
    changes, summary, guards = st.container(), st.container(), st.container()
    _sessions(corpus, results, baseline.effects(engines) if baseline.narrowing() else None)
    found = baseline.effects(engines)
    with changes:
        baseline.render(found)
    with summary:
        _summary(corpus, results)
    with guards:
        _guards(corpus, results)
    state.warm_when_idle(engines)


def _welcome() -> None:
    """A first line and a start-here path, until the user says they have it."""
    if st.session_state.get(WELCOME_KEY):
        return
    with st.container(border=True, key="welcome"):
        st.markdown(
            "**loopscope replays your agents' recorded sessions through the loop guards real "
            "agents run: where would each guard have stopped them, and why?** "
            "**Start here:** click a session below (a row, or a marker) — its page opens with "
            "the answer at the top. Move a setting in the sidebar — the box below says which "
            "sessions it changes. Label sessions as real loops or good work so the advice can "
            "tell right from wrong.")
        # The buttons under the text, not in a column beside it: a narrow column cut their
        # labels ("How gu…") at 1000 px.
        with st.container(horizontal=True, vertical_alignment="center"):
            st.button("Got it", key="welcome.done", icon=":material/done:",
                      on_click=lambda: st.session_state.__setitem__(WELCOME_KEY, True))
            from loopscope.ui.pages.registry import page_for

            target = page_for("guide")
            if target is not None:
                st.page_link(target, label="How guards decide", icon=":material/menu_book:")


# The narrowest a count gets (its label wraps inside): every guard's count and the sessions'
# in one row at 1400 px (five guards), three to a row at 1000 px, rather than a row of five
# and one count alone on a second row.
SUMMARY_MIN_PX = 150


def _summary(corpus: Any, results: dict[str, Any]) -> None:
    with layout.panels("summary", SUMMARY_MIN_PX):
        with st.container():
            st.metric("Sessions", f"{len(corpus.sessions):,}")
        for name, reps in results.items():
            refused, warned = state.refused_warned(reps)
            with st.container():
                st.metric(
                    f"{state.engine_titles()[name]}: refused", f"{refused:,}",
                    help="Sessions where the guard would have blocked a call at least once.")
                st.caption(f"{warned:,} with warnings")


# The guards' comparison's expander: open or closed (session state). (A comment, not a
# docstring: Streamlit's "magic" would print a bare string on the page.)
GUARDS_KEY = "guards_compare"


def _guards(corpus: Any, results: dict[str, Any]) -> None:
    """The guards' comparison, made only while its expander is open: closed (as the page
    opens), a slider move neither works it out over every session nor sends its table; opening
    it re-runs the page with the table in it."""
    box = st.expander("How the guards compare on these sessions", icon=":material/compare:",
                      key=GUARDS_KEY, on_change="rerun")
    if not box.open:
        return
    with box:
        rows = summaries.guard_rows(results, labelling.current_labels(corpus), corpus.sources,
                                    corpus.turn_counts)
        # An HTML table: its cells wrap, so each guard's notes are read whole at any width.
        layout.wrapped_table([r.as_dict() for r in rows], key="guards_table")
        st.caption("Turns are counted from 1. Loops caught: sessions labelled a real loop that "
                   "the guard refuses once the loop has begun. Notes: what the guard's replay "
                   "cannot show.")


@st.fragment
def _sessions(corpus: Any, results: dict[str, Any], found: dict[str, Any] | None) -> None:
    """The overview's controls, timeline and table. ``found``: what the settings change
    (:func:`baseline.effects`), when a pill narrows the rows to one of its groups; otherwise
    None, and it is worked out after the timeline is sent (the table's last column needs it)."""
    c1, c2, c3, c4 = st.columns([1.3, 1.3, 0.7, 0.7])
    with c1:
        view = st.selectbox(
            "Show", options=[ALL, *results],
            format_func=lambda k: "Every guard" if k == ALL else state.engine_titles()[k],
            key="view", bind="query-params",
            help="Which guard's timeline to show: one column per guard, the same rows.",
        )
    with c2:
        sort = st.selectbox(
            "Sort sessions", options=list(charts.SORT_KEYS),
            format_func=lambda k: charts.SORT_TITLES[k], key="sort", bind="query-params",
            help="Refusals: refused sessions first, most refusals first. Label: real loops, then "
            "good work, then unlabelled. Both count the refusals of the baseline settings (the "
            "shipped defaults, or the settings you pinned), so the rows keep their places while "
            "you move a setting; the box above lists the sessions a move changes. Pin these "
            "settings to sort by them.",
        )
    engines = list(results) if view in (None, ALL) or view not in results else [str(view)]
    shown = {e: results[e] for e in engines}
    by = sort or "refusals"
    order = page_helpers.overview_order(corpus, _sorted_by(shown, by), by)
    group = baseline.selected(found) if found is not None else None
    if group is not None:
        keep = set(group[2])
        order = [i for i in order if i in keep]
    with c3:
        size = st.selectbox("Per page", options=PAGE_SIZES,
                            index=PAGE_SIZES.index(DEFAULT_PAGE_SIZE), key="rows",
                            bind="query-params",
                            help="Sessions per page, in the timeline and the table.")
    pages = max(1, -(-len(order) // int(size)))
    if not isinstance(st.session_state.get("page"), int) or not 1 <= st.session_state["page"] <= pages:
        st.session_state.pop("page", None)
    with c4:
        page = st.number_input("Page", min_value=1, max_value=pages, value=1, step=1,
                               key="page", bind="query-params",
                               help=f"{plural(pages, 'page')} of {size} sessions.")
    start = (int(page) - 1) * int(size)
    window = order[start:start + int(size)]
    if group is not None:
        assert found is not None  # (a group is one of found's)
        what = baseline.options({group[0]: found[group[0]]})[f"{group[0]}:{group[1]}"]
        st.caption(f"Showing only {md(state.engine_titles()[group[0]])}: {md(what)}, against "
                   f"{baseline.describe_baseline()}. Click the pill again to show every session.")
    # The timeline comes first (the first screen shows it); what it draws is said below it.
    _timeline(corpus, shown, engines, window)
    if group is None:
        sorted_by = (" (by the baseline's verdicts: rows keep their places as you move a "
                     "setting)" if by in VERDICT_SORTS else "")
        st.caption(f"Sessions {start + 1}–{start + len(window)} of {len(order):,}, in this order"
                   f"{sorted_by}. "
                   "One row per session; x is the tool call. Filled marker = refused, hollow = "
                   "warned; each detector has its own shape. Hatched grey: after the first "
                   "refusal (would not have happened). **Click a marker or a row to open the "
                   "session.**")
    _table(corpus, results, window,
           found if found is not None else baseline.effects(list(results)))


# The sorts that read the guards' verdicts. (A comment, not a docstring: Streamlit's "magic"
# would print a bare string on the page.)
VERDICT_SORTS = frozenset({"refusals", "label"})


def _sorted_by(shown: dict[str, Any], by: str) -> dict[str, Any]:
    """The replays the rows are sorted by: for a sort on verdicts, the baseline's (the
    shipped defaults, or the pinned settings), not the current ones. A slider move then keeps
    every row in its place: the markers change where the person is looking, and only the
    moved guard's panel is drawn again (sorted by the current verdicts, most moves reordered
    the rows and every guard's panel was drawn again). The baseline's replays are the ones
    the box above compares against, run once per baseline."""
    if by not in VERDICT_SORTS:
        return shown
    return {e: state.replays_for(e, baseline.baseline_config(e)) for e in shown}


def _timeline(corpus: Any, shown: dict[str, list[Any]], engines: list[str],
              window: list[int]) -> None:
    """One panel per guard, each its own figure, in a row that wraps (:func:`layout.panels`):
    a panel keeps a readable width at any window width (one figure with a column per guard
    shrank each column to ~30 px at 1000 px and printed the guards' names over each other).
    Every panel has the same rows, in the same order and height, so panels side by side line
    up; the legend, the same for all, is drawn once under them."""
    rows = page_helpers.overview_rows(corpus, shown, window)
    if not rows:
        return
    row_height = 26 if len(rows) <= 100 else 18
    figs = {e: charts.overview_figure(rows, [e], row_height=row_height, name_limit=NAME_LIMIT)
            for e in engines}
    with layout.panels("overview_chart"):
        for engine, fig in figs.items():
            n = sum(1 for r in rows if r.replays[engine].first_refusal is not None)
            alt = (f"{state.engine_titles()[engine]} timeline of {len(rows)} sessions, one row "
                   f"each, with a marker at every refusal and warning; it refuses {n}. The "
                   "table below lists the same verdicts.")
            event = st.plotly_chart(
                fig, key=f"overview_chart_{engine}", on_select="rerun", selection_mode="points",
                theme=None, alt=alt,
                config={"displaylogo": False,
                        "toImageButtonOptions": {"filename": f"loopscope-overview-{engine}"}},
            )
            _open_selected(event, window)
    entries: dict[str, charts.LegendEntry] = {}
    for fig in figs.values():
        for entry in charts.legend_entries(fig):
            entries.setdefault(entry.name, entry)
    st.plotly_chart(charts.legend_figure(list(entries.values())), key="overview_legend",
                    theme=None, config={"staticPlot": True},
                    alt="Legend: the marker shape and colour of each detector; filled = "
                    "refused, hollow = warned; hatched = after the first refusal.")


# A session's name in a panel is cut to its last 34 characters (~270 px): the panel's
# timeline keeps most of its width. The whole name is in the hover and in the table. (Comments,
# not docstrings: Streamlit's "magic" would print a bare string on the page.)
NAME_LIMIT = 34


def _open_selected(event: Any, window: list[int]) -> None:
    """A click on a marker opens its session at the marker's turn."""
    points = (event or {}).get("selection", {}).get("points", []) if isinstance(event, dict) else (
        getattr(getattr(event, "selection", None), "points", []) or []
    )
    for p in points:
        y = p.get("y") if isinstance(p, dict) else None
        if isinstance(y, int | float) and 0 <= int(y) < len(window):
            # The marker's first custom value is its turn, counted from 1 (a row of a 2-D
            # array arrives as a list, or as a dict keyed "0", "1", …).
            custom = p.get("customdata") if isinstance(p, dict) else None
            first = (custom[0] if isinstance(custom, list | tuple) and custom
                     else custom.get("0") if isinstance(custom, dict) else None)
            turn = int(first) - 1 if isinstance(first, int | float) else None
            page_helpers.open_session(state.corpus().sources[window[int(y)]], turn)
            return


_CHANGES = (("newly_refused", "newly refused"), ("no_longer_refused", "no longer refused"),
            ("moved", "refused elsewhere"))


def _change_texts(window: list[int], found: dict[str, Any]) -> list[str]:
    """What the settings change for each session of ``window`` against the baseline, in a
    few words: per guard, the first of its groups the session is in. (A group is a tuple of
    thousands of positions at 20,000 sessions: made a set once, not searched per row.)"""
    groups = [(state.engine_titles()[engine],
               [(set(getattr(effect, kind)), text) for kind, text in _CHANGES])
              for engine, effect in found.items()]
    out = []
    for i in window:
        parts = []
        for title, kinds in groups:
            text = next((text for members, text in kinds if i in members), None)
            if text is not None:
                parts.append(f"{title}: {text}")
        out.append("; ".join(parts))
    return out


def _table(corpus: Any, results: dict[str, Any], window: list[int],
           found: dict[str, Any]) -> None:
    """The page's sessions (only those: the table is rebuilt on every move); one click on a
    row opens it. Read from the corpus's and the runs' columns, no session or replay built.

    Compact by default: one narrow column per guard (where it first refuses, or how often it
    warns), so every guard fits beside the sessions at 1000 px; "Name the detectors" shows
    the detector and the warnings in columns of their own (wider than the page). The frame
    holds both; ``column_order`` picks what is shown."""
    names, calls, turns = corpus.session_names, corpus.call_counts, corpus.turn_counts
    labels = page_helpers.session_labels(corpus)
    columns: dict[str, list[Any]] = {
        "session": [names[i] for i in window],
        "calls": [calls[i] for i in window],
        "turns": [turns[i] for i in window],
        "label": [LABEL_TEXT.get(labels[i] or "", "") for i in window],
    }
    compact: dict[str, list[str]] = {}
    for name in results:
        title = state.engine_titles()[name]
        firsts, warnings = state.window_refusals_and_warnings(results[name], window)
        columns[f"{title} first refusal"] = [_refusal_text(f) for f in firsts]
        columns[f"{title} warnings"] = warnings
        compact[title] = [_compact_text(f, w) for f, w in zip(firsts, warnings, strict=True)]
    changed = any(e.changed for e in found.values())
    if changed:
        columns["against the baseline"] = _change_texts(window, found)
    detailed = st.toggle(
        "Name the detectors", key="table_detectors",
        help="Show which detector refused first and each guard's warnings, in columns of "
        "their own (the table is then wider than the page).")
    titles = [state.engine_titles()[name] for name in results]
    if detailed:
        order = ["session", "calls", "turns", "label",
                 *(c for t in titles for c in (f"{t} first refusal", f"{t} warnings"))]
    else:
        order = ["session", "calls", "label", *(f"{t} verdict" for t in titles)]
        for t in titles:
            columns[f"{t} verdict"] = compact[t]
    if changed:
        order.append("against the baseline")
    session_px = max(SESSION_COLUMN_MIN_PX, TABLE_PX - CALLS_COLUMN_PX - LABEL_COLUMN_PX
                     - GUARD_COLUMN_PX * len(titles))
    config: dict[str, Any] = {
        "session": st.column_config.TextColumn("session", width=session_px),
        "calls": st.column_config.NumberColumn("calls", width=CALLS_COLUMN_PX),
        "label": st.column_config.TextColumn("label", width=LABEL_COLUMN_PX),
    }
    for t in titles:
        config[f"{t} verdict"] = st.column_config.TextColumn(
            t, width=GUARD_COLUMN_PX,
            help=f"Where {t} first refuses: the tool call (counted from 1), or the turn when it "
                 "refuses a reply; “warned n×” when it only warns. Turn on “Name the "
                 "detectors” for which detector, and every warning.")
    event = st.dataframe(
        pd.DataFrame(columns), hide_index=True, on_select="rerun", selection_mode="single-cell",
        key="session_table", width="stretch", column_order=order, column_config=config,
        placeholder="",
    )
    selection = getattr(event, "selection", None)
    cells = getattr(selection, "cells", None) or []
    rows = getattr(selection, "rows", None) or []
    row = None
    if cells:
        first = cells[0]
        row = first[0] if isinstance(first, list | tuple) else getattr(first, "row", None)
    elif rows:
        row = rows[0]
    if isinstance(row, int) and 0 <= row < len(window):
        page_helpers.open_session(corpus.sources[window[row]])


# The compact table's columns fit the page's width at 1000 px with the sidebar open (638 px):
# a guard's column holds its name and "call 123" or "warned 12×" at the table's font; the
# session's name takes what the guards leave (its whole name is in the timeline's hover and on
# its page), so five guards fit without the sideways scroll that hid the last ones (a sixth
# guard, a plug-in, brings the scroll back).
TABLE_PX = 632
GUARD_COLUMN_PX = 80
CALLS_COLUMN_PX = 42
LABEL_COLUMN_PX = 72
SESSION_COLUMN_MIN_PX = 110


def _compact_text(first: Any, warnings: int) -> str:
    """A guard's verdict on a session in a few characters: where it first refuses (the call,
    or the turn of a refused reply, counted from 1), else how often it warns, else nothing."""
    if first is not None:
        return f"call {first.call + 1}" if first.call is not None else f"turn {first.turn + 1}"
    return f"warned {warnings}×" if warnings else ""


def _refusal_text(first: Any) -> str:
    if first is None:
        return ""
    what = page_helpers.detector_title(first.detector)
    return f"call {first.call + 1} · {what}" if first.call is not None else (
        f"turn {first.turn + 1} · {what}")


if __name__ == "__main__":  # run as a Streamlit page
    render()
