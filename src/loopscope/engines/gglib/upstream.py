"""The gglib loop guard, ported exactly: the upstream rules and nothing of loopscope's replay.

The plain, readable port: ``stable_repr`` (the canonical argument text), signatures, results
hashes, classifiers, the two detectors and the upstream proxy walk ``scan_history``. It is kept
literal so that it can be read side by side with gglib's source; the shadow-mode replay built on
it is :mod:`loopscope.engines.gglib.reference` (and its fast twin :mod:`.fast`).
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from loopscope.engines.gglib.fnv import fnv1a_64, hex16
from loopscope.jsonrules.serde_json import (
    SCALAR_WRITERS,
    SerdeJsonError,
    compact_json,
    json_string,
    parse_json_serde,
    write_scalar,
)

__all__ = [
    "COSTLY_OBSERVATION_TOOLS",
    "DEPTH_SENTINEL",
    "MAX_REPR_DEPTH",
    "WINDOW_FACTOR",
    "BatchRecord",
    "LoopDetected",
    "LoopDetector",
    "RepeatOutcome",
    "ResultsHash",
    "Run",
    "ScanOutcome",
    "StagnationDetected",
    "StagnationDetector",
    "ToolCall",
    "batch_class_of",
    "batch_results_hash",
    "batch_signature",
    "call_segments_costly",
    "domain_calls",
    "extract_text",
    "hash_result_content",
    "hash_result_text",
    "is_costly_batch",
    "is_costly_name",
    "is_observation_batch",
    "is_observation_name",
    "message_role",
    "previous_reading",
    "read_arguments",
    "scan_history",
    "stable_repr",
    "tool_signature",
    "turn_results_hash",
]

COSTLY_OBSERVATION_TOOLS: tuple[str, ...] = ("navigate", "click", "fetch_webpage")
WINDOW_FACTOR = 4

Answer = tuple[int, str]
"""One tagged answer: ``(0, text)`` for a string content, ``(1, compact_json)`` otherwise."""
ResultsHash = tuple[tuple[str, Answer], ...]
"""An opaque, injective results hash: the sorted ``(key, answer)`` pairs. Upstream only ever
compares these for equality, so any injective encoding keeps its verdicts."""


# --------------------------------------------------------------------------------------------
# Canonical argument text

MAX_REPR_DEPTH = 16
DEPTH_SENTINEL = '"..."'


def stable_repr(value: Any, depth: int = 0) -> str:
    """gglib's canonical rendering: no whitespace, object keys sorted by code point, strings and
    numbers as serde_json writes them, and every value at depth :data:`MAX_REPR_DEPTH` or deeper
    (scalars too) replaced by the ``"..."`` sentinel, so all nests of 16 or more levels collide
    upstream. Signatures and results keys hash this text, so two arguments are the same call
    exactly when their renderings are equal."""
    if depth >= MAX_REPR_DEPTH:
        return DEPTH_SENTINEL
    write = SCALAR_WRITERS.get(type(value))
    if write is not None:
        return write(value)
    d = depth + 1
    if isinstance(value, dict):
        if not value:
            return "{}"
        return (
            "{"
            + ",".join(
                json_string(k) + ":" + stable_repr(value[k], d) for k in sorted(value)
            )
            + "}"
        )
    if isinstance(value, list | tuple):
        return "[" + ",".join(stable_repr(v, d) for v in value) + "]"
    text = write_scalar(value)  # (a subclass of a scalar type)
    if text is not None:
        return text
    raise TypeError(f"not a JSON value: {type(value).__name__}")


# --------------------------------------------------------------------------------------------
# Calls: the reader never rejects anything


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: Any


def read_arguments(raw: Any) -> Any:
    """A JSON-string ``arguments`` parsed with the serde loader, else the raw string; any other
    value as it is (an absent one is None, not ``{}``, as in gglib's loop guard)."""
    if isinstance(raw, str):
        try:
            return parse_json_serde(raw)
        except SerdeJsonError:
            return raw
    return raw


def read_call(element: Any) -> ToolCall:
    function = None
    call_id = ""
    if isinstance(element, dict):
        f = element.get("function")
        if isinstance(f, dict):
            function = f
        i = element.get("id")
        if isinstance(i, str):
            call_id = i
    if function is None:
        return ToolCall(call_id, "", None)
    name = function.get("name")
    return ToolCall(
        call_id,
        name if isinstance(name, str) else "",
        read_arguments(function.get("arguments")),
    )


def domain_calls(tool_calls: Any) -> list[ToolCall]:
    """Every element of an array ``tool_calls`` as a call; anything else reads as no calls."""
    if not isinstance(tool_calls, list):
        return []
    return [read_call(c) for c in tool_calls]


# --------------------------------------------------------------------------------------------
# Signatures: ``name:hex16(fnv1a_64(stable_repr(arguments)))``, sorted and joined with ``|``


def tool_signature(call: ToolCall) -> str:
    return call.name + ":" + hex16(fnv1a_64(stable_repr(call.arguments)))


def batch_signature(calls: Sequence[ToolCall]) -> str:
    return "|".join(sorted(tool_signature(c) for c in calls))


# --------------------------------------------------------------------------------------------
# Results hashing: only equality of the answers matters


def hash_result_text(text: str) -> Answer:
    return (0, text)


def hash_result_content(content: Any) -> Answer:
    if isinstance(content, str):
        return (0, content)
    return (1, compact_json(content))


_MISSING: Any = object()


def batch_results_hash(
    calls: Sequence[ToolCall], answers: Sequence[Answer | None]
) -> ResultsHash | None:
    """The sorted ``(name NUL stable_repr(arguments), answer)`` pairs; None if unjoinable."""
    if len(answers) != len(calls):
        return None
    if any(a is None for a in answers):
        return None
    pairs = [
        (c.name + "\x00" + stable_repr(c.arguments), a)
        for c, a in zip(calls, answers, strict=True)
        if a is not None
    ]
    return tuple(sorted(pairs))


def turn_results_hash(calls: Sequence[ToolCall], following: Iterable[Any]) -> ResultsHash | None:
    """Join a batch with the contiguous tool messages right after it, by ``tool_call_id``.

    Only that window counts, never a session-wide id map, because gglib mints ids such as
    ``call_qwen_0`` that restart on every response. A duplicated id on either side makes the
    answers unattributable (None)."""
    answers: dict[str, Answer] = {}
    for m in following:
        if not isinstance(m, dict) or m.get("role") != "tool":
            break
        tcid = m.get("tool_call_id")
        if not isinstance(tcid, str):
            continue
        if tcid in answers:
            return None
        answers[tcid] = hash_result_content(m.get("content"))
    ids = [c.id for c in calls]
    if len(set(ids)) != len(ids):
        return None
    return batch_results_hash(calls, [answers.get(i) for i in ids])


# --------------------------------------------------------------------------------------------
# Classifiers: observation = every name holds a pattern; costly = any name holds a costly one's
# segments (the costly words are built in, so they also bound a user's own pattern list)


def is_observation_name(name: str, lowered_patterns: Sequence[str]) -> bool:
    low = name.lower()
    return any(p in low for p in lowered_patterns)


def is_observation_batch(calls: Sequence[ToolCall], patterns: Sequence[str]) -> bool:
    if not patterns:
        return False
    lowered = [p.lower() for p in patterns]
    return all(is_observation_name(c.name, lowered) for c in calls)


def _segments(text: str) -> list[str]:
    return [s for s in text.lower().replace("-", "_").replace(".", "_").split("_") if s]


_COSTLY_SEGMENTS = tuple(tuple(_segments(p)) for p in COSTLY_OBSERVATION_TOOLS)


def call_segments_costly(segments: Sequence[str]) -> bool:
    n = len(segments)
    for pat in _COSTLY_SEGMENTS:
        k = len(pat)
        for start in range(n - k + 1):
            if tuple(segments[start : start + k]) == pat:
                return True
    return False


def is_costly_name(name: str) -> bool:
    return call_segments_costly(_segments(name))


def is_costly_batch(calls: Sequence[ToolCall]) -> bool:
    return any(is_costly_name(c.name) for c in calls)


def batch_class_of(observation: bool, costly: bool) -> str:
    if not observation:
        return "mutating"
    return "costly_observation" if costly else "observation"


# --------------------------------------------------------------------------------------------
# LoopDetector


class RepeatOutcome(enum.Enum):
    NOT_THE_CURRENT_RUN = "not_the_current_run"
    ANSWER_CHANGED = "answer_changed"
    ANSWER_REPEATED = "answer_repeated"
    NOT_COMPARABLE = "not_comparable"


@dataclass(slots=True)
class Run:
    signature: str
    count: int
    total: int
    last_answers: Any = None


@dataclass(slots=True)
class BatchRecord:
    """What a passing ``check`` returns; it can be recorded once (upstream's types forbid twice)."""

    signature: str
    rescued: bool
    count: int
    total: int
    effective_max: int
    ceiling: int | None
    observation: bool
    costly: bool
    consumed: bool = False


class LoopDetected(Exception):
    def __init__(
        self,
        signature: str,
        *,
        count: int = 0,
        total: int = 0,
        effective_max: int = 0,
        ceiling: int | None = None,
        observation: bool = False,
        costly: bool = False,
    ) -> None:
        super().__init__(signature)
        self.signature = signature
        self.count = count
        self.total = total
        self.effective_max = effective_max
        self.ceiling = ceiling
        self.observation = observation
        self.costly = costly
        self.rule = "strike" if count > effective_max else "ceiling"


class LoopDetector:
    """At most one run of one batch signature; refuses too many occurrences."""

    __slots__ = ("run",)

    def __init__(self) -> None:
        self.run: Run | None = None

    def check(
        self,
        calls: Sequence[ToolCall],
        max_strikes: int,
        observation_tools: Sequence[str],
        max_observation_steps: int | None,
    ) -> BatchRecord:
        observation = is_observation_batch(calls, observation_tools)
        costly = is_costly_batch(calls)
        return self.check_signature(
            batch_signature(calls), observation, costly, max_strikes, max_observation_steps
        )

    def check_signature(
        self,
        sig: str,
        observation: bool,
        costly: bool,
        max_strikes: int,
        max_observation_steps: int | None,
    ) -> BatchRecord:
        """``check`` with the classification and signature already computed."""
        observation_max = (
            max_observation_steps if max_observation_steps is not None else max_strikes
        )
        effective_max = observation_max if observation else max_strikes
        exempt = observation and max_observation_steps is not None and not costly
        ceiling = max(observation_max, max_strikes)
        run = self.run
        if run is not None and run.signature == sig:
            run.count += 1
            run.total += 1
        else:
            run = self.run = Run(sig, 1, 1, None)
        shown_ceiling = None if exempt else ceiling
        if run.count > effective_max or (not exempt and run.total > ceiling):
            raise LoopDetected(
                sig,
                count=run.count,
                total=run.total,
                effective_max=effective_max,
                ceiling=shown_ceiling,
                observation=observation,
                costly=costly,
            )
        return BatchRecord(
            sig,
            run.total > effective_max,
            run.count,
            run.total,
            effective_max,
            shown_ceiling,
            observation,
            costly,
        )

    def record_results(self, record: BatchRecord, answers: Any) -> RepeatOutcome:
        if record.consumed:
            raise ValueError("BatchRecord already recorded")
        record.consumed = True
        run = self.run
        if run is None or run.signature != record.signature:
            return RepeatOutcome.NOT_THE_CURRENT_RUN
        prev = run.last_answers
        if prev is not None and answers is not None:
            if prev != answers:
                run.count = 1
                outcome = RepeatOutcome.ANSWER_CHANGED
            else:
                outcome = RepeatOutcome.ANSWER_REPEATED
        else:
            outcome = RepeatOutcome.NOT_COMPARABLE
        run.last_answers = answers
        return outcome

    def break_run(self) -> None:
        self.run = None


# --------------------------------------------------------------------------------------------
# StagnationDetector: the same prose reply too often within a window of recent replies


class StagnationDetected(Exception):
    def __init__(self, repeated_text_hash: str, count: int, max_steps: int) -> None:
        super().__init__(f"same response {count} times (limit {max_steps})")
        self.repeated_text_hash = repeated_text_hash
        self.count = count
        self.max_steps = max_steps


class StagnationDetector:
    __slots__ = ("recent",)

    def __init__(self) -> None:
        self.recent: deque[int] = deque()

    def record(self, text: str, made_tool_calls: bool, max_steps: int) -> int | None:
        """Record a prose reply; the window count, or None when nothing was recorded."""
        if made_tool_calls or text == "":
            return None
        return self.record_hash(fnv1a_64(text), max_steps)

    def record_hash(self, h: int, max_steps: int) -> int:
        window = max(max_steps * WINDOW_FACTOR, 1)
        recent = self.recent
        recent.append(h)
        while len(recent) > window:
            recent.popleft()
        count = recent.count(h)
        if count > max_steps:
            raise StagnationDetected(hex16(h), count, max_steps)
        return count

    def clear(self) -> None:
        self.recent.clear()


# --------------------------------------------------------------------------------------------
# The proxy walk


def extract_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p["text"]
            for p in content
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        )
    return ""


