"""What the current settings change, against a baseline: the overview's ``delta`` container.

The baseline is the shipped defaults (every guard at its default version and default
settings), or a configuration the user pins ("Pin these settings"). A pinned baseline lives in
the session and in the URL (``?baseline=…``, the control values that differ from the
defaults, as JSON), so a shared link shows the same comparison.

For every guard shown, the container says how many sessions are newly refused, no longer
refused, refused at another point, and — where sessions are labelled — which real loops are
now missed or newly caught and which good sessions are newly refused. Each count is a pill
that shows just those sessions in the overview (``?only=<guard>:<what>``).

Each configuration's replays come from :func:`loopscope.ui.state.replays_for`, cached by
configuration: the baseline is replayed once, not on every slider move; the comparison itself
is cached by (corpus, guard, both configurations, labels).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import streamlit as st

from loopscope.advice import (
    CorpusEffect,
    corpus_effect_of_runs,
    effect_text,
    refusal_totals,
    totals_text,
)
from loopscope.engines import get_engine
from loopscope.ui import page_helpers, state
from loopscope.ui.plain_words import md

BASELINE_KEY = "_loopscope_baseline"
"""Session state: the pinned baseline's control values (widget key → value), or absent."""
BASELINE_PARAM = "baseline"
SEEN_PARAM_KEY = "_loopscope_baseline_seen"
ONLY_KEY = "only"
"""The pills (and URL key) that narrow the overview to one group of changed sessions."""

KINDS: tuple[tuple[str, str, str], ...] = (
    # (CorpusEffect field, one, many). A labelled group follows the group it is part of: its
    # pill narrows to those of its sessions (the box itself counts every session once).
    ("newly_refused", "newly refused", "newly refused"),
    ("loops_newly_caught", "labelled loop now caught", "labelled loops now caught"),
    ("good_newly_refused", "labelled good session now falsely refused",
     "labelled good sessions now falsely refused"),
    ("no_longer_refused", "no longer refused", "no longer refused"),
    ("loops_no_longer_caught", "labelled loop now missed", "labelled loops now missed"),
    ("moved", "refused at another point", "refused at another point"),
)
TOTALS_KEY = "totals"
"""``CorpusEffect.extra`` key: the (before, after) :class:`~loopscope.advice.RefusalTotals`."""


# --------------------------------------------------------------------------- the baseline


def _sync_from_url() -> None:
    """A ``?baseline=`` in the URL (a shared link) pins that baseline, once per value."""
    text = st.query_params.get(BASELINE_PARAM)
    if text is None or text == st.session_state.get(SEEN_PARAM_KEY):
        return
    st.session_state[SEEN_PARAM_KEY] = text
    try:
        values = json.loads(text)
    except ValueError:
        return
    if isinstance(values, dict):
        known = {**state.fields_by_key(), **{state.version_key(e): None for e in state.engines()}}
        st.session_state[BASELINE_KEY] = {k: v for k, v in values.items() if k in known}


def pinned() -> dict[str, Any] | None:
    """The pinned baseline's control values (only those that differ from the defaults)."""
    _sync_from_url()
    value = st.session_state.get(BASELINE_KEY)
    return dict(value) if isinstance(value, dict) else None


def _write_url(values: Mapping[str, Any] | None) -> None:
    if values is None:
        if BASELINE_PARAM in st.query_params:
            del st.query_params[BASELINE_PARAM]
        st.session_state.pop(SEEN_PARAM_KEY, None)
        return
    text = json.dumps(dict(values), separators=(",", ":"), sort_keys=True)
    st.session_state[SEEN_PARAM_KEY] = text
    st.query_params[BASELINE_PARAM] = text


def pin_current() -> None:
    """Make the current settings the baseline (a button callback)."""
    defaults = state.default_values()
    values = {k: v for k, v in state.current_values().items() if defaults.get(k) != v}
    st.session_state[BASELINE_KEY] = values
    st.session_state.pop(ONLY_KEY, None)
    _write_url(values)


def unpin() -> None:
    st.session_state.pop(BASELINE_KEY, None)
    st.session_state.pop(ONLY_KEY, None)
    _write_url(None)


def baseline_config(engine: str) -> Any:
    """``engine``'s configuration in the baseline."""
    values = pinned()
    if values is None:
        eng = get_engine(engine)
        return eng.default_config(eng.default_version)
    merged = {**state.default_values(), **values}
    version = merged.get(state.version_key(engine)) or get_engine(engine).default_version
    return state.resolve(engine, merged, version).config


def describe_baseline() -> str:
    """"the shipped defaults", or the pinned settings in the sidebar's words."""
    values = pinned()
    if values is None:
        return "the shipped defaults"
    if not values:
        return "your pinned baseline (the shipped defaults)"
    fields = state.fields_by_key()
    parts = []
    for key, value in values.items():
        f = fields.get(key)
        if f is not None:
            parts.append(f"{state.engine_titles()[f.engine]}: “{f.label}” = {md(str(value), 40)}")
        elif key.endswith(".version"):
            engine = key.rpartition(".")[0]
            parts.append(f"{state.engine_titles().get(engine, engine)} {md(str(value), 40)}")
    return "your pinned baseline (" + "; ".join(parts) + ")"


