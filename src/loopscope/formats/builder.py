"""Assemble one normalized :class:`~loopscope.model.Session` from a format's records.

Format modules describe what they read, in event order (``user``, ``assistant`` + ``call``,
``result``, ``compaction``…); the builder numbers events, turns and calls, parses JSON-text
arguments, pairs results with calls (by id, else by position right after the turn, else
orphan) and freezes everything. Calls may be added to a turn after later events were added
(Claude Code spreads one message over several lines): call indices are then assigned at
``build`` time, in turn order then position, and results paired there in event order.

Most formats add each call to the newest event, their turn, before anything follows it. Calls
are then numbered as they come, and each result is paired and frozen as it comes: the same
numbers and pairs as at ``build`` (the calls of every turn before a result are complete when it
arrives), without a draft per result or a second walk over the events. The first call added to
an older turn switches the session back to pairing at ``build``.
"""

from __future__ import annotations

import contextvars
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loopscope.formats._construct import positional_constructor
from loopscope.formats.tally import IMPORTED_CALLS
from loopscope.model import (
    AgentInfo,
    ArgumentsKind,
    AssistantTurn,
    Compaction,
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
from loopscope.words import plural

NO_ORIGIN = Origin()

# The events are built through positional constructors: every field, in the model's order
# (``kind`` last). See ``_construct``: a frozen dataclass's own __init__ was the largest single
# cost of ingest.
_new_user = positional_constructor(UserMessage)
_new_system = positional_constructor(SystemMessage)
_new_other = positional_constructor(OtherMessage)
_new_turn = positional_constructor(AssistantTurn)
_new_call = positional_constructor(ToolCall)
_new_result = positional_constructor(ToolResult)
_new_compaction = positional_constructor(Compaction)

new_origin: Callable[[int | None, str | None], Origin] = positional_constructor(Origin)
"""``Origin(line, pointer)``, built faster: importers make one per message and per block."""

# Origins are frozen and sessions share most of theirs (line 7, /messages/12/content/0): one
# object each, for every session, instead of an origin and a pointer per message and result.
_SHARED_ORIGINS: dict[Any, Origin] = {}
_SHARED_ORIGINS_MAX = 1 << 16


def line_origin(line: int) -> Origin:
    """``Origin(line)``, shared (see above)."""
    found = _SHARED_ORIGINS.get(line)
    if found is None:
        found = _shared_origin(line, new_origin(line, None))
    return found


def pointer_origin(pointer: str, name: str | None, index: int) -> Origin:
    """``Origin(pointer=f"{pointer}/{name}/{index}")``, or ``…/{index}`` without ``name``;
    shared (see above)."""
    key = (pointer, name, index)
    found = _SHARED_ORIGINS.get(key)
    if found is None:
        found = _shared_origin(key, new_origin(None, f"{pointer}/{index}" if name is None
                                               else f"{pointer}/{name}/{index}"))
    return found


_SHARED_RUNS: dict[tuple[str, str | None], list[Origin]] = {}
_shared_in_runs = 0


def pointer_origins(pointer: str, name: str | None, count: int) -> list[Origin]:
    """``[pointer_origin(pointer, name, i) for i in range(count)]``: the origins of a list's
    elements (``/messages/0``, ``/messages/1``…), kept as one run per list, so that a document
    costs a slice instead of a lookup per message; shared (see above)."""
    global _shared_in_runs
    run = _SHARED_RUNS.get((pointer, name))
    if run is None or len(run) < count:
        if _shared_in_runs + count > _SHARED_ORIGINS_MAX:  # (bounded as the single origins)
            _SHARED_RUNS.clear()
            _shared_in_runs = 0
            run = None
        if run is None:
            run = _SHARED_RUNS[(pointer, name)] = []
        _shared_in_runs += count - len(run)
        run.extend([pointer_origin(pointer, name, i) for i in range(len(run), count)])
    return run[:count]


def _shared_origin(key: Any, origin: Origin) -> Origin:
    if len(_SHARED_ORIGINS) >= _SHARED_ORIGINS_MAX:  # (bounded: most files look alike)
        _SHARED_ORIGINS.clear()
    _SHARED_ORIGINS[key] = origin
    return origin

MAX_EVENTS: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "loopscope_max_events_per_session", default=None)
"""Set by the loader to ``ImportLimits.max_events_per_session`` while a file imports."""
TRUNCATIONS: contextvars.ContextVar[list[tuple[int, int]] | None] = contextvars.ContextVar(
    "loopscope_session_truncations", default=None)
