"""Codex CLI rollout JSONL — ``codex_rollout``.

One session per file. Every line is ``{"timestamp", "type", "payload"}``; ``response_item``
payloads are Responses API items, grouped into turns (a run of consecutive output items is one
model response); injected ``user`` items become ``system`` events unless an ``event_msg``
``user_message`` carries the same text, because Codex writes injected context as user items
too; code-mode ``exec`` calls are unwrapped by tokenizing their JavaScript (never running it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from loopscope.formats._codex_js import extract_code_mode_call
from loopscope.formats._ext_common import CandidateReporter, as_str, extract_text
from loopscope.formats.base import ImportContext, Record
from loopscope.formats.builder import CallDraft, SessionBuilder, TurnDraft
from loopscope.model import AgentInfo, Origin, Session, Wrapper
from loopscope.words import plural

FORMAT_ID = "codex_rollout"

_ENVELOPE_TYPES = frozenset(
    {"session_meta", "response_item", "turn_context", "event_msg", "compacted", "world_state"})

#: hosted calls: item type -> tool name (the type without ``_call``)
_HOSTED_CALLS = {
    "web_search_call": "web_search",
    "file_search_call": "file_search",
    "code_interpreter_call": "code_interpreter",
    "image_generation_call": "image_generation",
    "computer_call": "computer",
}
_HOSTED_ARGUMENT_FIELDS = ("action", "queries", "code", "arguments")
_OUTPUT_TYPES = frozenset({
    "function_call_output", "custom_tool_call_output", "local_shell_call_output",
    "computer_call_output", "tool_search_output",
})
_NO_EVENT_ITEMS = frozenset({
    "mcp_list_tools", "mcp_approval_request", "mcp_approval_response", "item_reference",
    "ghost_snapshot", "compaction_summary", "compaction",
})


def _input_text(content: Any) -> str | None:
    """The item's text parts concatenated (the comparison key for ``user_message`` events)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    parts = []
    for part in content:
        if isinstance(part, dict) and isinstance(part.get("text"), str) and part.get("type") in (
                "input_text", "text", None):
            parts.append(part["text"])
    return "".join(parts)


def _exit_meta(output: Any) -> dict[str, Any]:
    """Legacy shell output ``{"output", "metadata": {"exit_code", "duration_seconds"}}`` text."""
    if not isinstance(output, str) or not output.startswith("{") or '"metadata"' not in output:
        return {}
    try:
        value = orjson.loads(output)
    except orjson.JSONDecodeError:
        return {}
    meta: dict[str, Any] = {}
    if isinstance(value, dict) and isinstance(value.get("metadata"), dict):
        md = value["metadata"]
        if isinstance(md.get("exit_code"), int) and not isinstance(md.get("exit_code"), bool):
            meta["exit_code"] = md["exit_code"]
        if isinstance(md.get("duration_seconds"), int | float):
            meta["duration_seconds"] = md["duration_seconds"]
    return meta


