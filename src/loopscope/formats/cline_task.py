"""Cline / Roo Code task folders — ``cline_task``.

A task folder (``…/globalStorage/saoudrizwan.claude-dev/tasks/<id>/`` for Cline,
``…/rooveterinaryinc.roo-cline/tasks/<id>/`` for Roo Code) holds two recordings of one task:

``api_conversation_history.json``
    The Anthropic-shaped messages sent to the model. Tool calls are XML-ish tags in assistant
    text (``<read_file><path>x</path></read_file>``, only the tools of Cline or Roo Code: any
    other tag is text) or, in newer versions, native ``tool_use`` blocks. Results come back in
    the next user message: ``tool_result`` blocks, or text blocks that start ``[read_file for
    'x'] Result:`` (the content follows in the same block or in the blocks after it, up to the
    next such header or the ``<environment_details>`` block). A result is paired with the
    first unanswered call of the turn before it with the same tool name (else the first
    unanswered one): the order Cline answers in.

``ui_messages.json``
    What the chat panel showed: ``{ts, type: "ask"|"say", ask|say, text, partial?}``. Calls are
    ``tool`` (JSON text ``{"tool": "readFile", …}``), ``command``, ``use_mcp_server``,
    ``browser_action_launch`` / ``browser_action``, ``load_mcp_documentation``, ``followup``,
    ``plan_mode_respond`` and ``completion_result`` (a ``say``) records; a ``partial`` record
    is an unfinished stream and no call. Their results are read from the next
    ``api_req_started`` record, whose ``request`` repeats the user message sent next (the
    ``[tool] Result:`` sections, in call order); a call without one takes its
    ``command_output`` / ``mcp_server_response`` / ``browser_action_result`` records. A turn is
    what the model wrote between two ``api_req_started`` records.

When both files are in the same task folder (under the names Cline gives them) the API history
is the session (the richer record): the UI file then yields no session, says which file covers
it, and sets its calls aside.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from loopscope.formats._ext_common import CandidateReporter
from loopscope.formats.base import ImportContext, ImportLimits
from loopscope.formats.builder import CallDraft, SessionBuilder, TurnDraft, pointer_origins
from loopscope.formats.jsonio import JsonError, parse_line
from loopscope.formats.text import TEXT_JOINER, extract_text, iso_timestamp
from loopscope.model import AgentInfo, Origin, Session
from loopscope.words import plural

FORMAT_ID = "cline_task"
API_HISTORY = "api_conversation_history.json"
UI_NAMES = frozenset({"ui_messages.json", "claude_messages.json"})
"""The names Cline and Roo Code give the UI file of a task (``claude_messages.json`` before
Cline 2): only a file of these names is the UI twin of an API history beside it."""
COVERED = "covered_by_api_history"
"""The problem code (and set-aside reason) of a UI file whose task the API history covers."""

__all__ = [
    "API_HISTORY",
    "FORMAT_ID",
    "TOOL_NAMES",
    "UI_NAMES",
    "import_document",
    "is_api_history",
    "is_task_metadata",
    "is_ui_messages",
]

TOOL_NAMES = frozenset({
    # Cline
    "execute_command", "read_file", "write_to_file", "replace_in_file", "search_files",
    "list_files", "list_code_definition_names", "browser_action", "use_mcp_tool",
    "access_mcp_resource", "ask_followup_question", "plan_mode_respond",
    "load_mcp_documentation", "attempt_completion", "new_task", "condense", "summarize_task",
    "report_bug", "new_rule", "web_fetch", "web_search", "apply_patch", "focus_chain",
    # Roo Code
    "apply_diff", "insert_content", "search_and_replace", "switch_mode", "fetch_instructions",
    "codebase_search", "update_todo_list", "run_slash_command", "generate_image",
    "simple_read_file", "edit_file", "search_replace",
})
"""The tools whose XML tags are calls (Cline's and Roo Code's tool lists)."""

_OPEN_TAG = re.compile(r"<(" + "|".join(sorted(TOOL_NAMES, key=len, reverse=True)) + r")>")
_PARAM = re.compile(r"<([A-Za-z_][\w-]*)>")
_RESULT_HEADER = re.compile(r"\[([A-Za-z_][\w.:-]*)(?:\s+for\s.*?)?\] Result:", re.S)
"""``[read_file for 'x'] Result:`` (``toolDescription`` of Cline and Roo Code; Roo's read_file
adds a sentence after the path, and a path may hold a newline)."""
_NOT_RUN = re.compile(r"(?:Skipping tool \[([A-Za-z_][\w.:-]*)[^\]]*\]|Tool \[([A-Za-z_][\w.:-]*)\]"
                      r" was not executed)")
"""A call Cline answered without running it (a rejected earlier tool, one tool per message)."""
_ERROR_MARKS = ("The tool execution failed", "The user denied this operation", "[ERROR]",
                "Error:")
_SYSTEM_NOTES = ("[ERROR]", "[TASK RESUMPTION]", "[Response interrupted", "[NOTE]",
                 "[IMPORTANT]")
_ENV = "<environment_details>"
_TODO = ("# Todo List", "# TODO LIST")
"""Cline's task-progress reminder, a block of its own after the results (context, like the
environment details)."""
_TODO_IN_REQUEST = re.compile(r"\n\n(?:# Todo List|# TODO LIST)")

# ------------------------------------------------------------------------ detection


def _texts(content: Any) -> Iterator[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                yield block["text"]


def is_api_history(value: Any, sample: int = 50) -> bool:
    """A JSON array of role messages whose user messages carry Cline's marks: a ``<task>``,
    an ``<environment_details>`` block or a ``[tool] Result:`` header."""
    if not isinstance(value, list) or not value:
        return False
    for message in value[:sample]:
        if not isinstance(message, dict) or "role" not in message:
            return False
        if message.get("role") != "user":
            continue
        for text in _texts(message.get("content")):
            head = text.lstrip()[:200]
            if head.startswith(("<task>", _ENV)) or _RESULT_HEADER.match(head) \
                    or _ENV in text:
                return True
    return False


def _ui_record(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    kind = value.get("type")
    return kind in ("ask", "say") and isinstance(value.get(kind), str) and "ts" in value


def is_ui_messages(value: Any, sample: int = 50) -> bool:
    """A JSON array whose elements are mostly ``{ts, type: "ask"|"say", ask|say}`` records."""
    if not isinstance(value, list) or not value:
        return False
    head = value[:sample]
    return sum(1 for v in head if _ui_record(v)) * 2 > len(head)


# ------------------------------------------------------------------------ XML calls


def _objects(values: list[Any], skipped: Counter[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """The elements that are objects, with their positions (their origins); any other element
    makes no event and is counted under ``non-object``, which the session's metadata shows."""
    for i, value in enumerate(values):
        if isinstance(value, dict):
            yield i, value
        else:
            skipped["non-object"] += 1


