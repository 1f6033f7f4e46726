"""OpenClaw / pi session JSONL v3 — ``openclaw_session``.

The file is an append-only tree: every entry names its ``parentId``. One file is one session,
read along its **active branch**: from the last entry back to the root. Entries of abandoned
branches are counted, not imported. A ``parentId`` that names no parsed entry ends the walk
(``broken_parent_link``), except right after a line the loader skipped, where the walk goes on
with the nearest preceding parsed line. Files whose entries carry no ids (legacy v1) are read in
file order.

``details`` and ``content`` of tool results are kept exactly as recorded: the OpenClaw engine
hashes them with its own rules.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from loopscope.formats._ext_common import CandidateReporter
from loopscope.formats.base import ImportContext, Record
from loopscope.formats.builder import SessionBuilder, line_origin
from loopscope.formats.text import (
    ASSISTANT_JOINER,
    TEXT_JOINER,
    extract_text,
    iso_timestamp,
    json_type,
)
from loopscope.model import AgentInfo, Origin, Session, escape_for_display

FORMAT_ID = "openclaw_session"

__all__ = ["FORMAT_ID", "import_records", "tool_result_text"]

AGENT = AgentInfo("pi-compatible session", "3")

_NO_EVENT_TYPES = frozenset({"custom", "model_change", "thinking_level_change", "label",
                             "session_info"})
_OTHER_ROLES = frozenset({"custom", "branchSummary"})


def tool_result_text(content: Any) -> str:
    """OpenClaw's own result text (``extractTextContent`` before its trim): a string as is;
    otherwise the string ``text`` of every content entry that is an object with a string
    ``type``, joined with ``"\\n"``, untrimmed. The OpenClaw engine hashes this same text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        if len(content) == 1:  # the usual result: one text entry, taken as it is
            entry = content[0]
            if type(entry) is dict and isinstance(entry.get("type"), str):
                text = entry.get("text")
                if type(text) is str:
                    return text
        return "\n".join([
            entry["text"] for entry in content
            if isinstance(entry, Mapping) and isinstance(entry.get("type"), str)
            and isinstance(entry.get("text"), str)
        ])
    return ""


def _quote(value: Any) -> str:
    return escape_for_display(value if isinstance(value, str) else repr(value), 60)


