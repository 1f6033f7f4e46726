"""The plain reference replay of an OpenAI-chat message list through gglib's guard.

:func:`replay_messages` follows gglib's own request handling literally: for every assistant
turn, the batch goes through ``LoopDetector`` and a reply without tools through
``StagnationDetector`` (the detector classes of :mod:`loopscope.engines.gglib.upstream`), and the
result is one step per turn. It is slow and obviously right; :mod:`.fast` is proven equal to
it by property tests. The step field builders here are shared with the fast path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loopscope.engines.base import FirstRefusal, Step
from loopscope.engines.gglib.config import GglibConfig
from loopscope.engines.gglib.fnv import fnv1a_64, hex16
from loopscope.engines.gglib.upstream import (
    WINDOW_FACTOR,
    LoopDetected,
    LoopDetector,
    StagnationDetected,
    StagnationDetector,
    batch_class_of,
    batch_signature,
    domain_calls,
    extract_text,
    is_costly_batch,
    is_observation_batch,
    message_role,
    previous_reading,
    turn_results_hash,
)

__all__ = ["STEP_FIELDS", "replay_messages"]

STEP_FIELDS: tuple[str, ...] = (
    "turn",
    "call",
    "tools",
    "signature",
    "verdict",
    "detector",
    "count",
    "after_divergence",
    "kind",
    "total",
    "effective_max",
    "ceiling",
    "batch_class",
    "rule",
    "outcome",
    "rescued",
    "identical",
    "not_evaluated",
    "answers_joined",
    "max_steps",
    "window",
    "text_hash",
)
"""All 22 step keys, in output order; every key is present on every step."""


def _batch_extra(
    *,
    total: int,
    effective_max: int,
    ceiling: int | None,
    batch_class: str,
    rule: str | None,
    outcome: str | None,
    rescued: bool,
    identical: bool,
    not_evaluated: bool,
    answers_joined: bool,
) -> dict[str, Any]:
    return {
        "kind": "batch",
        "total": total,
        "effective_max": effective_max,
        "ceiling": ceiling,
        "batch_class": batch_class,
        "rule": rule,
        "outcome": outcome,
        "rescued": rescued,
        "identical": identical,
        "not_evaluated": not_evaluated,
        "answers_joined": answers_joined,
        "max_steps": None,
        "window": None,
        "text_hash": None,
    }


def _prose_extra(max_steps: int, text_hash: str | None) -> dict[str, Any]:
    return {
        "kind": "prose",
        "total": None,
        "effective_max": None,
        "ceiling": None,
        "batch_class": None,
        "rule": None,
        "outcome": None,
        "rescued": False,
        "identical": False,
        "not_evaluated": False,
        "answers_joined": None,
        "max_steps": max_steps,
        "window": max(max_steps * WINDOW_FACTOR, 1),
        "text_hash": text_hash,
    }


# --------------------------------------------------------------------------------------------
# The reference


def replay_messages(
    messages: Sequence[Any], config: GglibConfig
) -> tuple[tuple[Step, ...], FirstRefusal | None]:
    """The plain shadow-mode replay over the detector classes: one step per assistant message,
    tool messages transparent, any other role breaking the run and clearing stagnation, and
    evaluation carrying on past the first refusal with the state the detectors would have."""
    S = config.max_repeated_batch_steps
    O = config.max_observation_steps  # noqa: E741 - short names keep the conditions readable
    patterns = config.observation_tools
    M = config.max_stagnation_steps
    loops = LoopDetector()
    stag = StagnationDetector()
    previous: dict[str, Any] = {}
    turn = -1
    next_call = 0
    first: FirstRefusal | None = None
    steps: list[Step] = []
    n_messages = len(messages)
    for i, m in enumerate(messages):
        role = message_role(m)
        if role == "tool":
            continue
        if role != "assistant":
            loops.break_run()
            stag.clear()
            continue
        turn += 1
        calls = domain_calls(m.get("tool_calls"))
        after = first is not None
        step: Step
        if calls:
            results = turn_results_hash(calls, (messages[j] for j in range(i + 1, n_messages)))
            sig = batch_signature(calls)
            identical, not_evaluated = previous_reading(previous, sig, results)
            observation = is_observation_batch(calls, patterns)
            costly = is_costly_batch(calls)
            try:
                rec = loops.check(calls, S, patterns, O)
            except LoopDetected as e:  # a refusal records nothing
                refused: LoopDetected | None = e
                repeats, total, effective_max, ceiling = (e.count, e.total, e.effective_max,
                                                          e.ceiling)
                outcome, rescued = None, False
            else:
                refused = None
                repeats, total, effective_max, ceiling = (rec.count, rec.total,
                                                          rec.effective_max, rec.ceiling)
                outcome, rescued = loops.record_results(rec, results).value, rec.rescued
            step = Step(
                turn,
                next_call,
                tuple(c.name for c in calls),
                sig,
                "pass" if refused is None else "refuse",
                None if refused is None else "loop",
                repeats,
                after,
                _batch_extra(
                    total=total,
                    effective_max=effective_max,
                    ceiling=ceiling,
                    batch_class=batch_class_of(observation, costly),
                    rule=None if refused is None else refused.rule,
                    outcome=outcome,
                    rescued=rescued,
                    identical=identical,
                    not_evaluated=not_evaluated,
                    answers_joined=results is not None,
                ),
            )
        else:
            text = extract_text(m.get("content"))
            text_hash = hex16(fnv1a_64(text)) if text else None
            try:
                count = stag.record(text, False, M)
            except StagnationDetected as e:
                step = Step(
                    turn, None, (), None, "refuse", "stagnation", e.count, after,
                    _prose_extra(M, text_hash),
                )
            else:
                step = Step(
                    turn, None, (), None, "pass", None, count, after, _prose_extra(M, text_hash)
                )
        if step.verdict == "refuse" and first is None:
            first = FirstRefusal(step.turn, step.call, step.detector or "")
        steps.append(step)
        next_call += len(calls)
    return tuple(steps), first


