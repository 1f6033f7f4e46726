"""opencode sessions — ``opencode_session``.

``opencode export <id>`` writes one JSON object: ``info`` (the session: ``id``, ``title``,
``version``, ``time``) and ``messages``, each ``{info, parts}``. A message's ``info`` has the
``role``, ``time.created``, the ``modelID`` and, for an aborted or failed reply, an ``error``;
its ``parts`` are ``text`` (``synthetic`` ones are what opencode added itself, such as the
files an ``@`` mention read), ``reasoning``, ``tool`` (``tool``, ``callID``, ``state:
{status, input, output | error, time}``), ``step-start`` / ``step-finish`` (one model call
each), ``patch``, ``file`` and others.

One assistant message can hold several steps: a turn is one step (a ``step-start`` opens the
next one), its results follow it. A tool part whose status is ``completed`` has its output as
the result, ``error`` its error; ``pending`` / ``running`` ones were never answered.

opencode 1.2 and later keep every session in one SQLite database
(``~/.local/share/opencode/opencode.db``): tables ``session`` (one row per session), ``message``
and ``part`` (``id``, ``session_id`` / ``message_id``, ``time_created``, and a JSON ``data``
column holding the record without its ids). Pointed at it, the importer makes one session per
``session`` row (``path#n``), opening the database read-only.

Before 1.2, opencode's storage (``~/.local/share/opencode/storage/``) kept the same records apart:
``session/<project>/<id>.json`` (the ``info``), ``message/<session>/<msg>.json`` (a message's
``info``) and ``part/<msg>/<part>.json`` (one part each). Pointed at such a session file, the
importer reads its messages and parts from that storage (ids sort in creation order; the folders are found by the file names, never by a recorded
id).
"""

from __future__ import annotations

import os
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from loopscope.formats._ext_common import CandidateReporter, as_dict, as_str
from loopscope.formats.base import ImportContext
from loopscope.formats.builder import CallDraft, SessionBuilder, TurnDraft, pointer_origin
from loopscope.formats.jsonio import JsonError, parse_line
from loopscope.formats.text import TEXT_JOINER, extract_text, iso_timestamp
from loopscope.model import AgentInfo, Origin, Session, escape_for_display
from loopscope.words import plural

FORMAT_ID = "opencode_session"
AGENT = "opencode"

__all__ = ["DB_TABLES", "FORMAT_ID", "SQLITE_MAGIC", "STORAGE_RECORD", "database_tables",
           "import_document", "import_sqlite", "is_export", "is_storage_record",
           "is_storage_session", "session_from_messages"]

SQLITE_MAGIC = b"SQLite format 3\x00"
DB_TABLES = frozenset({"session", "message", "part"})

STORAGE_RECORD = "opencode_storage_record"
"""The info code of a message or part file of opencode's storage (read with its session)."""

_STEP_PARTS = frozenset({"step-start"})


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def is_export(value: Any) -> bool:
    """``{"info": {...}, "messages": [{"info": {...}, "parts": [...]}, ...]}``."""
    if not isinstance(value, dict) or not isinstance(value.get("info"), dict):
        return False
    messages = value.get("messages")
    if not isinstance(messages, list):
        return False
    head = messages[:50]
    return not head or sum(1 for m in head if isinstance(m, dict)
                           and isinstance(m.get("info"), dict)
                           and isinstance(m.get("parts"), list)) * 2 > len(head)


def is_storage_session(value: Any) -> bool:
    """A session file of opencode's storage: ``{"id": "ses_…", "projectID", "time", …}``."""
    return (isinstance(value, dict) and isinstance(value.get("id"), str)
            and value["id"].startswith("ses_") and "projectID" in value
            and isinstance(value.get("time"), dict) and "messages" not in value)


def is_storage_record(value: Any) -> bool:
    """A message (``{"id": "msg_…", "sessionID", "role"}``) or part (``{"id": "prt_…",
    "messageID", "type"}``) file of opencode's storage."""
    if not isinstance(value, dict) or not isinstance(value.get("id"), str):
        return False
    oid = value["id"]
    return (oid.startswith("msg_") and isinstance(value.get("sessionID"), str)
            and "role" in value) or (oid.startswith("prt_") and "messageID" in value
                                     and "type" in value)


def _error_text(error: Any) -> str | None:
    if not isinstance(error, dict):
        return None
    data = error.get("data")
    message = data.get("message") if isinstance(data, dict) else None
    name = error.get("name") if isinstance(error.get("name"), str) else "error"
    return f"{name}: {message}" if isinstance(message, str) and message else name


