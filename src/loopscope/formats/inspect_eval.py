"""inspect_ai eval logs — ``inspect_eval``.

A JSON log ``{"version", "status", "eval", "samples": [...]}``: each sample is one session
(``path#n``). A ``.eval`` file is a zip with ``header.json`` and ``samples/*.json`` (one sample
each, read through :mod:`loopscope.formats.archive`: bounded member count, inflated bytes per
member and in total, and compression ratio). ``attachment://<hash>`` strings are resolved from the sample's
``attachments``; ``events`` repeat the calls and are not imported.
"""

from __future__ import annotations

import dataclasses
import zipfile
from collections.abc import Iterator
from typing import Any

from loopscope.formats import jsonio
from loopscope.formats._ext_common import CandidateReporter, as_dict, as_str, extract_text
from loopscope.formats.archive import ArchiveError, BoundedArchive, open_archive
from loopscope.formats.base import ImportContext
from loopscope.formats.builder import SessionBuilder
from loopscope.model import AgentInfo, AssistantTurn, Origin, Session, escape_for_display
from loopscope.words import plural

FORMAT_ID = "inspect_eval"

_ATTACHMENT = "attachment://"
_MAX_RESOLVE_DEPTH = 400


class _Resolver:
    def __init__(self, attachments: Any, report: CandidateReporter):
        self.attachments = attachments if isinstance(attachments, dict) else {}
        self.report = report
        self.unresolved = 0
        self.first: str | None = None

    def __call__(self, value: Any, depth: int = 0) -> Any:
        if isinstance(value, str):
            if value.startswith(_ATTACHMENT):
                key = value[len(_ATTACHMENT):]
                resolved = self.attachments.get(key)
                if isinstance(resolved, str):
                    return resolved
                self.unresolved += 1
                self.first = self.first or key
            return value
        if depth > _MAX_RESOLVE_DEPTH:
            return value
        if isinstance(value, list):
            return [self(v, depth + 1) for v in value]
        if isinstance(value, dict):
            return {k: self(v, depth + 1) for k, v in value.items()}
        return value


def _thinking(content: Any) -> str:
    if not isinstance(content, list):
        return ""
    parts = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "reasoning":
            text = part.get("reasoning")
            if isinstance(text, str) and text and not part.get("redacted"):
                parts.append(text)
    return "\n".join(parts)


def _id_text(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value) if isinstance(value, int | float | str) else ""


def _scores_summary(scores: Any) -> Any:
    if not isinstance(scores, dict):
        return None
    summary: dict[str, Any] = {}
    for name, score in scores.items():
        if isinstance(score, dict) and "value" in score:
            value = score["value"]
            if value is None or isinstance(value, str | int | float | bool):
                summary[name] = value
            elif isinstance(value, dict):
                summary[name] = {k: v for k, v in value.items()
                                 if v is None or isinstance(v, str | int | float | bool)}
    return summary


