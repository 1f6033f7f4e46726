"""OpenInference spans (Arize Phoenix exports) — ``openinference_spans``.

Phoenix stores agent traces as OpenInference spans and exports them as JSON Lines, a JSON
array or a Parquet file (``px.Client().get_spans_dataframe()`` written with ``to_parquet`` /
``to_json(orient="records", lines=True)``). A span is ``{"name", "context": {"trace_id",
"span_id"}, "parent_id", "span_kind", "start_time", "end_time", "status_code",
"status_message", "attributes", "events"}``; a dataframe row has the same fields with dotted
column names (``context.trace_id``, ``attributes.tool.name``, …). Attributes follow the
OpenInference semantic conventions, written flat (``"tool.name"``), nested
(``{"tool": {"name"}}``) or indexed (``"llm.output_messages.0.message.role"``); all three are
read.

* ``TOOL`` spans are tool executions: ``tool.name``, the input in ``input.value`` (or
  ``tool_call.function.arguments``), the answer in ``output.value``; ``status_code`` ``ERROR``
  (with ``status_message`` or the exception event) marks a failed call.
* ``LLM`` spans are model calls: ``llm.output_messages.*.message.tool_calls`` are the calls the
  model made (``tool_call.id``, ``tool_call.function.name`` / ``arguments``).
* The root span's ``input.value`` is the task.

One session per trace (``path#n`` when a file holds several), see ``_traces``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from loopscope.formats._traces import ModelCall, RecordExport, Step, as_text
from loopscope.formats.base import ImportContext
from loopscope.formats.builder import new_origin
from loopscope.formats.text import iso_timestamp, parse_json_text
from loopscope.model import AgentInfo, Origin, Session

FORMAT_ID = "openinference_spans"

AGENT = AgentInfo("OpenInference trace", None)

__all__ = ["FORMAT_ID", "attribute_step", "import_document", "import_parquet", "import_records",
           "is_span", "unflatten"]


def unflatten(value: Any, depth: int = 0) -> Any:
    """Dotted keys to nested objects, numeric segments to list positions (recursively)."""
    if depth > 64:
        return value
    if isinstance(value, list):
        return [unflatten(v, depth + 1) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        item = unflatten(item, depth + 1)
        parts = str(key).split(".")
        node = out
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                if child is not None:
                    break  # a leaf and a prefix at once: the first one wins
                child = node[part] = {}
            node = child
        else:
            last = parts[-1]
            if isinstance(node.get(last), dict) and isinstance(item, dict):
                node[last].update(item)
            elif last not in node:
                node[last] = item
    return _lists(out, depth)


def _lists(node: Any, depth: int) -> Any:
    """Objects whose keys are all 0, 1, 2… (from indexed attribute names) become lists."""
    if depth > 64 or not isinstance(node, dict):
        return node
    for key, item in list(node.items()):
        node[key] = _lists(item, depth + 1)
    if node and all(k.isdigit() for k in node):
        return [node[k] for k in sorted(node, key=int)]
    return node


def _get(node: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def _span_fields(value: dict[str, Any]) -> dict[str, Any]:
    """A span in one nested shape, whatever the export (span JSON or dataframe row)."""
    nested = unflatten({k: v for k, v in value.items() if k != "attributes"})
    attributes = value.get("attributes")
    if isinstance(attributes, str):
        attributes = parse_json_text(attributes)
    merged = unflatten(attributes) if isinstance(attributes, dict) else {}
    extra = nested.get("attributes")
    if isinstance(extra, dict):  # dataframe columns attributes.x.y
        for key, item in extra.items():
            merged.setdefault(key, item)
    nested["attributes"] = merged
    return nested


def is_span(value: Any) -> bool:
    """A record that is an OpenInference span (detection uses it too)."""
    if not isinstance(value, dict):
        return False
    context = value.get("context")
    has_ids = (isinstance(context, dict) and "span_id" in context) or "context.span_id" in value
    if not has_ids:
        return False
    attributes = value.get("attributes")
    return ("span_kind" in value or "attributes.openinference.span.kind" in value
            or (isinstance(attributes, dict) and (
                "openinference.span.kind" in attributes
                or isinstance(attributes.get("openinference"), dict))))


def _error_text(span: dict[str, Any]) -> str | None:
    message = span.get("status_message")
    if isinstance(message, str) and message:
        return message
    events = span.get("events")
    if isinstance(events, list):
        for event in events:
            attrs = unflatten(event.get("attributes")) if isinstance(event, dict) else None
            text = _get(attrs, "exception", "message")
            if isinstance(text, str):
                return text
    return None


def _model_calls(attrs: dict[str, Any]) -> tuple[str, list[ModelCall]]:
    text: list[str] = []
    calls: list[ModelCall] = []
    messages = _get(attrs, "llm", "output_messages")
    if not isinstance(messages, list):
        return "", calls
    for entry in messages:
        message = _get(entry, "message")
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, str):
            text.append(content)
        contents = message.get("contents")
        if isinstance(contents, list):
            text.extend(t for t in (_get(c, "message_content", "text") for c in contents)
                        if isinstance(t, str))
        tool_calls = message.get("tool_calls")
        if isinstance(tool_calls, list):
            for element in tool_calls:
                call = _get(element, "tool_call")
                if not isinstance(call, dict):
                    continue
                call_id = call.get("id")
                calls.append(ModelCall(call_id if isinstance(call_id, str) else None,
                                       _get(call, "function", "name"),
                                       _get(call, "function", "arguments")))
    return "".join(text), calls


def _step(value: Any, order: int, origin: Origin) -> Step | None:
    if not isinstance(value, dict):
        return None
    span = _span_fields(value)
    attrs = span["attributes"]
    trace = _get(span, "context", "trace_id")
    kind = span.get("span_kind") or _get(attrs, "openinference", "span", "kind")
    start = span.get("start_time")
    start_text = start if isinstance(start, str) else str(start) if start is not None else ""
    common: dict[str, Any] = {
        "trace": str(trace) if trace is not None else "", "start": start_text, "order": order,
        "span": _as_id(_get(span, "context", "span_id")), "parent": _as_id(span.get("parent_id")),
        "origin": origin, "timestamp": iso_timestamp(start) if start is not None else None,
    }
    failed = span.get("status_code") == "ERROR"
    return attribute_step(kind, attrs, common, span.get("name"), failed,
                          _error_text(span) if failed else None)


def attribute_step(kind: Any, attrs: dict[str, Any], common: dict[str, Any], span_name: Any,
                   failed: bool, error: str | None) -> Step | None:
    """The step of one span by the OpenInference rules, from its attributes (nested, see
    :func:`unflatten`): a ``TOOL`` span is a tool execution, an ``LLM`` span a model call, a
    root span's ``input.value`` the task; other spans make no step. Shared with the OTLP and
    console-exporter importers, which read the same attributes from another span shape."""
    kind = kind.upper() if isinstance(kind, str) else ""
    if kind == "TOOL":
        call_id = _get(attrs, "tool_call", "id")
        arguments = _get(attrs, "tool_call", "function", "arguments")
        if arguments is None:
            arguments = _get(attrs, "input", "value")
        name = _get(attrs, "tool", "name") or _get(attrs, "tool_call", "function", "name") \
            or span_name
        output = _get(attrs, "output", "value")
        return Step(kind="tool", call_id=call_id if isinstance(call_id, str) else None,
                    name=name, arguments=arguments, output=output,
                    has_output=output is not None, is_error=failed,
                    error=error if failed else None, **common)
    if kind == "LLM":
        text, calls = _model_calls(attrs)
        model = _get(attrs, "llm", "model_name")
        return Step(kind="model", text=text, calls=calls,
                    model=model if isinstance(model, str) else None, **common)
    if common["parent"] is None:
        task = _get(attrs, "input", "value")
        if task is not None:
            return Step(kind="input", text=as_text(task), **common)
    return None


def _as_id(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


_EXPORT = RecordExport(FORMAT_ID, AGENT, is_span, _step, "OpenInference spans", "spans",
                       "an OpenInference span export is a JSON array of spans")
import_records = _EXPORT.import_records
import_document = _EXPORT.import_document


PARQUET_HINT = "reading Parquet needs pyarrow: pip install 'loopscope[parquet]'"


def import_parquet(path: str, ctx: ImportContext) -> Iterator[Session | None]:
    """A Phoenix span dataframe saved as Parquet (one row per span)."""
    try:
        import pyarrow.parquet as pq  # optional: the 'parquet' extra
    except ImportError:
        ctx.problem("error", "unsupported_variant",
                    f"recognised as a Parquet file (OpenInference spans?), but {PARQUET_HINT}")
        return
    limit = ctx.limits.max_document_bytes
    if os.path.getsize(path) > limit:
        ctx.problem("error", "too_large", f"Parquet file is over the {limit} byte limit "
                                          "(max_document_bytes); not read")
        return
    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as exc:  # pyarrow raises many kinds for a damaged file
        ctx.problem("error", "unreadable", f"the Parquet file cannot be read "
                                           f"({type(exc).__name__}); not imported")
        return
    rows = [_plain(row) for row in rows]
    if not any(is_span(row) for row in rows[:50]):
        ctx.problem("error", "unknown_format",
                    "not a recorded-session format (a Parquet table whose rows are not "
                    "OpenInference spans)")
        return
    values = ((v, new_origin(None, f"/{i}")) for i, v in enumerate(rows))
    yield from _EXPORT.sessions(values, ctx)


def _plain(value: Any, depth: int = 0) -> Any:
    """Parquet values as JSON values: datetimes as ISO text, bytes as text, maps as objects."""
    if depth > 64:
        return None
    if isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):  # a map column
            return {str(k): _plain(v, depth + 1) for k, v in value}
        return [_plain(v, depth + 1) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, float) and value != value:  # NaN: a missing cell
        return None
    return value
