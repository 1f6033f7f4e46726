"""OpenTelemetry spans of any GenAI convention → trace steps (see ``_traces``).

A span exported by an OpenTelemetry SDK says what it did only through its attributes, and the
instrumentations that write them follow one of three conventions; a file may mix them (a
Langfuse SDK span around an OpenInference-instrumented LLM call), so the convention is decided
for **each span**, never from the file's first span:

* **OpenInference** (Arize Phoenix; ``openinference.span.kind`` = ``LLM`` / ``TOOL`` /
  ``CHAIN`` / ``AGENT`` …): the rules of :func:`openinference_spans.attribute_step`, on the
  span's dotted attributes made nested (``llm.output_messages.0.message.tool_calls.0.tool_call
  .function.name`` …). ``tool.parameters`` is the tool's parameter *schema*, not a call's
  arguments, and is not read as such.
* **Langfuse** (``langfuse.observation.type`` = ``generation`` / ``tool`` / ``span`` /
  ``event`` …, ``langfuse.observation.input`` / ``output`` as JSON text, ``langfuse.trace.*``):
  the span is read as the observation it becomes in Langfuse, by
  :func:`langfuse_observations.observation_step`; where a ``langfuse.*`` attribute is missing
  the ``gen_ai.*`` and OpenInference ones Langfuse itself falls back to are read
  (``gen_ai.prompt`` / ``input.value`` for the input, ``gen_ai.completion`` / ``output.value``
  for the output, ``gen_ai.request.model`` for the model); a generation with none of these
  outputs is read by the GenAI rules for its output (``gen_ai.output.messages`` …). A ``span`` or ``event`` that also
  names a GenAI operation is read by the GenAI rules.
* **OpenTelemetry GenAI** (``gen_ai.operation.name``): ``execute_tool`` is a tool execution
  (``gen_ai.tool.name``, ``gen_ai.tool.call.id``, opt-in ``gen_ai.tool.call.arguments`` /
  ``result``); ``chat`` / ``text_completion`` / ``generate_content`` a model call whose calls
  come from ``gen_ai.output.messages`` (attribute, or the
  ``gen_ai.client.inference.operation.details`` event), else from the older ``gen_ai.completion``
  (attribute or ``gen_ai.content.completion`` event: OpenAI-style messages as JSON text), else
  from indexed ``gen_ai.completion.N.tool_calls.M.*`` attributes (OpenLLMetry, which names the
  operation in ``llm.request.type``); ``invoke_agent`` with ``gen_ai.input.messages`` gives the
  task.

A root span (no parent) that is neither a tool nor a model call gives the trace's task: its
``langfuse.trace.input``, ``input.value``, ``langfuse.observation.input`` or
``gen_ai.input.messages``. Status ``ERROR`` (or ``error.type``) marks a failed tool call; its
message is the status message or the ``exception`` event's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from loopscope.formats._traces import ModelCall, Step, as_text, task_text
from loopscope.formats.langfuse_observations import (
    OBSERVATION_TYPES,
    message_calls,
    observation_step,
)
from loopscope.formats.openinference_spans import attribute_step, unflatten
from loopscope.formats.text import parse_json_text
from loopscope.model import Origin

__all__ = ["SpanRecord", "convention", "output_parts", "span_step"]

MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
_DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_COMPLETION_EVENT = "gen_ai.content.completion"
_INDEXED_COMPLETION = re.compile(r"^gen_ai\.completion\.\d+\.")

_LANGFUSE_OUTPUT = ("langfuse.observation.output", "gen_ai.completion", "output.value")


@dataclass
class SpanRecord:
    """One span in a neutral shape, whatever the exporter wrote (OTLP JSON, console dump)."""

    trace: str
    span: str | None
    parent: str | None
    name: Any
    start: str
    """Sortable: nanoseconds as 20 zero-padded digits, or ISO-8601 text."""
    timestamp: str | None
    attributes: dict[str, Any]
    """Flat dotted keys → plain values."""
    origin: Origin
    order: int
    events: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)
    """``(name, attributes)`` of each span event."""
    failed: bool = False
    status_message: str | None = None


def convention(attrs: dict[str, Any]) -> str:
    """``openinference``, ``langfuse`` or ``genai``: the convention a span's attributes follow
    (the tally's counter asks the same question of the raw span)."""
    kind = attrs.get("openinference.span.kind")
    if isinstance(kind, str) and kind:
        return "openinference"
    ltype = attrs.get("langfuse.observation.type")
    if isinstance(ltype, str) and ltype.upper() in OBSERVATION_TYPES and (
            ltype.lower() not in ("span", "event") or "gen_ai.operation.name" not in attrs):
        return "langfuse"
    return "genai"


def _first(attrs: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if attrs.get(key) is not None:
            return attrs[key]
    return None


def _error_text(span: SpanRecord) -> str | None:
    if span.status_message:
        return span.status_message
    for name, attrs in span.events:
        if name == "exception" and isinstance(attrs.get("exception.message"), str):
            return str(attrs["exception.message"])
    error_type = span.attributes.get("error.type")
    return error_type if isinstance(error_type, str) else None


def span_step(span: SpanRecord, trace_inputs: dict[str, Any]) -> Step | None:
    """The step one span makes (``None``: it makes none). ``trace_inputs`` holds the traces
    whose task was read (the first root input of a trace wins)."""
    attrs = span.attributes
    common: dict[str, Any] = {
        "trace": span.trace, "start": span.start, "order": span.order, "span": span.span,
        "parent": span.parent, "origin": span.origin, "timestamp": span.timestamp,
    }
    failed = span.failed or "error.type" in attrs
    rules = convention(attrs)
    step: Step | None
    if rules == "openinference":
        step = attribute_step(attrs["openinference.span.kind"], unflatten(attrs), common,
                              span.name, failed, _error_text(span) if failed else None)
    elif rules == "langfuse":
        step = observation_step(_observation(span, failed), span.order, span.origin,
                                trace_inputs)
        if step is not None:  # one time scale for the trace's spans, whatever their rules
            step.start, step.timestamp = span.start, span.timestamp
            if step.kind == "model" and _first(attrs, *_LANGFUSE_OUTPUT) is None:
                step.text, step.calls = _genai_output(attrs, span.events)
    else:
        step = _genai_step(span, attrs, common, failed)
    if step is not None and step.kind == "input":
        if span.trace in trace_inputs and rules != "langfuse":
            return None
        trace_inputs.setdefault(span.trace, step.text)
        return step
    if step is None and span.parent is None and span.trace not in trace_inputs:
        task = _first(attrs, "langfuse.trace.input", "input.value", "langfuse.observation.input")
        if task is not None:
            trace_inputs[span.trace] = task
            return Step(kind="input", text=task_text(parse_json_text(task)), **common)
    return step


def _observation(span: SpanRecord, failed: bool) -> dict[str, Any]:
    """The Langfuse observation a span with ``langfuse.*`` attributes becomes."""
    attrs = span.attributes
    ltype = str(attrs["langfuse.observation.type"]).upper()
    input_keys = ["langfuse.observation.input", "gen_ai.prompt", "input.value"]
    if ltype == "TOOL":
        input_keys.insert(1, "gen_ai.tool.call.arguments")
    output = _first(attrs, *_LANGFUSE_OUTPUT,
                    "gen_ai.tool.call.result" if ltype == "TOOL" else "")
    level = attrs.get("langfuse.observation.level")
    call_id = _first(attrs, "langfuse.observation.metadata.tool_call_id", "gen_ai.tool.call.id",
                     "tool_call.id")
    observation: dict[str, Any] = {
        "traceId": span.trace, "id": span.span, "parentObservationId": span.parent,
        "type": ltype, "name": _first(attrs, "gen_ai.tool.name", "tool.name") or span.name
        if ltype == "TOOL" else span.name,
        "startTime": span.timestamp or span.start,
        "input": _parsed(_first(attrs, *input_keys)),
        "output": _parsed(output),
        "level": "ERROR" if failed or level == "ERROR" else level,
        "statusMessage": _first(attrs, "langfuse.observation.status_message")
        or (_error_text(span) if failed else None),
        "model": _first(attrs, "langfuse.observation.model.name", "gen_ai.response.model",
                        "gen_ai.request.model"),
        "metadata": {"tool_call_id": call_id} if isinstance(call_id, str) else {},
    }
    if span.parent is None and attrs.get("langfuse.trace.input") is not None:
        observation["input"] = _parsed(attrs["langfuse.trace.input"])
    return observation


def _parsed(value: Any) -> Any:
    return parse_json_text(value) if isinstance(value, str) else value


def _genai_step(span: SpanRecord, attrs: dict[str, Any], common: dict[str, Any],
                failed: bool) -> Step | None:
    operation = attrs.get("gen_ai.operation.name")
    if operation is None and isinstance(attrs.get("llm.request.type"), str):
        operation = attrs["llm.request.type"]  # OpenLLMetry
    if operation == "execute_tool" or (operation is None and "gen_ai.tool.name" in attrs):
        has_result = "gen_ai.tool.call.result" in attrs
        call_id = attrs.get("gen_ai.tool.call.id")
        return Step(kind="tool", name=attrs.get("gen_ai.tool.name") or span.name,
                    call_id=call_id if isinstance(call_id, str) else None,
                    arguments=attrs.get("gen_ai.tool.call.arguments"),
                    output=parse_json_text(attrs.get("gen_ai.tool.call.result"))
                    if has_result else None,
                    has_output=has_result, is_error=failed,
                    error=_error_text(span) if failed else None, **common)
    if operation in MODEL_OPERATIONS or (operation is None and _has_output(attrs, span)):
        text, calls = _genai_output(attrs, span.events)
        model = attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model")
        return Step(kind="model", text=text, calls=calls,
                    model=model if isinstance(model, str) else None, **common)
    if operation == "invoke_agent" and "gen_ai.input.messages" in attrs:
        return Step(kind="input", text=_task(parse_json_text(attrs["gen_ai.input.messages"])),
                    **common)
    return None


def _has_output(attrs: dict[str, Any], span: SpanRecord) -> bool:
    return ("gen_ai.output.messages" in attrs or "gen_ai.completion" in attrs
            or any(_INDEXED_COMPLETION.match(k) for k in attrs)
            or any(name in (_DETAILS_EVENT, _COMPLETION_EVENT) for name, _ in span.events))


def _genai_output(attrs: dict[str, Any],
                  events: list[tuple[Any, dict[str, Any]]]) -> tuple[str, list[ModelCall]]:
    """A GenAI model span's text and calls, from the newest convention it carries."""
    sources = [attrs] + [a for name, a in events if name == _DETAILS_EVENT]
    for source in sources:
        if "gen_ai.output.messages" in source:
            return output_parts(parse_json_text(source["gen_ai.output.messages"]))
    for source in [attrs] + [a for name, a in events if name == _COMPLETION_EVENT]:
        if "gen_ai.completion" in source:
            return message_calls(parse_json_text(source["gen_ai.completion"]))
    indexed = {k: v for k, v in attrs.items() if _INDEXED_COMPLETION.match(k)}
    if indexed:
        nested = unflatten(indexed)
        completion = nested.get("gen_ai", {}).get("completion") \
            if isinstance(nested.get("gen_ai"), dict) else None
        if isinstance(completion, list):
            return message_calls([m for m in completion if isinstance(m, dict)])
    return "", []


def output_parts(messages: Any) -> tuple[str, list[ModelCall]]:
    """``gen_ai.output.messages``: ``parts`` of type ``text`` and ``tool_call``."""
    text: list[str] = []
    calls: list[ModelCall] = []
    if not isinstance(messages, list):
        return "", calls
    for message in messages:
        if not isinstance(message, dict):
            continue
        parts = message.get("parts")
        for part in parts if isinstance(parts, list) else []:
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
    texts: list[str] = []
    for message in messages:
        parts = message.get("parts") if isinstance(message, dict) \
            and message.get("role") == "user" else None
        if isinstance(parts, list):
            texts.extend(p["content"] for p in parts if isinstance(p, dict)
                         and p.get("type") == "text" and isinstance(p.get("content"), str))
    return texts[-1] if texts else ""
