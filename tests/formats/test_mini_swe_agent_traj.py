"""mini-swe-agent ``.traj.json`` (issue #37): the single fenced bash block of an assistant reply
is a ``bash`` call, the next user message its observation; taken from the content, never for
OpenAI chat (which would find no call in them).

The fixture's calls are also counted here by :func:`raw_actions`, which shares nothing with
the importer or the loader's tally.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from tests.formats._fmt_helpers import codes, shape, write

from loopscope.cli import main
from loopscope.formats import load_file

FIXTURES = Path(__file__).parent / "fixtures"
NAME = "mini_swe_agent.traj.json"


def raw_actions(value: dict[str, Any]) -> list[str]:
    """The commands of a trajectory, read the way the agent reads a reply: split on fences,
    an assistant reply with exactly one ```bash fence holds a command."""
    commands = []
    for message in value["messages"]:
        if message["role"] != "assistant":
            continue
        pieces = message["content"].split("```bash\n")
        if len(pieces) == 2:
            commands.append(pieces[1].split("\n```")[0].strip())
    return commands


def test_the_fixture_imports_every_action_with_its_observation() -> None:
    value = json.loads((FIXTURES / NAME).read_text())
    commands = raw_actions(value)
    result = load_file(str(FIXTURES / NAME))
    assert result.detection.format == "mini_swe_agent_traj"
    (session,) = result.sessions
    # the reply with two blocks made no call: the agent answered with its format error
    events = shape(session)
    assert events.startswith('S U A0[bash] R0 A1("THOUGHT: Two options:')
    assert events.endswith('") U A2[bash] R1 A3[bash] R2 A4[bash] R3')
    assert [c.arguments for c in session.calls] == [{"command": c} for c in commands]
    assert len(commands) == 4
    assert result.calls_seen == result.calls_imported == len(commands)
    assert result.calls_lost == 0 and "calls_not_imported" not in codes(result)
    results = [e for e in session.events if e.kind == "tool_result"]
    assert [r.meta.get("returncode") for r in results] == [0, 1, 0, None]
    assert results[-1].text == "diff --git a/calc.py b/calc.py\n"  # the submission
    assert session.models == ("anthropic/claude-sonnet-4-5-20250929",)
    assert session.metadata["exit_status"] == "Submitted"
    assert session.metadata["trajectory_format"] == "mini-swe-agent-1"


def test_detection_prefers_mini_swe_agent_from_content(tmp_path: Path) -> None:
    """Named like any chat file, a trajectory is still one: its trajectory_format decides."""
    value = json.loads((FIXTURES / NAME).read_text())
    result = load_file(write(tmp_path, "chat.json", json.dumps(value)))
    assert result.detection.format == "mini_swe_agent_traj"
    assert result.calls_imported == 4


def test_version_2_fences_and_tool_calling_models(tmp_path: Path) -> None:
    value = {"trajectory_format": "mini-swe-agent-1.1", "info": {}, "messages": [
        {"role": "system", "content": "s"}, {"role": "user", "content": "task"},
        {"role": "assistant", "content": "THOUGHT\n\n```mswea_bash_command\nls -la\n```",
         "extra": {"actions": [{"command": "ls -la"}]}},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\na\n</output>"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "bash", "arguments": "{\"command\": \"cat a\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "hello"},
    ]}
    result = load_file(write(tmp_path, "v2.traj.json", json.dumps(value)))
    (session,) = result.sessions
    assert shape(session) == "S U A0[bash] R0 A1[bash] R1"
    assert [c.arguments for c in session.calls] == [{"command": "ls -la"}, {"command": "cat a"}]
    assert result.calls_seen == result.calls_imported == 2


def test_a_reply_without_its_observation_is_an_unanswered_call(tmp_path: Path) -> None:
    value = {"trajectory_format": "mini-swe-agent-1", "messages": [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "```bash\nsleep 999\n```"},
        {"role": "assistant", "content": "```bash\nls\n```"},
        7,
    ]}
    result = load_file(write(tmp_path, "t.traj.json", json.dumps(value)))
    (session,) = result.sessions
    assert [c.result for c in session.calls] == [None, None]
    assert "invalid_record" in codes(result)
    assert result.calls_lost == 0


def test_replay_reads_the_trajectory_end_to_end() -> None:
    run = CliRunner().invoke(main, ["replay", str(FIXTURES / NAME), "--engine", "gglib",
                                    "--json"])
    assert run.exit_code == 0, run.output
    rows = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    assert len(rows) == 1
    assert rows[0]["format"] == "mini_swe_agent_traj"


def test_a_trajectory_without_its_format_tag_is_found_by_its_content(tmp_path: Path) -> None:
    value = json.loads((FIXTURES / NAME).read_text())
    del value["trajectory_format"]
    by_info = load_file(write(tmp_path, "a.json", json.dumps(value)))
    assert by_info.detection.format == "mini_swe_agent_traj"
    del value["info"]
    by_messages = load_file(write(tmp_path, "b.json", json.dumps(value)))
    assert by_messages.detection.format == "mini_swe_agent_traj"
    assert by_messages.calls_imported == by_messages.calls_seen == 4
    # a chat that only mentions a return code is still OpenAI chat
    chat = {"messages": [{"role": "user", "content": "hi"},
                         {"role": "assistant", "content": "no code here"},
                         {"role": "user", "content": "<returncode>0</returncode>"}]}
    assert load_file(write(tmp_path, "c.json", json.dumps(chat))).detection.format \
        == "openai_chat"
