"""qwen_code_chat: Qwen Code's chat recording (JSON Lines of user / assistant / tool_result /
system records whose ``message`` is a Gemini ``Content``), detected ahead of Claude Code's
look-alike lines, with every call imported and its result paired by id."""

from __future__ import annotations

import json
from pathlib import Path

from loopscope.formats import load_file
from loopscope.model import AssistantTurn, ToolResult, UserMessage

FIXTURE = Path(__file__).with_name("fixtures") / "qwen_code_chat.jsonl"


def test_the_recording_imports_as_one_qwen_session() -> None:
    loaded = load_file(FIXTURE)
    (session,) = loaded.sessions
    assert session.format == "qwen_code_chat"
    assert session.id == "5f0c7a2e-1111-4222-8333-444455556666"
    assert session.agent.name == "Qwen Code"
    users = [e.text for e in session.events if isinstance(e, UserMessage)]
    assert users == ["The build fails, fix it.", "Try again."]
    turns = [e for e in session.events if isinstance(e, AssistantTurn)]
    assert len(turns) == 7
    assert turns[0].text == "Let me read the build file."
    assert turns[0].thinking == "I should check the build file."
    assert turns[0].model == "qwen3-coder-plus"
    calls = [c for t in turns for c in t.tool_calls]
    assert [c.name for c in calls] == ["read_file"] * 5 + ["run_shell_command"] * 2
    assert calls[5].arguments == {"command": "git status"}
    results = [e for e in session.events if isinstance(e, ToolResult)]
    assert len(results) == 7
    assert all(r.paired_by == "id" for r in results)
    assert results[-1].is_error and results[-1].text == "make: *** failed"
    assert session.metadata["skipped"] == {"system": 2}
    assert session.metadata["version"] == "0.24.4"


def test_the_tally_counts_every_call() -> None:
    loaded = load_file(FIXTURE)
    assert loaded.calls_seen == loaded.calls_imported == 7
    assert loaded.calls_lost == 0


def test_claude_code_lines_are_still_claude_code(tmp_path: Path) -> None:
    path = tmp_path / "claude.jsonl"
    lines = [{"type": "user", "uuid": "u1", "sessionId": "s", "parentUuid": None,
              "message": {"role": "user", "content": "hi"}},
             {"type": "assistant", "uuid": "u2", "sessionId": "s", "parentUuid": "u1",
              "message": {"role": "assistant", "content": [
                  {"type": "tool_use", "id": "t1", "name": "Read", "input": {"p": 1}}]}}]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    (session,) = load_file(path).sessions
    assert session.format == "claude_code"
