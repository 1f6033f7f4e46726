"""Advice that tells the truth: the smallest setting change that alters a verdict, found by
re-running the session, for any engine.

The search knows nothing about any engine's rules: it walks each setting of the engine's
schema outward from its current value (nearest first, both directions, within the setting's
bounds), flips each switch, and tries the multi-setting candidates the engine's explainer
suggests — re-running the prepared session for each candidate and keeping those that reach the
goal. Each change reports what it does to this session (never refused, or refused later at
call N), and :func:`corpus_effect` what it does to every other loaded session.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from loopscope.engines import ConfigError, FirstRefusal, SessionReplay, SettingSpec, Step
from loopscope.engines.contract import Engine
from loopscope.words import plural

__all__ = [
    "Advice",
    "AdviceWords",
    "AdvisedChange",
    "ChangeWords",
    "CorpusEffect",
    "RefusalTotals",
    "SessionAdvice",
    "SettingChange",
    "Situation",
    "advice_words",
    "advise",
    "confirmation_words",
    "corpus_effect",
    "corpus_effect_of_runs",
    "describe_outcome",
    "effect_text",
    "missed_loop_step",
    "others_words",
    "refusal_totals",
    "session_advice",
    "situation_of",
    "smallest_changes",
    "switched_off",
    "totals_text",
]

Goal = Literal["pass", "refuse", "clear"]
"""``pass``: the target step is no longer refused (a warned one passes silently); ``refuse``:
the target step is refused (a missed loop caught); ``clear``: the session is never refused."""

CONFIRM_SHARE = 0.1
"""A change that newly refuses more than this share of the loaded sessions asks before it is
applied, even when no label objects."""

MAX_RUNS_PER_SETTING = 400
"""A bound on re-runs per setting (a setting whose whole range is this wide is searched only
this far from its current value)."""


@dataclass(frozen=True, slots=True)
class SettingChange:
    """A configuration that reaches the goal, verified by a re-run of the session."""

    changes: tuple[tuple[str, Any, Any], ...]
    """``(setting, from, to)`` for every setting changed."""
    values: Mapping[str, Any]
    """Every setting's value after the change (feed to ``engine.config``)."""
    config: Any
    first_refusal: FirstRefusal | None
    """The session's first refusal after the change."""
    effect: str
    """What the change does to this session, in plain words."""
    description: str
    """The change in plain words ("raise Repeats allowed for tools that change things from 2
    to 3")."""
    notes: tuple[str, ...] = ()
    """The engine's notes on the new configuration (clamps, hypothetical values)."""
    deployable: bool = True
    """False when a changed setting cannot be set in the real guard (a what-if)."""

    @property
    def setting(self) -> str:
        return self.changes[0][0]

    @property
    def from_value(self) -> Any:
        return self.changes[0][1]

    @property
    def to_value(self) -> Any:
        return self.changes[0][2]

    def set_args(self, specs: Sequence[SettingSpec]) -> list[str]:
        """``KEY=VALUE`` for ``--set``."""
        by_name = {s.name: s for s in specs}
        return [f"{name}={by_name[name].format(to)}" for name, _, to in self.changes]


def describe_outcome(first: FirstRefusal | None, before: FirstRefusal | None = None) -> str:
    """What a configuration does to a session, relative to its first refusal ``before``."""
    if first is None:
        return "the session is never refused"
    where = _where(first)
    if before is None:
        return f"the session is first refused at {where}"
    if (first.turn, first.call) == (before.turn, before.call):
        return f"the session is still first refused at {where}"
    # Turns order steps across engines (a turn's calls follow it); the call breaks ties.
    later = (first.turn, -1 if first.call is None else first.call) > (
        before.turn, -1 if before.call is None else before.call)
    return f"the session is first refused {'later' if later else 'earlier'}, at {where}"


def _where(first: FirstRefusal) -> str:
    if first.call is not None:
        return f"call {first.call + 1} (turn {first.turn + 1})"
    return f"turn {first.turn + 1}"


def _word(spec: SettingSpec, value: Any) -> str:
    if spec.kind == "bool":
        return "on" if value else "off"
    if value is None:
        return "off"
    if spec.kind == "str_list":
        return ", ".join(value) or "(none)"
    return str(value)


def _describe(changes: Sequence[tuple[str, Any, Any]], specs: Mapping[str, SettingSpec]) -> str:
    parts = []
    for name, before, after in changes:
        spec = specs[name]
        if spec.kind == "bool":
            parts.append(f"turn {'on' if after else 'off'} “{spec.label}”")
        elif spec.kind == "str_list":
            added = [v for v in after if v not in before]
            removed = [v for v in before if v not in after]
            bits = []
            if added:
                bits.append("add " + ", ".join(added))
            if removed:
                bits.append("remove " + ", ".join(removed))
            parts.append(f"{' and '.join(bits) or 'change'} in “{spec.label}”")
        elif after is None:
            parts.append(f"switch “{spec.label}” off")
        elif before is None:
            parts.append(f"switch “{spec.label}” on at {after}")
        else:
            verb = "raise" if after > before else "lower"
            parts.append(f"{verb} “{spec.label}” from {before} to {after}")
    return " and ".join(parts)


