"""Nothing lost silently in a folder run (issue #37): every file that lost or refused calls is
named by a warning on stderr without ``--verbose``, and every command that imports closes with
"F files, C calls imported, L calls not imported (see warnings)".

The expected numbers are computed here from what the test writes (the calls it puts in each
file), never from loopscope's own counts.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from tests.cli.test_replay_cli import run_cli


def _chat_jsonl(calls: int, tool: str = "ls") -> str:
    """An OpenAI chat messages JSONL with ``calls`` tool calls, each answered."""
    lines = [{"role": "user", "content": "go"}]
    for i in range(calls):
        lines.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function",
             "function": {"name": tool, "arguments": json.dumps({"i": i})}}]})
        lines.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"out {i}"})
    lines.append({"role": "assistant", "content": "done"})
    return "".join(json.dumps(line) + "\n" for line in lines)


# A Markdown transcript of an agent loopscope has no importer for: its calls are labelled
# lines, as many agents' exports write them.
UNKNOWN_AGENT_MD = """# Session export — fix the flaky test

**User:** the test in tests/test_api.py fails every other run; please fix it

**Assistant:** Let me read the test first.

**Tool: read_file** `tests/test_api.py`

**Tool: bash** `pytest -q tests/test_api.py`

The test passes now; once more to be sure.

**Tool: bash** `pytest -q tests/test_api.py`

**Tool: edit_file** `tests/test_api.py`

