"""claude_code_markdown: sections, block bodies, turns across sections,
duplicates, compaction summaries, local timestamps, truncated bodies."""

from __future__ import annotations

import json

import pytest
from tests.formats._ext_formats_helpers import (
    assert_counts,
    codes,
    load_corpus,
    longest_identical_run,
    only,
    run_text,
    shape,
)

from loopscope.formats import claude_code_markdown
from loopscope.formats.claude_code_markdown import parse_timestamp

HEADER = """# Claude Session Export

## Session Information

- **Session ID**: `demo-1`
- **Project Path**: `/home/demo/app`

---

## Conversation

"""


def section(role: str, time: str, body: object) -> str:
    text = body if isinstance(body, str) else json.dumps(body, indent=2)
    return f"### {role}\n> {time}\n\n{text}\n\n---\n\n"


def tool_use(tid: str, name: str = "BashOutput", inp: object = None) -> dict:
    return {"type": "tool_use", "id": tid, "name": name, "input": inp or {"bash_id": "b1"}}


def tool_result(tid: str, content: object = "<status>running</status>", **extra: object) -> dict:
    return {"tool_use_id": tid, "type": "tool_result", "content": content, **extra}


def test_spec_example():
    text = HEADER + section("User", "5/4/2026, 9:00:00 AM", "Is the build done?") \
        + section("Assistant", "5/4/2026, 9:00:02 AM", [tool_use("toolu_1")]) \
        + section("User", "5/4/2026, 9:00:03 AM", [tool_result("toolu_1")])
    sessions, problems = run_text(claude_code_markdown, text)
    s = only(sessions)
    assert shape(s) == "U A0[BashOutput] R0"
    assert s.id == "demo-1"
    assert s.agent.name == "Claude Code"
    assert s.metadata["project_path"] == "/home/demo/app"
    assert s.metadata["timezone"] == "unknown"
    assert s.events[0].timestamp == "2026-05-04T09:00:00"
    assert s.calls[0].arguments == {"bash_id": "b1"} and s.calls[0].arguments_kind == "value"
    assert s.events[2].text == "<status>running</status>" and s.events[2].paired_by == "id"
    assert not codes(problems, "warning")


def test_consecutive_assistant_sections_form_one_turn_and_results_pair_by_id():
    text = HEADER + section("User", "1/1/2026, 1:00:00 PM", "go") \
        + section("Assistant", "1/1/2026, 1:00:01 PM", [{"type": "thinking", "thinking": "hm"}]) \
        + section("Assistant", "1/1/2026, 1:00:01 PM", [{"type": "text", "text": "Fetching."}]) \
        + section("Assistant", "1/1/2026, 1:00:02 PM", [tool_use("a", "WebFetch", {"u": 1})]) \
        + section("Assistant", "1/1/2026, 1:00:02 PM", [tool_use("b", "WebFetch", {"u": 2})]) \
        + section("User", "1/1/2026, 1:00:05 PM", [tool_result("b", "B")]) \
        + section("User", "1/1/2026, 1:00:06 PM", [tool_result("a", [{"type": "text", "text": "A"}],
                                                                 is_error=True)]) \
        + section("Assistant", "1/1/2026, 1:00:07 PM", [{"type": "text", "text": "Done."}])
    s = only(run_text(claude_code_markdown, text)[0])
    assert shape(s) == "U A0[WebFetch, WebFetch] R1 R0! A1"
    assert s.turns[0].text == "Fetching." and s.turns[0].thinking == "hm"
    assert s.events[3].text == "A"


def test_duplicates_are_dropped():
    repeated = section("Assistant", "1/1/2026, 1:00:02 PM", [tool_use("a")])
    answer = section("User", "1/1/2026, 1:00:03 PM", [tool_result("a")])
    text = HEADER + section("User", "1/1/2026, 1:00:00 PM", "go") + repeated + answer \
        + repeated + answer \
        + section("Assistant", "1/1/2026, 1:01:00 PM", [tool_use("a")]) \
        + section("User", "1/1/2026, 1:01:01 PM", [tool_result("a", "again")])
    sessions, problems = run_text(claude_code_markdown, text)
    s = only(sessions)
    assert shape(s) == "U A0[BashOutput] R0 A1"
    dup = [p for p in problems if p.code == "duplicates_skipped"]
    assert len(dup) == 1 and dup[0].count == 4


def test_continuation_summary_is_a_compaction_and_mixed_user_blocks_give_results_then_user():
    summary = "This session is being continued from a previous conversation. Summary: x."
    text = HEADER + section("User", "1/1/2026, 12:00:00 AM", summary) \
        + section("Assistant", "1/1/2026, 12:00:01 AM", [tool_use("a")]) \
        + section("User", "1/1/2026, 12:00:02 AM",
                  [tool_result("a"), {"type": "text", "text": "and also this"}]) \
        + section("User", "1/1/2026, 12:00:03 AM", "[Request interrupted by user]")
    s = only(run_text(claude_code_markdown, text)[0])
    assert shape(s) == "C A0[BashOutput] R0 U U"
    assert s.events[0].summary == summary
    assert s.events[0].timestamp == "2026-01-01T00:00:00"
    assert s.events[3].text == "and also this"
    assert s.events[4].text == "[Request interrupted by user]"