def session_from_messages(messages: list[tuple[Any, str]], info: dict[str, Any],
                          ctx: ImportContext, report: CandidateReporter) -> Session:
    """One session from ``(message, pointer)`` pairs, each message ``{info, parts}``."""
    b = SessionBuilder()
    skipped: Counter[str] = Counter()
    models: list[str] = []
    for message, pointer in messages:
        origin = Origin(None, pointer)
        if not isinstance(message, dict):
            skipped["non-object"] += 1
            continue
        meta = as_dict(message.get("info"))
        parts = _as_list(message.get("parts"))
        role = meta.get("role")
        ts = iso_timestamp(as_dict(meta.get("time")).get("created"))
        if role == "user":
            texts = [p for p in parts if isinstance(p, dict) and p.get("type") == "text"]
            own = [p for p in texts if p.get("synthetic") is not True] or texts
            b.user(extract_text(own, TEXT_JOINER), parts, timestamp=ts, origin=origin)
            continue
        if role != "assistant":
            skipped[str(role)[:40]] += 1
            continue
        model = meta.get("modelID")
        if isinstance(model, str):
            models.append(model)
        _assistant(b, parts, meta, pointer, origin, ts, skipped)
    metadata: dict[str, Any] = {}
    for key in ("slug", "directory", "version", "projectID"):
        if isinstance(info.get(key), str):
            metadata[key] = info[key]
    if skipped:
        metadata["skipped"] = dict(skipped)
    title = info.get("title") if isinstance(info.get("title"), str) and info["title"] else None
    version = as_str(info.get("version"))
    sid = as_str(info.get("id")) or ""
    return b.build(id=sid, source=ctx.path, format=FORMAT_ID, title=title,
                   agent=AgentInfo(AGENT, version), models=models, metadata=metadata,
                   report=report)


def _assistant(b: SessionBuilder, parts: list[Any], meta: dict[str, Any], pointer: str,
               origin: Origin, ts: str | None, skipped: Counter[str]) -> None:
    model = as_str(meta.get("modelID"))
    turn: TurnDraft | None = None
    pending: list[tuple[CallDraft, dict[str, Any], int]] = []

    def settle() -> None:
        for draft, part, k in pending:
            state = as_dict(part.get("state"))
            status = state.get("status")
            when = iso_timestamp(as_dict(state.get("time")).get("end"))
            where = pointer_origin(pointer, "parts", k)
            if status == "completed":
                output = state.get("output")
                b.result(part.get("callID"), output, output if isinstance(output, str)
                         else extract_text(output, TEXT_JOINER), structure_call=draft,
                         name=draft.name, timestamp=when, origin=where)
            elif status == "error":
                error = state.get("error")
                b.result(part.get("callID"), error, error if isinstance(error, str)
                         else extract_text(error, TEXT_JOINER), is_error=True,
                         structure_call=draft, name=draft.name, timestamp=when, origin=where)
        pending.clear()

    for k, part in enumerate(parts):
        if not isinstance(part, dict):
            skipped["non-object part"] += 1
            continue
        kind = part.get("type")
        if kind in _STEP_PARTS:
            if turn is not None:
                settle()
                turn = None
            continue
        if kind in ("text", "reasoning", "tool"):
            if turn is None:
                turn = b.assistant("", [], model=model, timestamp=ts, origin=origin)
            turn.content.append(part)
            text = part.get("text")
            if kind == "text" and isinstance(text, str):
                turn.text = turn.text + "\n\n" + text if turn.text else text
            elif kind == "reasoning" and isinstance(text, str) and text:
                turn.thinking = turn.thinking + "\n" + text if turn.thinking else text
            elif kind == "tool":
                state = as_dict(part.get("state"))
                draft = b.call(turn, part.get("tool"), state.get("input"), "value",
                               id=part.get("callID"), origin=origin, element=("parts", k))
                pending.append((draft, part, k))
            continue
        skipped[str(kind)[:40]] += 1
    error = _error_text(meta.get("error"))
    if turn is not None:
        if error is not None:
            turn.error = error
        stop = meta.get("finish")
        if isinstance(stop, str):
            turn.stop_reason = stop
        settle()
    elif error is not None:
        b.other("error", error, meta.get("error"), timestamp=ts, origin=origin)


