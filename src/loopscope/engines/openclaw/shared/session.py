"""A recorded session as OpenClaw's engine consumes it: runs, compactions and calls.

Every release reads sessions the same way: a user message starts a run, a compaction arms the
post-compaction guard, and each tool call is paired with its outcome by call id (never by
position, as OpenClaw pairs them). A release adds only what it reads differently on top
(2026.9.6's intervention texts, for instance).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from loopscope.engines.base import SessionReplay, Step, first_refusal_of
from loopscope.engines.openclaw.shared.hashing import is_loop_veto
from loopscope.jsonrules.javascript import UNDEFINED, js_json_parse
from loopscope.model import AssistantTurn, Compaction, Session, ToolCall, ToolResult, UserMessage

ENGINE_NAME: Final = "openclaw"

OPENCLAW_FORMAT: Final = "openclaw_session"

USER: Final = "user"
"""Op marker: a user message starts a new run (and a fresh, unarmed guard)."""

COMPACTION: Final = "compaction"
"""Op marker: a compaction arms the current run's guard."""

BLOCK_MARKERS: Final = (
    "session execution blocked to prevent runaway loops",
    "session execution blocked by global circuit breaker",
    "compaction_loop_persisted",
)
"""Phrases that identify an upstream loop block in a recorded result's text (older builds threw
the block message as an error, so only the free text shows it)."""


@dataclass(frozen=True, slots=True)
class CallInput:
    """Everything the engine needs about one tool call: name (verbatim), params, id, run, outcome."""

    turn: int
    call: int
    name: str
    params: Any
    tool_call_id: str | None
    run: int
    """``k`` of the run id ``run-<k>``: user messages seen before this call."""
    result: Any = UNDEFINED
    """The outcome passed as ``result`` (:data:`UNDEFINED` when none)."""
    error: Any = UNDEFINED
    """The outcome passed as ``error`` (a string; :data:`UNDEFINED` when none)."""
    recorded_block: bool = False
    """The recorded result is an upstream loop block (veto or marker phrase)."""

    @property
    def run_id(self) -> str:
        return f"run-{self.run}"

Op = CallInput | str


def call_params(call: ToolCall) -> Any:
    """The call's params: JSON text parsed with ``JSON.parse`` rules (the raw string when it
    does not parse), other values as recorded, ``{}`` when no arguments were recorded."""
    raw = call.raw_arguments
    if raw is None:
        return {}
    if call.arguments_kind == "json_text" and isinstance(raw, str):
        ok, value = js_json_parse(raw)
        return value if ok else raw
    return raw


def _outcome(result: ToolResult | None, openclaw: bool) -> tuple[Any, Any, bool]:
    """``(result, error, recorded_block)`` of a call whose paired result is ``result``."""
    if result is None:
        return UNDEFINED, UNDEFINED, False
    lowered = result.text.lower()
    marker = any(phrase in lowered for phrase in BLOCK_MARKERS)
    if result.is_error:
        return UNDEFINED, result.text, marker
    if openclaw:
        details = result.details if isinstance(result.details, Mapping) else {}
        return ({"content": result.content, "details": details}, UNDEFINED,
                marker or is_loop_veto(details))
    return ({"content": [{"type": "text", "text": result.text}], "details": {}}, UNDEFINED,
            marker)


def session_ops(session: Session) -> list[Op]:
    """The session as the engine consumes it, in transcript order: :data:`USER`,
    :data:`COMPACTION` and one :class:`CallInput` per call. Only user events start a run;
    system and other messages are ignored, so injected context never resets the counts."""
    events = session.events
    results_by_id: dict[str, list[int]] = {}
    for event in events:
        if isinstance(event, ToolResult) and event.call_id is not None:
            results_by_id.setdefault(event.call_id, []).append(event.index)
    openclaw = session.format == OPENCLAW_FORMAT
    ops: list[Op] = []
    run = 0
    for event in events:
        if isinstance(event, UserMessage):
            run += 1
            ops.append(USER)
        elif isinstance(event, Compaction):
            ops.append(COMPACTION)
        elif isinstance(event, AssistantTurn):
            for call in event.tool_calls:
                paired = _paired_result(call, event, events, results_by_id)
                result, error, blocked = _outcome(paired, openclaw)
                ops.append(CallInput(event.turn, call.index, call.name, call_params(call),
                                     call.id, run, result, error, blocked))
    return ops


def _paired_result(call: ToolCall, turn: AssistantTurn, events: tuple[Any, ...],
                   results_by_id: dict[str, list[int]]) -> ToolResult | None:
    """The first result after the call's turn that carries its id; a result paired by
    structure is its call's outcome. Never by position: OpenClaw pairs a call with its
    outcome by the call id."""
    if call.result is not None:
        paired = events[call.result]
        if isinstance(paired, ToolResult) and paired.paired_by == "structure":
            return paired
    if call.id is None:
        return None
    candidates = results_by_id.get(call.id)
    if not candidates:
        return None
    at = bisect_right(candidates, turn.index)
    if at >= len(candidates):
        return None
    found = events[candidates[at]]
    return found if isinstance(found, ToolResult) else None


def call_step(c: CallInput, signature: str, verdict: str, detector: str | None,
              count: int | None, after_divergence: bool, extra: dict[str, Any]) -> Step:
    """The step of call ``c``: the contract fields, then the release's OpenClaw fields
    (``extra``, in the release's output order)."""
    return Step(
        turn=c.turn, call=c.call, tools=(c.name,), signature=signature,
        verdict=verdict,  # type: ignore[arg-type]
        detector=detector, count=count, after_divergence=after_divergence, extra=extra,
    )


def session_replay(session: Session, steps: list[Step]) -> SessionReplay:
    """A session's replay by the ``openclaw`` engine from its steps, in call order."""
    return SessionReplay(
        session=session.id, source=session.source, format=session.format, engine=ENGINE_NAME,
        steps=tuple(steps), first_refusal=first_refusal_of(steps),
    )
