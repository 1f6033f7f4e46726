"""Corpus conformance: one test per real recorded file of :data:`ROWS` (its expected counts).

The corpus is found through ``LOOPSCOPE_CORPUS``, else ``<repo root>/../shared/corpus``; the
tests skip cleanly when it is absent. Rows whose importer module does not exist yet are skipped
with the reason (the loader then gives exactly one ``unsupported_variant`` error, which is
asserted too).

Primary assertions: format, sessions, sources, tool calls. Secondary: turns, user events,
results, unanswered calls, compactions, the expected warnings, and spot checks of single calls.
"""

from __future__ import annotations

import importlib.util
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from loopscope.formats import load_file, load_paths
from loopscope.model import Session

pytestmark = pytest.mark.corpus

REPO_ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("LOOPSCOPE_CORPUS", REPO_ROOT.parent / "shared" / "corpus"))


@dataclass(frozen=True)
class Row:
    file: str
    format: str
    calls: tuple[int, ...]
    turns: tuple[int, ...]
    user: tuple[int, ...]
    results: tuple[int, ...]
    unanswered: tuple[int, ...]
    compactions: int = 0
    warnings: tuple[tuple[int, str], ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def sessions(self) -> int:
        return len(self.calls)


def _r(file: str, fmt: str, calls: Any, turns: Any, user: Any, results: Any, unanswered: Any,
       **kw: Any) -> Row:
    def t(v: Any) -> tuple[int, ...]:
        return tuple(v) if isinstance(v, list | tuple) else (v,)
    return Row(file, fmt, t(calls), t(turns), t(user), t(results), t(unanswered), **kw)


MD = "claude-code-md-export/"
ROWS = [
    _r(MD + "agent-bfa52189-untitled-full.md", "claude_code_markdown", 194, 195, 0, 194, 0),
    _r(MD + "agent-e17e5440-untitled-full.md", "claude_code_markdown", 284, 284, 1, 284, 0),
    _r(MD + "agent-eb357efd-untitled-full.md", "claude_code_markdown", 26, 10, 0, 26, 0),
    _r(MD + "e77833af-f259-4a45-94da-5eb022e8174f-command-messagecatchup-is-running-command-"
       "message-full.md", "claude_code_markdown", 65, 75, 25, 65, 0),
    _r(MD + "fead89c9-db8b-4440-adf5-e20f654ccbcf-i-want-to-have-a-full.md",
       "claude_code_markdown", 18, 18, 6, 18, 0),
    _r(MD + "ffc6b40f-fc79-4f82-a9d5-6052c23474f4-therapyframeworkresourcescompletemders-build-"
       "our-r-full.md", "claude_code_markdown", 314, 214, 66, 304, 10, compactions=4),
    _r("claude-code/apanloco-random__session.jsonl", "claude_code", 12, 22, 11, 12, 0),
    _r("claude-managed-agents/point-of-no-undo__transcript.jsonl", "claude_managed_events",
       95, 79, 1, 95, 0),
    _r("codex/webdev-task-sxw-02__trajectory.jsonl", "codex_rollout", 57, 58, 1, 57, 0),
    _r("gemini-cli/figma-eval-010ac575__chats__session-2026-01-30T06-08-7befeae5.json",
       "gemini_cli_chat", 62, 31, 1, 62, 0),
    _r("gemini-cli/figma-eval-010ac575__transcript.jsonl", "gemini_cli_stream", [40, 28],
       [41, 28], [2, 2], [40, 27], [0, 1]),
    _r("gemini-cli/figma-eval-65829f23__transcript.jsonl", "gemini_cli_stream", 34, 34, 2, 33, 1),
    _r("gemini-cli/figma-eval-d00f7a9b__transcript.jsonl", "gemini_cli_stream", 41, 41, 2, 40, 1),
    _r("inspect-ai/2025-05-12T20-27-36-04-00_browser.json", "inspect_eval", 4, 5, 1, 4, 0),
    _r("openhands/events__basic_gui_mode.json", "openhands_events", 4, 5, 1, 4, 0),
    _r("openhands/events__wrong_initial_state.json", "openhands_events", 4, 4, 1, 3, 1),
    _r("openhands/llm_completion__astropy__astropy-12907.json", "openai_chat", 9, 10, 2, 8, 1),
    _r("openhands/llm_completion__django__django-10097.json", "openai_chat", 50, 50, 1, 49, 1),
    _r("openhands/llm_completion__django__django-11099.json", "openai_chat", 16, 17, 2, 15, 1),
    _r("openhands/llm_completion__django__django-11149.json", "openai_chat", 50, 50, 1, 49, 1),
    _r("openhands/llm_completion__django__django-11265.json", "openai_chat", 50, 50, 1, 49, 1),
    _r("openhands/multi_swe_bench_output.jsonl", "openhands_output", [23, 33, 49],
       [23, 33, 49], [1, 1, 1], [22, 32, 49], [1, 1, 0]),
    _r("pi-agent/gjc__01-youtube-transcript-extraction__session.jsonl", "openclaw_session",
       205, 156, 8, 204, 1,
       warnings=((1, "broken_parent_link"), (60, "invalid_escape"))),
    _r("pi-agent/gjc__04-awesome-agent-ide__session.jsonl", "openclaw_session", 78, 60, 6, 78, 0,
       warnings=((44, "invalid_escape"),)),
    _r("pi-agent/lamurian-paradocs__session.jsonl", "openclaw_session", 54, 32, 4, 54, 0),
    _r("picoclaw/clawnitizer__session.jsonl", "openai_chat", 9, 2, 1, 2, 8,
       warnings=((2, "orphan_result"), (4, "positional_pairing"))),
    _r("swe-agent-demonstrations/ctf_crypto_eps.traj", "swe_agent_traj", 14, 14, 1, 14, 0),
    _r("swe-agent/6e44b9__sweagenttestrepo-1c2844.traj", "swe_agent_traj", 5, 5, 1, 5, 0),
    _r("swe-agent/pydicom__pydicom-1458.traj", "swe_agent_traj", 12, 12, 1, 12, 0),
    _r("swe-agent/swe-agent__test-repo-i1.traj", "swe_agent_traj", 5, 5, 1, 5, 0),
    _r("tau-bench/gpt-4o-airline__task02_trial2.json", "tau_bench", 13, 18, 6, 13, 0),
    _r("tau-bench/gpt-4o-airline__task09_trial2.json", "tau_bench", 23, 30, 8, 23, 0),
    _r("tau-bench/gpt-4o-airline__task11_trial0.json", "tau_bench", 10, 17, 8, 10, 0),
    _r("tau-bench/gpt-4o-airline__task13_trial0.json", "tau_bench", 14, 28, 15, 14, 0),
    _r("tau-bench/gpt-4o-airline__task23_trial3.json", "tau_bench", 13, 27, 15, 13, 0),
    _r("cursor-specstory/minsky__2025-04-28_21-34-creating-a-git-push-task.md",
       "cursor_specstory", 23, 27, 5, 13, 10),
    _r("cursor-specstory/minsky__2025-04-29_20-13-session-start-error-for-task-008.md",
       "cursor_specstory", 24, 27, 5, 20, 4),
    _r("aider-history/doc_processor__.aider.chat.history.md", "aider_history", 6, 18, 22, 6, 0),
    # Cline ui_messages.json: 28 commands, 24 tools, 3 MCP uses, 3 attempt_completion, one
    # load_mcp_documentation and one plan_mode_respond; the two last completions unanswered.
    _r("cline-task/mcp-vscode-server__ui_messages.json", "cline_task", 60, 61, 4, 58, 2),
    _r("opencode-export/dark-factory__session__neon-river__ses_39b623ce7ffeILPe9UgDcyGicH.json",
       "opencode_session", 15, 6, 3, 15, 0),
    _r("opencode-export/dark-factory__session__silent-nebula__ses_39b2e52e8ffeokU5mBDCeUvc8t"
       ".json", "opencode_session", 25, 16, 1, 24, 1),
]

# Corpus files no importer reads yet: each gives no session and exactly this problem above
# info, and is left out of the folder totals. Remove an entry with its importer.
REFUSED: dict[str, str] = {}

SESSION_IDS = {
    "claude-code/apanloco-random__session.jsonl": ["a263b894-c8c2-44af-8845-663362b5a201"],
    "codex/webdev-task-sxw-02__trajectory.jsonl": ["019f54a2-5eec-7e52-8991-3826499c82ef"],
    "gemini-cli/figma-eval-010ac575__chats__session-2026-01-30T06-08-7befeae5.json":
        ["7befeae5-6b85-4b89-a3e3-c161793cc484"],
    "gemini-cli/figma-eval-010ac575__transcript.jsonl":
        ["6727b31e-11a1-4351-b526-77ba7b90da09", "65b8f8e4-6941-4eba-b2b8-a3f492435908"],
    "gemini-cli/figma-eval-65829f23__transcript.jsonl": ["0550b100-9836-4f5a-956c-11296b0d2d28"],
    "gemini-cli/figma-eval-d00f7a9b__transcript.jsonl": ["cac225da-e1f4-46c2-8c80-d7930185f8d6"],
    "inspect-ai/2025-05-12T20-27-36-04-00_browser.json": ["browser:1:1"],
    "openhands/multi_swe_bench_output.jsonl":
        ["ponylang__ponyc-4595", "ponylang__ponyc-4593", "ponylang__ponyc-4588"],
    "pi-agent/gjc__01-youtube-transcript-extraction__session.jsonl":
        ["gjc__01-youtube-transcript-extraction__session"],
    "pi-agent/gjc__04-awesome-agent-ide__session.jsonl": ["scc6968a3db48"],
    "pi-agent/lamurian-paradocs__session.jsonl": ["019f6dc0-804c-7dde-9ec1-e78ed4f4a0af"],
    MD + "agent-eb357efd-untitled-full.md": ["agent-eb357efd"],
    "tau-bench/gpt-4o-airline__task09_trial2.json": ["task9-trial2"],
    "cursor-specstory/minsky__2025-04-28_21-34-creating-a-git-push-task.md":
        ["minsky__2025-04-28_21-34-creating-a-git-push-task"],
    "aider-history/doc_processor__.aider.chat.history.md": ["doc_processor__.aider.chat.history"],
    "opencode-export/dark-factory__session__neon-river__ses_39b623ce7ffeILPe9UgDcyGicH.json":
        ["ses_39b623ce7ffeILPe9UgDcyGicH"],
}

# Longest run of consecutive identical calls: (session index, length, from call, tool).
LONGEST_RUNS = {
    MD + "agent-bfa52189-untitled-full.md": (0, 193, 1, "BashOutput"),
    MD + "agent-e17e5440-untitled-full.md": (0, 283, 1, "BashOutput"),
    MD + "e77833af-f259-4a45-94da-5eb022e8174f-command-messagecatchup-is-running-command-"
         "message-full.md": (0, 7, 58, "Bash"),
    MD + "ffc6b40f-fc79-4f82-a9d5-6052c23474f4-therapyframeworkresourcescompletemders-build-"
         "our-r-full.md": (0, 42, 220, "BashOutput"),
    "codex/webdev-task-sxw-02__trajectory.jsonl": (0, 14, 23, "write_stdin"),
    "openhands/multi_swe_bench_output.jsonl": (1, 2, 11, "str_replace_editor"),
    "swe-agent-demonstrations/ctf_crypto_eps.traj": (0, 4, 9, "submit"),
    "swe-agent/pydicom__pydicom-1458.traj": (0, 2, 6, "edit"),
    "tau-bench/gpt-4o-airline__task13_trial0.json": (0, 2, 5, "update_reservation_flights"),
    "aider-history/doc_processor__.aider.chat.history.md": (0, 1, 0, "edit"),
}


def _corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"corpus not found at {CORPUS} (set LOOPSCOPE_CORPUS)")
    return CORPUS