# --------------------------------------------------------------------------- the comparison


@st.cache_resource(max_entries=32, show_spinner=False)
def _cached_effect(fingerprint: str, engine: str, base_key: str, current_key: str,
                   labels_key: str, _corpus: Any, _base: Any, _current: Any,
                   _labels: tuple[str | None, ...]) -> CorpusEffect:
    del base_key, current_key, labels_key  # cache keys only
    before = state._cached_replays(fingerprint, engine, state.config_key(_base), _corpus, _base)
    after = state._cached_replays(fingerprint, engine, state.config_key(_current), _corpus,
                                  _current)
    effect = corpus_effect_of_runs(before, after, _labels)  # (batch runs: from their columns)
    totals = (refusal_totals(before, _labels), refusal_totals(after, _labels))
    return replace(effect, extra={**effect.extra, TOTALS_KEY: totals})


def effects(engines: Sequence[str]) -> dict[str, CorpusEffect]:
    """Per guard: what the current settings change against the baseline."""
    corpus = state.corpus()
    labels = tuple(page_helpers.session_labels(corpus))
    labels_key = "".join({"loop": "l", "ok": "o"}.get(x or "", "-") for x in labels) if any(
        labels) else ""  # (no label at all, the usual case: no text per session to write)
    out = {}
    for engine in engines:
        base, current = baseline_config(engine), state.resolve(engine).config
        out[engine] = _cached_effect(corpus.fingerprint, engine, state.config_key(base),
                                     state.config_key(current), labels_key, corpus, base,
                                     current, labels)
    return out


def _count(kind: str, n: int) -> str:
    one, many = next((o, m) for k, o, m in KINDS if k == kind)
    return f"{n:,} {one if n == 1 else many}"


def options(found: Mapping[str, CorpusEffect]) -> dict[str, str]:
    """Pill value (``<guard>:<kind>``) → its text, for every non-empty group."""
    multi = len(found) > 1
    out = {}
    for engine, effect in found.items():
        for kind, _, _ in KINDS:
            n = len(getattr(effect, kind))
            if n:
                prefix = f"{state.engine_titles()[engine]}: " if multi else ""
                out[f"{engine}:{kind}"] = prefix + _count(kind, n)
    return out


def narrowing() -> bool:
    """Whether a pill is chosen (the overview may be narrowed to one of its groups): only
    then does the overview need :func:`effects` before its timeline."""
    value = st.session_state.get(ONLY_KEY)
    return isinstance(value, str) and ":" in value


def selected(found: Mapping[str, CorpusEffect]) -> tuple[str, str, tuple[int, ...]] | None:
    """The group the overview is narrowed to: (guard, kind, session positions)."""
    value = st.session_state.get(ONLY_KEY)
    if not isinstance(value, str) or ":" not in value:
        return None
    engine, _, kind = value.partition(":")
    effect = found.get(engine)
    if effect is None or kind not in {k for k, _, _ in KINDS}:
        return None
    positions = tuple(getattr(effect, kind))
    return (engine, kind, positions) if positions else None


def lines(found: Mapping[str, CorpusEffect]) -> list[str]:
    """The box's Markdown lines, one per guard: what changes, each session counted once, then
    the totals before and after with their differences."""
    out = []
    for engine, effect in found.items():
        title = md(state.engine_titles()[engine])
        if not effect.changed:
            out.append(f"**{title}:** no change")
            continue
        out.append(f"**{title}:** {md(effect_text(effect))}")
        totals = effect.extra.get(TOTALS_KEY)
        if totals is not None:
            out.append(f"{title} totals: {md(totals_text(*totals))}")
    return out


def render(found: Mapping[str, CorpusEffect]) -> None:
    """The ``delta`` container of the :func:`effects` ``found``."""
    with st.container(key="delta", border=True):
        head, pin, reset = st.columns([3, 1.5, 1.5], vertical_alignment="center")
        head.markdown(f"**What these settings change**, against {describe_baseline()}:")
        pin.button("Pin as baseline", key="delta.pin", on_click=pin_current,
                   icon=":material/push_pin:", width="stretch",
                   help="Compare every later change with the current settings (the link keeps "
                   "the baseline).")
        reset.button("Defaults as baseline", key="delta.unpin", on_click=unpin,
                     icon=":material/restart_alt:", width="stretch",
                     disabled=pinned() is None,
                     help="Compare with the guards' shipped defaults again.")
        opts = options(found)
        if not opts:
            same = ("These are the shipped defaults" if pinned() is None
                    else "Nothing changes against the pinned baseline")
            st.markdown(f"{same}: move a setting in the sidebar and this box says which "
                        "sessions it changes.")
            st.session_state.pop(ONLY_KEY, None)
            return
        st.markdown("  \n".join(lines(found)))
        if st.session_state.get(ONLY_KEY) not in opts:
            st.session_state.pop(ONLY_KEY, None)
        st.pills("Show only these sessions", options=list(opts), format_func=opts.__getitem__,
                 key=ONLY_KEY, bind="query-params",
                 help="Narrow the timeline and the table below to one group; click again to "
                 "show every session.")
