"""The call tally (issue #16): every importer's calls are counted apart from the import, and a
call the file holds that no session imports is never lost without a warning naming where."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.formats._fmt_helpers import codes, jsonl, write

from loopscope.formats import ImportLimits, load_file, load_paths
from loopscope.formats.base import FileImport

REPO_ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("LOOPSCOPE_CORPUS", REPO_ROOT.parent / "shared" / "corpus"))
FIXTURES = Path(__file__).parent / "fixtures"


def lost(result: FileImport) -> int:
    if result.calls_seen is None:
        return 0
    return result.calls_seen - result.calls_imported - sum(result.calls_set_aside.values())


def check_invariant(result: FileImport) -> None:
    """What a file's import may never do: lose a counted call without saying so."""
    assert "internal_error" not in codes(result), [p.text() for p in result.problems]
    assert result.calls_imported == sum(len(s.calls) for s in result.sessions)
    warnings = [p for p in result.problems if p.code == "calls_not_imported"]
    missing = lost(result)
    if missing > 0:
        assert len(warnings) == 1, [p.text() for p in result.problems]
        assert warnings[0].severity == "warning" and warnings[0].count == missing
        assert warnings[0].source == result.path
    else:
        assert warnings == []


# ----------------------------------------------------------------------------- the corpus


@pytest.mark.corpus
def test_the_corpus_loses_no_call() -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"no corpus at {CORPUS}")
    report = load_paths([str(CORPUS)])
    counted = [f for f in report.files if f.calls_seen is not None]
    # every session file a known format reads (SOURCES.md is none); the only calls not
    # imported are the 45 the Markdown export sets aside
    assert len(counted) >= 41
    assert sum(f.calls_seen or 0 for f in counted) - sum(f.calls_imported for f in counted) == 45
    markdown_logs = {os.path.basename(f.path): (f.calls_seen, f.calls_imported) for f in counted
                     if f.detection.format in ("cursor_specstory", "aider_history")}
    assert markdown_logs == {
        "minsky__2025-04-28_21-34-creating-a-git-push-task.md": (23, 23),
        "minsky__2025-04-29_20-13-session-start-error-for-task-008.md": (24, 24),
        "doc_processor__.aider.chat.history.md": (6, 6)}
    for result in counted:
        assert lost(result) == 0, result.path
    for result in report.files:
        check_invariant(result)
        if result.sessions:
            assert lost(result) == 0, result.path
    sources = [f for f in report.files if f.path.endswith("SOURCES.md")]
    assert [(f.calls_seen, f.calls_lost) for f in sources] == [(0, 0)]
    (export,) = [f for f in counted if f.path.endswith("build-our-r-full.md")]
    assert (export.calls_seen, export.calls_imported) == (359, 314)
    assert export.calls_set_aside == {"repeated section": 39, "repeated tool_use id": 6}


# ----------------------------------------------------------------------------- a lost call


def _line(kind: str, uuid: str, content: object) -> dict[str, object]:
    message = {"role": "assistant" if kind.startswith("assistant") else "user",
               "content": content, "id": f"m-{uuid}"}
    return {"type": kind, "uuid": uuid, "sessionId": "s", "message": message}


def test_a_call_no_session_imports_is_a_warning_naming_the_line(tmp_path: Path) -> None:
    call = [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]
    lines = [_line("user", "u1", "go"), _line("assistant", "a1", [{"type": "text", "text": "ok"}]),
             _line("assistant-draft", "a2", call)]  # a line type the importer does not read
    result = load_file(write(tmp_path, "s.jsonl", jsonl(*lines)))
    (warning,) = [p for p in result.problems if p.code == "calls_not_imported"]
    assert warning.severity == "warning" and warning.line == 3
    assert warning.message.startswith("the one tool call seen in the file was not "
                                      'imported (first line 3: "Bash")')
    assert (result.calls_seen, result.calls_imported, result.calls_lost) == (1, 0, 1)
    check_invariant(result)


def test_a_truncated_session_says_how_many_calls_it_lost(tmp_path: Path) -> None:
    lines = [{"role": "user", "content": "go"}]
    for n in range(6):
        lines.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{n}", "type": "function", "function": {"name": "poll", "arguments": "{}"}}]})
        lines.append({"role": "tool", "tool_call_id": f"c{n}", "content": "waiting"})
    path = write(tmp_path, "m.jsonl", jsonl(*lines))
    result = load_file(path, ImportLimits(max_events_per_session=5))
    assert "session_truncated" in codes(result, "warning")
    (warning,) = [p for p in result.problems if p.code == "calls_not_imported"]
    assert warning.count == 4 and "(first line 6: \"poll\")" in warning.message
    assert warning.line == 6
    check_invariant(result)


