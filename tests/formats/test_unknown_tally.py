"""The tally of files no importer reads (issue #37): call-shaped content in an unknown JSON
value, JSON Lines file or text is counted, so a refused file says how many calls it cost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.formats._fmt_helpers import codes, write

from loopscope.formats import load_file, load_paths
from loopscope.formats.tally import count_unknown_text, count_unknown_value


def _seen_value(value: Any) -> list[tuple[Any, Any]]:
    seen: list[tuple[Any, Any]] = []
    count_unknown_value(value, seen.append)
    return seen


def _seen_text(text: str) -> list[tuple[Any, Any]]:
    seen: list[tuple[Any, Any]] = []
    count_unknown_text(text, seen.append)
    return seen


def test_call_shapes_of_the_common_recorders_in_any_json() -> None:
    value = {"log": [
        {"choices": [{"message": {"tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}}]},
        {"content": [{"type": "text", "text": "x"},
                     {"type": "tool_use", "id": "t", "name": "Bash", "input": {
                         # (a call's own arguments are not searched for more calls)
                         "nested": {"type": "tool_use", "name": "inner"}}}]},
        {"parts": [{"functionCall": {"name": "read_file", "args": {}}}]},
        {"type": "tool", "tool": "grep", "callID": "c", "state": {}},
        {"type": "ask", "ask": "tool", "text": '{"tool":"readFile","path":"a"}'},
        {"type": "say", "say": "text", "text": "no call"},
        {"tool_name": "search", "tool_input": {"q": "x"}},
        {"name": "execute_tool", "attributes": {"gen_ai.operation.name": "execute_tool",
                                                "gen_ai.tool.name": "fetch"}},
        {"role": "assistant", "content": "I'll look.\n```bash\nls -la\n```"},
        {"role": "assistant", "content": "no block here"},
        {"tool": "hammer"},  # a name alone is no call
    ]}
    seen = _seen_value(value)
    assert [name for _, name in seen] == ["ls", "Bash", "read_file", "grep", "readFile",
                                          "search", "fetch", "bash"]
    assert seen[0][0] == "/log/0/choices/0/message/tool_calls/0"
    assert seen[1][0] == "/log/1/content/1"


def test_call_shaped_lines_of_a_text() -> None:
    transcript = "\n".join([
        "# Run", "", "**User:** fix it", "",
        "**Tool: read_file** `a.py`",             # 5
        "Tool use: **edit_file**",                # 6
        '<invoke name="bash">',                   # 7
        "> Applied edit to a.py",                 # 8
        "Action: search", "Action Input: {\"q\": 1}",  # 9
        '  "type": "tool_use",',                  # 11
    ])
    seen = _seen_text(transcript)
    assert seen == [(5, "read_file"), (6, "edit_file"), (7, "bash"), (8, "Applied edit"),
                    (9, "search"), (11, "")]


def test_prose_is_no_call() -> None:
    readme = "\n".join([
        "# My project", "", "Action: we should ship on Friday.", "", "The tool I use is make.",
        "---", "", "```bash", "make test", "```", "- a list item: tools", "Calling it a day.",
    ])
    assert _seen_text(readme) == []


def test_every_record_of_an_unknown_jsonl_file_is_counted(tmp_path: Path) -> None:
    """Detection samples 50 records; the count reads them all."""
    records = [{"step": i, "tool_name": "probe", "tool_input": {"i": i}} for i in range(120)]
    path = write(tmp_path, "steps.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    result = load_file(path)
    assert codes(result) == ["unknown_format", "calls_not_imported"]
    assert (result.calls_seen, result.calls_lost) == (120, 120)
    (lost,) = [p for p in result.problems if p.code == "calls_not_imported"]
    assert lost.line == 1 and "120 tool calls" in lost.message


def test_severity_in_a_folder_scan(tmp_path: Path) -> None:
    """A Markdown file with nothing call-shaped is an info (a README); with call-shaped lines
    a warning; an unknown JSON a warning; named alone, an unknown file is an error."""
    write(tmp_path, "README.md", "# Notes\n\nNothing here.\n")
    write(tmp_path, "agent.md", "# Run\n\n**Tool: bash** `ls`\n")
    write(tmp_path, "other.json", json.dumps({"owner": "me"}))
    report = load_paths([tmp_path])
    severities = {Path(f.path).name: [(p.severity, p.code) for p in f.problems]
                  for f in report.files}
    assert severities == {
        "README.md": [("info", "unknown_format")],
        "agent.md": [("warning", "unknown_format"), ("warning", "calls_not_imported")],
        "other.json": [("warning", "unknown_format")],
    }
    alone = load_file(str(tmp_path / "agent.md"))
    assert [(p.severity, p.code) for p in alone.problems] == [
        ("error", "unknown_format"), ("warning", "calls_not_imported")]