def parse_xml_calls(text: str) -> list[tuple[str, dict[str, str]]]:
    """The tool calls written as tags in assistant text, in order: each tag of a known tool,
    its parameters the tags inside it (a missing closing tag: the call runs to the end, as a
    cut stream). Tags inside a call's body are parameters, never calls."""
    return [(name, _params(body)) for name, body in _tags(text, _OPEN_TAG, _WHOLE_FILE_TOOLS)]


def _params(body: str) -> dict[str, str]:
    """A call's parameters; the first of a repeated name counts. File content and diffs keep
    their inner whitespace but for one newline after the opening and before the closing tag;
    other values are stripped."""
    params: dict[str, str] = {}
    for key, value in _tags(body, _PARAM, _RAW_PARAMS):
        raw = key in _RAW_PARAMS
        params.setdefault(key, value.removeprefix("\n").removesuffix("\n") if raw
                          else value.strip())
    return params


_WHOLE_FILE_TOOLS = frozenset({"write_to_file", "new_rule"})
_RAW_PARAMS = frozenset({"content", "diff"})


def _tags(text: str, opening: re.Pattern[str], to_last: frozenset[str]) -> Iterator[tuple[str, str]]:
    """Each tag ``opening`` finds, in order, with its body: up to its closing tag (the last one
    for a name in ``to_last``, whose body is a file that may hold the tag itself), or to the end
    of the text when it is never closed (a cut stream), which ends the scan. Tags inside a body
    are left to the caller."""
    position = 0
    while True:
        match = opening.search(text, position)
        if match is None:
            return
        name = match.group(1)
        closing = f"</{name}>"
        end = (text.rfind if name in to_last else text.find)(closing, match.end())
        if end < 0:
            yield name, text[match.end():]
            return
        yield name, text[match.end():end]
        position = end + len(closing)