def _module_exists(format_id: str) -> bool:
    return importlib.util.find_spec(f"loopscope.formats.{format_id}") is not None


def _path(row_file: str) -> str:
    path = _corpus() / row_file
    if not path.is_file():
        pytest.skip(f"corpus file {row_file} not found under {CORPUS}")
    return str(path)


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)


def longest_identical_run(session: Session) -> tuple[int, int, str]:
    """(length, from call, tool) of the first longest run of identical consecutive calls."""
    calls = session.calls
    if not calls:
        return 0, 0, ""
    best = (1, 0, calls[0].name)
    start = 0
    for i in range(1, len(calls) + 1):
        same = i < len(calls) and calls[i].name == calls[start].name and (
            _key(calls[i].arguments) == _key(calls[start].arguments))
        if not same:
            length = i - start
            if length > best[0]:
                best = (length, start, calls[start].name)
            start = i
    return best


@pytest.fixture(scope="module")
def imports() -> dict[str, Any]:
    cache: dict[str, Any] = {}
    return cache


def _load(row: Row, cache: dict[str, Any]) -> Any:
    if row.file not in cache:
        cache[row.file] = load_file(_path(row.file))
    return cache[row.file]


def _skip_missing(row: Row, result: Any) -> None:
    if not _module_exists(row.format):
        # Until the importer ships: detection right, exactly one unsupported_variant error.
        assert result.detection.format == row.format
        assert [p.code for p in result.problems] == ["unsupported_variant"]
        assert not result.sessions
        pytest.skip(f"importer loopscope.formats.{row.format} not written yet")


