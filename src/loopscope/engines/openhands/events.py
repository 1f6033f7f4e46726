"""The OpenHands event log a recorded session becomes, and OpenHands' argument parsing.

OpenHands' stuck detector reads the conversation's event log, so the replay first writes the
log OpenHands would have written for the recorded session:

* a user message → ``MessageEvent(source="user")``;
* an assistant turn with tool calls → per call, in call order, an ``ActionEvent`` (a call whose
  arguments do not parse: ``ActionEvent(action=None)`` and right after it an
  ``AgentErrorEvent``); then, in call order, the result of each executed call: an
  ``ObservationEvent``, or an ``AgentErrorEvent`` when the result is flagged as an error
  (``openhands/sdk/agent/response_dispatch.py``, ``openhands/sdk/agent/agent.py``);
* an assistant turn without tool calls → ``MessageEvent(source="agent")``, plus OpenHands'
  corrective ``MessageEvent(source="environment")`` when its text is blank;
* a compaction → a ``Condensation`` (it only takes a place in the log);
* system and other messages → nothing.

Every call is treated as an MCP tool whose arguments are accepted as parsed
(``MCPToolAction(data=…)``, ``openhands/sdk/mcp/definition.py``): recorded sessions carry no
tool schemas to validate against.

The event values here are plain frozen dataclasses compared by identity (the log position is
an event's id); :func:`event_eq` is OpenHands' ``StuckDetector._event_eq``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from loopscope.engines.openhands.python_equality import canonical
from loopscope.model import AssistantTurn, Compaction, Session, ToolCall, ToolResult, UserMessage

__all__ = [
    "CORRECTIVE_MESSAGE",
    "SECURITY_RISK_TYPOS",
    "ActionEvent",
    "AgentErrorEvent",
    "Check",
    "Condensation",
    "Event",
    "MessageEvent",
    "ObservationEvent",
    "ParsedArguments",
    "argument_text",
    "build_items",
    "event_eq",
    "malformed_error",
    "parse_tool_call_arguments",
    "sanitize_json_control_chars",
]

CORRECTIVE_MESSAGE: Final = ("Your last response did not include a function call or a message. "
                             "Please use a tool to proceed with the task.")
"""What OpenHands tells the model after a reply with no tool call and no text
(``ResponseDispatchMixin._send_corrective_nudge``)."""

SECURITY_RISK_TYPOS: Final = ("security_rort", "securtiy_risk", "security_riks")
"""``_SECURITY_RISK_TYPOS`` of ``openhands/sdk/agent/utils.py``. Upstream it is a set and only the
first typo found (in set order, which varies between processes) is renamed; loopscope tries
them in this fixed order."""


# --------------------------------------------------------------------------- events


@dataclass(frozen=True, eq=False, slots=True)
class MessageEvent:
    source: str
    """``"user"``, ``"agent"`` or ``"environment"``."""
    text: str


@dataclass(frozen=True, eq=False, slots=True)
class ActionEvent:
    thought: tuple[str, ...]
    """The texts of ``thought`` (a list of ``TextContent``): the reply text on a turn's first
    call, else empty."""
    action: dict[str, Any] | None
    """``MCPToolAction.data``; ``None`` for a call whose arguments did not parse."""
    tool_name: str
    source: str = "agent"


@dataclass(frozen=True, eq=False, slots=True)
class ObservationEvent:
    tool_name: str
    """Both the event's and the ``MCPToolObservation``'s ``tool_name``."""
    text: str
    """The observation's single text content."""
    source: str = "environment"


@dataclass(frozen=True, eq=False, slots=True)
class AgentErrorEvent:
    error: str
    tool_name: str
    """Recorded, but not compared by OpenHands."""
    source: str = "agent"


@dataclass(frozen=True, eq=False, slots=True)
class Condensation:
    """A compaction took place (it only takes a place in the log)."""


Event = MessageEvent | ActionEvent | ObservationEvent | AgentErrorEvent | Condensation


def event_eq(a: Event, b: Event) -> bool:
    """``StuckDetector._event_eq``: same class, then the fields OpenHands compares, with Python
    ``==`` (pydantic models compare field by field). Ids, timestamps and the error's tool name
    are not compared."""
    if type(a) is not type(b):
        return False
    if isinstance(a, ActionEvent):
        assert isinstance(b, ActionEvent)
        return (a.source == b.source and a.thought == b.thought
                and _arguments_equal(a.action, b.action) and a.tool_name == b.tool_name)
    if isinstance(a, ObservationEvent):
        assert isinstance(b, ObservationEvent)
        return a.source == b.source and a.text == b.text and a.tool_name == b.tool_name
    if isinstance(a, AgentErrorEvent):
        assert isinstance(b, AgentErrorEvent)
        return a.source == b.source and a.error == b.error
    if isinstance(a, MessageEvent):
        assert isinstance(b, MessageEvent)
        return a.source == b.source and a.text == b.text
    return a is b


def _arguments_equal(x: dict[str, Any] | None, y: dict[str, Any] | None) -> bool:
    """Python ``==`` of two parsed argument objects (or ``None``)."""
    try:
        return x == y
    except RecursionError:
        # Nesting deeper than Python's comparison allows (OpenHands itself would fail here):
        # the same equality, read from the flat canonical text.
        if x is None or y is None:
            return x is y
        return canonical(x) == canonical(y)