def import_document(value: Any, ctx: ImportContext) -> Iterator[Session | None]:
    report = CandidateReporter(ctx, None)
    if is_export(value):
        messages = value["messages"]
        yield session_from_messages([(m, f"/messages/{i}") for i, m in enumerate(messages)],
                                    value["info"], ctx, report)
        return
    if is_storage_session(value):
        stored = _from_storage(value, ctx, report)
        if stored is not None:
            yield session_from_messages(stored, value, ctx, report)
        return
    if is_storage_record(value):
        # (A folder scan of the storage meets every message and part file: each is read with
        # its session file, never alone.)
        owner = value.get("sessionID")
        ctx.problem("info", STORAGE_RECORD,
                    "a message or part file of opencode's storage: it is read with its session "
                    "file (session/<project>/"
                    f"{escape_for_display(owner if isinstance(owner, str) else '<id>', 60)}"
                    ".json), not alone")
        return
    ctx.problem("error", "unsupported_variant",
                "an opencode session is an export object (info and messages) or a session "
                "file of opencode's storage")


# ------------------------------------------------------------------------ storage


def _read_json(path: str, ctx: ImportContext, budget: list[int]) -> Any:
    try:
        size = os.path.getsize(path)
        if size > budget[0]:
            return _OVER
        budget[0] -= size
        with open(path, "rb") as handle:
            data = handle.read()
        value, _ = parse_line(data, ctx.limits)
        return value
    except (OSError, JsonError, ValueError, RecursionError):
        return None


_OVER = object()


def _listing(folder: str) -> list[str]:
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json")
                       and not n.startswith("."))
    except OSError:
        return []
    return [os.path.join(folder, n) for n in names]


def storage_root(path: str) -> str | None:
    """The storage folder of a session file at ``<storage>/session/<project>/<id>.json``, by
    its place; ``None`` for a file elsewhere."""
    session_dir = os.path.dirname(os.path.abspath(path))
    if os.path.basename(os.path.dirname(session_dir)) != "session":
        return None
    return os.path.dirname(os.path.dirname(session_dir))


def storage_files(path: str) -> list[str]:
    """The message and part files a storage session file's import reads (those there now)."""
    root = storage_root(path)
    if root is None:
        return []
    sid = os.path.splitext(os.path.basename(path))[0]
    files = _listing(os.path.join(root, "message", sid))
    for message in list(files):
        mid = os.path.splitext(os.path.basename(message))[0]
        files += _listing(os.path.join(root, "part", mid))
    return files


def _from_storage(info: dict[str, Any], ctx: ImportContext,
                  report: CandidateReporter) -> list[tuple[Any, str]] | None:
    """The ``{info, parts}`` messages of a storage session file, read from its storage (the
    folder two levels above ``session/<project>/``), bounded by ``max_document_bytes`` in
    all; ``None`` (with an error) when the storage is not there."""
    root = storage_root(ctx.path)
    if root is None:
        ctx.problem("error", "unsupported_variant",
                    "an opencode session file without its storage: expected it at "
                    "storage/session/<project>/<id>.json (use `opencode export <id>` for a "
                    "file of its own)")
        return None
    # The folders are named by the file names (the storage names each file by its id), never
    # by an id read from a file: a recorded id could hold "../".
    sid = os.path.splitext(os.path.basename(ctx.path))[0]
    message_dir = os.path.join(root, "message", sid)
    budget = [ctx.limits.max_document_bytes]
    messages: list[tuple[Any, str]] = []
    unreadable = 0
    over = False
    for path in _listing(message_dir):
        meta = _read_json(path, ctx, budget)
        if meta is _OVER:
            over = True
            break
        if not isinstance(meta, dict):
            unreadable += 1
            continue
        mid = os.path.splitext(os.path.basename(path))[0]  # (a name, never a path)
        parts: list[Any] = []
        for part_path in _listing(os.path.join(root, "part", mid)):
            part = _read_json(part_path, ctx, budget)
            if part is _OVER:
                over = True
                break
            if part is None:
                unreadable += 1
                continue
            parts.append(part)
        messages.append(({"info": meta, "parts": parts},
                         os.path.relpath(path, root).replace(os.sep, "/")))
        if over:
            break
    if not messages and not os.path.isdir(message_dir):
        ctx.problem("warning", "storage_missing",
                    f"no messages of session {escape_for_display(sid, 60)} under "
                    f"{escape_for_display(os.path.join('message', sid), 120)} next to the "
                    "session file")
    if unreadable:
        report("warning", "storage_unreadable",
               f"{plural(unreadable, 'message or part file')} of this session could not be read; "
               "skipped", count=unreadable)
    if over:
        report("warning", "too_large",
               "the session's message and part files are over the max_document_bytes limit "
               "together; the rest was not read")
    return messages