@pytest.mark.parametrize("row", ROWS, ids=[r.file for r in ROWS])
def test_primary(row: Row, imports: dict[str, Any]) -> None:
    result = _load(row, imports)
    assert result.detection.format == row.format, result.detection
    _skip_missing(row, result)
    assert len(result.sessions) == row.sessions, [p.text() for p in result.problems]
    path = _path(row.file)
    expected_sources = [path] if row.sessions == 1 else [f"{path}#{n}"
                                                         for n in range(row.sessions)]
    assert [s.source for s in result.sessions] == expected_sources
    assert [s.format for s in result.sessions] == [row.format] * row.sessions
    assert tuple(s.counts()["calls"] for s in result.sessions) == row.calls
    assert not any(p.severity == "error" for p in result.problems), [
        p.text() for p in result.problems]


@pytest.mark.parametrize("row", ROWS, ids=[r.file for r in ROWS])
def test_secondary(row: Row, imports: dict[str, Any]) -> None:
    result = _load(row, imports)
    _skip_missing(row, result)
    counts = [s.counts() for s in result.sessions]
    assert tuple(c["turns"] for c in counts) == row.turns
    assert tuple(c["user_messages"] for c in counts) == row.user
    assert tuple(c["results"] for c in counts) == row.results
    assert tuple(c["unanswered_calls"] for c in counts) == row.unanswered
    assert sum(c["compactions"] for c in counts) == row.compactions
    warnings = sorted((p.line or 0, p.code) for p in result.problems if p.severity == "warning")
    assert warnings == sorted(row.warnings), [p.text() for p in result.problems]