# --------------------------------------------------------------------------- arguments

_CONTROL_CHAR_RE: Final = re.compile(r"[\x00-\x1f]")
_CTRL_ESCAPES: Final = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r"}


def sanitize_json_control_chars(raw: str) -> str:
    """Every raw U+0000–U+001F replaced by its JSON escape (``openhands/sdk/agent/utils.py``)."""
    return _CONTROL_CHAR_RE.sub(
        lambda m: _CTRL_ESCAPES.get(ord(m.group(0)), f"\\u{ord(m.group(0)):04x}"), raw)


def parse_tool_call_arguments(raw_arguments: str) -> dict[str, Any]:
    """OpenHands' ``parse_tool_call_arguments`` (with ``_normalize_arguments``).

    Python's ``json.loads``; on failure, once more after escaping raw control characters (the
    second failure raises ``json.JSONDecodeError``). A value that is not an object becomes
    ``{}``; the first security-risk typo found is renamed ``security_risk``; top-level keys
    whose value is ``null`` are removed.
    """
    try:
        parsed = json.loads(raw_arguments)
    except json.JSONDecodeError:
        parsed = json.loads(sanitize_json_control_chars(raw_arguments))
    normalized = dict(parsed) if isinstance(parsed, dict) else {}
    for typo in SECURITY_RISK_TYPOS:
        if typo in normalized:
            normalized["security_risk"] = normalized.pop(typo)
            break
    return {k: v for k, v in normalized.items() if v is not None}


def argument_text(call: ToolCall) -> str:
    """The argument text OpenHands would parse: the recorded string, or the JSON text of a
    recorded value (``None`` gives ``"null"``)."""
    raw = call.raw_arguments
    if isinstance(raw, str):
        return raw
    try:
        return json.dumps(raw)
    except (TypeError, ValueError, RecursionError):
        return "null"


def malformed_error(name: str, error: Exception) -> str:
    """The ``AgentErrorEvent`` text of a call whose arguments do not parse
    (``Agent._get_action_event``)."""
    return f"Error validating tool '{name}': {error}. Arguments: unparseable JSON"


@dataclass(frozen=True, slots=True)
class ParsedArguments:
    """The outcome of parsing one argument text: ``data`` or an ``error`` text."""

    data: dict[str, Any] | None
    error: Exception | None


def parse_arguments(text: str) -> ParsedArguments:
    try:
        return ParsedArguments(parse_tool_call_arguments(text), None)
    except (ValueError, RecursionError) as e:
        # Beyond json.JSONDecodeError (a ValueError): nesting deeper than Python's parser
        # allows, and an integer of more than 4,300 digits (the plain ValueError json.loads
        # raises for it). OpenHands 1.58.2 crashes on both (the second one inside
        # Agent._emit_tool_error, which catches only JSONDecodeError); loopscope treats the
        # call as one whose arguments did not parse.
        return ParsedArguments(None, e)


# --------------------------------------------------------------------------- the session


@dataclass(frozen=True, slots=True)
class Check:
    """The check OpenHands makes after an assistant turn (before its next step)."""

    turn: int
    call: int | None
    tools: tuple[str, ...]


Item = Event | Check


def _results_after(session: Session, turn: AssistantTurn) -> list[ToolResult]:
    out: list[ToolResult] = []
    events = session.events
    for k in range(turn.index + 1, len(events)):
        event = events[k]
        if not isinstance(event, ToolResult):
            break
        out.append(event)
    return out


def turn_events(session: Session, turn: AssistantTurn,
                parse: Any = parse_arguments) -> list[Event]:
    """The events OpenHands writes for one assistant turn (and its results)."""
    calls = turn.tool_calls
    if not calls:
        out: list[Event] = [MessageEvent("agent", turn.text)]
        if turn.text.strip() == "":
            out.append(MessageEvent("environment", CORRECTIVE_MESSAGE))
        return out
    out = []
    executed: list[ToolCall] = []
    for position, call in enumerate(calls):
        thought = (turn.text,) if position == 0 and turn.text != "" else ()
        parsed: ParsedArguments = parse(argument_text(call))
        if parsed.data is None:
            assert parsed.error is not None
            out.append(ActionEvent(thought, None, call.name))
            out.append(AgentErrorEvent(malformed_error(call.name, parsed.error), call.name))
        else:
            out.append(ActionEvent(thought, parsed.data, call.name))
            executed.append(call)
    results = _results_after(session, turn)
    used = [False] * len(results)
    for call in executed:
        if call.id is None:
            continue
        for k, result in enumerate(results):
            if not used[k] and result.call_id == call.id:
                used[k] = True
                if result.is_error:
                    out.append(AgentErrorEvent(result.text, call.name))
                else:
                    out.append(ObservationEvent(call.name, result.text))
                break
    return out


def build_items(session: Session, parse: Any = parse_arguments) -> Iterator[Item]:
    """The session as OpenHands' log plus the checks: events, and a :class:`Check` after each
    assistant turn's events."""
    for event in session.events:
        if isinstance(event, UserMessage):
            yield MessageEvent("user", event.text)
        elif isinstance(event, Compaction):
            yield Condensation()
        elif isinstance(event, AssistantTurn):
            yield from turn_events(session, event, parse)
            calls = event.tool_calls
            yield Check(event.turn, calls[0].index if calls else None,
                        tuple(c.name for c in calls))