def message_role(m: Any) -> str | None:
    """A message's ``role`` when it is a string, else None: the proxy reads roles this way, so a
    message with no usable role breaks a run like any message that is neither the assistant's
    nor a tool's."""
    role = m.get("role") if isinstance(m, dict) else None
    return role if isinstance(role, str) else None


def previous_reading(previous: dict[str, ResultsHash | None], signature: str,
                     results: ResultsHash | None) -> tuple[bool, bool]:
    """The proxy's ``previous`` readings for a batch: ``(identical, not_evaluated)``. The batch's
    answers are compared with those last recorded for the same signature (anywhere earlier in
    the history, not only the turn before), then recorded in their place. Answers that cannot
    be joined to their calls cannot be compared, which the proxy reports as not evaluated
    rather than as a change."""
    had = signature in previous
    seen = previous.get(signature)
    previous[signature] = results
    identical = had and seen is not None and results is not None and seen == results
    not_evaluated = had and (seen is None or results is None)
    return identical, not_evaluated


@dataclass(frozen=True, slots=True)
class ScanOutcome:
    """What upstream's ``scan_history`` returns: a verdict plus the three readings."""

    verdict: str
    """``"pass"``, ``"loop"`` or ``"stagnation"``."""
    identical_result_repeat: bool
    repeat_not_evaluated: bool
    repeat_rescued: bool
    signature: str | None = None
    """The batch signature of a loop trip."""
    count: int | None = None
    """The count of a stagnation trip."""
    max_steps: int | None = None
    """The threshold of a stagnation trip."""


