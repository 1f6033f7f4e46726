"""Small helpers shared by the importers: problems reported for one session candidate, text
and value coercions, and the Gemini CLI rules its two recording formats both follow.

Private to the format modules. Nothing here parses files; the loader does that.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from loopscope.formats.base import ImportContext, Record
from loopscope.formats.builder import SessionBuilder
from loopscope.formats.text import extract_text as _extract_text
from loopscope.model import Origin, Severity

__all__ = [
    "CandidateReporter",
    "as_dict",
    "as_str",
    "count_skipped",
    "extract_text",
    "gemini_injected",
    "gemini_user",
    "is_true",
    "json_objects",
    "json_pointer",
    "short_json",
    "trim_section",
    "trim_section_end",
]


def extract_text(value: Any, joiner: str) -> str:
    """The generic text of a recorded value (the implementation in ``loopscope.formats.text``)."""
    try:
        return _extract_text(value, joiner)
    except TypeError:
        # text.py tests ``part.get("type") in <frozenset>`` (a set lookup on its hot path),
        # which raises for an unhashable "type" (a list or object); such keys are dropped
        # here and the extraction retried, so only odd input pays for the check.
        return _extract_text(_without_odd_types(value, 0), joiner)


def _without_odd_types(value: Any, depth: int) -> Any:
    if depth > 64:
        return None
    if isinstance(value, list):
        return [_without_odd_types(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {k: _without_odd_types(v, depth + 1) for k, v in value.items()
                if not (k == "type" and isinstance(v, list | dict))}
    return value


# What Gemini CLI itself sends as a user-role message under the same prompt: the loop-recovery
# feedback after a first loop detection ("System: Potential loop detected. Details: … Please
# take a step back …", ``_recoverFromLoop`` in ``dist/src/core/client.js``) and the automatic
# "Please continue." after an empty model turn. They are no user turns (a user turn starts a
# new prompt and resets the loop detectors), so the Gemini importers make them ``system``
# events with the recorded role kept.
_GEMINI_LOOP_FEEDBACK = "System: Potential loop detected."
_GEMINI_CONTINUE = "Please continue."


def gemini_injected(text: str) -> bool:
    """Whether a user-role Gemini CLI message is one the CLI wrote itself (see above)."""
    return text.startswith(_GEMINI_LOOP_FEEDBACK) or text.strip() == _GEMINI_CONTINUE


def gemini_user(b: SessionBuilder, text: str, content: Any, *, timestamp: str | None = None,
                origin: Origin) -> None:
    """A user-role Gemini CLI message: a ``system`` event (recorded role kept) when the CLI
    wrote it itself (:func:`gemini_injected`), else the person's ``user`` event, so that only
    a real prompt starts a user turn."""
    if gemini_injected(text):
        b.system(text, content, recorded_role="user", timestamp=timestamp, origin=origin)
    else:
        b.user(text, content, timestamp=timestamp, origin=origin)


def json_objects(records: Iterable[Record], skipped: Counter[str], report: CandidateReporter,
                 message: str) -> Iterator[Record]:
    """The records whose value is a JSON object, the only kind a JSON Lines event can be.

    Every other line makes no event: it is counted under ``non-object`` in ``skipped`` (the
    session's metadata) and told as one aggregated ``unknown_record_type`` info, ``message``
    naming the first such line, so one stray line never hides the rest of the file.
    """
    for record in records:
        if isinstance(record.value, dict):
            yield record
        else:
            skipped["non-object"] += 1
            report.aggregate("unknown_record_type", message, line=record.line)


def trim_section_end(lines: list[str]) -> list[str]:
    """The lines of a Markdown export's section without the ``---`` rule and the blank lines
    that end it: exporters close each message with a rule, which is layout, not message."""
    out = list(lines)
    while out and not out[-1].strip():
        out.pop()
    if out and out[-1].strip() == "---":
        out.pop()
    while out and not out[-1].strip():
        out.pop()
    return out


def trim_section(lines: list[str]) -> list[str]:
    """:func:`trim_section_end`, and without the blank lines that start the section."""
    out = trim_section_end(lines)
    start = 0
    while start < len(out) and not out[start].strip():
        start += 1
    return out[start:]


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is an object, else an empty dict."""
    return value if isinstance(value, dict) else {}


def as_str(value: Any) -> str | None:
    """``value`` when it is a string, else ``None``."""
    return value if isinstance(value, str) else None


def is_true(value: Any) -> bool:
    """JSON ``true`` exactly (a string ``"True"`` as some Python writers emit is accepted too)."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def json_pointer(*parts: str | int) -> str:
    """A JSON Pointer from path parts (``~`` and ``/`` escaped)."""
    out = []
    for part in parts:
        text = str(part).replace("~", "~0").replace("/", "~1")
        out.append(text)
    return "/" + "/".join(out) if out else ""


def short_json(value: Any, limit: int = 60) -> str:
    """A short display form of a value for problem messages."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def count_skipped(counter: Counter[str], key: str) -> None:
    counter[key] += 1


class CandidateReporter:
    """Reports problems for one session candidate (``ctx.problem`` with ``candidate=n``)."""

    def __init__(self, ctx: ImportContext, candidate: int | None):
        self.ctx = ctx
        self.candidate = candidate
        self._once: set[tuple[str, str]] = set()
        self._aggregated: dict[str, list[Any]] = {}

    def __call__(self, severity: Severity, code: str, message: str, *,
                 line: int | None = None, pointer: str | None = None, count: int = 1) -> None:
        self.ctx.problem(severity, code, message, line=line, pointer=pointer,
                         candidate=self.candidate, count=count)

    def once(self, key: str, severity: Severity, code: str, message: str, *,
             line: int | None = None, pointer: str | None = None) -> None:
        """Report only the first occurrence of ``(code, key)`` for this candidate."""
        if (code, key) in self._once:
            return
        self._once.add((code, key))
        self(severity, code, message, line=line, pointer=pointer)

    def aggregate(self, code: str, message: str, *, line: int | None = None,
                  pointer: str | None = None) -> None:
        """Count an ``info`` problem; :meth:`flush` emits one problem per code with the count."""
        entry = self._aggregated.get(code)
        if entry is None:
            self._aggregated[code] = [message, line, pointer, 1]
        else:
            entry[3] += 1

    def flush(self, messages: dict[str, Callable[[int], str]] | None = None) -> None:
        """Emit the aggregated infos. ``messages[code](count)`` may rewrite the message."""
        for code, (message, line, pointer, count) in self._aggregated.items():
            if messages and code in messages:
                message = messages[code](count)
            self("info", code, message, line=line, pointer=pointer, count=count)
        self._aggregated.clear()
