"""Differential-test bridge: replays event lists through the real ``openhands-sdk`` (1.58.2).

Run with the Python that has the SDK installed (Python >= 3.12; loopscope itself never imports
the SDK). Reads ``{"cases": [...]}`` as JSON on stdin; each case is

    {"config": {"enabled": bool, "action_observation": int, "action_error": int,
                "monologue": int, "alternating_pattern": int, "max_events": int},
     "items": [...]}

with items, in log order:

* ``["user", text]`` — a user ``MessageEvent``;
* ``["reply", text]`` — an assistant reply without tool calls: the agent ``MessageEvent``, and
  OpenHands' own corrective message when the SDK's ``classify_response`` finds no content;
* ``["action", tool_name, thought_texts, argument_text]`` — the argument text goes through the
  SDK's ``parse_tool_call_arguments``; when it does not parse, the SDK's own
  ``Agent._get_action_event`` writes ``ActionEvent(action=None)`` and the ``AgentErrorEvent``;
  otherwise an ``ActionEvent`` with ``MCPToolAction(data=...)``;
* ``["observation", tool_name, text]`` / ``["error", tool_name, text]`` — a result:
  ``ObservationEvent(MCPToolObservation)`` or ``AgentErrorEvent``;
* ``["condensation"]`` — a ``Condensation``;
* ``["check"]`` — ``LocalConversation._check_stuck_or_nudge()`` of a real conversation.

Events are appended through the conversation's own event callback (``_on_event``), so they
are stamped and stored by the SDK's ``ConversationState``/``EventLog``. A stop (status
``STUCK``) is recorded and the status set back to running, as a later ``run()`` does, so the
replay goes on (shadow mode). For a stop the bridge asks the detector's own pattern methods,
in ``is_stuck``'s order, which one held and its count.

Optional ``"snippets"``: configurations exported by loopscope as Python, each executed with the
SDK (``agent`` and ``workspace`` provided) to read back what its conversation runs with.

Writes ``{"sdk", "results": [{"checks": [...], "parsed": [...]}], "snippets": [...]}`` to
stdout: per check ``{"verdict", "detector", "count", "message", "scan"}``; per action the parsed
arguments as JSON text or the error text.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import tempfile
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")
os.environ.setdefault("LOG_LEVEL", "ERROR")

import openhands.sdk.conversation.stuck_detector as stuck_module
from openhands.sdk import LLM, Agent
from openhands.sdk.agent.response_dispatch import LLMResponseType, classify_response
from openhands.sdk.agent.utils import parse_tool_call_arguments
from openhands.sdk.conversation.impl.local_conversation import LocalConversation
from openhands.sdk.conversation.state import ConversationExecutionStatus
from openhands.sdk.conversation.stuck_detector import StuckDetector
from openhands.sdk.conversation.types import StuckDetectionThresholds
from openhands.sdk.event import (
    ActionEvent,
    AgentErrorEvent,
    MessageEvent,
    ObservationEvent,
)
from openhands.sdk.event.condenser import Condensation
from openhands.sdk.llm import Message, MessageToolCall, TextContent
from openhands.sdk.mcp.definition import MCPToolAction, MCPToolObservation
from pydantic import SecretStr

logging.disable(logging.CRITICAL)

WORKSPACE = tempfile.mkdtemp(prefix="loopscope-openhands-bridge-")
AGENT = Agent(llm=LLM(model="gpt-4o-mini", api_key=SecretStr("unused"), usage_id="bridge"),
              tools=[])


def _pattern(detector: StuckDetector) -> tuple[str, int]:
    """Which pattern made ``is_stuck()`` true, asked in ``is_stuck``'s order, and its count."""
    t = detector.thresholds
    events = detector._events_since_last_user_message()
    max_needed = max(t.action_observation, t.action_error + 1)
    actions, observations = detector._collect_actions_and_observations(events, max_needed)
    if detector._is_stuck_repeating_action_observation(actions, observations):
        return "action_observation", t.action_observation
    if detector._is_stuck_repeating_action_error(actions, observations):
        return "action_error", detector._action_error_streak(actions, observations)
    if detector._is_stuck_monologue(events):
        count = t.monologue
        while True:  # the walk's count: the largest threshold that still holds
            probe = StuckDetector(detector.state, StuckDetectionThresholds(
                action_observation=t.action_observation, action_error=t.action_error,
                monologue=count + 1, alternating_pattern=t.alternating_pattern))
            if not probe._is_stuck_monologue(events):
                return "monologue", count
            count += 1
    if (len(events) >= t.alternating_pattern
            and detector._is_stuck_alternating_action_observation(events)):
        return "alternating_pattern", t.alternating_pattern
    raise AssertionError("is_stuck() was true but no pattern holds")