# ------------------------------------------------------------------------ opencode.db


def _connect(path: str) -> sqlite3.Connection:
    """The database, read-only (never written, never a journal of ours); a database in WAL
    mode whose ``-shm`` file cannot be made is read as it is on disk (``immutable``)."""
    uri = Path(path).absolute().as_uri()
    try:
        connection = sqlite3.connect(f"{uri}?mode=ro", uri=True)
        connection.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
        return connection
    except sqlite3.Error:
        return sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True)


def database_tables(path: str) -> frozenset[str] | str:
    """The table names of an SQLite database, or why it cannot be read."""
    try:
        connection = _connect(path)
        try:
            rows = connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        finally:
            connection.close()
    except (sqlite3.Error, ValueError, OSError) as exc:
        return escape_for_display(str(exc) or type(exc).__name__, 120)
    return frozenset(str(name) for (name,) in rows)


def _column_names(connection: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in connection.execute(f"PRAGMA table_info({table})")}


def _data(text: Any, ctx: ImportContext) -> dict[str, Any] | None:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not isinstance(text, str):
        return None
    try:
        value, _ = parse_line(text.encode("utf-8", "surrogatepass"), ctx.limits)
    except (JsonError, RecursionError, ValueError):
        return None
    return value if isinstance(value, dict) else None


_SESSION_COLUMNS = ("id", "title", "version", "slug", "directory", "project_id", "parent_id")


def import_sqlite(path: str, ctx: ImportContext) -> Iterator[Session | None]:
    """One session per row of the ``session`` table, oldest first (``path#n``). A message or
    part whose ``data`` is no JSON object is skipped and counted in a warning."""
    try:
        connection = _connect(path)
    except (sqlite3.Error, ValueError, OSError) as exc:
        ctx.problem("error", "unreadable", f"cannot open the SQLite database "
                                           f"({escape_for_display(str(exc), 120)})")
        return
    try:
        columns = _column_names(connection, "session")
        wanted = [c for c in _SESSION_COLUMNS if c in columns]
        if "id" not in wanted:
            ctx.problem("error", "unsupported_variant",
                        "an SQLite database whose session table has no id column")
            return
        order = "time_created, id" if "time_created" in columns else "id"
        sessions = connection.execute(
            f"SELECT {', '.join(wanted)} FROM session ORDER BY {order}").fetchall()
        for n, row in enumerate(sessions):
            fields = dict(zip(wanted, row, strict=True))
            report = CandidateReporter(ctx, n)
            try:
                messages = _db_messages(connection, str(fields["id"]), ctx, report)
            except sqlite3.Error as exc:
                report("error", "session_failed", "the session's messages could not be read "
                       f"({escape_for_display(str(exc), 120)})")
                yield None
                continue
            info = {key: value for key, value in (
                ("id", fields.get("id")), ("title", fields.get("title")),
                ("version", fields.get("version")), ("slug", fields.get("slug")),
                ("directory", fields.get("directory")),
                ("projectID", fields.get("project_id")),
                ("parentID", fields.get("parent_id"))) if isinstance(value, str)}
            yield session_from_messages(messages, info, ctx, report)
    except sqlite3.Error as exc:
        ctx.problem("error", "unreadable", "the SQLite database could not be read "
                    f"({escape_for_display(str(exc), 120)}); the sessions read before are kept")
    finally:
        connection.close()


def _db_messages(connection: sqlite3.Connection, sid: str, ctx: ImportContext,
                 report: CandidateReporter) -> list[tuple[Any, str]]:
    """The ``{info, parts}`` messages of one session, in id order (ids sort by creation)."""
    messages: list[tuple[Any, str]] = []
    unreadable = 0
    rows = connection.execute("SELECT id, data FROM message WHERE session_id = ? ORDER BY id",
                              (sid,)).fetchall()
    for mid, data in rows:
        info = _data(data, ctx)
        if info is None:
            unreadable += 1
            continue
        parts: list[Any] = []
        for pid, part_data in connection.execute(
                "SELECT id, data FROM part WHERE message_id = ? ORDER BY id", (mid,)):
            part = _data(part_data, ctx)
            if part is None:
                unreadable += 1
                continue
            parts.append({**part, "id": pid})
        messages.append(({"info": {**info, "id": mid}, "parts": parts}, f"/message/{mid}"))
    if unreadable:
        report("warning", "invalid_record",
               f"{plural(unreadable, 'message or part row')} of this session held no JSON object in "
               "their data column; skipped", count=unreadable)
    return messages
