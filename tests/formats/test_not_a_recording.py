"""Refuse what is not a recording (issue #37): JSON Lines that only borrow a recorder's record
names — a summary of a session written by a person or a model — are ``not_a_recording``
(exit 2), never an empty replay; real recordings of those recorders import as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.cli.test_replay_cli import run_cli
from tests.formats._fmt_helpers import codes, jsonl, load

from loopscope.formats import load_file

FIXTURES = Path(__file__).parent / "fixtures"
SUMMARY = FIXTURES / "codex_session_summary.jsonl"


def test_a_codex_session_summary_is_not_a_recording() -> None:
    result = load_file(str(SUMMARY))
    assert codes(result) == ["not_a_recording"]
    (problem,) = result.problems
    assert problem.severity == "error" and not result.sessions
    assert "Codex rollout" in problem.message and "'payload'" in problem.message


def test_the_summary_exits_2_with_the_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPSCOPE_CACHE", "off")
    code, _out, err = run_cli(["replay", str(SUMMARY), "--engine", "openclaw"])
    assert code == 2, err
    assert f"{SUMMARY}: error: not a recording" in err and "[not_a_recording]" in err, err


def test_in_a_folder_the_summary_is_refused_and_the_rest_replays(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPSCOPE_CACHE", "off")
    (tmp_path / "summary.jsonl").write_bytes(SUMMARY.read_bytes())
    (tmp_path / "real.jsonl").write_text(jsonl(
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "x"}), encoding="utf-8")
    code, out, err = run_cli(["replay", str(tmp_path), "--engine", "gglib", "--json"])
    assert code == 2, err  # refused input, as a file named alone
    assert [json.loads(line)["source"] for line in out.splitlines()] == [
        str(tmp_path / "real.jsonl")]
    assert "summary.jsonl: error: not a recording" in err, err


@pytest.mark.parametrize(("name", "records", "recorder"), [
    ("claude", [{"type": "user", "sessionId": "s1", "summary": "asked to fix the build"},
                {"type": "assistant", "sessionId": "s1", "summary": "ran npm test 4 times"},
                {"type": "assistant", "sessionId": "s1", "summary": "edited package.json"}],
     "Claude Code session"),
    ("claude-bare", [{"type": "user", "text": "fix it"},
                     {"type": "assistant", "text": "ran the tests twice"}],
     "Claude Code session"),
    ("pi", [{"type": "message", "id": "1", "parentId": None, "summary": "read the config"},
            {"type": "message", "id": "2", "parentId": "1", "summary": "ran make 5 times"}],
     "OpenClaw/pi session"),
])
def test_other_recorders_names_without_their_content(tmp_path: Path, name: str,
                                                      records: list[dict[str, object]],
                                                      recorder: str) -> None:
    result = load(tmp_path, f"{name}.jsonl", jsonl(*records))
    assert codes(result) == ["not_a_recording"], [p.text() for p in result.problems]
    assert recorder in result.problems[0].message


def test_a_real_record_among_summaries_keeps_the_file_a_recording(tmp_path: Path) -> None:
    """One record with the recorder's content is enough: a damaged or partial real file is
    never called a summary."""
    records = [
        {"type": "session_meta", "payload": {"id": "s", "timestamp": "2025-01-01T00:00:00Z"}},
        {"type": "response_item", "summary": "a line a tool wrote by mistake"},
        {"type": "response_item", "payload": {"type": "message", "role": "user",
                                              "content": [{"type": "input_text",
                                                           "text": "hi"}]}},
    ]
    result = load(tmp_path, "rollout.jsonl", jsonl(*records))
    assert "not_a_recording" not in codes(result)
    assert result.detection.format == "codex_rollout"


def test_a_forced_format_still_reads_it(tmp_path: Path) -> None:
    """``--format`` is the user saying what the file is: it is read as that format."""
    result = load_file(str(SUMMARY), format="codex_rollout")
    assert "not_a_recording" not in codes(result)
