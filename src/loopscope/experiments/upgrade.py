"""The upgrade impact: the same sessions under release A and release B of one guard.

:func:`upgrade_impact` sorts every session by what the move from A to B does to it — newly
refused, no longer refused, refused earlier, refused later, refused at the same point by
another detector, or unchanged — and, where the sessions are labelled, which of them are real
loops newly caught or no longer caught and which are good work newly refused or freed.
:func:`summary_text` turns that into one paragraph a product manager can paste into a release
note. :func:`settings_move` and :func:`cause_text` say first *why* the release behaves
differently where its schema says so (settings it no longer reads, values it fixes), from the
two releases' schemas alone — no engine is named here. :func:`release_note` is the paragraph
the dashboard and ``loopscope compare --a-version … --b-version …`` both print. Pure: first
refusals, labels and schemas in, values and text out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from loopscope.advice import corpus_effect
from loopscope.engines.base import FirstRefusal
from loopscope.words import join_words, plural

if TYPE_CHECKING:
    from loopscope.engines.contract import SettingSpec
    from loopscope.experiments.compare import CompareResult

__all__ = [
    "SettingsMove",
    "UpgradeImpact",
    "cause_text",
    "impact_of_compare",
    "release_note",
    "settings_move",
    "summary_text",
    "upgrade_impact",
]


@dataclass(frozen=True, slots=True)
class UpgradeImpact:
    """Positions (in the sessions' order) of the sessions in each class."""

    sessions: int
    newly_refused: tuple[int, ...] = ()
    no_longer_refused: tuple[int, ...] = ()
    earlier: tuple[int, ...] = ()
    """Refused under both, first at an earlier point under B."""
    later: tuple[int, ...] = ()
    other_detector: tuple[int, ...] = ()
    """Refused at the same point under both, by another detector."""
    loops_newly_caught: tuple[int, ...] = ()
    loops_no_longer_caught: tuple[int, ...] = ()
    good_newly_refused: tuple[int, ...] = ()
    good_no_longer_refused: tuple[int, ...] = ()

    @property
    def changed(self) -> tuple[int, ...]:
        """Every session whose outcome differs, in order."""
        return tuple(sorted({*self.newly_refused, *self.no_longer_refused, *self.earlier,
                             *self.later, *self.other_detector}))

    @property
    def unchanged(self) -> int:
        return self.sessions - len(self.changed)


def _position(first: FirstRefusal) -> tuple[int, int]:
    """Where a refusal sits: by call where there is one (a prose step has none), then turn."""
    return (first.call if first.call is not None else -1, first.turn)


def upgrade_impact(
    a: Sequence[FirstRefusal | None],
    b: Sequence[FirstRefusal | None],
    labels: Sequence[str | None] = (),
) -> UpgradeImpact:
    """Classify every session by how its first refusal moves from ``a`` to ``b`` (same order);
    ``labels[i]`` is ``"loop"``, ``"ok"`` or ``None``.

    The groups and their labels are :func:`loopscope.advice.corpus_effect`'s, so an upgrade
    and a settings change count sessions alike; a refusal that moves is told apart further by
    direction (earlier, later) or, at the same point, by detector."""
    if len(a) != len(b):
        raise ValueError(f"A has {len(a)} sessions and B {len(b)}: not the same sessions")
    effect = corpus_effect(a, b, labels)
    earlier: list[int] = []
    later: list[int] = []
    other: list[int] = []
    for i in effect.moved:  # refused under both, at another point or by another detector
        ra, rb = a[i], b[i]
        assert ra is not None and rb is not None
        if _position(rb) < _position(ra):
            earlier.append(i)
        elif _position(rb) > _position(ra):
            later.append(i)
        else:
            other.append(i)
    return UpgradeImpact(len(a), effect.newly_refused, effect.no_longer_refused,
                         tuple(earlier), tuple(later), tuple(other), effect.loops_newly_caught,
                         effect.loops_no_longer_caught, effect.good_newly_refused,
                         effect.good_no_longer_refused)


def impact_of_compare(result: CompareResult, labels: Mapping[str, Any]) -> UpgradeImpact:
    """The impact of a :class:`~loopscope.experiments.compare.CompareResult` (which keeps only
    the changed sessions); positions index ``result.changes``. ``labels``: source → a label
    object (``.label``) or ``"loop"``/``"ok"``."""
    def label(source: str) -> str | None:
        value = labels.get(source)
        text = value if isinstance(value, str) or value is None else getattr(value, "label", None)
        return text if text in ("loop", "ok") else None

    changes = result.changes
    impact = upgrade_impact([c.a for c in changes], [c.b for c in changes],
                            [label(c.source) for c in changes])
    return replace(impact, sessions=len(changes) + result.same)


_n = plural
_join = join_words


def _labelled(loops: int, good: int, loop_word: str, good_word: str) -> str:
    """" (1 labelled a real loop, now caught)": the labelled part of a class of sessions."""
    notes = []
    if loops:
        notes.append(f"{loops} labelled a real loop, {loop_word}")
    if good:
        notes.append(f"{good} labelled good work, {good_word}")
    return f" ({'; '.join(notes)})" if notes else ""


def summary_text(
    impact: UpgradeImpact,
    guard: str,
    version_a: str,
    version_b: str,
    *,
    settings_note: str = "with the same settings",
    cause: str = "",
) -> str:
    """One paragraph for a release note: what moving ``guard`` from ``version_a`` to
    ``version_b`` does to these sessions, with the labelled ones called out. ``cause`` (a
    sentence, see :func:`cause_text`) comes first: a reader sees why before what."""
    n = impact.sessions
    head = " ".join(x for x in (f"Moving {guard} from {version_a} to {version_b}",
                                settings_note) if x)
    head = f"{cause} {head}" if cause else head
    if not impact.changed:
        return (f"{head} changes nothing for these {_n(n, 'session')}: every session is "
                "refused, or let through, exactly where it was before.")
    parts = []
    if impact.newly_refused:
        parts.append(_n(len(impact.newly_refused), "session is", "sessions are") + " newly refused"
                     + _labelled(len(impact.loops_newly_caught),
                                 len(impact.good_newly_refused), "now caught",
                                 "now wrongly refused"))
    if impact.no_longer_refused:
        parts.append(_n(len(impact.no_longer_refused), "is", "are") + " no longer refused"
                     + _labelled(len(impact.loops_no_longer_caught),
                                 len(impact.good_no_longer_refused), "now missed",
                                 "now let through"))
    if impact.earlier:
        parts.append(_n(len(impact.earlier), "is", "are") + " refused earlier")
    if impact.later:
        parts.append(_n(len(impact.later), "is", "are") + " refused later")
    if impact.other_detector:
        parts.append(_n(len(impact.other_detector), "is", "are")
                     + " refused at the same point for another reason")
    changed = len(impact.changed)
    text = (f"{head} changes {changed:,} of {_n(n, 'session')}: " + _join(parts) + ". ")
    if impact.unchanged == 1:
        text += "The other session behaves as before."
    elif impact.unchanged:
        text += f"The other {impact.unchanged:,} behave as before."
    return text.rstrip()


# --------------------------------------------------------------------------- why (the schemas)


@dataclass(frozen=True, slots=True)
class SettingsMove:
    """What becomes of release A's settings under release B, read off the two schemas.

    A setting of A that B's schema does not have is *ignored* by B (a setting carries over by
    its name, as the dashboard and ``--set`` carry it). It *matters* when its value here is
    not what B does instead: B's fixed value where B's schema says which of A's settings a
    fixed value replaces (:attr:`~loopscope.engines.contract.SettingSpec.replaces`), else A's
    own default (what B is assumed to keep)."""

    total: int
    """How many settings A has."""
    read: tuple[str, ...] = ()
    """A's settings B reads too, in A's order."""
    ignored: tuple[str, ...] = ()
    """A's settings B does not have, in A's order."""
    mattering: tuple[tuple[str, str, str, str], ...] = ()
    """``(A's name, its value here, B's fixed name, B's value)`` for the ignored settings
    whose value differs from what B uses instead (B's name and value empty without one)."""
    fixed: bool = False
    """B has values fixed in the guard (what-ifs) that A's schema has not."""
    b_set: tuple[tuple[str, str], ...] = ()
    """B's own settings (not in A) given another value than B's default: ``(name, value)``."""
    different: bool = False
    """A setting both have takes another value under B (the sides were set apart)."""

    @property
    def same(self) -> bool:
        """Every setting of A means the same under B, with the same value."""
        return not (self.ignored or self.b_set or self.different)


def settings_move(a_specs: Sequence[SettingSpec], values_a: Mapping[str, Any],
                  b_specs: Sequence[SettingSpec],
                  values_b: Mapping[str, Any] | None = None) -> SettingsMove:
    """:class:`SettingsMove` of A's settings (``values_a``, by name; missing ones at their
    default) when release B (``values_b``, default: B's defaults) replays the same sessions."""
    values_b = values_b or {}
    b_by_name = {s.name: s for s in b_specs}
    instead = {s.replaces: s for s in b_specs if s.replaces}
    a_names = {s.name for s in a_specs}
    read, ignored, mattering = [], [], []
    different = False
    for spec in a_specs:
        value = values_a.get(spec.name, spec.default)
        if spec.name in b_by_name:
            read.append(spec.name)
            if spec.name in values_b and values_b[spec.name] != value:
                different = True
            continue
        ignored.append(spec.name)
        fixed = instead.get(spec.name)
        if fixed is not None:
            b_value = values_b.get(fixed.name, fixed.default)
            if b_value != value:
                mattering.append((spec.name, spec.format(value), fixed.name,
                                  fixed.format(b_value)))
        elif value != spec.default:
            mattering.append((spec.name, spec.format(value), "", ""))
    own = [s for s in b_specs if s.name not in a_names]
    b_set = tuple((s.name, s.format(values_b[s.name])) for s in own
                  if s.name in values_b and values_b[s.name] != s.default
                  and s.name not in {m[2] for m in mattering})
    return SettingsMove(len(a_specs), tuple(read), tuple(ignored), tuple(mattering),
                        any(not s.deployable for s in own), b_set, different)


def _names(names: Sequence[str], limit: int = 4) -> str:
    """"a, b, c and d", or "a, b, c, d and 5 more" past ``limit``."""
    if len(names) <= limit + 1:
        return _join(list(names))
    return ", ".join(names[:limit]) + f" and {len(names) - limit} more"


def cause_text(move: SettingsMove, guard: str, version_a: str, version_b: str) -> str:
    """Why ``version_b`` behaves otherwise with these settings, as far as the schemas tell:
    "OpenClaw 2026.9.6 ignores warningThreshold = 3 … and uses fixed values instead (…); of
    the 10 settings of 2026.6.11 only enabled still applies." Empty when every setting carries."""
    if not move.ignored and not move.b_set:
        return ""
    sentences = []
    if move.mattering:
        text = f"{guard} {version_b} ignores " + _join(
            [f"{name} = {value}" for name, value, _, _ in move.mattering])
        fixed = [f"{name} = {value}" for _, _, name, value in move.mattering if name]
        if fixed:
            text += f" and uses fixed values instead ({_join(fixed)})"
        if len(move.ignored) > len(move.mattering):
            text += ("; of the " + _n(move.total, "setting") + f" of {version_a} "
                     + (f"only {_join(list(move.read))} still "
                        + ("applies" if len(move.read) == 1 else "apply")
                        if move.read else "none still applies"))
        sentences.append(text + ".")
    elif move.ignored:
        text = (f"{guard} {version_b} ignores {len(move.ignored):,} of the "
                f"{_n(move.total, 'setting')} of {version_a} ({_names(move.ignored)})")
        if move.fixed:
            text += " and uses fixed values instead"
        sentences.append(text + "; here each is at the value it uses anyway.")
    if move.b_set:
        sentences.append(f"{version_b} is replayed with " + _join(
            [f"{name} = {value}" for name, value in move.b_set]) + ".")
    return " ".join(sentences)


def release_note(impact: UpgradeImpact, guard: str, version_a: str, version_b: str,
                 move: SettingsMove) -> str:
    """The release-note paragraph of an upgrade, cause first: the same text on the dashboard's
    Upgrade impact page and from ``loopscope compare --a-version … --b-version …``."""
    if move.same:
        note = "with the same settings"
    elif move.different:
        note = "with the settings given for each side"
    else:
        note = ""
    return summary_text(impact, guard, version_a, version_b, settings_note=note,
                        cause=cause_text(move, guard, version_a, version_b))