def sample_session(sample: Any, header: dict[str, Any], ctx: ImportContext, n: int,
                   pointer_prefix: str) -> Session | None:
    report = CandidateReporter(ctx, n)
    if not isinstance(sample, dict) or not isinstance(sample.get("messages"), list):
        report("error", "session_failed", "the sample has no 'messages' list; it was skipped",
               pointer=pointer_prefix)
        return None
    eval_info = as_dict(header.get("eval"))
    task = as_str(eval_info.get("task")) or ""
    resolve = _Resolver(sample.get("attachments"), report)
    b = SessionBuilder()
    parse_errors: dict[tuple[int, int], str] = {}  # (turn number, position) -> parse_error
    turn_number = 0
    for i, raw_message in enumerate(sample["messages"]):
        origin = Origin(pointer=f"{pointer_prefix}/messages/{i}")
        message = resolve(raw_message)
        if not isinstance(message, dict):
            report.once("<non-object>", "info", "unknown_role",
                        "a message is not an object; it was kept as an 'other' event",
                        pointer=origin.pointer)
            b.other(None, "", message, origin=origin)
            continue
        role = message.get("role")
        content = message.get("content")
        if role == "system":
            b.system(extract_text(content, "\n"), content, origin=origin)
        elif role == "user":
            b.user(extract_text(content, "\n"), content, origin=origin)
        elif role == "assistant":
            turn = b.assistant(extract_text(content, ""), content, thinking=_thinking(content),
                               model=as_str(message.get("model")),
                               stop_reason=as_str(message.get("stop_reason")), origin=origin)
            tool_calls = message.get("tool_calls")
            if isinstance(tool_calls, list):
                for k, tc in enumerate(tool_calls):
                    call_origin = Origin(pointer=f"{origin.pointer}/tool_calls/{k}")
                    if not isinstance(tc, dict):
                        report("warning", "malformed_tool_call",
                               "a tool_calls element is not an object; it was kept as a call "
                               "without name or arguments", pointer=call_origin.pointer)
                        b.call(turn, "", None, "value", origin=call_origin)
                        continue
                    b.call(turn, tc.get("function"), tc.get("arguments"), "value",
                           id=tc.get("id"), origin=call_origin)
                    if isinstance(tc.get("parse_error"), str):
                        parse_errors[(turn_number, k)] = tc["parse_error"]
            elif tool_calls is not None:
                report.once("tool_calls", "info", "malformed_tool_calls",
                            "an assistant message has 'tool_calls' that is not a list; no calls",
                            pointer=origin.pointer)
            turn_number += 1
        elif role == "tool":
            error = message.get("error")
            meta: dict[str, Any] = {}
            if isinstance(error, dict) and isinstance(error.get("type"), str):
                meta["error_type"] = error["type"]
            b.result(message.get("tool_call_id"), content, extract_text(content, "\n"),
                     is_error=error is not None, meta=meta, name=as_str(message.get("function")),
                     origin=origin)
        else:
            shown = role if isinstance(role, str) else None
            report.once(str(role), "info", "unknown_role",
                        f"message role {str(role)[:40]!r} is not an inspect role; "
                        "it was kept as an 'other' event", pointer=origin.pointer)
            b.other(shown, extract_text(content, "\n"), content, origin=origin)
    if resolve.unresolved:
        report("info", "unresolved_attachment",
               f"{plural(resolve.unresolved, 'attachment reference is', 'attachment references are')}"
               " not in the sample's "
               f"attachments (first: {str(resolve.first)[:60]!r}); they were left as they are",
               pointer=pointer_prefix, count=resolve.unresolved)
    sample_id = _id_text(sample.get("id"))
    epoch = _id_text(sample.get("epoch"))
    session_id = f"{task}:{sample_id}:{epoch}"
    models: list[str] = []
    if isinstance(eval_info.get("model"), str):
        models.append(eval_info["model"])
    metadata: dict[str, Any] = {"task": task, "sample_id": sample_id, "epoch": epoch}
    status = header.get("status")
    if isinstance(status, str):
        metadata["status"] = status
    scores = _scores_summary(sample.get("scores"))
    if scores:
        metadata["scores"] = scores
    if sample.get("error") is not None:
        error = sample["error"]
        metadata["error"] = error.get("message") if isinstance(error, dict) else error
    session = b.build(id=session_id, source=ctx.path, format=FORMAT_ID,
                      title=f"{task} {sample_id}".strip() or None,
                      agent=AgentInfo("inspect_ai", task or None), models=models,
                      metadata=metadata, report=report)
    if parse_errors:
        session = _with_parse_errors(session, parse_errors)
    return session


def _with_parse_errors(session: Session, errors: dict[tuple[int, int], str]) -> Session:
    """Set ``arguments_error`` from inspect's ``parse_error`` (the builder has no such input)."""
    events = list(session.events)
    for i, event in enumerate(events):
        if isinstance(event, AssistantTurn) and any((event.turn, c.position) in errors
                                                    for c in event.tool_calls):
            calls = tuple(
                dataclasses.replace(c, arguments_error=errors[(event.turn, c.position)])
                if (event.turn, c.position) in errors else c
                for c in event.tool_calls)
            events[i] = dataclasses.replace(event, tool_calls=calls)
    return dataclasses.replace(session, events=tuple(events))


