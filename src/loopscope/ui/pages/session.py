"""Session detail: every shown guard on one session, aligned on the same calls, each tool on
its own lane, counts against thresholds, every refusal and warning explained, and the
transcript opened at the chosen turn."""

from __future__ import annotations

from typing import Any

import streamlit as st

from loopscope.engines import SessionReplay, get_engine
from loopscope.model import Session
from loopscope.ui import charts, explain_view, labelling, page_helpers, plain_words, state
from loopscope.ui.layout import legend as wrapping_legend
from loopscope.ui.plain_words import md

LAYOUTS = {"stacked": "Stacked", "side": "Side by side"}
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
        st.session_state[TURN_KEY] = session.calls[call].turn + 1
        return
    # A prose step between calls: the first turn whose step sits at x.
    replay = state.replays(engine)[idx]
    for s, sx in zip(replay.steps, charts.step_positions(replay.steps), strict=True):
        if sx == x:
            st.session_state[TURN_KEY] = s.turn + 1
            return


def _jump(options: dict[str, int]) -> None:
    choice = st.session_state.get("_jump")
    if choice in options:
        st.session_state[TURN_KEY] = options[choice] + 1


@st.fragment
def _body() -> None:
    explain_view.rerun_if_settings_changed()
    corpus = state.corpus()
    sources = list(corpus.sources)
    if st.session_state.get(SESSION_KEY) not in sources:
        st.session_state.pop(SESSION_KEY, None)
    if SESSION_KEY not in st.session_state and SESSION_KEY not in st.query_params:
        # No default option: the URL always names the session shown, so a link is exact.
        st.session_state[SESSION_KEY] = sources[0]
    asked = st.query_params.get(SESSION_KEY)  # (read before the picker drops an unknown one)
    top = st.columns([3, 1, 1.9])  # (the layout's two options side by side at 1000 px)
    with top[0]:
        source = st.selectbox(
            "Session", options=sources, format_func=corpus.display, key=SESSION_KEY,
            index=None, bind="query-params", on_change=_on_session_change,
            help="Every loaded session. The URL remembers the choice.",
        )
    if source not in sources:
        # A link to a session that is not loaded (another folder, a renamed file): say so,
        # rather than show another session's verdicts under it.
        st.warning((f"No loaded session is called {md(asked)}. " if asked else "")
                   + "Choose a session above: the page shows the one chosen.")
        return
    idx = sources.index(source)
    session = corpus.sessions[idx]
    configs = state.current_configs()
    engines = state.shown_engines()
    replays = {name: state.replays(name)[idx] for name in engines}

    n_turns = len(session.turns)
    # A bound control reads the URL only when it is drawn: a turn in a link counts too.
    current = st.session_state.get(TURN_KEY, _url_int(TURN_KEY))
    if n_turns and (not isinstance(current, int) or not 1 <= current <= n_turns):
        st.session_state.pop(TURN_KEY, None)
        st.session_state[TURN_KEY] = _default_turn(replays) + 1
    with top[1]:
        shown_turn = st.number_input(
            "Turn", min_value=1, max_value=max(n_turns, 1), step=1, key=TURN_KEY,
            bind="query-params", disabled=n_turns == 0,
            help="The assistant turn the transcript opens at, counted from 1. Click a chart "
            "marker to jump to it.",
        ) if n_turns else None
    turn = int(shown_turn) - 1 if shown_turn is not None else None
    with top[2]:
        layout = st.segmented_control(
            "Layout", options=list(LAYOUTS), format_func=lambda k: LAYOUTS[k], default="stacked",
            key="layout", bind="query-params", required=True,
            help="Stacked: every guard's chart shares the call axis, full width. Side by side: "
            "two charts per row.",
        )

    label = page_helpers.label_of(corpus, session.source)
    from_turn = page_helpers.label_from_turn(corpus, session.source)
    facts = [f"{len(session.calls)} tool calls", f"{n_turns} assistant turns",
             f"format {md(session.format)}"]
    if label:
        facts.append("labelled **real loop**" if label == "loop" else "labelled **good work**")
    cap, dl = st.columns([4, 1.3])
    cap.caption(" · ".join(facts))
    with dl:
        _report_button(session, idx, engines, replays, configs, label, from_turn)

    explain_view.render_why(session, idx, engines, replays, configs, label, from_turn)

    with st.expander("Label this session", icon=":material/label:"):
        # The turn open in the timeline fills the loop start when it is first marked a loop.
        labelling.label_editor(session.source, key="session.label", turns=n_turns,
                               suggested_turn=turn, corpus=corpus)

    st.subheader("Timeline and transcript", anchor=False)
    jump_options = _jump_options(replays)
    if jump_options:
        st.selectbox("Jump to a refusal or warning", options=list(jump_options), index=None,
                     placeholder=f"{len(jump_options)} refusals and warnings…", key="_jump",
                     on_change=_jump, args=(jump_options,))

    breaks, compactions = page_helpers.event_positions(session)
    infos = page_helpers.call_infos(session)
    end = _axis_end(session, replays)
    figs = {name: _figure(name, idx, replays[name], infos, configs[name].config, breaks,
                          compactions, turn, end)
            for name in engines}

    if layout == "stacked":
        # (the transcript's column keeps ~260 px at 1000 px: narrower, a line held a word)
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
                        _chart(name, figs[name], session.source, replays[name], 1)
        with right:
            _transcript(session, replays, turn)
    st.subheader("Every refusal and warning, and known limitations", anchor=False)
    explain_view.render_details(session, engines, replays, configs)