"""The loader's sink: each ``build`` of a truncated session appends ``(kept, dropped)``."""


_serde_loads: tuple[Callable[[str], Any], type[Exception]] | None = None


def _serde() -> tuple[Callable[[str], Any], type[Exception]]:
    """The serde-compatible loader the gglib engine uses too, so both read arguments alike, and
    the exception it raises for a text serde_json rejects."""
    # Imported on first use (the engines package imports the formats package), then kept: an
    # import statement per call cost about a microsecond per tool call.
    global _serde_loads
    if _serde_loads is None:
        from loopscope.jsonrules.serde_json import SerdeJsonError, parse_json_serde

        _serde_loads = parse_json_serde, SerdeJsonError
    return _serde_loads


def _default_json_text_parser(text: str) -> tuple[bool, Any]:
    """``(True, value)``, or ``(False, reason)`` when serde_json rejects ``text`` (as
    ``parse_serde_json``). ``build`` calls the loader itself when this is the parser."""
    loads, rejected = _serde()
    try:
        return True, loads(text)
    except rejected as exc:
        return False, str(exc)


# The drafts are mutable and short-lived; ``slots`` makes them cheaper to create and read. A
# draft holds no reference back to its turn: a reference cycle would leave every draft of every
# session to the cyclic garbage collector.


@dataclass(eq=False, slots=True)
class CallDraft:
    name: str
    raw_arguments: Any
    arguments_kind: ArgumentsKind
    id: str | None
    id_synthetic: bool = False
    wrapper: Wrapper | None = None
    position: int = 0
    result_event: int | None = None
    origin: Origin = NO_ORIGIN
    index: int = 0
    """0-based among all calls of the session; set by ``build``."""
    element: tuple[str, int] | None = None
    """``(list, i)``: the call is element ``i`` of the list ``list`` of the message at
    ``origin`` (``/tool_calls/0``). Its own origin is built only when reported (see
    :func:`call_origin`): few calls are, and an origin and a pointer for every call cost an
    allocation or two per call for nothing."""


@dataclass(eq=False, slots=True)
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


@dataclass(eq=False, slots=True)
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


# (The drafts are made in every session's hottest loop: see ``_construct`` for why these beat
# calling the class. Every field is given, ``calls`` included.)
_new_call_draft = positional_constructor(CallDraft)
_new_turn_draft = positional_constructor(TurnDraft)
_new_result_draft = positional_constructor(ResultDraft)

_Note = tuple[str, str, str, Origin]
"""A pairing problem found as results arrive, reported at ``build``: severity, code, message
and the result's origin."""


