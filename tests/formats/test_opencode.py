"""opencode_session and opencode_markdown: ``opencode export`` JSON (the corpus files), a
session file of opencode's storage (its messages and parts read from the storage, the storage
folder scanned without a warning per file), and the ``/export`` Markdown transcript.

The corpus files are counted by :func:`tool_parts_by_hand`, a reading of the export of its own;
the fixtures are under ``fixtures/opencode/`` (see their README).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.conftest import CORPUS

from loopscope.cache import file_stamp
from loopscope.cli import main
from loopscope.formats import detect_format, load_file, load_paths
from loopscope.model import Session, ToolResult

FIXTURES = Path(__file__).parent / "fixtures" / "opencode"
STORAGE = FIXTURES / "storage"
SESSION_FILE = STORAGE / "session" / "prj0001" / "ses_4f1a2b3c4ffeAbCdEfGhIjKlMn.json"
EXPORTS = {
    "opencode-export/dark-factory__session__neon-river__ses_39b623ce7ffeILPe9UgDcyGicH.json":
        (15, 15),
    "opencode-export/dark-factory__session__silent-nebula__ses_39b2e52e8ffeokU5mBDCeUvc8t.json":
        (25, 24),
}


def tool_parts_by_hand(export: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(tool, callID, status)`` of every tool part of the assistant messages, in order."""
    return [(part["tool"], part["callID"], part["state"]["status"])
            for message in export["messages"] if message["info"]["role"] == "assistant"
            for part in message["parts"] if part["type"] == "tool"]


def _result(session: Session, n: int) -> ToolResult | None:
    call = session.calls[n]
    return None if call.result is None else session.events[call.result]  # type: ignore[return-value]


# --------------------------------------------------------------------------- export JSON


@pytest.mark.corpus
@pytest.mark.parametrize("relative", sorted(EXPORTS))
def test_the_real_exports_import_every_tool_part(relative: str) -> None:
    path = CORPUS / relative
    if not path.is_file():
        pytest.skip(f"corpus file {relative} not found under {CORPUS}")
    export = json.loads(path.read_text(encoding="utf-8"))
    parts = tool_parts_by_hand(export)
    assert (len(parts), sum(1 for p in parts if p[2] in ("completed", "error"))) == \
        EXPORTS[relative]
    result = load_file(str(path))
    assert result.detection.format == "opencode_session"
    (session,) = result.sessions
    assert (result.calls_seen, result.calls_imported) == (len(parts), len(parts))
    assert [(c.name, c.id) for c in session.calls] == [(p[0], p[1]) for p in parts]
    answered = [c.result is not None for c in session.calls]
    assert answered == [p[2] in ("completed", "error") for p in parts]
    assert session.id == export["info"]["id"] and session.title == export["info"]["title"]
    assert session.agent.name == "opencode" and session.agent.version == "1.2.5"
    first = session.calls[0]
    assert first.arguments == next(p["state"]["input"] for m in export["messages"]
                                   for p in m["parts"] if p["type"] == "tool")


@pytest.mark.corpus
def test_an_aborted_reply_is_an_error_event_not_a_turn() -> None:
    relative = next(iter(sorted(EXPORTS)))
    path = CORPUS / relative
    if not path.is_file():
        pytest.skip(f"corpus file {relative} not found under {CORPUS}")
    session = load_file(str(path)).sessions[0]
    errors = [e for e in session.events if e.kind == "other"]
    assert errors and errors[0].text.startswith("MessageAbortedError")


# --------------------------------------------------------------------------- storage


def test_a_storage_session_file_reads_its_messages_and_parts() -> None:
    result = load_file(str(SESSION_FILE))
    assert result.detection.format == "opencode_session"
    (session,) = result.sessions
    assert [(c.name, c.id) for c in session.calls] == [
        ("bash", "toolu_b1"), ("read", "toolu_b2"), ("bash", "toolu_b3")]
    assert [c.turn for c in session.calls] == [0, 1, 2]  # one turn per step
    ok, failed = _result(session, 0), _result(session, 1)
    assert ok is not None and ok.text == "1 failed, 3 passed"
    assert failed is not None and failed.is_error and failed.text.startswith("File not found")
    assert session.calls[2].result is None  # still running
    assert session.title == "Fix the calc tests"
    assert session.turns[0].thinking == "Run them first."
    # (the calls live in other files: not counted in this one)
    assert result.calls_seen is None and result.calls_imported == 3