def _agent(texts: list[str]) -> AgentInfo:
    """Cline or Roo Code, by the mode line of the environment details when one says."""
    for text in texts:
        if "<slug>" in text:
            return AgentInfo("Roo Code", None)
        if "ACT MODE" in text or "PLAN MODE" in text:
            return AgentInfo("Cline", None)
    return AgentInfo("Cline / Roo Code", None)


# ------------------------------------------------------------------------ API history


class _Section:
    __slots__ = ("blocks", "name", "origin", "texts")

    def __init__(self, name: str, origin: Origin):
        self.name = name
        self.origin = origin
        self.blocks: list[Any] = []
        self.texts: list[str] = []


def _synthetic_id(call: CallDraft | None) -> str | None:
    """The id a result of ``call`` carries: the synthesized one (a recorded id is the
    recording's: a text block answering a ``tool_use`` block recorded none)."""
    return call.id if call is not None and call.id_synthetic else None


def _answer(turn: TurnDraft | None, name: str) -> CallDraft | None:
    """The call of ``turn`` a result of tool ``name`` answers: its first unanswered call of
    that name, else its first unanswered call (Cline answers in call order)."""
    if turn is None:
        return None
    open_calls = [c for c in turn.calls if c.result_event is None]
    same = next((c for c in open_calls if c.name == name), None)
    return same or (open_calls[0] if open_calls else None)


def _api_session(messages: list[Any], ctx: ImportContext) -> Session:
    report = CandidateReporter(ctx, None)
    b = SessionBuilder()
    origins = pointer_origins("", None, len(messages))
    turn: TurnDraft | None = None
    skipped: Counter[str] = Counter()
    env_texts: list[str] = []
    models: list[str] = []
    numbered = [0]  # calls so far (the synthesized ids, ls-<index>)
    for i, message in _objects(messages, skipped):
        origin = origins[i]
        role = message.get("role")
        content = message.get("content")
        ts = iso_timestamp(message.get("ts"))
        if role == "assistant":
            model = _model(message)
            turn = b.assistant("", content, model=model, timestamp=ts, origin=origin)
            _assistant(b, turn, content, origin, numbered)
            continue
        if role == "user":
            _user(b, turn, content, origin, ts, env_texts)
            turn = None
            continue
        skipped[str(role)[:40]] += 1
        if role == "system":
            b.system(extract_text(content, TEXT_JOINER), content, timestamp=ts, origin=origin)
    metadata: dict[str, Any] = {"file": API_HISTORY}
    if skipped:
        metadata["skipped"] = dict(skipped)
    return b.build(id="", source=ctx.path, format=FORMAT_ID, agent=_agent(env_texts),
                   models=models, metadata=metadata, report=report)


def _tag_call(b: SessionBuilder, turn: TurnDraft, name: str, params: dict[str, str],
              origin: Origin, numbered: list[int]) -> None:
    """A call written as a tag: it records no id, and its result is found by structure, so it
    gets a synthesized one (``ls-<index>``), as the spec's structure-paired formats do."""
    b.call(turn, name, params, "value", id=f"ls-{numbered[0]}", id_synthetic=True,
           origin=origin)
    numbered[0] += 1


def _assistant(b: SessionBuilder, turn: TurnDraft, content: Any, origin: Origin,
               numbered: list[int]) -> None:
    if isinstance(content, str):
        turn.text = content
        for name, params in parse_xml_calls(content):
            _tag_call(b, turn, name, params, origin, numbered)
        return
    if not isinstance(content, list):
        return
    thinking: list[str] = []
    for k, block in enumerate(content):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            turn.text += block["text"]
            for name, params in parse_xml_calls(block["text"]):
                _tag_call(b, turn, name, params, origin, numbered)
        elif kind in ("thinking", "reasoning"):
            text = block.get("thinking") if kind == "thinking" else block.get("text")
            if isinstance(text, str) and text:
                thinking.append(text)
        elif kind == "tool_use":
            b.call(turn, block.get("name"), block.get("input"), "value", id=block.get("id"),
                   origin=origin, element=("content", k))
            numbered[0] += 1
    turn.thinking = "\n".join(thinking)


