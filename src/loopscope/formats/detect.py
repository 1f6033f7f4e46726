"""Format detection from the content, never only the file name: head sniff, layout, then
signatures (document rows ``D1``–``D12``, JSONL record rows ``L1``–``L16``, named in the reasons).

:func:`probe` does the work and keeps what it parsed (a whole document is parsed once);
``detect_format`` (in :mod:`loopscope.formats`) returns only its :class:`Detection`. Every
format id has its signature here, whether or not its importer exists yet.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from loopscope.formats import archive as archive_mod
from loopscope.formats import jsonio
from loopscope.formats import opencode_session as _opencode_db
from loopscope.formats.base import Detection, ImportContext, ImportLimits, Layout
from loopscope.formats.cline_task import is_api_history, is_task_metadata, is_ui_messages
from loopscope.formats.langfuse_observations import is_observation
from loopscope.formats.langsmith_runs import is_run
from loopscope.formats.opencode_markdown import looks_like_export as _opencode_markdown
from loopscope.formats.opencode_session import is_export as _opencode_export
from loopscope.formats.opencode_session import is_storage_record as _opencode_record
from loopscope.formats.opencode_session import is_storage_session as _opencode_stored
from loopscope.formats.openinference_spans import is_span
from loopscope.formats.otel_console import is_console_span
from loopscope.formats.otel_genai import is_otlp
from loopscope.formats.qwen_code_chat import is_record as is_qwen_record
from loopscope.formats.text import type_of
from loopscope.model import escape_for_display
from loopscope.words import plural

__all__ = [
    "RESPONSES_ITEM_TYPES",
    "Probe",
    "content_test",
    "describe_record",
    "describe_value",
    "document_signature",
    "probe",
    "record_signatures",
]

HEAD_BYTES = 64 * 1024
SAMPLE_RECORDS = 50
PRELOAD_BYTES = 8 * 1024 * 1024
"""Files up to this size (and ``max_line_bytes``) are read once, whole: detection and import
then work on those bytes instead of opening the file three or four times."""
MARKDOWN_HEADING = "# Claude Session Export"
_MARKDOWN_HEADING_BYTES = MARKDOWN_HEADING.encode()

RESPONSES_ITEM_TYPES = frozenset({
    "message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
    "custom_tool_call_output", "local_shell_call", "local_shell_call_output", "web_search_call",
    "file_search_call", "code_interpreter_call", "computer_call", "computer_call_output",
    "image_generation_call", "mcp_call", "mcp_list_tools", "mcp_approval_request",
    "mcp_approval_response", "item_reference",
})

FORMAT_NAMES = {
    "openai_chat": "OpenAI chat messages",
    "openai_responses": "OpenAI Responses items",
    "anthropic_messages": "Anthropic messages",
    "openclaw_session": "OpenClaw/pi session",
    "claude_code": "Claude Code session",
    "codex_rollout": "Codex rollout",
    "gemini_cli_stream": "Gemini CLI stream-json",
    "gemini_cli_chat": "Gemini CLI chat recording",
    "qwen_code_chat": "Qwen Code chat recording",
    "openhands_events": "OpenHands events",
    "openhands_output": "OpenHands output",
    "swe_agent_traj": "SWE-agent trajectory",
    "tau_bench": "tau-bench results",
    "inspect_eval": "inspect_ai eval log",
    "claude_code_markdown": "Claude Code markdown export",
    "claude_managed_events": "Claude managed-agents events",
    "openinference_spans": "OpenInference spans (Phoenix)",
    "langsmith_runs": "LangSmith runs",
    "langfuse_observations": "Langfuse observations",
    "otel_genai": "OpenTelemetry spans (OTLP JSON)",
    "otel_console": "OpenTelemetry console exporter",
    "mini_swe_agent_traj": "mini-swe-agent trajectory",
    "cursor_specstory": "Cursor (SpecStory Markdown)",
    "aider_history": "Aider chat history",
    "cline_task": "Cline / Roo Code task",
    "opencode_session": "opencode session",
    "opencode_markdown": "opencode export (Markdown)",
}

NOT_A_RECORDING = "not a session recording loopscope reads"
"""How an ``unknown_format`` message starts; what the file is follows in parentheses."""

_SIGNATURE_ID = re.compile(r" \(([DL]\d{1,2})\)|\(([DL]\d{1,2}), ")


def plain_reason(reason: str) -> tuple[str, tuple[str, ...]]:
    """A detection reason without its signature row ids: ``"JSON array of messages (D10,
    OpenAI chat messages by …)"`` → ``("JSON array of messages (OpenAI chat messages by …)",
    ("D10",))``. The ids name rows of the detection table (for a developer, a tooltip); a
    person reads the words."""
    ids: list[str] = []

    def drop(match: re.Match[str]) -> str:
        ids.append(match.group(1) or match.group(2))
        return "" if match.group(1) else "("

    return _SIGNATURE_ID.sub(drop, reason), tuple(ids)


def formats_read() -> str:
    """"OpenAI chat messages, …, OpenTelemetry GenAI spans (OTLP JSON)": every format
    loopscope reads, in :data:`FORMAT_NAMES` order (a new importer's name joins the list)."""
    return ", ".join(FORMAT_NAMES.values())


def _binary(head: bytes) -> bool:
    """Bytes no text file holds: a NUL, or (not UTF-16) a tenth or more of the first 4 KiB
    invalid UTF-8 or control characters other than tab, newline, form feed and return."""
    if b"\x00" in head:
        return True
    sample = head[:4096].decode("utf-8", "replace")
    odd = sum(1 for c in sample if c == "\ufffd" or (c < " " and c not in "\t\n\r\f\x1b"))
    return len(sample) >= 16 and odd * 10 >= len(sample)


# ------------------------------------------------------------------------ descriptions


def _keys(value: dict[str, Any], limit: int = 6) -> str:
    keys = [f'"{escape_for_display(str(k), 40)}"' for k in list(value)[:limit]]
    more = len(value) - limit
    return ", ".join(keys) + (f" and {more} more" if more > 0 else "")


def _type_name(value: Any, plural: bool = False) -> str:
    if value is None:
        name = "null"
    elif isinstance(value, bool):
        name = "boolean"
    elif isinstance(value, int | float):
        name = "number"
    elif isinstance(value, str):
        name = "string"
    elif isinstance(value, list):
        name = "array"
    elif isinstance(value, dict):
        name = "object"
    else:
        name = "value"
    return name + ("s" if plural and name != "null" else "")


def describe_value(value: Any) -> str:
    """What a JSON document looks like, for ``unknown_format`` messages."""
    if isinstance(value, dict):
        if not value:
            return "empty JSON object"
        return f"JSON object with keys {_keys(value)}"
    if isinstance(value, list):
        if not value:
            return "empty JSON array"
        kinds = {_type_name(v) for v in value}
        if len(kinds) == 1:
            kind = next(iter(kinds))
            return f"JSON array of {len(value)} {_type_name(value[0], len(value) != 1)}" + (
                f" (first with keys {_keys(value[0])})" if kind == "object" and value[0] else "")
        return f"JSON array of {len(value)} mixed values"
    return f"a single JSON {_type_name(value)}"


def describe_record(value: Any) -> str:
    if isinstance(value, dict):
        if not value:
            return "JSON Lines; first record is an empty object"
        return f"JSON Lines; first record has keys {_keys(value)}"
    return f"JSON Lines; first record is a JSON {_type_name(value)}"


# ------------------------------------------------------------------------ content test


def _messages_of(value: Any) -> Iterable[Any]:
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        return value["messages"]
    if isinstance(value, list):
        return value
    return ()


_OPENAI_CHAT_FIELDS = frozenset({"tool_calls", "tool_call_id", "function_call"})


def _openai_chat_fields(messages: Iterable[Any]) -> bool:
    """Whether a message (an object) has an OpenAI tool field or the role ``tool`` or
    ``function``: the test of :func:`content_test` on every message, the keys of all gathered
    in one set (in C) instead of three lookups per message (an Anthropic request body is
    decided by its ``system`` and read to its end)."""
    objects = [m for m in messages if isinstance(m, dict)]
    if not _OPENAI_CHAT_FIELDS.isdisjoint(set().union(*objects)):
        return True
    roles = [m.get("role") for m in objects]
    return "tool" in roles or "function" in roles  # (== on each: a role may be a list)


def content_test(messages: Iterable[Any], top_level_system: bool = False) -> str:
    """openai_chat / anthropic_messages / openai_responses for a sample of messages: OpenAI tool
    fields first, then Anthropic blocks, then Responses parts; plain text is openai_chat (it
    gives the same events in all three)."""
    anthropic = top_level_system
    responses = False
    remaining = iter(messages)
    for message in remaining:
        if not isinstance(message, dict):
            continue
        if ("tool_calls" in message or "tool_call_id" in message or "function_call" in message
                or message.get("role") in ("tool", "function")):
            return "openai_chat"
        if anthropic:
            # Decided unless a later message is OpenAI chat: their blocks cannot matter.
            return "openai_chat" if _openai_chat_fields(remaining) else "anthropic_messages"
        if type_of(message) in RESPONSES_ITEM_TYPES:
            responses = True
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                btype = type_of(block)
                if btype in ("tool_use", "tool_result", "thinking", "redacted_thinking",
                             "server_tool_use"):
                    anthropic = True
                elif btype in ("input_text", "output_text"):
                    responses = True
    if anthropic:
        return "anthropic_messages"
    if responses:
        return "openai_responses"
    return "openai_chat"


# ------------------------------------------------------------------------ documents


def _is_message_list(value: Any) -> bool:
    return (isinstance(value, list) and bool(value) and all(isinstance(m, dict) for m in value)
            and any("role" in m for m in value))


def _is_conversation(value: Any) -> bool:
    return (isinstance(value, list) and all(isinstance(m, dict) for m in value)) or (
        isinstance(value, dict) and isinstance(value.get("messages"), list))


_TRACE_STORES = (
    (is_span, "openinference_spans", "OpenInference spans"),
    (is_run, "langsmith_runs", "LangSmith runs"),
    (is_observation, "langfuse_observations", "Langfuse observations"),
)


def _trace_store(v: Any) -> Detection | None:
    """D11: trace-store exports — an OTLP JSON export; an array of OpenInference spans,
    LangSmith runs or Langfuse observations (most elements; other rows are reported), or the
    object an API returns around them (``spans``, ``runs``, ``data``, ``observations``)."""
    doc: Layout = "document"
    if is_otlp(v):
        return Detection("otel_genai", doc, "OTLP JSON export with resourceSpans (D11)")
    if is_console_span(v):
        return Detection("otel_console", doc, "a span as the OpenTelemetry console exporter "
                                              "prints it (D11)")
    if isinstance(v, list) and v and sum(1 for item in v[:SAMPLE_RECORDS]
                                         if is_console_span(item)) * 2 > len(v[:SAMPLE_RECORDS]):
        return Detection("otel_console", doc, "JSON array of OpenTelemetry console-exporter "
                                              "spans (D11)")
    items = v
    if isinstance(v, dict):
        items = next((v[k] for k in ("spans", "runs", "data", "observations")
                      if isinstance(v.get(k), list)), None)
    if not isinstance(items, list) or not items:
        return None
    sample = items[:SAMPLE_RECORDS]
    for test, format_id, what in _TRACE_STORES:
        hits = sum(1 for item in sample if test(item))
        if hits * 2 > len(sample):
            return Detection(format_id, doc, f"JSON array of {what} (D11)")
    return None


def _agent_stores(v: Any) -> Detection | None:
    """D12: the files coding agents keep of a task, before D10 reads them as chat messages —
    Cline / Roo Code's ``ui_messages.json`` (``ts``/``type``/``ask|say`` records) and
    ``api_conversation_history.json`` (role messages with ``[tool] Result:`` blocks, a
    ``<task>`` or ``<environment_details>``) and ``task_metadata.json``; an opencode export
    (``info`` and messages of ``info`` + ``parts``) or a session, message or part file of
    opencode's storage."""
    doc: Layout = "document"
    if isinstance(v, list):
        if is_ui_messages(v):
            return Detection("cline_task", doc, "JSON array of Cline/Roo Code UI messages "
                                                "(ts, type, ask|say) (D12)")
        if is_api_history(v):
            return Detection("cline_task", doc, "JSON array of messages with Cline's tool "
                                                "result blocks or environment details (D12)")
    elif isinstance(v, dict):
        if is_task_metadata(v):
            return Detection("cline_task", doc, "Cline task metadata (files_in_context, "
                                                "model_usage) (D12)")
        if _opencode_export(v):
            return Detection("opencode_session", doc,
                             "JSON object with info and messages of info + parts (D12, "
                             "opencode export)")
        if _opencode_stored(v):
            return Detection("opencode_session", doc,
                             "opencode storage session file (id ses_…, projectID) (D12)")
        if _opencode_record(v):
            return Detection("opencode_session", doc,
                             "opencode storage message or part file (id msg_… / prt_…) (D12)")
    return None


def _is_gemini_contents(value: Any) -> bool:
    """A list of Gemini API ``Content`` objects (``{"role": "user" | "model", "parts": [...]}``),
    as Gemini CLI saves a conversation checkpoint, with at least one model turn."""
    return (isinstance(value, list) and bool(value)
            and all(isinstance(c, dict) and c.get("role") in ("user", "model")
                    and isinstance(c.get("parts"), list) for c in value)
            and any(c["role"] == "model" for c in value))


_RETURNCODE_OBSERVATION = re.compile(r"\A\s*<returncode>-?\d+</returncode>")


def _mini_swe_content(v: dict[str, Any]) -> bool:
    """A mini-swe-agent trajectory without its ``trajectory_format`` (a copy, another tool's
    re-save): ``info`` names the agent (``mini_version``, a ``minisweagent`` class), or the
    messages hold no OpenAI tool field and a reply with one fenced ``bash`` block is answered
    by a ``<returncode>`` observation."""
    messages = v.get("messages")
    if not isinstance(messages, list) or not messages:
        return False
    info = v.get("info")
    if isinstance(info, dict):
        config = info.get("config")
        agent_type = config.get("agent_type") if isinstance(config, dict) else None
        if "mini_version" in info or (isinstance(agent_type, str)
                                      and agent_type.startswith("minisweagent.")):
            return True
    if _openai_chat_fields(messages):
        return False
    previous: Any = None
    for message in messages:
        if (isinstance(message, dict) and message.get("role") == "user"
                and isinstance(previous, dict) and previous.get("role") == "assistant"
                and isinstance(message.get("content"), str)
                and isinstance(previous.get("content"), str)
                and _RETURNCODE_OBSERVATION.match(message["content"])
                and previous["content"].count("```bash") == 1):
            return True
        previous = message
    return False


def document_signature(v: Any) -> Detection | None:
    """D1–D10 on a whole parsed value; ``None`` when nothing matches."""
    doc: Layout = "document"
    if isinstance(v, dict):
        if isinstance(v.get("eval"), dict) and (
                isinstance(v.get("samples"), list) or ("version" in v and "status" in v)):
            return Detection("inspect_eval", doc, "JSON object with eval and samples (D1)")
        trajectory = v.get("trajectory")
        if isinstance(trajectory, list) and (all(
                isinstance(step, dict) and "action" in step for step in trajectory) or (
                any(isinstance(step, dict) and "action" in step for step in trajectory)
                and ("history" in v or "info" in v))):
            # (A step without an action — a format error, a cost limit — does not make the
            # file something else.)
            return Detection("swe_agent_traj", doc,
                             "JSON object with a trajectory of actions (D2, SWE-agent)")
        attempts = v.get("attempts")
        if isinstance(attempts, list) and attempts and all(
                isinstance(a, dict) and isinstance(a.get("trajectory"), list) for a in attempts):
            return Detection("swe_agent_traj", doc,
                             "JSON object with attempts, each a trajectory (D2, SWE-agent "
                             "retry agent)")
        tf = v.get("trajectory_format")
        if isinstance(tf, str) and tf.startswith("mini-swe-agent"):
            return Detection("mini_swe_agent_traj", doc,
                             "JSON object with trajectory_format mini-swe-agent (D3)")
        if _mini_swe_content(v):
            return Detection("mini_swe_agent_traj", doc,
                             "JSON object with messages whose replies run one fenced bash block "
                             "and whose observations start with <returncode> (D3, "
                             "mini-swe-agent)")
    if isinstance(v, list) and v and isinstance(v[0], dict) and "task_id" in v[0] \
            and isinstance(v[0].get("traj"), list):
        return Detection("tau_bench", doc, "JSON array of task results with traj (D4)")
    if isinstance(v, dict):
        response = v.get("response")
        if isinstance(v.get("messages"), list) and isinstance(response, dict) \
                and "choices" in response:
            return Detection("openai_chat", doc, "JSON object with messages and response "
                                                 "(D5, litellm completion log)")
        messages = v.get("messages")
        if "sessionId" in v and isinstance(messages, list) and (all(
                isinstance(m, dict) and m.get("type") in ("user", "gemini", "info", "error",
                                                          "warning") for m in messages) or (
                ("projectHash" in v or "startTime" in v) and any(
                    isinstance(m, dict) and m.get("type") == "gemini" for m in messages))):
            # (A record type a newer Gemini CLI added does not make the file something else.)
            return Detection("gemini_cli_chat", doc,
                             "JSON object with sessionId and typed messages (D6, Gemini CLI)")
    if _is_gemini_contents(v) or (isinstance(v, dict) and _is_gemini_contents(v.get("history"))
                                  and "instance_id" not in v):
        return Detection("gemini_cli_chat", doc, "JSON array of Gemini API contents with role "
                                                 "and parts (D6, Gemini CLI checkpoint)")
    if isinstance(v, list) and v and all(
            isinstance(e, dict) and "source" in e and ("action" in e or "observation" in e)
            for e in v):
        return Detection("openhands_events", doc,
                         "JSON array of events with source and action/observation (D7)")
    if isinstance(v, list) and v and all(isinstance(e, dict) and isinstance(e.get("kind"), str)
                                         for e in v) \
            and any(e["kind"] in _OPENHANDS_V1_KINDS for e in v):
        return Detection("openhands_events", doc,
                         "JSON array of OpenHands V1 events tagged by kind (D7, openhands-sdk)")
    if isinstance(v, dict):
        if "instance_id" in v and isinstance(v.get("history"), list):
            return Detection("openhands_output", doc,
                             "JSON object with instance_id and history (D8, OpenHands)")
        if v.get("object") == "response" and isinstance(v.get("output"), list):
            return Detection("openai_responses", doc, "Responses API response object (D9)")
        for key in ("input", "output"):
            items = v.get(key)
            if isinstance(items, list) and any(
                    isinstance(i, dict) and type_of(i) in RESPONSES_ITEM_TYPES
                    for i in items):
                return Detection("openai_responses", doc,
                                 f"JSON object whose {key} holds Responses items (D9)")
    if isinstance(v, list) and v and all(
            isinstance(i, dict) and type_of(i) in RESPONSES_ITEM_TYPES for i in v) and any(
            i.get("type") != "message" for i in v):
        return Detection("openai_responses", doc, "JSON array of Responses items (D9)")
    found = _trace_store(v)
    if found is not None:
        return found
    found = _agent_stores(v)
    if found is not None:
        return found
    # D10
    if isinstance(v, dict) and isinstance(v.get("messages"), list):
        fmt = content_test(v["messages"], "system" in v)
        if fmt == "openai_responses":
            fmt = "openai_chat"
        return Detection(fmt, doc, f"JSON object with messages (D10, {FORMAT_NAMES[fmt]} by "
                                   "content)")
    if _is_message_list(v):
        fmt = content_test(v)
        return Detection(fmt, doc, f"JSON array of messages (D10, {FORMAT_NAMES[fmt]} by "
                                   "content)")
    if isinstance(v, list) and v and all(_is_conversation(e) for e in v) and any(
            _messages_of(e) for e in v):
        sample = [m for e in v for m in _messages_of(e)]
        system = any(isinstance(e, dict) and "system" in e for e in v)
        fmt = content_test(sample, system)
        if fmt == "openai_responses":
            fmt = "openai_chat"
        return Detection(fmt, doc, f"JSON array of {len(v)} conversations (D10, "
                                   f"{FORMAT_NAMES[fmt]} by content)")
    return None


# ------------------------------------------------------------------------ JSONL records

_CODEX_TYPES = frozenset({"session_meta", "response_item", "turn_context", "event_msg",
                          "compacted", "world_state"})
_PI_TYPES = frozenset({"message", "model_change", "thinking_level_change", "compaction",
                       "branch_summary", "custom", "custom_message", "label", "session_info"})
_CLAUDE_TYPES = frozenset({"user", "assistant", "system", "summary", "progress",
                           "file-history-snapshot", "queue-operation", "attachment"})
_GEMINI_CHAT_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
_OPENHANDS_V1_KINDS = frozenset({"ActionEvent", "ObservationEvent", "MessageEvent",
                                 "AgentErrorEvent", "SystemPromptEvent"})
_MANAGED_TYPE = re.compile(r"^(agent|user|session|span)\.[a-z_]+$")

_ROWS = [
    ("L1", "codex_rollout"), ("L2", "openclaw_session"), ("L3", "claude_code"),
    ("L4", "gemini_cli_stream"), ("L5", "gemini_cli_chat"), ("L6", "openhands_output"),
    ("L7", "claude_managed_events"), ("L8", "conversation"), ("L9", "message"),
    ("L10", "openai_responses"), ("L11", "otel_genai"), ("L12", "openinference_spans"),
    ("L13", "langsmith_runs"), ("L14", "langfuse_observations"), ("L15", "otel_console"),
    ("L16", "qwen_code_chat"),
]
_ROW_TEXT = {
    "L1": "type+payload (Codex rollout)",
    "L2": "pi/OpenClaw entries",
    "L3": "Claude Code lines",
    "L4": "Gemini CLI stream events",
    "L5": "Gemini CLI chat records",
    "L6": "instance_id+history (OpenHands output)",
    "L7": "managed-agents events",
    "L8": "a messages list (conversation per line)",
    "L9": "a role (message per line)",
    "L10": "a Responses item type",
    "L11": "OTLP JSON span exports",
    "L12": "OpenInference spans",
    "L13": "LangSmith runs",
    "L14": "Langfuse observations",
    "L15": "OpenTelemetry console-exporter spans",
    "L16": "Qwen Code chat records",
}


def _gemini_stream(r: dict[str, Any], stream_context: bool) -> bool:
    if "message" in r or "payload" in r:
        return False
    t = type_of(r)
    if t == "init":
        return "session_id" in r
    if t == "tool_use":
        return "tool_name" in r and "tool_id" in r
    if t == "tool_result":
        return "tool_id" in r and "status" in r
    if t == "result":
        return "stats" in r
    if t == "error":
        return "severity" in r
    if t == "message":
        return stream_context and "role" in r and isinstance(r.get("content"), str)
    return False


def _row(r: Any, first: bool, stream_context: bool) -> str | None:
    if not isinstance(r, dict):
        return None
    # Trace-store records first: their keys are their own (resourceSpans, a span context,
    # run_type with dotted_order, traceId with an observation type).
    if "resourceSpans" in r and is_otlp(r):
        return "L11"
    if "context" in r or "context.span_id" in r:
        if is_span(r):
            return "L12"
        if is_console_span(r):
            return "L15"
    elif "run_type" in r:
        if is_run(r):
            return "L13"
    elif "traceId" in r and is_observation(r):
        return "L14"
    t = type_of(r)
    if (t in _CODEX_TYPES and "payload" in r) or "record_type" in r or (
            first and "type" not in r and "id" in r and "timestamp" in r
            and "instructions" in r):
        return "L1"
    if (t == "session" and "version" in r) or (
            t in _PI_TYPES and "id" in r and "parentId" in r) or (
            t == "message" and isinstance(r.get("message"), dict)
            and "role" in r["message"]):
        return "L2"
    if is_qwen_record(r):
        return "L16"
    if t in _CLAUDE_TYPES and any(k in r for k in ("uuid", "sessionId", "leafUuid",
                                                   "messageId")):
        return "L3"
    if _gemini_stream(r, stream_context):
        return "L4"
    if ("sessionId" in r and "projectHash" in r) or (
            t in _GEMINI_CHAT_TYPES and "id" in r and "content" in r and "uuid" not in r) or (
            "$set" in r or "$rewindTo" in r):
        return "L5"
    if "instance_id" in r and isinstance(r.get("history"), list):
        return "L6"
    raw = r.get("raw")
    raw_type = type_of(raw) if isinstance(raw, dict) else None
    if (isinstance(raw_type, str) and _MANAGED_TYPE.match(raw_type)) or (
            isinstance(t, str) and _MANAGED_TYPE.match(t)):
        return "L7"
    if isinstance(r.get("messages"), list):
        return "L8"
    if "role" in r and t in (None, "message") and not any(k in r for k in ("raw", "kind",
                                                                           "payload")):
        return "L9"
    if t in RESPONSES_ITEM_TYPES:
        return "L10"
    return None


def record_signatures(records: list[Any]) -> Detection | None:
    """The rows of :data:`_ROWS` on the sampled records: the row matched by the most records
    wins (ties: :data:`_ROWS` order); ``None`` when no record matches."""
    if not records:
        return None
    stream_context = any(
        isinstance(r, dict) and "message" not in r and "payload" not in r
        and type_of(r) in ("init", "tool_use", "tool_result") and _gemini_stream(r, False)
        for r in records)
    rows = Counter(_row(r, i == 0, stream_context) for i, r in enumerate(records))
    rows.pop(None, None)
    if not rows:
        return None
    order = [name for name, _ in _ROWS]
    best = max(rows, key=lambda k: (rows[k], -order.index(str(k))))
    assert best is not None
    fmt = dict(_ROWS)[best]
    if best == "L8":
        sample = [m for r in records if isinstance(r, dict) for m in _messages_of(r)]
        system = any(isinstance(r, dict) and "system" in r for r in records)
        fmt = content_test(sample, system)
        if fmt == "openai_responses":
            fmt = "openai_chat"
    elif best == "L9":
        fmt = content_test(records)
    label = FORMAT_NAMES[fmt]
    return Detection(fmt, "jsonl", f"JSONL; {rows[best]} of {len(records)} sampled records have "
                                   f"{_ROW_TEXT[best]} ({best}, {label})")


# ------------------------------------------------------------------------ borrowed names

# The record names of recorders whose records carry their content under one key: a record
# with the name and without that content is no record of theirs.
_BORROWABLE: tuple[tuple[str, frozenset[str], str, str], ...] = (
    ("codex_rollout", _CODEX_TYPES, "payload", "payload object"),
    ("claude_code", frozenset({"user", "assistant"}), "message", "message object"),
    ("openclaw_session", frozenset({"message"}), "message", "message object"),
)


def borrowed_names(sample: list[Any], detection: Detection | None) -> str | None:
    """The ``not_a_recording`` message for JSON Lines whose records only borrow a recorder's
    record names; ``None`` for anything else.

    A hand-written or model-written summary of a session often reuses the names it saw
    (``{"type": "response_item", "summary": "ran tests 3 times"}``): replaying it would
    replay nothing, and calling it an unknown format hides what it is. Such a file is named
    by its records' ``type`` (a Codex rollout's ``session_meta`` / ``response_item`` /
    ``event_msg``, Claude Code's ``user`` / ``assistant``, pi's ``message``), but not one
    sampled record of those names holds the object a real one carries (Codex's ``payload``,
    Claude Code's and pi's ``message``). A real recording has that object on every such
    record, so one is enough to keep a file as it was: a damaged record never turns a real
    file into "not a recording". Only files that detection took for that recorder, or for
    nothing, are examined (a file detected as another format is that format)."""
    if detection is not None and detection.format not in {f for f, *_ in _BORROWABLE}:
        return None
    records = [r for r in sample if isinstance(r, dict)]
    if not records or any("record_type" in r or "instructions" in r for r in records):
        return None  # (the first Codex rollouts: no type/payload wrapper)
    for format_id, names, key, what in _BORROWABLE:
        if detection is not None and detection.format != format_id:
            continue
        named = [r for r in records if type_of(r) in names]
        if not named or len(named) * 2 < len(records):
            continue
        if any(isinstance(r.get(key), dict) for r in records):
            return None
        shown = ", ".join(f'"{escape_for_display(n, 30)}"'
                          for n in sorted({str(type_of(r)) for r in named})[:4])
        return (f"not a recording: its records use the record names of a "
                f"{FORMAT_NAMES[format_id]} (type {shown}), but none of the "
                f"{plural(len(records), 'sampled record')} holds the {what} ({key!r}) a real one carries; it looks "
                f"like a summary or notes written from a session "
                f"({describe_record(sample[0])})")
    return None


# ------------------------------------------------------------------------ probe


@dataclass
class Probe:
    """What :func:`probe` found. ``error`` is a file-level failure ``(code, message, line)``;
    ``notes`` are problems found while probing ``(severity, code, message, line)``."""

    detection: Detection
    encoding: str = "utf-8"
    value: Any = None
    has_value: bool = False
    error: tuple[str, str, int | None] | None = None
    notes: list[tuple[str, str, str, int | None]] = field(default_factory=list)
    size: int = 0
    data: bytes | None = None
    """The file's content when it was read whole (small files, see ``PRELOAD_BYTES``)."""
    parsed: dict[int, jsonio.ParsedLine] = field(default_factory=dict)
    """JSONL lines detection parsed (line number → result), for the import to reuse."""


def _size(n: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor:
            return f"{n / factor:.1f} {unit}"
    return f"{n} bytes"


def _fail(layout: Any, code: str, message: str, reason: str, line: int | None = None,
          **kw: Any) -> Probe:
    return Probe(Detection(None, layout, reason), error=(code, message, line), **kw)


def _zip_detection(path: str, limits: ImportLimits) -> Probe:
    try:
        with archive_mod.open_archive(path, limits) as archive:
            names = archive.names()
    except archive_mod.ArchiveError as exc:
        if exc.code == "too_large":
            return _fail("zip", "too_large", f"zip archive: {exc.message}", "zip archive")
        return _fail("zip", "unknown_format",
                     f"{NOT_A_RECORDING} ({exc.message})", "zip archive")
    if "header.json" in names or any(n.startswith("samples/") for n in names):
        return Probe(Detection("inspect_eval", "zip",
                               "zip archive with header.json / samples/ (inspect_ai .eval)"))
    return _fail("zip", "unknown_format", f"{NOT_A_RECORDING} (zip archive)",
                 "zip archive")


def _sqlite_detection(path: str, size: int) -> Probe:
    """An SQLite database: opencode's ``opencode.db`` when it has its ``session``, ``message``
    and ``part`` tables (opencode 1.2 and later keep every session there)."""
    tables = _opencode_db.database_tables(path)
    if isinstance(tables, str):
        return _fail("unknown", "unreadable", f"cannot read the SQLite database ({tables})",
                     "SQLite database", size=size)
    if not tables >= _opencode_db.DB_TABLES:
        return _fail("unknown", "unknown_format", "not a recorded-session format (an SQLite "
                     "database without opencode's session, message and part tables)",
                     "SQLite database", size=size)
    return Probe(Detection("opencode_session", "sqlite", "SQLite database with session, "
                                                         "message and part tables (opencode.db)"),
                 size=size)


def _first_content(path: str, encoding: str, data: bytes | None = None) -> tuple[bytes, bool]:
    """The first ``HEAD_BYTES`` of decoded content after leading whitespace; ``(b"", False)``
    when the file holds only whitespace. The flag says the head was cut."""
    collected = b""
    for chunk in jsonio.open_chunks(path, encoding, HEAD_BYTES, data=data):
        if not collected:
            chunk = chunk.lstrip()
            if not chunk:
                continue
        collected += chunk
        if len(collected) >= HEAD_BYTES:
            return collected[:HEAD_BYTES], True
    return collected, False


def _parses_as_object(data: bytes, limits: ImportLimits) -> bool:
    try:
        value, _ = jsonio.parse_line(data, limits)
    except jsonio.JsonError:
        return False
    return isinstance(value, dict)


def _looks_like_jsonl(path: str, encoding: str, limits: ImportLimits,
                      data: bytes | None = None) -> bool:
    """At least two of the first 20 non-empty lines parse alone as JSON objects."""
    good = seen = 0
    for raw in jsonio.file_lines(path, encoding, limits.max_line_bytes, data):
        if raw.data is not None and not raw.data.strip():
            continue
        seen += 1
        if raw.data is not None and _parses_as_object(raw.data, limits):
            good += 1
            if good >= 2:
                return True
        if seen >= 20:
            break
    return False


def probe(path: str, limits: ImportLimits) -> Probe:
    """Detect the format of ``path``; never raises for file content."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return _fail("unknown", "unreadable", f"cannot read the file ({_os_reason(exc)})",
                     "unreadable")
    if stat.S_ISDIR(st.st_mode):
        return _fail("unknown", "unreadable", "is a folder, not a file", "unreadable")
    size = st.st_size
    if size == 0:
        return _fail("unknown", "empty_file", "the file is empty", "empty file")
    if size > limits.max_file_bytes:
        return _fail("unknown", "too_large",
                     f"file is {_size(size)}, over the {_size(limits.max_file_bytes)} limit "
                     "(max_file_bytes); not read", "too large", size=size)
    data: bytes | None = None
    try:
        with open(path, "rb") as handle:
            if size <= min(PRELOAD_BYTES, limits.max_line_bytes):
                # Small enough to hold whole (no line can be over max_line_bytes).
                data = handle.read()
                head = data[:HEAD_BYTES]
            else:
                head = handle.read(HEAD_BYTES)
    except OSError as exc:
        return _fail("unknown", "unreadable", f"cannot read the file ({_os_reason(exc)})",
                     "unreadable")
    if head.startswith(b"PAR1"):  # Parquet: a Phoenix span dataframe, read by its importer
        return Probe(Detection("openinference_spans", "parquet",
                               "Parquet file (OpenInference span export)"), size=size)
    if head.startswith(_opencode_db.SQLITE_MAGIC):  # opencode.db, read by its importer
        return _sqlite_detection(path, size)
    if head.startswith(b"PK\x03\x04"):
        result = _zip_detection(path, limits)
        result.size = size
        return result
    encoding = jsonio.sniff_encoding(head)
    notes: list[tuple[str, str, str, int | None]] = []
    if encoding == "utf-16":
        notes.append(("info", "encoding", "the file is UTF-16; it was decoded", None))
        head = head.decode("utf-16", "replace").encode("utf-8", "surrogatepass")
    elif encoding == "utf-8-sig":
        notes.append(("info", "encoding",
                      "the file starts with a UTF-8 byte-order mark; it was removed", None))
        head = head[len(codecs.BOM_UTF8):]
    if _binary(head):
        return _fail("unknown", "unknown_format",
                     f"{NOT_A_RECORDING}: binary data, not text", "binary data, not text",
                     size=size)
    content = head.lstrip()
    try:
        if not content:
            content, _ = _first_content(path, encoding, data)
    except OSError as exc:
        return _fail("unknown", "unreadable", f"cannot read the file ({_os_reason(exc)})",
                     "unreadable")
    if not content:
        return _fail("unknown", "empty_file", "the file holds only whitespace",
                     "empty file", size=size)
    # Content starting with a bracket is no Markdown heading: JSON skips the heading test, a
    # search through the first line (the whole file, for a one-line document).
    if content[:1] not in (b"{", b"["):
        newline = content.find(b"\n")
        first_line = content if newline < 0 else content[:newline]
        # (The substring test spares decoding a long first line.)
        if _MARKDOWN_HEADING_BYTES in first_line and first_line.decode(
                "utf-8", "replace").strip() == MARKDOWN_HEADING:
            return Probe(Detection("claude_code_markdown", "markdown",
                                   f'Markdown starting "{MARKDOWN_HEADING}"'),
                         encoding=encoding, notes=notes, size=size, data=data)
        chat_log = markdown_chat_log(content)
        if chat_log is not None:
            return Probe(chat_log, encoding=encoding, notes=notes, size=size, data=data)
        if first_line.startswith(b"# ") and _opencode_markdown(
                content.decode("utf-8", "replace")):
            return Probe(Detection("opencode_markdown", "markdown",
                                   "Markdown with a title, **Session ID:** and ## User / "
                                   "## Assistant sections (opencode /export)"),
                         encoding=encoding, notes=notes, size=size, data=data)
        start = content[:120].decode("utf-8", "replace")[:40]
        return _fail("unknown", "unknown_format",
                     f'{NOT_A_RECORDING} (text, not JSON; starts with '
                     f'"{escape_for_display(start)}")', "not JSON", size=size, notes=notes)
    try:
        found = _layout(path, limits, encoding, notes, size, data)
    except OSError as exc:
        return _fail("unknown", "unreadable", f"cannot read the file ({_os_reason(exc)})",
                     "unreadable", size=size)
    found.data = data
    return found


_SPECSTORY_ROLE = re.compile(rb"^_\*\*(?:User|Assistant|Agent)\b[^*\n]*\*\*_[ \t\r]*$", re.M)
_AIDER_HEADER = re.compile(rb"^# aider chat started at \d{4}-\d{2}-\d{2}", re.M)


def markdown_chat_log(head: bytes) -> Detection | None:
    """The Markdown chat logs, from the start of the text (``head``, leading blanks removed):

    * SpecStory (``cursor_specstory``): the ``<!-- Generated by SpecStory`` comment or the
      oldest files' ``## SpecStory`` heading first; else a ``_**User**_`` and an
      ``_**Assistant**_`` / ``_**Agent …**_`` heading line in the head;
    * Aider (``aider_history``): a ``# aider chat started at <date>`` line, first or in the head
      (a log whose start was cut).
    """
    newline = head.find(b"\n")
    first = (head if newline < 0 else head[:newline]).strip()
    if first.startswith(b"<!-- Generated by SpecStory") or first == b"## SpecStory":
        return Detection("cursor_specstory", "markdown",
                         f'SpecStory Markdown ("{escape_for_display(first.decode("utf-8", "replace"), 50)}")')
    if _AIDER_HEADER.match(first) or _AIDER_HEADER.search(head):
        return Detection("aider_history", "markdown",
                         'Markdown with "# aider chat started at" (Aider chat history)')
    roles = {m.group(0)[3:7] for m in _SPECSTORY_ROLE.finditer(head)}
    if b"User" in roles and (b"Assi" in roles or b"Agen" in roles):
        return Detection("cursor_specstory", "markdown",
                         "Markdown with SpecStory role headings (_**User**_, _**Assistant**_)")
    return None


def _os_reason(exc: OSError) -> str:
    return escape_for_display(exc.strerror or type(exc).__name__, 80)


def _layout(path: str, limits: ImportLimits, encoding: str,
            notes: list[tuple[str, str, str, int | None]], size: int,
            data: bytes | None = None) -> Probe:
    lines = jsonio.file_lines(path, encoding, limits.max_line_bytes, data)
    first = None
    follows = False
    for raw in lines:
        if raw.data is not None and not raw.data.strip():
            continue
        if first is None:
            first = raw
            continue
        follows = True
        break
    if first is None:  # pragma: no cover - _first_content already saw content
        return _fail("unknown", "empty_file", "the file holds only whitespace", "empty file")
    parsed: Any = None
    first_ok = False
    first_deep = False
    truncated: list[str] = []
    bad_utf8 = False
    if first.data is not None:
        try:
            parsed, bad_utf8 = jsonio.parse_line(first.data, limits, truncated.append)
            first_ok = True
        except jsonio.JsonError as exc:
            first_deep = exc.kind == jsonio.TOO_DEEP
    if first_ok and follows:
        return _jsonl(path, limits, encoding, notes, size, data,
                      {first.number: (parsed, bad_utf8, truncated)})
    if first_ok:
        detection = document_signature(parsed)
        if detection is None:
            detection = record_signatures([parsed])
            if detection is not None:  # the loader re-reads it as JSONL (and reports there)
                return Probe(detection, encoding, notes=notes, size=size,
                             parsed={first.number: (parsed, bad_utf8, truncated)})
        if bad_utf8:
            notes.append(("warning", "encoding", "invalid UTF-8 bytes (first on this line) "
                          "were replaced with U+FFFD", first.number))
        if truncated:
            notes.append(_truncation_note(truncated, limits))
        if detection is not None:
            return Probe(detection, encoding, parsed, True, notes=notes, size=size)
        return _fail("document", "unknown_format",
                     f"{NOT_A_RECORDING} ({describe_value(parsed)})",
                     describe_value(parsed), notes=notes, size=size, value=parsed,
                     has_value=True)
    if first_deep and not follows:
        depth = min(limits.max_json_depth, jsonio.ORJSON_MAX_DEPTH)
        return _fail("document", "too_deep", f"JSON is nested deeper than {depth} levels "
                     "(max_json_depth); not imported", "too deep", notes=notes, size=size)
    return _document(path, limits, encoding, notes, size, data)


def _jsonl(path: str, limits: ImportLimits, encoding: str,
           notes: list[tuple[str, str, str, int | None]], size: int,
           data: bytes | None = None,
           parsed: dict[int, jsonio.ParsedLine] | None = None) -> Probe:
    scratch = ImportContext(path, limits)
    sample: list[Any] = []
    # The sampled lines' parse results go to the import (detection only reads the values).
    parsed = {} if parsed is None else parsed
    for record in jsonio.iter_records(path, limits, scratch, encoding=encoding, report=False,
                                      data=data, parsed=parsed):
        sample.append(record.value)
        if len(sample) >= SAMPLE_RECORDS:
            break
    detection = record_signatures(sample)
    borrowed = borrowed_names(sample, detection)
    if borrowed is not None:
        return _fail("jsonl", "not_a_recording", borrowed, describe_record(sample[0]),
                     notes=notes, size=size, parsed=parsed)
    if detection is not None:
        return Probe(detection, encoding, notes=notes, size=size, parsed=parsed)
    if not sample:
        return _fail("jsonl", "unknown_format",
                     f"{NOT_A_RECORDING} (JSON Lines; no line parses)",
                     "JSON Lines; no line parses", notes=notes, size=size)
    return _fail("jsonl", "unknown_format",
                 f"{NOT_A_RECORDING} ({describe_record(sample[0])})",
                 describe_record(sample[0]), notes=notes, size=size)


def _document(path: str, limits: ImportLimits, encoding: str,
              notes: list[tuple[str, str, str, int | None]], size: int,
              data: bytes | None = None) -> Probe:
    guard = _document_guard(size, limits)
    if guard is not None:
        if _looks_like_jsonl(path, encoding, limits, data):
            return _jsonl(path, limits, encoding, notes, size, data)
        return _fail("document", "too_large", guard, "too large", notes=notes, size=size)
    text = jsonio.read_text_bytes(path, encoding, data)
    if text.bad_utf8_line is not None:
        notes.append(("warning", "encoding",
                      "invalid UTF-8 bytes (first on this line) were replaced with U+FFFD",
                      text.bad_utf8_line))
    truncated: list[str] = []
    try:
        value = _read_document(text.data, limits, truncated, notes)
    except jsonio.JsonError as exc:
        if _looks_like_jsonl(path, encoding, limits, data):
            return _jsonl(path, limits, encoding, notes, size, data)
        printed = _printed_spans(text.data, limits, encoding, notes, size)
        if printed is not None:
            return printed
        if exc.kind == jsonio.TOO_DEEP:
            depth = min(limits.max_json_depth, jsonio.ORJSON_MAX_DEPTH)
            return _fail("document", "too_deep", f"JSON is nested deeper than {depth} levels "
                         "(max_json_depth); not imported", "too deep", notes=notes, size=size)
        if exc.kind == jsonio.NUMBER:
            return _fail("document", "invalid_json",
                         f"the file holds a non-finite or out-of-range number ({exc.detail}); "
                         "not imported", "invalid JSON", notes=notes, size=size)
        if exc.at_end:
            salvaged = jsonio.salvage_array(text.data, limits)
            if salvaged is not None:
                elements, count, (line, column) = salvaged
                detection = document_signature(elements)
                if detection is not None:
                    notes.append(("warning", "invalid_json",
                                  f"file is truncated after element {count}; "
                                  f"{plural(count, 'element')} kept (the file ends inside "
                                  f"element {count + 1} "
                                  f"of its JSON array, which starts at line {line}, column "
                                  f"{column}; the rest of the recording is missing)", line))
                    return Probe(detection, encoding, elements, True, notes=notes, size=size)
            hint = " — the file ends inside a value — truncated?"
        else:
            hint = ""
        return _fail("document", "invalid_json",
                     f"file is not valid JSON ({exc.detail}{exc.where()}){hint}; "
                     "not imported", "invalid JSON", exc.line, notes=notes, size=size)
    if truncated:
        notes.append(_truncation_note(truncated, limits))
    detection = document_signature(value)
    if detection is not None:
        return Probe(detection, encoding, value, True, notes=notes, size=size)
    return _fail("document", "unknown_format",
                 f"{NOT_A_RECORDING} ({describe_value(value)})",
                 describe_value(value), notes=notes, size=size, value=value, has_value=True)


_JS_CONSOLE = re.compile(rb"\A\s*\{\s*\n[ \t]+(?:resource|traceId|instrumentationScope|parentId)"
                         rb":[ \t]")


def _printed_spans(data: bytes, limits: ImportLimits, encoding: str,
                   notes: list[tuple[str, str, str, int | None]], size: int) -> Probe | None:
    """D11 for what a console exporter printed (a text that is no single JSON value): the
    Python SDK's spans, JSON objects one after another (possibly with the program's own output
    between them); the JavaScript SDK's ``console.dir`` dumps, named and refused."""
    if _JS_CONSOLE.match(data):
        return _fail("document", "unsupported_variant",
                     "recognised as the OpenTelemetry JavaScript console exporter's output "
                     "(console.dir of each span): it is not JSON (undefined values, strings "
                     "cut at 10,000 characters, deeper values shown as [Object]) and cannot be "
                     "read back without loss; not imported — export the spans with an OTLP "
                     "exporter (a collector's file exporter writes OTLP JSON) instead",
                     "OpenTelemetry JS console-exporter output", notes=notes, size=size)
    found = jsonio.concatenated_objects(data, limits)
    if found is None:
        return None
    objects, skipped = found
    sample = objects[:SAMPLE_RECORDS]
    if sum(1 for value in sample if is_console_span(value)) * 2 <= len(sample):
        return None
    if skipped:
        notes.append(("info", "unknown_record_type",
                      f"{plural(skipped, 'line')} between the printed spans {'is' if skipped == 1 else 'are'} not JSON (the "
                      "program's own output, or a span cut short); they were skipped", None))
    return Probe(Detection("otel_console", "document",
                           f"{len(objects)} JSON objects one after another, spans as the "
                           "OpenTelemetry console exporter prints them (D11)"),
                 encoding, objects, True, notes=notes, size=size)


def _truncation_note(truncated: list[str],
                     limits: ImportLimits) -> tuple[str, str, str, int | None]:
    return ("info", "value_truncated",
            f"{plural(len(truncated), 'string value')} longer than {limits.max_value_chars:,} "
            f"characters (max_value_chars) {'was' if len(truncated) == 1 else 'were'} replaced "
            "by a head and a sha256 digest (first "
            f"at {escape_for_display(truncated[0] or '/', 60)})", None)


def _read_document(data: bytes, limits: ImportLimits, truncated: list[str],
                   notes: list[tuple[str, str, str, int | None]]) -> Any:
    """:func:`jsonio.read_document`; a document whose only fault is a stray backslash is read
    with it kept as a character (:func:`jsonio.with_stray_backslashes_kept`), with a warning."""
    try:
        return jsonio.read_document(data, limits, truncated.append)
    except jsonio.JsonError as first:
        kept = jsonio.with_stray_backslashes_kept(
            data, first, lambda text: jsonio.read_document(text, limits, truncated.append))
        if kept is None:
            raise
        notes.append(("warning", "invalid_escape",
                      f"file is not valid JSON ({first.detail}{first.where()}); "
                      f"{jsonio.STRAY_BACKSLASH_WARNING}", first.line))
        return kept[0]


def _document_guard(size: int, limits: ImportLimits) -> str | None:
    if size > limits.max_document_bytes:
        return (f"JSON document is {_size(size)}, over the {_size(limits.max_document_bytes)} "
                "limit (max_document_bytes); not parsed")
    available = jsonio.available_memory()
    if available is not None and size * limits.memory_factor > available:
        return (f"JSON document is {_size(size)}; parsing it needs about "
                f"{_size(size * limits.memory_factor)} but only {_size(available)} of memory "
                "is available (memory_factor); not parsed")
    return None
