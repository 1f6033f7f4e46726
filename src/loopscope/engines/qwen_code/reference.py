"""The reference replay: a session as the events Qwen Code's client feeds its
``LoopDetectionService``, fed to one literal :class:`~.detector.LoopDetectionService` in shadow
mode.

* A user message starts a new prompt: ``reset`` (``LlmClient.sendMessageStream`` resets only when
  an interaction starts; tool-result continuations keep the state). Before the first user
  message the service is in its initial state ("prompt 0").
* An assistant turn streams, as ``turn.ts`` yields them: its thinking as one ``Thought``
  (``subject`` empty, as OpenAI-compatible providers deliver reasoning), its text cut after every
  line feed (one ``Content`` per piece; the structure checks are per line), then one
  ``tool_call_request`` per call with ``name || "undefined_tool_name"`` and ``args || {}``
  (arguments recorded as JSON text are ``JSON.parse``d; the raw string when that fails).
* Each tool call is reduced once to what the guards read (:func:`~.detector.prepare_call`: the
  resolved name, its key, whether it is a git inspection command).
* Each event goes through the always-on tier, then, when that did not fire and
  ``skipLoopDetection`` is false, through the heuristics (``client.ts``).
* Qwen Code halts the prompt at a detection; the replay clears ``loopDetected`` and goes on with
  every other state kept (shadow mode). ``count`` numbers the detections of the prompt.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from loopscope.bulk import memoised_by_json
from loopscope.engines.base import SessionReplay, Step, first_refusal_of
from loopscope.engines.qwen_code.config import QwenConfig
from loopscope.engines.qwen_code.detector import (
    Content,
    LoopDetectionService,
    PreparedCall,
    Thought,
    prepare_call,
    tool_call_key,
)
from loopscope.jsonrules.node_json import js_truthy, json_parse
from loopscope.model import AssistantTurn, Session, ToolCall, UserMessage

__all__ = [
    "ENGINE_NAME",
    "UNDEFINED_TOOL",
    "CallItem",
    "ContentItem",
    "Item",
    "PromptItem",
    "args_of",
    "replay_items",
    "replay_session",
    "session_items",
    "split_pieces",
]

ENGINE_NAME: Final = "qwen-code"
UNDEFINED_TOOL: Final = "undefined_tool_name"
ALWAYS_ON: Final = "always-on"
HEURISTIC: Final = "heuristic"
_AFTER_LINE_FEED: Final = re.compile(r"(?<=\n)")


def split_pieces(text: str) -> tuple[str, ...]:
    """The reply text as streamed pieces: cut after every U+000A, empty pieces dropped."""
    if not text:
        return ()
    return tuple(piece for piece in _AFTER_LINE_FEED.split(text) if piece)


def args_of(arguments_kind: str, raw: Any) -> Any:
    """``fnCall.args || {}`` for arguments recorded as ``raw``."""
    if raw is None:
        return {}
    value = raw
    if arguments_kind == "json_text" and isinstance(raw, str):
        ok, parsed = json_parse(raw)
        value = parsed if ok else raw
    return value if js_truthy(value) else {}


@dataclass(frozen=True, slots=True)
class PromptItem:
    """A user message: prompt number ``prompt`` starts."""

    prompt: int


@dataclass(frozen=True, slots=True)
class ContentItem:
    """The content step of an assistant turn: its thinking and its text pieces."""

    turn: int
    thinking: str
    pieces: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CallItem:
    """One tool call: its recorded-name key (``getToolCallRepeatKey`` of ``name`` and args, the
    step's signature) and what the guards read of it (:func:`~.detector.prepare_call`)."""

    turn: int
    call: int
    name: str
    key: str
    prepared: PreparedCall


Item = PromptItem | ContentItem | CallItem


_SHARED_CALLS_MAX = 50_000
_SHARED_CALLS_MAX_KEY = 512
_SHARED_CALLS: dict[bytes, tuple[Any, tuple[str, PreparedCall]]] = {}
"""Calls across sessions: the :func:`~loopscope.bulk.json_memo_key` of ``(name, arguments
kind, recorded arguments)`` → (that triple, its key and prepared call); bounded."""


def _call_keys(recorded: tuple[str, str, Any]) -> tuple[str, PreparedCall]:
    """A call's key and what the guards read of it, from its name and recorded arguments.
    The key of the call as recorded is the prepared call's key whenever the call is no
    ``tool_call`` envelope (resolving it changes nothing): hashed once, not twice."""
    name, kind, raw = recorded
    args = args_of(kind, raw)
    key = tool_call_key(name, args)
    return key, prepare_call(name, args, key)


def _call_item(turn: int, call: ToolCall,
               memo: dict[bytes, tuple[Any, tuple[str, PreparedCall]]]) -> CallItem:
    """One call's item. Agents repeat their calls, in loops above all: the key and prepared
    call are memoised by the recorded name and arguments, in ``memo`` (the session's) and
    across sessions (:func:`~loopscope.bulk.memoised_by_json`, which reuses a result only for
    an equal recording)."""
    name = call.name or UNDEFINED_TOOL
    key, prepared = memoised_by_json(
        (name, call.arguments_kind, call.raw_arguments), _call_keys, memo, _SHARED_CALLS,
        max_shared_key=_SHARED_CALLS_MAX_KEY, max_shared=_SHARED_CALLS_MAX)
    return CallItem(turn, call.index, name, key, prepared)


def session_items(session: Session) -> Iterator[Item]:
    """The session's steps and prompt starts, in transcript order."""
    memo: dict[bytes, tuple[Any, tuple[str, PreparedCall]]] = {}
    prompt = 0
    for event in session.events:
        if isinstance(event, UserMessage):
            prompt += 1
            yield PromptItem(prompt)
        elif isinstance(event, AssistantTurn):
            if event.text or event.thinking or not event.tool_calls:
                yield ContentItem(event.turn, event.thinking, split_pieces(event.text))
            for call in event.tool_calls:
                yield _call_item(event.turn, call, memo)


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
