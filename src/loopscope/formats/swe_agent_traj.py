"""SWE-agent ``.traj`` — ``swe_agent_traj``.

One JSON object, one session. ``history[0]`` (system) and the task (the first non-demonstration
user message) open the session; then every ``trajectory`` step is one assistant turn with one
text-command call (name = first word, arguments = the rest, never JSON-parsed) and its
observation, paired by structure under a synthesized id ``ls-<index>``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from loopscope.formats._ext_common import CandidateReporter, as_dict, extract_text, is_true
from loopscope.formats.base import ImportContext
from loopscope.formats.builder import SessionBuilder
from loopscope.model import AgentInfo, Origin, Session
from loopscope.words import plural

FORMAT_ID = "swe_agent_traj"

AGENT = AgentInfo("SWE-agent", None)


def split_action(action: str) -> tuple[str, str]:
    """``(name, arguments)`` of a text command: the first word, and the rest with the spaces and
    tabs right after the name removed."""
    stripped = action.strip()
    for i, ch in enumerate(stripped):
        if ch.isspace():
            return stripped[:i], stripped[i:].lstrip(" \t")
    return stripped, ""


def _is_demo(message: dict[str, Any]) -> bool:
    return is_true(message.get("is_demo")) or message.get("message_type") == "demonstration"


def _first_line(text: str) -> str | None:
    for line in text.split("\n"):
        collapsed = " ".join(line.split())
        if collapsed:
            return collapsed if len(collapsed) <= 80 else collapsed[:80] + "…"
    return None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else extract_text(value, "\n")


def import_document(value: Any, ctx: ImportContext) -> Iterator[Session | None]:
    attempts = value.get("attempts") if isinstance(value, dict) else None
    if isinstance(attempts, list) and attempts:
        # SWE-agent's retry agent saves every attempt, each a whole trajectory, and copies the
        # chosen one to the top level: one session per attempt, the copy is not read twice.
        best = as_dict(value.get("info")).get("best_attempt_idx")
        top = value.get("trajectory")
        if isinstance(top, list):
            calls = 0
            for k, step in enumerate(top):
                if isinstance(step, dict) and isinstance(step.get("action"), str) \
                        and step["action"].strip():
                    calls += 1
                    ctx.set_aside_calls("copy of the chosen attempt",
                                        pointer=f"/trajectory/{k}")
            if calls:
                ctx.problem("info", "duplicates_skipped",
                            f"the top-level trajectory copies attempt {best}; its "
                            f"{plural(calls, 'call is', 'calls are')} read once, from the "
                            "attempt", count=calls)
        for n, attempt in enumerate(attempts):
            yield _session(attempt, ctx, n, f"/attempts/{n}",
                           {"attempt": n, **({"chosen": n == best}
                                             if isinstance(best, int) else {})})
        return
    yield _session(value, ctx, None, "", {})


def _session(value: Any, ctx: ImportContext, candidate: int | None, prefix: str,
             extra: dict[str, Any]) -> Session | None:
    report = CandidateReporter(ctx, 0 if candidate is None else candidate)
    if not isinstance(value, dict) or not isinstance(value.get("trajectory"), list):
        report("error", "session_failed", "a .traj file is an object with a 'trajectory' list",
               pointer=prefix or None)
        return None
    b = SessionBuilder()
    history = value.get("history")
    title: str | None = None
    if isinstance(history, list):
        if history and isinstance(history[0], dict) and history[0].get("role") == "system":
            content = history[0].get("content")
            b.system(_text(content), content, origin=Origin(pointer=f"{prefix}/history/0"))
        for i, message in enumerate(history):
            if (isinstance(message, dict) and message.get("role") == "user"
                    and not _is_demo(message)):
                content = message.get("content")
                text = _text(content)
                b.user(text, content, origin=Origin(pointer=f"{prefix}/history/{i}"))
                title = _first_line(text)
                break
    for k, step in enumerate(value["trajectory"]):
        origin = Origin(pointer=f"{prefix}/trajectory/{k}")
        if not isinstance(step, dict):
            report("warning", "invalid_record",
                   "a trajectory step is not an object; it was skipped", pointer=origin.pointer)
            continue
        thought = step.get("thought")
        turn = b.assistant(thought if isinstance(thought, str) else "", step.get("response"),
                           origin=origin)
        action = step.get("action")
        if not isinstance(action, str) or not action.strip():
            continue  # a blank action: a prose turn, no call, no result
        name, arguments = split_action(action)
        synthetic = f"ls-{b.call_count}"
        draft = b.call(turn, name, arguments, "free_text", id=synthetic, id_synthetic=True,
                       origin=origin)
        observation = step.get("observation")
        meta: dict[str, Any] = {}
        if "state" in step and step["state"] is not None:
            meta["state"] = step["state"]
        execution_time = step.get("execution_time")
        if isinstance(execution_time, int | float) and not isinstance(execution_time, bool):
            meta["execution_time"] = execution_time
        b.result(synthetic, observation, _text(observation), meta=meta, structure_call=draft,
                 origin=origin)
    metadata: dict[str, Any] = {}
    info = as_dict(value.get("info"))
    if isinstance(info.get("exit_status"), str):
        metadata["exit_status"] = info["exit_status"]
    stats = info.get("model_stats")
    if isinstance(stats, dict):
        for key in ("api_calls", "instance_cost"):
            if isinstance(stats.get(key), int | float) and not isinstance(stats.get(key), bool):
                metadata[key] = stats[key]
    if isinstance(value.get("environment"), str):
        metadata["environment"] = value["environment"]
    metadata.update(extra)
    return b.build(id="", source=ctx.path, format=FORMAT_ID, title=title, agent=AGENT,
                   metadata=metadata, report=report)