def _int_candidates(spec: SettingSpec, current: int) -> Iterator[int]:
    """Values nearest to ``current`` first, alternating up and down, within the bounds."""
    lo, hi = spec.range
    lo = spec.min if spec.min is not None else min(lo, current)
    hi = max(hi, current) * 2
    if spec.max is not None:
        hi = min(hi, spec.max)
    for d in range(1, MAX_RUNS_PER_SETTING):
        up, down = current + d, current - d
        if up > hi and down < lo:
            return
        if up <= hi:
            yield up
        if down >= lo:
            yield down


def _candidates(spec: SettingSpec, current: Any) -> Iterator[Any]:
    if spec.kind == "bool":
        yield not current
    elif spec.kind == "int":
        yield from _int_candidates(spec, int(current))
    elif spec.kind == "int_or_off":
        if current is None:
            yield from _int_candidates(spec, spec.range[1])
        else:
            yield from _int_candidates(spec, int(current))
            yield None


def _verdict_at(replay: SessionReplay, target: Step) -> str:
    """The verdict of the step at ``target``'s turn and call (read from the markers, so no
    step is built)."""
    for m in replay.markers:
        if m.turn == target.turn and m.call == target.call:
            return m.verdict
    return "pass"


def smallest_changes(
    engine: Engine[Any, Any],
    prepared: Any,
    config: Any,
    target: Step | None = None,
    goal: Goal = "pass",
    *,
    include_what_ifs: bool = False,
    limit: int = 6,
) -> list[SettingChange]:
    """The smallest verified changes under which ``target`` reaches ``goal``.

    ``goal="pass"``: a refused ``target`` (default: the first refusal) is no longer refused, a
    warned one passes silently. ``goal="clear"``: the whole session is never refused (a refusal
    that only moves later does not count). ``goal="refuse"``: ``target`` (required) is refused
    — to catch a loop that was missed. One change per setting (the nearest value that works),
    then the engine's multi-setting candidates; changes of real settings first, fewest
    settings, nearest values.
    """
    version = engine.version_of(config)
    specs = {s.name: s for s in engine.settings_for(version)}
    values = dict(engine.values(config))
    replay = engine.run(prepared, config)
    if target is None:
        if goal == "refuse":
            raise ValueError("a target step is needed to catch a missed loop")
        target = next((s for s in replay.steps if s.verdict == "refuse"), None)
        if target is None:
            return []
    if goal == "clear" and replay.first_refusal is None:
        return []
    if goal == "pass" and target.verdict == "pass":
        return []
    if goal == "refuse" and target.verdict == "refuse":
        return []
    wanted_pass = target.verdict == "refuse"

    def reached(rerun: SessionReplay) -> bool:
        if goal == "clear":
            return rerun.first_refusal is None
        verdict = _verdict_at(rerun, target)
        if goal == "refuse":
            return verdict == "refuse"
        return verdict != "refuse" if wanted_pass else verdict == "pass"

    tried: dict[tuple[Any, ...], tuple[bool, Any, SessionReplay | None, tuple[str, ...]]] = {}

    def attempt(candidate: Mapping[str, Any]) -> tuple[bool, Any, SessionReplay | None,
                                                        tuple[str, ...]]:
        key = tuple(sorted((k, _hashable(v)) for k, v in candidate.items()))
        if key not in tried:
            res = _resolved(engine, version, key, candidate)
            if res is None:
                tried[key] = (False, None, None, ())
            else:
                rerun = engine.run(prepared, res.config)
                tried[key] = (reached(rerun), res.config, rerun, res.warnings)
        return tried[key]

    explanation = engine.explainer.explain_step(target, replay, config)
    order = [n for n in explanation.levers if n in specs]
    order += [n for n in specs if n not in order]
    found: list[SettingChange] = []

    def keep(candidate: Mapping[str, Any], result: tuple[bool, Any, SessionReplay | None,
                                                         tuple[str, ...]]) -> None:
        _, cfg, rerun, notes = result
        assert rerun is not None
        changed = tuple((n, values.get(n), candidate[n]) for n in candidate
                        if candidate[n] != values.get(n))
        if not changed:
            return
        found.append(SettingChange(
            changed, dict(candidate), cfg, rerun.first_refusal,
            describe_outcome(rerun.first_refusal, replay.first_refusal),
            _describe(changed, specs), notes,
            all(specs[n].deployable for n, _, _ in changed)))

    for name in order:
        spec = specs[name]
        if not spec.deployable and not include_what_ifs:
            continue
        for value in _candidates(spec, values.get(name)):
            candidate = {**values, name: value}
            result = attempt(candidate)
            if result[0]:
                keep(candidate, result)
                break
    # Engines suggest their multi-setting candidates for "pass" or "refuse"; a change that
    # clears the whole session first lets its first refusal through.
    engine_goal: Literal["pass", "refuse"] = "refuse" if goal == "refuse" else "pass"
    for extra in engine.explainer.extra_changes(target, replay, config, engine_goal):
        candidate = {**values, **extra}
        if any(k not in specs or (not specs[k].deployable and not include_what_ifs)
               for k in extra):
            continue
        if any({k for k, _, _ in c.changes} <= set(extra) for c in found):
            continue  # a smaller change already does it
        result = attempt(candidate)
        if result[0]:
            keep(candidate, result)

    def size(c: SettingChange) -> tuple[Any, ...]:
        distance = 0.0
        for _name, before, after in c.changes:
            if isinstance(before, int) and isinstance(after, int) and not isinstance(after, bool):
                distance += abs(after - before) / max(abs(before), 1)
            else:
                distance += 1.0
        return (not c.deployable, len(c.changes), distance)

    found.sort(key=size)
    return found[:limit]