_WRAPPED = re.compile(r"^\s*<(task|user_message)>\n?(.*?)\n?</\1>\s*$", re.S)


def _unwrap(text: str) -> str:
    """The user's words of a ``<task>…</task>`` (Roo Code: ``<user_message>``) text."""
    match = _WRAPPED.match(text)
    return match.group(2) if match else text


def _is_error(text: str) -> bool:
    return text.lstrip().startswith(_ERROR_MARKS)


def _user(b: SessionBuilder, turn: TurnDraft | None, content: Any, origin: Origin,
          ts: str | None, env_texts: list[str]) -> None:
    """A user message: ``tool_result`` blocks and ``[x] Result:`` sections become results of
    the turn before; the environment details are context (no event); any other text is the
    user's (or Cline's own note, a ``system`` event)."""
    blocks: list[Any] = [content] if isinstance(content, str) else (
        content if isinstance(content, list) else [])
    section: _Section | None = None
    said: list[Any] = []

    def close() -> None:
        nonlocal section
        if section is not None:
            text = "\n\n".join(t for t in section.texts if t)
            call = _answer(turn, section.name)
            b.result(_synthetic_id(call), section.blocks, text, is_error=_is_error(text),
                     name=section.name, structure_call=call, timestamp=ts,
                     origin=section.origin)
            section = None

    for block in blocks:
        text = block if isinstance(block, str) else (
            block.get("text") if isinstance(block, dict) and block.get("type") == "text"
            else None)
        if isinstance(block, dict) and block.get("type") == "tool_result":
            close()
            value = block.get("content")
            b.result(block.get("tool_use_id"), value, extract_text(value, TEXT_JOINER),
                     is_error=block.get("is_error") is True, timestamp=ts, origin=origin)
            continue
        if not isinstance(text, str):
            if section is not None:
                section.blocks.append(block)
            elif isinstance(block, dict) and block.get("type") in ("image", "document"):
                said.append(block)
            continue
        stripped = text.lstrip()
        if stripped.startswith(_ENV) or stripped.startswith("<environment_details"):
            close()
            env_texts.append(text)
            continue
        if stripped.startswith(_TODO):
            close()
            continue
        header = _RESULT_HEADER.match(stripped)
        if header is not None:  # a result starts: this block, and the text blocks after it
            close()
            section = _Section(header.group(1), origin)
            section.blocks.append(block)
            rest = stripped[header.end():].strip("\n")
            if rest:
                section.texts.append(rest)
            continue
        not_run = _NOT_RUN.match(stripped)
        if not_run is not None:  # a call answered without being run: this block alone
            close()
            name = not_run.group(1) or not_run.group(2)
            call = _answer(turn, name)
            b.result(_synthetic_id(call), [block], stripped, is_error=True, name=name,
                     structure_call=call, timestamp=ts, origin=origin)
            continue
        if section is not None:
            section.blocks.append(block)
            section.texts.append(text)
        elif stripped:
            said.append(block)
    close()
    if said:
        text = _unwrap(extract_text(said, TEXT_JOINER))
        if text.lstrip().startswith(_SYSTEM_NOTES):
            b.system(text, said, recorded_role="user", timestamp=ts, origin=origin)
        else:
            b.user(text, said, timestamp=ts, origin=origin)


# ------------------------------------------------------------------------ UI messages

_UI_CALLS: dict[tuple[str, str], str | None] = {
    ("ask", "tool"): None, ("say", "tool"): None,
    ("ask", "command"): "execute_command", ("say", "command"): "execute_command",
    ("ask", "use_mcp_server"): None, ("say", "use_mcp_server"): None,
    ("ask", "browser_action_launch"): "browser_action",
    ("say", "browser_action_launch"): "browser_action",
    ("say", "browser_action"): "browser_action",
    ("say", "load_mcp_documentation"): "load_mcp_documentation",
    ("ask", "followup"): "ask_followup_question",
    ("ask", "plan_mode_respond"): "plan_mode_respond",
    ("say", "completion_result"): "attempt_completion",
    ("ask", "new_task"): "new_task", ("ask", "condense"): "condense",
    ("ask", "report_bug"): "report_bug", ("ask", "summarize_task"): "summarize_task",
}
"""The UI records that are tool calls, with the tool's name (``None``: named in the text)."""
_UI_OUTPUTS = frozenset({"command_output", "mcp_server_response", "browser_action_result"})
_UI_DROP = frozenset({"tool", "operationIsLocatedInWorkspace", "isOutsideWorkspace",
                      "isProtected"})
