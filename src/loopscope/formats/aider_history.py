"""Aider's chat log, ``.aider.chat.history.md`` — ``aider_history``.

Aider appends to the file as it goes (``aider/io.py``): ``# aider chat started at <local
time>`` opens each run (one file holds every run in that repository: one session per header),
each line the user typed is written as ``#### <line>``, each reply of the model as plain
Markdown, and every message of Aider itself (start-up banner, token counts, questions with the
answer given, ``Applied edit to <path>``, ``Running <command>``, errors) as a ``> `` line.

Aider has no tool-call records: its calls are what the log shows it doing.

* **Edits.** A reply's edit blocks — SEARCH/REPLACE blocks (a path, then ``<<<<<<< SEARCH`` /
  ``=======`` / ``>>>>>>> REPLACE``), whole files (a path, then a fence) or unified diffs
  (``--- a/P`` / ``+++ b/P`` in a diff fence) — are calls named ``edit`` with the path and the
  edit as arguments, when Aider's own lines after the reply say it applied them (``Applied
  edit to P``, ``Did not apply edit to P`` in a dry run) or refused them (``Skipping edits to
  P``, ``The LLM did not conform to the edit format``, a SEARCH block that failed to match).
  A code block Aider did not act on (an ``/ask`` answer, the architect's plan for the editor)
  is no call. The outcome line is the result; an outcome with no block the log shows is a call
  with the path alone.
* **Shell commands.** A command Aider ran for the model (``Running <command>``) or that the
  user declined to run (``Run shell command? … n``) is a ``run`` call of the reply; ``/run``
  (or ``!``) and ``/test`` typed by the user are ``run`` / ``test`` calls of a synthetic turn
  after the user's message. Aider does not log command output, only what it did with it
  (``Added 12 lines of output to the chat.``): that is the result.

A run with no message (Aider started and quit) makes no session; an info counts them. The
``/ask X`` / ``/architect X`` / ``/code X`` line and the ``X`` Aider logs again right after
are one user message.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from loopscope.formats._ext_common import CandidateReporter
from loopscope.formats.base import ImportContext
from loopscope.formats.builder import SessionBuilder, TurnDraft, line_origin
from loopscope.formats.cursor_specstory import FENCE, _Fences, _fences_of
from loopscope.model import AgentInfo, Session
from loopscope.words import plural

FORMAT_ID = "aider_history"

AGENT = "Aider"
HEADER = re.compile(r"^# aider chat started at (?P<when>.*?)\s*$")
_WHEN = re.compile(r"^(?P<date>\d{4}-\d{2}-\d{2}) (?P<time>\d{2}:\d{2}:\d{2})$")
_HEAD = re.compile(r"^<{5,9} SEARCH\s*$")
_DIVIDER = re.compile(r"^={5,9}\s*$")
_UPDATED = re.compile(r"^>{5,9} REPLACE\s*$")
_APPLIED = re.compile(r"^(?:Applied edit to (?P<path>.+?)|Did not apply edit to (?P<dry>.+?) "
                      r"\(--dry-run\))$")
_SKIPPED = re.compile(r"^Skipping edits to (?P<path>.+?)$")
_NO_MATCH = re.compile(r"SEARCH block failed to exactly match lines in (?P<path>.+?)\s*$")
_NOT_CONFORM = "The LLM did not conform to the edit format."
_RUNNING = re.compile(r"^Running:? (?P<command>.+?)$")
_RUN_PROMPT = re.compile(r"^Run shell commands?\? .*\]: ?(?P<answer>\S*)$")
_USER_RUN = re.compile(r"^(?:/(?P<cmd>run|test) +|!)(?P<command>.+)$", re.S)
_MODE = re.compile(r"^/(?:ask|architect|code|context|help) +(?P<text>.+)$", re.S)
_VERSION = re.compile(r"^Aider v(?P<version>\S+)$")
_MODEL = re.compile(r"^(?:Main model|Model): (?P<model>\S+)(?: with (?P<format>[\w-]+) edit "
                    r"format)?")


def _clean(line: str) -> str:
    """A line of Aider's writing without the two spaces it ends lines with (a Markdown break)."""
    return line[:-2] if line.endswith("  ") else line.rstrip()