class SessionBuilder:
    """Collects one session candidate's events; ``build`` returns the frozen session."""

    def __init__(self, *, json_text_parser: Callable[[str], tuple[bool, Any]] | None = None,
                 max_events: int | None = None):
        self._events: list[Any] = []  # finished events, TurnDraft or ResultDraft placeholders
        self._turns: list[TurnDraft] = []
        self._parse_json_text = json_text_parser or _default_json_text_parser
        self.timestamps: list[str] = []
        cap = max_events if max_events is not None else MAX_EVENTS.get()
        self._cap = sys.maxsize if cap is None else cap
        self.dropped_events = 0
        """Events refused because the session reached ``max_events_per_session``."""
        # Pairing as the events arrive (see the module's docstring); ``_in_order`` while every
        # call went to the newest event.
        self._in_order = True
        self._numbered = 0  # calls numbered so far
        self._by_id: dict[str, list[CallDraft]] = {}  # as in _pair_results
        self._block_turn: TurnDraft | None = None  # as in _pair_results
        self._notes: list[_Note] = []
        self._structure: dict[int, CallDraft] = {}  # result event -> its structure_call

    def _admit(self, timestamp: str | None) -> bool:
        """Whether the session takes one more event (else the event is counted as dropped);
        notes the event's time. One call per event: this runs for every message (and is
        written out in ``assistant`` and ``result``, which run for every call)."""
        if len(self._events) >= self._cap:
            self.dropped_events += 1
            return False
        if timestamp is not None:
            self.timestamps.append(timestamp)
        return True

    # ----------------------------------------------------------------- adding events

    @property
    def event_count(self) -> int:
        return len(self._events)

    @property
    def call_count(self) -> int:
        return sum(len(t.calls) for t in self._turns)

    def user(self, text: str, content: Any = None, *, recorded_role: str = "user",
             timestamp: str | None = None, origin: Origin = NO_ORIGIN) -> None:
        if not self._admit(timestamp):
            return
        self._block_turn = None
        self._events.append(_new_user(len(self._events), text, content, recorded_role, timestamp,
                                      origin, "user"))

    def system(self, text: str, content: Any = None, *, recorded_role: str = "system",
               timestamp: str | None = None, origin: Origin = NO_ORIGIN) -> None:
        if not self._admit(timestamp):
            return
        self._block_turn = None
        self._events.append(_new_system(len(self._events), text, content, recorded_role,
                                        timestamp, origin, "system"))

    def other(self, role: str | None, text: str, content: Any = None, *,
              timestamp: str | None = None, origin: Origin = NO_ORIGIN) -> None:
        if not self._admit(timestamp):
            return
        self._block_turn = None
        self._events.append(_new_other(len(self._events), role, text, content, timestamp, origin,
                                       "other"))

    def assistant(self, text: str = "", content: Any = None, *, thinking: str = "",
                  model: str | None = None, stop_reason: str | None = None,
                  error: str | None = None, synthetic: bool = False,
                  timestamp: str | None = None, origin: Origin = NO_ORIGIN) -> TurnDraft:
        events = self._events
        turn = _new_turn_draft(len(events), text, thinking, content, model, stop_reason, error,
                               synthetic, timestamp, origin, [])
        if len(events) >= self._cap:  # (_admit)
            self.dropped_events += 1
            return turn  # detached: calls added to it are dropped with it
        if timestamp is not None:
            self.timestamps.append(timestamp)
        events.append(turn)
        self._turns.append(turn)
        self._block_turn = turn
        return turn

    def call(self, turn: TurnDraft, name: Any, raw_arguments: Any,
             arguments_kind: ArgumentsKind, *, id: Any = None, id_synthetic: bool = False,
             wrapper: Wrapper | None = None, origin: Origin = NO_ORIGIN,
             element: tuple[str, int] | None = None) -> CallDraft:
        """Add a call to ``turn`` (its position is the number of calls it already has).
        ``element`` places it inside the message at ``origin`` (see ``CallDraft.element``)."""
        calls = turn.calls
        draft = _new_call_draft(name if isinstance(name, str) else "", raw_arguments,
                                arguments_kind, id if isinstance(id, str) else None,
                                id_synthetic, wrapper, len(calls), None, origin, 0, element)
        calls.append(draft)
        if self._in_order:
            events = self._events
            if events and events[-1] is turn:
                draft.index = self._numbered
                self._numbered += 1
                call_id = draft.id
                if call_id is not None:
                    stack = self._by_id.get(call_id)
                    if stack is None:
                        self._by_id[call_id] = [draft]
                    else:
                        stack.append(draft)
            elif turn.event < len(events) and events[turn.event] is turn:
                self._in_order = False  # an older turn: number and pair at build
            # else a detached turn (over max_events_per_session): never built
        return draft

    def result(self, call_id: Any, content: Any, text: str, *, is_error: bool = False,
               details: Mapping[str, Any] | None = None, meta: Mapping[str, Any] | None = None,
               name: str | None = None, structure_call: CallDraft | None = None,
               timestamp: str | None = None, origin: Origin = NO_ORIGIN) -> None:
        """Add a tool result. ``structure_call`` pairs it by structure (the format nests or links
        the result to its call, e.g. a SWE-agent step or an OpenHands ``cause``)."""
        events = self._events
        index = len(events)
        if index >= self._cap:  # (_admit)
            self.dropped_events += 1
            return
        if timestamp is not None:
            self.timestamps.append(timestamp)
        if not isinstance(call_id, str):
            call_id = None
        if not self._in_order:
            events.append(_new_result_draft(index, call_id, content, text, is_error, details,
                                            meta, name, structure_call, timestamp, origin))
            return
        match: CallDraft | None = None
        if structure_call is None and call_id is not None:
            candidates = self._by_id.get(call_id)
            if candidates and candidates[-1].result_event is None:
                match = candidates[-1]  # the usual answer: the newest call with its id
                paired_by: PairedBy | None = "id"
        if match is None:
            match, paired_by = _pair(structure_call, call_id, origin, self._by_id,
                                     self._block_turn, self._notes)
            if structure_call is not None:
                self._structure[index] = structure_call
        if match is None:
            call_index = None
        else:
            match.result_event = index
            call_index = match.index
        events.append(_new_result(
            index, call_id, text, content, call_index, paired_by, name, is_error,
            _details_of(details) if details else _NOTHING, dict(meta) if meta else _NOTHING,
            timestamp, origin, "tool_result"))

    def compaction(self, summary: str = "", *, tokens_before: int | None = None,
                   trigger: str | None = None, first_kept: str | None = None,
                   timestamp: str | None = None, origin: Origin = NO_ORIGIN) -> None:
        if not self._admit(timestamp):
            return
        self._block_turn = None
        self._events.append(_new_compaction(len(self._events), summary, tokens_before, trigger,
                                            first_kept, timestamp, origin, "compaction"))

    def fill_compaction(self, summary: str) -> bool:
        """Set the summary of the last event when it is a compaction without one (Claude Code
        ``compact_boundary`` then its summary line). ``False`` when there is none to fill."""
        if self._events and isinstance(self._events[-1], Compaction) \
                and not self._events[-1].summary:
            last = self._events[-1]
            self._events[-1] = _new_compaction(last.index, summary, last.tokens_before,
                                               last.trigger, last.first_kept, last.timestamp,
                                               last.origin, "compaction")
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
        chat_messages: Sequence[Any] | None = None,
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

        # Results are frozen as soon as they are paired; turns, once every result is known.
        events: list[Any] = list(self._events)
        # (In order, the calls were numbered and the results paired as they came.)
        notes = self._notes if self._in_order else self._pair_at_build(events)
        for severity, code, message, origin in notes:
            emit(severity, code, message, line=origin.line, pointer=origin.pointer)
        parse = self._parse_json_text
        # The default parser's loader is called directly: its (ok, value) wrapper cost two
        # Python calls per tool call.
        loads, rejected = _serde() if parse is _default_json_text_parser else (None, Exception)
        imported = IMPORTED_CALLS.get()  # the loader's tally of calls that reach a session
        bad_arguments = 0
        unanswered = 0
        first_bad: CallDraft | None = None
        turns: list[AssistantTurn] = []
        all_calls: list[ToolCall] = []
        for turn_number, item in enumerate(self._turns):
            calls: list[ToolCall] = []
            for call in item.calls:
                raw = call.raw_arguments
                arguments, error = raw, None
                # A format that promised text but gave something else: used as a value.
                if call.arguments_kind == "json_text" and isinstance(raw, str):
                    if loads is not None:
                        try:
                            arguments = loads(raw)
                        except rejected as exc:
                            error = str(exc)
                    else:
                        ok, value = parse(raw)
                        if ok:
                            arguments = value
                        else:
                            error = str(value)
                    if error is not None:
                        bad_arguments += 1
                        first_bad = first_bad or call
                if call.result_event is None:
                    unanswered += 1
                calls.append(_new_call(
                    call.index, turn_number, call.position, call.id, call.name, raw,
                    call.arguments_kind, arguments, error, call.id_synthetic, call.wrapper,
                    call.result_event,
                ))
            if calls:
                all_calls += calls
                if imported is not None:
                    imported.extend(item.calls)
            turn = events[item.event] = _new_turn(
                item.event, turn_number, item.text, tuple(calls), item.thinking,
                item.content, item.model, item.stop_reason, item.error, item.synthetic,
                item.timestamp, item.origin, "assistant",
            )
            turns.append(turn)

        if bad_arguments and first_bad is not None:
            where = call_origin(first_bad)
            emit("info", "bad_arguments",
                 plural(bad_arguments, "tool call argument string is",
                        "tool call argument strings are") + " not valid JSON; "
                 "the raw strings were kept as the arguments",
                 line=where.line, pointer=where.pointer, count=bad_arguments)
        if unanswered:
            emit("info", "unanswered_calls",
                 plural(unanswered, "tool call has", "tool calls have") + " no recorded result",
                 count=unanswered)

        if title is None:
            first_user = next((e for e in events if isinstance(e, UserMessage)), None)
            title = default_title(first_user.text if first_user else "", id)
        distinct_models: list[str] = []
        for m in list(models) + [t.model for t in self._turns if t.model]:
            if m and m not in distinct_models:
                distinct_models.append(m)
        session = Session(
            id=id, source=source, format=format, events=tuple(events), title=title,
            agent=agent or AgentInfo(), models=tuple(distinct_models),
            started_at=self.timestamps[0] if self.timestamps else None,
            ended_at=self.timestamps[-1] if self.timestamps else None,
            metadata=dict(metadata or {}), labels={},
            chat_messages=None if chat_messages is None else tuple(chat_messages),
            problems=tuple(problems or ()),
        )
        seed_views(session, tuple(turns), tuple(all_calls))
        return session

    def _pair_at_build(self, events: list[Any]) -> list[_Note]:
        """Number the calls (turn order, then position) and pair every result in event order,
        forgetting what was paired as the events arrived (a call reached an older turn)."""
        n_calls = 0
        for turn in self._turns:
            for call in turn.calls:
                call.index = n_calls
                call.result_event = None
                n_calls += 1
        for i, item in enumerate(events):
            if isinstance(item, ToolResult):  # frozen on arrival: a draft again
                events[i] = _new_result_draft(
                    item.index, item.call_id, item.content, item.text, item.is_error,
                    item.details, item.meta, item.name, self._structure.get(item.index),
                    item.timestamp, item.origin)
        return self._pair_results(events)

    def _pair_results(self, events: list[Any]) -> list[_Note]:
        """Pair results with calls in event order and freeze each result into ``events``; the
        pairing is kept on each ``CallDraft.result_event``. Returns the pairing problems.

        By id, else by position inside the contiguous block of results right after a turn with
        unanswered calls (how masked or rewritten ids are survived, with a warning), else the
        result is an orphan."""
        # By id: the latest unanswered call with that id among the turns already passed. Each
        # id keeps its calls in that order; answered ones are dropped from the top as met
        # (an answered call never becomes unanswered), so each lookup is O(1) amortised.
        by_id: dict[str, list[CallDraft]] = {}
        block_turn: TurnDraft | None = None  # the turn whose contiguous result block we are in
        notes: list[_Note] = []
        for item in events:  # (each item is replaced in place, once)
            if isinstance(item, TurnDraft):
                for call in item.calls:
                    if call.id is not None:
                        stack = by_id.get(call.id)
                        if stack is None:
                            by_id[call.id] = [call]
                        else:
                            stack.append(call)
                block_turn = item
                continue
            if not isinstance(item, ResultDraft):
                block_turn = None
                continue
            index = item.event
            match, paired_by = _pair(item.structure_call, item.call_id, item.origin, by_id,
                                     block_turn, notes)
            if match is not None:
                match.result_event = index
            meta = item.meta
            events[index] = _new_result(
                index, item.call_id, item.text, item.content,
                None if match is None else match.index, paired_by, item.name, item.is_error,
                _details_of(item.details), dict(meta) if meta else _NOTHING, item.timestamp,
                item.origin, "tool_result")
        return notes


