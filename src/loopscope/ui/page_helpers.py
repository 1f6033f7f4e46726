"""Shared rendering helpers for the pages: rows for the charts, call snippets, transcript,
verdict badges and explanations."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import streamlit as st

from loopscope.engines.base import SessionReplay, Step
from loopscope.model import (
    AssistantTurn,
    Compaction,
    OtherMessage,
    Session,
    SystemMessage,
    ToolResult,
    UserMessage,
    escape_for_display,
)
from loopscope.ui import charts, state
from loopscope.ui.data_source import Corpus
from loopscope.ui.plain_words import md, md_code

__all__ = ["md", "md_code"]  # the one way recorded text enters Markdown (see ui.plain_words)


# --------------------------------------------------------------------------- labels


def label_of(corpus: Corpus, source: str) -> str | None:
    """``loop``, ``ok`` or None for a session source, whatever shape the label objects have."""
    value: Any = corpus.labels.get(source) if corpus.labels else None
    return None if value is None else _label_text(value)


def _label_text(value: Any) -> str | None:
    if isinstance(value, str):
        text = value
    else:
        text = getattr(value, "label", None) or getattr(value, "value", None) or ""
    text = str(text).lower()
    if text in ("loop", "ok"):
        return text
    if text in ("good", "good_work", "good work"):
        return "ok"
    return None


def label_from_turn(corpus: Corpus, source: str) -> int | None:
    value: Any = corpus.labels.get(source) if corpus.labels else None
    turn = getattr(value, "from_turn", None) if value is not None else None
    return turn if isinstance(turn, int) else None


def overview_rows(
    corpus: Corpus, replays: Mapping[str, Sequence[SessionReplay]],
    indices: Iterable[int] | None = None,
) -> list[charts.OverviewRow]:
    """One row per session (or per session at ``indices``, in that order) with every engine's
    replay (``replays``: engine → list aligned with ``corpus.sessions``)."""
    sources, names, calls = corpus.sources, corpus.session_names, corpus.call_counts
    return [
        charts.OverviewRow(
            name=names[i],
            replays={name: reps[i] for name, reps in replays.items()},
            calls=calls[i],
            label=label_of(corpus, sources[i]),
        )
        for i in (range(len(sources)) if indices is None else indices)
    ]


def overview_order(
    corpus: Corpus, replays: Mapping[str, Sequence[SessionReplay]], by: str,
) -> list[int]:
    """Positions in ``corpus.sessions`` in the overview's display order (``replays`` as in
    :func:`overview_rows`, restricted to the engines shown)."""
    return charts.row_order(corpus.session_names, corpus.call_counts, session_labels(corpus),
                            replays, by)


def session_labels(corpus: Corpus) -> list[str | None]:
    """:func:`label_of` every session, aligned with ``corpus.sessions`` (labels can change
    while the corpus is loaded: asked afresh)."""
    labels = corpus.labels
    if not labels:  # (the usual case, and every slider move asks: no call per session)
        return [None] * len(corpus.sources)
    get = labels.get
    return [None if (value := get(source)) is None else _label_text(value)
            for source in corpus.sources]


def session_params(source: str, turn: int | None = None) -> dict[str, str]:
    """The session page's query parameters for ``source`` (``turn``: 0-based; the URL counts
    turns from 1, as the page does)."""
    params = {"session": state.corpus().display(source)}
    if turn is not None:
        params["turn"] = str(turn + 1)
    return params


def session_link(source: str, turn: int | None = None, label: str | None = None) -> None:
    """A link to the session page on ``source`` (and ``turn``, 0-based) that keeps the
    settings bound to the sidebar in the URL."""
    from loopscope.ui.pages.registry import page_for

    target = page_for("session")
    if target is None:
        return
    corpus = state.corpus()
    text = label or (f"Open {md(corpus.display(source))}"
                     + (f" at turn {turn + 1}" if turn is not None else ""))
    st.page_link(target, label=text, icon=":material/open_in_new:",
                 query_params=session_params(source, turn))


OPEN_KEY = "_loopscope_open_session"


def open_session(source: str, turn: int | None = None) -> None:
    """Go to the session page on ``source`` (one click from a chart marker or a table row).

    ``st.switch_page`` with ``query_params`` keeps every parameter bound to a control drawn in
    this run (the sidebar's settings) and adds the session's. From inside a fragment the
    sidebar is not drawn, so the switch waits for a full run (:func:`open_pending`)."""
    from loopscope.ui.pages.registry import page_for

    if _fragment_running():
        st.session_state[OPEN_KEY] = (source, turn)
        st.rerun(scope="app")
    target = page_for("session")
    if target is not None:
        st.switch_page(target, query_params=session_params(source, turn))


def open_pending() -> None:
    """Finish an :func:`open_session` asked for inside a fragment (call at a page's top)."""
    pending = st.session_state.pop(OPEN_KEY, None)
    if pending is not None:
        open_session(*pending)


def _fragment_running() -> bool:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    # A fragment-only run names the fragments it runs; a full run names none.
    return bool(ctx is not None and getattr(ctx, "fragment_ids_this_run", None))


# --------------------------------------------------------------------------- page tops


def page_corpus(title: str) -> Corpus | None:
    """Write the page's ``title`` and return the loaded corpus; with no session loaded, say so
    and return ``None``: a page that works on the sessions has nothing else to show."""
    st.title(title, anchor=False)
    corpus = state.corpus()
    if not corpus.sessions:
        st.info("No sessions are loaded.")
        return None
    return corpus


def guard_choice(engines: Sequence[str], key: str, *, required: bool = False) -> str:
    """The "Guard" picker over ``engines`` (never empty), bound to the URL under ``key``.

    No choice (a deselected control) means the first guard, and so does a choice that is no
    longer among ``engines`` (a shared URL naming a guard this page does not show)."""
    engine = st.segmented_control(
        "Guard", engines, format_func=state.engine_titles().__getitem__, key=key,
        default=engines[0], bind="query-params", required=required,
    ) or engines[0]
    return engine if engine in engines else engines[0]


# --------------------------------------------------------------------------- calls & positions


def snippet(value: Any, limit: int = 160) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, sort_keys=False, default=str)
        except (TypeError, ValueError):
            text = repr(value)
    text = escape_for_display(text.replace("\n", " "))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call_infos(session: Session) -> list[charts.CallInfo]:
    """Per tool call: the tool, a snippet of its input, and a snippet of its answer."""
    events = session.events
    out: list[charts.CallInfo] = []
    for c in session.calls:
        answer = ""
        if c.result is not None and 0 <= c.result < len(events):
            ev = events[c.result]
            if isinstance(ev, ToolResult):
                answer = ("error: " if ev.is_error else "") + ev.text
        args = c.arguments if c.arguments_kind != "free_text" else c.raw_arguments
        out.append(charts.CallInfo(escape_for_display(c.name, 80), snippet(args, 120),
                                   snippet(answer, 200)))
    return out


def event_positions(session: Session) -> tuple[list[float], list[float]]:
    """x positions (between calls) of user messages and of compactions after the first call."""
    calls = 0
    breaks: list[float] = []
    compactions: list[float] = []
    for ev in session.events:
        if isinstance(ev, AssistantTurn):
            calls += len(ev.tool_calls)
        elif isinstance(ev, UserMessage) and calls > 0:
            breaks.append(calls - 0.5)
        elif isinstance(ev, Compaction):
            compactions.append(calls - 0.5)
    return breaks, compactions


# --------------------------------------------------------------------------- verdicts


def verdict_word(step: Step) -> str:
    if step.verdict == "refuse":
        return "refused"
    if step.verdict == "warn":
        return "warned"
    return "passed"


def detector_title(detector: str | None) -> str:
    return charts.style_of(detector).title if detector else ""


def step_badge(engine: str, step: Step) -> str:
    """``gglib: refused — repeated batch (loop), count 3`` (text, for captions and lists)."""
    text = f"{state.engine_titles()[engine]}: {verdict_word(step)}"
    if step.detector:
        text += f" — {detector_title(step.detector)}, count {step.count}"
    if step.after_divergence:
        text += " (after divergence)"
    return text


def steps_by_turn(replay: SessionReplay) -> dict[int, list[Step]]:
    out: dict[int, list[Step]] = {}
    for s in replay.steps:
        out.setdefault(s.turn, []).append(s)
    return out


# --------------------------------------------------------------------------- transcript


ROLE_ICONS = {
    "user": ":material/person:",
    "assistant": ":material/smart_toy:",
    "tool": ":material/build:",
    "system": ":material/settings:",
    "other": ":material/help:",
    "compaction": ":material/compress:",
}


def _short(text: str, limit: int) -> str:
    text = text or ""
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more characters)"


