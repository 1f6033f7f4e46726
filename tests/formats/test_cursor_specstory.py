"""cursor_specstory: SpecStory's Markdown of Cursor chats (and of other agents, from its CLI).

The real corpus files are counted here by a small regex walk written for this test (not the
importer, not the loader's tally); the fixtures cover every bubble shape SpecStory wrote, one
file each, with exact calls, arguments and results.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from tests.cli.test_replay_cli import run_cli
from tests.conftest import CORPUS
from tests.formats._fmt_helpers import codes, load, shape

from loopscope.formats import detect_format, load_file
from loopscope.formats.base import FileImport

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def fixture(name: str) -> FileImport:
    return load_file(str(FIXTURES / name))


def corpus_files() -> list[Path]:
    folder = CORPUS / "cursor-specstory"
    if not folder.is_dir():
        pytest.skip(f"corpus folder cursor-specstory not found under {CORPUS}")
    return sorted(folder.glob("*.md"))


# --------------------------------------------------------------------------- an own count

_BUBBLE_CALL = re.compile(
    r"\A(?:Read file: (?P<read>\S.*)|### Rule: (?P<rule>\S+)|```(?P<fence>bash|diff)\n"
    r"|<details>\s*<summary>(?P<summary>Listed directory|Searched codebase|Grep search)[ \"])")


def count_bubbles(text: str) -> Counter[str]:
    """Tool bubbles of a 2025-H1 SpecStory file, by kind, from the text alone: the assistant
    parts are cut at ``---`` lines, a bubble is a call when it *starts* with one of the shapes
    above. A rule bubble swallows everything up to its ``---`` (SpecStory cut its fence)."""
    kinds: Counter[str] = Counter()
    assistant = False
    for part in re.split(r"\n---\n", text):
        body = part.strip()
        role = re.match(r"_\*\*(User|Assistant)\*\*_", body)
        if role is not None:
            assistant = role.group(1) == "Assistant"
            body = body[role.end():].strip()
        if not assistant:
            continue
        match = _BUBBLE_CALL.match(body)
        if match is not None:
            kind = next(k for k, v in match.groupdict().items() if v)
            kinds[kind if kind != "summary" else match["summary"]] += 1
    return kinds


def test_own_count_on_a_small_text() -> None:
    text = ("_**User**_\n\nRead file: not-a-call\n\n---\n\n_**Assistant**_\n\nhi\n\n---\n\n"
            "Read file: a.py\n\n---\n\n```bash\nls\n```\n\n---\n\nsee:\n```bash\nls\n```\n")
    assert count_bubbles(text) == Counter({"read": 1, "fence": 1})


def test_corpus_files_import_every_call() -> None:
    for path in corpus_files():
        kinds = count_bubbles(path.read_text(encoding="utf-8"))
        expected = sum(kinds.values())
        result = load_file(str(path))
        assert result.detection.format == "cursor_specstory", path
        (session,) = result.sessions
        assert len(session.calls) == expected, (path.name, kinds)
        assert (result.calls_seen, result.calls_imported) == (expected, expected), path.name
        assert result.calls_lost == 0
        assert not [p for p in result.problems if p.severity != "info"], [
            p.text() for p in result.problems]
        names = Counter(c.name for c in session.calls)
        # SOURCES.md gives these per-kind figures for the two files (read by a person).
        if path.name.startswith("minsky__2025-04-29"):
            assert (names["run_terminal_cmd"], names["codebase_search"], names["read_file"]) \
                == (16, 3, 3)
            runs = [c.arguments["command"] for c in session.calls
                    if c.name == "run_terminal_cmd"]
            assert runs.count("minsky session start --task 008") == 3
        elif path.name.startswith("minsky__2025-04-28"):
            assert (names["run_terminal_cmd"], names["list_dir"] + names["codebase_search"],
                    names["read_file"]) == (6, 5, 5)


def test_corpus_calls_have_arguments_and_results() -> None:
    for path in corpus_files():
        (session,) = load_file(str(path)).sessions
        for call in session.calls:
            assert call.arguments, (path.name, call.name)
            if call.name in ("run_terminal_cmd", "list_dir", "codebase_search", "fetch_rules"):
                assert call.result is not None, (path.name, call.name, call.arguments)
        assert session.agent.name == "Cursor"
        assert session.title and not session.title.startswith("<!--")


# --------------------------------------------------------------------------- the shapes


def _calls(result: FileImport) -> list[tuple[str, dict[str, object]]]:
    (session,) = result.sessions
    return [(c.name, dict(c.arguments)) for c in session.calls]  # type: ignore[arg-type]


def _result_text(result: FileImport, n: int) -> str | None:
    session = result.sessions[0]
    call = session.calls[n]
    return None if call.result is None else session.events[call.result].text


def test_2025_h1_bubbles() -> None:
    result = fixture("specstory_cursor_2025_04.md")
    assert result.detection.format == "cursor_specstory"
    assert [name for name, _ in _calls(result)] == [
        "fetch_rules", "list_dir", "read_file", "codebase_search", "grep_search",
        "run_terminal_cmd", "run_terminal_cmd", "edit_file", "run_terminal_cmd"]
    calls = _calls(result)
    assert calls[0][1] == {"rule_names": ["testing-conventions"]}
    assert calls[1][1] == {"relative_workspace_path": "tests"}
    assert calls[2][1] == {"target_file": "tests/upload.test.ts"}
    assert calls[3][1] == {"query": "where is the upload retry timeout set"}
    assert calls[4][1] == {"query": "RETRY_MS"}
    assert calls[5][1] == calls[6][1] == {"command": "npm test -- upload --repeat 5"}
    assert calls[7][1] == {"diff": "- export const RETRY_MS = 50;\n+ export const RETRY_MS = 200;"}
    assert "FAIL tests/upload.test.ts" in (_result_text(result, 5) or "")
    assert "`upload.test.ts`" in (_result_text(result, 1) or "")
    assert _result_text(result, 2) is None and _result_text(result, 7) is None
    # the command shown in a reply's prose is no call; the two outcomes without a tool name
    # stay text, counted in one info
    (outcomes,) = [p for p in result.problems if p.code == "unnamed_tool_outcomes"]
    assert outcomes.count == 2 and outcomes.severity == "info" and outcomes.line == 83
    assert result.sessions[0].title == "Fix the flaky upload test"
    # the heading's local time dates the chat (SpecStory wrote no other time)
    assert result.sessions[0].started_at == "2025-04-12T09:14:03"
    assert result.sessions[0].metadata["timezone"] == "unknown"
    assert result.calls_seen == result.calls_imported == 9


def test_early_2025_continuation_bubbles() -> None:
    result = fixture("specstory_cursor_2025_early.md")
    assert _calls(result) == [
        ("read_file", {"target_file": "src/App.css"}),
        ("list_dir", {}),
        ("edit_file", {"target_file": "src/App.css", "diff": "@@ -1,3 +1,4 @@\n  .hero {\n-  "
                       " width: 80%;\n+   width: 100%;\n+   margin: 0;\n  }"}),
        ("run_terminal_cmd", {"command": "npm run build"})]
    assert _result_text(result, 3) == "built in 1.2s"
    assert codes(result, "info").count("unnamed_tool_outcomes") == 1
    assert result.sessions[0].title == "Tidy the landing page"
    assert result.sessions[0].started_at == "2025-03-11T20:11:06"


def test_tool_use_line_bubbles() -> None:
    result = fixture("specstory_cursor_2025_10.md")
    (session,) = result.sessions
    assert session.id == "4a1f0c52-7d3e-4b8a-9a61-0c2f5e8d9b10"
    assert session.models == ("claude-4.5-sonnet-thinking",)
    assert session.events[0].timestamp == "2025-10-02T14:05:00Z"
    assert _calls(result) == [
        ("read_file", {"target_file": "/home/dev/wall/wall.js"}),
        ("grep", {"pattern": "requestAnimationFrame", "path": "/home/dev/wall/wall.js"}),
        ("run_terminal_cmd", {"command": "cd /home/dev/wall && node --check wall.js"}),
        ("search_replace", {"target_file": "/home/dev/wall/wall.js",
                            "diff": "@@ -129,5 +129,5 @@\n-   if (avatar.node && running) {\n+"
                                    "   if (avatar.node && this.running) {"}),
        ("run_terminal_cmd", {"command": "cd /home/dev/wall && node --check wall.js"})]
    assert "SyntaxError" in (_result_text(result, 2) or "")
    # thinking that quotes "Tool use:" is thinking, not a call; the empty user bubble is no
    # user message
    assert "Tool use: **read_file**" in session.events[1].thinking
    assert session.events[1].text == "I'll look at the animation code."
    assert shape(session) == ("U A0[read_file] A1[grep] R1 A2[run_terminal_cmd] R2 "
                              "A3[search_replace] A4[run_terminal_cmd] R4 "
                              'A5("Reload the page: the avatars move again.")')


def test_tool_use_tags() -> None:
    result = fixture("specstory_cursor_2025_12.md")
    (session,) = result.sessions
    assert session.id == "9b2e7f10-1c4d-4e55-8f00-3a6b7c8d9e01"
    assert session.models == ("claude-4.5-opus-high-thinking",)
    calls = _calls(result)
    assert [name for name, _ in calls] == ["grep", "read_file", "todo_write", "search_replace",
                                           "delete_file", "run_terminal_cmd", "list_dir"]
    assert calls[0][1] == {"pattern": "loadLegacyConfig"}
    assert calls[3][1]["target_file"] == "/home/dev/app/src/index.ts"
    assert "- import { loadLegacyConfig }" in str(calls[3][1]["diff"])
    assert calls[4][1] == {"explanation": "the legacy loader is unused now"}
    # the summary's HTML escapes are undone; the fence shows the command as run
    assert calls[5][1] == {"command": "cd /home/dev/app && npm test"}
    assert _result_text(result, 5) == "Test Suites: 4 passed, 4 total"
    assert _result_text(result, 6) == "No results found"
    assert "`./test/legacy.test.ts`" in (_result_text(result, 0) or "")
    assert result.sessions[0].metadata["specstory_markdown"] == "2.1.0"


def test_cli_export_of_claude_code() -> None:
    result = fixture("specstory_claude_code_cli.md")
    (session,) = result.sessions
    assert session.agent.name == "Claude Code"
    assert session.id == "0e6c2a4b-5f7d-4c1e-9a2b-8d3f4e5a6b7c"
    assert session.title == "the build is red, poll it until it finishes"
    assert _calls(result) == [
        ("Bash", {"command": "./scripts/build-status.sh"}),
        ("Bash", {"command": "./scripts/build-status.sh"}),
        ("Read", {"file_path": "./build.log"}),
        ("BashOutput", {"bash_id": "b2f8b9"}),
        ("Bash", {"command": "cd /srv/app\nmake link"}),
        ("Edit", {"file_path": "/srv/app/Makefile"}),
        ("Write", {"content": "# Build notes\n\n- the link step needs zlib",
                   "file_path": "/srv/app/BUILD.md"})]
    assert [_result_text(result, n) for n in (0, 3, 4, 6)] == [
        "running", "<status>running</status>", "ld: cannot find -lz",
        "File created successfully at: /srv/app/BUILD.md"]
    # a role heading inside a fence is code; the user's later message is one event
    users = [e.text for e in session.events if e.kind == "user"]
    assert users == ["the build is red, poll it until it finishes", "thanks"]
    assert session.events[1].timestamp == "2026-01-20T10:02:15Z"


def test_plain_chat_says_no_calls_were_recorded() -> None:
    result = fixture("specstory_cursor_plain_chat.md")
    (session,) = result.sessions
    assert session.counts()["calls"] == 0 and session.counts()["turns"] == 2
    (warning,) = [p for p in result.problems if p.severity == "warning"]
    assert warning.code == "no_tool_calls_recorded"
    assert "records no tool calls" in warning.message and "SpecStory" in warning.message
    assert "loop guards see only the replies" in warning.message
    assert warning in session.problems


def test_a_variant_the_importer_misses_is_reported(tmp_path: Path) -> None:
    """The loader's counter is deliberately lenient: a search bubble of a kind the importer
    does not know is counted, so its loss is a warning, not silence."""
    text = (FIXTURES / "specstory_cursor_2025_04.md").read_text(encoding="utf-8")
    text = text.replace('<summary>Grep search for "RETRY_MS"', '<summary>Searched symbols "RETRY_MS"')
    result = load(tmp_path, "odd.md", text)
    assert result.calls_seen == 9 and result.calls_imported == 8
    (lost,) = [p for p in result.problems if p.code == "calls_not_imported"]
    assert lost.severity == "warning" and "1 of the 9" in lost.message


@pytest.mark.parametrize("name", ["specstory_cursor_2025_04.md", "specstory_cursor_2025_12.md"])
def test_windows_line_ends_and_a_bom_change_nothing(name: str, tmp_path: Path) -> None:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    target = tmp_path / "crlf.md"
    target.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode("utf-8"))
    again, first = load_file(str(target)), fixture(name)
    assert [s.calls for s in again.sessions] == [s.calls for s in first.sessions]
    assert (again.calls_seen, again.calls_imported) == (first.calls_seen, first.calls_imported)


# --------------------------------------------------------------------------- detection


def test_detected_from_the_content_not_the_name(tmp_path: Path) -> None:
    for name in ("specstory_cursor_2025_04.md", "specstory_cursor_2025_early.md",
                 "specstory_claude_code_cli.md"):
        text = (FIXTURES / name).read_text(encoding="utf-8")
        target = tmp_path / "session.txt"
        target.write_text(text, encoding="utf-8")
        assert detect_format(target).format == "cursor_specstory", name
    # without the header comment: the role headings are enough
    bare = (FIXTURES / "specstory_cursor_plain_chat.md").read_text(encoding="utf-8")
    target = tmp_path / "chat.md"
    target.write_text(bare.split("\n", 2)[2], encoding="utf-8")
    assert detect_format(target).format == "cursor_specstory"
    # a Markdown note that mentions SpecStory and its headings inline is no export
    note = tmp_path / "notes.md"
    note.write_text("# Notes\n\nSpecStory writes `_**User**_` and `_**Assistant**_`.\n",
                    encoding="utf-8")
    assert detect_format(note).format is None


def test_replay_end_to_end() -> None:
    code, out, err = run_cli(["replay", str(FIXTURES / "specstory_claude_code_cli.md"),
                              "--engine", "openclaw", "--json"])
    assert code == 0, err
    (row,) = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert row["format"] == "cursor_specstory"
    assert row["session"] == "0e6c2a4b-5f7d-4c1e-9a2b-8d3f4e5a6b7c"
    assert [s["tools"] for s in row["steps"]] == [["Bash"], ["Bash"], ["Read"], ["BashOutput"],
                                                 ["Bash"], ["Edit"], ["Write"]]
    # the two identical polls: the same signature, as the guards compare them
    assert row["steps"][0]["signature"] == row["steps"][1]["signature"]
