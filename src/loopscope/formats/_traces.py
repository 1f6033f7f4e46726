"""Sessions from trace stores: spans or runs grouped by trace, in time order.

Shared by the OpenInference (Phoenix), LangSmith, Langfuse and OpenTelemetry GenAI importers.
Each of them reads its records into :class:`Step` values (one per model call, tool execution or
task input) tagged with their trace; this module groups the steps into one session per trace,
orders them by start time (parents before children at the same time, then file order), and
pairs each tool execution with the call the model made:

* a model step (an LLM / generation / chat span) is one assistant turn, its tool calls the
  turn's calls;
* a tool step (a TOOL span, a ``tool`` run, an ``execute_tool`` span) answers the open call
  with its call id, else the first unanswered call of the same tool name in the newest turn;
  a tool step that answers no recorded model call (the trace did not record the model's
  output) is a call of its own: an assistant turn with that one call, and its result.

Every call the steps hold is told to the file's call tally as it is read; a tool step that
answers a model call is the same call seen twice, and is set aside as such.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from loopscope.formats._ext_common import CandidateReporter
from loopscope.formats.base import ImportContext, Record
from loopscope.formats.builder import CallDraft, SessionBuilder, TurnDraft, new_origin
from loopscope.formats.text import extract_text
from loopscope.model import AgentInfo, Origin, Session
from loopscope.words import plural

__all__ = ["ModelCall", "RecordExport", "Step", "as_text", "assemble", "json_or_text", "read_steps",
           "task_text", "tell_not_records"]


@dataclass
class ModelCall:
    """A tool call in a model's output."""

    id: str | None
    name: Any
    arguments: Any
    """JSON text (kind ``json_text``) or a value (kind ``value``); ``None`` when not recorded."""