def test_the_storage_folder_gives_its_sessions_and_no_warning_per_file() -> None:
    report = load_paths([str(STORAGE)])
    assert [s.id for s in report.sessions] == ["ses_4f1a2b3c4ffeAbCdEfGhIjKlMn"]
    assert len(report.files) == 15
    problems = {(p.severity, p.code) for p in report.problems}
    assert problems == {("info", "opencode_storage_record"), ("info", "unanswered_calls")}


def test_a_session_file_version_includes_its_messages_and_parts(tmp_path: Path) -> None:
    """(The cache keys a file on its version: a storage session's import reads its message and
    part files, so their versions are part of it.)"""
    storage = tmp_path / "storage"
    shutil.copytree(STORAGE, storage)
    session = storage / SESSION_FILE.relative_to(STORAGE)
    before = file_stamp(str(session))
    assert file_stamp(str(session)) == before
    part = next((storage / "part").glob("msg_b0003/*.json"))
    part.write_text(part.read_text().replace('"running"', '"completed"'))
    assert file_stamp(str(session)) != before


def test_a_session_file_outside_a_storage_is_an_error(tmp_path: Path) -> None:
    shutil.copy(SESSION_FILE, tmp_path / "ses.json")
    result = load_file(str(tmp_path / "ses.json"))
    assert not result.sessions
    assert [(p.severity, p.code) for p in result.problems] == [("error", "unsupported_variant")]
    assert "opencode export" in result.problems[0].message


# --------------------------------------------------------------------------- Markdown


def test_the_markdown_transcript_gives_the_same_calls_as_the_storage() -> None:
    result = load_file(str(FIXTURES / "export.md"))
    assert result.detection.format == "opencode_markdown"
    (session,) = result.sessions
    stored = load_file(str(SESSION_FILE)).sessions[0]
    assert session.id == stored.id and session.title == stored.title
    assert (result.calls_seen, result.calls_imported) == (5, 5)
    assert [c.name for c in session.calls] == ["bash", "read", "read", "bash", "bash"]
    assert session.calls[0].arguments == stored.calls[0].arguments
    assert session.calls[1].arguments == stored.calls[1].arguments
    texts = [r.text if r else None for r in (_result(session, n) for n in range(5))]
    assert texts[:2] == ["1 failed, 3 passed", "File not found: /home/u/calc/calc.pyx"]
    # an output that holds fences of its own ends at the fence before the next part
    assert texts[2] == "# calc\n\nUsage:\n\n```\nadd 1 2\n```\n\nThat is all."
    assert texts[3:] == ["1 failed, 3 passed", None]
    assert _result(session, 1).is_error  # type: ignore[union-attr]
    assert session.turns[0].thinking == "Run them first."
    assert session.turns[1].text == "Running again."
    assert session.models == ("claude-sonnet-4",)


def test_a_transcript_without_tool_details_says_its_calls_lack_arguments() -> None:
    result = load_file(str(FIXTURES / "export_no_details.md"))
    (session,) = result.sessions
    assert (result.calls_seen, result.calls_imported) == (5, 5)
    assert all(c.arguments == {} and c.result is None for c in session.calls)
    warning = [p for p in result.problems if p.severity == "warning"]
    assert [p.code for p in warning] == ["no_tool_details"]


def test_detection_is_by_content(tmp_path: Path) -> None:
    (tmp_path / "notes.txt.md").write_bytes((FIXTURES / "export.md").read_bytes())
    assert detect_format(tmp_path / "notes.txt.md").format == "opencode_markdown"
    other = "# Meeting\n\n**Session ID:** 12\n\nNo conversation here.\n"
    (tmp_path / "other.md").write_text(other)
    assert detect_format(tmp_path / "other.md").format is None