@pytest.mark.parametrize("row", [r for r in ROWS if r.file in SESSION_IDS or r.file in
                                 LONGEST_RUNS], ids=lambda r: r.file)
def test_spot_ids_and_runs(row: Row, imports: dict[str, Any]) -> None:
    result = _load(row, imports)
    _skip_missing(row, result)
    if row.file in SESSION_IDS:
        assert [s.id for s in result.sessions] == SESSION_IDS[row.file]
    expected = LONGEST_RUNS.get(row.file)
    for n, session in enumerate(result.sessions):
        if expected is not None and expected[0] == n:
            assert longest_identical_run(session) == expected[1:]
        elif session.calls:
            assert longest_identical_run(session)[0] == 1


def _only(file: str, imports: dict[str, Any]) -> Any:
    row = next(r for r in ROWS if r.file == file)
    result = _load(row, imports)
    _skip_missing(row, result)
    return result


def test_spot_calls_claude_code(imports: dict[str, Any]) -> None:
    session = _only("claude-code/apanloco-random__session.jsonl", imports).sessions[0]
    call = session.calls[0]
    assert call.name == "Bash" and call.arguments_kind == "value"
    assert call.arguments == {"command": "ls /home/da/akerud/random/",
                              "description": "Check current folder contents"}
    assert session.agent.name == "Claude Code"


