"""OpenTelemetry GenAI spans as OTLP JSON — ``otel_genai``.

An OTLP JSON export (what the collector's file exporter writes, one object per line, or one
document) is ``{"resourceSpans": [{"resource", "scopeSpans": [{"scope", "spans": [...]}]}]}``;
a span is ``{"traceId", "spanId", "parentSpanId", "name", "startTimeUnixNano", "attributes":
[{"key", "value": {"stringValue" | "intValue" | …}}], "status": {"code", "message"}}``. The
GenAI semantic conventions name what a span did with ``gen_ai.operation.name``:

* ``execute_tool``: a tool execution — ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, and,
  when the instrumentation was told to record content (opt-in), ``gen_ai.tool.call.arguments``
  and ``gen_ai.tool.call.result``; status ``ERROR`` (or ``error.type``) marks a failed call;
* ``chat`` / ``text_completion`` / ``generate_content``: a model call; its calls come from the
  opt-in ``gen_ai.output.messages`` (``parts`` of type ``tool_call``);
* ``invoke_agent``: the agent run; its opt-in ``gen_ai.input.messages`` hold the task.

Without the opt-in content a call has a name and an id but no arguments and no result: the
importer says so, since guards that compare arguments or results then see only names.
One session per trace (``path#n`` when a file holds several), ordered by start time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from loopscope.formats._traces import ModelCall, Step, as_text, assemble, parse_json_text
from loopscope.formats.base import ImportContext, Record
from loopscope.formats.builder import new_origin
from loopscope.model import AgentInfo, Origin, Session
from loopscope.words import plural

FORMAT_ID = "otel_genai"

AGENT = AgentInfo("OpenTelemetry GenAI trace", None)

_MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
_STATUS_ERROR = (2, "STATUS_CODE_ERROR", "ERROR")
OPT_IN_NOTE = ("the trace records tool names and ids but not their arguments or results "
               "(gen_ai.tool.call.arguments / gen_ai.tool.call.result are opt-in): guards that "
               "compare arguments or results can only see names here")

__all__ = ["FORMAT_ID", "import_document", "import_records", "is_otlp"]


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


def _output_calls(messages: Any) -> tuple[str, list[ModelCall]]:
    text: list[str] = []
    calls: list[ModelCall] = []
    if not isinstance(messages, list):
        return "", calls
    for message in messages:
        if not isinstance(message, dict):
            continue
        for part in message.get("parts") or []:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "text" and isinstance(part.get("content"), str):
                text.append(part["content"])
            elif part.get("type") == "tool_call":
                call_id = part.get("id")
                calls.append(ModelCall(call_id if isinstance(call_id, str) else None,
                                       part.get("name"), part.get("arguments")))
    return "".join(text), calls


def _task(messages: Any) -> str:
    if not isinstance(messages, list):
        return as_text(messages)
    texts = [p["content"] for m in messages if isinstance(m, dict) and m.get("role") == "user"
             for p in (m.get("parts") or []) if isinstance(p, dict)
             and p.get("type") == "text" and isinstance(p.get("content"), str)]
    return texts[-1] if texts else ""


class _Reader:
    def __init__(self, ctx: ImportContext) -> None:
        self.ctx = ctx
        self.order = 0
        self.steps: list[Step] = []
        self.tools = 0
        self.tools_with_content = 0
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
        attrs = attributes(span.get("attributes"))
        operation = attrs.get("gen_ai.operation.name")
        nanos = _nanos(span.get("startTimeUnixNano"))
        common: dict[str, Any] = {
            "trace": str(span.get("traceId") or ""),
            "start": f"{nanos:020d}" if nanos is not None else "", "order": self.order,
            "span": span.get("spanId") or None, "parent": span.get("parentSpanId") or None,
            "origin": origin, "timestamp": _iso(nanos),
        }
        if operation == "execute_tool":
            self.tools += 1
            recorded = span.get("status")
            status: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
            failed = status.get("code") in _STATUS_ERROR or "error.type" in attrs
            has_arguments = "gen_ai.tool.call.arguments" in attrs
            has_result = "gen_ai.tool.call.result" in attrs
            self.tools_with_content += has_arguments or has_result
            call_id = attrs.get("gen_ai.tool.call.id")
            message = status.get("message")
            self.steps.append(Step(
                kind="tool", name=attrs.get("gen_ai.tool.name") or span.get("name"),
                call_id=call_id if isinstance(call_id, str) else None,
                arguments=attrs.get("gen_ai.tool.call.arguments"),
                output=parse_json_text(attrs.get("gen_ai.tool.call.result")) if has_result else None,
                has_output=has_result, is_error=failed,
                error=message if isinstance(message, str) and message
                else attrs.get("error.type") if failed else None, **common))
        elif operation in _MODEL_OPERATIONS:
            text, calls = _output_calls(parse_json_text(attrs.get("gen_ai.output.messages")))
            model = attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model")
            self.steps.append(Step(kind="model", text=text, calls=calls,
                                   model=model if isinstance(model, str) else None, **common))
        elif operation == "invoke_agent" and "gen_ai.input.messages" in attrs:
            self.steps.append(Step(kind="input", text=_task(parse_json_text(attrs["gen_ai.input.messages"])),
                                   **common))

    def sessions(self) -> Iterator[Session | None]:
        if self.skipped:
            self.ctx.problem("info", "unknown_record_type",
                             f"{plural(self.skipped, 'record is', 'records are')} not OTLP span "
                             "exports; they made no event", count=self.skipped)
        note = OPT_IN_NOTE if self.tools and not self.tools_with_content else None
        yield from assemble(self.steps, self.ctx, format_id=FORMAT_ID, agent=AGENT,
                            trace_note=note)


def import_records(records: Iterable[Record], ctx: ImportContext) -> Iterator[Session | None]:
    reader = _Reader(ctx)
    for record in records:
        reader.export(record.value, record.line, "")
    yield from reader.sessions()


def import_document(value: Any, ctx: ImportContext) -> Iterator[Session | None]:
    reader = _Reader(ctx)
    reader.export(value, None, "")
    yield from reader.sessions()