_UI_RESULT_IN_CONTENT = frozenset({"listFilesTopLevel", "listFilesRecursive",
                                   "listCodeDefinitionNames", "searchFiles", "codebaseSearch"})
_UI_SKIP = frozenset({"checkpoint_created", "checkpoint_saved", "task_progress",
                      "api_req_finished", "api_req_retried", "api_req_retry_delayed",
                      "api_req_deleted", "completion_result", "resume_task",
                      "resume_completed_task", "mcp_server_request_started",
                      "shell_integration_warning", "auto_approval_max_req_reached",
                      "user_edit_todos"})


def ui_call(record: Any) -> tuple[str, Any] | None:
    """The ``(name, arguments)`` of a UI record that is a finished tool call, else ``None``."""
    if not isinstance(record, dict) or record.get("partial") is True:
        return None
    kind = record.get("type")
    what = record.get(kind) if kind in ("ask", "say") else None
    if not isinstance(what, str) or (kind, what) not in _UI_CALLS:
        return None
    name = _UI_CALLS[(kind, what)]  # type: ignore[index]
    text = _text(record.get("text"))
    parsed = _json_object(text)
    if what == "tool":
        tool = parsed.get("tool") if parsed is not None else None
        name = tool if isinstance(tool, str) and tool else "tool"
        arguments: Any = {k: v for k, v in (parsed or {"text": text}).items()
                          if k not in _UI_DROP and not (
                              k == "content" and name in _UI_RESULT_IN_CONTENT)}
    elif what == "use_mcp_server":
        kind_of = parsed.get("type") if parsed is not None else None
        name = kind_of if isinstance(kind_of, str) and kind_of else "use_mcp_tool"
        arguments = {k: v for k, v in (parsed or {"text": text}).items() if k != "type"}
    elif what == "command":
        arguments = {"command": text.removesuffix("REQ_APPROVAL").rstrip("\n")}
    elif what == "completion_result":
        arguments = {"result": text.removesuffix("HAS_CHANGES")}
    elif what == "followup":
        arguments = parsed if parsed is not None else {"question": text}
    elif what == "plan_mode_respond":
        arguments = parsed if parsed is not None else {"response": text}
    elif what in ("browser_action_launch",):
        arguments = {"action": "launch", "url": text}
    else:
        arguments = parsed if parsed is not None else ({"text": text} if text else {})
    return name or what, arguments


def _model(record: dict[str, Any]) -> str | None:
    """The model of a message or UI record: ``modelInfo.modelId`` (newer Cline), ``model``."""
    info = record.get("modelInfo")
    model = info.get("modelId") if isinstance(info, dict) else record.get("model")
    return model if isinstance(model, str) and model else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _json_object(text: str) -> dict[str, Any] | None:
    if not text.startswith("{"):
        return None
    try:
        value, _ = parse_line(text.encode("utf-8", "surrogatepass"), _LIMITS)
    except (JsonError, RecursionError, ValueError):
        return None
    return value if isinstance(value, dict) else None


_LIMITS = ImportLimits(max_json_depth=64)
"""For the JSON texts inside UI records (small objects)."""


def _request_sections(record: dict[str, Any]) -> list[tuple[str, str]]:
    """The ``[tool] Result:`` sections of an ``api_req_started`` record's request text."""
    parsed = _json_object(_text(record.get("text")))
    request = parsed.get("request") if parsed is not None else None
    if not isinstance(request, str):
        return []
    cut = request.find(_ENV)
    if cut >= 0:
        request = request[:cut]
    todo = _TODO_IN_REQUEST.search(request)
    if todo is not None:
        request = request[:todo.start()]
    starts = [m for m in _RESULT_HEADER.finditer(request)
              if m.start() == 0 or request[m.start() - 1] == "\n"]
    sections = []
    for n, match in enumerate(starts):
        end = starts[n + 1].start() if n + 1 < len(starts) else len(request)
        sections.append((match.group(1), request[match.end():end].strip("\n")))
    return sections


