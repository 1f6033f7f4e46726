"""Assemble one normalized :class:`~loopscope.model.Session` from a format's records.

Format modules describe what they read, in event order (``user``, ``assistant`` + ``call``,
``result``, ``compaction``…); the builder numbers events, turns and calls, parses JSON-text
arguments, pairs results with calls (sessions spec §1.7) and freezes everything. Calls may be
added to a turn after later events were added (Claude Code spreads one message over several
lines): call indices are assigned at ``build`` time, in turn order then position.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from loopscope.model import (
    AgentInfo,
    ArgumentsKind,
    AssistantTurn,
    Compaction,
    Event,
    Origin,
    OtherMessage,
    PairedBy,
    Problem,
    Session,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
    Wrapper,
    escape_for_display,
)

NO_ORIGIN = Origin()

MAX_EVENTS: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "loopscope_max_events_per_session", default=None)
"""Set by the loader to ``ImportLimits.max_events_per_session`` while a file imports."""
TRUNCATIONS: contextvars.ContextVar[list[tuple[int, int]] | None] = contextvars.ContextVar(
    "loopscope_session_truncations", default=None)
"""The loader's sink: each ``build`` of a truncated session appends ``(kept, dropped)``."""


def _default_json_text_parser(text: str) -> tuple[bool, Any]:
    """The serde-compatible loader of engine-gglib §2.2 (shared with the gglib engine)."""
    from loopscope.engines.gglib.serde import parse_serde_json

    return parse_serde_json(text)


@dataclass(eq=False)
class CallDraft:
    name: str
    raw_arguments: Any
    arguments_kind: ArgumentsKind
    id: str | None
    id_synthetic: bool = False
    wrapper: Wrapper | None = None
    turn: TurnDraft | None = None
    position: int = 0
    result_event: int | None = None
    origin: Origin = NO_ORIGIN


@dataclass(eq=False)
class TurnDraft:
    event: int
    text: str
    thinking: str = ""
    content: Any = None
    model: str | None = None
    stop_reason: str | None = None
    error: str | None = None
    synthetic: bool = False
    timestamp: str | None = None
    origin: Origin = NO_ORIGIN
    calls: list[CallDraft] = field(default_factory=list)


@dataclass(eq=False)
class ResultDraft:
    event: int
    call_id: str | None
    content: Any
    text: str
    is_error: bool = False
    details: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = None
    name: str | None = None
    structure_call: CallDraft | None = None
    timestamp: str | None = None
    origin: Origin = NO_ORIGIN


