"""LangSmith run exports — ``langsmith_runs``.

LangSmith stores a trace as a tree of runs; ``Client.list_runs`` (and the UI's export) give one
object per run: ``{"id", "name", "run_type": "llm" | "chain" | "tool" | "retriever" | …,
"trace_id", "parent_run_id", "dotted_order", "start_time", "end_time", "inputs", "outputs",
"error", "extra", …}``, written as JSON Lines or a JSON array. ``dotted_order`` (start time and
run id of every ancestor, joined by dots) orders the runs of a trace as they ran, parents first.

* ``tool`` runs are tool executions: ``name``, ``inputs`` (LangChain's ``{"input": …}`` or the
  keyword arguments), ``outputs`` (``{"output": …}``), ``error`` (the exception text) — an
  error marks a failed call;
* ``llm`` runs are model calls; their calls come from the output message: LangChain's
  serialised ``AIMessage`` (``generations[0][0].message.kwargs.tool_calls``, or the OpenAI
  ``additional_kwargs.tool_calls``), or an OpenAI response (``choices[0].message.tool_calls``);
* the root run's ``inputs`` are the task.

One session per trace (``path#n`` when a file holds several), see ``_traces``.
"""

from __future__ import annotations

from typing import Any

from loopscope.formats._traces import ModelCall, RecordExport, Step, as_text, task_text
from loopscope.formats.text import iso_timestamp
from loopscope.model import AgentInfo, Origin

FORMAT_ID = "langsmith_runs"

AGENT = AgentInfo("LangSmith trace", None)

RUN_TYPES = frozenset({"llm", "chain", "tool", "retriever", "embedding", "prompt", "parser"})

__all__ = ["FORMAT_ID", "RUN_TYPES", "import_document", "import_records", "is_run"]


def is_run(value: Any) -> bool:
    return (isinstance(value, dict) and value.get("run_type") in RUN_TYPES
            and ("dotted_order" in value or "trace_id" in value))


def _openai_calls(tool_calls: Any) -> list[ModelCall]:
    calls: list[ModelCall] = []
    if isinstance(tool_calls, list):
        for element in tool_calls:
            if not isinstance(element, dict):
                continue
            function = element.get("function")
            if isinstance(function, dict):  # OpenAI shape
                calls.append(ModelCall(_str(element.get("id")), function.get("name"),
                                       function.get("arguments")))
            else:  # LangChain ToolCall: {"name", "args", "id"}
                calls.append(ModelCall(_str(element.get("id")), element.get("name"),
                                       element.get("args")))
    return calls


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _message_of(outputs: Any) -> dict[str, Any] | None:
    """The model's output message, in the shapes LangSmith records."""
    if not isinstance(outputs, dict):
        return None
    generations = outputs.get("generations")
    if isinstance(generations, list) and generations:
        first = generations[0]
        if isinstance(first, list) and first:
            first = first[0]
        if isinstance(first, dict):
            message = first.get("message")
            if isinstance(message, dict):
                kwargs = message.get("kwargs")
                return kwargs if isinstance(kwargs, dict) else message
            return {"content": first.get("text")}
    choices = outputs.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        return message if isinstance(message, dict) else None
    for key in ("output", "message"):
        if isinstance(outputs.get(key), dict):
            return outputs[key]
    return outputs if "tool_calls" in outputs or "content" in outputs else None


def _model(run: dict[str, Any]) -> tuple[str, list[ModelCall], str | None]:
    message = _message_of(run.get("outputs"))
    if message is None:
        return "", [], None
    calls = _openai_calls(message.get("tool_calls"))
    if not calls:
        extra = message.get("additional_kwargs")
        if isinstance(extra, dict):
            calls = _openai_calls(extra.get("tool_calls"))
    content = message.get("content")
    text = content if isinstance(content, str) else as_text(content) if content else ""
    metadata = run.get("extra", {}).get("metadata") if isinstance(run.get("extra"), dict) \
        else None
    model = metadata.get("ls_model_name") if isinstance(metadata, dict) else None
    return text, calls, model if isinstance(model, str) else None


def _tool_input(inputs: Any) -> Any:
    if isinstance(inputs, dict) and set(inputs) == {"input"}:
        return inputs["input"]
    return inputs


def _tool_message(outputs: Any) -> dict[str, Any] | None:
    """A LangChain ``ToolMessage`` the tool returned (serialised, or as a plain dict)."""
    output = outputs.get("output") if isinstance(outputs, dict) else None
    if not isinstance(output, dict):
        return None
    kwargs = output.get("kwargs")
    if isinstance(kwargs, dict) and "content" in kwargs:
        return kwargs
    if output.get("type") == "tool" and "content" in output:
        return output
    return None


def _tool_output(outputs: Any) -> tuple[Any, bool]:
    message = _tool_message(outputs)
    if message is not None:
        return message["content"], True
    if isinstance(outputs, dict):
        if "output" in outputs:
            return outputs["output"], True
        return outputs, bool(outputs)
    return outputs, outputs is not None


def _step(run: dict[str, Any], order: int, origin: Origin) -> Step | None:
    run_type = run.get("run_type")
    trace = run.get("trace_id") or _root_of(run.get("dotted_order")) or run.get("id")
    dotted = run.get("dotted_order")
    start = run.get("start_time")
    common: dict[str, Any] = {
        "trace": str(trace) if trace is not None else "",
        "start": dotted if isinstance(dotted, str) else str(start or ""), "order": order,
        "span": _str(run.get("id")), "parent": _str(run.get("parent_run_id")),
        "origin": origin, "timestamp": iso_timestamp(start) if start is not None else None,
    }
    if run_type == "tool":
        output, has_output = _tool_output(run.get("outputs"))
        error = run.get("error")
        message = _tool_message(run.get("outputs"))
        failed = (isinstance(error, str) and bool(error)) or (
            message is not None and message.get("status") == "error")
        inputs = run.get("inputs")
        call_id = message.get("tool_call_id") if message is not None else None
        if call_id is None and isinstance(inputs, dict):
            call_id = inputs.get("tool_call_id")
        return Step(kind="tool", name=run.get("name"), arguments=_tool_input(inputs),
                    call_id=_str(call_id), output=output, has_output=has_output,
                    is_error=failed, error=error if isinstance(error, str) and error
                    else None, **common)
    if run_type == "llm":
        text, calls, model = _model(run)
        return Step(kind="model", text=text, calls=calls, model=model, **common)
    if common["parent"] is None and run.get("inputs"):
        return Step(kind="input", text=task_text(run["inputs"]), **common)
    return None


def _root_of(dotted: Any) -> str | None:
    """The trace id is the run id in the first segment of ``dotted_order``
    (``<YYYYMMDDTHHMMSSffffff>Z<run id>``)."""
    if not isinstance(dotted, str) or "Z" not in dotted:
        return None
    return dotted.split(".", 1)[0].split("Z", 1)[1] or None


_EXPORT = RecordExport(FORMAT_ID, AGENT, is_run, _step, "LangSmith runs", "runs",
                       "a LangSmith run export is a JSON array of runs")
import_records = _EXPORT.import_records
import_document = _EXPORT.import_document