_RESOLVED: dict[tuple[Any, ...], Any] = {}
_RESOLVED_MAX = 4096


def _resolved(engine: Engine[Any, Any], version: str | None, key: tuple[Any, ...],
              candidate: Mapping[str, Any]) -> Any:
    """``engine.config(candidate, version)``, or None where it raises :class:`ConfigError`;
    kept across calls. The search tries the same few hundred candidates for every refused
    session of a corpus (the nearest values of each setting), and building a configuration
    (its block copied, resolved and described) costs several times a session's re-run;
    configurations are frozen values, so one serves every session. Bounded: cleared when
    full."""
    whose = (type(engine).__module__, type(engine).__qualname__, engine.name, version, key)
    if whose not in _RESOLVED:
        if len(_RESOLVED) >= _RESOLVED_MAX:
            _RESOLVED.clear()
        try:
            _RESOLVED[whose] = engine.config(candidate, version)
        except ConfigError:
            _RESOLVED[whose] = None
    return _RESOLVED[whose]


def _hashable(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(value)
    return value


# --------------------------------------------------------------------------- side effects


@dataclass(frozen=True, slots=True)
class CorpusEffect:
    """What a configuration change does to every loaded session."""

    newly_refused: tuple[int, ...] = ()
    """Positions of sessions refused after the change and not before."""
    no_longer_refused: tuple[int, ...] = ()
    moved: tuple[int, ...] = ()
    """Refused before and after, at a different first refusal."""
    loops_no_longer_caught: tuple[int, ...] = ()
    """Labelled loops refused before and not after."""
    loops_newly_caught: tuple[int, ...] = ()
    good_newly_refused: tuple[int, ...] = ()
    """Sessions labelled good work refused after the change and not before."""
    good_no_longer_refused: tuple[int, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.newly_refused or self.no_longer_refused or self.moved)

    @property
    def harmful(self) -> bool:
        """A labelled loop is no longer caught, or a session labelled good work is newly
        refused: a change the labels say is wrong."""
        return bool(self.loops_no_longer_caught or self.good_newly_refused)

    @property
    def sessions(self) -> tuple[int, ...]:
        """Every session whose outcome changes, in corpus order."""
        return tuple(sorted({*self.newly_refused, *self.no_longer_refused, *self.moved}))

    def without(self, index: int) -> CorpusEffect:
        """The same effect with the session at ``index`` left out (the other sessions)."""
        def drop(items: tuple[int, ...]) -> tuple[int, ...]:
            return tuple(i for i in items if i != index)

        return CorpusEffect(drop(self.newly_refused), drop(self.no_longer_refused),
                            drop(self.moved), drop(self.loops_no_longer_caught),
                            drop(self.loops_newly_caught), drop(self.good_newly_refused),
                            drop(self.good_no_longer_refused), self.extra)

    def summary(self) -> str:
        """What changes, each session counted once (:func:`effect_text`)."""
        return effect_text(self)


_LABELLED = {
    # (kind of label) → (one, many): how a labelled session is named
    "loop": ("a labelled loop", "labelled loops"),
    "ok": ("a session labelled good work", "sessions labelled good work"),
}


def _of_them(count: int, total: int, kind: str, outcome: str) -> str:
    """How many of a group of ``total`` sessions carry a label: "both labelled loops, now
    missed", "1 of them a labelled loop, now caught"."""
    one, many = _LABELLED[kind]
    if count == total:
        who = one if total == 1 else ("both " if total == 2 else f"all {total:,} ") + many
    else:
        who = f"{count:,} of them " + (one if count == 1 else many)
    return f"{who}, {outcome}"


def _group(count: int, what: str, notes: Sequence[str]) -> str:
    return f"{count:,} {what}" + (" — " + "; ".join(notes) if notes else "")


def _labelled_group(group: tuple[int, ...], what: str,
                    *labelled: tuple[tuple[int, ...], str, str]) -> str:
    """One group of changed sessions, "2 newly refused — both labelled loops, now caught",
    with a note for each ``(sessions, kind of label, outcome)`` that has sessions; ``""``
    for an empty group."""
    n = len(group)
    if not n:
        return ""
    return _group(n, what, [_of_them(len(sessions), n, kind, outcome)
                            for sessions, kind, outcome in labelled if sessions])


def effect_text(effect: CorpusEffect) -> str:
    """"2 newly refused · 2 no longer refused — both labelled loops, now missed · 1 refused at
    another point": each changed session is counted once, in the one group its outcome puts it
    in (newly refused, no longer refused, refused elsewhere); its label says, inside that
    group, what the change means for it. (Counting "2 no longer refused" and "2 loops missed"
    side by side would count the same two sessions twice.)"""
    parts = [text for text in (
        _labelled_group(effect.newly_refused, "newly refused",
                        (effect.loops_newly_caught, "loop", "now caught"),
                        (effect.good_newly_refused, "ok", "now falsely refused")),
        _labelled_group(effect.no_longer_refused, "no longer refused",
                        (effect.loops_no_longer_caught, "loop", "now missed"),
                        (effect.good_no_longer_refused, "ok", "no longer falsely refused")),
    ) if text]
    if effect.moved:
        parts.append(_group(len(effect.moved), "refused at another point", ()))
    return " · ".join(parts) if parts else "no session changes"


@dataclass(frozen=True, slots=True)
class RefusalTotals:
    """Totals of one configuration over the loaded sessions."""

    sessions: int
    refused: int
    false_refusals: int | None = None
    """Sessions labelled good work that are refused (``None``: no session is labelled)."""
    loops_missed: int | None = None
    """Sessions labelled a real loop that are never refused (``None``: no label)."""


def refusal_totals(run: Any, labels: Sequence[str | None] = ()) -> RefusalTotals:
    """:class:`RefusalTotals` of a batch run (:class:`~loopscope.engines.base.RunColumns`),
    read from its columns; ``labels[i]`` is ``"loop"``, ``"ok"`` or ``None``."""
    import numpy as np

    turn = run.first_refusal_columns()[0]
    refused = turn >= 0
    if not any(labels):
        return RefusalTotals(len(turn), int(refused.sum()))
    kind = np.zeros(len(turn), dtype=np.int8)
    given = np.array([{"loop": 1, "ok": 2}.get(x or "", 0) for x in labels[:len(kind)]],
                     dtype=np.int8)
    kind[:len(given)] = given
    return RefusalTotals(len(turn), int(refused.sum()), int((refused & (kind == 2)).sum()),
                         int((~refused & (kind == 1)).sum()))


def _move(name: str, before: int, after: int) -> str:
    if before == after:
        return f"{name} {before:,} (unchanged)"
    sign = "+" if after > before else "−"
    return f"{name} {before:,} → {after:,} ({sign}{abs(after - before):,})"


def totals_text(before: RefusalTotals, after: RefusalTotals) -> str:
    """"refused 12 → 10 (−2) · false refusals 1 (unchanged) · missed loops 0 → 2 (+2)": the
    totals before and after a change, with their differences (the labelled totals only when
    sessions are labelled)."""
    parts = [_move("refused", before.refused, after.refused)]
    if before.false_refusals is not None and after.false_refusals is not None:
        parts.append(_move("false refusals", before.false_refusals, after.false_refusals))
    if before.loops_missed is not None and after.loops_missed is not None:
        parts.append(_move("missed loops", before.loops_missed, after.loops_missed))
    return " · ".join(parts)


def corpus_effect(
    before: Sequence[FirstRefusal | None],
    after: Sequence[FirstRefusal | None],
    labels: Sequence[str | None] = (),
) -> CorpusEffect:
    """Compare two configurations' first refusals session by session (same order);
    ``labels[i]`` is ``"loop"``, ``"ok"`` or ``None``."""
    def lab(i: int) -> str | None:
        return labels[i] if i < len(labels) else None

    newly, gone, moved, lost, caught, good_new, good_gone = [], [], [], [], [], [], []
    for i, (a, b) in enumerate(zip(before, after, strict=True)):
        if a is None and b is not None:
            newly.append(i)
            if lab(i) == "loop":
                caught.append(i)
            elif lab(i) == "ok":
                good_new.append(i)
        elif a is not None and b is None:
            gone.append(i)
            if lab(i) == "loop":
                lost.append(i)
            elif lab(i) == "ok":
                good_gone.append(i)
        elif a is not None and b is not None and (a.turn, a.call, a.detector) != (
                b.turn, b.call, b.detector):
            moved.append(i)
    return CorpusEffect(tuple(newly), tuple(gone), tuple(moved), tuple(lost), tuple(caught),
                        tuple(good_new), tuple(good_gone))


def corpus_effect_of_runs(before: Any, after: Any,
                          labels: Sequence[str | None] = ()) -> CorpusEffect:
    """:func:`corpus_effect` of two batch runs of one corpus (:class:`~loopscope.engines.base.
    RunColumns`), read from their columns: the same groups (a test compares the two on random
    runs), with no first-refusal object made for a session. The dashboard asks for it on
    every slider move, with 20,000 sessions of which thousands are refused."""
    import numpy as np

    b_turn, b_call, b_code, b_names = before.first_refusal_columns()
    a_turn, a_call, a_code, a_names = after.first_refusal_columns()
    if len(b_turn) != len(a_turn):  # (as zip(strict=True) refuses)
        raise ValueError(f"{len(b_turn)} sessions before, {len(a_turn)} after")
    # The two runs number their detectors each in its own order: one numbering for both.
    common = {name: i for i, name in enumerate(dict.fromkeys((*b_names, *a_names)))}

    def detectors(code: Any, names: Sequence[str]) -> Any:
        mapped = np.array([common[n] for n in names] or [0], dtype=np.int64)
        return np.where(code >= 0, mapped[np.clip(code, 0, None)], -1)

    b_refused, a_refused = b_turn >= 0, a_turn >= 0
    newly = ~b_refused & a_refused
    gone = b_refused & ~a_refused
    moved = b_refused & a_refused & ((b_turn != a_turn) | (b_call != a_call) | (
        detectors(b_code, b_names) != detectors(a_code, a_names)))
    kind = np.zeros(len(b_turn), dtype=np.int8)  # 1: a labelled loop, 2: good work
    given = np.array([{"loop": 1, "ok": 2}.get(x or "", 0) for x in labels[:len(kind)]],
                     dtype=np.int8)
    kind[:len(given)] = given

    def at(mask: Any) -> tuple[int, ...]:
        return tuple(np.flatnonzero(mask).tolist())

    return CorpusEffect(at(newly), at(gone), at(moved), at(gone & (kind == 1)),
                        at(newly & (kind == 1)), at(newly & (kind == 2)), at(gone & (kind == 2)))


# --------------------------------------------------------------------------- honest advice


@dataclass(frozen=True, slots=True)
class AdvisedChange:
    """A verified change with what it does to every loaded session."""

    change: SettingChange
    effect: CorpusEffect
    """Over every session, this one included (what an "Apply" changes)."""
    others: CorpusEffect
    """Over the other sessions only (the side effects)."""
    switched_off: tuple[str, ...] = ()
    """The settings this change switches off (a switch turned off, or a limit set to "off"):
    part of the guard stops checking for every session — a last resort."""

    @property
    def harmful(self) -> bool:
        return self.others.harmful

    @property
    def side_effects(self) -> bool:
        return self.others.changed

    @property
    def harm(self) -> int:
        """Labelled sessions this change gets wrong elsewhere (loops lost, good work refused)."""
        return len(self.others.loops_no_longer_caught) + len(self.others.good_newly_refused)

    def needs_confirmation(self, sessions: int) -> bool:
        """Whether "Apply" must ask first: the change switches part of the guard off, gets a
        labelled session wrong, or newly refuses more than :data:`CONFIRM_SHARE` of the
        ``sessions`` loaded besides this one (a change of that reach is never one click)."""
        return bool(self.switched_off or self.effect.good_newly_refused
                    or self.effect.loops_no_longer_caught
                    or len(self.others.newly_refused) > CONFIRM_SHARE * sessions)


@dataclass(frozen=True, slots=True)
class Advice:
    """The changes worth offering for one session, side effects first, and one honest verdict."""

    goal: Goal
    """What the changes reach (``clear`` falls back to ``pass`` when nothing clears it)."""
    changes: tuple[AdvisedChange, ...]
    """Harmless before harmful, then without side effects before with, then smallest."""
    recommended: AdvisedChange | None
    """The smallest change the labels raise no objection to, if any."""
    verdict: str
    """One plain sentence on what is on offer (say so when no change is free of harm)."""


def advise(
    engine: Engine[Any, Any],
    prepared: Any,
    config: Any,
    *,
    index: int,
    before: Sequence[FirstRefusal | None],
    first_refusals: Callable[[Any], Sequence[FirstRefusal | None]],
    labels: Sequence[str | None] = (),
    target: Step | None = None,
    goal: Goal = "clear",
    include_what_ifs: bool = False,
    limit: int = 4,
) -> Advice:
    """The smallest verified changes for the session at ``index`` of a corpus, each with its
    effect on every other session, ordered so the first one does the least harm.

    ``before``: every session's first refusal under ``config``; ``first_refusals(config)``:
    the same under another configuration (callers cache it: it replays the whole corpus);
    ``labels[i]``: ``"loop"``, ``"ok"`` or ``None``. ``goal="clear"`` (never refused) falls
    back to ``"pass"`` (the first refusal goes, a later one may remain) when no change clears
    the session.
    """
    found = smallest_changes(engine, prepared, config, target, goal,
                             include_what_ifs=include_what_ifs, limit=limit)
    used: Goal = goal
    if not found and goal == "clear":
        found = smallest_changes(engine, prepared, config, target, "pass",
                                 include_what_ifs=include_what_ifs, limit=limit)
        used = "pass"
    specs = {s.name: s for s in engine.settings_for(engine.version_of(config))}
    advised: list[AdvisedChange] = []
    for change in found:
        effect = corpus_effect(before, first_refusals(change.config), labels)
        advised.append(AdvisedChange(change, effect, effect.without(index),
                                     switched_off(change, specs)))
    order = {id(a): n for n, a in enumerate(advised)}
    # Least collateral first: a change that switches part of the guard off is a last resort;
    # then the fewest labelled sessions got wrong, the fewest other sessions changed, a real
    # setting before a what-if, and the smallest change (the search's order).
    advised.sort(key=lambda a: (bool(a.switched_off), a.harm, len(a.others.sessions),
                                not a.change.deployable, order[id(a)]))
    recommended = next((a for a in advised if not a.harmful and not a.switched_off), None)
    return Advice(used, tuple(advised), recommended, _advice_verdict(goal, used, advised,
                                                                     recommended))


def switched_off(change: SettingChange, specs: Mapping[str, SettingSpec]) -> tuple[str, ...]:
    """The settings ``change`` switches off: a switch from on to off, or a limit that can be
    off set to off."""
    out = []
    for name, before, after in change.changes:
        spec = specs.get(name)
        if spec is None:
            continue
        if (spec.kind == "bool" and before and not after) or (
                spec.kind == "int_or_off" and before is not None and after is None):
            out.append(name)
    return tuple(out)


def _advice_verdict(goal: Goal, used: Goal, advised: Sequence[AdvisedChange],
                    recommended: AdvisedChange | None) -> str:
    catching = goal == "refuse"
    if not advised:
        return ("No single setting change would catch this loop." if catching
                else "No single setting change lets this session through.")
    prefix = ""
    if used != goal:
        prefix = ("No setting change keeps this session from being refused altogether; the "
                  "changes below only let this call through, and a later one is refused. ")
    if recommended is None:
        what = "catches this loop" if catching else "lets this session through"
        if all(not a.harmful for a in advised):
            verb = "catch this loop" if catching else "let this session through"
            return (prefix + f"The only changes that {verb} switch part of the guard off: a "
                    "last resort.")
        reasons = []
        if any(a.others.loops_no_longer_caught for a in advised):
            reasons.append("stops catching a session labelled a real loop")
        if any(a.others.good_newly_refused for a in advised):
            reasons.append("refuses a session labelled good work")
        if any(a.switched_off for a in advised):
            reasons.append("switches part of the guard off")
        listed = reasons[0] if len(reasons) == 1 else (
            ", ".join(reasons[:-1]) + " or " + reasons[-1])
        each = "the change below" if len(advised) == 1 else "each change below"
        return prefix + f"No change {what} without side effects: {each} {listed}."
    what = "catches this loop" if catching else (
        "lets this call through" if used == "pass" else "lets this session through")
    if not recommended.side_effects:
        return prefix + f"The smallest change that {what} changes no other session."
    n = len(recommended.others.sessions)
    return (prefix + f"The smallest change that {what} without going against a label also "
            f"changes {n:,} other session{'s' if n != 1 else ''}.")


# --------------------------------------------------------------------------- one session


Situation = Literal["caught", "false_refusal", "too_early", "missed", "unlabelled", "nothing"]
"""What a session's label makes of a guard's verdict, which decides the advice's goal:

* ``caught`` — a labelled loop refused once it began (or its start is unknown): no change.
* ``false_refusal`` — labelled good work, refused: loosen (the smallest change that lets the
  whole session through, else its first refusal).
* ``too_early`` — a labelled loop refused before its start: loosen that refusal.
* ``missed`` — a labelled loop never refused: tighten (the smallest change that refuses it
  once the loop has begun).
* ``unlabelled`` — refused, no label: what would let it through, framed neutrally.
* ``nothing`` — not refused, and no label says it should be: nothing to advise."""


@dataclass(frozen=True, slots=True)
class SessionAdvice:
    """One session's advice under one guard: the situation its label decides, and the changes."""

    engine: str
    """The guard's title ("OpenClaw")."""
    situation: Situation
    advice: Advice | None = None
    """The changes (``None`` when the situation asks for none)."""
    target: Step | None = None
    """The step the changes are for (a missed loop's step to catch, an early refusal)."""
    sessions: int = 0
    """How many sessions are loaded: the side effects are counted over the others."""
    from_turn: int | None = None
    """A labelled loop's first turn (0-based), if known."""


def situation_of(replay: SessionReplay, label: str | None,
                 from_turn: int | None) -> Situation:
    """The situation of ``replay`` given the session's label (``"loop"``, ``"ok"`` or
    ``None``) and, for a loop, the 0-based turn it began at (``None``: unknown)."""
    first = replay.first_refusal
    if first is None:
        return "missed" if label == "loop" else "nothing"
    if label == "loop":
        return "too_early" if from_turn is not None and first.turn < from_turn else "caught"
    return "false_refusal" if label == "ok" else "unlabelled"


def missed_loop_step(replay: SessionReplay, from_turn: int | None) -> Step | None:
    """For a labelled loop that was not caught: the step nearest to a refusal after the loop
    began (the highest count), which the smallest change to catch it is computed for."""
    start = from_turn or 0
    candidates = [s for s in replay.steps if s.turn >= start and s.count is not None]
    if not candidates:
        candidates = [s for s in replay.steps if s.turn >= start]
    if not candidates:
        return None
    return max(candidates, key=lambda s: (s.count or 0, -s.turn))


def session_advice(
    engine: Engine[Any, Any],
    prepared: Any,
    config: Any,
    *,
    label: str | None,
    from_turn: int | None,
    index: int,
    before: Sequence[FirstRefusal | None],
    first_refusals: Callable[[Any], Sequence[FirstRefusal | None]],
    labels: Sequence[str | None] = (),
    replay: SessionReplay | None = None,
    include_what_ifs: bool = False,
    limit: int = 4,
) -> SessionAdvice:
    """The advice for the session at ``index`` of a corpus, as its label asks: every surface
    (the CLI's text, the session page, the HTML report) shows this, in
    :func:`advice_words`' sentences.

    ``before``: every session's first refusal under ``config``; ``first_refusals(config)``:
    the same under another configuration (callers cache it); ``labels[i]``: every session's
    label. A labelled loop caught needs no change; good work refused, or a loop refused too
    early, is loosened; a loop missed is tightened; an unlabelled refusal gets the loosening
    changes, framed neutrally by the wording.
    """
    replay = replay if replay is not None else engine.run(prepared, config)
    situation = situation_of(replay, label, from_turn)
    sessions = len(before)
    if situation in ("caught", "nothing"):
        return SessionAdvice(engine.title, situation, sessions=sessions)
    target: Step | None = None
    goal: Goal = "clear"
    if situation == "too_early":
        target = next((s for s in replay.steps if s.verdict == "refuse"), None)
        goal = "pass"
    elif situation == "missed":
        target = missed_loop_step(replay, from_turn)
        goal = "refuse"
        if target is None:
            return SessionAdvice(engine.title, situation, sessions=sessions)
    found = advise(engine, prepared, config, index=index, before=before,
                   first_refusals=first_refusals, labels=labels, target=target, goal=goal,
                   include_what_ifs=include_what_ifs, limit=limit)
    return SessionAdvice(engine.title, situation, found, target, sessions, from_turn)


# --------------------------------------------------------------------------- the words


@dataclass(frozen=True, slots=True)
class ChangeWords:
    """One advised change in words: what to change, how to type it, what it does."""

    change: str
    """"Raise “Repeats allowed for tools that change things” from 2 to 3"."""
    typed: str
    """How to set it on the command line (``--set KEY=VALUE``): the one place the setting's
    key is shown, as code."""
    marks: tuple[str, ...]
    """Short tags: "smallest harmless change", "goes against a label", "last resort: …",
    "what-if"."""
    effect: str
    """What it does to this session and to the other loaded sessions."""
    confirm: str | None = None
    """When "Apply" must ask first: the question, naming what the change costs."""

    def sentence(self) -> str:
        """The change as one line of plain text (the dashboard shows the same words)."""
        marks = "".join(f" [{m}]" for m in self.marks)
        return f"{self.change} ({self.typed}){marks}: {self.effect}."


@dataclass(frozen=True, slots=True)
class AdviceWords:
    """A session's advice under one guard, in sentences."""

    heading: str
    """What the advice is for ("What would let it through:")."""
    summary: str
    """One sentence on what is on offer."""
    changes: tuple[ChangeWords, ...] = ()

    def lines(self) -> list[str]:
        """Every sentence, in order, as plain text."""
        return [f"{self.heading} {self.summary}".strip(), *(c.sentence() for c in self.changes)]


_HEADINGS: dict[str, str] = {
    "false_refusal": "What would let it through:",
    "too_early": "How to refuse it later, once the loop has begun:",
    "unlabelled": "Not labelled, so this refusal may be right or wrong; if it stopped good "
                  "work, this is what would let it through:",
}


def advice_words(advice: SessionAdvice, specs: Sequence[SettingSpec]) -> AdviceWords | None:
    """The sentences of ``advice`` (``specs``: the guard's settings at the version advised),
    the same on every surface; ``None`` when there is nothing to say."""
    if advice.situation == "nothing":
        return None
    if advice.situation == "caught":
        return AdviceWords("Nothing to change:", "this real loop is caught, as its label says "
                           "it should be.")
    if advice.situation == "missed":
        heading = "What would catch it"
        if advice.target is not None:
            heading += f" (at turn {advice.target.turn + 1})"
        heading += ":"
    else:
        heading = _HEADINGS[advice.situation]
    if advice.advice is None:
        return AdviceWords(heading, "No single setting change would catch this loop.")
    by_name = {s.name: s for s in specs}
    changes = tuple(_change_words(advice, a, a is advice.advice.recommended, by_name)
                    for a in advice.advice.changes)
    return AdviceWords(heading, advice.advice.verdict, changes)


def _change_words(advice: SessionAdvice, a: AdvisedChange, recommended: bool,
                  specs: Mapping[str, SettingSpec]) -> ChangeWords:
    marks = []
    if recommended:
        marks.append("smallest harmless change")
    if a.harmful:
        marks.append("goes against a label")
    if a.switched_off:
        marks.append("last resort: switches " + " and ".join(
            f"“{specs[n].label}”" for n in a.switched_off if n in specs) + " off")
    if not a.change.deployable:
        marks.append(f"what-if: not a setting of {advice.engine}")
    early = a.change.first_refusal
    if (advice.situation == "missed" and advice.from_turn is not None and early is not None
            and early.turn < advice.from_turn):
        marks.append("refuses it before the loop began")
    change = a.change.description[:1].upper() + a.change.description[1:]
    typed = " ".join(f"--set {arg}" for arg in a.change.set_args(tuple(specs.values())))
    here = a.change.effect.replace("the session", "this session", 1)
    effect = f"{here}; {others_words(a.others, advice.sessions)}"
    confirm = (confirmation_words(advice.engine, a, advice.sessions, specs)
               if a.needs_confirmation(advice.sessions) else None)
    return ChangeWords(change, typed, tuple(marks), effect, confirm)


def others_words(others: CorpusEffect, sessions: int) -> str:
    """What a change does to the other loaded sessions: "of the other 12 sessions, 2 are newly
    refused (1 of them labelled good work) and 1 is no longer refused (1 of them labelled a
    real loop)"; counts past a thousand with separators."""
    if not others.changed:
        return "no other session changes"
    parts = []
    if others.newly_refused:
        parts.append(_others_group(len(others.newly_refused), "newly refused",
                            len(others.good_newly_refused), "labelled good work"))
    if others.no_longer_refused:
        parts.append(_others_group(len(others.no_longer_refused), "no longer refused",
                            len(others.loops_no_longer_caught), "labelled a real loop",
                            "labelled real loops"))
    if others.moved:
        n = len(others.moved)
        parts.append(f"{n:,} {'is' if n == 1 else 'are'} refused at another point")
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    other = max(sessions - 1, len(others.sessions))
    return f"of the other {plural(other, 'session')}, {listed}"


def _others_group(n: int, what: str, k: int, one: str, many: str | None = None) -> str:
    text = f"{n:,} {'is' if n == 1 else 'are'} {what}"
    if k:
        text += f" ({'it is' if n == 1 else f'{k:,} of them'} {one if k == 1 else (many or one)})"
    return text


def confirmation_words(engine: str, a: AdvisedChange, sessions: int,
                       specs: Mapping[str, SettingSpec]) -> str:
    """The question "Apply" asks before a costly change, naming what it costs over every
    loaded session: "This switches “Loop detection on” off in OpenClaw for all 38 sessions: 6
    refusals go away, 2 of them labelled real loops.\""""
    effect = a.effect
    what = a.change.description
    if a.switched_off:
        what = "switch " + " and ".join(f"“{specs[n].label}”" for n in a.switched_off
                                          if n in specs) + " off"
        others = [c for c in a.change.changes if c[0] not in a.switched_off]
        if others:
            what += " and " + _describe(others, specs)
    head = f"This {_third_person(what)} in {engine} for all {sessions:,} loaded sessions"
    costs = []
    if effect.no_longer_refused:
        n, k = len(effect.no_longer_refused), len(effect.loops_no_longer_caught)
        text = f"{n:,} refusal{'s' if n != 1 else ''} go{'es' if n == 1 else ''} away"
        if k:
            text += (f", {'it' if n == 1 else f'{k:,} of them'} labelled "
                     f"{'a real loop' if k == 1 else 'real loops'}")
        costs.append(text)
    if effect.newly_refused:
        n, k = len(effect.newly_refused), len(effect.good_newly_refused)
        text = f"{n:,} session{'s are' if n != 1 else ' is'} newly refused"
        if k:
            text += f", {'it' if n == 1 else f'{k:,} of them'} labelled good work"
        costs.append(text)
    body = "; ".join(costs) if costs else "no session changes"
    return f"{head}: {body}. Apply it anyway?"


_VERB = re.compile(r"(^|\band )(raise|lower|turn|switch|add|remove|change)\b")


def _third_person(text: str) -> str:
    """"raise X and switch Y off" → "raises X and switches Y off" (after "This")."""
    return _VERB.sub(lambda m: m.group(1) + m.group(2) + ("es" if m.group(2).endswith("h")
                                                          else "s"), text)