def test_spot_calls_picoclaw(imports: dict[str, Any]) -> None:
    session = _only("picoclaw/clawnitizer__session.jsonl", imports).sessions[0]
    call = session.calls[0]
    assert call.name == "exec" and call.id == "call_00_YRlHKeUDtaEbsfoTNIR70791"
    result = session.events[call.result]  # type: ignore[index]
    assert result.paired_by == "position"  # type: ignore[union-attr]
    assert session.counts()["orphan_results"] == 1
    assert session.chat_messages is not None and len(session.chat_messages) == len(session.events)


def test_spot_litellm_last_call_from_response(imports: dict[str, Any]) -> None:
    session = _only("openhands/llm_completion__astropy__astropy-12907.json", imports).sessions[0]
    assert session.calls[-1].name == "finish"
    assert session.calls[-1].result is None
    assert session.agent.name == "litellm log"
    assert session.chat_messages is not None
    assert session.chat_messages[-1] is not None and session.events[-1].kind == "assistant"


def test_spot_tau_bench_alternation(imports: dict[str, Any]) -> None:
    session = _only("tau-bench/gpt-4o-airline__task09_trial2.json", imports).sessions[0]
    names = [c.name for c in session.calls[14:23]]
    assert names == ["book_reservation", "think"] * 4 + ["book_reservation"]


def test_whole_corpus_as_folder() -> None:
    """Loading the corpus folder gives no internal_error; the files of :data:`ROWS` carry only
    their listed warnings (errors only from missing importers); SOURCES.md is an info; and
    every other file — one no importer reads yet — is refused out loud: a warning or an
    error, and, when call-shaped content was counted in it, a calls_not_imported warning
    with that count (which files those are changes as importers are added)."""
    corpus = _corpus()
    report = load_paths([str(corpus)])
    missing = {r.format for r in ROWS if not _module_exists(r.format)}
    allowed = {(r.file, line, code) for r in ROWS for line, code in r.warnings}
    refused_seen = set()
    listed = {r.file for r in ROWS}
    for file_import in report.files:
        rel = os.path.relpath(file_import.path, corpus)
        if rel in REFUSED:
            assert [p.code for p in file_import.problems if p.severity != "info"] == [
                REFUSED[rel]], rel
            assert not file_import.sessions
            refused_seen.add(rel)
            continue
        for p in file_import.problems:
            assert p.code != "internal_error", p.text()
        if rel == "SOURCES.md":
            assert [(p.severity, p.code) for p in file_import.problems] == [
                ("info", "unknown_format")]
            continue
        if rel not in listed:
            if not file_import.sessions:
                assert any(p.severity != "info" for p in file_import.problems), rel
            if file_import.calls_lost:
                (lost,) = [p for p in file_import.problems if p.code == "calls_not_imported"]
                assert (lost.severity, lost.count) == ("warning", file_import.calls_lost)
            continue
        for p in file_import.problems:
            if p.severity == "error":
                assert p.code == "unsupported_variant" and file_import.detection.format in missing
            if p.severity == "warning":
                assert (rel, p.line, p.code) in allowed, p.text()
    ids = {os.path.relpath(f.path, corpus) for f in report.files}
    assert "SOURCES.md" in ids
    assert refused_seen == {rel for rel in REFUSED if (corpus / rel).is_file()}
    if not missing:
        present = [r for r in ROWS if (corpus / r.file).is_file()]
        assert len(report.sessions) == sum(r.sessions for r in present)
        assert sum(s.counts()["calls"] for s in report.sessions) == sum(
            sum(r.calls) for r in present)
        if len(present) == len(ROWS):
            assert len(report.sessions) == 44
            assert sum(s.counts()["calls"] for s in report.sessions) == 2170


def test_sources_md_named_explicitly_is_an_error() -> None:
    result = load_file(str(_corpus() / "SOURCES.md"))
    assert [(p.severity, p.code) for p in result.problems] == [("error", "unknown_format")]
    assert not result.sessions
