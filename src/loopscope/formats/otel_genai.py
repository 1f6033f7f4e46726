"""OpenTelemetry spans as OTLP JSON — ``otel_genai``.

An OTLP JSON export (what the collector's file exporter writes, one object per line, or one
document) is ``{"resourceSpans": [{"resource", "scopeSpans": [{"scope", "spans": [...]}]}]}``;
a span is ``{"traceId", "spanId", "parentSpanId", "name", "startTimeUnixNano", "attributes":
[{"key", "value": {"stringValue" | "intValue" | …}}], "events", "status": {"code",
"message"}}``. What a span did is read from its attributes by the convention it follows —
OpenTelemetry GenAI, OpenInference or Langfuse, decided per span (see ``_spans``).

Without the opt-in content (``gen_ai.tool.call.arguments`` / ``result``) a call has a name
and an id but no arguments and no result: the import warns, since guards that compare
arguments or results then see only names (see ``_traces``).
One session per trace (``path#n`` when a file holds several), ordered by start time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from loopscope.formats._spans import SpanRecord, span_step
from loopscope.formats._traces import Step, assemble, tell_not_records
from loopscope.formats.base import ImportContext, Record
from loopscope.formats.builder import new_origin
from loopscope.model import AgentInfo, Origin, Session

FORMAT_ID = "otel_genai"

AGENT = AgentInfo("OpenTelemetry trace", None)

_STATUS_ERROR = (2, "STATUS_CODE_ERROR", "ERROR")

__all__ = ["FORMAT_ID", "any_value", "attributes", "import_document", "import_records",
           "is_otlp"]


def is_otlp(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("resourceSpans"), list)


def any_value(value: Any, depth: int = 0) -> Any:
    """An OTLP ``AnyValue`` as a plain value."""
    if not isinstance(value, dict) or depth > 64:
        return value
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if key in value:
            return value[key]
    if "intValue" in value:  # int64 travels as a string in JSON
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "arrayValue" in value:
        values = value["arrayValue"].get("values") if isinstance(value["arrayValue"], dict) \
            else None
        return [any_value(v, depth + 1) for v in values] if isinstance(values, list) else []
    if "kvlistValue" in value:
        values = value["kvlistValue"].get("values") if isinstance(value["kvlistValue"], dict) \
            else None
        return attributes(values, depth + 1)
    return None


def attributes(items: Any, depth: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(items, list):
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("key"), str):
                out[item["key"]] = any_value(item.get("value"), depth)
    elif isinstance(items, dict):  # some exporters write a plain object
        out.update(items)
    return out


def _nanos(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _iso(nanos: int | None) -> str | None:
    if nanos is None or nanos <= 0:
        return None
    try:
        moment = datetime.fromtimestamp(nanos / 1e9, UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _Reader:
    def __init__(self, ctx: ImportContext) -> None:
        self.ctx = ctx
        self.order = 0
        self.steps: list[Step] = []
        self.inputs: dict[str, Any] = {}
        self.skipped = 0

    def export(self, value: Any, line: int | None, prefix: str) -> None:
        if not is_otlp(value):
            self.skipped += 1
            return
        for r, resource in enumerate(value["resourceSpans"]):
            scopes = resource.get("scopeSpans") if isinstance(resource, dict) else None
            if not isinstance(scopes, list):
                continue
            for s, scope in enumerate(scopes):
                spans = scope.get("spans") if isinstance(scope, dict) else None
                if not isinstance(spans, list):
                    continue
                for k, span in enumerate(spans):
                    pointer = None if line is not None else \
                        f"{prefix}/resourceSpans/{r}/scopeSpans/{s}/spans/{k}"
                    self.span(span, new_origin(line, pointer))

    def span(self, span: Any, origin: Origin) -> None:
        self.order += 1
        if not isinstance(span, dict):
            return
        nanos = _nanos(span.get("startTimeUnixNano"))
        recorded = span.get("status")
        status: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
        message = status.get("message")
        events = span.get("events")
        step = span_step(SpanRecord(
            trace=str(span.get("traceId") or ""), span=_id(span.get("spanId")),
            parent=_id(span.get("parentSpanId")), name=span.get("name"),
            start=f"{nanos:020d}" if nanos is not None else "", timestamp=_iso(nanos),
            attributes=attributes(span.get("attributes")), origin=origin, order=self.order,
            events=[(e.get("name"), attributes(e.get("attributes"))) for e in events
                    if isinstance(e, dict)] if isinstance(events, list) else [],
            failed=status.get("code") in _STATUS_ERROR,
            status_message=message if isinstance(message, str) and message else None),
            self.inputs)
        if step is not None:
            self.steps.append(step)

    def sessions(self) -> Iterator[Session | None]:
        tell_not_records(self.ctx, self.skipped, "OTLP span exports")
        yield from assemble(self.steps, self.ctx, format_id=FORMAT_ID, agent=AGENT,
                            tally_steps=False)


def _id(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def import_records(records: Iterable[Record], ctx: ImportContext) -> Iterator[Session | None]:
    reader = _Reader(ctx)
    for record in records:
        reader.export(record.value, record.line, "")
    yield from reader.sessions()


def import_document(value: Any, ctx: ImportContext) -> Iterator[Session | None]:
    reader = _Reader(ctx)
    reader.export(value, None, "")
    yield from reader.sessions()
