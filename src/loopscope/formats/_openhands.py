"""Shared mapping of an OpenHands event history (sessions spec §2.9).

Used by ``openhands_events`` (a JSON array of events, one session) and ``openhands_output``
(evaluation ``output.jsonl``, one instance per line).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from loopscope.formats._ext_common import CandidateReporter, as_str, extract_text
from loopscope.formats.builder import CallDraft, SessionBuilder, TurnDraft
from loopscope.model import Origin

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


def map_history(history: Sequence[Any], report: CandidateReporter, *,
                line: int | None = None, pointer_prefix: str = "") -> History:
    """Map one event list onto a :class:`SessionBuilder` (sessions spec §2.9)."""
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

    for event, index in flatten(history):
        origin = Origin(line=line, pointer=f"{pointer_prefix}/{index}")
        if not isinstance(event, dict):
            skipped["non-object"] += 1
            report.aggregate("unknown_record_type", "a history element is not an object; skipped",
                             line=line, pointer=origin.pointer)
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
                content = _args_content(args)
                text = content if isinstance(content, str) else as_str(event.get("message")) or ""
                b.system(text, content, timestamp=ts, origin=origin)
                continue
            if action == "condensation":
                turn = None
                summary = args.get("summary") if isinstance(args, dict) else None
                b.compaction(summary if isinstance(summary, str) else "", timestamp=ts,
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
                content = _args_content(args)
                text = content if isinstance(content, str) else as_str(event.get("message")) or ""
                b.assistant(text, content, timestamp=ts, origin=origin)
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
               f"{duplicates} repeated observation(s) of an already answered call were dropped",
               line=line, count=duplicates)
    report.flush({"unknown_record_type": lambda n: f"{n} history element(s) of unknown kind "
                                                   "made no event"})
    out.models = models
    out.skipped = dict(skipped)
    return out
