"""Shadow-mode replay: every recorded call is fed to the guard as though it ran.

:func:`~..shared.session.session_ops` reads a session into the engine's inputs (run starts,
compactions, one call with its outcome per tool call). :func:`replay_session` is the plain
reference path: for each call it detects,
records the call, records its outcome (always, even after a refusal, so later steps describe the
recorded session) and feeds the guard, driving the literal upstream functions of
:mod:`.upstream` and the guard call by call.
"""

from __future__ import annotations

from typing import Any

from loopscope.engines.base import SessionReplay, Step
from loopscope.engines.openclaw.shared.guard import PostCompactionGuard
from loopscope.engines.openclaw.shared.session import (
    COMPACTION,
    USER,
    CallInput,
    call_step,
    session_ops,
    session_replay,
)
from loopscope.engines.openclaw.v2026_6.config import OpenClawConfig
from loopscope.engines.openclaw.v2026_6.upstream import (
    POST_COMPACTION_GUARD,
    LoopState,
    WarningDeduper,
    detect_tool_call_loop,
    record_tool_call,
    record_tool_call_outcome,
)
from loopscope.model import Session

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
    return call_step(
        c, args_hash, verdict, detector, count, after_divergence, {
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
        })


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
    return session_replay(session, steps)
