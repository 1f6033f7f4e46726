"""The reference replay: a session's events (:mod:`.events`) fed to one literal
:class:`~.upstream.LoopDetectionService` in shadow mode, and nothing else.

* Each event goes through the always-on tier, then, when that did not fire and
  ``skipLoopDetection`` is false, through the heuristics (``client.ts``).
* Qwen Code halts the prompt at a detection; the replay clears ``loopDetected`` and goes on with
  every other state kept (shadow mode), so every later detection is seen too. ``count``
  numbers the detections of the prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from loopscope.engines.base import SessionReplay, Step, first_refusal_of
from loopscope.engines.qwen_code.config import QwenConfig
from loopscope.engines.qwen_code.events import (
    CallItem,
    ContentItem,
    Item,
    PromptItem,
    session_items,
)
from loopscope.engines.qwen_code.upstream import Content, LoopDetectionService, Thought
from loopscope.model import Session

__all__ = ["ENGINE_NAME", "replay_items", "replay_session", "service_for"]

ENGINE_NAME: Final = "qwen-code"
ALWAYS_ON: Final = "always-on"
HEURISTIC: Final = "heuristic"


def service_for(config: QwenConfig) -> LoopDetectionService:
    return LoopDetectionService(config.constants, skip=config.skip_loop_detection,
                                cap=config.max_tool_calls_per_turn, explicit=config.explicit)


def _feed(service: LoopDetectionService, event: Any) -> tuple[str, str] | None:
    """One event through both tiers, as ``client.ts`` does; ``(type, tier)`` of a detection
    (then cleared: shadow mode)."""
    if service.check_always_on_safeties(event):
        service.loop_detected = False
        return service.last_loop_type or "", ALWAYS_ON
    if not service.skip and service.add_and_check_heuristic_loops(event):
        service.loop_detected = False
        return service.last_loop_type or "", HEURISTIC
    return None


def replay_items(items: Sequence[Item], config: QwenConfig, session: str, source: str,
                 fmt: str) -> SessionReplay:
    """The shadow replay of prepared items."""
    service = service_for(config)
    prompt = 0
    in_prompt = 0
    steps: list[Step] = []
    diverged = False
    for item in items:
        if isinstance(item, PromptItem):
            prompt = item.prompt
            in_prompt = 0
            service.reset(f"prompt-{prompt}")
            continue
        hits: list[tuple[str, str]] = []
        tools: tuple[str, ...]
        if isinstance(item, ContentItem):
            events: list[Any] = []
            if item.thinking:
                events.append(Thought("", item.thinking))
            events.extend(Content(piece) for piece in item.pieces)
            for event in events:
                hit = _feed(service, event)
                if hit is not None:
                    hits.append(hit)
            turn, call, tools, signature = item.turn, None, (), None
            extra: dict[str, Any] = {"kind": "content"}
        else:
            assert isinstance(item, CallItem)
            hit = _feed(service, item.prepared)
            if hit is not None:
                hits.append(hit)
            turn, call, tools = item.turn, item.call, (item.name,)
            signature = f"{item.name}:{item.key}"
            extra = {"kind": "tool_call"}
        count = in_prompt + 1 if hits else None
        in_prompt += len(hits)
        first = hits[0] if hits else None
        extra.update({
            "prompt": prompt,
            "intervention": None if first is None else ("halt" if count == 1 else "shadow"),
            "tier": first[1] if first else None,
            "detections": len(hits),
            "turn_calls": service.turn_tool_call_total,
        })
        steps.append(Step(turn, call, tools, signature, "refuse" if first else "pass",
                          first[0] if first else None, count, diverged, extra))
        diverged = diverged or first is not None
    return SessionReplay(session, source, fmt, ENGINE_NAME, tuple(steps), first_refusal_of(steps))


def replay_session(session: Session, config: QwenConfig) -> SessionReplay:
    return replay_items(tuple(session_items(session)), config, session.id, session.source,
                        session.format)
