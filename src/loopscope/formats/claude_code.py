"""Claude Code session JSONL — ``claude_code``.

One JSON object per line; ``message`` is an Anthropic message, but one API response is spread
over several ``assistant`` lines (one content block each) sharing ``message.id``: they form one
turn, placed at its first line. Non-sidechain lines form session 0; sidechain groups (one per
sidechain root) form further sessions, unless every conversation line is a sidechain line (then
the file is one session). File order is kept; the ``parentUuid`` chain is not walked.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from loopscope.formats._ext_common import CandidateReporter
from loopscope.formats.anthropic_messages import (
    CALL_BLOCKS,
    assistant_blocks,
    emit_server_results,
    user_blocks,
)
from loopscope.formats.base import ImportContext, Record
from loopscope.formats.builder import SessionBuilder, TurnDraft
from loopscope.formats.text import TEXT_JOINER, extract_text, iso_timestamp, type_of
from loopscope.model import AgentInfo, Origin, Session
from loopscope.words import plural

FORMAT_ID = "claude_code"

__all__ = ["FORMAT_ID", "import_records"]

_CONVERSATION = frozenset({"user", "assistant", "system"})
_NON_CONVERSATION = frozenset({"progress", "file-history-snapshot", "queue-operation",
                               "attachment", "summary"})
# Session bookkeeping lines newer Claude Code versions write (titles, modes, the last prompt,
# PR links…). Claude Code adds such line types often; none is part of the conversation, so
# every line type that is not a conversation line is skipped quietly (counted in
# ``metadata["skipped"]``). A line of any type that carries tool calls is still caught by the
# loader's call tally.
_TITLE_FIELDS = {"custom-title": "customTitle", "ai-title": "aiTitle"}
_CONTINUED = "This session is being continued from a previous conversation"
_META_KEYS = ("interrupted", "exitCode", "durationMs")


@dataclass
class _Group:
    """The lines of one session candidate (main conversation or one sidechain)."""

    sidechain: bool
    records: list[Record] = field(default_factory=list)
    root_uuid: str | None = None
    agent_id: str | None = None


def _is_sidechain(value: dict[str, Any]) -> bool:
    return value.get("isSidechain") is True


def import_records(records: Iterable[Record], ctx: ImportContext) -> Iterator[Session | None]:
    main = _Group(False)
    sidechains: list[_Group] = []
    group_of_uuid: dict[str, _Group] = {}
    sidechain_uuids: set[str] = set()
    conversation_main = 0
    conversation_side = 0
    skipped: dict[str, int] = {}
    title: str | None = None
    titles: dict[str, str] = {}
    for record in records:
        value = record.value
        if not isinstance(value, dict):
            ctx.problem("warning", "invalid_record",
                        "line is not a JSON object; it was skipped", line=record.line)
            continue
        rtype = type_of(value)
        if rtype == "summary" and title is None and isinstance(value.get("summary"), str):
            title = value["summary"]
        elif isinstance(rtype, str) and rtype in _TITLE_FIELDS \
                and isinstance(value.get(_TITLE_FIELDS[rtype]), str):
            titles[rtype] = value[_TITLE_FIELDS[rtype]]  # the latest one wins
        if not _is_sidechain(value):
            if rtype in _CONVERSATION:
                conversation_main += 1
            main.records.append(record)
            uuid = value.get("uuid")
            if isinstance(uuid, str):
                group_of_uuid.setdefault(uuid, main)
            continue
        if rtype in _CONVERSATION:
            conversation_side += 1
        parent = value.get("parentUuid")
        uuid = value.get("uuid")
        group: _Group | None = None
        if isinstance(parent, str) and parent in sidechain_uuids:
            group = group_of_uuid.get(parent)
        if group is None:
            group = _Group(True, root_uuid=uuid if isinstance(uuid, str) else None)
            sidechains.append(group)
        if group.agent_id is None and isinstance(value.get("agentId"), str):
            group.agent_id = value["agentId"]
        group.records.append(record)
        if isinstance(uuid, str):
            sidechain_uuids.add(uuid)
            group_of_uuid.setdefault(uuid, group)

    if conversation_main == 0 and conversation_side > 0:
        # Every conversation line is a sidechain line: one session, in file order.
        merged = _Group(True, root_uuid=sidechains[0].root_uuid if sidechains else None,
                        agent_id=next((g.agent_id for g in sidechains if g.agent_id), None))
        merged.records = sorted((r for g in [main, *sidechains] for r in g.records),
                                key=lambda r: r.line)
        groups = [merged]
    else:
        groups = [main, *sidechains] if sidechains else [main]
    if title is None:  # a name the user gave wins over one the model wrote
        title = titles.get("custom-title") or titles.get("ai-title")
    several = len(groups) > 1
    for n, group in enumerate(groups):
        candidate = n if several else None
        try:
            yield _session(group, ctx, candidate, title if n == 0 else None, skipped)
        except Exception as exc:  # one bad candidate never loses the others
            ctx.internal_error(exc, candidate=candidate)
            yield None


def _session(group: _Group, ctx: ImportContext, candidate: int | None, title: str | None,
             _unused: dict[str, int]) -> Session:
    report = CandidateReporter(ctx, candidate)

    builder = SessionBuilder()
    seen_uuids: set[str] = set()
    seen_calls: set[str] = set()
    answered: set[str] = set()
    turns: dict[str, TurnDraft] = {}
    skipped: dict[str, int] = {}
    duplicates = 0
    first_duplicate: int | None = None
    session_id: str | None = None
    version: str | None = None
    metadata: dict[str, Any] = {}

    def duplicate(line: int) -> None:
        nonlocal duplicates, first_duplicate
        duplicates += 1
        if first_duplicate is None:
            first_duplicate = line

    def repeated_call(line: int) -> None:
        duplicate(line)
        ctx.set_aside_calls("repeated tool_use id", line=line)

    # Claude Code sometimes writes a tool_result line before the assistant line holding its
    # tool_use (parallel calls streamed to disk). Such a result is held back and placed right
    # after the line that makes the call, where the model saw it; otherwise the call would
    # replay without its answer and the answer would be an orphan.
    call_line = _call_lines(group.records)
    held: dict[int, list[tuple[list[Any], Origin, str | None, dict[str, Any] | None, bool]]] = {}

    for position, record in enumerate(group.records):
        value = record.value
        line = record.line
        origin = Origin(line=line)
        rtype = type_of(value)
        uuid = value.get("uuid")
        if isinstance(uuid, str):
            if uuid in seen_uuids:
                duplicate(line)
                calls = _call_blocks(value) if rtype == "assistant" else 0
                if calls:
                    ctx.set_aside_calls("repeated line", line=line, count=calls)
                continue
            seen_uuids.add(uuid)
        if session_id is None and isinstance(value.get("sessionId"), str):
            session_id = value["sessionId"]
        if version is None and isinstance(value.get("version"), str):
            version = value["version"]
        for field_name in ("cwd", "gitBranch"):
            if field_name not in metadata and isinstance(value.get(field_name), str):
                metadata[field_name] = value[field_name]
        timestamp = iso_timestamp(value.get("timestamp"))
        message = value.get("message")
        if rtype == "assistant":
            if not isinstance(message, dict):
                report("warning", "invalid_record",
                       "assistant line has no 'message' object; it was skipped", line=line)
                continue
            key = _turn_key(message, value)
            content = message.get("content")
            turn = turns.get(key) if key is not None else None
            if turn is None:
                model = message.get("model")
                synthetic = model == "<synthetic>"
                stop = message.get("stop_reason")
                turn = builder.assistant(
                    "", [], model=model if isinstance(model, str) and not synthetic else None,
                    stop_reason=stop if isinstance(stop, str) else None, synthetic=synthetic,
                    timestamp=timestamp, origin=origin)
                if key is not None:
                    turns[key] = turn
            elif turn.stop_reason is None and isinstance(message.get("stop_reason"), str):
                turn.stop_reason = message["stop_reason"]
            if isinstance(turn.content, list):
                if isinstance(content, list):
                    turn.content.extend(content)
                elif content is not None:
                    turn.content.append(content)
            pending = assistant_blocks(builder, turn, content, origin,
                                       seen_call_ids=seen_calls,
                                       on_duplicate=functools.partial(repeated_call, line))
            if value.get("isApiErrorMessage") is True:
                turn.error = extract_text(content, TEXT_JOINER) or "API error"
            emit_server_results(builder, pending, timestamp)
            for blocks, held_origin, held_time, held_meta, held_meta_flag in \
                    held.pop(position, ()):
                user_blocks(builder, blocks, held_origin, timestamp=held_time,
                            as_system=held_meta_flag, answered=answered,
                            on_duplicate=functools.partial(duplicate, held_origin.line or line),
                            meta=held_meta)
        elif rtype == "user":
            if not isinstance(message, dict):
                report("warning", "invalid_record",
                       "user line has no 'message' object; it was skipped", line=line)
                continue
            content = message.get("content")
            is_meta = value.get("isMeta") is True
            text: str | None = (extract_text(content, TEXT_JOINER)
                                if not isinstance(content, list) else None)
            if value.get("isCompactSummary") is True or (
                    isinstance(text, str) and text.startswith(_CONTINUED)):
                summary = extract_text(content, TEXT_JOINER)
                if not builder.fill_compaction(summary):
                    builder.compaction(summary, timestamp=timestamp, origin=origin)
                continue
            meta = _tool_use_meta(value.get("toolUseResult"))
            if isinstance(content, list) and call_line:
                content = _hold_early_results(content, position, call_line, seen_calls, held,
                                              origin, timestamp, meta, is_meta)
            user_blocks(builder, content, origin, timestamp=timestamp, as_system=is_meta,
                        answered=answered, on_duplicate=functools.partial(duplicate, line),
                        meta=meta)
        elif rtype == "system":
            subtype = value.get("subtype")
            if subtype == "compact_boundary":
                compact = value.get("compactMetadata")
                compact = compact if isinstance(compact, dict) else {}
                trigger = compact.get("trigger")
                tokens = compact.get("preTokens")
                builder.compaction(
                    "", trigger=trigger if isinstance(trigger, str) else None,
                    tokens_before=tokens if isinstance(tokens, int)
                    and not isinstance(tokens, bool) else None,
                    timestamp=timestamp, origin=origin)
            else:
                name = f"system:{subtype}" if isinstance(subtype, str) else "system"
                skipped[name] = skipped.get(name, 0) + 1
        else:
            name = rtype if isinstance(rtype, str) else "<no type>"
            skipped[name] = skipped.get(name, 0) + 1
    if duplicates:
        report("info", "duplicates_skipped",
               plural(duplicates, "repeated line, tool call or answer was",
                      "repeated lines, tool calls or answers were") + " dropped",
               line=first_duplicate, count=duplicates)
    if skipped:
        metadata["skipped"] = skipped
    metadata["isSidechain"] = group.sidechain
    sid = (group.agent_id or group.root_uuid or "") if group.sidechain else (session_id or "")
    return builder.build(id=sid, source=ctx.path, format=FORMAT_ID, title=title,
                         agent=AgentInfo("Claude Code", version), metadata=metadata,
                         report=report)


def _call_lines(records: list[Record]) -> dict[str, int]:
    """``tool_use`` id → position (in ``records``) of the first assistant line holding it."""
    found: dict[str, int] = {}
    for position, record in enumerate(records):
        value = record.value
        if value.get("type") != "assistant":
            continue
        message = value.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") in CALL_BLOCKS \
                        and isinstance(block.get("id"), str):
                    found.setdefault(block["id"], position)
    return found


def _hold_early_results(content: list[Any], position: int, call_line: dict[str, int],
                        seen_calls: set[str], held: dict[int, list[Any]], origin: Origin,
                        timestamp: str | None, meta: dict[str, Any] | None,
                        is_meta: bool) -> list[Any]:
    """The blocks of a user line to place now; ``tool_result`` blocks whose call is only made
    by a later line go to ``held`` under that line's position."""
    now: list[Any] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            call_id = block.get("tool_use_id")
            later = call_line.get(call_id) if isinstance(call_id, str) else None
            if later is not None and later > position and call_id not in seen_calls:
                held.setdefault(later, []).append(([block], origin, timestamp, meta, is_meta))
                continue
        now.append(block)
    return now


def _call_blocks(value: dict[str, Any]) -> int:
    """The tool calls an assistant line holds (for the tally, when the line is dropped)."""
    message = value.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return 0
    return sum(1 for block in content if isinstance(block, dict)
               and block.get("type") in CALL_BLOCKS)


def _turn_key(message: dict[str, Any], value: dict[str, Any]) -> str | None:
    for key, source in (("id", message), ("requestId", value), ("uuid", value)):
        candidate = source.get(key)
        if isinstance(candidate, str) and candidate:
            return f"{key}:{candidate}"
    return None


def _tool_use_meta(result: Any) -> dict[str, Any] | None:
    if not isinstance(result, dict):
        return None
    meta = {k: result[k] for k in _META_KEYS
            if isinstance(result.get(k), bool | int | float | str)
            and not (isinstance(result.get(k), str) and len(result[k]) > 200)}
    return meta or None
