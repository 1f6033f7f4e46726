"""Explanations on screen: the plain sentence for every refusal and warning, the smallest
setting change (verified by a re-run, from ``loopscope.explain``), and the known limitations
that apply to the session. A suggested change can be applied with one click."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from loopscope.advice import SettingChange, smallest_changes
from loopscope.engines import SessionReplay, Step, get_engine
from loopscope.engines.base import ConfigResolution
from loopscope.model import Session, escape_for_display
from loopscope.ui import state, views

MAX_LISTED = 60
FULL_RERUN_KEY = "_loopscope_full_rerun"


@dataclass
class Change:
    """A setting change a user can apply: description, control values, what it leads to."""

    description: str
    values: dict[str, Any]
    outcome: str = ""
    notes: tuple[str, ...] = ()


@dataclass
class Explained:
    step: Step
    headline: str
    details: list[str] = field(default_factory=list)
    upstream: list[tuple[str, str]] = field(default_factory=list)
    """(title, exact upstream text)."""


# --------------------------------------------------------------------------- from the engine


def explained(name: str, step: Step, replay: SessionReplay, config: Any) -> Explained:
    """The engine's explanation of ``step`` in the page's shape."""
    e = get_engine(name).explainer.explain_step(step, replay, config)
    details = list(e.what_happened)
    if e.which_limit:
        details.append(e.which_limit)
    if e.guard_action:
        details.append(e.guard_action)
    details.extend(lim.text for lim in e.limitations)
    return Explained(step, e.headline, details, list(e.upstream))


def _change(name: str, c: SettingChange) -> Change:
    return Change(c.description, state.control_values(name, c.values), c.effect, tuple(c.notes))


def changes_for(name: str, prepared: Any, config: Any, step: Step, goal: str) -> list[Change]:
    """The smallest verified changes that let ``step`` through (``goal="pass"``) or catch it
    (``"refuse"``), as applicable changes."""
    engine = get_engine(name)
    found = smallest_changes(engine, prepared, config, step, goal)  # type: ignore[arg-type]
    return [_change(name, c) for c in found]


def limitations(name: str, session: Session, replay: SessionReplay,
                res: ConfigResolution[Any]) -> list[tuple[str, str]]:
    found = get_engine(name).explainer.limitations(session, replay, res.config, res.warnings)
    return [(lim.id, lim.text) for lim in found]


# --------------------------------------------------------------------------- rendering


def _apply(values: Mapping[str, Any]) -> None:
    state.apply_settings(values)
    st.session_state[FULL_RERUN_KEY] = True


def rerun_if_settings_changed() -> None:
    """A change applied from a fragment must redraw the sidebar too: rerun the whole app."""
    if st.session_state.pop(FULL_RERUN_KEY, False):
        st.rerun(scope="app")


def render_changes(changes: Sequence[Change], key: str, intro: str) -> None:
    if not changes:
        return
    st.markdown(intro)
    for i, c in enumerate(changes):
        cols = st.columns([5, 1])
        text = f"- {escape_for_display(c.description, 300)}"
        if c.outcome:
            text += f" — {c.outcome}."
        for n in c.notes:
            text += f" *{escape_for_display(n, 200)}*"
        cols[0].markdown(text)
        if c.values:
            cols[1].button("Apply", key=f"{key}_{i}", on_click=_apply, args=(c.values,),
                           help="Set this in the sidebar (and the URL).")


def _missed_loop_step(replay: SessionReplay, from_turn: int | None) -> Step | None:
    """For a labelled loop that was not caught: the step nearest to a refusal after the loop
    began (the highest count), which the 'smallest change to catch it' is computed for."""
    candidates = [s for s in replay.steps if s.turn >= (from_turn or 0) and s.count is not None]
    if not candidates:
        candidates = [s for s in replay.steps if s.turn >= (from_turn or 0)]
    if not candidates:
        return None
    return max(candidates, key=lambda s: (s.count or 0, -s.turn))


def render_engine_explanations(
    name: str,
    session: Session,
    replay: SessionReplay,
    res: ConfigResolution[Any],
    prepared: Any,
    *,
    label: str | None = None,
    from_turn: int | None = None,
) -> None:
    """Everything that explains ``replay``: first refusal, smallest change, all other verdicts,
    and the limitations that apply."""
    config = res.config
    flagged = [s for s in replay.steps if s.verdict != "pass"]
    first = next((s for s in replay.steps if s.verdict == "refuse"), None)
    key = f"x_{name}"
    if first is None:
        if flagged:
            st.success(f"Never refused; {len(flagged)} warning(s) below.", icon=":material/check:")
        else:
            st.success("Never refused or warned under these settings.", icon=":material/check:")
        if label == "loop":
            st.warning("This session is labelled a real loop, but it was not caught.",
                       icon=":material/report:")
            target = _missed_loop_step(replay, from_turn)
            if target is not None:
                render_changes(changes_for(name, prepared, config, target, "refuse"),
                               f"{key}_catch",
                               f"Smallest change that would catch it (turn {target.turn + 1}):")
    else:
        e = explained(name, first, replay, config)
        where = f"turn {first.turn + 1}" + (f", call {first.call + 1}" if first.call is not None
                                            else "")
        st.error(f"**First refusal ({where}):** {e.headline}", icon=":material/block:")
        for d in e.details:
            st.markdown(f"- {d}")
        if label == "ok":
            st.warning("This session is labelled good work: this is a false refusal.",
                       icon=":material/report:")
        render_changes(changes_for(name, prepared, config, first, "pass"), f"{key}_pass",
                       "**Smallest change that lets it through** (verified by re-running):")
        for title, text in e.upstream:
            with st.expander(title):
                st.code(text, language=None, wrap_lines=True)
    others = [s for s in flagged if s is not first]
    if others:
        with st.expander(f"All other refusals and warnings ({len(others)})"):
            for s in others[:MAX_LISTED]:
                e = explained(name, s, replay, config)
                where = f"turn {s.turn + 1}" + (f", call {s.call + 1}" if s.call is not None
                                                 else "")
                word = views.verdict_word(s)
                st.markdown(f"**{where} — {word}:** {e.headline}")
            if len(others) > MAX_LISTED:
                st.caption(f"… and {len(others) - MAX_LISTED} more (export the verdict report "
                           "for all of them).")
    try:
        found = limitations(name, session, replay, res)
    except Exception:
        found = []
    if found:
        with st.expander(f"Known limitations that apply here ({len(found)})", expanded=True):
            for _lid, text in found:
                st.markdown(f"- {text}")