class _Rollout:
    def __init__(self, ctx: ImportContext):
        self.ctx = ctx
        self.report = CandidateReporter(ctx, None)
        self.b = SessionBuilder()
        self.turn: TurnDraft | None = None
        self.turn_thinking: list[str] = []
        self.pending_results: list[tuple[CallDraft, dict[str, Any], Origin, str | None]] = []
        self.seen_call_ids: set[str] = set()
        self.dropped_call_ids: set[str] = set()
        self.answered: set[str] = set()
        self.duplicates = 0
        self.first_duplicate: int | None = None
        self.skipped: Counter[str] = Counter()
        self.meta: dict[str, Any] = {}
        self.session_id: str | None = None
        self.cli_version: str | None = None
        self.models: list[str] = []
        self.user_texts: set[str] = set()
        self.has_event_msg = False
        self.has_compacted = False
        self.fallbacks = 0
        self.first_fallback: tuple[int | None, str] | None = None

    # ------------------------------------------------------------------ turns

    def close_turn(self) -> None:
        if self.turn is not None and self.turn_thinking:
            self.turn.thinking = "\n".join(self.turn_thinking)
        self.turn = None
        self.turn_thinking = []
        for call, item, origin, timestamp in self.pending_results:
            self._embedded_result(call, item, origin, timestamp)
        self.pending_results = []

    def open_turn(self, timestamp: str | None, origin: Origin) -> TurnDraft:
        if self.turn is None:
            self.turn = self.b.assistant("", [], timestamp=timestamp, origin=origin)
        return self.turn

    def _embedded_result(self, call: CallDraft, item: dict[str, Any], origin: Origin,
                         timestamp: str | None) -> None:
        error = item.get("error")
        content: Any = None
        for key in ("output", "results", "outputs", "result"):
            if key in item and item[key] is not None:
                content = item[key]
                break
        if content is None and error is not None:
            content = error
        text = extract_text(content, "\n")
        self.b.result(call.id, content, text, is_error=error is not None,
                      structure_call=call, timestamp=timestamp, origin=origin,
                      meta={"status": item["status"]} if isinstance(item.get("status"), str) else None)

    # ------------------------------------------------------------------ records

    def prescan(self, records: list[Record]) -> None:
        for record in records:
            value = record.value
            if not isinstance(value, dict):
                continue
            typ = value.get("type")
            payload = value.get("payload")
            if typ == "event_msg" and "payload" in value:
                self.has_event_msg = True
                if isinstance(payload, dict) and payload.get("type") == "user_message":
                    message = payload.get("message")
                    if isinstance(message, str):
                        self.user_texts.add(message)
            elif typ == "compacted" and "payload" in value:
                self.has_compacted = True

    def record(self, record: Record, index: int) -> None:
        value = record.value
        origin = Origin(line=record.line)
        if not isinstance(value, dict):
            self.report.aggregate("unknown_record_type",
                                  "a line is not a JSON object; it was skipped", line=record.line)
            self.skipped["non-object"] += 1
            return
        typ = value.get("type")
        timestamp = as_str(value.get("timestamp"))
        if isinstance(typ, str) and typ in _ENVELOPE_TYPES and "payload" in value:
            payload = value.get("payload")
            if typ == "response_item":
                if isinstance(payload, dict):
                    self.item(payload, timestamp, origin)
                else:
                    self.report("warning", "invalid_record",
                                "a response_item line has no payload object; it was skipped",
                                line=record.line)
            elif typ == "session_meta":
                self.session_meta(payload)
            elif typ == "turn_context":
                if isinstance(payload, dict) and isinstance(payload.get("model"), str):
                    self.models.append(payload["model"])
            elif typ == "event_msg":
                sub = payload.get("type") if isinstance(payload, dict) else None
                if sub == "context_compacted" and not self.has_compacted:
                    self.close_turn()
                    message = payload.get("message") if isinstance(payload, dict) else None
                    self.b.compaction(message if isinstance(message, str) else "",
                                      timestamp=timestamp, origin=origin)
                else:
                    self.skipped[f"event_msg:{sub}" if isinstance(sub, str) else "event_msg"] += 1
            elif typ == "compacted":
                self.close_turn()
                message = payload.get("message") if isinstance(payload, dict) else None
                self.b.compaction(message if isinstance(message, str) else "",
                                  timestamp=timestamp, origin=origin)
            else:  # world_state
                self.skipped[typ] += 1
            return
        if "record_type" in value:
            self.skipped[f"record_type:{value.get('record_type')}"] += 1
            return
        if index == 0 and "type" not in value and "instructions" in value:
            # legacy header: {"id", "timestamp", "instructions", "git"?}
            if isinstance(value.get("id"), str):
                self.session_id = value["id"]
            if isinstance(value.get("instructions"), str):
                self.meta["instructions"] = value["instructions"]
            if isinstance(value.get("git"), dict):
                self.meta["git"] = value["git"]
            return
        if isinstance(typ, str) or "role" in value:
            # legacy: bare Responses items
            self.item(value, timestamp, origin)
            return
        self.skipped["unknown"] += 1
        self.report.aggregate("unknown_record_type",
                              "a line has a record type the Codex importer does not know; "
                              "it made no event", line=record.line)

    def session_meta(self, payload: Any) -> None:
        if not isinstance(payload, dict):
            return
        if self.session_id is None and isinstance(payload.get("id"), str):
            self.session_id = payload["id"]
        if self.cli_version is None and isinstance(payload.get("cli_version"), str):
            self.cli_version = payload["cli_version"]
        for key in ("originator", "cwd", "source", "model_provider", "timestamp"):
            if key not in self.meta and isinstance(payload.get(key), str):
                self.meta[key] = payload[key]
        if "instructions" not in self.meta:
            instructions = payload.get("instructions")
            if isinstance(instructions, str):
                self.meta["instructions"] = instructions

    def _duplicate(self, line: int | None) -> None:
        self.duplicates += 1
        if self.first_duplicate is None:
            self.first_duplicate = line

    def item(self, item: dict[str, Any], timestamp: str | None, origin: Origin) -> None:
        typ = item.get("type")
        role = item.get("role")
        if typ == "message" or (typ is None and isinstance(role, str)):
            self.message(item, role, timestamp, origin)
            return
        if typ == "reasoning":
            turn = self.open_turn(timestamp, origin)
            turn.content.append(item)
            summary = item.get("summary")
            if isinstance(summary, list):
                for part in summary:
                    if isinstance(part, dict) and isinstance(part.get("text"), str):
                        self.turn_thinking.append(part["text"])
            content = item.get("content")
            if isinstance(content, list):
                for part in content:
                    if (isinstance(part, dict) and part.get("type") == "reasoning_text"
                            and isinstance(part.get("text"), str)):
                        self.turn_thinking.append(part["text"])
            return
        if typ in ("function_call", "custom_tool_call", "local_shell_call", "mcp_call") or (
                isinstance(typ, str) and typ in _HOSTED_CALLS):
            self.call(item, typ, timestamp, origin)
            return
        if isinstance(typ, str) and typ in _OUTPUT_TYPES:
            self.output(item, timestamp, origin)
            return
        if isinstance(typ, str) and typ in _NO_EVENT_ITEMS:
            self.skipped[typ] += 1
            return
        if isinstance(typ, str) and typ.endswith("_call_output"):
            self.output(item, timestamp, origin)
            return
        if isinstance(role, str):
            self.close_turn()
            self.report.once(role, "info", "unknown_role",
                             f"an item with role {role!r} and type {typ!r} is not a known "
                             "Responses item; it was kept as an 'other' event", line=origin.line)
            self.b.other(role, extract_text(item.get("content"), "\n"), item.get("content"),
                         timestamp=timestamp, origin=origin)
            return
        self.skipped[str(typ)] += 1
        self.report.aggregate("unknown_record_type",
                              f"a response item of type {str(typ)[:40]!r} is not known; "
                              "it made no event", line=origin.line)

    def message(self, item: dict[str, Any], role: Any, timestamp: str | None,
                origin: Origin) -> None:
        content = item.get("content")
        if role == "assistant":
            turn = self.open_turn(timestamp, origin)
            turn.content.append(item)
            turn.text += extract_text(content, "")
            return
        self.close_turn()
        text = extract_text(content, "\n")
        if role == "user":
            key = _input_text(content)
            if not self.has_event_msg or (key is not None and key in self.user_texts):
                self.b.user(text, content, timestamp=timestamp, origin=origin)
            else:
                self.b.system(text, content, recorded_role="user", timestamp=timestamp,
                              origin=origin)
        elif role in ("developer", "system"):
            self.b.system(text, content, recorded_role=role, timestamp=timestamp, origin=origin)
        else:
            shown = role if isinstance(role, str) else None
            self.report.once(str(role), "info", "unknown_role",
                             f"a message with role {str(role)[:40]!r} was kept as an 'other' event",
                             line=origin.line)
            self.b.other(shown, text, content, timestamp=timestamp, origin=origin)

    def call(self, item: dict[str, Any], typ: str, timestamp: str | None, origin: Origin) -> None:
        call_id = item.get("call_id")
        if not isinstance(call_id, str) and typ != "function_call" and typ != "custom_tool_call":
            call_id = item.get("id")
        if isinstance(call_id, str):
            if call_id in self.seen_call_ids:
                self.dropped_call_ids.add(call_id)
                self._duplicate(origin.line)
                self.ctx.set_aside_calls("repeated call id", line=origin.line)
                return
            self.seen_call_ids.add(call_id)
        turn = self.open_turn(timestamp, origin)
        turn.content.append(item)
        name = item.get("name")
        if typ == "function_call" or typ == "mcp_call":
            self.b.call(turn, name, item.get("arguments"), "json_text", id=call_id, origin=origin)
            if typ == "mcp_call" and (item.get("output") is not None or item.get("error") is not None):
                self.pending_results.append((turn.calls[-1], item, origin, timestamp))
        elif typ == "custom_tool_call":
            raw = item.get("input")
            if name == "exec":
                self.code_mode(turn, raw, call_id, origin)
            else:
                self.b.call(turn, name, raw, "free_text", id=call_id, origin=origin)
        elif typ == "local_shell_call":
            self.b.call(turn, "local_shell", item.get("action"), "value", id=call_id,
                        origin=origin)
        else:
            raw = {}
            for key in _HOSTED_ARGUMENT_FIELDS:
                if key in item:
                    raw = item[key]
                    break
            self.b.call(turn, _HOSTED_CALLS[typ], raw, "value", id=call_id, origin=origin)
            if any(item.get(k) is not None for k in ("results", "outputs", "result", "error")):
                self.pending_results.append((turn.calls[-1], item, origin, timestamp))

    def code_mode(self, turn: TurnDraft, raw: Any, call_id: Any, origin: Origin) -> None:
        extraction = extract_code_mode_call(raw)
        if extraction.ok:
            self.b.call(turn, extraction.name, extraction.arguments, "value", id=call_id,
                        wrapper=Wrapper("exec", raw, True, None), origin=origin)
            return
        reason = extraction.reason or "not extracted"
        self.b.call(turn, "exec", raw, "free_text", id=call_id,
                    wrapper=Wrapper("exec", raw, False, reason), origin=origin)
        self.fallbacks += 1
        if self.first_fallback is None:
            self.first_fallback = (origin.line, reason)

    def output(self, item: dict[str, Any], timestamp: str | None, origin: Origin) -> None:
        self.close_turn()
        call_id = item.get("call_id")
        if isinstance(call_id, str):
            if call_id in self.answered:
                self._duplicate(origin.line)
                return
            self.answered.add(call_id)
        output = item.get("output")
        meta = _exit_meta(output)
        if isinstance(item.get("status"), str):
            meta["status"] = item["status"]
        self.b.result(call_id, output, extract_text(output, "\n"), meta=meta or None,
                      timestamp=timestamp, origin=origin)

    # ------------------------------------------------------------------ build

    def build(self) -> Session | None:
        self.close_turn()
        if self.fallbacks and self.first_fallback is not None:
            line, reason = self.first_fallback
            self.report("info", "code_mode_fallback",
                        f"{plural(self.fallbacks, 'code-mode exec call')} could not be unwrapped "
                        f"(first: {reason}); they were kept as 'exec' calls with the script as "
                        "free-text arguments", line=line, count=self.fallbacks)
        if self.duplicates:
            self.report("info", "duplicates_skipped",
                        plural(self.duplicates, "repeated tool call or answer (resumed rollout) "
                               "was", "repeated tool calls or answers (resumed rollout) were")
                        + " dropped", line=self.first_duplicate, count=self.duplicates)
        self.report.flush({"unknown_record_type": lambda n: (
            f"{plural(n, 'record')} of unknown type made no event")})
        metadata: dict[str, Any] = dict(self.meta)
        if self.skipped:
            metadata["skipped"] = dict(self.skipped)
        return self.b.build(
            id=self.session_id or "", source=self.ctx.path, format=FORMAT_ID,
            agent=AgentInfo("Codex CLI", self.cli_version), models=self.models,
            metadata=metadata, report=self.report,
        )


def import_records(records: Iterable[Record], ctx: ImportContext) -> Iterator[Session | None]:
    """One session per rollout file."""
    rollout = _Rollout(ctx)
    lines = list(records)
    rollout.prescan(lines)
    for index, record in enumerate(lines):
        rollout.record(record, index)
    yield rollout.build()
