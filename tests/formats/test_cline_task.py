"""cline_task: Cline / Roo Code task folders — the API history with its results paired, the UI
messages alone, both files of one folder counted once, Roo Code's variant, detection by content.

The corpus file is counted by :func:`ui_calls_by_hand` (a reading of the records of its own,
not the importer's); the fixtures are under ``fixtures/cline_task/`` (see their README).
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.conftest import CORPUS

from loopscope.cli import main
from loopscope.engines import get_engine
from loopscope.formats import ImportLimits, detect_format, load_file, load_paths
from loopscope.model import Session, ToolResult

FIXTURES = Path(__file__).parent / "fixtures" / "cline_task"
UI_CORPUS = "cline-task/mcp-vscode-server__ui_messages.json"

# What the chat panel shows for a call, by hand from Cline's ClineAsk / ClineSay lists.
_BY_HAND = {("ask", "tool"), ("say", "tool"), ("ask", "command"), ("say", "command"),
            ("ask", "use_mcp_server"), ("say", "load_mcp_documentation"),
            ("ask", "plan_mode_respond"), ("say", "completion_result")}


def ui_calls_by_hand(records: list[dict[str, Any]]) -> Counter[str]:
    """The finished call records of a UI file, by kind (a ``partial`` record is a stream that
    was never finished)."""
    found: Counter[str] = Counter()
    for record in records:
        kind = record["type"]
        if (kind, record[kind]) in _BY_HAND and not record.get("partial"):
            found[record[kind]] += 1
    return found


def _only(path: Path | str) -> Session:
    result = load_file(str(path))
    assert not [p for p in result.problems if p.severity != "info"], [
        p.text() for p in result.problems]
    (session,) = result.sessions
    return session


def _result(session: Session, n: int) -> ToolResult | None:
    call = session.calls[n]
    return None if call.result is None else session.events[call.result]  # type: ignore[return-value]


# --------------------------------------------------------------------------- the corpus


@pytest.mark.corpus
def test_the_real_ui_messages_file_imports_every_call() -> None:
    path = CORPUS / UI_CORPUS
    if not path.is_file():
        pytest.skip(f"corpus file {UI_CORPUS} not found under {CORPUS}")
    by_hand = ui_calls_by_hand(json.loads(path.read_text(encoding="utf-8")))
    assert by_hand == {"command": 28, "tool": 24, "use_mcp_server": 3, "completion_result": 3,
                       "load_mcp_documentation": 1, "plan_mode_respond": 1}
    result = load_file(str(path))
    assert result.detection.format == "cline_task"
    (session,) = result.sessions
    assert (result.calls_seen, result.calls_imported) == (sum(by_hand.values()),) * 2
    names = Counter(c.name for c in session.calls)
    assert names["execute_command"] == by_hand["command"]
    assert names["use_mcp_tool"] == by_hand["use_mcp_server"]
    assert names["attempt_completion"] == by_hand["completion_result"]
    assert session.agent.name == "Cline"
    # Every call but the last two completions has the result Cline sent the model next.
    unanswered = [c.name for c in session.calls if c.result is None]
    assert unanswered == ["attempt_completion", "attempt_completion"]
    first = _result(session, 0)
    assert first is not None and first.text.startswith("No files found.")
    mcp = [c for c in session.calls if c.name == "use_mcp_tool"]
    assert all(session.events[c.result].is_error for c in mcp)  # type: ignore[index,union-attr]


# --------------------------------------------------------------------------- the API history


def test_the_api_history_pairs_each_result_with_its_call() -> None:
    session = _only(FIXTURES / "task_both" / "api_conversation_history.json")
    assert session.format == "cline_task"
    assert [c.name for c in session.calls] == [
        "read_file", "replace_in_file", "execute_command", "execute_command", "execute_command",
        "attempt_completion", "write_to_file", "read_file"]
    assert session.calls[2].arguments == {"command": "pytest -q", "requires_approval": "false"}
    # a tag inside a call's body is part of it, never a call of its own
    assert "<read_file>" in session.calls[6].arguments["content"]
    assert session.counts()["unanswered_calls"] == 0
    texts = [r.text for r in (_result(session, n) for n in range(8)) if r is not None]
    assert texts[0] == "def add(a, b):\n    return a - b\n"  # (no task-progress reminder)
    assert texts[2] == "Command executed.\nOutput:\n1 failed, 3 passed"
    last = _result(session, 7)
    assert last is not None and last.is_error and last.text.startswith("Tool [read_file]")
    assert session.title == "Fix the failing test in calc.py"
    assert session.agent.name == "Cline"
    assert session.counts()["user_messages"] == 1  # the environment details are no user turn


def test_native_tool_use_blocks_and_a_text_result_after_one() -> None:
    session = _only(FIXTURES / "task_api_native" / "api_conversation_history.json")
    assert [(c.name, c.id) for c in session.calls] == [
        ("list_files", "toolu_01"), ("read_file", "toolu_02"), ("plan_mode_respond", "toolu_03")]
    first, second = _result(session, 0), _result(session, 1)
    assert first is not None and first.paired_by == "id" and first.text == "a.py\nb.py"
    assert second is not None and second.text == "print(1)"
    assert session.calls[2].result is None
    assert session.turns[2].thinking == "It prints one."


def test_a_task_folder_scan_reads_the_metadata_without_a_warning() -> None:
    report = load_paths([str(FIXTURES / "task_api_native")])
    assert len(report.sessions) == 1
    metadata = next(f for f in report.files if f.path.endswith("task_metadata.json"))
    assert metadata.detection.format == "cline_task" and not metadata.sessions
    assert [(p.severity, p.code) for p in metadata.problems] == [("info", "cline_task_metadata")]


def test_roo_code_variant() -> None:
    session = _only(FIXTURES / "roo_task" / "api_conversation_history.json")
    assert session.agent.name == "Roo Code"
    assert [c.name for c in session.calls] == ["read_file", "apply_diff", "attempt_completion"]
    read = _result(session, 0)  # Roo's read_file header has a sentence after the path
    assert read is not None and read.text.startswith("<files>")
    diff = _result(session, 1)  # one block: header and content together
    assert diff is not None and diff.text.startswith("<file_write_result>")
    assert session.started_at == "2025-01-04T14:13:20.000Z"
    assert session.title == "Rename foo to bar in src/a.ts"


# --------------------------------------------------------------------------- the UI messages


def test_ui_messages_alone_make_the_session(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "task_both" / "ui_messages.json", tmp_path / "ui_messages.json")
    result = load_file(str(tmp_path / "ui_messages.json"))
    (session,) = result.sessions
    assert (result.calls_seen, result.calls_imported) == (7, 7)
    assert [c.name for c in session.calls] == [
        "readFile", "editedExistingFile", "execute_command", "execute_command",
        "execute_command", "attempt_completion", "newFileCreated"]
    assert session.calls[3].arguments == {"command": "pytest -q"}
    assert session.counts()["unanswered_calls"] == 0
    first, third = _result(session, 0), _result(session, 2)
    assert first is not None and first.text == "def add(a, b):\n    return a - b"
    assert third is not None and third.text.endswith("1 failed, 3 passed")
    assert session.counts()["user_messages"] == 2  # the task and the feedback


def test_partial_records_mcp_and_command_output() -> None:
    path = FIXTURES / "task_ui_only" / "ui_messages.json"
    by_hand = ui_calls_by_hand(json.loads(path.read_text()))
    session = _only(path)
    assert len(session.calls) == sum(by_hand.values()) == 4  # (the partial one is no call)
    assert [c.name for c in session.calls] == [
        "use_mcp_tool", "listFilesTopLevel", "execute_command", "execute_command"]
    assert session.calls[0].arguments["serverName"] == "weather"
    assert session.calls[1].arguments == {"path": "."}  # (its listing is the result)
    assert [r.text if r else None for r in (_result(session, n) for n in range(4))] == [
        "12 C, rain", "a.py\nb.py", "a.py\nb.py", None]
    assert session.turns[0].thinking == "I need the weather server."


def test_both_files_of_a_folder_are_one_session() -> None:
    report = load_paths([str(FIXTURES / "task_both")])
    assert len(report.sessions) == 1
    api, ui = report.files
    assert os.path.basename(api.path) == "api_conversation_history.json"
    assert (api.calls_seen, api.calls_imported, api.calls_set_aside) == (8, 8, {})
    assert (ui.calls_seen, ui.calls_imported) == (7, 0)
    assert ui.calls_set_aside == {"covered_by_api_history": 7} and ui.calls_lost == 0
    assert [(p.severity, p.code) for p in ui.problems] == [("info", "covered_by_api_history")]
    assert "api_conversation_history.json" in ui.problems[0].message


def test_an_api_history_too_large_to_read_leaves_the_ui_messages_the_record() -> None:
    folder = FIXTURES / "task_both"
    limit = (folder / "api_conversation_history.json").stat().st_size - 1
    assert (folder / "ui_messages.json").stat().st_size <= limit
    report = load_paths([str(folder)], ImportLimits(max_document_bytes=limit))
    api, ui = report.files
    assert not api.sessions and [p.code for p in api.problems] == ["too_large"]
    assert len(ui.sessions) == 1 and (ui.calls_seen, ui.calls_imported) == (7, 7)


def test_the_cli_replays_the_task_folder_once() -> None:
    result = CliRunner().invoke(main, ["replay", str(FIXTURES / "task_both"), "--engine",
                                       "openclaw", "-v"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stdout.count("[cline_task,") == 1
    assert "1 session replayed" in result.stdout
    assert "8 / 8 tool calls" in result.stderr
    assert "ui_messages.json: cline_task, 0 sessions, 7 / 0 tool calls" in result.stderr


def test_a_cached_ui_file_is_imported_again_when_its_api_history_appears(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache keys a file on its version: a UI file's version includes its task folder's
    API history, which decides whether the UI file holds the task. (A later ``prepare`` of a
    changed folder imports only the files whose version changed.)"""
    monkeypatch.setenv("LOOPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("LOOPSCOPE_CACHE", raising=False)
    tasks = tmp_path / "tasks"
    task = tasks / "1735812000000"
    task.mkdir(parents=True)
    shutil.copy(FIXTURES / "task_both" / "ui_messages.json", task / "ui_messages.json")

    def run(*args: str) -> str:
        result = CliRunner().invoke(main, [*args, str(tasks)], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.stdout

    run("prepare", "--workers", "1")
    assert "1 session replayed" in run("replay", "--engine", "openclaw")
    shutil.copy(FIXTURES / "task_both" / "api_conversation_history.json",
                task / "api_conversation_history.json")
    run("prepare", "--workers", "1")
    out = run("replay", "--engine", "openclaw")
    assert "1 session replayed" in out and "8 tool calls]" in out


# --------------------------------------------------------------------------- a result-aware guard


def _history(results: list[str]) -> list[dict[str, Any]]:
    command = ("<execute_command>\n<command>make poll</command>\n"
               "<requires_approval>false</requires_approval>\n</execute_command>")
    env = {"type": "text", "text": "<environment_details>\n# Current Mode\nACT MODE\n"
                                   "</environment_details>"}
    messages: list[dict[str, Any]] = [{"role": "user", "content": [
        {"type": "text", "text": "<task>\nwait for the build\n</task>"}, env]}]
    for text in results:
        messages.append({"role": "assistant", "content": [{"type": "text", "text": command}]})
        messages.append({"role": "user", "content": [
            {"type": "text", "text": "[execute_command for 'make poll'] Result:"},
            {"type": "text", "text": text}, env]})
    return messages


_SETTINGS = {"openclaw": {"warningThreshold": 2, "criticalThreshold": 4,
                          "globalCircuitBreakerThreshold": 6}}


@pytest.mark.parametrize("engine_name", ["openclaw", "gglib", "openhands"])
@pytest.mark.parametrize("changing", [False, True])
def test_a_result_aware_guard_sees_the_results(tmp_path: Path, engine_name: str,
                                               changing: bool) -> None:
    """Each of these guards stops a call that keeps repeating with the same result, and lets
    it run while the result changes: it tells them apart only when the results reach it
    (OpenClaw pairs by structure, gglib and OpenHands by the synthesized ids the view
    carries)."""
    results = [f"building {n}%" if changing else "still building" for n in range(8)]
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps(_history(results)))
    session = _only(path)
    assert session.counts()["results"] == 8
    assert [c.id for c in session.calls] == [f"ls-{n}" for n in range(8)]
    engine = get_engine(engine_name)
    config = engine.config(_SETTINGS.get(engine_name, {})).config
    replay = engine.replay(session, config)
    assert len(replay.steps) == 8
    assert (replay.first_refusal is not None) is not changing


# --------------------------------------------------------------------------- detection


def test_detection_is_by_content_not_by_name(tmp_path: Path) -> None:
    for source, name in ((FIXTURES / "task_both" / "api_conversation_history.json", "a.json"),
                         (FIXTURES / "task_ui_only" / "ui_messages.json", "b.json")):
        shutil.copy(source, tmp_path / name)
        assert detect_format(tmp_path / name).format == "cline_task"
    plain = [{"role": "user", "content": "hi"},
             {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n",
                                                "input": {}}]}]
    (tmp_path / "api_conversation_history.json").write_text(json.dumps(plain))
    assert detect_format(tmp_path / "api_conversation_history.json").format == \
        "anthropic_messages"