def _sibling_history(path: str, max_bytes: int) -> str | None:
    """The ``api_conversation_history.json`` next to ``path`` (a UI file of its task folder,
    by its name: :data:`UI_NAMES`), when it looks like one (a JSON array with role messages in
    its head) and is small enough to be read (``max_bytes``)."""
    folder = os.path.dirname(os.path.abspath(path))
    sibling = os.path.join(folder, API_HISTORY)
    if os.path.basename(path) not in UI_NAMES or not os.path.isfile(sibling):
        return None
    try:
        if os.path.getsize(sibling) > max_bytes:
            return None  # (it will not be read: this file is the record then)
        with open(sibling, "rb") as handle:
            head = handle.read(64 * 1024)
    except OSError:
        return None
    stripped = head.lstrip()
    if stripped.startswith(b"\xef\xbb\xbf"):
        stripped = stripped[3:].lstrip()
    return sibling if stripped.startswith(b"[") and b'"role"' in head else None


def _ui_session(records: list[Any], ctx: ImportContext) -> Iterator[Session | None]:
    sibling = _sibling_history(ctx.path, ctx.limits.max_document_bytes)
    if sibling is not None:
        calls = 0
        origins = pointer_origins("", None, len(records))
        for i, record in enumerate(records):
            if ui_call(record) is not None:
                calls += 1
                ctx.set_aside_calls(COVERED, pointer=origins[i].pointer)
        ctx.problem("info", COVERED,
                    f"this task is imported from {API_HISTORY} in the same folder (the richer "
                    f"record of it); this file adds no session"
                    + (f" and its {plural(calls, 'tool call is', 'tool calls are')} not counted twice" if calls else ""))
        return
    report = CandidateReporter(ctx, None)
    b = SessionBuilder()
    origins = pointer_origins("", None, len(records))
    turn: TurnDraft | None = None
    pending: list[tuple[CallDraft, list[str]]] = []  # calls waiting for their result
    calls_made: list[CallDraft] = []
    started = False  # an api_req_started was seen
    skipped: Counter[str] = Counter()
    env_texts: list[str] = []
    models: list[str] = []

    def settle(sections: list[tuple[str, str]], ts: str | None, origin: Origin) -> None:
        waiting = list(pending)
        pending.clear()
        for name, text in sections:
            match = next((p for p in waiting if _ui_name_matches(p[0].name, name)), None)
            if match is None and waiting:
                match = waiting[0]
            if match is None:
                continue
            waiting.remove(match)
            b.result(match[0].id, text, text, is_error=_is_error(text), name=name,
                     structure_call=match[0], timestamp=ts, origin=origin)
        for call, outputs in waiting:
            if outputs:
                text = "\n".join(outputs)
                b.result(call.id, text, text, name=call.name, structure_call=call,
                         timestamp=ts, origin=origin)

    for i, record in _objects(records, skipped):
        origin = origins[i]
        kind = record.get("type")
        what = record.get(kind) if kind in ("ask", "say") else None
        if not isinstance(what, str):
            skipped["unknown"] += 1
            report.aggregate("unknown_record_type", "a record is no ask or say; skipped",
                             pointer=origin.pointer)
            continue
        ts = iso_timestamp(record.get("ts"))
        text = _text(record.get("text"))
        model = _model(record)
        if model is not None and model not in models:
            models.append(model)
        call = ui_call(record)
        if call is not None:
            if turn is None:
                turn = b.assistant("", [], timestamp=ts, origin=origin)
            name, arguments = call
            # (no id recorded; paired by structure: a synthesized one, as in the API history)
            draft = b.call(turn, name, arguments, "value", id=f"ls-{len(calls_made)}",
                           id_synthetic=True, origin=origin)
            calls_made.append(draft)
            turn.content.append(record)
            pending.append((draft, []))
            continue
        if record.get("partial") is True and (kind, what) in _UI_CALLS:
            skipped["partial call"] += 1
            continue
        if what == "api_req_started":
            started = True
            sections = _request_sections(record)
            settle(sections, ts, origin)
            turn = None
            parsed = _json_object(text)
            request = parsed.get("request") if parsed is not None else None
            if isinstance(request, str) and _ENV in request:
                env_texts.append(request[request.find(_ENV):])
            continue
        if what in _UI_OUTPUTS:
            if pending and text:
                pending[-1][1].append(text)
            continue
        if what in ("text", "task") and kind == "say" and not started:
            if text.strip():
                b.user(text, record, timestamp=ts, origin=origin)
            continue
        if what == "user_feedback" and kind == "say":
            turn = None
            b.user(text, record, timestamp=ts, origin=origin)
            continue
        if what in ("text", "reasoning") and kind == "say":
            if not text.strip():
                continue
            if turn is None:
                turn = b.assistant("", [], timestamp=ts, origin=origin)
            turn.content.append(record)
            if what == "reasoning":
                turn.thinking = turn.thinking + "\n" + text if turn.thinking else text
            else:
                turn.text = turn.text + "\n\n" + text if turn.text else text
            continue
        if what in ("error", "api_req_failed", "mistake_limit_reached", "diff_error",
                    "rooignore_error", "clineignore_error"):
            turn = None
            b.other(what, text, record, timestamp=ts, origin=origin)
            continue
        if what in _UI_SKIP:
            skipped[what] += 1
            continue
        skipped[what[:40]] += 1
    settle([], None, origins[-1] if origins else Origin())
    report.flush({"unknown_record_type": lambda n: f"{plural(n, 'record is', 'records are')} no ask or say"})
    metadata: dict[str, Any] = {"file": "ui_messages.json"}
    if skipped:
        metadata["skipped"] = dict(skipped)
    yield b.build(id="", source=ctx.path, format=FORMAT_ID, agent=_agent(env_texts),
                  models=models, metadata=metadata, report=report)


