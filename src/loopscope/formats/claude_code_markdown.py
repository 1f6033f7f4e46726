"""Markdown export of a Claude Code session — ``claude_code_markdown``.

``# Claude Session Export`` / ``## Session Information`` / ``## Conversation``, then one
``### User`` or ``### Assistant`` section per recorded line, each with a ``> M/D/YYYY, h:mm:ss
AM|PM`` local time and a body: a pretty-printed JSON array of Anthropic content blocks, or plain
user text. Consecutive assistant sections form one turn; repeated sections (resumed history
exported twice), repeated ``tool_use`` ids and repeated answers are dropped.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

from loopscope.formats._ext_common import CandidateReporter, extract_text, trim_section
from loopscope.formats.base import ImportContext
from loopscope.formats.builder import SessionBuilder, TurnDraft
from loopscope.model import AgentInfo, Origin, Session
from loopscope.words import plural

FORMAT_ID = "claude_code_markdown"

AGENT = AgentInfo("Claude Code", None)
CONTINUATION = "This session is being continued from a previous conversation"

_HEADERS = {"### User": "user", "### Assistant": "assistant"}
_FIELD = re.compile(r"^- \*\*(?P<key>[^*]+)\*\*:\s*(?P<value>.*?)\s*$")
_TIME = re.compile(
    r"^>\s*(?P<mo>\d{1,2})/(?P<d>\d{1,2})/(?P<y>\d{4}),\s*(?P<h>\d{1,2}):(?P<mi>\d{2})"
    r"(?::(?P<s>\d{2}))?\s*(?P<ampm>[AaPp][Mm])?\s*$")
_DECODER = json.JSONDecoder()


def parse_timestamp(line: str) -> str | None:
    """``> 12/1/2025, 6:10:08 PM`` → ``2025-12-01T18:10:08`` (naive: the export has no zone)."""
    match = _TIME.match(line.strip())
    if not match:
        return None
    month, day, year = int(match["mo"]), int(match["d"]), int(match["y"])
    hour, minute = int(match["h"]), int(match["mi"])
    second = int(match["s"] or 0)
    ampm = (match["ampm"] or "").upper()
    if ampm == "PM" and hour != 12:
        hour += 12
    elif ampm == "AM" and hour == 12:
        hour = 0
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour <= 23 and minute <= 59 and second <= 59):
        return None
    return f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}"


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == "`" and value[-1] == "`":
        return value[1:-1]
    return value


class _Section:
    __slots__ = ("body", "line", "role", "time_line")

    def __init__(self, role: str, line: int, time_line: str, body: str):
        self.role = role
        self.line = line
        self.time_line = time_line
        self.body = body


def _split(text: str) -> tuple[dict[str, str], list[_Section]]:
    """The header fields and the conversation sections, in order."""
    lines = text.split("\n")
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
    fields: dict[str, str] = {}
    starts: list[int] = []
    for i, line in enumerate(lines):
        if line in _HEADERS or line.rstrip() in _HEADERS:
            starts.append(i)
        elif not starts:
            match = _FIELD.match(line)
            if match:
                fields.setdefault(match["key"].strip(), _unquote(match["value"]))
    sections: list[_Section] = []
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        body_lines = lines[start + 1:end]
        time_line = ""
        # Markdown formatters put a blank line after each heading: the time line is the first
        # line that is not blank.
        while body_lines and not body_lines[0].strip():
            body_lines.pop(0)
        if body_lines and body_lines[0].startswith(">"):
            time_line = body_lines[0]
            body_lines = body_lines[1:]
        body_lines = trim_section(body_lines)  # (never split on ---)
        sections.append(_Section(_HEADERS[lines[start].rstrip()], start + 1, time_line,
                                 "\n".join(body_lines)))
    return fields, sections


def _blocks(body: str) -> tuple[list[dict[str, Any]] | None, bool]:
    """``(blocks, bad)``: the content blocks when the body is a JSON block array; ``bad`` when it
    looks like one but does not decode (a truncated export)."""
    if not body.startswith("["):
        return None, False
    looks_json = body[1:].lstrip().startswith(("{", "]"))
    try:
        value, end = _DECODER.raw_decode(body)
    except (ValueError, RecursionError):
        return None, looks_json
    if body[end:].strip():
        return None, looks_json
    if isinstance(value, list) and all(
            isinstance(b, dict) and isinstance(b.get("type"), str) for b in value):
        return value, False
    return None, looks_json


def import_text(text: str, ctx: ImportContext) -> Iterator[Session | None]:
    report = CandidateReporter(ctx, 0)
    fields, sections = _split(text)
    b = SessionBuilder()
    turn: TurnDraft | None = None
    seen_sections: set[tuple[str, str, str]] = set()
    seen_tool_ids: set[str] = set()
    answered: set[str] = set()
    dup_sections = dup_ids = dup_answers = 0
    first_dup: int | None = None

    for section in sections:
        origin = Origin(line=section.line)
        key = (section.role, section.time_line, section.body)
        if key in seen_sections:
            dup_sections += 1
            first_dup = first_dup or section.line
            if section.role == "assistant":
                repeated, _ = _blocks(section.body)
                calls = sum(1 for blk in repeated or () if blk.get("type") == "tool_use")
                if calls:
                    ctx.set_aside_calls("repeated section", line=section.line, count=calls)
            continue
        seen_sections.add(key)
        ts = parse_timestamp(section.time_line) if section.time_line else None
        blocks, bad = _blocks(section.body)
        if bad:
            report("warning", "invalid_record",
                   "a section's JSON body does not decode (truncated export?); "
                   "the section was skipped", line=section.line)
            continue
        if section.role == "assistant":
            if turn is None:
                turn = b.assistant("", [], timestamp=ts, origin=origin)
            elif ts is not None:
                b.timestamps.append(ts)
            if blocks is None:
                turn.text += section.body
                turn.content.append({"type": "text", "text": section.body})
                continue
            for block in blocks:
                btype = block.get("type")
                if btype == "tool_use":
                    tool_id = block.get("id")
                    if isinstance(tool_id, str):
                        if tool_id in seen_tool_ids:
                            dup_ids += 1
                            first_dup = first_dup or section.line
                            ctx.set_aside_calls("repeated tool_use id", line=section.line)
                            continue
                        seen_tool_ids.add(tool_id)
                    turn.content.append(block)
                    b.call(turn, block.get("name"), block.get("input"), "value", id=tool_id,
                           origin=origin)
                    continue
                turn.content.append(block)
                if btype == "text" and isinstance(block.get("text"), str):
                    turn.text += block["text"]
                elif btype == "thinking" and isinstance(block.get("thinking"), str):
                    turn.thinking = (turn.thinking + "\n" + block["thinking"]
                                     if turn.thinking else block["thinking"])
            continue
        # a user section ends the assistant turn
        turn = None
        if blocks is None:
            _user_text(b, section.body, section.body, ts, origin)
            continue
        rest: list[dict[str, Any]] = []
        for block in blocks:
            if block.get("type") != "tool_result":
                rest.append(block)
                continue
            call_id = block.get("tool_use_id")
            if isinstance(call_id, str):
                if call_id in answered:
                    dup_answers += 1
                    first_dup = first_dup or section.line
                    continue
                answered.add(call_id)
            content = block.get("content")
            b.result(call_id, content, extract_text(content, "\n"),
                     is_error=block.get("is_error") is True, timestamp=ts, origin=origin)
        if any((blk.get("type") == "text" and isinstance(blk.get("text"), str)
                and blk["text"].strip()) or blk.get("type") in ("image", "document")
               for blk in rest):
            _user_text(b, extract_text(rest, "\n"), rest, ts, origin)

    duplicates = dup_sections + dup_ids + dup_answers
    if duplicates:
        report("info", "duplicates_skipped",
               f"{plural(dup_sections, 'repeated section')}, "
               f"{plural(dup_ids, 'repeated tool_use id')} and "
               f"{plural(dup_answers, 'repeated answer')} were dropped",
               line=first_dup, count=duplicates)
    metadata: dict[str, Any] = {"timezone": "unknown"}
    if "Project Path" in fields:
        metadata["project_path"] = fields["Project Path"]
    if "Export Mode" in fields:
        metadata["export_mode"] = fields["Export Mode"]
    if os.path.basename(ctx.path).startswith("agent-"):
        metadata["sidechain"] = True
    yield b.build(id=fields.get("Session ID", ""), source=ctx.path, format=FORMAT_ID,
                  agent=AGENT, metadata=metadata, report=report)


def _user_text(b: SessionBuilder, text: str, content: Any, ts: str | None, origin: Origin) -> None:
    if text.startswith(CONTINUATION):
        b.compaction(text, timestamp=ts, origin=origin)
    else:
        b.user(text, content, timestamp=ts, origin=origin)
