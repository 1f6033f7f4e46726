"""Session detail: every shown guard on one session, aligned on the same calls, each tool on
its own lane, counts against thresholds, every refusal and warning explained, and the
transcript opened at the chosen turn."""

from __future__ import annotations

from typing import Any

import streamlit as st

from loopscope.engines import SessionReplay, get_engine
from loopscope.model import Session, escape_for_display
from loopscope.ui import charts, explain_view, labelling, state, views

LAYOUTS = {"stacked": "Stacked (aligned calls)", "side": "Side by side"}
SESSION_KEY = "session"
TURN_KEY = "turn"


def render() -> None:
    corpus = state.corpus()
    if not corpus.sessions:
        st.title("Session detail", anchor=False)
        st.info("No sessions are loaded.")
        return
    _body()


def _on_session_change() -> None:
    st.session_state.pop(TURN_KEY, None)


def _pick_turn_from_chart(chart_key: str, engine: str, source: str) -> None:
    """A click on a chart marker opens the transcript at that call's turn."""
    event = st.session_state.get(chart_key)
    points = getattr(getattr(event, "selection", None), "points", None)
    if points is None and isinstance(event, dict):
        points = event.get("selection", {}).get("points", [])
    if not points:
        return
    corpus = state.corpus()
    idx = state.session_index().get(source)
    if idx is None:
        return
    session = corpus.sessions[idx]
    x = points[0].get("x") if isinstance(points[0], dict) else None
    if not isinstance(x, int | float):
        return
    call = round(x)
    if float(x).is_integer() and 0 <= call < len(session.calls):
        st.session_state[TURN_KEY] = session.calls[call].turn
        return
    # A prose step between calls: the first turn whose step sits at x.
    replay = state.replays(engine)[idx]
    for s, sx in zip(replay.steps, charts.step_positions(replay.steps), strict=True):
        if sx == x:
            st.session_state[TURN_KEY] = s.turn
            return


def _jump(options: dict[str, int]) -> None:
    choice = st.session_state.get("_jump")
    if choice in options:
        st.session_state[TURN_KEY] = options[choice]


@st.fragment
def _body() -> None:
    explain_view.rerun_if_settings_changed()
    corpus = state.corpus()
    sources = [s.source for s in corpus.sessions]
    if st.session_state.get(SESSION_KEY) not in sources:
        st.session_state.pop(SESSION_KEY, None)
    top = st.columns([3, 1.4, 1])
    with top[0]:
        source = st.selectbox(
            "Session", options=sources, format_func=corpus.display, key=SESSION_KEY,
            bind="query-params", on_change=_on_session_change,
            help="Every loaded session. The URL remembers the choice.",
        )
    idx = sources.index(source) if source in sources else 0
    session = corpus.sessions[idx]
    configs = state.current_configs()
    engines = state.shown_engines()
    replays = {name: state.replays(name)[idx] for name in engines}

    with top[1]:
        layout = st.segmented_control(
            "Layout", options=list(LAYOUTS), format_func=lambda k: LAYOUTS[k], default="stacked",
            key="layout", bind="query-params", required=True,
            help="Stacked: every guard's chart shares the call axis. Side by side: two charts "
            "per row.",
        )
    n_turns = len(session.turns)
    if n_turns and (not isinstance(st.session_state.get(TURN_KEY), int)
                    or not 0 <= st.session_state[TURN_KEY] < n_turns):
        st.session_state.pop(TURN_KEY, None)
        st.session_state[TURN_KEY] = _default_turn(replays)
    with top[2]:
        turn = st.number_input(
            "Turn", min_value=0, max_value=max(n_turns - 1, 0), step=1, key=TURN_KEY,
            bind="query-params", disabled=n_turns == 0,
            help="The assistant turn the transcript opens at (0 = first). Click a chart marker "
            "to jump to it.",
        ) if n_turns else None

    label = views.label_of(corpus, session.source)
    facts = [f"format {session.format}", f"{len(session.calls)} tool calls",
             f"{n_turns} assistant turns"]
    if label:
        facts.append("labelled **real loop**" if label == "loop" else "labelled **good work**")
    st.caption(" · ".join(facts))
    with st.expander("Label this session", icon=":material/label:"):
        # The turn open in the timeline fills the loop start when it is first marked a loop.
        labelling.label_editor(session.source, key="session.label", turns=n_turns,
                               suggested_turn=turn, corpus=corpus)

    jump_options = _jump_options(replays)
    if jump_options:
        st.selectbox("Jump to a refusal or warning", options=list(jump_options), index=None,
                     placeholder=f"{len(jump_options)} refusals and warnings…", key="_jump",
                     on_change=_jump, args=(jump_options,))

    breaks, compactions = views.event_positions(session)
    infos = views.call_infos(session)
    figs = {name: _figure(name, idx, replays[name], infos, configs[name].config, breaks,
                          compactions, turn)
            for name in engines}

    if layout == "stacked":
        left, right = st.columns([3, 2])
        with left:
            for name in engines:
                _chart(name, figs[name], session.source, replays[name])
        with right:
            _transcript(session, replays, turn)
    else:
        left, right = st.columns([4, 1.6])
        with left:
            for k in range(0, len(engines), 2):
                cols = st.columns(2)
                for col, name in zip(cols, engines[k:k + 2], strict=False):
                    with col:
                        _chart(name, figs[name], session.source, replays[name])
        with right:
            _transcript(session, replays, turn)
    _explanations(session, replays, configs, label)


