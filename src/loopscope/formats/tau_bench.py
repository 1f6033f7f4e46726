"""tau-bench results — ``tau_bench``.

A JSON array of task results; each element is one session (``path#n``, ``n`` = array index).
``traj`` is mapped exactly as ``openai_chat`` (``chat_messages`` included). The gold
``info.task.actions`` are never calls: only their names go to ``metadata["gold_actions"]``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from loopscope.formats._ext_common import CandidateReporter, as_dict
from loopscope.formats.base import ImportContext
from loopscope.formats.openai_chat import session_from_messages
from loopscope.model import AgentInfo, Session

FORMAT_ID = "tau_bench"

AGENT = AgentInfo("tau-bench", None)


def _id_part(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str) and value:
        return value
    return None


def _first_line(text: Any) -> str | None:
    if not isinstance(text, str):
        return None
    for line in text.splitlines():
        line = " ".join(line.split())
        if line:
            return line if len(line) <= 80 else line[:80] + "…"
    return None


def _session(element: Any, n: int, ctx: ImportContext) -> Session | None:
    report = CandidateReporter(ctx, n)
    pointer = f"/{n}"
    if not isinstance(element, dict):
        report("error", "session_failed",
               "the task result is not a JSON object; it was skipped", pointer=pointer)
        return None
    traj = element.get("traj")
    if not isinstance(traj, list):
        report("error", "session_failed",
               "the task result has no 'traj' list; it was skipped", pointer=pointer)
        return None
    task_id = _id_part(element.get("task_id"))
    trial = _id_part(element.get("trial"))
    session_id = ""
    if task_id is not None:
        session_id = f"task{task_id}" + (f"-trial{trial}" if trial is not None else "")
    info = as_dict(element.get("info"))
    task = as_dict(info.get("task"))
    metadata: dict[str, Any] = {}
    for key in ("reward", "task_id", "trial"):
        value = element.get(key)
        if key in element and (value is None or isinstance(value, str | int | float | bool)):
            metadata[key] = value
    if "source" in info and isinstance(info["source"], str | int | float | bool | None):
        metadata["source"] = info["source"]
    if isinstance(task.get("user_id"), str):
        metadata["user_id"] = task["user_id"]
    actions = task.get("actions")
    if isinstance(actions, list):
        metadata["gold_actions"] = [
            a["name"] if isinstance(a, dict) and isinstance(a.get("name"), str) else ""
            for a in actions
        ]
    return session_from_messages(
        traj, ctx, id=session_id, candidate=n, pointer_prefix=f"{pointer}/traj",
        format=FORMAT_ID, title=_first_line(task.get("instruction")), agent=AGENT,
        metadata=metadata,
    )


def import_document(value: Any, ctx: ImportContext) -> Iterator[Session | None]:
    if not isinstance(value, list):
        ctx.problem("error", "session_failed", "a tau-bench results file is a JSON array")
        return
    for n, element in enumerate(value):
        yield _session(element, n, ctx)
