"""Tool calls written in the assistant's text: ReAct / "act" transcripts.

Agents without native function calling write each call into their reply and get the answer
back as the next (user-role) message. Two shapes are read:

* **tau-bench** ``react`` and ``act`` strategies (``tau_bench/agents/chat_react_agent.py``): the
  reply is ``Thought:\\n…\\nAction:\\n{"name": …, "arguments": …}`` (``act`` writes only the
  ``Action:`` part). The agent takes the text after the **last** ``Action:``, stripped, as JSON
  with ``name`` and ``arguments``; the next message is ``"API output: " + observation``. The
  action named ``respond`` is a reply to the user, not a tool call (its user-role answer comes
  from the user simulator and is a user turn).
* **LangChain-style ReAct**: ``Action: <tool>`` and ``Action Input: <input>`` lines; the next
  message, when it starts with ``Observation:``, is the answer.

Only sessions without any structured tool call are read this way (a session that has native
calls is never reinterpreted), and the importer says so with a ``text_actions`` info.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["RESPOND_ACTION", "TextAction", "observation_text", "parse_text_action"]

RESPOND_ACTION = "respond"  # tau_bench.types.RESPOND_ACTION_NAME
_API_OUTPUT = "API output: "
_LANGCHAIN_ACTION = re.compile(
    r"^[ \t]*Action[ \t]*:[ \t]*(?P<name>[^\n]*?)[ \t]*\n[ \t]*Action[ \t]+Input[ \t]*:[ \t]*"
    r"(?P<input>.*?)(?=\n[ \t]*Observation[ \t]*:|\Z)", re.S | re.M)
_OBSERVATION = re.compile(r"^\s*Observation[ \t]*:[ \t]*", re.I)


@dataclass(frozen=True, slots=True)
class TextAction:
    name: str
    arguments: Any
    """The parsed ``arguments`` value (tau-bench), or the input text (LangChain)."""
    kind: str
    """``value`` (parsed JSON) or ``free_text``."""
    style: str
    """``tau-bench`` or ``langchain``; ``respond`` actions carry ``tau-bench`` too."""


def _json_action(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(value, dict) and "name" in value and "arguments" in value \
            and isinstance(value["name"], str):
        return value
    return None


def parse_text_action(text: str) -> TextAction | None:
    """The call an assistant reply writes, if it writes one (see the module docstring)."""
    if "Action" not in text:
        return None
    if "Action:" in text:
        action = _json_action(text.split("Action:")[-1].strip())
        if action is not None:
            return TextAction(action["name"], action["arguments"], "value", "tau-bench")
    matches = list(_LANGCHAIN_ACTION.finditer(text))
    match = matches[-1] if matches else None  # the last one: what the agent executes
    if match is not None and match.group("name"):
        raw = match.group("input").strip()
        return TextAction(match.group("name"), raw, "free_text", "langchain")
    return None


def observation_text(text: str, style: str) -> str | None:
    """The answer a user-role message carries for a text action, or ``None`` when it is a
    real user message."""
    if style == "tau-bench":
        return text[len(_API_OUTPUT):] if text.startswith(_API_OUTPUT) else None
    match = _OBSERVATION.match(text)
    return text[match.end():] if match else None