class _Importer:
    """One file (= one candidate, number 0)."""

    def __init__(self, ctx: ImportContext) -> None:
        self.ctx = ctx
        self.report = CandidateReporter(ctx, 0)
        self.builder = SessionBuilder()
        self.skipped: Counter[str] = Counter()
        self.models: list[str] = []
        self.metadata: dict[str, Any] = {}
        self.title: str | None = None
        self.unknown_roles: set[str] = set()
        self.pending_compaction: tuple[Record, dict[str, Any]] | None = None

    # ------------------------------------------------------------------ the branch

    def active_branch(self, entries: list[Record]) -> list[Record]:
        by_id: dict[str, Record] = {}
        duplicates = 0
        # Whether each entry's parent is the entry before it (and the first is a root): the
        # branch is then the whole file, as the walk below would find (an append-only session
        # that never branched; most do not).
        chained = True
        previous_id: Any = None
        for record in entries:
            entry_id = record.value.get("id")
            if not isinstance(entry_id, str):
                return entries  # legacy v1: no tree, file order
            if entry_id in by_id:
                duplicates += 1
                self._set_aside(record, "entry repeats an id seen earlier")
                continue
            by_id[entry_id] = record
            if chained:
                parent = record.value.get("parentId")
                chained = (parent == previous_id if previous_id is not None
                           else not isinstance(parent, str))
                previous_id = entry_id
        if chained and not duplicates:
            return entries
        if duplicates:
            self.report("info", "duplicates_skipped",
                        f"{duplicates} entries repeat an id seen earlier; the later copies were "
                        "ignored", count=duplicates)
        position: dict[int, int] | None = None  # built when a parent is missing (rare)
        path: list[Record] = []
        seen: set[int] = set()
        current: Record | None = entries[-1]
        while current is not None:
            if id(current) in seen:
                self.report("warning", "broken_parent_link",
                            f"the parent links of entry {_quote(current.value.get('id'))} form a "
                            "cycle; the branch ends here", line=current.line)
                break
            seen.add(id(current))
            path.append(current)
            parent = current.value.get("parentId")
            if parent is None and "parentId" in current.value:
                break  # the root (an explicit null)
            if position is None:
                position = {id(r): n for n, r in enumerate(entries)}
            if not isinstance(parent, str):
                # A parent link that is missing or not a string names no entry. Taking it for
                # the root would silently drop everything before this entry; the entry written
                # just before it is its parent in every append-only session, so the walk goes on
                # there (said once per entry).
                if position[id(current)] == 0:
                    break
                shown = "missing" if "parentId" not in current.value else \
                    f"a JSON {json_type(parent)}, not an entry id"
                self.report("warning", "broken_parent_link",
                            f"the parent link (parentId) is {shown}; the branch continues with "
                            "the preceding entry", line=current.line)
                current = entries[position[id(current)] - 1]
                continue
            found = by_id.get(parent)
            if found is not None:
                current = found
                continue
            if (current.line - 1) in self.ctx.skipped_lines and position[id(current)] > 0:
                previous = entries[position[id(current)] - 1]
                self.report("warning", "broken_parent_link",
                            f"parent entry {_quote(parent)} is not in the file; the branch "
                            "continues with the preceding line", line=current.line)
                current = previous
                continue
            self.report("warning", "broken_parent_link",
                        f"parent entry {_quote(parent)} is not in the file; the branch starts "
                        "here", line=current.line)
            break
        path.reverse()
        abandoned = len(entries) - len(path)
        if abandoned:
            self.metadata["abandoned_entries"] = abandoned
            on_path = {id(r) for r in path}
            for record in entries:
                if id(record) not in on_path and by_id.get(record.value.get("id")) is record:
                    self._set_aside(record, "not on the active branch")
        return path

    def _set_aside(self, record: Record, reason: str) -> None:
        """Tell the tally about the tool calls of an entry that is not imported on purpose."""
        message = record.value.get("message")
        content = message.get("content") if isinstance(message, dict) \
            and message.get("role") == "assistant" else None
        if isinstance(content, list):
            calls = sum(1 for block in content
                        if isinstance(block, dict) and block.get("type") == "toolCall")
            if calls:
                self.ctx.set_aside_calls(reason, line=record.line, count=calls)

    # ------------------------------------------------------------------ entries

    def flush_compaction(self, summary: str | None = None) -> None:
        if self.pending_compaction is None:
            return
        record, entry = self.pending_compaction
        self.pending_compaction = None
        tokens = entry.get("tokensBefore")
        first_kept = entry.get("firstKeptEntryId")
        recorded_summary = entry.get("summary")
        if summary is None:
            summary = recorded_summary if isinstance(recorded_summary, str) else ""
        self.builder.compaction(
            summary,
            tokens_before=tokens if isinstance(tokens, int) and not isinstance(tokens, bool)
            else None,
            first_kept=first_kept if isinstance(first_kept, str) else None,
            timestamp=iso_timestamp(entry.get("timestamp")),
            origin=line_origin(record.line),
        )

    def entry(self, record: Record) -> None:
        value = record.value
        kind = value.get("type")
        if not isinstance(kind, str):
            # A type that is no string (a writer bug): an entry that carries a message is read
            # as a message entry, as its content says; anything else is skipped.
            shown = "missing" if "type" not in value else f"a JSON {json_type(kind)}"
            if isinstance(value.get("message"), dict):
                self.report("info", "unknown_record_type",
                            f"entry type is {shown}; the entry holds a message and was read as "
                            "one", line=record.line)
                kind = "message"
            else:
                self.skipped["<no type>"] += 1
                self.report("info", "unknown_record_type",
                            f"entry type is {shown}; the entry was skipped", line=record.line)
                return
        if self.pending_compaction is not None:
            if kind == "message":
                message = value.get("message")
                if isinstance(message, dict) and message.get("role") == "compactionSummary":
                    self.flush_compaction(extract_text(message.get("content"), TEXT_JOINER)
                                          if "content" in message else _summary_of(message))
                    return
            self.flush_compaction()
        if kind == "message":
            self.message(record)
        elif kind == "compaction":
            self.pending_compaction = (record, value)
        elif kind == "custom_message":
            custom_type = value.get("customType")
            content = value.get("content")
            self.builder.system(
                extract_text(content, TEXT_JOINER), content,
                recorded_role=custom_type if isinstance(custom_type, str) else "custom_message",
                timestamp=iso_timestamp(value.get("timestamp")), origin=line_origin(record.line),
            )
        elif kind == "branch_summary":
            summary = value.get("summary")
            self.builder.other("branch_summary", summary if isinstance(summary, str) else "",
                               summary, timestamp=iso_timestamp(value.get("timestamp")),
                               origin=line_origin(record.line))
        elif kind in _NO_EVENT_TYPES:
            self.skipped[str(kind)] += 1
            if kind == "custom":
                self.custom(value)
            elif kind == "model_change":
                self.model_change(value)
            elif kind == "session_info":
                name = value.get("name")
                if isinstance(name, str) and name.strip():
                    self.title = name
        else:
            self.skipped[str(kind)] += 1
            self.report("info", "unknown_record_type",
                        f"entry type {_quote(kind)} is not part of the pi session format; "
                        "it was skipped", line=record.line)

    def custom(self, value: Mapping[str, Any]) -> None:
        custom_type = value.get("customType")
        data = value.get("data")
        if (isinstance(custom_type, str) and custom_type.startswith("openclaw:bootstrap-context")
                and isinstance(data, dict) and isinstance(data.get("runId"), str)):
            self.metadata.setdefault("run_ids", []).append(data["runId"])

    def model_change(self, value: Mapping[str, Any]) -> None:
        provider = value.get("provider")
        model_id = value.get("modelId")
        model = value.get("model")
        if isinstance(provider, str) and isinstance(model_id, str):
            self._add_model(f"{provider}/{model_id}")
        elif isinstance(model_id, str):
            self._add_model(model_id)
        elif isinstance(model, str):
            self._add_model(model)

    def _add_model(self, name: str) -> None:
        if name and name not in self.models:
            self.models.append(name)

    def message(self, record: Record) -> None:
        value = record.value
        message = value.get("message")
        if not isinstance(message, dict):
            self.report("warning", "invalid_record",
                        "a message entry has no message object; the entry was skipped",
                        line=record.line)
            return
        origin = line_origin(record.line)
        timestamp = iso_timestamp(value.get("timestamp")) or iso_timestamp(
            message.get("timestamp"))
        role = message.get("role")
        content = message.get("content")
        # (the most frequent roles first)
        if role == "toolResult":
            details = message.get("details")
            name = message.get("toolName")
            self.builder.result(
                message.get("toolCallId"), content, tool_result_text(content),
                is_error=message.get("isError") is True,
                details=details if isinstance(details, dict) else {},
                name=name if isinstance(name, str) else None,
                timestamp=timestamp, origin=origin,
            )
        elif role == "assistant":
            self.assistant(message, timestamp, origin)
        elif role == "user":
            self.builder.user(extract_text(content, TEXT_JOINER), content,
                              timestamp=timestamp, origin=origin)
        elif role == "bashExecution":
            command = message.get("command")
            output = message.get("output")
            text = (command if isinstance(command, str) else "") + "\n" + (
                output if isinstance(output, str) else "")
            self.builder.other("bashExecution", text, content, timestamp=timestamp,
                               origin=origin)
        elif role in _OTHER_ROLES or role == "compactionSummary":
            self.builder.other(role, extract_text(content, TEXT_JOINER), content,
                               timestamp=timestamp, origin=origin)
        else:
            label = role if isinstance(role, str) else repr(role)
            if label not in self.unknown_roles:
                self.unknown_roles.add(label)
                self.report("info", "unknown_role",
                            f"message role {_quote(role)} is not part of the pi session format; "
                            "kept as an 'other' message", line=record.line)
            self.builder.other(role if isinstance(role, str) else None,
                               extract_text(content, TEXT_JOINER), content,
                               timestamp=timestamp, origin=origin)

    def assistant(self, message: Mapping[str, Any], timestamp: str | None,
                  origin: Origin) -> None:
        content = message.get("content")
        texts: list[str] = []
        thinking: list[str] = []
        calls: list[dict[str, Any]] = []
        if isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                kind = block.get("type")
                if kind == "toolCall":
                    calls.append(block)
                elif kind == "text" and isinstance(block.get("text"), str):
                    texts.append(block["text"])
                elif kind == "thinking" and isinstance(block.get("thinking"), str):
                    thinking.append(block["thinking"])
            text = ASSISTANT_JOINER.join(texts)
        else:
            text = extract_text(content, ASSISTANT_JOINER)
        provider = message.get("provider")
        model = message.get("model")
        model_name: str | None = None
        if isinstance(provider, str) and isinstance(model, str):
            model_name = f"{provider}/{model}"
        elif isinstance(model, str):
            model_name = model
        stop_reason = message.get("stopReason")
        error = message.get("errorMessage")
        turn = self.builder.assistant(
            text, content, thinking="\n".join(thinking), model=model_name,
            stop_reason=stop_reason if isinstance(stop_reason, str) else None,
            error=error if isinstance(error, str) else None, timestamp=timestamp, origin=origin,
        )
        for block in calls:
            if "arguments" not in block and isinstance(block.get("partialJson"), str):
                self.builder.call(turn, block.get("name"), block["partialJson"], "json_text",
                                  id=block.get("id"), origin=origin)
            else:
                self.builder.call(turn, block.get("name"), block.get("arguments"), "value",
                                  id=block.get("id"), origin=origin)

    # ------------------------------------------------------------------ the file

    def run(self, records: Iterable[Record]) -> Session | None:
        header: Mapping[str, Any] | None = None
        entries: list[Record] = []
        for record in records:
            value = record.value
            if not isinstance(value, dict):
                self.report("warning", "invalid_record",
                            f"line holds a JSON {type(value).__name__}, not an entry object; "
                            "the line was skipped", line=record.line)
                continue
            if value.get("type") == "session" and "parentId" not in value:
                if header is None:
                    header = value
                else:
                    self.skipped["session"] += 1
                continue
            entries.append(record)
        for record in self.active_branch(entries) if entries else []:
            self.entry(record)
        self.flush_compaction()
        if header is not None:
            cwd = header.get("cwd")
            if isinstance(cwd, str):
                self.metadata["cwd"] = cwd
            parent = header.get("parentSession")
            if isinstance(parent, str):
                self.metadata["parent_session"] = parent
        if self.skipped:
            self.metadata["skipped"] = dict(self.skipped)
        if self.builder.event_count == 0:
            self.report("warning", "empty_session",
                        "the file holds no conversation entry; no session was imported")
            return None
        header_id = header.get("id") if header is not None else None
        timestamp = iso_timestamp(header.get("timestamp")) if header is not None else None
        if timestamp is not None:
            self.builder.timestamps.insert(0, timestamp)
        return self.builder.build(
            id=header_id if isinstance(header_id, str) else "",
            source=self.ctx.path, format=FORMAT_ID, title=self.title, agent=AGENT,
            models=self.models, metadata=self.metadata, report=self.report,
        )


