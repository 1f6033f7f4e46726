"""The plain reference replay: one literal :class:`LoopDetectionService` per session, fed the
session's events in order, in shadow mode.

Gemini CLI stops at a detection: the first one in a prompt abandons the model's reply and sends
the recovery feedback (after ``clearDetection()``, same prompt), the second one halts the prompt.
The replay instead keeps feeding the recorded events and calls ``clearDetection()`` after every
detection, exactly as the recovery does, so the service's count keeps growing within a prompt
(1, 2, 3, …) until the next user message resets it.

Steps: one content step per assistant turn that has text or no tool calls (covering all its
pieces), then one step per tool call.
"""

from __future__ import annotations

from typing import Any, Final

from loopscope.engines.base import SessionReplay, Step, first_refusal_of
from loopscope.engines.gemini_cli.config import GeminiConfig
from loopscope.engines.gemini_cli.events import CallItem, ContentItem, PromptItem, session_items
from loopscope.engines.gemini_cli.upstream import (
    Constants,
    Content,
    LoopDetectionService,
    ToolCallRequest,
    tool_call_key,
)
from loopscope.model import Session

__all__ = ["ENGINE_NAME", "constants_of", "intervention", "replay_session", "step_extra"]

ENGINE_NAME: Final = "gemini-cli"
TOOL_CALL_KIND: Final = "tool_call"
CONTENT_KIND: Final = "content"


def constants_of(config: GeminiConfig) -> Constants:
    return Constants(config.tool_call_loop_threshold, config.content_loop_threshold,
                     config.content_chunk_size, config.max_history_length)


def intervention(count: int | None) -> str | None:
    """What Gemini CLI does with a detection: the first in a prompt is recovered from (the
    feedback is sent and the model asked again), any later one halts the prompt."""
    if count is None:
        return None
    return "recovery" if count == 1 else "halt"


def step_extra(kind: str, prompt: int, count: int | None, detail: str | None, detections: int,
               pieces: int | None) -> dict[str, Any]:
    """The engine's own step fields, in their output order."""
    extra: dict[str, Any] = {"kind": kind, "prompt": prompt, "intervention": intervention(count),
                             "detail": detail, "detections": detections}
    if pieces is not None:
        extra["pieces"] = pieces
    return extra


def replay_session(session: Session, config: GeminiConfig) -> SessionReplay:
    service = LoopDetectionService(constants_of(config), disabled=not config.enabled)
    rows: list[tuple[Any, ...]] = []
    prompt = 0
    for item in session_items(session):
        if isinstance(item, PromptItem):
            prompt = item.prompt
            service.reset(f"prompt-{prompt}")
            continue
        if isinstance(item, ContentItem):
            detections = []
            for piece in item.pieces:
                result = service.add_and_check(Content(piece))
                if result.count:
                    detections.append(result)
                    service.clear_detection()
            first = detections[0] if detections else None
            rows.append((item.turn, None, (), None, first,
                         step_extra(CONTENT_KIND, prompt, first.count if first else None,
                                    first.detail if first else None, len(detections),
                                    len(item.pieces))))
        else:
            assert isinstance(item, CallItem)
            result = service.add_and_check(ToolCallRequest(item.name, item.args))
            if result.count:
                service.clear_detection()
            hit = result if result.count else None
            rows.append((item.turn, item.call, (item.name,),
                         f"{item.name}:{tool_call_key(item.name, item.args)}", hit,
                         step_extra(TOOL_CALL_KIND, prompt, hit.count if hit else None,
                                    hit.detail if hit else None, int(bool(hit)), None)))
    steps: list[Step] = []
    diverged = False
    for turn, call, tools, signature, hit, extra in rows:
        steps.append(Step(turn, call, tools, signature, "refuse" if hit else "pass",
                          hit.type if hit else None, hit.count if hit else None, diverged, extra))
        diverged = diverged or hit is not None
    return SessionReplay(session.id, session.source, session.format, ENGINE_NAME, tuple(steps),
                         first_refusal_of(steps))
