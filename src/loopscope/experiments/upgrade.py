"""The upgrade impact: the same sessions under release A and release B of one guard.

:func:`upgrade_impact` sorts every session by what the move from A to B does to it — newly
refused, no longer refused, refused earlier, refused later, refused at the same point by
another detector, or unchanged — and, where the sessions are labelled, which of them are real
loops newly caught or no longer caught and which are good work newly refused or freed.
:func:`summary_text` turns that into one paragraph a product manager can paste into a release
note. Pure: first refusals and labels in, values and text out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from loopscope.engines.base import FirstRefusal

if TYPE_CHECKING:
    from loopscope.experiments.compare import CompareResult

__all__ = ["UpgradeImpact", "impact_of_compare", "summary_text", "upgrade_impact"]


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
    ``labels[i]`` is ``"loop"``, ``"ok"`` or ``None``."""
    if len(a) != len(b):
        raise ValueError(f"A has {len(a)} sessions and B {len(b)}: not the same sessions")
    new: list[int] = []
    gone: list[int] = []
    earlier: list[int] = []
    later: list[int] = []
    other: list[int] = []
    caught: list[int] = []
    lost: list[int] = []
    good_new: list[int] = []
    good_gone: list[int] = []
    for i, (ra, rb) in enumerate(zip(a, b, strict=True)):
        label = labels[i] if i < len(labels) else None
        if ra is None and rb is None:
            continue
        if ra is None:
            new.append(i)
            if label == "loop":
                caught.append(i)
            elif label == "ok":
                good_new.append(i)
        elif rb is None:
            gone.append(i)
            if label == "loop":
                lost.append(i)
            elif label == "ok":
                good_gone.append(i)
        elif _position(rb) < _position(ra):
            earlier.append(i)
        elif _position(rb) > _position(ra):
            later.append(i)
        elif rb.detector != ra.detector:
            other.append(i)
    return UpgradeImpact(len(a), tuple(new), tuple(gone), tuple(earlier), tuple(later),
                         tuple(other), tuple(caught), tuple(lost), tuple(good_new),
                         tuple(good_gone))


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


def _n(count: int, one: str, many: str | None = None) -> str:
    return f"{count:,} {one if count == 1 else (many or one + 's')}"


def _join(parts: Sequence[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


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
) -> str:
    """One paragraph for a release note: what moving ``guard`` from ``version_a`` to
    ``version_b`` does to these sessions, with the labelled ones called out."""
    n = impact.sessions
    head = f"Moving {guard} from {version_a} to {version_b} {settings_note}"
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
    text = (f"{head} changes {changed} of {_n(n, 'session')}: " + _join(parts) + ". ")
    if impact.unchanged == 1:
        text += "The other session behaves as before."
    elif impact.unchanged:
        text += f"The other {impact.unchanged} behave as before."
    return text.rstrip()
