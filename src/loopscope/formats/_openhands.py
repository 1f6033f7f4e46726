"""Shared mapping of an OpenHands event history.

Used by ``openhands_events`` (a JSON array of events, one session) and ``openhands_output``
(evaluation ``output.jsonl``, one instance per line).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from loopscope.formats._ext_common import CandidateReporter, as_str, extract_text
from loopscope.formats.builder import CallDraft, SessionBuilder, TurnDraft
from loopscope.model import Origin
from loopscope.words import plural

AGENT_NAME = "OpenHands"

# Actions and observations the model never saw.
_SILENT_ACTIONS = frozenset({"change_agent_state", "recall", "null", "pause", "resume"})
_SILENT_OBSERVATIONS = frozenset({"agent_state_changed", "null", "recall"})


@dataclass
class History:
    """The builder filled from one history, plus what the session fields need."""

    builder: SessionBuilder
    models: list[str] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)


def flatten(history: Sequence[Any]) -> list[tuple[Any, int]]:
    """Events with their index in ``history``; older ``[action, observation]`` pairs flattened."""
    out: list[tuple[Any, int]] = []
    for i, element in enumerate(history):
        if isinstance(element, list):
            out.extend((part, i) for part in element)
        else:
            out.append((element, i))
    return out


def _model_message(tcm: dict[str, Any]) -> dict[str, Any] | None:
    response = tcm.get("model_response")
    if not isinstance(response, dict):
        return None
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    return message if isinstance(message, dict) else None


def _model_arguments(tcm: dict[str, Any], call_id: Any) -> tuple[bool, Any]:
    """``function.arguments`` of the model-response tool call with ``call_id``."""
    message = _model_message(tcm)
    if message is None or not isinstance(call_id, str):
        return False, None
    tool_calls = message.get("tool_calls")
    if not isinstance(tool_calls, list):
        return False, None
    for element in tool_calls:
        if isinstance(element, dict) and element.get("id") == call_id:
            function = element.get("function")
            if isinstance(function, dict) and "arguments" in function:
                return True, function["arguments"]
            return False, None
    return False, None


def _response_id(tcm: dict[str, Any]) -> Any:
    response = tcm.get("model_response")
    return response.get("id") if isinstance(response, dict) else None


def _key(value: Any) -> int | str | None:
    """An event id usable as a dict key (an int or a string)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | str):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _args_content(args: Any) -> Any:
    return args.get("content") if isinstance(args, dict) else None


def _add_message(add: Callable[..., Any], args: Any, event: dict[str, Any], **fields: Any) -> None:
    """A V0 message action as one event: its content is ``args.content``, its text that content
    when it is a string, else the event's display ``message`` (what the UI showed)."""
    content = _args_content(args)
    add(content if isinstance(content, str) else as_str(event.get("message")) or "", content,
        **fields)


# ------------------------------------------------------------------------------ V1 (SDK)
#
# openhands-sdk (OpenHands V1) serialises its event log as objects tagged by ``kind``
# (``openhands/sdk/event/...``): ``MessageEvent`` (``source`` user / agent / environment,
# ``llm_message``), ``ActionEvent`` (``tool_name``, ``tool_call_id``, ``tool_call`` with the
# model's argument text, ``thought``, ``llm_response_id`` grouping the actions of one model
# response, ``action``), ``ObservationEvent`` (``observation`` with ``content`` and
# ``is_error``), ``AgentErrorEvent`` (``error``), ``UserRejectObservation``,
# ``SystemPromptEvent``, ``Condensation``; the rest (state updates, pauses, token counts) never
# reaches the model.

V1_KINDS = frozenset({"MessageEvent", "ActionEvent", "ObservationEvent", "AgentErrorEvent",
                      "UserRejectObservation", "SystemPromptEvent", "Condensation",
                      "CondensationSummaryEvent", "CondensationRequest", "PauseEvent",
                      "ConversationStateUpdateEvent", "TokenEvent"})
_V1_RESULTS = frozenset({"ObservationEvent", "AgentErrorEvent", "UserRejectObservation"})


def is_v1_event(event: dict[str, Any]) -> bool:
    kind = event.get("kind")
    return isinstance(kind, str) and not isinstance(event.get("action"), str) \
        and not isinstance(event.get("observation"), str)


def _v1_arguments(event: dict[str, Any]) -> tuple[Any, Any]:
    """``(name, raw arguments)`` of an ActionEvent: the model's own call (``tool_call``, in
    its current ``{id, name, arguments}`` shape or the older litellm ``function`` shape), else
    the parsed ``action``."""
    tool_call = event.get("tool_call")
    name: Any = None
    if isinstance(tool_call, dict):
        function = tool_call.get("function")
        source = function if isinstance(function, dict) else tool_call
        name = source.get("name")
        if "arguments" in source:
            return name if isinstance(name, str) else event.get("tool_name"), source["arguments"]
    action = event.get("action")
    if isinstance(action, dict):
        action = {k: v for k, v in action.items() if k != "kind"}
    return name if isinstance(name, str) else event.get("tool_name"), action


