"""The session page's answer to "why did it stop?", for every guard shown.

* :func:`render_why` — the ``why`` block at the top of the session page: per guard, the verdict
  in one plain sentence, whether that refusal stops the agent where the guard is deployed,
  what the session's label makes of it ("this is a false refusal"), and the advice the label
  asks for (:func:`loopscope.advice.session_advice`, in :func:`loopscope.advice.advice_words`'
  sentences — the CLI and the HTML report print the same): the smallest verified changes, each
  with what it does to this session *and to every other loaded session*, the least collateral
  first, switching part of a guard off last, and a plain statement when no change is free of
  harm.
* :func:`render_details` — everything else an explanation holds (every refusal and warning,
  the guard's own messages, the known limitations), below the charts.
* "Apply" sets a change in the sidebar for every session and records what it changed across
  the corpus; :func:`render_applied` shows that record on every page with an Undo. A costly
  change (it switches part of a guard off, gets a labelled session wrong, or newly refuses
  many others) asks first, naming its cost.

Every engine sentence goes through :mod:`loopscope.ui.plain_words` (the sidebar's words, recorded
names escaped) before it reaches Markdown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from loopscope.advice import AdvisedChange, ChangeWords, SessionAdvice, advice_words, session_advice
from loopscope.engines import SessionReplay, Step, get_engine
from loopscope.engines.base import ConfigResolution
from loopscope.engines.contract import default_consequence
from loopscope.model import Session
from loopscope.ui import page_helpers, state
from loopscope.ui.plain_words import (
    PlainExplanation,
    label_meaning,
    md,
    md_code,
    plain,
    plain_explanation,
    to_markdown,
    where,
)
from loopscope.words import plural

MAX_LISTED = 60
FULL_RERUN_KEY = "_loopscope_full_rerun"
APPLIED_KEY = "_loopscope_applied"
SHOWN_CHANGES = 3
"""Changes shown at once per guard; the rest sit in an expander."""


# --------------------------------------------------------------------------- explanations


def explanation(name: str, step: Step, replay: SessionReplay, config: Any,
                version: str | None = None) -> PlainExplanation:
    """The engine's explanation of ``step`` in the sidebar's words."""
    engine = get_engine(name)
    specs = engine.settings_for(version or engine.version_of(config))
    return plain_explanation(engine.explainer.explain_step(step, replay, config), specs)


@dataclass
class Explained:
    """Kept for the pages that show one sentence per step (the Guide)."""

    step: Step
    headline: str
    details: list[str] = field(default_factory=list)
    upstream: list[tuple[str, str]] = field(default_factory=list)


def explained(name: str, step: Step, replay: SessionReplay, config: Any) -> Explained:
    e = explanation(name, step, replay, config)
    return Explained(step, e.headline, [*e.facts, *([e.limit] if e.limit else []),
                                        *([e.action] if e.action else []), *e.limitations],
                     list(e.upstream))


def _tools(session: Session) -> set[str]:
    return {c.name for c in session.calls}


def limitations(name: str, session: Session, replay: SessionReplay,
                res: ConfigResolution[Any]) -> list[tuple[str, str]]:
    """``(id, text in plain words)`` of the known limitations that apply to this session."""
    engine = get_engine(name)
    specs = engine.settings_for(engine.version_of(res.config))
    found = engine.explainer.limitations(session, replay, res.config, res.warnings)
    return [(lim.id, plain(lim.text, specs, [lim.id])) for lim in found]


# --------------------------------------------------------------------------- advice


def _labels_key(labels: Sequence[str | None]) -> str:
    return "".join({"loop": "l", "ok": "o"}.get(x or "", "-") for x in labels)


@st.cache_resource(max_entries=256, show_spinner=False)
def _cached_advice(fingerprint: str, engine: str, config_text: str, index: int,
                   label: str | None, from_turn: int | None, labels_text: str, _corpus: Any,
                   _config: Any, _labels: tuple[str | None, ...]) -> SessionAdvice:
    """Advice for one session, cached per corpus × configuration × session × label × labels:
    the search re-runs the session, and each change found re-runs the corpus (cached too, by
    configuration, in :func:`loopscope.ui.state.replays_for`)."""
    del config_text, labels_text  # cache keys only
    eng = get_engine(engine)
    prepared = state.prepared_version(_corpus, engine, eng.version_of(_config))

    def first_refusals(config: Any) -> list[Any]:
        return state.first_refusals(state._cached_replays(
            fingerprint, engine, state.config_key(config), _corpus, config))

    return session_advice(eng, prepared[index], _config, label=label, from_turn=from_turn,
                          index=index, before=first_refusals(_config),
                          first_refusals=first_refusals, labels=list(_labels))


def advice_for(name: str, index: int, config: Any, label: str | None,
               from_turn: int | None) -> SessionAdvice:
    """The session's advice under ``name`` (:func:`loopscope.advice.session_advice`), as the
    CLI and the HTML report give it."""
    corpus = state.corpus()
    labels = tuple(page_helpers.session_labels(corpus))
    return _cached_advice(corpus.fingerprint, name, state.config_key(config), index, label,
                          from_turn, _labels_key(labels), corpus, config, labels)


def _names(positions: Sequence[int], limit: int = 3) -> str:
    corpus = state.corpus()
    shown = [corpus.session_names[i] for i in positions[:limit]]
    more = len(positions) - limit
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _apply(name: str, a: AdvisedChange, confirm_key: str | None = None) -> None:
    """Set a change for every session (a button callback) and remember how to undo it."""
    if confirm_key is not None:
        st.session_state.pop(confirm_key, None)
    values = state.control_values(name, a.change.values)
    previous = {k: state.widget_value(state.fields_by_key()[k]) for k in values
                if k in state.fields_by_key()}
    corpus = state.corpus()
    st.session_state[APPLIED_KEY] = {
        "description": a.change.description,
        "engine": name,
        "previous": previous,
        "summary": a.effect.summary(),
        "sessions": [corpus.sources[i] for i in a.effect.sessions],
        "fresh": True,
    }
    state.apply_settings(values)
    st.session_state[FULL_RERUN_KEY] = True


def _ask(confirm_key: str) -> None:
    """A costly change's Apply: ask first (the question is drawn under the change)."""
    st.session_state[confirm_key] = True