def render_event(
    ev: Any,
    session: Session,
    badges: Mapping[int, list[str]],
    selected_turn: int | None,
) -> None:
    """One transcript entry in a bordered box; the selected turn is marked in words."""
    if isinstance(ev, AssistantTurn):
        is_sel = ev.turn == selected_turn
        with st.container(border=True):
            head = f"**Assistant** · turn {ev.turn + 1}"
            if is_sel:
                head = f"**▶ Selected** · {head}"
            st.markdown(head)
            if ev.text:
                st.text(_short(ev.text, 1200))
            for c in ev.tool_calls:
                args = c.arguments if c.arguments_kind != "free_text" else c.raw_arguments
                st.markdown(f"{md_code(c.name, 80)} call {c.index + 1}")
                st.code(_short(snippet(args, 2000), 600), language=None, wrap_lines=True)
            for b in badges.get(ev.turn, []):
                icon = ":material/block:" if "refused" in b else ":material/warning:"
                (st.error if "refused" in b else st.warning)(b, icon=icon)
    elif isinstance(ev, ToolResult):
        who = f"call {ev.call_index + 1}" if ev.call_index is not None else "unpaired"
        st.markdown(f"**Tool answer** ({who}){' — error' if ev.is_error else ''}")
        st.text(_short(escape_for_display(ev.text.replace('\n', '⏎ ')), 600))
    elif isinstance(ev, UserMessage):
        st.markdown("**User**")
        st.text(_short(ev.text, 800))
    elif isinstance(ev, SystemMessage):
        st.markdown("**System**")
        st.text(_short(ev.text, 300))
    elif isinstance(ev, OtherMessage):
        st.markdown(f"**{md(str(ev.role or 'other'), 40)}**")
        st.text(_short(ev.text, 300))
    elif isinstance(ev, Compaction):
        st.markdown("**Conversation compacted**")
        if ev.summary:
            st.text(_short(ev.summary, 300))


def render_transcript(
    session: Session,
    selected_turn: int | None,
    badges: Mapping[int, list[str]],
    *,
    before: int = 0,
    after: int = 30,
) -> None:
    """The transcript, opened at the selected turn: the entries just before it, the turn, and
    what follows; earlier entries are collapsed above. (No inner scroll box: a scrollable region
    without a focusable element is unreachable by keyboard.)"""
    events = session.events
    start_event = 0
    if selected_turn is not None and 0 <= selected_turn < len(session.turns):
        start_event = session.turns[selected_turn].index
    lo = max(0, start_event - before)
    hi = min(len(events), start_event + after)
    with st.container(border=False):
        if lo > 0:
            with st.expander(f"{lo} earlier entries"):
                for ev in events[:lo][-200:]:
                    render_event(ev, session, badges, selected_turn)
        for ev in events[lo:hi]:
            render_event(ev, session, badges, selected_turn)
        if hi < len(events):
            st.caption(f"{len(events) - hi} more entries after this (pick a later turn to see them).")