class _V1:
    """Maps V1 events onto the builder; one per history."""

    def __init__(self, b: SessionBuilder, report: CandidateReporter, skipped: Counter[str],
                 line: int | None) -> None:
        self.b = b
        self.report = report
        self.skipped = skipped
        self.line = line
        self.turn: TurnDraft | None = None
        self.turn_response: Any = None
        self.turn_calls: set[str] = set()

    def event(self, event: dict[str, Any], origin: Origin) -> None:
        b = self.b
        kind = event["kind"]
        ts = as_str(event.get("timestamp"))
        source = event.get("source")
        if kind == "ActionEvent":
            response = event.get("llm_response_id")
            if self.turn is None or response is None or response != self.turn_response:
                thought = event.get("thought")
                self.turn = b.assistant(extract_text(thought, ""), thought,
                                        thinking=as_str(event.get("reasoning_content")) or "",
                                        timestamp=ts, origin=origin)
                self.turn_response = response
                self.turn_calls = set()
            name, raw = _v1_arguments(event)
            call_id = event.get("tool_call_id")
            b.call(self.turn, name, raw, "json_text" if isinstance(raw, str) else "value",
                   id=call_id, origin=origin)
            if isinstance(call_id, str):
                self.turn_calls.add(call_id)
            return
        if kind in _V1_RESULTS:
            call_id = event.get("tool_call_id")
            if not (isinstance(call_id, str) and call_id in self.turn_calls):
                self.turn = None
            if kind == "ObservationEvent":
                observation = event.get("observation")
                content = observation.get("content") if isinstance(observation, dict) \
                    else observation
                text = content if isinstance(content, str) else extract_text(content, "\n")
                is_error = isinstance(observation, dict) and observation.get("is_error") is True
            elif kind == "AgentErrorEvent":
                content = event.get("error")
                text = content if isinstance(content, str) else extract_text(content, "\n")
                is_error = True
            else:  # the user refused to run the call
                content = event.get("rejection_reason")
                text = content if isinstance(content, str) else extract_text(content, "\n")
                is_error = True
            name = as_str(event.get("tool_name"))
            if isinstance(call_id, str):
                b.result(call_id, content, text, is_error=is_error, name=name,
                         meta={"observation": kind}, timestamp=ts, origin=origin)
            else:  # an error the runtime raised before any call (nothing to answer)
                b.other(kind, text, content, timestamp=ts, origin=origin)
            return
        self.turn = None
        if kind == "MessageEvent":
            message = event.get("llm_message")
            content = message.get("content") if isinstance(message, dict) else None
            if source == "agent":
                b.assistant(extract_text(content, ""), content,
                            thinking=as_str(message.get("reasoning_content")) or ""
                            if isinstance(message, dict) else "",
                            timestamp=ts, origin=origin)
            elif source == "user":
                b.user(extract_text(content, "\n"), content, timestamp=ts, origin=origin)
            else:
                # The runtime's own messages (source "environment"): the action-error nudge
                # ("You've called `X` with the same arguments N times in a row…") and the
                # corrective "Your last response did not include a function call or a
                # message…". The model saw them, but they are no user turn: a user event
                # would reset the guards' state.
                b.system(extract_text(content, "\n"), content,
                         recorded_role=source if isinstance(source, str) else "environment",
                         timestamp=ts, origin=origin)
            return
        if kind == "SystemPromptEvent":
            prompt = event.get("system_prompt")
            b.system(extract_text(prompt, "\n") if not isinstance(prompt, dict)
                     else as_str(prompt.get("text")) or "", prompt, timestamp=ts, origin=origin)
            return
        if kind == "Condensation":
            summary = event.get("summary")
            b.compaction(summary if isinstance(summary, str) else "", timestamp=ts,
                         origin=origin)
            return
        self.skipped[f"kind:{kind}"] += 1
        if kind not in V1_KINDS:
            self.report.aggregate("unknown_record_type",
                                  f"an event of kind {kind[:40]!r} is not known; it made no "
                                  "event", line=self.line, pointer=origin.pointer)