def _cancel(confirm_key: str) -> None:
    st.session_state.pop(confirm_key, None)


def _undo() -> None:
    record = st.session_state.pop(APPLIED_KEY, None)
    if record:
        state.apply_settings(record["previous"])


def _dismiss() -> None:
    st.session_state.pop(APPLIED_KEY, None)


def rerun_if_settings_changed() -> None:
    """A change applied from a fragment must redraw the sidebar too: rerun the whole app."""
    if st.session_state.pop(FULL_RERUN_KEY, False):
        st.rerun(scope="app")


def render_applied() -> None:
    """What the last "Apply" changed across the loaded sessions, with Undo (every page)."""
    record = st.session_state.get(APPLIED_KEY)
    if not record:
        return
    title = state.engine_titles().get(record["engine"], record["engine"])
    if record.pop("fresh", False):  # seen wherever the page is scrolled to
        st.toast(f"Applied: {md(record['description'], 200)}. {record['summary']}. Undo is at "
                 "the top of the page.", icon=":material/check_circle:", duration="long")
    with st.container(border=True, key="applied"):
        st.markdown(f":material/check_circle: **Applied for every session:** "
                    f"{md(record['description'], 300)} ({md(title)}). Across the "
                    f"{len(state.corpus().sessions):,} loaded sessions: {record['summary']}.")
        c1, c2, _ = st.columns([1, 1, 4])
        c1.button("Undo", key="applied.undo", on_click=_undo, icon=":material/undo:",
                  help="Put the settings back as they were before this change.")
        c2.button("Keep it", key="applied.keep", on_click=_dismiss, icon=":material/done:")


_BADGES = {
    "smallest harmless change": ("green", "thumb_up"),
    "goes against a label": ("orange", "warning"),
    "refuses it before the loop began": ("orange", "schedule"),
}


def _badge(mark: str) -> str:
    color, icon = _BADGES.get(mark, ("red", "power_settings_new") if mark.startswith(
        "last resort") else ("gray", "science"))
    return f":{color}-badge[:material/{icon}: {md(mark)}]"