def _header_only(value: dict[str, Any]) -> bool:
    return "samples" not in value or value.get("samples") is None


def import_document(value: Any, ctx: ImportContext) -> Iterator[Session | None]:
    if not isinstance(value, dict):
        ctx.problem("error", "session_failed", "an inspect log is a JSON object")
        return
    samples = value.get("samples")
    if _header_only(value) or (isinstance(samples, list) and not samples):
        return  # a header-only log: the loader reports no_sessions
    if not isinstance(samples, list):
        ctx.problem("error", "session_failed", "the inspect log's 'samples' is not a list")
        return
    for n, sample in enumerate(samples):
        yield sample_session(sample, value, ctx, n, f"/samples/{n}")


# --------------------------------------------------------------------------- .eval zip


def _parse_member(archive: BoundedArchive, info: zipfile.ZipInfo, ctx: ImportContext,
                  truncated: list[str]) -> Any:
    """Inflate one member within the archive's bounds and parse it the way a plain JSON
    document is parsed (depth, number and string-length rules). Raises ``ArchiveError`` or
    ``jsonio.JsonError``."""
    data = archive.read(info)
    return jsonio.read_document(data, ctx.limits, truncated.append)


def import_zip(path: str, ctx: ImportContext) -> Iterator[Session | None]:
    """A ``.eval`` log: ``header.json`` plus one ``samples/<id>_epoch_<n>.json`` per sample.

    The archive is read through :mod:`loopscope.formats.archive`: a member over its limits is
    reported by name and skipped; once the archive as a whole inflates past
    ``max_archive_bytes`` the samples not read yet are reported in one problem."""
    try:
        archive = open_archive(path, ctx.limits)
    except ArchiveError as exc:
        ctx.problem("error", exc.code, exc.message)
        return
    with archive:
        infos = archive.members()
        header: dict[str, Any] = {}
        header_info = next((i for i in infos if i.filename == "header.json"), None)
        truncated: list[str] = []
        if header_info is not None:
            try:
                parsed = _parse_member(archive, header_info, ctx, truncated)
            except (ArchiveError, jsonio.JsonError) as exc:
                ctx.problem("warning", "invalid_record",
                            f"header.json in the archive cannot be read ({_reason(exc)}); "
                            "samples are read without it")
                parsed = None
            if isinstance(parsed, dict):
                header = parsed
        members = [i for i in infos
                   if i.filename.startswith("samples/") and i.filename.endswith(".json")]
        for n, info in enumerate(members):
            name = escape_for_display(info.filename, 120)
            try:
                sample = _parse_member(archive, info, ctx, truncated)
            except ArchiveError as exc:
                ctx.problem("error", exc.code, exc.message, candidate=n)
                yield None
                if exc.limit == "max_archive_bytes":
                    _report_unread(ctx, members, n + 1)
                    return
                continue
            except jsonio.JsonError as exc:
                ctx.problem("error", "session_failed",
                            f"sample {name} is not valid JSON ({_reason(exc)}); it was skipped",
                            candidate=n)
                yield None
                continue
            yield sample_session(sample, header, ctx, n, f"/{info.filename}")
        if truncated:
            ctx.problem("info", "value_truncated",
                        f"{plural(len(truncated), 'string value')} longer than "
                        f"{ctx.limits.max_value_chars:,} characters (max_value_chars) "
                        f"{'was' if len(truncated) == 1 else 'were'} "
                        "replaced by a head and a sha256 digest")


def _reason(exc: Exception) -> str:
    if isinstance(exc, ArchiveError):
        return exc.message
    if isinstance(exc, jsonio.JsonError):
        return escape_for_display(exc.detail + exc.where(), 160)
    return escape_for_display(str(exc), 160)


def _report_unread(ctx: ImportContext, members: list[zipfile.ZipInfo], first: int) -> None:
    left = len(members) - first
    if left > 0:
        ctx.problem("error", "too_large",
                    f"{plural(left, 'more sample')} of the archive "
                    f"{'was' if left == 1 else 'were'} not read (max_archive_bytes), "
                    f"from {escape_for_display(members[first].filename, 120)} on", count=left)