def test_body_with_separators_and_headers_inside_json_is_not_split():
    tricky = [{"type": "text", "text": "line\n---\n### User\nmore"}]
    text = HEADER + section("Assistant", "1/1/2026, 1:00:00 PM", tricky)
    s = only(run_text(claude_code_markdown, text)[0])
    assert s.turns[0].text == "line\n---\n### User\nmore"


def test_truncated_json_body_is_skipped_with_invalid_record():
    text = HEADER + section("User", "1/1/2026, 1:00:00 PM", "go") \
        + "### Assistant\n> 1/1/2026, 1:00:01 PM\n\n[\n  {\n    \"type\": \"tool_use\",\n"
    sessions, problems = run_text(claude_code_markdown, text)
    assert shape(only(sessions)) == "U"
    assert "invalid_record" in codes(problems, "warning")


def test_agent_file_is_a_sidechain():
    text = HEADER + section("Assistant", "1/1/2026, 1:00:00 PM", [{"type": "text", "text": "hi"}])
    s = only(run_text(claude_code_markdown, text, path="x/agent-1234-untitled-full.md")[0])
    assert s.metadata["sidechain"] is True


@pytest.mark.parametrize(("line", "iso"), [
    ("> 12/1/2025, 6:10:08 PM", "2025-12-01T18:10:08"),
    ("> 12/1/2025, 12:01:14 AM", "2025-12-01T00:01:14"),
    ("> 11/30/2025, 12:30:00 PM", "2025-11-30T12:30:00"),
    ("> not a time", None),
])
def test_parse_timestamp(line, iso):
    assert parse_timestamp(line) == iso


# --------------------------------------------------------------------------- the real recordings (../shared/corpus)

ROWS = [
    ("agent-bfa52189-untitled-full.md", 194, 195, 0, 194, 0, 0, (193, 1, "BashOutput")),
    ("agent-e17e5440-untitled-full.md", 284, 284, 1, 284, 0, 0, (283, 1, "BashOutput")),
    ("agent-eb357efd-untitled-full.md", 26, 10, 0, 26, 0, 0, None),
    ("e77833af-f259-4a45-94da-5eb022e8174f-command-messagecatchup-is-running-command-message-"
     "full.md", 65, 75, 25, 65, 0, 0, (7, 58, "Bash")),
    ("fead89c9-db8b-4440-adf5-e20f654ccbcf-i-want-to-have-a-full.md", 18, 18, 6, 18, 0, 0, None),
    ("ffc6b40f-fc79-4f82-a9d5-6052c23474f4-therapyframeworkresourcescompletemders-build-our-r-"
     "full.md", 314, 214, 66, 304, 10, 4, (42, 220, "BashOutput")),
]


@pytest.mark.parametrize(("name", "calls", "turns", "user", "results", "unanswered",
                          "compactions", "run"), ROWS)
@pytest.mark.corpus
def test_corpus(name, calls, turns, user, results, unanswered, compactions, run):
    imported = load_corpus(f"claude-code-md-export/{name}")
    assert imported.detection.format == "claude_code_markdown"
    s = only(imported.sessions)
    assert_counts(s, calls=calls, turns=turns, user=user, results=results,
                  unanswered=unanswered, compactions=compactions)
    if run is not None:
        assert longest_identical_run(s) == run
    else:
        assert longest_identical_run(s)[0] == 1
    assert not [p for p in imported.problems if p.severity != "info"]


@pytest.mark.corpus
def test_corpus_spot_checks():
    s = only(load_corpus("claude-code-md-export/agent-eb357efd-untitled-full.md").sessions)
    assert s.id == "agent-eb357efd"
    assert s.metadata["sidechain"] is True
    bfa = only(load_corpus("claude-code-md-export/agent-bfa52189-untitled-full.md").sessions)
    assert bfa.calls[1].name == "BashOutput" and bfa.calls[1].arguments == {"bash_id": "b2f8b9"}
    e17 = only(load_corpus("claude-code-md-export/agent-e17e5440-untitled-full.md").sessions)
    user = [e for e in e17.events if e.kind == "user"]
    assert [u.text for u in user] == ["[Request interrupted by user]"]
    ffc = load_corpus("claude-code-md-export/ffc6b40f-fc79-4f82-a9d5-6052c23474f4-"
                      "therapyframeworkresourcescompletemders-build-our-r-full.md")
    dup = [p for p in ffc.problems if p.code == "duplicates_skipped"]
    assert len(dup) == 1 and "117 repeated section" in dup[0].message