def seed_views(session: Session, turns: tuple[AssistantTurn, ...],
               calls: tuple[ToolCall, ...]) -> None:
    """Store ``session.turns`` and ``session.calls``, the session's cached views, as the
    builder made them (the turns of ``events`` in order, and their calls): the loader counts
    every session's calls, and the engines read both, and each computed them again with a
    walk over every event. ``functools.cached_property`` keeps its value in the instance's
    ``__dict__`` under the property's name and looks there first; the values are the ones the
    properties would compute (``tests/formats/test_builder_fast_paths.py`` checks it)."""
    views = session.__dict__
    views["turns"] = turns
    views["calls"] = calls


_NOTHING: dict[str, Any] = {}
"""The ``details`` and ``meta`` of every result without any: sessions are read-only, and a
dict of its own for each result would cost memory in proportion to the corpus's calls."""


def call_origin(call: CallDraft) -> Origin:
    """Where a call was recorded: its ``origin``, or within it (``CallDraft.element``)."""
    origin, element = call.origin, call.element
    if element is None or origin.pointer is None:
        return origin
    name, index = element
    return new_origin(origin.line, f"{origin.pointer}/{name}/{index}")


def _details_of(details: Any) -> Mapping[str, Any]:
    """A result's ``details``: a copy of the mapping given, if any."""
    if details and (type(details) is dict or isinstance(details, Mapping)):
        return dict(details)
    return _NOTHING


