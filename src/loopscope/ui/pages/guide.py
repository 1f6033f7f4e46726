"""Guide: each detector in plain words, with a tiny worked example replayed live by the real
engine (so the table below each example is what the engine says, not a drawing of it)."""

from __future__ import annotations

import os
import tempfile
from typing import Any

import pandas as pd
import streamlit as st

from loopscope.engines import get_engine
from loopscope.model import Session
from loopscope.ui import charts, explain_view, guide_examples, state, views


@st.cache_resource(show_spinner=False)
def example_sessions() -> dict[str, Session]:
    """Each example written to a private temporary file and loaded by the real importer."""
    from loopscope.formats import load_file

    folder = tempfile.mkdtemp(prefix="loopscope-guide-")
    out: dict[str, Session] = {}
    for ex in guide_examples.EXAMPLES:
        path = os.path.join(folder, f"{ex.key}.jsonl")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(guide_examples.session_jsonl(ex))
        out[ex.key] = load_file(path).sessions[0]
    return out


def _config(ex: guide_examples.Example) -> Any:
    values = state.default_values()
    values.update(ex.settings)
    return state.resolve(ex.engine, values).config


def _settings_text(ex: guide_examples.Example) -> str:
    if not ex.settings:
        return "Settings: the upstream defaults."
    parts = []
    for key, value in ex.settings.items():
        f = state.FIELDS_BY_KEY[key]
        parts.append(f"{f.label} = **{value}** (`{f.native}`)")
    return "Settings for this example: " + "; ".join(parts) + "."


def _example(ex: guide_examples.Example, session: Session) -> None:
    engine = get_engine(ex.engine)
    config = _config(ex)
    replay = engine.replay(session, config)
    st.markdown(ex.what)
    st.markdown(f"*Example:* {ex.story} {_settings_text(ex)}")
    infos = views.call_infos(session)
    rows = []
    for s in replay.steps:
        call = infos[s.call] if s.call is not None and s.call < len(infos) else None
        rows.append({
            "turn": s.turn,
            "call": s.call,
            "tool": call.tool if call else "(reply without tools)",
            "input": call.args if call else "",
            "answer": call.answer if call else "",
            "verdict": views.verdict_word(s),
            "detector": s.detector or "",
            "count": s.count,
        })
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    first = next((s for s in replay.steps if s.verdict == "refuse"), None)
    if first is not None:
        explained = (explain_view.gglib_explained if ex.engine == "gglib"
                     else explain_view.openclaw_explained)(first, replay.steps, config)
        st.error(f"**Refused at turn {first.turn}:** {explained.headline}", icon=":material/block:")
    else:
        st.success("Never refused.", icon=":material/check:")
    with st.expander("Timeline"):
        fig = charts.session_figure(
            replay, infos,
            thresholds=None if ex.engine == "gglib" else {
                "warning": config.warning_threshold, "critical": config.critical_threshold,
                "breaker": config.global_circuit_breaker_threshold},
            history_size=None if ex.engine == "gglib" else config.history_size,
            compactions=views.event_positions(session)[1],
        )
        st.plotly_chart(fig, key=f"guide_{ex.key}", theme=None, config={"displaylogo": False})


def render() -> None:
    st.title("Guide: how the two guards decide", anchor=False)
    st.markdown(
        "loopscope replays every recorded tool call as though it ran and asks each guard what "
        "it would have said at that moment. The first refusal is the **point of divergence**: "
        "what follows would not have happened as recorded, so it is shaded on the timelines.\n\n"
        "- **gglib** looks at each assistant turn's *batch* of tool calls and at replies without "
        "tools. It never warns: a step passes or is refused.\n"
        "- **OpenClaw** looks at each tool call against a rolling history of recent calls. It "
        "*warns* (only in its logs) and then *blocks* (the agent gets a refusal instead of the "
        "tool's answer). OpenClaw's own default is off; loopscope turns it on so you can see "
        "what it would do.\n\n"
        "Each example below is a tiny session replayed live by the same engine the dashboard "
        "uses."
    )
    sessions = example_sessions()
    tabs = st.tabs(["gglib", "OpenClaw"])
    for tab, engine in zip(tabs, ("gglib", "openclaw"), strict=True):
        with tab:
            for ex in guide_examples.EXAMPLES:
                if ex.engine != engine:
                    continue
                st.header(ex.title, anchor=False)
                _example(ex, sessions[ex.key])
                st.divider()


if __name__ == "__main__":  # run as a Streamlit page
    render()