def _default_turn(replays: dict[str, SessionReplay]) -> int:
    turns = [r.first_refusal.turn for r in replays.values() if r.first_refusal is not None]
    return min(turns) if turns else 0


def _jump_options(replays: dict[str, SessionReplay]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, r in replays.items():
        for s in r.steps:
            if s.verdict == "pass":
                continue
            where = f"turn {s.turn}" + (f", call {s.call}" if s.call is not None else "")
            out[f"{where} — {views.step_badge(name, s)}"] = s.turn
            if len(out) >= 300:
                return out
    return dict(sorted(out.items(), key=lambda kv: kv[1]))


def _figure(
    name: str, idx: int, replay: SessionReplay, infos: list[charts.CallInfo], config: Any,
    breaks: list[float], compactions: list[float], turn: int | None,
) -> Any:
    selected = None
    if turn is not None:
        selected = next((i for i, s in enumerate(replay.steps) if s.turn == turn), None)
    engine = get_engine(name)
    counters = engine.counters(state.prepared(name, config)[idx], replay, config)
    return charts.session_figure(
        replay, infos, counters=counters, breaks=breaks, compactions=compactions,
        selected_step=selected, title=state.ENGINE_TITLES[name],
    )


def _chart(name: str, fig: Any, source: str, replay: SessionReplay) -> None:
    key = f"detail_{name}"
    fr = replay.first_refusal
    alt = (f"{state.ENGINE_TITLES[name]} timeline: each tool on its own lane, and the repeat count "
           "against the thresholds. " + (f"First refusal at turn {fr.turn} ({fr.detector})."
                                         if fr else "Never refused."))
    st.plotly_chart(
        fig, key=key, on_select=lambda: _pick_turn_from_chart(key, name, source),
        selection_mode="points", theme=None, alt=alt,
        config={"displaylogo": False, "toImageButtonOptions": {"filename": f"loopscope-{name}"}},
    )


def _transcript(session: Session, replays: dict[str, SessionReplay], turn: int | None) -> None:
    st.markdown("**Transcript**")
    badges: dict[int, list[str]] = {}
    for name, r in replays.items():
        for s in r.steps:
            if s.verdict != "pass":
                badges.setdefault(s.turn, []).append(views.step_badge(name, s))
    views.render_transcript(session, turn, badges)


def _explanations(
    session: Session, replays: dict[str, SessionReplay], configs: dict[str, Any], label: str | None
) -> None:
    st.header("Why", anchor=False)
    corpus = state.corpus()
    idx = state.session_index()[session.source]
    names = list(replays)
    cols = st.columns(min(len(names), 2)) * ((len(names) + 1) // 2)
    for col, name in zip(cols, names, strict=False):
        with col:
            st.subheader(state.ENGINE_TITLES[name], anchor=False)
            try:
                explain_view.render_engine_explanations(
                    name,
                    session,
                    replays[name],
                    configs[name],
                    state.prepared(name, configs[name].config)[idx],
                    label=label,
                    from_turn=views.label_from_turn(corpus, session.source),
                )
            except Exception as exc:  # an explanation bug must not hide the verdicts
                st.warning(f"The explanation could not be built ({type(exc).__name__}: "
                           f"{escape_for_display(str(exc), 200)}). The verdicts above are unaffected.",
                           icon=":material/warning:")


if __name__ == "__main__":  # run as a Streamlit page
    render()