**Assistant:** Fixed: the test depended on dict order.
"""
UNKNOWN_AGENT_MD_CALLS = 4

# A JSON of a shape no importer reads, holding tool calls as name + input objects.
UNKNOWN_JSON_STEPS = [{"tool_name": "search", "tool_input": {"q": f"flaky {i}"}}
                      for i in range(3)]
UNKNOWN_JSON_CALLS = len(UNKNOWN_JSON_STEPS)


@pytest.fixture
def mixed(tmp_path: Path) -> tuple[Path, dict[str, int]]:
    """A folder mixing supported, unsupported and damaged files; returns it with the calls
    each supported file holds (the truncated file: those on its complete lines)."""
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "good_a.jsonl").write_text(_chat_jsonl(5), encoding="utf-8")
    (folder / "good_b.jsonl").write_text(_chat_jsonl(2, "cat"), encoding="utf-8")
    (folder / "README.md").write_text("# Runs\n\nSessions recorded by the nightly job.\n",
                                      encoding="utf-8")
    (folder / "unknown_agent.md").write_text(UNKNOWN_AGENT_MD, encoding="utf-8")
    (folder / "unknown_shape.json").write_text(
        json.dumps({"run": "nightly-7", "steps": UNKNOWN_JSON_STEPS}), encoding="utf-8")
    # Truncated JSONL: cut inside its last line (the final answer), 3 calls on whole lines.
    text = _chat_jsonl(3)
    (folder / "truncated.jsonl").write_text(text[: len(text) - 20], encoding="utf-8")
    (folder / "random.json").write_bytes(bytes(range(256)) * 3)
    imported = {"good_a.jsonl": 5, "good_b.jsonl": 2, "truncated.jsonl": 3}
    return folder, imported


def _warned_files(stderr: str) -> set[str]:
    """The files named by warning or error lines (``path[:line]: warning: …``)."""
    named = set()
    for line in stderr.splitlines():
        found = re.match(r"^(.*?)(?::\d+| at \S+)?: (warning|error): ", line)
        if found:
            named.add(os.path.basename(found.group(1)))
    return named


def test_a_folder_run_names_every_file_that_lost_calls_without_verbose(
        mixed: tuple[Path, dict[str, int]], monkeypatch: pytest.MonkeyPatch) -> None:
    folder, imported = mixed
    monkeypatch.setenv("LOOPSCOPE_CACHE", "off")
    code, out, err = run_cli(["replay", str(folder), "--engine", "openclaw"])
    # Warnings never change the exit status (nothing here is an error).
    assert code == 0, err
    warned = _warned_files(err)
    assert {"unknown_agent.md", "unknown_shape.json", "truncated.jsonl",
            "random.json"} <= warned, err
    assert "README.md" not in warned and "good_a.jsonl" not in warned, err
    # the unsupported files say how many calls they held, and where the first is
    assert re.search(r"unknown_agent\.md:7: warning: 4 tool calls .*not imported", err), err
    assert re.search(r"unknown_shape\.json at /steps/0: warning: 3 tool calls .*not imported",
                     err), err
    # the truncated file names its line
    assert re.search(r"truncated\.jsonl:\d+: warning: ", err), err
    lost = UNKNOWN_AGENT_MD_CALLS + UNKNOWN_JSON_CALLS
    files = len(list(folder.iterdir()))
    closing = out.strip().splitlines()[-1]
    assert closing == (f"{files} files, {sum(imported.values())} calls imported, "
                       f"{lost} calls not imported (see warnings)"), out


def test_the_closing_line_counts_one_file_and_one_call_in_the_singular(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPSCOPE_CACHE", "off")
    (tmp_path / "one.jsonl").write_text(_chat_jsonl(1), encoding="utf-8")
    code, out, err = run_cli(["replay", str(tmp_path), "--engine", "gglib"])
    assert code == 0, err
    assert out.strip().splitlines()[-2:] == [
        "1 session replayed with gglib: 0 refused, 0 with warnings.",
        "1 file, 1 call imported"], out


@pytest.mark.parametrize("command", [
    ["replay", "--engine", "gglib", "--json"],
    ["compare", "--engine", "gglib", "--a", "max_repeated_batch_steps=2",
     "--b", "max_repeated_batch_steps=3"],
    ["sweep", "--engine", "gglib", "--vary", "max_repeated_batch_steps=2:3"],
])
def test_every_command_that_imports_closes_with_the_counts_on_stderr(
        command: list[str], mixed: tuple[Path, dict[str, int]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    folder, imported = mixed
    monkeypatch.setenv("LOOPSCOPE_CACHE", "off")
    code, out, err = run_cli([command[0], str(folder), *command[1:]])
    assert code == 0, err
    lost = UNKNOWN_AGENT_MD_CALLS + UNKNOWN_JSON_CALLS
    assert err.strip().splitlines()[-1] == (
        f"loopscope: {len(list(folder.iterdir()))} files, {sum(imported.values())} calls "
        f"imported, {lost} calls not imported (see warnings)"), err
    assert {"unknown_agent.md", "unknown_shape.json"} <= _warned_files(err), err
    if "--json" in command:  # stdout stays JSON Lines only
        assert all(json.loads(line) for line in out.splitlines())


def test_the_cache_gives_the_same_warnings_and_closing_line(
        mixed: tuple[Path, dict[str, int]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    folder, _ = mixed
    monkeypatch.setenv("LOOPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("LOOPSCOPE_CACHE", raising=False)
    args = ["replay", str(folder), "--engine", "openclaw"]
    with monkeypatch.context() as m:
        m.setenv("LOOPSCOPE_CACHE", "off")
        imported = run_cli(args)
    code, out, err = run_cli(["prepare", str(folder)])
    assert code == 0, err
    lost = UNKNOWN_AGENT_MD_CALLS + UNKNOWN_JSON_CALLS
    assert f"{lost} tool calls in 2 files were not imported" in out, out
    assert run_cli(args) == imported
    assert "calls not imported (see warnings)" in imported[1]


def test_label_says_when_the_labelled_file_lost_calls(tmp_path: Path) -> None:
    lines = ['{"type":"user","uuid":"u","sessionId":"s","message":{"role":"user",'
             '"content":"x"}}',
             '{"type":"assistant-draft","uuid":"a","sessionId":"s","message":{"role":'
             '"assistant","content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]}}',
             '{"type":"assistant","uuid":"b","sessionId":"s","message":{"role":"assistant",'
             '"content":"done"}}']
    (tmp_path / "s.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, _out, err = run_cli(["label", "s.jsonl", "ok"], cwd=tmp_path)
    assert code == 0, err
    assert "s.jsonl:2: warning: " in err and "[calls_not_imported]" in err, err
    assert err.strip().splitlines()[-1] == (
        "loopscope: 1 file, 0 calls imported, 1 call not imported (see warnings)")