class _Segment:
    __slots__ = ("kind", "line", "lines")

    def __init__(self, kind: str, line: int):
        self.kind = kind  # "user" | "tool" | "reply"
        self.line = line
        self.lines: list[str] = []


def _segments(lines: list[str], first: int) -> list[_Segment]:
    """Group a run's lines into user messages (``#### ``), Aider's messages (``> ``) and the
    model's replies (the rest). Inside a fence the model opened, every line is the reply's; a
    fence left open ends at Aider's ``> Tokens:`` line, written right after each reply."""
    out: list[_Segment] = []
    fences = _Fences()
    gap = False
    for offset, line in enumerate(lines):
        number = first + offset
        if fences.open is not None and out and out[-1].kind == "reply":
            if line.startswith("> Tokens: "):
                fences.open = None
            else:
                fences.step(line)
                out[-1].lines.append(line)
                continue
        if line.startswith("#### ") or line.rstrip() == "####":
            kind, text = "user", _clean(line[5:])
        elif line.startswith("> ") or line.rstrip() == ">":
            kind, text = "tool", _clean(line[2:])
        elif not line.strip():
            if out and out[-1].kind == "reply":
                out[-1].lines.append(line)
            gap = True
            continue
        else:
            kind, text = "reply", line
            fences.step(line)
        last = out[-1] if out else None
        if last is None or last.kind != kind or (kind == "user" and gap):
            last = _Segment(kind, number)
            out.append(last)
        last.lines.append(text)
        gap = False
    return out


# ------------------------------------------------------------------------------ edits


def _path(line: str) -> str:
    """A file name as Aider reads it before an edit block (``strip_filename``): without
    backticks, asterisks, a trailing colon or a leading ``#``."""
    name = line.strip().strip("`*").rstrip(":").lstrip("#").strip().strip("`*")
    if not name or " " in name or len(name) > 400 or name.startswith(("<", "=", ">")):
        return ""
    return name


def _norm(path: str) -> str:
    return path.strip().removeprefix("./").strip("`")


Edit = tuple[str, dict[str, Any], int]  # (path, arguments, line)


def _edit_blocks(lines: list[str], first: int) -> list[Edit]:
    """Every edit block of a reply, in order: SEARCH/REPLACE, unified diff, whole file."""
    edits: list[Edit] = []
    inside: set[int] = set()  # reply lines that belong to a SEARCH/REPLACE block
    previous = ""
    i = 0
    while i < len(lines):
        if not _HEAD.match(lines[i]):
            i += 1
            continue
        j = i - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        if j >= 0 and FENCE.match(lines[j]) and lines[j].strip().strip("`~"):
            j -= 1  # ```python: the path is the line before the fence
        elif j >= 0 and FENCE.match(lines[j]):
            j -= 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        path = (_path(lines[j]) if j >= 0 else "") or previous
        k = i + 1
        search: list[str] = []
        while k < len(lines) and not _DIVIDER.match(lines[k]):
            search.append(lines[k])
            k += 1
        replace: list[str] = []
        k += 1
        while k < len(lines) and not _UPDATED.match(lines[k]):
            replace.append(lines[k])
            k += 1
        edits.append((path, {"path": path, "search": "\n".join(search),
                             "replace": "\n".join(replace)}, first + i))
        inside.update(range(i, k + 1))
        previous = path
        i = k + 1
    for info, content, start, end in _fences_of(lines):
        if start in inside or any(n in inside for n in range(start, end + 1)):
            continue
        if info in ("diff", "patch", "udiff") or content.startswith("--- "):
            edits += _udiff(content, first + start)
            continue
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        path = _path(lines[j]) if j >= 0 and j >= start - 2 else ""
        if path:
            edits.append((path, {"path": path, "content": content}, first + j))
    edits.sort(key=lambda e: e[2])
    return edits