_UI_API_NAMES = {
    "readFile": "read_file", "listFilesTopLevel": "list_files",
    "listFilesRecursive": "list_files", "listCodeDefinitionNames": "list_code_definition_names",
    "searchFiles": "search_files", "newFileCreated": "write_to_file",
    "editedExistingFile": "replace_in_file", "appliedDiff": "apply_diff",
    "webFetch": "web_fetch", "codebaseSearch": "codebase_search",
    "insertContent": "insert_content", "searchAndReplace": "search_and_replace",
    "switchMode": "switch_mode", "newTask": "new_task", "fetchInstructions":
    "fetch_instructions", "updateTodoList": "update_todo_list", "fileDeleted": "delete_file",
}
_UI_EDITS = frozenset({"write_to_file", "replace_in_file", "apply_diff", "insert_content",
                       "search_and_replace", "edit_file", "apply_patch"})


def _ui_name_matches(ui_name: str, api_name: str) -> bool:
    """Whether a UI call (``readFile``) is the tool a request section names (``read_file``)."""
    mapped = _UI_API_NAMES.get(ui_name, ui_name)
    return mapped == api_name or (mapped in _UI_EDITS and api_name in _UI_EDITS)


# ------------------------------------------------------------------------ entry point


METADATA = "cline_task_metadata"
"""The info code of a task folder's ``task_metadata.json`` (no conversation in it)."""
_METADATA_KEYS = frozenset({"files_in_context", "model_usage", "environment_history"})


def is_task_metadata(value: Any) -> bool:
    """A task folder's ``task_metadata.json``: an object of the lists ``files_in_context``,
    ``model_usage``, ``environment_history`` (and no other key)."""
    return (isinstance(value, dict) and bool(value) and set(value) <= _METADATA_KEYS
            and all(isinstance(v, list) for v in value.values()))


def import_document(value: Any, ctx: ImportContext) -> Iterator[Session | None]:
    if is_task_metadata(value):
        # (A folder scan of a task folder meets it: it is no recording, and no warning.)
        ctx.problem("info", METADATA, "the metadata of a Cline task (files in context, models "
                                      "used): no conversation; the task is in "
                                      f"{API_HISTORY} and ui_messages.json")
        return
    if is_ui_messages(value):
        yield from _ui_session(value, ctx)
        return
    if not isinstance(value, list):
        ctx.problem("error", "unsupported_variant",
                    "a Cline task file is a JSON array (of API messages or UI records)")
        return
    yield _api_session(value, ctx)
