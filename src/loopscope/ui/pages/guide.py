"""Guide: each detector of each guard in plain words, with a tiny worked example replayed live
by the real engine (so the table below each example is what the engine says, not a drawing of
it). Everything on this page comes from the engines: their summaries, detectors and examples."""

from __future__ import annotations

from typing import Any

import streamlit as st

from loopscope.engines import GuideExample, get_engine
from loopscope.ui import charts, explain_view, layout, page_helpers, state
from loopscope.ui.plain_words import md


@st.cache_resource(show_spinner=False)
def examples(name: str) -> tuple[GuideExample, ...]:
    """An engine's worked examples (built once per server)."""
    return get_engine(name).guide_examples()


def _settings_text(name: str, ex: GuideExample) -> str:
    """The example's own settings; none for one at the shipped defaults (the tab says once
    that every example runs at those unless it names its settings)."""
    if not ex.values:
        return ""
    engine = get_engine(name)
    specs = {s.name: s for s in engine.settings_for(ex.version)}
    parts = []
    for key, value in ex.values.items():
        spec = specs[key]
        parts.append(f"{spec.label} = **{spec.format(value)}** (`{key}`)")
    return "Settings for this example: " + "; ".join(parts) + "."


def _example(name: str, n: int, ex: GuideExample) -> None:
    engine = get_engine(name)
    config = engine.config(dict(ex.values), ex.version).config
    session = ex.session
    replay = engine.replay(session, config)
    st.markdown(ex.text)
    st.markdown(f"*Example:* {ex.story} {_settings_text(name, ex)}".rstrip())
    infos = page_helpers.call_infos(session)
    rows = []
    for s in replay.steps:
        call = infos[s.call] if s.call is not None and s.call < len(infos) else None
        rows.append({
            "turn": s.turn + 1,
            "call": s.call + 1 if s.call is not None else None,
            "tool": call.tool if call else "(reply without tools)",
            "input": call.args if call else "",
            "answer": call.answer if call else "",
            "verdict": page_helpers.verdict_word(s),
            "detector": page_helpers.detector_title(s.detector),
            "count": s.count,
        })
    layout.wrapped_table(rows, key=f"guide_{name}_{n}")
    first = next((s for s in replay.steps if s.verdict == "refuse"), None)
    if first is not None:
        e = explain_view.explained(name, first, replay, config)
        st.error(f"**Refused at turn {first.turn + 1}:** {md(e.headline)}", icon=":material/block:")
    else:
        warn = next((s for s in replay.steps if s.verdict == "warn"), None)
        if warn is not None:
            e = explain_view.explained(name, warn, replay, config)
            st.warning(f"**Warned at turn {warn.turn + 1}:** {md(e.headline)}",
                       icon=":material/warning:")
        else:
            st.success("Never refused.", icon=":material/check:")
    with st.expander("Timeline"):
        prepared = engine.prepare(session, ex.version)
        fig = charts.session_figure(
            replay, infos, counters=engine.counters(prepared, replay, config),
            compactions=page_helpers.event_positions(session)[1],
        )
        st.plotly_chart(fig, key=f"guide_{name}_{n}", theme=None,
                        config={"displaylogo": False})


def render() -> None:
    engines = state.shown_engines()
    st.title("Guide: how the guards decide", anchor=False)
    st.markdown(
        "loopscope replays every recorded tool call as though it ran and asks each guard what "
        "it would have said at that moment. The first refusal is the **point of divergence**: "
        "what follows would not have happened as recorded, so it is shaded on the timelines.\n\n"
        + "\n".join(f"- **{get_engine(n).title}** — {get_engine(n).summary}" for n in engines)
        + "\n\nEach example below is a tiny session replayed live by the same engine the "
        "dashboard uses."
    )
    tabs = st.tabs([state.engine_titles()[n] for n in engines])
    for tab, name in zip(tabs, engines, strict=True):
        with tab:
            engine = get_engine(name)
            for note in engine.notes:
                st.info(note, icon=":material/info:")
            st.markdown("**What it detects**\n\n" + "\n".join(
                f"- **{d.label}**" + (f": {d.description}" if d.description else "")
                for d in engine.detectors))
            if any(not ex.values for ex in examples(name)):
                st.caption("Each example runs with the guard's shipped defaults, unless it "
                           "names its settings.")
            for n, ex in enumerate(examples(name)):
                title = page_helpers.detector_title(ex.detector)
                st.header(ex.title, anchor=False)
                st.caption(f"Detector: {title}")
                _example(name, n, ex)
                st.divider()
            _settings_table(name)


def _settings_table(name: str) -> None:
    """Every setting of the engine, from its schema."""
    engine = get_engine(name)
    st.subheader("Settings", anchor=False)
    for version in engine.versions:
        if len(engine.versions) > 1:
            st.markdown(f"**{engine.title} {version}**")
        rows: list[dict[str, Any]] = []
        for spec in engine.settings_for(version):
            rows.append({
                "setting": spec.label,
                "name in the guard's config": spec.name,
                "default": (", ".join(spec.default) if spec.kind == "str_list"
                            else spec.format(spec.default)),
                "settable in the guard": "yes" if spec.deployable else "no (what-if)",
                "what it does": spec.help,
            })
        layout.wrapped_table(rows, key=f"settings_{name}_{version}")


if __name__ == "__main__":  # run as a Streamlit page
    render()