def _udiff(content: str, line: int) -> list[Edit]:
    out: list[Edit] = []
    current: list[str] = []
    path = ""
    for text in content.split("\n"):
        if text.startswith("+++ "):
            if path and current:
                out.append((path, {"path": path, "diff": "\n".join(current)}, line))
            path = text[4:].strip().removeprefix("b/")
            current = []
            continue
        if text.startswith("--- ") and not current:
            continue
        current.append(text)
    if path:
        out.append((path, {"path": path, "diff": "\n".join(current)}, line))
    return out


# ------------------------------------------------------------------------------ one run

Call = tuple[str, dict[str, Any], str | None, bool, int]  # name, arguments, result, error, line


def _outcomes(segment: _Segment, reply: list[Edit]) -> list[Call]:
    """The calls Aider's messages after a reply show: its edits, then the commands run."""
    applied: dict[str, tuple[str, int]] = {}
    refused: dict[str, tuple[str, int]] = {}
    failure: tuple[str, int] | None = None
    for n, text in enumerate(segment.lines):
        if text.startswith(_NOT_CONFORM):
            failure = ("\n".join(segment.lines[n:]).strip(), segment.line + n)
            break
    for n, text in enumerate(segment.lines):
        line = segment.line + n
        match = _APPLIED.match(text)
        if match is not None:
            applied.setdefault(_norm(match["path"] or match["dry"]), (text, line))
            continue
        match = _SKIPPED.match(text)
        if match is not None:
            refused.setdefault(_norm(match["path"]), (text, line))
            continue
        match = _NO_MATCH.search(text)
        if match is not None and _norm(match["path"]) not in refused:
            shown = failure[0] if failure else "\n".join(segment.lines[n:n + 40]).strip()
            refused[_norm(match["path"])] = (shown, line)
    calls: list[Call] = []
    done: set[str] = set()
    for path, args, line in reply:
        key = _norm(path)
        if key in applied:
            calls.append(("edit", args, applied[key][0], False, line))
        elif key in refused:
            calls.append(("edit", args, refused[key][0], True, line))
        elif failure is not None and "search" in args:
            calls.append(("edit", args, failure[0], True, line))
        else:
            continue
        done.add(key)
    for table, error in ((applied, False), (refused, True)):
        for key, (text, line) in table.items():
            if key not in done:
                calls.append(("edit", {"path": key}, text, error, line))
                done.add(key)
    if failure is not None and not any(c[3] for c in calls):
        calls.append(("edit", {}, failure[0], True, failure[1]))
    calls += _commands(segment)
    return calls


def _commands(segment: _Segment) -> list[Call]:
    calls: list[Call] = []
    lines = segment.lines
    for n, text in enumerate(lines):
        line = segment.line + n
        match = _RUNNING.match(text)
        if match is not None:
            out: list[str] = []
            for later in lines[n + 1:]:
                if _RUNNING.match(later) or _RUN_PROMPT.match(later):
                    break
                if not later.startswith("Tokens: "):
                    out.append(later)
            calls.append(("run", {"command": match["command"]}, "\n".join(
                [text, *out]).strip(), False, line))
            continue
        prompt = _RUN_PROMPT.match(text)
        if prompt is not None and prompt["answer"][:1].lower() not in ("y", "a"):
            command = lines[n - 1] if n > 0 and not _RUN_PROMPT.match(lines[n - 1]) else ""
            calls.append(("run", {"command": command}, text, True, line))
    return calls