def _render_change(name: str, a: AdvisedChange, w: ChangeWords, key: str,
                   recommended: bool) -> None:
    """One change in :func:`loopscope.advice.advice_words`' words (the CLI prints the same
    sentence), and its Apply: one click for a cheap change; a costly one (it switches part of
    the guard off, gets a labelled session wrong, or newly refuses many) asks first, naming
    its cost."""
    marks = "".join(f" {_badge(m)}" for m in w.marks)
    notes = "".join(f" *{md(n, 200)}*" for n in a.change.notes)
    confirm_key = f"{key}.confirm"
    with st.container(border=False, gap="small"):
        st.markdown(f"**{md(w.change, 300)}** ({md_code(w.typed, 300)}){marks}: "
                    f"{md(w.effect, 600)}.{notes}")
        wrong = [*a.others.loops_no_longer_caught, *a.others.good_newly_refused]
        help_text = ("Set this in the sidebar, for every loaded session. What it changed is "
                     "shown at the top of the page, with Undo.")
        if wrong:
            help_text += " Sessions it gets wrong: " + _names(wrong) + "."
        if w.confirm is None:
            st.button("Apply for every session", key=key, on_click=_apply, args=(name, a),
                      icon=":material/done:", type="primary" if recommended else "secondary",
                      help=help_text)
        elif not st.session_state.get(confirm_key):
            st.button("Apply for every session…", key=key, on_click=_ask, args=(confirm_key,),
                      icon=":material/done:", type="secondary",
                      help=help_text + " It asks first: this change has a cost.")
        else:
            with st.container(key=f"{key}_confirm"):
                st.warning(md(w.confirm, 600), icon=":material/warning:")
                c1, c2, _ = st.columns([1.3, 1, 2])
                c1.button("Yes, apply it", key=f"{key}_yes", on_click=_apply,
                          args=(name, a, confirm_key), icon=":material/done:", type="primary")
                c2.button("Cancel", key=f"{key}_cancel", on_click=_cancel,
                          args=(confirm_key,), icon=":material/close:")


def _render_advice(name: str, sa: SessionAdvice, specs: Sequence[Any], key: str) -> None:
    """The session's advice under one guard, in the words every surface uses."""
    words = advice_words(sa, specs)
    if words is None:
        return
    with st.container(key=f"advice-{name}"):
        st.markdown(f"**{md(words.heading)}** {md(words.summary)}")
        if sa.advice is None or not words.changes:
            return
        pairs = list(zip(sa.advice.changes, words.changes, strict=True))
        for i, (a, w) in enumerate(pairs[:SHOWN_CHANGES]):
            _render_change(name, a, w, f"{key}_{i}", a is sa.advice.recommended)
        rest = pairs[SHOWN_CHANGES:]
        if rest:
            more = plural(len(rest), 'more change')
            with st.expander(more):
                for i, (a, w) in enumerate(rest, start=SHOWN_CHANGES):
                    _render_change(name, a, w, f"{key}_{i}", False)


# --------------------------------------------------------------------------- the why block


def _title(name: str, config: Any) -> str:
    engine = get_engine(name)
    if len(engine.versions) > 1:
        return f"{engine.title} {engine.version_of(config)}"
    return engine.title


def _first_refusal(replay: SessionReplay) -> Step | None:
    if replay.first_refusal is None:
        return None
    return next((s for s in replay.steps if s.verdict == "refuse"), None)


def consequence(name: str, step: Step, replay: SessionReplay, config: Any) -> str:
    """Whether ``step``'s refusal stops the agent, in the sidebar's words (the engine's own
    sentence, or the contract's honest default)."""
    engine = get_engine(name)
    e = explanation(name, step, replay, config)
    return e.consequence or default_consequence(engine.title)