def _url_int(key: str) -> int | None:
    try:
        return int(st.query_params.get(key, ""))
    except ValueError:
        return None


def _axis_end(session: Session, replays: dict[str, SessionReplay]) -> float:
    """One end of the call axis for every guard's chart (so stacked charts line up)."""
    end = float(len(session.calls))
    for r in replays.values():
        xs = charts.step_positions(r.steps)
        if xs:
            end = max(end, max(xs) + 0.5)
    return end


def _report_button(session: Session, idx: int, engines: list[str],
                   replays: dict[str, SessionReplay], configs: dict[str, Any],
                   label: str | None, from_turn: int | None) -> None:
    from loopscope.ui import report

    def build() -> str:
        return report.session_report_html(
            [report.session_part(state.corpus(), session, idx, engines, replays, configs,
                                 label, from_turn, advice={
                                     e: explain_view.advice_for(e, idx, configs[e].config,
                                                                label, from_turn)
                                     for e in engines})],
            title=f"loopscope report: {state.corpus().display(session.source)}",
            settings=report.settings_part(engines, configs))

    st.download_button(
        "Report (HTML)", build, file_name=report.file_name(state.corpus().display(session.source)),
        mime="text/html", key="session.report", icon=":material/description:",
        on_click="ignore", width="stretch",
        help="One self-contained page to attach to a ticket: why, the timelines and the "
        "settings used. It opens in any browser without loopscope or a network.",
    )


def _default_turn(replays: dict[str, SessionReplay]) -> int:
    turns = [r.first_refusal.turn for r in replays.values() if r.first_refusal is not None]
    return min(turns) if turns else 0


def _jump_options(replays: dict[str, SessionReplay]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, r in replays.items():
        for s in r.steps:
            if s.verdict == "pass":
                continue
            where = f"turn {s.turn + 1}" + (f", call {s.call + 1}" if s.call is not None else "")
            out[f"{where} — {page_helpers.step_badge(name, s)}"] = s.turn
            if len(out) >= 300:
                return out
    return dict(sorted(out.items(), key=lambda kv: kv[1]))


def _figure(
    name: str, idx: int, replay: SessionReplay, infos: list[charts.CallInfo], config: Any,
    breaks: list[float], compactions: list[float], turn: int | None, end: float,
) -> Any:
    selected = None
    if turn is not None:
        selected = next((i for i, s in enumerate(replay.steps) if s.turn == turn), None)
    engine = get_engine(name)
    counters = engine.counters(state.prepared(name, config)[idx], replay, config)
    return charts.session_figure(
        replay, infos, counters=counters, breaks=breaks, compactions=compactions,
        selected_step=selected, title=state.engine_titles()[name], x_end=end,
    )


def _chart(name: str, fig: Any, source: str, replay: SessionReplay, legend_columns: int = 2
           ) -> None:
    key = f"detail_{name}"
    fr = replay.first_refusal
    alt = (f"{state.engine_titles()[name]} timeline: each tool on its own lane, and the repeat count "
           "against the thresholds. " + (f"First refusal at {plain_words.where(fr)} "
                                         f"({page_helpers.detector_title(fr.detector)})."
                                         if fr else "Never refused."))
    # The legend is drawn apart, in two columns under the chart: Plotly's own spans only the
    # plot area (narrowed by the lane names) and stacked one entry per line over the axis.
    entries = charts.legend_entries(fig)
    fig.update_layout(showlegend=False)
    st.plotly_chart(
        fig, key=key, on_select=lambda: _pick_turn_from_chart(key, name, source),
        selection_mode="points", theme=None, alt=alt,
        config={"displaylogo": False, "toImageButtonOptions": {"filename": f"loopscope-{name}"}},
    )
    wrapping_legend(entries, f"{key}_legend", columns=legend_columns,
                  alt=f"Legend of the {state.engine_titles()[name]} timeline.")


def _transcript(session: Session, replays: dict[str, SessionReplay], turn: int | None) -> None:
    st.markdown("**Transcript**")
    badges: dict[int, list[str]] = {}
    for name, r in replays.items():
        for s in r.steps:
            if s.verdict != "pass":
                badges.setdefault(s.turn, []).append(page_helpers.step_badge(name, s))
    page_helpers.render_transcript(session, turn, badges)


if __name__ == "__main__":  # run as a Streamlit page
    render()
