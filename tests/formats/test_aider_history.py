"""aider_history: Aider's ``.aider.chat.history.md``.

The real corpus file is counted here by a regex over Aider's own ``> `` lines (not the
importer, not the loader's tally); the fixtures cover Aider's edit formats (SEARCH/REPLACE,
whole file, unified diff), architect mode, refused, failed and dry-run edits, the commands the
model proposes and the ``/run``, ``/test`` and ``!`` the user types, and several runs per file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.cli.test_replay_cli import run_cli
from tests.conftest import CORPUS
from tests.formats._fmt_helpers import load, shape

from loopscope.formats import detect_format, load_file
from loopscope.formats.base import FileImport

FIXTURES = Path(__file__).resolve().parent / "fixtures"
EDITBLOCK = "aider_editblock.aider.chat.history.md"
WHOLE_UDIFF = "aider_whole_udiff.aider.chat.history.md"


def fixture(name: str) -> FileImport:
    return load_file(str(FIXTURES / name))


def corpus_files() -> list[Path]:
    folder = CORPUS / "aider-history"
    if not folder.is_dir():
        pytest.skip(f"corpus folder aider-history not found under {CORPUS}")
    return sorted(folder.glob("*.md"))


def own_count(text: str) -> tuple[int, int]:
    """``(runs, edits applied)`` from the text alone: Aider's run headers and its ``Applied edit
    to`` lines (the corpus file has no commands)."""
    runs = len(re.findall(r"(?m)^# aider chat started at ", text))
    applied = len(re.findall(r"(?m)^> Applied edit to \S", text))
    return runs, applied


def _calls(session: object) -> list[tuple[str, dict[str, object]]]:
    return [(c.name, dict(c.arguments)) for c in session.calls]  # type: ignore[attr-defined]


def _result(session: object, n: int) -> tuple[str | None, bool | None]:
    call = session.calls[n]  # type: ignore[attr-defined]
    if call.result is None:
        return None, None
    event = session.events[call.result]  # type: ignore[attr-defined]
    return event.text, event.is_error


def test_corpus_file_imports_every_edit() -> None:
    for path in corpus_files():
        runs, applied = own_count(path.read_text(encoding="utf-8"))
        result = load_file(str(path))
        assert result.detection.format == "aider_history"
        assert len(result.sessions) == runs
        calls = [c for s in result.sessions for c in s.calls]
        assert len(calls) == applied
        assert (result.calls_seen, result.calls_imported) == (applied, applied)
        assert not [p for p in result.problems if p.severity != "info"], [
            p.text() for p in result.problems]
        for session in result.sessions:
            assert session.agent.name == "Aider" and session.agent.version
            for n, call in enumerate(session.calls):
                text, error = _result(session, n)
                assert call.name == "edit" and call.arguments["path"]
                assert text == f"Applied edit to {call.arguments['path']}" and error is False
        if path.name.startswith("doc_processor"):
            (session,) = result.sessions
            # SOURCES.md: task.md, doc_processor.py (x4, the last three in a row), requirements
            assert [c.arguments["path"] for c in session.calls] == [
                "task.md", "requirements.txt", "doc_processor.py", "doc_processor.py",
                "doc_processor.py", "doc_processor.py"]
            assert session.metadata["edit_format"] == "whole"
            assert session.started_at == "2025-05-23T16:51:58"
            # /ask X is followed by X again in the log: one user message
            users = [e.text for e in session.events if e.kind == "user"]
            assert users[0].startswith("/ask can you tell me the steps")
            assert not users[1].startswith("can you tell me the steps")


def test_search_replace_edits_commands_and_runs() -> None:
    result = fixture(EDITBLOCK)
    assert result.detection.format == "aider_history"
    first, second = result.sessions
    assert [s.source.rsplit("#", 1)[1] for s in result.sessions] == ["0", "1"]
    calls = _calls(first)
    assert [name for name, _ in calls] == ["edit", "edit", "edit", "run", "edit", "edit", "run",
                                           "test", "run", "run"]
    assert calls[0][1] == {"path": "calc.py", "search": "def divide(a, b):\n    return a / b",
                           "replace": 'def divide(a, b):\n    if b == 0:\n        raise '
                                      'ValueError("zero")\n    return a / b'}
    assert [args["path"] for _, args in calls[:3]] == ["calc.py", "tests/test_calc.py",
                                                       "tests/test_calc.py"]
    assert _result(first, 1) == ("Applied edit to tests/test_calc.py", False)
    # the command the model proposed and Aider ran
    assert calls[3][1] == {"command": "python -m pytest -q"}
    assert (_result(first, 3)[0] or "").startswith("Running python -m pytest -q")
    # a SEARCH block that failed to match: one call, the whole error as its result
    assert calls[4][1]["search"] == '    if b == 0:\n        raise ValueError("zeroo")'
    text, error = _result(first, 4)
    assert error is True and (text or "").startswith("The LLM did not conform")
    assert "SearchReplaceNoExactMatch" in (text or "")
    assert _result(first, 5) == ("Applied edit to calc.py", False)
    # what the user typed: /run, /test, !
    assert calls[6:9] == [("run", {"command": "python -m pytest -q"}),
                          ("test", {"command": "python -m pytest -q tests/test_calc.py"}),
                          ("run", {"command": "git status --short"})]
    assert _result(first, 7) == ("Added 9 lines of output to the chat.", False)
    # a proposed command the user declined
    assert calls[9][1] == {"command": "flake8 calc.py"}
    assert _result(first, 9)[1] is True
    turns = [e for e in first.events if e.kind == "assistant"]
    assert [t.synthetic for t in turns].count(True) == 3  # one per /run, /test, !
    # an /ask answer's code block (after a file name) is no call; the echo is no message
    assert first.events[-1].kind == "assistant" and not first.events[-1].tool_calls
    users = [e.text for e in first.events if e.kind == "user"]
    assert users[-1] == "/ask what does divide return for floats?"
    assert first.metadata["edit_format"] == "diff" and first.agent.version == "0.83.1"
    assert first.models == ("anthropic/claude-sonnet-4-20250514",)
    # the run in between only started and quit: no session, one info
    assert second.started_at == "2025-06-02T09:00:00" and not second.calls
    (idle,) = [p for p in result.problems if p.code == "idle_runs"]
    assert idle.severity == "info" and idle.count == 1
    # Aider's lines: 3 applied, 1 ran, 1 failed format, 1 declined, /run /test !
    assert (result.calls_seen, result.calls_imported) == (9, 10)
    assert not [p for p in result.problems if p.severity != "info"]


def test_whole_architect_and_udiff() -> None:
    result = fixture(WHOLE_UDIFF)
    whole, udiff = result.sessions
    assert _calls(whole) == [
        ("edit", {"path": "hello.py", "content": 'print("hello")'}),
        ("edit", {"path": "hello.py", "content": 'import sys\n\nprint(f"hello {sys.argv[1]}")'}),
        ("edit", {"path": "secrets.txt", "content": "name=world"})]
    assert _result(whole, 2) == ("Skipping edits to secrets.txt", True)
    # the architect's diff for the editor is no call; the editor's reply holds the edits
    assert shape(whole) == ('U A0[edit] R0 U A1("Change `hello.py` so it reads the name from '
                            'the command line:\n\n```diff\n--- a/hello.py\n+++ b/hello.py\n'
                            '@@ -1 +1,3 @@\n-print("hello")\n+import sys\n+\n+print(f"hello '
                            '{sys.argv[1]}")\n```") U A2[edit, edit] R1 R2!')
    assert _calls(udiff) == [
        ("edit", {"path": "calc.py", "diff": "@@ ... @@\n def divide(a, b):\n-    return a / b"
                                             "\n+    return a / b if b else 0"}),
        ("edit", {"path": "calc.py", "diff": "@@ ... @@\n def modulo(a, b):\n-    return a % b"
                                             "\n+    return a % b if b else 0"})]
    assert _result(udiff, 1) == ("Did not apply edit to calc.py (--dry-run)", False)
    assert udiff.metadata["edit_format"] == "udiff" and udiff.models == ("openai/gpt-4-turbo",)
    assert (result.calls_seen, result.calls_imported) == (5, 5)


def test_an_edit_outcome_without_its_block_is_still_a_call(tmp_path: Path) -> None:
    text = ("\n# aider chat started at 2025-01-02 03:04:05\n\n#### fix it  \n\n"
            "Done, see the change above.\n\n> Applied edit to src/app.py  \n")
    result = load(tmp_path, "h.md", text)
    (session,) = result.sessions
    assert _calls(session) == [("edit", {"path": "src/app.py"})]
    assert result.calls_lost == 0


def test_an_empty_prompt_is_no_message(tmp_path: Path) -> None:
    text = ("\n# aider chat started at 2025-01-02 03:04:05\n\n#### <blank>  \n\n"
            "#### hello  \n\nHi.\n\n")
    (session,) = load(tmp_path, "h.md", text).sessions
    assert shape(session) == 'U A0("Hi.")' and session.events[0].text == "hello"


def test_a_command_run_outside_a_reply_is_a_call_of_its_own_turn(tmp_path: Path) -> None:
    text = ("\n# aider chat started at 2025-01-02 03:04:05\n\n#### /lint  \n"
            "> Running flake8 app.py  \n> app.py:3:1: F401 unused import  \n")
    result = load(tmp_path, "h.md", text)
    (session,) = result.sessions
    assert shape(session) == "U A0[run] R0"
    assert session.events[1].synthetic
    assert _result(session, 0) == ("Running flake8 app.py\napp.py:3:1: F401 unused import", False)


@pytest.mark.parametrize("name", [EDITBLOCK, WHOLE_UDIFF])
def test_windows_line_ends_and_a_bom_change_nothing(name: str, tmp_path: Path) -> None:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    target = tmp_path / "crlf.md"
    target.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode("utf-8"))
    again, first = load_file(str(target)), fixture(name)
    assert [s.calls for s in again.sessions] == [s.calls for s in first.sessions]
    assert (again.calls_seen, again.calls_imported) == (first.calls_seen, first.calls_imported)


def test_detected_from_the_content_not_the_name(tmp_path: Path) -> None:
    text = (FIXTURES / EDITBLOCK).read_text(encoding="utf-8")
    target = tmp_path / "log.txt"
    target.write_text(text, encoding="utf-8")
    assert detect_format(target).format == "aider_history"
    # a history whose first run was cut off: the header further down is enough
    cut = tmp_path / "cut.md"
    cut.write_text("#### an earlier message  \n\n" + text, encoding="utf-8")
    assert detect_format(cut).format == "aider_history"
    # "####" headings and quotes alone are no Aider log
    notes = tmp_path / "notes.md"
    notes.write_text("# Sources\n\n#### aider-history/\n> quoted  \n", encoding="utf-8")
    assert detect_format(notes).format is None


def test_replay_end_to_end() -> None:
    code, out, err = run_cli(["replay", str(FIXTURES / EDITBLOCK), "--engine", "openclaw",
                              "--json"])
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert [r["format"] for r in rows] == ["aider_history", "aider_history"]
    assert [len(r["steps"]) for r in rows] == [10, 0]
    assert rows[0]["steps"][3]["tools"] == ["run"]
