"""Shadow-mode replay: every recorded call is fed to the guard as though it ran.

:func:`session_ops` reads a :class:`~loopscope.model.Session` into the engine's inputs: run starts
(each user message), compactions, and one :class:`CallInput` per tool call with its params and
its outcome. :func:`replay_session` is the plain reference path: for each call it detects,
records the call, records its outcome (always, even after a refusal, so later steps describe the
recorded session) and feeds the guard, driving the literal upstream functions of
:mod:`.detection` and the guard call by call.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from loopscope.engines.base import SessionReplay, Step, first_refusal_of
from loopscope.engines.openclaw.config import OpenClawConfig
from loopscope.engines.openclaw.detection import (
    POST_COMPACTION_GUARD,
    LoopState,
    WarningDeduper,
    detect_tool_call_loop,
    record_tool_call,
    record_tool_call_outcome,
)
from loopscope.engines.openclaw.guard import PostCompactionGuard
from loopscope.engines.openclaw.hashing import is_loop_veto
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


# --------------------------------------------------------------------------- steps


def make_step(
    c: CallInput, args_hash: str, *, verdict: str = "pass", detector: str | None = None,
    count: int | None = None, after_divergence: bool = False, level: str | None = None,
    message: str | None = None, warning_key: str | None = None, paired_tool: str | None = None,
    result_hash: str | None = None, guard_abort: bool = False, unknown_tool: str | None = None,
    warning_emitted: bool | None = None,
) -> Step:
    """A step with every OpenClaw field: the contract fields, then ``extra`` in output order
    (optional ``unknown_tool``, ``warning_emitted`` and ``recorded_block`` last)."""
    return Step(
        turn=c.turn, call=c.call, tools=(c.name,), signature=args_hash,
        verdict=verdict,  # type: ignore[arg-type]
        detector=detector, count=count, after_divergence=after_divergence,
        extra={
            "level": level,
            "message": message,
            "warning_key": warning_key,
            "paired_tool": paired_tool,
            "args_hash": args_hash,
            "result_hash": result_hash,
            "run_id": c.run_id,
            "guard_abort": guard_abort,
            "unknown_tool": unknown_tool,
            "warning_emitted": warning_emitted,
            "recorded_block": c.recorded_block,
        },
    )


def replay_session(session: Session, config: OpenClawConfig) -> SessionReplay:
    """The plain reference replay, one literal upstream call sequence per tool call."""
    block = config.block
    resolved = config.resolved
    state = LoopState()
    deduper = WarningDeduper()
    guard = PostCompactionGuard(resolved.guard_window_size, enabled=resolved.guard_enabled)
    steps: list[Step] = []
    diverged = False
    for op in session_ops(session):
        if op == USER:
            guard = PostCompactionGuard(resolved.guard_window_size, enabled=resolved.guard_enabled)
            continue
        if op == COMPACTION:
            guard.arm()
            continue
        assert isinstance(op, CallInput)
        c = op
        run_id = c.run_id
        verdict = detect_tool_call_loop(state, c.name, c.params, block, run_id)
        record = record_tool_call(state, c.name, c.params, c.tool_call_id, block, run_id)
        outcome = record_tool_call_outcome(state, c.name, c.params, c.tool_call_id, c.result,
                                           c.error, block, run_id)
        abort = None
        if outcome is not None and outcome.result_hash:
            observation = guard.observe(outcome.tool_name, outcome.args_hash, outcome.result_hash)
            if observation.should_abort:
                abort = observation
        emitted: bool | None = None
        if verdict is not None and verdict.level == "warning":
            # Upstream logs (and de-duplicates) the warning before the call runs, so the bucket
            # map advances even when the guard then aborts on this call's outcome.
            emitted = deduper.should_emit(verdict.warning_key, verdict.detector, c.name,
                                          verdict.count, run_id)
        common: dict[str, Any] = {"after_divergence": diverged, "result_hash": record.result_hash,
                  "unknown_tool": record.unknown_tool_name, "guard_abort": abort is not None}
        if verdict is not None and verdict.critical:
            step = make_step(c, record.args_hash, verdict="refuse", detector=verdict.detector,
                             count=verdict.count, level="critical", message=verdict.message,
                             warning_key=verdict.warning_key,
                             paired_tool=verdict.paired_tool_name, **common)
        elif abort is not None:
            step = make_step(c, record.args_hash, verdict="refuse",
                             detector=POST_COMPACTION_GUARD, count=abort.count,
                             level="critical", message=abort.message, **common)
        elif verdict is not None:
            step = make_step(c, record.args_hash, verdict="warn", detector=verdict.detector,
                             count=verdict.count, level="warning", message=verdict.message,
                             warning_key=verdict.warning_key,
                             paired_tool=verdict.paired_tool_name, warning_emitted=emitted,
                             **common)
        else:
            step = make_step(c, record.args_hash, **common)
        steps.append(step)
        diverged = diverged or step.verdict == "refuse"
    return SessionReplay(
        session=session.id, source=session.source, format=session.format, engine=ENGINE_NAME,
        steps=tuple(steps), first_refusal=first_refusal_of(steps),
    )
