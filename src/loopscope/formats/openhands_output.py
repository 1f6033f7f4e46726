"""OpenHands evaluation ``output.jsonl`` — ``openhands_output``.

One instance per line (``path#n``); a single-instance JSON document is accepted too. Each
``history`` is mapped by ``_openhands``; a line the loader skipped keeps its candidate number.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from loopscope.formats._ext_common import CandidateReporter, as_dict
from loopscope.formats._openhands import AGENT_NAME, map_history
from loopscope.formats.base import ImportContext, Record
from loopscope.model import AgentInfo, Session

FORMAT_ID = "openhands_output"

_SUMMARY_LIMIT = 200


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, bool | int | float) or (
        isinstance(value, str) and len(value) <= _SUMMARY_LIMIT)


def _test_result_summary(value: Any) -> Any:
    """Small display form of ``test_result``: its scalar entries, and the other keys' names."""
    if _scalar(value):
        return value
    if isinstance(value, dict):
        summary: dict[str, Any] = {k: v for k, v in value.items() if _scalar(v)}
        others = [k for k, v in value.items() if not _scalar(v)]
        if others:
            summary["other_keys"] = others
        return summary
    return None


def _instance(value: Any, ctx: ImportContext, n: int, line: int | None) -> Session | None:
    report = CandidateReporter(ctx, n)
    if not isinstance(value, dict) or not isinstance(value.get("history"), list):
        report("warning", "invalid_record",
               "the instance has no 'history' list; it was skipped", line=line)
        return None
    history = map_history(value["history"], report, line=line, pointer_prefix="/history")
    instance_id = value.get("instance_id")
    session_id = instance_id if isinstance(instance_id, str) else (
        str(instance_id) if isinstance(instance_id, int) and not isinstance(instance_id, bool)
        else "")
    meta = as_dict(value.get("metadata"))
    agent_class = meta.get("agent_class") if isinstance(meta.get("agent_class"), str) else None
    models: list[str] = []
    llm_config = meta.get("llm_config")
    if isinstance(llm_config, dict) and isinstance(llm_config.get("model"), str):
        models.append(llm_config["model"])
    models.extend(history.models)
    metadata: dict[str, Any] = {}
    if session_id:
        metadata["instance_id"] = session_id
    error = value.get("error")
    if isinstance(error, str):
        metadata["error"] = error
    if agent_class is not None:
        metadata["agent_class"] = agent_class
    if isinstance(meta.get("max_iterations"), int):
        metadata["max_iterations"] = meta["max_iterations"]
    if "test_result" in value:
        metadata["test_result"] = _test_result_summary(value["test_result"])
    if history.skipped:
        metadata["skipped"] = history.skipped
    return history.builder.build(
        id=session_id, source=ctx.path, format=FORMAT_ID, title=session_id or None,
        agent=AgentInfo(AGENT_NAME, agent_class), models=models, metadata=metadata,
        report=report,
    )


def import_records(records: Iterable[Record], ctx: ImportContext) -> Iterator[Session | None]:
    for n, record in ctx.one_candidate_per_line(records, "instance"):
        yield None if record is None else _instance(record.value, ctx, n, record.line)


def import_document(value: Any, ctx: ImportContext) -> Iterator[Session | None]:
    """A single instance object (``{"instance_id", "history": [...]}``)."""
    yield _instance(value, ctx, 0, None)