def map_history(history: Sequence[Any], report: CandidateReporter, *,
                line: int | None = None, pointer_prefix: str = "") -> History:
    """Map one event list onto a :class:`SessionBuilder`."""
    b = SessionBuilder()
    out = History(b)
    skipped: Counter[str] = Counter()
    models: list[str] = []
    calls_by_action: dict[Any, CallDraft] = {}
    answered: set[int] = set()
    duplicates = 0
    turn: TurnDraft | None = None
    turn_response: Any = None
    turn_calls: set[int] = set()  # ids of the CallDrafts of the open turn

    v1 = _V1(b, report, skipped, line)
    for event, index in flatten(history):
        origin = Origin(line=line, pointer=f"{pointer_prefix}/{index}")
        if not isinstance(event, dict):
            skipped["non-object"] += 1
            report.aggregate("unknown_record_type", "a history element is not an object; skipped",
                             line=line, pointer=origin.pointer)
            continue
        if is_v1_event(event):
            turn = None  # (a V0 turn never continues into V1 events)
            v1.event(event, origin)
            continue
        ts = as_str(event.get("timestamp"))
        action = event.get("action")
        observation = event.get("observation")
        source = event.get("source")
        if isinstance(action, str):
            args = event.get("args")
            tcm = event.get("tool_call_metadata")
            if action in _SILENT_ACTIONS:
                skipped[f"action:{action}"] += 1
                continue
            if action == "system":
                turn = None
                _add_message(b.system, args, event, timestamp=ts, origin=origin)
                continue
            if action == "condensation":
                turn = None
                summary = args.get("summary") if isinstance(args, dict) else None
                b.compaction(summary if isinstance(summary, str) else "", timestamp=ts,
                             origin=origin)
                continue
            if action == "message" and source == "environment":
                # Text the runtime injected (nudges): what the model saw, but no user turn,
                # which would reset the guards' state.
                turn = None
                _add_message(b.system, args, event, recorded_role="environment", timestamp=ts,
                             origin=origin)
                continue
            if action == "message" and source == "user":
                turn = None
                content = _args_content(args)
                text = content if isinstance(content, str) else extract_text(
                    content if content is not None else event.get("message"), "\n")
                b.user(text, content if content is not None else event.get("message"),
                       timestamp=ts, origin=origin)
                continue
            if source != "agent":
                skipped[f"action:{action}"] += 1
                report.aggregate("unknown_record_type",
                                 f"an action {action[:40]!r} from {str(source)[:20]!r} is not "
                                 "known; it made no event", line=line, pointer=origin.pointer)
                continue
            if isinstance(tcm, dict):
                response_id = _response_id(tcm)
                if turn is None or response_id is None or response_id != turn_response:
                    message = _model_message(tcm)
                    content = message.get("content") if message else None
                    response = tcm.get("model_response")
                    model = as_str(response.get("model")) if isinstance(response, dict) else None
                    turn = b.assistant(extract_text(content, ""), content, model=model,
                                       timestamp=ts, origin=origin)
                    turn_response = response_id
                    turn_calls = set()
                call_id = tcm.get("tool_call_id")
                found, raw = _model_arguments(tcm, call_id)
                if found:
                    draft = b.call(turn, tcm.get("function_name"), raw,
                                   "json_text" if isinstance(raw, str) else "value", id=call_id,
                                   origin=origin)
                else:
                    draft = b.call(turn, tcm.get("function_name"), args, "value", id=call_id,
                                   origin=origin)
                if _key(event.get("id")) is not None:
                    calls_by_action[_key(event.get("id"))] = draft
                turn_calls.add(id(draft))
                continue
            if action == "message":
                turn = None
                _add_message(b.assistant, args, event, timestamp=ts, origin=origin)
                continue
            # an agent without function calling: one turn per action, synthesized id
            turn = None
            thought = as_str(args.get("thought")) if isinstance(args, dict) else None
            prose = b.assistant(thought or "", None, timestamp=ts, origin=origin)
            synthetic = f"ls-{b.call_count}"
            draft = b.call(prose, action, args, "value", id=synthetic, id_synthetic=True,
                           origin=origin)
            if _key(event.get("id")) is not None:
                calls_by_action[_key(event.get("id"))] = draft
            continue
        if isinstance(observation, str):
            if observation in _SILENT_OBSERVATIONS:
                skipped[f"observation:{observation}"] += 1
                continue
            cause = _key(event.get("cause"))
            answer = calls_by_action.get(cause) if cause is not None else None
            if answer is not None:
                draft = answer
                if id(draft) in answered:
                    duplicates += 1
                    continue
                answered.add(id(draft))
                if id(draft) not in turn_calls:
                    turn = None
                content = event.get("content")
                text = content if isinstance(content, str) else extract_text(content, "\n")
                meta: dict[str, Any] = {}
                extras = event.get("extras")
                if isinstance(extras, dict) and isinstance(extras.get("metadata"), dict):
                    exit_code = extras["metadata"].get("exit_code")
                    if isinstance(exit_code, int) and not isinstance(exit_code, bool):
                        meta["exit_code"] = exit_code
                meta["observation"] = observation
                b.result(draft.id, content, text, is_error=observation == "error", meta=meta,
                         structure_call=draft, timestamp=ts, origin=origin)
                continue
            turn = None
            content = event.get("content")
            text = content if isinstance(content, str) else extract_text(content, "\n")
            b.other(observation, text, content, timestamp=ts, origin=origin)
            continue
        skipped["unknown"] += 1
        report.aggregate("unknown_record_type",
                         "a history element is neither an action nor an observation; skipped",
                         line=line, pointer=origin.pointer)

    if duplicates:
        report("info", "duplicates_skipped",
               plural(duplicates, "repeated observation of an already answered call was",
                      "repeated observations of an already answered call were") + " dropped",
               line=line, count=duplicates)
    report.flush({"unknown_record_type": lambda n: f"{plural(n, 'history element')} of unknown kind "
                                                   "made no event"})
    out.models = models
    out.skipped = dict(skipped)
    return out