def _summary_of(message: Mapping[str, Any]) -> str:
    summary = message.get("summary")
    return summary if isinstance(summary, str) else ""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# JavaScript's JSON.parse, which OpenClaw reads its session files with: every number is a
# double, so one outside the double range is Infinity (Python's float() gives the same); NaN
# and Infinity literals are rejected; lone surrogate escapes are kept.
_JS_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_WHITESPACE = " \t\n\r"


def recover_line(line: bytes) -> tuple[list[Any], str] | None:
    """A second reading of a line the strict reader refused (see ``jsonio.iter_records``).

    Two cases are read, because dropping them loses entries OpenClaw itself kept: a number
    outside the double range (``1e400``), which JavaScript reads as Infinity; and a line holding
    two or more entry objects written back to back (a lost newline in legacy files), each read
    as its own entry. Anything else stays unreadable."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        text = line.decode("utf-8", "replace")
    values: list[Any] = []
    at = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        while at < len(text):
            value, at = _JS_DECODER.raw_decode(text, at)
            if not isinstance(value, dict):
                return None
            values.append(value)
            at = len(text) - len(text[at:].lstrip(_WHITESPACE))
    except (ValueError, RecursionError):
        return None
    if not values:
        return None
    if len(values) > 1:
        return values, (f"the line holds {len(values)} entries written back to back (no "
                        "newline between them); each was read as its own entry")
    return values, ("the line was read as OpenClaw reads it (JavaScript JSON.parse: a number "
                    "outside the double range becomes Infinity)")


def import_records(records: Iterable[Record], ctx: ImportContext) -> Iterator[Session | None]:
    """Yield the file's one session (its active branch), or ``None`` when it failed.
    Never raises."""
    try:
        session = _Importer(ctx).run(records)
    except Exception as exc:  # an importer bug must not escape: it would cost the other files
        internal = getattr(ctx, "internal_error", None)
        if callable(internal):
            internal(exc, candidate=0)
        else:
            ctx.problem("error", "internal_error",
                        f"importer bug: {type(exc).__name__}: {escape_for_display(str(exc), 200)}",
                        candidate=0)
        yield None
        return
    yield session
