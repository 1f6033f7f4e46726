"""Explanations on screen: the plain sentence for every refusal and warning, the smallest
setting change (verified by a re-run, from ``loopscope.explain``), and the known limitations
that apply to the session. A suggested change can be applied with one click."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from loopscope.engines.base import ConfigResolution, SessionReplay, Step
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


# --------------------------------------------------------------------------- gglib


def _gglib_values(changes: Mapping[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, value in changes.items():
        if key == "observation_tools":
            values["gglib.observation_tools"] = state.patterns_to_text(list(value))
        elif key == "max_observation_steps" and value is None:
            values["gglib.max_observation_steps"] = state.OFF
        else:
            values[f"gglib.{key}"] = value
    return values


def _outcome(first: Any) -> str:
    if first is None:
        return "then the session is never refused"
    where = f"call {first.call}" if first.call is not None else f"turn {first.turn}"
    return f"then the first refusal moves to {where} ({first.detector})"


def gglib_explained(step: Step, steps: Sequence[Step], config: Any) -> Explained:
    from loopscope.engines.gglib import explain as ex

    e = ex.explain_step(step, steps, config)
    upstream = []
    if e.upstream_refusal:
        upstream.append(("What a client saw in refuse mode (HTTP 400)", e.upstream_refusal))
    if e.upstream_note:
        upstream.append(("The note appended in note mode (gglib's default)", e.upstream_note))
    return Explained(step, e.headline, list(e.details), upstream)


def gglib_changes_to_pass(prepared: Any, config: Any, turn: int) -> list[Change]:
    from loopscope.engines.gglib import explain as ex

    return [
        Change(c.description, _gglib_values(c.changes), _outcome(c.first_refusal), tuple(c.notes))
        for c in ex.smallest_change_to_pass(prepared, config, turn)
    ]


def gglib_changes_to_refuse(prepared: Any, config: Any, turn: int) -> list[Change]:
    from loopscope.engines.gglib import explain as ex

    return [
        Change(c.description, _gglib_values(c.changes), _outcome(c.first_refusal), tuple(c.notes))
        for c in ex.smallest_change_to_refuse(prepared, config, turn)
    ]


def gglib_limitations(session: Session, replay: SessionReplay, res: ConfigResolution[Any]) -> list[tuple[str, str]]:
    from loopscope.engines.gglib import explain as ex

    return ex.session_limitations(replay.steps, res.config, session.chat_view(), res.warnings)


# --------------------------------------------------------------------------- OpenClaw


def _openclaw_values(changes: Mapping[str, Any]) -> dict[str, Any]:
    return {f"openclaw.{k}": v for k, v in changes.items()}


def openclaw_explained(step: Step, steps: Sequence[Step], config: Any) -> Explained:
    from loopscope.engines.openclaw import explain as ex

    del steps
    e = ex.explain_step(step, config)
    upstream = []
    if e.upstream_message:
        title = ("What the model would have received instead of the result"
                 if step.verdict == "refuse" else "OpenClaw's log line")
        upstream.append((title, e.upstream_message))
    return Explained(step, e.headline, list(e.details), upstream)


def openclaw_changes_to_pass(prepared: Any, config: Any, step: Step) -> list[Change]:
    from loopscope.engines.openclaw import explain as ex

    return [
        Change(c.description, _openclaw_values(c.changes), _outcome(c.first_refusal), tuple(c.notes))
        for c in ex.smallest_change_to_pass(prepared, config, step.call)
    ]


def openclaw_changes_to_refuse(prepared: Any, config: Any, step: Step) -> list[Change]:
    """The smallest lowering of one blocking level under which the call at ``step`` is refused.

    Lowering ``criticalThreshold`` below the warning level also lowers the warning level (OpenClaw
    would otherwise raise it back). Every candidate is verified by re-running.
    """
    from loopscope.engines import get_engine

    engine = get_engine("openclaw")
    position = next((i for i, s in enumerate(engine.run(prepared, config).steps) if s.call == step.call), None)
    if position is None:
        return []
    settings = config.settings()
    out: list[Change] = []
    for key in ("criticalThreshold", "unknownToolThreshold", "globalCircuitBreakerThreshold"):
        current = int(settings[key])
        for value in range(current - 1, 0, -1):
            changes: dict[str, Any] = {key: value}
            if key == "criticalThreshold" and settings["warningThreshold"] >= value:
                changes["warningThreshold"] = max(value - 1, 1)
            if key == "globalCircuitBreakerThreshold" and settings["criticalThreshold"] >= value:
                continue  # OpenClaw would raise the breaker back above the blocking level
            candidate = config.with_settings(**changes)
            rerun = engine.run(prepared, candidate)
            if rerun.steps[position].verdict == "refuse":
                words = " and ".join(f"{k} to {v}" for k, v in changes.items())
                out.append(Change(f"lower {words}", _openclaw_values(changes),
                                  _outcome(rerun.first_refusal)))
                break
    return out


def openclaw_limitations(session: Session, replay: SessionReplay, res: ConfigResolution[Any]) -> list[tuple[str, str]]:
    from loopscope.engines.openclaw import explain as ex

    return [(str(i), str(t)) for i, t in ex.session_limitations(replay, res.config, session, res.warnings)]


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


def _engine_parts(name: str) -> dict[str, Any]:
    if name == "gglib":
        return {
            "explained": gglib_explained,
            "to_pass": lambda p, cfg, s: gglib_changes_to_pass(p, cfg, s.turn),
            "to_refuse": lambda p, cfg, s: gglib_changes_to_refuse(p, cfg, s.turn),
            "limitations": gglib_limitations,
        }
    return {
        "explained": openclaw_explained,
        "to_pass": openclaw_changes_to_pass,
        "to_refuse": openclaw_changes_to_refuse,
        "limitations": openclaw_limitations,
    }


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
    parts = _engine_parts(name)
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
                render_changes(parts["to_refuse"](prepared, config, target), f"{key}_catch",
                               f"Smallest change that would catch it (turn {target.turn}):")
    else:
        e = parts["explained"](first, replay.steps, config)
        where = f"turn {first.turn}" + (f", call {first.call}" if first.call is not None else "")
        st.error(f"**First refusal ({where}):** {e.headline}", icon=":material/block:")
        for d in e.details:
            st.markdown(f"- {d}")
        if label == "ok":
            st.warning("This session is labelled good work: this is a false refusal.",
                       icon=":material/report:")
        render_changes(parts["to_pass"](prepared, config, first), f"{key}_pass",
                       "**Smallest change that lets it through** (verified by re-running):")
        for title, text in e.upstream:
            with st.expander(title):
                st.code(text, language=None, wrap_lines=True)
    others = [s for s in flagged if s is not first]
    if others:
        with st.expander(f"All other refusals and warnings ({len(others)})"):
            for s in others[:MAX_LISTED]:
                e = parts["explained"](s, replay.steps, config)
                where = f"turn {s.turn}" + (f", call {s.call}" if s.call is not None else "")
                word = views.verdict_word(s)
                st.markdown(f"**{where} — {word}:** {e.headline}")
            if len(others) > MAX_LISTED:
                st.caption(f"… and {len(others) - MAX_LISTED} more (export the verdict report "
                           "for all of them).")
    try:
        limitations = parts["limitations"](session, replay, res)
    except Exception:
        limitations = []
    if limitations:
        with st.expander(f"Known limitations that apply here ({len(limitations)})", expanded=True):
            for lid, text in limitations:
                st.markdown(f"- **{escape_for_display(lid, 20)}** — {text}")