def _run(segments: list[_Segment], when: str | None, ctx: ImportContext,
         candidate: int) -> Session:
    report = CandidateReporter(ctx, candidate)
    b = SessionBuilder()
    metadata: dict[str, Any] = {"timezone": "unknown"}
    version: str | None = None
    models: list[str] = []
    ts = None
    if when:
        found = _WHEN.match(when)
        ts = f"{found['date']}T{found['time']}" if found else None
        metadata["started"] = when
    reply: tuple[TurnDraft, list[Edit]] | None = None
    pending: tuple[TurnDraft, Any] | None = None  # a /run or /test awaiting Aider's lines
    echo: str | None = None
    for segment in segments:
        origin = line_origin(segment.line)
        if segment.kind == "user":
            text = "\n".join(segment.lines).strip()
            if text == "<blank>":  # Enter on an empty prompt, as Aider logs it
                continue
            if echo is not None and text == echo:
                echo = None
                continue
            mode = _MODE.match(text)
            echo = mode["text"].strip() if mode else None
            b.user(text, timestamp=ts, origin=origin)
            ts = None
            pending = None
            run = _USER_RUN.match(text)
            if run is not None and run["command"].strip():
                name = run["cmd"] or "run"
                turn = b.assistant("", [], synthetic=True, origin=origin)
                args = {"command": run["command"].strip()}
                turn.content.append({"type": "tool_use", "name": name, "input": args})
                pending = (turn, b.call(turn, name, args, "value", origin=origin))
            continue
        if segment.kind == "reply":
            text = "\n".join(segment.lines).strip()
            echo = None
            turn = b.assistant(text, [{"type": "text", "text": text}], timestamp=ts,
                               model=models[-1] if models else None, origin=origin)
            ts = None
            reply = (turn, _edit_blocks(segment.lines, segment.line))
            pending = None
            continue
        # Aider's own lines
        for text in segment.lines:
            found_version = _VERSION.match(text)
            if found_version is not None and version is None:
                version = found_version["version"]
            found_model = _MODEL.match(text)
            if found_model is not None:
                models.append(found_model["model"])
                if found_model["format"]:
                    metadata["edit_format"] = found_model["format"]
        if pending is not None:
            shown = "\n".join(t for t in segment.lines if not t.startswith("Tokens: ")).strip()
            b.result(None, shown, shown, structure_call=pending[1], origin=origin)
            pending = None
            continue
        calls = _outcomes(segment, reply[1] if reply is not None else [])
        if not calls:
            continue
        if reply is not None:
            turn = reply[0]
            reply = (turn, [])  # a reply's edits are acted on once
        else:
            turn = b.assistant("", [], synthetic=True, origin=origin)
        drafts = []
        for name, args, _result, _error, line in calls:
            turn.content.append({"type": "tool_use", "name": name, "input": args})
            drafts.append(b.call(turn, name, args, "value", origin=line_origin(line)))
        for draft, (_name, _args, result, error, line) in zip(drafts, calls, strict=True):
            if result is not None:
                b.result(None, result, result, is_error=error, structure_call=draft,
                         origin=line_origin(line))
    return b.build(id="", source=ctx.path, format=FORMAT_ID, agent=AgentInfo(AGENT, version),
                   models=models, metadata=metadata, report=report)


def import_text(text: str, ctx: ImportContext) -> Iterator[Session | None]:
    """One session per ``# aider chat started at`` header (text before the first header, when
    there is any, is a session of its own)."""
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n")]
    starts = [i for i, ln in enumerate(lines) if HEADER.match(ln)]
    runs: list[tuple[int, int, str | None]] = []
    if not starts or any(ln.strip() for ln in lines[:starts[0]]):
        runs.append((0, starts[0] if starts else len(lines), None))
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        match = HEADER.match(lines[start])
        runs.append((start + 1, end, match["when"] if match else None))
    candidate = 0
    idle = 0
    for start, end, when in runs:
        segments = _segments(lines[start:end], start + 1)
        if not any(s.kind != "tool" for s in segments):
            idle += 1  # Aider started and quit: its banner, no message
            continue
        yield _run(segments, when, ctx, candidate)
        candidate += 1
    if idle:
        ctx.problem("info", "idle_runs",
                    f"{plural(idle, 'Aider run')} recorded no message (started and quit); they made no "
                    "session", count=idle)