def _pair(structure: CallDraft | None, call_id: str | None, origin: Origin,
          by_id: dict[str, list[CallDraft]], block_turn: TurnDraft | None,
          notes: list[_Note]) -> tuple[CallDraft | None, PairedBy | None]:
    """The call a result answers and how it was found (``None, None``: an orphan); a problem
    found goes to ``notes``."""
    if structure is not None and structure.result_event is None:
        return structure, "structure"
    if call_id is not None:
        candidates = by_id.get(call_id)
        while candidates and candidates[-1].result_event is not None:
            candidates.pop()
        if candidates:
            return candidates[-1], "id"
    if block_turn is not None:
        match = next((c for c in block_turn.calls if c.result_event is None), None)
        if match is not None:
            notes.append(("warning", "positional_pairing",
                          f"tool result id {_quote(call_id)} matches no call; paired by "
                          f"position with call {_quote(match.id)} ({_quote(match.name)})",
                          origin))
            return match, "position"
    notes.append(("warning", "orphan_result",
                  f"tool result id {_quote(call_id)} answers no tool call; it was kept as an "
                  "orphan", origin))
    return None, None


def _quote(value: str | None) -> str:
    return "none" if value is None else f'"{escape_for_display(value, 60)}"'


def default_title(first_user_text: str, session_id: str) -> str:
    """The first user message with whitespace collapsed, cut to 80 characters (``…`` when cut)."""
    collapsed = " ".join(first_user_text.split())
    if not collapsed:
        return session_id
    return collapsed if len(collapsed) <= 80 else collapsed[:80] + "…"