def render_engine_why(name: str, session: Session, index: int, replay: SessionReplay,
                      res: ConfigResolution[Any], label: str | None,
                      from_turn: int | None) -> None:
    """One guard's answer: verdict, whether it stops the agent, the label's meaning, advice."""
    engine = get_engine(name)
    config = res.config
    title = _title(name, config)
    tools = _tools(session)
    key = f"x_{name}"
    st.markdown(f"#### {md(title)}")
    first = _first_refusal(replay)
    if first is not None:
        e = explanation(name, first, replay, config)
        st.error(f"**{md(engine.title)} would have refused this session at "
                 f"{where(replay.first_refusal)}.** {to_markdown(e.headline, tools)}",
                 icon=":material/block:")
        stops = e.consequence or default_consequence(engine.title)
        st.markdown(f":material/pan_tool: {to_markdown(stops, tools)}")
    else:
        warns = replay.warning_count
        if warns:
            times = "once" if warns == 1 else f"{warns:,} times"
            st.warning(f"**{md(engine.title)} would never have refused this session**; it would "
                       f"have warned {times}.", icon=":material/warning:")
        else:
            st.success(f"**{md(engine.title)} would never have refused or warned about this "
                       "session.**", icon=":material/check:")
        e = None
    meaning = label_meaning(label, first.turn if first is not None else None, from_turn,
                            engine.title)
    bad = (label == "ok" and first is not None) or (label == "loop" and (
        first is None or (from_turn is not None and first.turn < from_turn)))
    st.markdown((":material/report: " if bad else ":material/label: ") + md(meaning))
    for note in engine.notes:
        st.caption(md(note))

    # The advice, as the label decides (the CLI and the HTML report say the same).
    specs = engine.settings_for(engine.version_of(config))
    _render_advice(name, advice_for(name, index, config, label, from_turn), specs, key)
    if e is not None and (e.facts or e.limit or e.action or e.limitations or e.upstream):
        with st.expander("More about this refusal"):
            if e.action:
                st.markdown(f"- **What {md(engine.title)} would have done:** "
                            f"{to_markdown(e.action, tools)}")
            for fact in (*e.facts, *([e.limit] if e.limit else []), *e.limitations):
                st.markdown(f"- {to_markdown(fact, tools)}")
            for utitle, text in e.upstream:
                st.caption(f"{md(utitle)} (the guard's own words):")
                st.code(text, language=None, wrap_lines=True)


def render_why(session: Session, index: int, engines: Sequence[str],
               replays: Mapping[str, SessionReplay], configs: Mapping[str, Any],
               label: str | None, from_turn: int | None) -> None:
    """The ``why`` container: every guard's answer, two per row."""
    with st.container(key="why"):
        st.subheader("Why did it stop?", anchor=False)
        names = list(engines)
        for row in range(0, len(names), 2):
            cols = st.columns(2) if len(names) > 1 else [st.container()]
            for col, name in zip(cols, names[row:row + 2], strict=False):
                with col, st.container(border=True):
                    try:
                        render_engine_why(name, session, index, replays[name], configs[name],
                                          label, from_turn)
                    except Exception as exc:  # an explanation bug must not hide the verdicts
                        st.warning(f"The explanation could not be built "
                                   f"({md(type(exc).__name__)}: {md(str(exc), 200)}). The "
                                   "verdicts below are unaffected.", icon=":material/warning:")


# --------------------------------------------------------------------------- details


def render_details(session: Session, engines: Sequence[str],
                   replays: Mapping[str, SessionReplay], configs: Mapping[str, Any]) -> None:
    """Every refusal and warning, and the known limitations, per guard (below the charts)."""
    tools = _tools(session)
    for name in engines:
        replay, res = replays[name], configs[name]
        flagged = [s for s in replay.steps if s.verdict != "pass"]
        try:
            found = limitations(name, session, replay, res)
        except Exception:
            found = []
        if not flagged and not found:
            continue
        title = _title(name, res.config)
        verdicts = plural(len(flagged), "refusal or warning", "refusals and warnings")
        with st.expander(f"{md(title)}: {verdicts}, "
                         f"{plural(len(found), 'known limitation')}"):
            for s in flagged[:MAX_LISTED]:
                e = explanation(name, s, replay, res.config)
                at = where(_first(s))
                st.markdown(f"**{at} — {page_helpers.verdict_word(s)}:** "
                            f"{to_markdown(e.headline, tools)}")
            if len(flagged) > MAX_LISTED:
                st.caption(f"… and {len(flagged) - MAX_LISTED} more (the Export page's verdict "
                           "report has all of them).")
            if found:
                st.markdown("**Known limitations that apply here**")
                for _lid, text in found:
                    st.markdown(f"- {to_markdown(text, tools)}")


def _first(step: Step) -> Any:
    from loopscope.engines import FirstRefusal

    return FirstRefusal(step.turn, step.call, step.detector or "")