def test_the_cli_replays_a_transcript() -> None:
    result = CliRunner().invoke(main, ["replay", str(FIXTURES / "export.md"), "--engine",
                                       "openclaw", "-v"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "[opencode_markdown, 2 turns, 5 tool calls]" in result.stdout
    assert "opencode_markdown, 1 session, 5 / 5 tool calls" in result.stderr


# --------------------------------------------------------------------------- opencode.db


def _write_db(path: Path, *, second_session: bool = False, bad_part: bool = False) -> None:
    """An ``opencode.db`` (opencode 1.2+) of the storage fixture's session, with the tables of
    opencode's schema (``session.sql.ts``): the records' ids in columns, the rest in ``data``."""
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, parent_id TEXT, "
        "slug TEXT NOT NULL, directory TEXT NOT NULL, title TEXT NOT NULL, "
        "version TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL);"
        "CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, "
        "time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);"
        "CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, "
        "session_id TEXT NOT NULL, time_created INTEGER NOT NULL, "
        "time_updated INTEGER NOT NULL, data TEXT NOT NULL);")
    info = json.loads(SESSION_FILE.read_text())
    sessions = [(info["id"], info["title"], info["time"]["created"])]
    if second_session:  # an older one, with no message
        sessions.append(("ses_0000older", "An older session", 1))
    for sid, title, created in sessions:
        db.execute("INSERT INTO session VALUES (?, ?, NULL, ?, ?, ?, ?, ?, ?)",
                   (sid, info["projectID"], info["slug"], info["directory"], title,
                    info["version"], created, created))
    for message_file in sorted((STORAGE / "message" / info["id"]).glob("*.json")):
        message = json.loads(message_file.read_text())
        mid = message.pop("id")
        message.pop("sessionID")
        db.execute("INSERT INTO message VALUES (?, ?, 0, 0, ?)",
                   (mid, info["id"], json.dumps(message)))
        for part_file in sorted((STORAGE / "part" / mid).glob("*.json")):
            part = json.loads(part_file.read_text())
            pid = part.pop("id")
            part.pop("sessionID")
            part.pop("messageID")
            data = "not json" if bad_part and part["type"] == "reasoning" else json.dumps(part)
            db.execute("INSERT INTO part VALUES (?, ?, ?, 0, 0, ?)", (pid, mid, info["id"], data))
    db.commit()
    db.close()


def test_opencode_db_gives_the_sessions_of_the_storage(tmp_path: Path) -> None:
    path = tmp_path / "opencode.db"
    _write_db(path)
    result = load_file(str(path))
    assert (result.detection.format, result.detection.layout) == ("opencode_session", "sqlite")
    (session,) = result.sessions
    stored = load_file(str(SESSION_FILE)).sessions[0]
    assert session.id == stored.id and session.title == stored.title
    assert [(c.name, c.id, c.arguments) for c in session.calls] == [
        (c.name, c.id, c.arguments) for c in stored.calls]
    assert session.counts() == stored.counts()
    assert session.turns[0].thinking == "Run them first."


def test_opencode_db_sessions_oldest_first_and_bad_rows(tmp_path: Path) -> None:
    path = tmp_path / "opencode.db"
    _write_db(path, second_session=True, bad_part=True)
    before = path.read_bytes()
    result = load_file(str(path))
    assert path.read_bytes() == before  # (read-only: never written)
    # the older session has no message: dropped as empty, its number kept
    assert [s.source for s in result.sessions] == [f"{path}#1"]
    codes = sorted((p.severity, p.code) for p in result.problems)
    assert ("warning", "empty_session") in codes and ("warning", "invalid_record") in codes
    assert result.sessions[0].turns[0].thinking == ""  # (its reasoning row was no JSON)


def test_other_and_damaged_sqlite_files(tmp_path: Path) -> None:
    other = tmp_path / "cache.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE kv (k TEXT, v TEXT)")
    db.commit()
    db.close()
    result = load_file(str(other))
    assert [(p.severity, p.code) for p in result.problems] == [("error", "unknown_format")]
    path = tmp_path / "opencode.db"
    _write_db(path)
    damaged = tmp_path / "damaged.db"
    data = path.read_bytes()
    damaged.write_bytes(data[:4096] + b"\xff" * 512 + data[4608:])
    cut = tmp_path / "cut.db"
    cut.write_bytes(data[: len(data) // 2])
    for broken in (damaged, cut):
        result = load_file(str(broken))
        assert not any(p.code == "internal_error" for p in result.problems)


def test_a_folder_scan_reads_recordings_kept_under_log_like_names(tmp_path: Path) -> None:
    """``opencode.db`` and the OTel console exporter's output saved as ``.txt``/``.log`` are
    read by a folder scan because their content is a recording; other files of those kinds
    (notes, build logs, an unrelated database) stay ignored, without a warning each."""
    from loopscope.formats import load_paths

    _write_db(tmp_path / "opencode.db")
    console = Path(__file__).parent / "fixtures" / "otel_console_python.txt"
    (tmp_path / "spans.log").write_bytes(console.read_bytes())
    (tmp_path / "notes.txt").write_text("Remember to label the loops.\n")
    (tmp_path / "build.log").write_text("compiling...\nerror: E0382\n" * 50)
    other = sqlite3.connect(tmp_path / "other.db")
    other.execute("CREATE TABLE t (x)")
    other.commit()
    other.close()
    report = load_paths([str(tmp_path)])
    read = {Path(f.path).name: f.detection.format for f in report.files}
    assert read == {"opencode.db": "opencode_session", "spans.log": "otel_console"}
    assert report.ignored_files == 3
    assert all(f.sessions and f.calls_imported for f in report.files)
    assert not [p for f in report.files for p in f.problems if p.severity != "info"]
