"""Upgrade impact: the same sessions under the team's current release and settings of a guard
(A, the sidebar) and under another release of the same guard (B), with the same settings
wherever B has them. Which sessions become refused, stop being refused, or are refused earlier
or later — with the labels where there are any — and one paragraph for a release note."""

from __future__ import annotations

from typing import Any

import streamlit as st

from loopscope.engines import ConfigError, FirstRefusal, get_engine
from loopscope.experiments.upgrade import (
    UpgradeImpact,
    release_note,
    settings_move,
    upgrade_impact,
)
from loopscope.ui import layout, page_helpers, state
from loopscope.ui.plain_words import md, where
from loopscope.words import plural

ENGINE_KEY = "upgrade.engine"
B_KEY = "upgrade.b"
CLASSES: tuple[tuple[str, str], ...] = (
    ("newly_refused", "newly refused"),
    ("no_longer_refused", "no longer refused"),
    ("earlier", "refused earlier"),
    ("later", "refused later"),
    ("other_detector", "same point, another reason"),
)


def carried_values(engine: str, values: dict[str, Any], version_b: str
                   ) -> tuple[dict[str, Any], list[str], list[str]]:
    """A's setting values that B reads too (by name); A's settings B does not read (it
    ignores them), and B's own settings A does not have (at B's defaults), in words with the
    guard's names (two releases may give different settings the same label)."""
    eng = get_engine(engine)
    a_specs = {s.name: s for s in eng.settings_for(state.current_version(engine))}
    b_specs = {s.name: s for s in eng.settings_for(version_b)}
    kept = {k: v for k, v in values.items() if k in b_specs}
    ignored = [f"“{a_specs[k].label}” ({k})" for k in values if k not in b_specs and k in a_specs]
    own = [f"“{s.label}” ({k}) = {s.format(s.default)}"
           + ("" if s.deployable else ", fixed in the guard")
           for k, s in b_specs.items() if k not in a_specs]
    return kept, ignored, own


def _labels() -> list[str | None]:
    return page_helpers.session_labels(state.corpus())


def _change_of(impact: UpgradeImpact, i: int) -> str:
    for field, text in CLASSES:
        if i in getattr(impact, field):
            return text
    return ""


