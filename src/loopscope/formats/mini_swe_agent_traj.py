"""mini-swe-agent ``.traj.json`` — ``mini_swe_agent_traj``.

mini-swe-agent (``minisweagent.run.utils.save.save_traj``) saves one JSON object per run:
``{"info": {"exit_status", "submission", "model_stats": {"instance_cost", "api_calls"},
"config": {"agent", "model", "environment", …}, "mini_version"}, "messages": [...],
"trajectory_format": "mini-swe-agent-1" | "mini-swe-agent-1.1"}``. ``messages`` is the agent's
chat with its model (``role`` ``system`` / ``user`` / ``assistant``, ``content`` text; later
versions add ``extra``):

* an assistant message's action is its **single** fenced ``bash`` block (``mswea_bash_command``
  from version 2), matched as the agent matches it (``DefaultAgent.parse_action``: exactly one
  block, its inside stripped); it is one call named ``bash`` with the arguments
  ``{"command": …}``. A message with no block or several made no call: the agent answered it
  with its format-error message, which is read as a user message;
* the observation is the **next** message when it is a user message — the rendered
  ``<returncode>…</returncode><output>…</output>`` template, a timeout message, or the
  submission the agent ended with — and is the call's result (its return code, when the
  text starts with one, goes to the result's ``meta``);
* a tool-calling model's assistant messages carry OpenAI ``tool_calls``, answered by ``tool``
  messages with their ``tool_call_id``: those are read as such.

One file, one session; the model comes from ``info.config.model.model_name``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from loopscope.formats._ext_common import CandidateReporter, as_dict, extract_text
from loopscope.formats.base import ImportContext
from loopscope.formats.builder import CallDraft, SessionBuilder
from loopscope.formats.tally import MINI_SWE_ACTION
from loopscope.model import AgentInfo, Origin, Session
from loopscope.words import plural

FORMAT_ID = "mini_swe_agent_traj"

AGENT = AgentInfo("mini-swe-agent", None)

_RETURNCODE = re.compile(r"\A\s*<returncode>\s*(-?\d{1,6})\s*</returncode>")

__all__ = ["FORMAT_ID", "action_of", "import_document"]


def action_of(text: str) -> str | None:
    """The command of an assistant reply: the inside of its one fenced ``bash`` (or
    ``mswea_bash_command``) block, stripped; ``None`` when it holds none or several."""
    actions = MINI_SWE_ACTION.findall(text)
    return actions[0].strip() if len(actions) == 1 else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else extract_text(value, "\n")


def import_document(value: Any, ctx: ImportContext) -> Iterator[Session | None]:
    report = CandidateReporter(ctx, None)
    messages = value.get("messages") if isinstance(value, dict) else None
    if not isinstance(messages, list):
        report("error", "session_failed", "a mini-swe-agent trajectory is an object with a "
                                          "'messages' list")
        yield None
        return
    info = as_dict(value.get("info"))
    config = as_dict(info.get("config"))
    model_name = as_dict(config.get("model")).get("model_name")
    model = model_name if isinstance(model_name, str) and model_name else None
    b = SessionBuilder()
    pending: CallDraft | None = None  # the bash call the next user message answers
    skipped = 0
    for i, message in enumerate(messages):
        origin = Origin(pointer=f"/messages/{i}")
        if not isinstance(message, dict):
            skipped += 1
            continue
        role = message.get("role")
        content = message.get("content")
        text = _text(content)
        if role == "user" and pending is not None:
            returncode = _RETURNCODE.match(text)
            b.result(pending.id, content, text, structure_call=pending, origin=origin,
                     meta={"returncode": int(returncode.group(1))} if returncode else None)
            pending = None
            continue
        pending = None
        if role == "assistant":
            turn = b.assistant(text, content, model=model, origin=origin)
            tool_calls = message.get("tool_calls")
            if isinstance(tool_calls, list) and tool_calls:
                for call in tool_calls:
                    call = as_dict(call)
                    function = as_dict(call.get("function"))
                    arguments = function.get("arguments")
                    b.call(turn, function.get("name"), arguments,
                           "json_text" if isinstance(arguments, str) else "value",
                           id=call.get("id"), origin=origin)
                continue
            command = action_of(text)
            if command is not None:
                pending = b.call(turn, "bash", {"command": command}, "value",
                                 id=f"ls-{b.call_count}", id_synthetic=True, origin=origin)
        elif role == "tool":
            name = message.get("name")
            b.result(message.get("tool_call_id"), content, text, origin=origin,
                     name=name if isinstance(name, str) else None)
        elif role == "user":
            b.user(text, content, origin=origin)
        elif role == "system":
            b.system(text, content, origin=origin)
        else:
            b.other(role if isinstance(role, str) else None, text, content, origin=origin)
    if skipped:
        report("warning", "invalid_record", f"{plural(skipped, 'message is', 'messages are')} not objects; they were "
                                            "skipped", count=skipped)
    metadata: dict[str, Any] = {}
    for key in ("exit_status", "mini_version"):
        if isinstance(info.get(key), str):
            metadata[key] = info[key]
    stats = as_dict(info.get("model_stats"))
    for key in ("api_calls", "instance_cost"):
        if isinstance(stats.get(key), int | float) and not isinstance(stats.get(key), bool):
            metadata[key] = stats[key]
    for key in ("trajectory_format", "instance_id"):
        if isinstance(value.get(key), str):
            metadata[key] = value[key]
    yield b.build(id="", source=ctx.path, format=FORMAT_ID, agent=AGENT,
                  models=[model] if model else [], metadata=metadata, report=report)
