"""Compare: configuration A against configuration B on every loaded session.

Both sides start from the sidebar's settings; change either one here. The page lists the
sessions that gain, lose or move a refusal, shows how the labels-based metrics change, and
opens a session (or labels it) from the list.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from loopscope.engines import FirstRefusal, get_engine
from loopscope.experiments.compare import CompareResult, compare_columns
from loopscope.experiments.metrics import metrics_of_columns
from loopscope.ui import labelling, layout, metrics_panel, page_helpers, settings, state
from loopscope.ui.plain_words import md

ENGINE_KEY = "compare.engine"
SIDES = ("a", "b")
SIDE_TITLES = {"a": "A", "b": "B"}
CHANGE_TEXT = {
    "gained": "B refuses it, A did not",
    "lost": "A refused it, B does not",
    "moved": "both refuse, at a different point",
}


def _side_key(side: str, field: state.Field) -> str:
    return f"compare.{side}.{field.key}"


def _editable(engine: str) -> list[state.Field]:
    return [f for f in state.fields_of(engine) if f.kind != "patterns"]


def reset_side(side: str, engine: str) -> None:
    """Set one side's controls to the sidebar's current settings (a button callback)."""
    for f in _editable(engine):
        st.session_state[_side_key(side, f)] = state.widget_value(f)


def side_values(side: str, engine: str) -> dict[str, Any]:
    """Every control value of one side: the sidebar's, overridden by this side's controls."""
    values = state.current_values()
    for f in _editable(engine):
        k = _side_key(side, f)
        if k in st.session_state:
            values[f.key] = st.session_state[k]
    return values


def _apply_side(side: str, engine: str) -> None:
    values = side_values(side, engine)
    state.apply_settings({f.key: values[f.key] for f in _editable(engine)})


def _controls(side: str, engine: str) -> None:
    """One side's controls: the sidebar's controls under this side's keys, bound to the URL
    (``?compare.b.<engine>.<setting>=…``), so a link reproduces the comparison. A side starts
    from the sidebar's values."""
    for f in _editable(engine):
        k = _side_key(side, f)
        if k not in st.session_state and k not in st.query_params:
            st.session_state[k] = state.widget_value(f)
        settings.control(f, k)


def _where(fr: FirstRefusal | None) -> str:
    if fr is None:
        return "not refused"
    call = f", call {fr.call + 1}" if fr.call is not None else ""
    return f"turn {fr.turn + 1}{call} · {page_helpers.detector_title(fr.detector)}"


def render() -> None:
    corpus = page_helpers.page_corpus("Compare two configurations")
    if corpus is None:
        return
    engine = page_helpers.guard_choice(state.shown_engines(), ENGINE_KEY)
    for note in get_engine(engine).notes:
        st.caption(md(note, 400))
    st.caption(
        "A and B start from the settings in the sidebar. Change either side below; the list "
        "shows every session whose first refusal differs. The URL holds both sides: copy it "
        "to share this comparison."
    )

    resolutions = {}
    cols = st.columns(2)
    for side, col in zip(SIDES, cols, strict=True):
        with col, st.container(border=True):
            st.markdown(f"**Configuration {SIDE_TITLES[side]}**")
            _controls(side, engine)
            b1, b2 = st.columns(2)
            b1.button("Reset to the sidebar", key=f"compare.{side}.reset",
                      on_click=reset_side, args=(side, engine), icon=":material/restart_alt:")
            b2.button("Use in the sidebar", key=f"compare.{side}.apply",
                      on_click=_apply_side, args=(side, engine), icon=":material/check:",
                      help="Make this the current configuration of every page.")
        resolutions[side] = state.resolve(engine, side_values(side, engine))
        for warning in resolutions[side].warnings:
            col.caption(f"⚠ {SIDE_TITLES[side]}: {warning}")

    differences = _differences(engine)
    st.caption(
        "B differs from A in: " + "; ".join(differences) if differences
        else "A and B are the same configuration: change one side to compare."
    )

    replays_a = state.replays_for(engine, resolutions["a"].config)
    replays_b = state.replays_for(engine, resolutions["b"].config)
    result = compare_columns(replays_a, replays_b, corpus.sources,
                             [head.id for head in corpus.heads])
    _summary(result)

    labels = labelling.current_labels(corpus)
    st.subheader("How the metrics change from A to B", anchor=False)
    metrics_panel.render_pair(
        metrics_of_columns(replays_a, labels, corpus.sources, corpus.turn_counts),
        metrics_of_columns(replays_b, labels, corpus.sources, corpus.turn_counts),
    )
    _changes(result)


def _differences(engine: str) -> list[str]:
    a, b = side_values("a", engine), side_values("b", engine)
    return [
        f"“{md(f.label)}” {md(str(a[f.key]))} → {md(str(b[f.key]))}"
        for f in _editable(engine)
        if a[f.key] != b[f.key]
    ]


def _summary(result: CompareResult) -> None:
    s = result.summary
    cols = st.columns(4)
    cols[0].metric("Gain a refusal", f"{s['gained']:,}", help=CHANGE_TEXT["gained"])
    cols[1].metric("Lose a refusal", f"{s['lost']:,}", help=CHANGE_TEXT["lost"])
    cols[2].metric("Refusal moves", f"{s['moved']:,}", help=CHANGE_TEXT["moved"])
    cols[3].metric("Unchanged", f"{s['same']:,}")


def _changes(result: CompareResult) -> None:
    corpus = state.corpus()
    st.subheader("Sessions that change", anchor=False)
    if not result.changes:
        st.success("A and B refuse exactly the same sessions at the same points.")
        return
    labels = labelling.current_labels(corpus)
    # An HTML table whose cells wrap: where A and B refuse is read whole at any width (a
    # dataframe cut both columns at 1000 px). The session is picked below it.
    layout.wrapped_table([
        {
            "session": corpus.display(c.source),
            "change": c.change,
            "A": _where(c.a),
            "B": _where(c.b),
            "label": ({"loop": "real loop", "ok": "good work"}.get(lab.label, "")
                      if (lab := labels.get(c.source)) else ""),
        }
        for c in result
    ], key="compare_changes", empty="")
    options = [c.source for c in result]
    if st.session_state.get("compare.selected") not in options:
        st.session_state["compare.selected"] = options[0]
    source = st.selectbox(
        "Session", options, format_func=corpus.display, key="compare.selected",
        help="Pick a changed session to label or open it.",
    )
    change = next(c for c in result if c.source == source)
    st.markdown(
        f"**{CHANGE_TEXT[change.change].capitalize()}.** A: {_where(change.a)}; "
        f"B: {_where(change.b)}."
    )
    idx = state.session_index()[source]
    session = corpus.sessions[idx]
    suggested = change.b.turn if change.b is not None else (change.a.turn if change.a else None)
    labelling.label_editor(source, key="compare.label", turns=len(session.turns),
                           suggested_turn=suggested, corpus=corpus)
    # A page link, not st.switch_page: switching pages from code drops the settings in the URL.
    page_helpers.session_link(source, suggested)


if __name__ == "__main__":  # run as a Streamlit page
    render()