def scan_history(messages: Sequence[Any], config: Any) -> ScanOutcome:
    """The upstream proxy walk: fresh detectors, one pass, stop at the first trip.

    ``config`` is anything with the four attributes of
    :class:`~loopscope.engines.gglib.config.GglibConfig`.
    """
    strikes = config.max_repeated_batch_steps
    patterns = config.observation_tools
    obs = config.max_observation_steps
    stag_max = config.max_stagnation_steps
    loops = LoopDetector()
    stag = StagnationDetector()
    previous: dict[str, Any] = {}
    identical = not_evaluated = rescued = False
    for i, m in enumerate(messages):
        role = message_role(m)
        if role == "tool":
            continue
        if role != "assistant":
            identical = not_evaluated = rescued = False
            loops.break_run()
            stag.clear()
            continue
        assert isinstance(m, dict)
        calls = domain_calls(m.get("tool_calls"))
        results: Any = None
        if not calls:
            identical = not_evaluated = rescued = False
        else:
            results = turn_results_hash(calls, (messages[j] for j in range(i + 1, len(messages))))
            identical, not_evaluated = previous_reading(previous, batch_signature(calls), results)
        try:
            stag.record(extract_text(m.get("content")), len(calls) > 0, stag_max)
        except StagnationDetected as e:
            return ScanOutcome(
                "stagnation", identical, not_evaluated, False, count=e.count, max_steps=e.max_steps
            )
        if calls:
            try:
                rec = loops.check(calls, strikes, patterns, obs)
            except LoopDetected as e:
                return ScanOutcome("loop", identical, not_evaluated, False, signature=e.signature)
            rescued = rec.rescued
            loops.record_results(rec, results)
    return ScanOutcome("pass", identical, not_evaluated, rescued)