def test_calls_left_out_on_purpose_are_set_aside_not_lost(tmp_path: Path) -> None:
    header = {"type": "session", "version": 3, "id": "s"}

    def entry(entry_id: str, parent: str | None, call: str) -> dict[str, object]:
        return {"type": "message", "id": entry_id, "parentId": parent, "message": {
            "role": "assistant", "content": [{"type": "toolCall", "id": call, "name": "exec",
                                              "arguments": {}}]}}
    # e2 is an abandoned branch: the active one is e1 -> e3
    lines = [header, entry("e1", None, "c1"), entry("e2", "e1", "c2"), entry("e3", "e1", "c3")]
    result = load_file(write(tmp_path, "s.jsonl", jsonl(*lines)))
    assert (result.calls_seen, result.calls_imported) == (3, 2)
    assert result.calls_set_aside == {"not on the active branch": 1}
    assert "calls_not_imported" not in codes(result)


def test_zip_archives_are_not_counted(tmp_path: Path) -> None:
    import zipfile

    path = tmp_path / "log.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("header.json", json.dumps({"eval": {"task": "t"}}))
        archive.writestr("samples/1_epoch_1.json", json.dumps({"id": 1, "epoch": 1, "messages": [
            {"role": "user", "content": "x"}]}))
    result = load_file(str(path))
    assert result.calls_seen is None and result.calls_lost == 0


# ----------------------------------------------------------------------------- property


def _seed_files() -> list[Path]:
    files = sorted(p for p in FIXTURES.iterdir() if p.suffix in (".json", ".jsonl", ".md"))
    if CORPUS.is_dir():
        files += sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.suffix in (
            ".json", ".jsonl", ".md", ".traj") and p.name != "SOURCES.md")
    return files


SEEDS = _seed_files()
_CACHE: dict[Path, list[bytes]] = {}


def _lines(path: Path) -> list[bytes]:
    if path not in _CACHE:
        _CACHE[path] = path.read_bytes().split(b"\n")
    return _CACHE[path]


edits = st.lists(st.tuples(st.sampled_from(["delete", "duplicate", "swap", "halve", "junk",
                                            "cut"]),
                           st.integers(0, 1 << 20), st.integers(0, 1 << 20)),
                 min_size=1, max_size=3)


def _mutate(lines: list[bytes], changes: list[tuple[str, int, int]]) -> bytes:
    lines = list(lines)
    for kind, a, b in changes:
        if not lines:
            break
        i, j = a % len(lines), b % len(lines)
        if kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "swap":
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "halve":
            lines[i] = lines[i][: len(lines[i]) // 2]
        elif kind == "junk":
            lines.insert(i, b'{"type": 7, "message": [1, 2]} not json')
        else:  # cut the file short inside line i
            lines = [*lines[:i], lines[i][:b % (len(lines[i]) + 1)]]
    return b"\n".join(lines)


@pytest.fixture(scope="module")
def scratch() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as folder:
        yield folder


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                    HealthCheck.function_scoped_fixture])
@given(seed=st.sampled_from(SEEDS), changes=edits)
def test_no_importer_returns_fewer_calls_than_it_counted_without_a_warning(
        scratch: str, seed: Path, changes: list[tuple[str, int, int]]) -> None:
    """Mutated real recordings (the corpus and the fixtures): whatever an edit breaks, a file
    that imports fewer calls than were counted in it (and not set aside on purpose) carries one
    calls_not_imported warning with the number lost; a file that lost none carries none."""
    path = os.path.join(scratch, "mutated" + seed.suffix)
    with open(path, "wb") as handle:
        handle.write(_mutate(_lines(seed), changes))
    check_invariant(load_file(path))


# ----------------------------------------------------------------------------- replay -v


def test_replay_verbose_prints_seen_and_imported_calls_per_file(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from loopscope.cli import main

    lost_file = write(tmp_path, "lost.jsonl", jsonl(
        _line("user", "u1", "go"),
        _line("assistant-draft", "a1", [{"type": "tool_use", "id": "t", "name": "Bash",
                                         "input": {}}]),
        _line("assistant", "a2", [{"type": "text", "text": "done"}])))
    spans = str(FIXTURES / "openinference_spans.jsonl")
    run = CliRunner().invoke(main, ["replay", spans, lost_file, "--engine", "gglib", "--json",
                                    "--verbose"])
    assert run.exit_code == 0, run.output
    assert len(run.stdout.splitlines()) == 3  # stdout keeps the JSON lines only
    summary = run.stderr.split("loopscope: import summary, 2 files")[1].splitlines()[1:3]
    # (files in sorted path order: which comes first depends on where tmp_path lies)
    assert any(line.endswith("lost.jsonl: claude_code, 1 session, 1 / 0 tool calls, "
                             "1 NOT IMPORTED") for line in summary), summary
    assert any(line.endswith("openinference_spans.jsonl: openinference_spans, 2 sessions, "
                             "7 / 5 tool calls (2 tool span of a call already in the "
                             "model's output: set aside)") for line in summary), summary
    quiet = CliRunner().invoke(main, ["replay", spans, "--engine", "gglib", "--json"])
    assert "import summary" not in quiet.stderr
