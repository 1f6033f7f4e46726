"""Langfuse observation exports — ``langfuse_observations``.

Langfuse stores a trace as observations: ``{"id", "traceId", "type", "name", "startTime",
"endTime", "parentObservationId", "input", "output", "level", "statusMessage", "model",
"metadata", …}`` with ``type`` ``GENERATION`` (a model call), ``TOOL`` (a tool execution),
``SPAN``, ``EVENT``, ``AGENT``, ``CHAIN``, … They come as JSON Lines, a JSON array, the public
API's page (``{"data": [...], "meta": {...}}``) or a trace with its observations
(``{"id", "input", "observations": [...]}``).

* ``TOOL`` observations are tool executions: ``name``, ``input`` (the arguments), ``output``;
  ``level: "ERROR"`` marks a failed call (``statusMessage`` says why);
* ``GENERATION`` observations are model calls; their calls come from ``output`` when it is an
  OpenAI-style message (``tool_calls``) or a list of such messages;
* the trace's ``input`` (or a root observation's) is the task.

One session per trace (``path#n`` when a file holds several), ordered by ``startTime``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from loopscope.formats._traces import ModelCall, Step, as_text, assemble, read_steps, task_text
from loopscope.formats.base import ImportContext, Record
from loopscope.formats.builder import new_origin
from loopscope.formats.text import iso_timestamp
from loopscope.model import AgentInfo, Origin, Session

FORMAT_ID = "langfuse_observations"

AGENT = AgentInfo("Langfuse trace", None)

OBSERVATION_TYPES = frozenset({"GENERATION", "SPAN", "EVENT", "TOOL", "AGENT", "CHAIN",
                               "RETRIEVER", "EVALUATOR", "EMBEDDING", "GUARDRAIL"})

__all__ = ["FORMAT_ID", "OBSERVATION_TYPES", "import_document", "import_records",
           "is_observation", "message_calls", "observation_step"]


def is_observation(value: Any) -> bool:
    return (isinstance(value, dict) and "traceId" in value
            and value.get("type") in OBSERVATION_TYPES and "startTime" in value)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def message_calls(message: Any) -> tuple[str, list[ModelCall]]:
    """The text and tool calls of a model's output in the OpenAI shapes: a message with
    ``tool_calls`` (``function`` or flat ``name``/``arguments``), a choice, or a list of them
    (only assistant messages of a list count)."""
    if isinstance(message, list):  # several choices or messages: the assistant ones
        texts: list[str] = []
        found: list[ModelCall] = []
        for item in message:
            if isinstance(item, dict) and isinstance(item.get("role"), str) \
                    and item["role"] != "assistant":
                continue  # the input echoed back: not the model's output
            part_text, part_calls = message_calls(item)
            texts.append(part_text)
            found.extend(part_calls)
        return "".join(texts), found
    if isinstance(message, str):
        return message, []
    if not isinstance(message, dict):
        return "", []
    if isinstance(message.get("message"), dict):  # a choice
        return message_calls(message["message"])
    calls: list[ModelCall] = []
    tool_calls = message.get("tool_calls")
    if isinstance(tool_calls, list):
        for element in tool_calls:
            if not isinstance(element, dict):
                continue
            function = element.get("function")
            if isinstance(function, dict):
                calls.append(ModelCall(_str(element.get("id")), function.get("name"),
                                       function.get("arguments")))
            else:
                calls.append(ModelCall(_str(element.get("id")), element.get("name"),
                                       element.get("args", element.get("arguments"))))
    content = message.get("content")
    text = content if isinstance(content, str) else as_text(content) if content else ""
    return text, calls


def observation_step(value: dict[str, Any], order: int, origin: Origin,
                     trace_input: dict[str, Any]) -> Step | None:
    """The step of one observation: a ``TOOL`` is a tool execution, a ``GENERATION`` a model
    call, a root observation's input the task (once per trace). Shared with the OTLP and
    console-exporter importers, which build the observation from ``langfuse.*`` attributes."""
    start = value.get("startTime")
    common: dict[str, Any] = {
        "trace": str(value.get("traceId")), "start": str(start or ""), "order": order,
        "span": _str(value.get("id")), "parent": _str(value.get("parentObservationId")),
        "origin": origin, "timestamp": iso_timestamp(start) if start is not None else None,
    }
    kind = value.get("type")
    if kind == "TOOL":
        failed = value.get("level") == "ERROR"
        message = value.get("statusMessage")
        metadata = value.get("metadata")
        call_id = metadata.get("tool_call_id") if isinstance(metadata, dict) else None
        return Step(kind="tool", name=value.get("name"), arguments=value.get("input"),
                    call_id=_str(call_id), output=value.get("output"),
                    has_output=value.get("output") is not None, is_error=failed,
                    error=message if isinstance(message, str) else None, **common)
    if kind == "GENERATION":
        text, calls = message_calls(value.get("output"))
        return Step(kind="model", text=text, calls=calls, model=_str(value.get("model")),
                    **common)
    trace = common["trace"]
    if common["parent"] is None and trace not in trace_input and value.get("input") is not None:
        trace_input[trace] = value.get("input")
        return Step(kind="input", text=task_text(value.get("input")), **common)
    return None


def _steps(values: Iterable[tuple[Any, Origin]], ctx: ImportContext,
           trace_input: dict[str, Any]) -> list[Step]:
    return read_steps(values, ctx, is_record=is_observation,
                      step_of=lambda value, order, origin: observation_step(
                          value, order, origin, trace_input),
                      what="Langfuse observations")


def import_records(records: Iterable[Record], ctx: ImportContext) -> Iterator[Session | None]:
    values = ((r.value, new_origin(r.line, None)) for r in records)
    yield from assemble(_steps(values, ctx, {}), ctx, format_id=FORMAT_ID, agent=AGENT)


def import_document(value: Any, ctx: ImportContext) -> Iterator[Session | None]:
    trace_input: dict[str, Any] = {}
    steps: list[Step] = []
    if isinstance(value, dict) and isinstance(value.get("observations"), list):
        # a trace with its observations: the trace's own input is the task
        trace = value.get("id")
        if value.get("input") is not None and trace is not None:
            trace_input[str(trace)] = value["input"]
            steps.append(Step(trace=str(trace), kind="input", start="", order=-1,
                              text=task_text(value["input"]),
                              origin=new_origin(None, "/input")))
        observations, prefix = value["observations"], "/observations"
    elif isinstance(value, dict) and isinstance(value.get("data"), list):
        observations, prefix = value["data"], "/data"
    elif isinstance(value, list):
        observations, prefix = value, ""
    else:
        ctx.problem("error", "session_failed", "a Langfuse export is a JSON array of "
                                               "observations")
        return
    values = ((v, new_origin(None, f"{prefix}/{i}")) for i, v in enumerate(observations))
    steps.extend(_steps(values, ctx, trace_input))
    yield from assemble(steps, ctx, format_id=FORMAT_ID, agent=AGENT)