def render() -> None:
    if page_helpers.page_corpus("Upgrade impact") is None:
        return
    engines = [e for e in state.shown_engines() if len(get_engine(e).versions) > 1]
    if not engines:
        st.info("None of the guards shown has more than one release to compare.")
        return
    st.caption("A is the release and settings in the sidebar, as the team runs them today. B is "
               "another release of the same guard, with the same settings wherever B has them. "
               "Every loaded session is replayed under both.")
    c1, c2 = st.columns([1, 1])
    with c1:
        engine = page_helpers.guard_choice(engines, ENGINE_KEY, required=True)
    eng = get_engine(engine)
    for note in eng.notes:
        st.caption(md(note, 400))
    version_a = state.current_version(engine)
    others = [v for v in eng.versions if v != version_a]
    with c2:
        if st.session_state.get(B_KEY) not in others:
            st.session_state.pop(B_KEY, None)
        version_b = st.selectbox(
            f"Compare {version_a} (A) with", others, index=len(others) - 1, key=B_KEY,
            bind="query-params",
            help="The release to move to. The newest is chosen first.") or others[-1]

    res_a = state.resolve(engine)
    values = state.setting_values(engine)
    kept, dropped, added = carried_values(engine, values, version_b)
    try:
        res_b = eng.config(kept, version_b)
    except ConfigError as exc:
        st.warning(f"The current settings do not fit {md(version_b)} ({md(str(exc), 200)}); B "
                   "uses its defaults.", icon=":material/warning:")
        res_b = eng.config({}, version_b)
    if dropped or added:
        if not dropped:
            applies = f"all still apply in {version_b}, which has settings of its own"
        elif kept:
            applies = (f"only {', '.join(kept)} still "
                       f"{'applies' if len(kept) == 1 else 'apply'} in {version_b}")
        else:
            applies = f"none applies in {version_b}"
        with st.expander(f"Settings: of the {plural(len(values), 'setting')} of "
                         f"{md(version_a)}, {md(applies)}", icon=":material/tune:"):
            if dropped:
                st.markdown(f"**Ignored by {md(version_b)}:** "
                            + ", ".join(md(x) for x in dropped) + ".")
            if added:
                st.markdown(f"**{md(version_b)}'s own**, at its defaults: "
                            + ", ".join(md(x) for x in added) + ".")
    for w in res_b.warnings:
        st.caption(f"B: {md(w, 300)}")

    replays_a = state.replays_for(engine, res_a.config)
    replays_b = state.replays_for(engine, res_b.config)
    labels = _labels()
    firsts_a = state.first_refusals(replays_a)
    firsts_b = state.first_refusals(replays_b)
    impact = upgrade_impact(firsts_a, firsts_b, labels)
    move = settings_move(eng.settings_for(version_a), values, eng.settings_for(version_b),
                         eng.values(res_b.config))
    text = release_note(impact, eng.title, version_a, version_b, move)

    with st.container(key="upgrade_summary", border=True):
        st.markdown("**For the release note** (the copy button is at the top right of the box):")
        st.code(text, language=None, wrap_lines=True)
    cols = st.columns(len(CLASSES))
    for col, (field, title) in zip(cols, CLASSES, strict=True):
        col.metric(title.capitalize(), f"{len(getattr(impact, field)):,}")
    if any(labels):
        l1, l2, l3, l4 = st.columns(4)
        l1.metric("Loops newly caught", f"{len(impact.loops_newly_caught):,}")
        l2.metric("Loops now missed", f"{len(impact.loops_no_longer_caught):,}")
        l3.metric("Good sessions newly refused", f"{len(impact.good_newly_refused):,}")
        l4.metric("Good sessions freed", f"{len(impact.good_no_longer_refused):,}")
    else:
        st.caption("No session is labelled: label sessions to see which changes are right.")

    st.subheader("Sessions that change", anchor=False)
    if not impact.changed:
        st.success(f"Every session is refused, or let through, at the same point under "
                   f"{md(version_a)} and {md(version_b)}.", icon=":material/check:")
        return
    _table(impact, firsts_a, firsts_b, labels, (version_a, version_b))
    st.button(f"Use {version_b} in the sidebar", key="upgrade.use_b",
              on_click=state.apply_settings, args=({state.version_key(engine): version_b},),
              icon=":material/upgrade:",
              help="Make B the release every page replays (its settings keep their values "
              "where they exist).")


def _table(impact: UpgradeImpact, a: list[FirstRefusal | None], b: list[FirstRefusal | None],
           labels: list[str | None], versions: tuple[str, str]) -> None:
    """The sessions that change, as a table whose cells wrap (every name and word read whole
    at 1000 px, where a data grid cut them and hid the label column behind a sideways
    scroll), and a box that opens one of them."""
    corpus = state.corpus()
    rows = list(impact.changed)
    version_a, version_b = versions
    layout.wrapped_table([{
        "session": corpus.session_names[i],
        "what changes": _change_of(impact, i),
        f"under {version_a} (A)": where(a[i]) or "not refused",
        f"under {version_b} (B)": where(b[i]) or "not refused",
        "label": {"loop": "real loop", "ok": "good work"}.get(labels[i] or "", ""),
    } for i in rows], key="upgrade_table", empty="")
    names = {corpus.session_names[i]: corpus.sources[i] for i in rows}
    st.selectbox("Open one of these sessions", list(names), index=None, key=OPEN_KEY,
                 placeholder="Choose a session", on_change=_open_chosen, args=(names,),
                 help="Its page opens under A, the sidebar's release.")


OPEN_KEY = "upgrade.open"


def _open_chosen(names: dict[str, str]) -> None:
    chosen = st.session_state.pop(OPEN_KEY, None)
    if chosen in names:
        page_helpers.open_session(names[chosen])


if __name__ == "__main__":  # run as a Streamlit page
    render()