class SessionBuilder:
    """Collects one session candidate's events; ``build`` returns the frozen session."""

    def __init__(self, *, json_text_parser: Callable[[str], tuple[bool, Any]] | None = None,
                 max_events: int | None = None):
        self._events: list[Any] = []  # finished events, TurnDraft or ResultDraft placeholders
        self._turns: list[TurnDraft] = []
        self._parse_json_text = json_text_parser or _default_json_text_parser
        self.timestamps: list[str] = []
        self._max_events = max_events if max_events is not None else MAX_EVENTS.get()
        self.dropped_events = 0
        """Events refused because the session reached ``max_events_per_session``."""

    def _full(self) -> bool:
        """True (and counts a dropped event) when the session may take no more events."""
        if self._max_events is not None and len(self._events) >= self._max_events:
            self.dropped_events += 1
            return True
        return False

    # ----------------------------------------------------------------- adding events

    @property
    def event_count(self) -> int:
        return len(self._events)

    @property
    def call_count(self) -> int:
        return sum(len(t.calls) for t in self._turns)

    def _stamp(self, timestamp: str | None) -> None:
        if timestamp is not None:
            self.timestamps.append(timestamp)

    def user(self, text: str, content: Any = None, *, recorded_role: str = "user",
             timestamp: str | None = None, origin: Origin = NO_ORIGIN) -> None:
        if self._full():
            return
        self._stamp(timestamp)
        self._events.append(UserMessage(len(self._events), text, content, recorded_role, timestamp, origin))

    def system(self, text: str, content: Any = None, *, recorded_role: str = "system",
               timestamp: str | None = None, origin: Origin = NO_ORIGIN) -> None:
        if self._full():
            return
        self._stamp(timestamp)
        self._events.append(SystemMessage(len(self._events), text, content, recorded_role, timestamp, origin))

    def other(self, role: str | None, text: str, content: Any = None, *,
              timestamp: str | None = None, origin: Origin = NO_ORIGIN) -> None:
        if self._full():
            return
        self._stamp(timestamp)
        self._events.append(OtherMessage(len(self._events), role, text, content, timestamp, origin))

    def assistant(self, text: str = "", content: Any = None, *, thinking: str = "",
                  model: str | None = None, stop_reason: str | None = None,
                  error: str | None = None, synthetic: bool = False,
                  timestamp: str | None = None, origin: Origin = NO_ORIGIN) -> TurnDraft:
        full = self._full()
        if not full:
            self._stamp(timestamp)
        turn = TurnDraft(len(self._events), text, thinking, content, model, stop_reason, error,
                         synthetic, timestamp, origin)
        if full:
            return turn  # detached: calls added to it are dropped with it
        self._events.append(turn)
        self._turns.append(turn)
        return turn

    def call(self, turn: TurnDraft, name: Any, raw_arguments: Any,
             arguments_kind: ArgumentsKind, *, id: Any = None, id_synthetic: bool = False,
             wrapper: Wrapper | None = None, origin: Origin = NO_ORIGIN) -> CallDraft:
        """Add a call to ``turn`` (its position is the number of calls it already has)."""
        draft = CallDraft(
            name=name if isinstance(name, str) else "",
            raw_arguments=raw_arguments,
            arguments_kind=arguments_kind,
            id=id if isinstance(id, str) else None,
            id_synthetic=id_synthetic,
            wrapper=wrapper,
            turn=turn,
            position=len(turn.calls),
            origin=origin,
        )
        turn.calls.append(draft)
        return draft

    def result(self, call_id: Any, content: Any, text: str, *, is_error: bool = False,
               details: Mapping[str, Any] | None = None, meta: Mapping[str, Any] | None = None,
               name: str | None = None, structure_call: CallDraft | None = None,
               timestamp: str | None = None, origin: Origin = NO_ORIGIN) -> None:
        """Add a tool result. ``structure_call`` pairs it by structure (sessions spec §1.7)."""
        if self._full():
            return
        self._stamp(timestamp)
        self._events.append(ResultDraft(
            len(self._events), call_id if isinstance(call_id, str) else None, content, text,
            is_error, details, meta, name, structure_call, timestamp, origin,
        ))

    def compaction(self, summary: str = "", *, tokens_before: int | None = None,
                   trigger: str | None = None, first_kept: str | None = None,
                   timestamp: str | None = None, origin: Origin = NO_ORIGIN) -> None:
        if self._full():
            return
        self._stamp(timestamp)
        self._events.append(Compaction(len(self._events), summary, tokens_before, trigger,
                                       first_kept, timestamp, origin))

    def fill_compaction(self, summary: str) -> bool:
        """Set the summary of the last event when it is a compaction without one (Claude Code
        ``compact_boundary`` then its summary line). ``False`` when there is none to fill."""
        if self._events and isinstance(self._events[-1], Compaction) \
                and not self._events[-1].summary:
            last = self._events[-1]
            self._events[-1] = Compaction(last.index, summary, last.tokens_before, last.trigger,
                                          last.first_kept, last.timestamp, last.origin)
            return True
        return False

    # ----------------------------------------------------------------- building

    def build(
        self,
        *,
        id: str,
        source: str,
        format: str,
        title: str | None = None,
        agent: AgentInfo | None = None,
        models: tuple[str, ...] | list[str] = (),
        metadata: Mapping[str, Any] | None = None,
        chat_messages: list[Any] | tuple[Any, ...] | None = None,
        problems: list[Problem] | None = None,
        report: Callable[..., None] | None = None,
    ) -> Session:
        """Freeze the session. ``report(severity, code, message, line=, pointer=)`` receives
        the pairing and argument problems (``bad_arguments``, ``positional_pairing``,
        ``orphan_result``, ``unanswered_calls``)."""
        emit = report or (lambda *a, **k: None)
        if self.dropped_events:
            sink = TRUNCATIONS.get()
            if sink is not None:
                sink.append((len(self._events), self.dropped_events))

        # Call indices: turn order, then position.
        call_index: dict[int, int] = {}
        ordered_calls: list[CallDraft] = []
        for turn in self._turns:
            for call in turn.calls:
                call_index[id_(call)] = len(ordered_calls)
                ordered_calls.append(call)

        pairing = self._pair(ordered_calls, call_index, emit)

        events: list[Event] = []
        turn_number = 0
        bad_arguments = 0
        first_bad: CallDraft | None = None
        for item in self._events:
            if isinstance(item, TurnDraft):
                calls: list[ToolCall] = []
                for call in item.calls:
                    arguments, error = self._arguments(call)
                    if error is not None:
                        bad_arguments += 1
                        first_bad = first_bad or call
                    calls.append(ToolCall(
                        index=call_index[id_(call)], turn=turn_number, position=call.position,
                        id=call.id, name=call.name, raw_arguments=call.raw_arguments,
                        arguments_kind=call.arguments_kind, arguments=arguments,
                        arguments_error=error, id_synthetic=call.id_synthetic,
                        wrapper=call.wrapper, result=call.result_event,
                    ))
                events.append(AssistantTurn(
                    index=item.event, turn=turn_number, text=item.text, tool_calls=tuple(calls),
                    thinking=item.thinking, content=item.content, model=item.model,
                    stop_reason=item.stop_reason, error=item.error, synthetic=item.synthetic,
                    timestamp=item.timestamp, origin=item.origin,
                ))
                turn_number += 1
            elif isinstance(item, ResultDraft):
                paired_call, paired_by = pairing.get(item.event, (None, None))
                events.append(ToolResult(
                    index=item.event, call_id=item.call_id, text=item.text, content=item.content,
                    call_index=None if paired_call is None else call_index[id_(paired_call)],
                    paired_by=paired_by, name=item.name, is_error=item.is_error,
                    details=dict(item.details) if isinstance(item.details, Mapping) else {},
                    meta=dict(item.meta or {}), timestamp=item.timestamp, origin=item.origin,
                ))
            else:
                events.append(item)

        if bad_arguments and first_bad is not None:
            emit("info", "bad_arguments",
                 f"{bad_arguments} tool call argument string(s) are not valid JSON; "
                 "the raw strings were kept as the arguments",
                 line=first_bad.origin.line, pointer=first_bad.origin.pointer, count=bad_arguments)
        unanswered = sum(1 for c in ordered_calls if c.result_event is None)
        if unanswered:
            emit("info", "unanswered_calls", f"{unanswered} tool call(s) have no recorded result",
                 count=unanswered)

        first_user = next((e for e in events if isinstance(e, UserMessage)), None)
        if title is None:
            title = default_title(first_user.text if first_user else "", id)
        distinct_models: list[str] = []
        for m in list(models) + [t.model for t in self._turns if t.model]:
            if m and m not in distinct_models:
                distinct_models.append(m)
        return Session(
            id=id, source=source, format=format, events=tuple(events), title=title,
            agent=agent or AgentInfo(), models=tuple(distinct_models),
            started_at=self.timestamps[0] if self.timestamps else None,
            ended_at=self.timestamps[-1] if self.timestamps else None,
            metadata=dict(metadata or {}), labels={},
            chat_messages=None if chat_messages is None else tuple(chat_messages),
            problems=tuple(problems or ()),
        )

    def _arguments(self, call: CallDraft) -> tuple[Any, str | None]:
        if call.arguments_kind != "json_text":
            return call.raw_arguments, None
        raw = call.raw_arguments
        if not isinstance(raw, str):
            # A format that promised text gave something else: use it as a value.
            return raw, None
        ok, value = self._parse_json_text(raw)
        if ok:
            return value, None
        return raw, str(value)

    def _pair(self, ordered_calls: list[CallDraft], call_index: dict[int, int],
              emit: Callable[..., None]) -> dict[int, tuple[CallDraft | None, PairedBy | None]]:
        """Pair results with calls in event order (sessions spec §1.7)."""
        pairing: dict[int, tuple[CallDraft | None, PairedBy | None]] = {}
        seen_calls: list[CallDraft] = []  # calls of turns already passed, in call order
        block_turn: TurnDraft | None = None  # the turn whose contiguous result block we are in
        for item in self._events:
            if isinstance(item, TurnDraft):
                seen_calls.extend(item.calls)
                block_turn = item
                continue
            if not isinstance(item, ResultDraft):
                block_turn = None
                continue
            if item.structure_call is not None and item.structure_call.result_event is None:
                item.structure_call.result_event = item.event
                pairing[item.event] = (item.structure_call, "structure")
                continue
            match: CallDraft | None = None
            if item.call_id is not None:
                for call in reversed(seen_calls):
                    if call.result_event is None and call.id == item.call_id:
                        match = call
                        break
                if match is not None:
                    match.result_event = item.event
                    pairing[item.event] = (match, "id")
                    continue
            if block_turn is not None:
                match = next((c for c in block_turn.calls if c.result_event is None), None)
                if match is not None:
                    match.result_event = item.event
                    pairing[item.event] = (match, "position")
                    emit("warning", "positional_pairing",
                         f"tool result id {_quote(item.call_id)} matches no call; paired by "
                         f"position with call {_quote(match.id)} ({_quote(match.name)})",
                         line=item.origin.line, pointer=item.origin.pointer)
                    continue
            pairing[item.event] = (None, None)
            emit("warning", "orphan_result",
                 f"tool result id {_quote(item.call_id)} answers no tool call; it was kept as an orphan",
                 line=item.origin.line, pointer=item.origin.pointer)
        return pairing


def id_(obj: object) -> int:
    return id(obj)


def _quote(value: str | None) -> str:
    return "none" if value is None else f'"{escape_for_display(value, 60)}"'


def default_title(first_user_text: str, session_id: str) -> str:
    """The first user message with whitespace collapsed, cut to 80 characters (sessions §1.1)."""
    collapsed = " ".join(first_user_text.split())
    if not collapsed:
        return session_id
    return collapsed if len(collapsed) <= 80 else collapsed[:80] + "…"
