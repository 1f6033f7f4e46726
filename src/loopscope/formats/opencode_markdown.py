"""opencode's ``/export`` Markdown transcript — ``opencode_markdown``.

opencode writes (``formatTranscript`` of its TUI)::

    # <title>

    **Session ID:** ses_…
    **Created:** …
    **Updated:** …

    ---

    ## User

    <text parts>

    ---

    ## Assistant (Build · gpt-5 · 3.2s)

    _Thinking:_

    <reasoning>

    **Tool: read**

    **Input:**
    ```json
    {…}
    ```

    **Output:**
    ```
    …
    ```

    ---

Each message is one ``## User`` / ``## Assistant …`` section (a ``---`` line and a blank line
end it); each ``**Tool: name**`` line of an assistant section is a call, its ``**Input:**``
block the arguments (pretty JSON), its ``**Output:**`` or ``**Error:**`` block the result. The
input and output blocks are written only with "tool details" on: without them a call has no
arguments and no result, and the import says so (identical-looking calls may differ). An
output may itself hold fence lines; its closing fence is the first one followed by a blank
line and the next part (a tool, a rule, thinking) or the end.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from loopscope.formats._ext_common import CandidateReporter, trim_section, trim_section_end
from loopscope.formats.base import ImportContext
from loopscope.formats.builder import SessionBuilder, line_origin
from loopscope.model import AgentInfo, Session
from loopscope.words import plural

FORMAT_ID = "opencode_markdown"

__all__ = ["FORMAT_ID", "TOOL_LINE", "import_text", "looks_like_export"]

TOOL_LINE = re.compile(r"^\*\*Tool: (.+)\*\*\s*$")
_SESSION_ID = re.compile(r"^\*\*Session ID:\*\*\s*(\S+)\s*$")
_USER = re.compile(r"^## User\s*$")
_ASSISTANT = re.compile(r"^## Assistant(?: \((.*)\))?\s*$")
_BLOCK_LABELS = ("**Input:**", "**Output:**", "**Error:**")
_NEXT_PART = re.compile(r"^(?:\*\*Tool: .+\*\*|---|_Thinking:_|\*\*Error:\*\*)\s*$")


def looks_like_export(head: str) -> bool:
    """A ``# title`` first line, then ``**Session ID:**`` and a ``## User`` or ``## Assistant``
    heading in the head of the file."""
    lines = head.split("\n")
    if not lines or not lines[0].startswith("# "):
        return False
    sid = any(_SESSION_ID.match(line.rstrip("\r")) for line in lines[1:12])
    return sid and any(_USER.match(line.rstrip("\r")) or _ASSISTANT.match(line.rstrip("\r"))
                       for line in lines)


def _section_end(lines: list[str], start: int) -> int:
    """The index of the first heading line of the next message section, from ``start``."""
    for j in range(start, len(lines)):
        if _USER.match(lines[j]) or _ASSISTANT.match(lines[j]):
            return j
    return len(lines)


def _fence(lines: list[str], i: int, end: int, json_block: bool) -> tuple[str | None, int]:
    """The content of the fenced block opening at ``lines[i]`` (or after blank lines) and the
    index after its closing fence; ``(None, i)`` when no block opens there."""
    while i < end and not lines[i].strip():
        i += 1
    if i >= end or not lines[i].startswith("```"):
        return None, i
    first = i + 1
    candidates = [j for j in range(first, end) if lines[j].rstrip() == "```"]
    if not candidates:
        return "\n".join(lines[first:end]), end
    close = candidates[0]
    if not json_block:
        for j in candidates:
            after = j + 1
            while after < end and not lines[after].strip():
                after += 1
            if (after >= end or _NEXT_PART.match(lines[after])) and (
                    after > j + 1 or after >= end):
                close = j
                break
    return "\n".join(lines[first:close]), close + 1


def import_text(text: str, ctx: ImportContext) -> Iterator[Session | None]:
    report = CandidateReporter(ctx, None)
    lines = [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]
    b = SessionBuilder()
    title = lines[0][2:].strip() if lines and lines[0].startswith("# ") else None
    sid = ""
    models: list[str] = []
    bare_calls = 0
    bad_input = 0
    calls = 0
    i = 0
    while i < len(lines) and not (_USER.match(lines[i]) or _ASSISTANT.match(lines[i])):
        match = _SESSION_ID.match(lines[i])
        if match is not None and not sid:
            sid = match.group(1)
        i += 1
    while i < len(lines):
        heading = lines[i]
        start = i
        end = _section_end(lines, i + 1)
        body = trim_section_end(lines[i + 1:end])
        if _USER.match(heading):
            b.user("\n".join(trim_section(body)).strip(), None, origin=line_origin(start + 1))
            i = end
            continue
        match = _ASSISTANT.match(heading)
        detail = match.group(1) if match else None
        model = None
        if detail:
            pieces = [p.strip() for p in detail.split("·")]
            if len(pieces) >= 2:
                model = pieces[1]
                models.append(model)
        turn = b.assistant("", None, model=model, origin=line_origin(start + 1))
        results: list[tuple[Any, str | None, bool, int]] = []
        texts: list[str] = []
        thinking: list[str] = []
        in_thinking = False
        j = start + 1
        stop = start + 1 + len(body)
        while j < stop:
            line = lines[j]
            tool = TOOL_LINE.match(line)
            if tool is None:
                if line.strip() == "_Thinking:_":
                    in_thinking = True
                elif line.strip() in _BLOCK_LABELS:
                    pass  # (a label without its tool line: kept out of the text)
                else:
                    (thinking if in_thinking else texts).append(line)
                j += 1
                continue
            in_thinking = False
            name = tool.group(1).strip()
            k = j + 1
            arguments: Any = {}
            output: str | None = None
            error = False
            has_input = False
            while True:
                m = k
                while m < stop and not lines[m].strip():
                    m += 1
                label = lines[m].strip() if m < stop else ""
                if label not in _BLOCK_LABELS:
                    break
                block, after = _fence(lines, m + 1, stop, label == "**Input:**")
                if block is None:
                    break
                if label == "**Input:**":
                    has_input = True
                    try:
                        arguments = json.loads(block)
                    except (ValueError, RecursionError):
                        bad_input += 1
                        arguments = block
                else:
                    output, error = block, label == "**Error:**"
                k = after
            # (the transcript writes no call id: a synthesized one, paired by structure)
            draft = b.call(turn, name, arguments, "value", id=f"ls-{calls}", id_synthetic=True,
                           origin=line_origin(j + 1))
            calls += 1
            if not has_input:
                bare_calls += 1
            if output is not None:
                results.append((draft, output, error, j + 1))
            j = k
        turn.text = "\n".join(trim_section(texts)).strip()
        turn.thinking = "\n".join(trim_section(thinking)).strip()
        # Results after the turn, in call order (a call without a block stays unanswered).
        for draft, output, error, line_number in results:
            b.result(draft.id, output, output or "", is_error=error, structure_call=draft,
                     name=draft.name, origin=line_origin(line_number))
        i = end
    if bare_calls:
        report("warning", "no_tool_details",
               f"{plural(bare_calls, 'tool call has', 'tool calls have')} no **Input:** block (the export was written "
               "without tool details): they are replayed with empty arguments, so calls that "
               "differed may look identical", count=bare_calls)
    if bad_input:
        report("info", "bad_arguments",
               f"{plural(bad_input, '**Input:** block is', '**Input:** blocks are')} not valid JSON; the raw text was kept",
               count=bad_input)
    yield b.build(id=sid, source=ctx.path, format=FORMAT_ID, title=title,
                  agent=AgentInfo("opencode", None), models=models, report=report)
