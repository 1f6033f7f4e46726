"""OpenTelemetry console-exporter output — ``otel_console``.

The Python SDK's ``ConsoleSpanExporter`` prints every finished span as ``span.to_json()``:
indented JSON objects one after another (not an array), to standard output or the file given
as ``out``::

    {
        "name": "execute_tool shell",
        "context": {"trace_id": "0x…", "span_id": "0x…", "trace_state": "[]"},
        "kind": "SpanKind.INTERNAL",
        "parent_id": "0x…" | null,
        "start_time": "2026-05-04T09:00:00.000000Z",
        "end_time": "…",
        "status": {"status_code": "UNSET" | "OK" | "ERROR", "description": "…"},
        "attributes": {"gen_ai.operation.name": "execute_tool", …},
        "events": [{"name", "timestamp", "attributes"}],
        "links": [],
        "resource": {"attributes": {…}, "schema_url": ""}
    }

A span printed again by a later flush (or a processor that exports twice) is one span: the
repeats of a trace id and span id are skipped, and said (their calls are set aside). Other lines between the objects (the
program's own prints) are skipped and counted by the detection. A span's attributes are read by
the convention it follows — OpenTelemetry GenAI, OpenInference or Langfuse, see ``_spans``;
one session per trace (``path#n`` when the file holds several), ordered by start time.

The JavaScript SDK's console exporter prints ``console.dir(span, {depth: 3})``: Node's
``util.inspect`` text (unquoted keys, ``undefined``, strings cut at 10,000 characters and split
with ``+``, nested values shown as ``[Object]``), which no JSON or JSON5 reader can take back
without loss; detection names it and says to use an OTLP exporter instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from loopscope.formats._spans import SpanRecord, span_step
from loopscope.formats._traces import Step, assemble, tell_not_records
from loopscope.formats.base import ImportContext, Record
from loopscope.formats.builder import new_origin
from loopscope.formats.text import iso_timestamp
from loopscope.model import AgentInfo, Origin, Session
from loopscope.words import plural

FORMAT_ID = "otel_console"

AGENT = AgentInfo("OpenTelemetry trace", None)

__all__ = ["FORMAT_ID", "import_document", "import_records", "is_console_span"]


def is_console_span(value: Any) -> bool:
    """A span as the Python console exporter prints it (detection uses it too): a ``context``
    with ``trace_id`` and ``span_id``, and the SDK's ``kind`` text or its ``resource``, never
    Phoenix's ``span_kind``."""
    if not isinstance(value, dict) or "span_kind" in value:
        return False
    context = value.get("context")
    if not (isinstance(context, dict) and isinstance(context.get("trace_id"), str)
            and isinstance(context.get("span_id"), str)):
        return False
    kind = value.get("kind")
    return (isinstance(kind, str) and kind.startswith("SpanKind.")) or (
        isinstance(value.get("resource"), dict) and "attributes" in value)


def _id(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    return value[2:] if value.startswith("0x") else value


class _Reader:
    def __init__(self, ctx: ImportContext) -> None:
        self.ctx = ctx
        self.steps: list[Step] = []
        self.inputs: dict[str, Any] = {}
        self.seen: set[tuple[str, str]] = set()
        self.repeats = 0
        self.skipped = 0
        self.order = 0

    def span(self, value: Any, origin: Origin) -> None:
        self.order += 1
        if not is_console_span(value):
            self.skipped += 1
            return
        context = value["context"]
        key = (context["trace_id"], context["span_id"])
        repeat = key in self.seen
        self.seen.add(key)
        start = value.get("start_time")
        status = value.get("status")
        status = status if isinstance(status, dict) else {}
        message = status.get("description")
        events = value.get("events")
        attributes = value.get("attributes")
        step = span_step(SpanRecord(
            trace=_id(key[0]) or "", span=_id(key[1]), parent=_id(value.get("parent_id")),
            name=value.get("name"), start=start if isinstance(start, str) else "",
            timestamp=iso_timestamp(start) if isinstance(start, str) else None,
            attributes=attributes if isinstance(attributes, dict) else {},
            origin=origin, order=self.order,
            events=[(e.get("name"), e["attributes"] if isinstance(e.get("attributes"), dict)
                     else {}) for e in events if isinstance(e, dict)]
            if isinstance(events, list) else [],
            failed=status.get("status_code") == "ERROR",
            status_message=message if isinstance(message, str) and message else None),
            {} if repeat else self.inputs)
        if repeat:
            self.repeats += 1
            calls = 0 if step is None else len(step.calls) if step.kind == "model" \
                else 1 if step.kind == "tool" else 0
            if calls:
                self.ctx.set_aside_calls("span printed again", line=origin.line,
                                         pointer=origin.pointer, count=calls)
        elif step is not None:
            self.steps.append(step)

    def sessions(self) -> Iterator[Session | None]:
        if self.repeats:
            self.ctx.problem("info", "duplicates_skipped",
                             f"{plural(self.repeats, 'span was', 'spans were')} printed more than once (the same "
                             "trace id and span id); each is read once", count=self.repeats)
        tell_not_records(self.ctx, self.skipped, "console-exporter spans", one="value is",
                         many="values are")
        yield from assemble(self.steps, self.ctx, format_id=FORMAT_ID, agent=AGENT,
                            tally_steps=False)


def import_document(value: Any, ctx: ImportContext) -> Iterator[Session | None]:
    """One printed span (an object), or the spans of the file (a list: the objects printed one
    after another, or an array of them)."""
    reader = _Reader(ctx)
    if isinstance(value, list):
        for i, span in enumerate(value):
            reader.span(span, new_origin(None, f"/{i}"))
    else:
        reader.span(value, new_origin(None, ""))
    yield from reader.sessions()


def import_records(records: Iterable[Record], ctx: ImportContext) -> Iterator[Session | None]:
    """Spans printed one per line (a console exporter given a one-line formatter)."""
    reader = _Reader(ctx)
    for record in records:
        reader.span(record.value, new_origin(record.line, None))
    yield from reader.sessions()