@dataclass
class Step:
    trace: str
    kind: str
    """``model``, ``tool`` or ``input`` (the task the trace was started with)."""
    start: str
    """A sortable start time (ISO-8601, or nanoseconds as zero-padded digits)."""
    order: int
    """Position in the file (ties)."""
    span: str | None = None
    parent: str | None = None
    origin: Origin = field(default_factory=Origin)
    timestamp: str | None = None
    text: str = ""
    model: str | None = None
    calls: list[ModelCall] = field(default_factory=list)
    # tool steps
    call_id: str | None = None
    name: Any = None
    arguments: Any = None
    output: Any = None
    has_output: bool = False
    is_error: bool = False
    error: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def as_text(value: Any) -> str:
    """A recorded value as text: a string as is, anything else its text parts or JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return extract_text(value, "\n")


_TASK_KEYS = ("input", "question", "query", "task", "prompt")


def task_text(inputs: Any) -> str:
    """The task a trace was started with, from its recorded input: a string; the first of the
    usual keys (``input``, ``question``, …) holding a string; the last user message of a
    ``messages`` list; else the input as text."""
    if isinstance(inputs, dict):
        for key in _TASK_KEYS:
            if isinstance(inputs.get(key), str):
                return str(inputs[key])
        if isinstance(inputs.get("messages"), list):
            found = _last_user_text(inputs["messages"])
            if found:
                return found
    elif isinstance(inputs, list):
        found = _last_user_text(inputs)
        if found:
            return found
    return as_text(inputs)


def _last_user_text(messages: list[Any], depth: int = 0) -> str | None:
    """The last user message of a chat input, in the shapes LangChain and the OpenAI API
    write: ``("user", text)`` pairs, ``{"role", "content"}`` objects, serialised
    ``HumanMessage`` objects (``kwargs``), batches of conversations."""
    found: str | None = None
    for message in messages:
        role: Any = None
        content: Any = None
        if isinstance(message, list) and len(message) == 2 and isinstance(message[0], str):
            role, content = message
        elif isinstance(message, list) and depth < 4:
            found = _last_user_text(message, depth + 1) or found
            continue
        elif isinstance(message, dict):
            kwargs = message.get("kwargs")
            if isinstance(kwargs, dict):
                role, content = kwargs.get("type"), kwargs.get("content")
            else:
                role, content = message.get("role", message.get("type")), message.get("content")
        if role in ("user", "human") and content:
            found = as_text(content)
    return found


def json_or_text(value: Any) -> tuple[Any, str]:
    """``(raw arguments, kind)`` for recorded call input: JSON text is ``json_text``; a value
    is ``value``."""
    if isinstance(value, str):
        return value, "json_text"
    return value, "value"


def _kind(arguments: Any) -> str:
    """Recorded input text that holds a JSON object or array is JSON text; other text (a
    LangChain tool's plain string input) is free text; anything else is a value."""
    if isinstance(arguments, str):
        return "json_text" if arguments.lstrip()[:1] in ("{", "[") else "free_text"
    return "value"


def _depths(steps: list[Step]) -> dict[int, int]:
    """Each step's depth in its span tree (parents first when two start together)."""
    parent_of = {s.span: s.parent for s in steps if s.span is not None}
    depths: dict[int, int] = {}
    for step in steps:
        depth, seen, parent = 0, set(), step.parent
        while parent is not None and parent in parent_of and parent not in seen and depth < 1000:
            seen.add(parent)
            depth += 1
            parent = parent_of[parent]
        depths[id(step)] = depth
    return depths


CONTENT_NOT_CAPTURED = (
    "{n} of {traces} record tool calls with neither arguments nor results (the "
    "instrumentation's content capture was off: GenAI's opt-in gen_ai.tool.call.arguments / "
    "result, OpenInference's hidden inputs and outputs, Langfuse's masked input and output): "
    "result-aware guards see only tool names")


def read_steps(values: Iterable[tuple[Any, Origin]], ctx: ImportContext, *,
               is_record: Callable[[Any], bool],
               step_of: Callable[[Any, int, Origin], Step | None], what: str) -> list[Step]:
    """The steps of a store's records, in file order, each value with its origin.

    A value that is not one of the store's records (``is_record``) makes no step and is
    counted: one info says how many (see :func:`tell_not_records`), so a file that mixes in
    other data still imports what it holds. A record may also make no step (``step_of`` gives
    ``None``: a span that is neither a model call, a tool nor the task); that is not counted,
    since it is the store's own data and not a stranger's. ``order`` is the value's position,
    the tie-break of equal start times.
    """
    steps: list[Step] = []
    skipped = 0
    for order, (value, origin) in enumerate(values):
        if not is_record(value):
            skipped += 1
            continue
        step = step_of(value, order, origin)
        if step is not None:
            steps.append(step)
    tell_not_records(ctx, skipped, what)
    return steps


@dataclass(frozen=True)
class RecordExport:
    """How a store that exports one record per span or run is read (LangSmith runs,
    OpenInference spans): as JSON Lines, one record a line, or as a JSON array of records,
    bare or under ``key``; every record through :func:`read_steps`, then :func:`assemble`.
    A format module gives its ``import_records`` and ``import_document`` from here, so the
    stores that share an export shape share its reading too."""

    format_id: str
    agent: AgentInfo
    is_record: Callable[[Any], bool]
    step_of: Callable[[Any, int, Origin], Step | None]
    what: str
    """What the records are, for the count of values that are not ("LangSmith runs")."""
    key: str
    """The member that holds the array when the document is an object (``runs``)."""
    not_an_export: str
    """The error when a document is neither the array nor an object holding it."""

    def sessions(self, values: Iterable[tuple[Any, Origin]],
                 ctx: ImportContext) -> Iterator[Session | None]:
        steps = read_steps(values, ctx, is_record=self.is_record, step_of=self.step_of,
                           what=self.what)
        yield from assemble(steps, ctx, format_id=self.format_id, agent=self.agent)

    def import_records(self, records: Iterable[Record],
                       ctx: ImportContext) -> Iterator[Session | None]:
        yield from self.sessions(((r.value, new_origin(r.line, None)) for r in records), ctx)

    def import_document(self, value: Any, ctx: ImportContext) -> Iterator[Session | None]:
        items = value if isinstance(value, list) else value.get(self.key) \
            if isinstance(value, dict) else None
        if not isinstance(items, list):
            ctx.problem("error", "session_failed", self.not_an_export)
            return
        prefix = "" if isinstance(value, list) else f"/{self.key}"
        yield from self.sessions(((v, new_origin(None, f"{prefix}/{i}"))
                              for i, v in enumerate(items)), ctx)


def tell_not_records(ctx: ImportContext, count: int, what: str, *,
                     one: str = "record is", many: str = "records are") -> None:
    """One ``unknown_record_type`` info for ``count`` values that are not ``what`` (nothing
    when there are none): the values are dropped, and a person should know that they were."""
    if count:
        ctx.problem("info", "unknown_record_type",
                    f"{plural(count, one, many)} not {what}; they made no event", count=count)


def assemble(steps: Iterable[Step], ctx: ImportContext, *, format_id: str, agent: AgentInfo,
             tally_steps: bool = True) -> Iterator[Session | None]:
    """One session per trace, in order of each trace's first record in the file.

    ``tally_steps``: tell every call of the steps to the file's call tally (formats whose
    records the tally cannot count itself); ``False`` where ``tally`` has a counter of its own
    for the raw records. Traces whose calls carry no arguments and no results at all are
    warned of once for the file (``content_not_captured``)."""
    traces: dict[str, list[Step]] = {}
    tally = ctx.tally
    if tally_steps:
        tally.counted = True
    for step in steps:
        traces.setdefault(step.trace, []).append(step)
        if not tally_steps:
            continue
        # Every call the records hold, told as read (before any pairing could lose one).
        anchor = step.origin.line if step.origin.line is not None else step.origin.pointer
        if step.kind == "model":
            for call in step.calls:
                tally.saw(anchor, call.name)
        elif step.kind == "tool":
            tally.saw(anchor, step.name)
    blind = sum(1 for trace_steps in traces.values() if _content_not_captured(trace_steps))
    if blind:
        ctx.problem("warning", "content_not_captured",
                    CONTENT_NOT_CAPTURED.format(n=blind, traces=plural(len(traces), "trace")))
    several = len(traces) > 1
    for n, (trace, trace_steps) in enumerate(traces.items()):
        candidate = n if several else None
        try:
            depth = _depths(trace_steps)
            ordered = sorted(trace_steps, key=lambda s: (s.start, depth[id(s)], s.order))
            yield _session(trace, ordered, ctx, candidate, format_id, agent)
        except Exception as exc:  # one bad trace never loses the others
            ctx.internal_error(exc, candidate=candidate)
            yield None


def _content_not_captured(steps: list[Step]) -> bool:
    """Whether a trace holds tool calls but not one argument or result of any of them."""
    calls = False
    for step in steps:
        if step.kind == "model" and step.calls:
            calls = True
            if any(call.arguments is not None for call in step.calls):
                return False
        elif step.kind == "tool":
            calls = True
            if step.arguments is not None or step.has_output:
                return False
    return calls


def _session(trace: str, steps: list[Step], ctx: ImportContext, candidate: int | None,
             format_id: str, agent: AgentInfo) -> Session:
    report = CandidateReporter(ctx, candidate)

    b = SessionBuilder()
    open_by_id: dict[str, CallDraft] = {}
    answered: set[int] = set()
    turn: TurnDraft | None = None
    turn_calls: list[CallDraft] = []
    models: list[str] = []
    inputs_seen = False
    for step in steps:
        anchor_line, anchor_pointer = step.origin.line, step.origin.pointer
        if step.kind == "input":
            if inputs_seen or not step.text:
                continue  # only the trace's own task is a user message
            inputs_seen = True
            b.user(step.text, step.text, timestamp=step.timestamp, origin=step.origin)
            turn = None
            continue
        if step.kind == "model":
            if step.model and step.model not in models:
                models.append(step.model)
            turn = b.assistant(step.text, None, model=step.model, timestamp=step.timestamp,
                               origin=step.origin)
            turn_calls = []
            for call in step.calls:
                draft = b.call(turn, call.name, call.arguments, _kind(call.arguments),  # type: ignore[arg-type]
                               id=call.id, origin=step.origin)
                turn_calls.append(draft)
                if call.id is not None:
                    open_by_id[call.id] = draft
            continue
        # a tool execution
        match: CallDraft | None = None
        if step.call_id is not None:
            candidate_call = open_by_id.get(step.call_id)
            if candidate_call is not None and id(candidate_call) not in answered:
                match = candidate_call
        if match is None and step.call_id is None:
            match = next((c for c in turn_calls if id(c) not in answered
                          and c.name == (step.name if isinstance(step.name, str) else "")),
                         None)
        if match is not None:
            ctx.set_aside_calls("tool span of a call already in the model's output",
                                line=anchor_line, pointer=anchor_pointer)
        else:
            turn = b.assistant("", None, timestamp=step.timestamp, origin=step.origin)
            turn_calls = []
            match = b.call(turn, step.name, step.arguments, _kind(step.arguments),  # type: ignore[arg-type]
                           id=step.call_id if step.call_id is not None
                           else f"ls-{b.call_count}",
                           id_synthetic=step.call_id is None, origin=step.origin)
            turn_calls.append(match)
        answered.add(id(match))
        if step.has_output or step.is_error:
            content = step.output if step.has_output else step.error
            text = as_text(content) if step.has_output else (step.error or "")
            b.result(match.id, content, text, is_error=step.is_error, name=step.name
                     if isinstance(step.name, str) else None, meta=step.meta,
                     structure_call=match, timestamp=step.timestamp, origin=step.origin)
    return b.build(id=trace, source=ctx.path, format=format_id, agent=agent, models=models,
                   metadata={"trace_id": trace}, report=report)
