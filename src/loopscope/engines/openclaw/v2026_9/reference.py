"""The plain reference replay of a session through ``openclaw@2026.9.6`` (shadow mode).

Sessions are read as for every release, with the calls of one message grouped
(:mod:`.session`). Then, per assistant message with tool calls:

1. **admission** (only when ``enabled`` is true): the message's calls are checked together,
   each against the run's history plus a projected loop veto for every earlier call of the
   message; the first critical verdict is an intervention and none of the message's calls
   would run;
2. **verdicts**: without an intervention each call keeps its own verdict (warn or pass);
   with one, the trigger is refused — by its loop detector the first time in the run (OpenClaw
   lets the agent recover once), by ``tool_loop_recovery_terminated`` after that (OpenClaw ends
   the run) — and every other call of the message is ``tool_loop_batch_skipped``;
3. **shadow recording**: the message's calls are recorded as though they ran (only when
   ``enabled`` is true), then every recorded outcome in order; a recorded loop veto counts;
4. **post-compaction guard**: every recorded outcome with a result hash is observed; an abort
   refuses that call's step unless it is already refused.

A user message starts a new run: a fresh guard, and the one-shot recovery is available again.
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
    session_replay,
)
from loopscope.engines.openclaw.shared.upstream import guard_message
from loopscope.engines.openclaw.v2026_9.config import OpenClaw9Config
from loopscope.engines.openclaw.v2026_9.session import (
    CallFacts,
    Message,
    call_facts,
    session_messages,
)
from loopscope.engines.openclaw.v2026_9.upstream import (
    POST_COMPACTION_GUARD,
    RECOVERY,
    TERMINAL,
    TOOL_LOOP_BATCH_SKIPPED,
    TOOL_LOOP_RECOVERY_TERMINATED,
    TOOL_LOOP_RECOVERY_TERMINATED_MESSAGE,
    Admission,
    BatchCall,
    LoopState9,
    WarningBuckets,
    admit_tool_call_batch,
    record_tool_call,
    record_tool_call_outcome,
)
from loopscope.model import Session


def make_step(
    c: CallInput, facts: CallFacts, *, verdict: str = "pass", detector: str | None = None,
    count: int | None = None, after_divergence: bool = False, level: str | None = None,
    message: str | None = None, warning_key: str | None = None, paired_tool: str | None = None,
    guard_abort: bool = False, intervention: str | None = None,
    loop_detector: str | None = None, warning_emitted: bool | None = None,
) -> Step:
    """A 2026.9.6 step: the contract fields, then the OpenClaw fields in a fixed order
    (2026.6.11's, with ``outcome_kind``, ``intervention``, ``loop_detector`` and
    ``warning_emitted``; ``unknown_tool`` and ``recorded_block`` last)."""
    return call_step(
        c, facts.args_hash, verdict, detector, count, after_divergence, {
            "level": level,
            "message": message,
            "warning_key": warning_key,
            "paired_tool": paired_tool,
            "args_hash": facts.args_hash,
            "result_hash": facts.outcome.result_hash,
            "outcome_kind": facts.outcome.outcome_kind,
            "run_id": c.run_id,
            "guard_abort": guard_abort,
            "intervention": intervention,
            "loop_detector": loop_detector,
            "warning_emitted": warning_emitted,
            "unknown_tool": facts.outcome.unknown_tool_name,
            "recorded_block": c.recorded_block,
        })


def _message_steps(calls: Message, facts: list[CallFacts], admission: Admission,
                   critical_seen: bool, aborts: dict[int, int], window: int,
                   diverged: bool) -> list[Step]:
    steps: list[Step] = []
    v = admission.intervention
    for k, (c, f) in enumerate(zip(calls, facts, strict=True)):
        abort = aborts.get(k)
        common: dict[str, Any] = {"after_divergence": diverged, "guard_abort": abort is not None}
        if v is not None:
            kind = TERMINAL if critical_seen else RECOVERY
            if k != admission.trigger:
                step = make_step(c, f, verdict="refuse", detector=TOOL_LOOP_BATCH_SKIPPED,
                                 level="critical", intervention=kind, loop_detector=v.detector,
                                 **common)
            elif critical_seen:
                step = make_step(c, f, verdict="refuse", detector=TOOL_LOOP_RECOVERY_TERMINATED,
                                 count=v.count, level="critical",
                                 message=TOOL_LOOP_RECOVERY_TERMINATED_MESSAGE,
                                 warning_key=v.warning_key, paired_tool=v.paired_tool_name,
                                 intervention=kind, loop_detector=v.detector, **common)
            else:
                step = make_step(c, f, verdict="refuse", detector=v.detector, count=v.count,
                                 level="critical", message=v.message, warning_key=v.warning_key,
                                 paired_tool=v.paired_tool_name, intervention=kind,
                                 loop_detector=v.detector, **common)
        else:
            own, emitted = admission.verdicts[k] if admission.verdicts else (None, None)
            if abort is not None:
                step = make_step(c, f, verdict="refuse", detector=POST_COMPACTION_GUARD,
                                 count=abort, level="critical",
                                 message=guard_message(f.name, abort, window), **common)
            elif own is not None:
                step = make_step(c, f, verdict="warn", detector=own.detector, count=own.count,
                                 level="warning", message=own.message,
                                 warning_key=own.warning_key, paired_tool=own.paired_tool_name,
                                 warning_emitted=emitted, **common)
            else:
                step = make_step(c, f, **common)
        steps.append(step)
        diverged = diverged or step.verdict == "refuse"
    return steps


def replay_session_2026_9(session: Session, config: OpenClaw9Config) -> SessionReplay:
    """The plain reference replay through ``openclaw@2026.9.6``."""
    return replay_with_state(session, config)[0]


def replay_with_state(session: Session, config: OpenClaw9Config
                      ) -> tuple[SessionReplay, LoopState9]:
    """:func:`replay_session_2026_9` and the detector's history at the end (for the
    differential test against the real package)."""
    limits = config.limits
    enabled = config.enabled
    state = LoopState9()
    buckets = WarningBuckets(limits.bucket_size)

    def new_guard() -> PostCompactionGuard:
        return PostCompactionGuard(limits.guard_window, enabled=config.guard_enabled)

    guard = new_guard()
    critical_seen = False
    steps: list[Step] = []
    diverged = False
    for item in session_messages(session):
        if item == USER:
            guard = new_guard()
            critical_seen = False
            continue
        if item == COMPACTION:
            guard.arm()
            continue
        assert isinstance(item, list)
        calls = item
        run_id = calls[0].run_id
        facts = [call_facts(c) for c in calls]
        admission = admit_tool_call_batch(
            state, [BatchCall(f.name, c.params, c.tool_call_id, f.args_hash)
                    for c, f in zip(calls, facts, strict=True)],
            enabled, run_id, buckets, limits)
        if config.detection_on:
            for c, f in zip(calls, facts, strict=True):
                record_tool_call(state, f.name, c.params, c.tool_call_id, run_id, limits,
                                 args_hash=f.args_hash)
        aborts: dict[int, int] = {}
        for k, (c, f) in enumerate(zip(calls, facts, strict=True)):
            record = record_tool_call_outcome(state, f.name, c.params, c.tool_call_id,
                                              run_id=run_id, limits=limits,
                                              args_hash=f.args_hash, outcome=f.outcome)
            if record is not None and record.result_hash:
                observed = guard.observe(record.tool_name, record.args_hash, record.result_hash)
                if observed.should_abort:
                    assert observed.count is not None
                    aborts[k] = observed.count
        message_steps = _message_steps(calls, facts, admission, critical_seen, aborts,
                                       limits.guard_window, diverged)
        steps.extend(message_steps)
        diverged = diverged or any(s.verdict == "refuse" for s in message_steps)
        if admission.intervention is not None:
            critical_seen = True
    return session_replay(session, steps), state