def run_case(case: dict[str, Any], number: int) -> dict[str, Any]:
    config = case["config"]
    stuck_module.MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION = config.get("max_events", 20)
    thresholds = StuckDetectionThresholds(
        action_observation=config["action_observation"], action_error=config["action_error"],
        monologue=config["monologue"], alternating_pattern=config["alternating_pattern"])
    conversation = LocalConversation(
        agent=AGENT, workspace=WORKSPACE, visualizer=None,
        stuck_detection=config["enabled"], stuck_detection_thresholds=thresholds)
    emit = conversation._on_event
    state = conversation.state
    checks: list[dict[str, Any]] = []
    parsed: list[dict[str, Any]] = []
    calls = 0
    last_action: ActionEvent | None = None
    for item in case["items"]:
        kind = item[0]
        if kind == "user":
            emit(MessageEvent(source="user", llm_message=Message(
                role="user", content=[TextContent(text=item[1])])))
        elif kind == "reply":
            message = Message(role="assistant", content=[TextContent(text=item[1])])
            emit(MessageEvent(source="agent", llm_message=message, llm_response_id="r"))
            if classify_response(message) in (LLMResponseType.EMPTY,
                                               LLMResponseType.REASONING_ONLY):
                AGENT._send_corrective_nudge(emit)
        elif kind == "action":
            _, name, thought, text = item
            calls += 1
            tool_call = MessageToolCall(id=f"c{number}-{calls}", name=name, arguments=text,
                                        origin="completion")
            thought_content = [TextContent(text=t) for t in thought]
            try:
                data = parse_tool_call_arguments(text)
            except json.JSONDecodeError:
                before = len(state.events)
                AGENT._get_action_event(tool_call, conversation=conversation,
                                        llm_response_id="r", on_event=emit,
                                        thought=thought_content)
                written = list(state.events)[before:]
                assert [type(e) for e in written] == [ActionEvent, AgentErrorEvent], written
                assert written[0].action is None
                parsed.append({"error": written[1].error})
                last_action = None
                continue
            parsed.append({"data": json.dumps(data)})
            last_action = ActionEvent(
                source="agent", thought=thought_content, action=MCPToolAction(data=data),
                tool_name=name, tool_call_id=tool_call.id, tool_call=tool_call,
                llm_response_id="r")
            emit(last_action)
        elif kind == "observation":
            _, name, text = item
            emit(ObservationEvent(
                observation=MCPToolObservation(content=[TextContent(text=text)], is_error=False,
                                               tool_name=name),
                action_id=last_action.id if last_action is not None else "none",
                tool_name=name, tool_call_id="r"))
        elif kind == "error":
            _, name, text = item
            emit(AgentErrorEvent(error=text, tool_name=name, tool_call_id="r"))
        elif kind == "condensation":
            emit(Condensation(llm_response_id="r"))
        elif kind == "check":
            checks.append(_check(conversation))
        else:
            raise ValueError(f"unknown item {kind!r}")
    return {"checks": checks, "parsed": parsed}


def _check(conversation: LocalConversation) -> dict[str, Any]:
    state = conversation.state
    detector = conversation.stuck_detector
    before = len(state.events)
    stuck = conversation._check_stuck_or_nudge()
    out: dict[str, Any] = {"verdict": "pass", "detector": None, "count": None,
                           "message": None, "scan": None}
    if len(state.events) > before:
        assert detector is not None and not stuck
        nudge = state.events[-1]
        assert isinstance(nudge, MessageEvent) and nudge.source == "environment"
        out.update(verdict="warn", detector="action_error",
                   count=detector.thresholds.action_error,
                   message=nudge.llm_message.content[0].text)
    elif stuck:
        assert detector is not None
        assert state.execution_status == ConversationExecutionStatus.STUCK
        name, count = _pattern(detector)
        out.update(verdict="refuse", detector=name, count=count)
        state.execution_status = ConversationExecutionStatus.RUNNING  # shadow mode
    if detector is not None:
        out["scan"] = len(detector._events_since_last_user_message())
    return out


def run_snippet(code: str) -> dict[str, Any]:
    """Execute an exported configuration (loopscope's own generated Python, never input) with
    the SDK, and read back what the conversation it builds runs with."""
    namespace: dict[str, Any] = {"agent": AGENT, "workspace": WORKSPACE}
    exec(compile(code, "<export>", "exec"), namespace)
    conversation = namespace["conversation"]
    detector = conversation.stuck_detector
    return {"stuck_detection": detector is not None,
            "thresholds": namespace["stuck_detection_thresholds"].model_dump(),
            "detector_thresholds": None if detector is None else detector.thresholds.model_dump()}


def main() -> None:
    request = json.load(sys.stdin)
    results = [run_case(case, n) for n, case in enumerate(request["cases"])]
    snippets = [run_snippet(code) for code in request.get("snippets", [])]
    json.dump({"sdk": _sdk_version(), "results": results, "snippets": snippets}, sys.stdout)
    shutil.rmtree(WORKSPACE, ignore_errors=True)


def _sdk_version() -> str:
    from importlib.metadata import version

    return version("openhands-sdk")


if __name__ == "__main__":
    main()
