"""Bad input, nothing lost: every problem is reported per file with a clear message, and every
other session still loads."""

from __future__ import annotations

import json
import os
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from tests.formats._fmt_helpers import codes, jsonl, load, texts, write

from loopscope.formats import (
    ImportLimits,
    limits_from_specs,
    load_file,
    load_paths,
    parse_import_limits,
    parse_limit,
    parse_size,
)
from loopscope.formats import loader as loader_module
from loopscope.model import ToolResult

USER = {"role": "user", "content": "hello"}
CALL = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{}"}}]}
RESULT = {"role": "tool", "tool_call_id": "c1", "content": "ok"}


def _messages_jsonl() -> str:
    return jsonl(USER, CALL, RESULT)


# ----------------------------------------------------------------------------- files


def test_missing_empty_whitespace_and_folder(tmp_path: Path) -> None:
    missing = load_file(tmp_path / "nope.json")
    assert codes(missing) == ["unreadable"] and missing.problems[0].severity == "error"
    assert codes(load(tmp_path, "e.json", "")) == ["empty_file"]
    assert codes(load(tmp_path, "w.jsonl", "  \n\n\t \n")) == ["empty_file"]
    folder = load_file(tmp_path)
    assert codes(folder) == ["unreadable"]


def test_invalid_lines_are_skipped_and_named(tmp_path: Path) -> None:
    text = jsonl(USER, CALL) + '{"role": "tool", "tool_call_id": "c1", "content": \n' + \
        jsonl(RESULT, {"role": "assistant", "content": "done"})
    result = load(tmp_path, "s.jsonl", text)
    (session,) = result.sessions
    assert session.counts()["calls"] == 1 and session.counts()["results"] == 1
    (line_problem,) = [p for p in result.problems if p.code == "invalid_json_line"]
    assert line_problem.line == 3
    assert line_problem.text().startswith(f"{tmp_path / 's.jsonl'}:3: warning: line is not "
                                          "valid JSON (")
    assert line_problem.text().endswith("; the line was skipped [invalid_json_line]")
    assert line_problem in session.problems


def test_truncated_jsonl_last_line(tmp_path: Path) -> None:
    text = jsonl(USER, CALL) + '{"role": "tool", "tool_call_id": "c1", "cont'
    result = load(tmp_path, "t.jsonl", text)
    (session,) = result.sessions
    assert session.counts()["unanswered_calls"] == 1
    assert codes(result, "warning") == ["truncated_line"]
    assert result.problems[0].line == 3


def test_crlf_and_unicode_line_separators(tmp_path: Path) -> None:
    text = (json.dumps({"role": "user", "content": "a\u2028b\u0085c\x0bd\x0ce"},
                       ensure_ascii=False) + "\r\n" + json.dumps(CALL) + "\r\n")
    result = load(tmp_path, "u.jsonl", text)
    (session,) = result.sessions
    assert session.events[0].text == "a\u2028b\u0085c\x0bd\x0ce"
    assert [e.origin.line for e in session.events] == [1, 2]
    assert not [p for p in result.problems if p.severity != "info"]


def test_truncated_document_is_salvaged(tmp_path: Path) -> None:
    element = {"task_id": 1, "trial": 0, "reward": 1, "info": {},
               "traj": [USER, CALL, RESULT]}
    full = json.dumps([element, dict(element, task_id=2), dict(element, task_id=3)])
    cut = full[: full.rindex('"traj"')]  # inside the third element
    result = load(tmp_path, "tau.json", cut)
    assert result.detection.format == "tau_bench"
    assert len(result.sessions) == 2
    (warning,) = [p for p in result.problems if p.code == "invalid_json"]
    assert warning.severity == "warning"
    assert "truncated after element 2; 2 elements kept" in warning.message


def test_truncated_object_is_an_error_with_hint(tmp_path: Path) -> None:
    result = load(tmp_path, "cut.json", json.dumps({"messages": [USER, CALL]}, indent=1)[:-10])
    assert codes(result) == ["invalid_json"] and not result.sessions
    assert "truncated?" in result.problems[0].message


def test_binary_junk(tmp_path: Path) -> None:
    result = load(tmp_path, "junk.json", bytes(range(256)) * 4)
    assert codes(result) == ["unknown_format"]
    assert "binary data, not text" in result.problems[0].message


def test_latin1_is_replaced_with_a_warning(tmp_path: Path) -> None:
    data = (json.dumps(USER) + "\n" + json.dumps({"role": "user", "content": "caf\u00e9"},
                                                 ensure_ascii=False) + "\n").encode("latin-1")
    result = load(tmp_path, "l.jsonl", data)
    (session,) = result.sessions
    assert session.events[1].text == "caf\ufffd"
    (problem,) = [p for p in result.problems if p.code == "encoding"]
    assert (problem.severity, problem.line) == ("warning", 2)
    doc = json.dumps({"messages": [{"role": "user", "content": "\u00e9t\u00e9"}]},
                     ensure_ascii=False, indent=1).encode("latin-1")
    result = load(tmp_path, "l.json", doc)
    assert result.sessions[0].events[0].text == "\ufffdt\ufffd"
    assert codes(result, "warning") == ["encoding"]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-8-sig"])
def test_boms(encoding: str, tmp_path: Path) -> None:
    text = json.dumps({"role": "user", "content": "h\u00e9llo \U0001f600"},
                      ensure_ascii=False) + "\n" + json.dumps(CALL) + "\n"
    data = text.encode(encoding)
    if encoding == "utf-16-be":
        data = b"\xfe\xff" + data
    result = load(tmp_path, "bom.jsonl", data)
    (session,) = result.sessions
    assert session.events[0].text == "h\u00e9llo \U0001f600"
    assert codes(result, "info")[:1] == ["encoding"]
    assert not [p for p in result.problems if p.severity != "info"]


def test_deep_nesting_document_and_line(tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    result = load(tmp_path, "deep.json", deep)
    assert codes(result) == ["too_deep"] and result.problems[0].severity == "error"
    pretty_deep = "{\"messages\":\n" + deep + "}"
    assert codes(load(tmp_path, "deep2.json", pretty_deep)) == ["too_deep"]
    text = jsonl(USER) + '{"role": "user", "content": ' + deep + "}\n" + jsonl(CALL)
    result = load(tmp_path, "deep.jsonl", text)
    (session,) = result.sessions
    assert session.counts()["calls"] == 1
    (problem,) = [p for p in result.problems if p.code == "too_deep"]
    assert (problem.severity, problem.line) == ("warning", 2)
    # Within orjson's range but over a configured limit.
    limits = ImportLimits(max_json_depth=10)
    nested = {"messages": [dict(USER, extra=[[[[[[[[[[[1]]]]]]]]]]])]}
    assert codes(load(tmp_path, "d10.json", nested, limits=limits)) == ["too_deep"]
    assert load(tmp_path, "d10b.json", nested).sessions


def test_over_long_line_streams_with_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    chunk = "x" * (1 << 20)
    with open(path, "w") as handle:
        handle.write(json.dumps(USER) + "\n")
        handle.write('{"role": "user", "content": "')
        for _ in range(40):  # a 40 MiB line
            handle.write(chunk)
        handle.write('"}\n')
        handle.write(json.dumps(CALL) + "\n")
    limits = ImportLimits(max_line_bytes=1 << 20)
    tracemalloc.start()
    try:
        result = load_file(path, limits)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 12 * (1 << 20), peak
    (session,) = result.sessions
    assert session.counts()["calls"] == 1
    (problem,) = [p for p in result.problems if p.code == "line_too_long"]
    assert problem.line == 2 and "max_line_bytes" in problem.message


def test_many_lines_stream(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    with open(path, "w") as handle:
        for i in range(20_000):
            handle.write(json.dumps({"role": "user", "content": f"m{i}"}) + "\n")
    result = load_file(path, ImportLimits())
    assert result.sessions[0].counts()["user_messages"] == 20_000


def test_size_limits(tmp_path: Path) -> None:
    path = write(tmp_path, "doc.json", json.dumps({"messages": [USER] * 100}, indent=1))
    big = load_file(path, ImportLimits(max_file_bytes=100))
    assert codes(big) == ["too_large"] and "max_file_bytes" in big.problems[0].message
    doc = load_file(path, ImportLimits(max_document_bytes=100))
    assert codes(doc) == ["too_large"] and "max_document_bytes" in doc.problems[0].message
    lines = write(tmp_path, "m.jsonl", jsonl(*[USER] * 100))
    assert load_file(lines, ImportLimits(max_document_bytes=100)).sessions  # JSONL unaffected


def test_memory_guard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from loopscope.formats import jsonio
    monkeypatch.setattr(jsonio, "available_memory", lambda: 1000)
    path = write(tmp_path, "doc.json", json.dumps({"messages": [USER] * 100}, indent=1))
    result = load_file(path)
    assert codes(result) == ["too_large"] and "memory_factor" in result.problems[0].message


def test_long_values_are_truncated_with_a_digest(tmp_path: Path) -> None:
    limits = ImportLimits(max_value_chars=50)
    long = "y" * 2_000_001
    result = load(tmp_path, "v.jsonl", jsonl({"role": "user", "content": long}, USER),
                  limits=limits)
    text = result.sessions[0].events[0].text
    import hashlib
    digest = hashlib.sha256(long.encode()).hexdigest()
    assert text == "y" * 1_000_000 + f"…[truncated: 2000001 characters, sha256 {digest}]"
    assert codes(result, "info") == ["value_truncated"]
    doc = load(tmp_path, "v.json", {"messages": [{"role": "user", "content": long}]},
               limits=limits)
    assert doc.sessions[0].events[0].text.endswith(f"sha256 {digest}]")
    assert "/messages/0/content" in next(p for p in doc.problems
                                         if p.code == "value_truncated").message


def test_session_and_event_limits(tmp_path: Path) -> None:
    conv = {"messages": [USER, CALL, RESULT]}
    result = load(tmp_path, "c.jsonl", jsonl(*[conv] * 5),
                  limits=ImportLimits(max_sessions_per_file=3))
    assert len(result.sessions) == 3
    assert "too_many_sessions" in codes(result, "warning")
    result = load(tmp_path, "e.jsonl", jsonl(USER, CALL, RESULT, USER),
                  limits=ImportLimits(max_events_per_session=2))
    (session,) = result.sessions
    assert len(session.events) == 2 and len(session.chat_messages or ()) == 2
    assert "session_truncated" in codes(result, "warning")


def test_warning_cap(tmp_path: Path) -> None:
    text = jsonl(USER) + "{bad\n" * 25 + jsonl(CALL)
    result = load(tmp_path, "cap.jsonl", text)
    warnings = [p for p in result.problems if p.code == "invalid_json_line"]
    assert len(warnings) == 21
    assert warnings[-1].count == 5 and "and 5 more" in warnings[-1].message


def test_infos_are_aggregated(tmp_path: Path) -> None:
    odd = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "function": {"name": "x", "arguments": "{bad"}},
        {"id": "b", "function": {"name": "y", "arguments": "nope"}}]}
    result = load(tmp_path, "agg.jsonl", jsonl(USER, odd))
    (info,) = [p for p in result.problems if p.code == "bad_arguments"]
    assert info.count == 2 and info.line == 2


# ----------------------------------------------------------------------------- isolation


def test_internal_error_keeps_earlier_sessions(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from loopscope.formats import openai_chat
    original = openai_chat._body_session
    calls = {"n": 0}

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("boom\x1b[2J")
        return original(*args, **kwargs)

    monkeypatch.setattr(openai_chat, "_body_session", flaky)
    conv = {"messages": [USER]}
    result = load(tmp_path, "x.json", [conv, conv, conv])
    path = str(tmp_path / "x.json")
    assert [s.source for s in result.sessions] == [f"{path}#0"]
    (problem,) = [p for p in result.problems if p.code == "internal_error"]
    assert problem.source == f"{path}#1" and "RuntimeError" in problem.message
    assert "\x1b" not in problem.text()
    # Other files are unaffected.
    other = write(tmp_path, "ok.jsonl", _messages_jsonl())
    assert len(load_paths([other]).files[0].sessions) == 1


@pytest.mark.parametrize(("module", "reader"), [("openai_chat", "_body_session"),
                                                ("anthropic_messages", "_body")])
def test_an_importer_bug_in_one_line_loses_that_conversation_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, reader: str) -> None:
    """Conversation-per-line JSONL: a bug while reading the second line's conversation is
    reported for that line, and the first and third conversations are still imported."""
    import importlib

    imported = importlib.import_module(f"loopscope.formats.{module}")
    original = getattr(imported, reader)
    calls = {"n": 0}

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("boom")
        return original(*args, **kwargs)

    monkeypatch.setattr(imported, reader, flaky)
    body = {"messages": [USER]}
    result = load(tmp_path, "c.jsonl", jsonl(body, body, body), format=module)
    path = str(tmp_path / "c.jsonl")
    assert [s.source for s in result.sessions] == [f"{path}#0", f"{path}#2"]
    (problem,) = [p for p in result.problems if p.code == "internal_error"]
    assert (problem.source, problem.line) == (f"{path}#1", 2)


def test_missing_module_is_unsupported_variant(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader_module, "_module", lambda format_id: None)
    result = load(tmp_path, "s.jsonl", _messages_jsonl())
    assert codes(result) == ["unsupported_variant"]
    assert result.problems[0].message == ("recognised as openai_chat (OpenAI chat messages); "
                                          "not supported yet")


def test_forced_format(tmp_path: Path) -> None:
    path = write(tmp_path, "x.json", json.dumps({"messages": [USER]}))
    result = load_file(path, format="anthropic_messages")
    assert result.sessions[0].format == "anthropic_messages"
    assert "forced" in result.detection.reason
    bogus = load_file(path, format="../../etc")
    assert codes(bogus) == ["unsupported_variant"]


# ----------------------------------------------------------------------------- names, scans

HOSTILE = ["new\nline.jsonl", "ansi\x1b[31mred.jsonl", "rtl\u202egnp.jsonl",
           "zero\u200bwidth.jsonl", ("x" * 200) + ".jsonl"]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_file_names_are_escaped(name: str, tmp_path: Path) -> None:
    if sys.platform == "win32" and "\n" in name:  # pragma: no cover
        pytest.skip("newline in a file name")
    path = write(tmp_path, name, _messages_jsonl() + "{bad\n")
    result = load_file(path)
    assert len(result.sessions) == 1
    for line in texts(result):
        assert "\n" not in line and "\x1b" not in line and "\u202e" not in line \
            and "\u200b" not in line
    junk = write(tmp_path, "j" + name, b"\x00\x01binary")
    (problem,) = load_file(junk).problems
    assert "\n" not in problem.text() and "\x1b" not in problem.text()


def test_folder_scan(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / ".hidden").mkdir()
    write(tmp_path, "a/s.jsonl", _messages_jsonl())
    write(tmp_path, ".hidden/s.jsonl", _messages_jsonl())
    write(tmp_path, ".dot.jsonl", _messages_jsonl())
    write(tmp_path, "README.md", "# notes\n")
    write(tmp_path, "notes.json", json.dumps({"items": [], "owner": "me"}))
    write(tmp_path, "image.png", b"\x89PNG")
    write(tmp_path, "B.JSONL", _messages_jsonl())
    os.symlink(tmp_path, tmp_path / "a" / "loop")
    report = load_paths([tmp_path])
    names = [os.path.relpath(f.path, tmp_path) for f in report.files]
    assert names == ["B.JSONL", "README.md", "a/s.jsonl", "notes.json"]
    assert report.ignored_files == 1
    severities = {os.path.relpath(f.path, tmp_path): [(p.severity, p.code) for p in f.problems]
                  for f in report.files}
    assert severities["README.md"] == [("info", "unknown_format")]
    assert severities["notes.json"] == [("warning", "unknown_format")]
    assert len(report.sessions) == 2 and not report.has_errors
    explicit = load_paths([tmp_path / "notes.json"])
    assert explicit.files[0].problems[0].severity == "error"


# ----------------------------------------------------------------------------- limits


def test_parse_size_and_limits() -> None:
    assert parse_size("1GiB") == 1 << 30
    assert parse_size("512 MiB") == 512 << 20
    assert parse_size("1.5KiB") == 1536
    assert parse_size("1_000") == 1000
    assert parse_size("10b") == 10
    for bad in ["", "1GB", "x", "1.5", "-1"]:
        with pytest.raises(ValueError):
            parse_size(bad)
    assert parse_limit("max_document_bytes=1GiB") == ("max_document_bytes", 1 << 30)
    with pytest.raises(ValueError, match="unknown import limit"):
        parse_limit("max_nothing=1")
    with pytest.raises(ValueError, match="positive"):
        parse_limit("max_json_depth=0")
    with pytest.raises(ValueError):
        parse_limit("max_json_depth")
    limits = limits_from_specs(["max_json_depth=64", "max_line_bytes=2MiB",
                                "max_json_depth=65"])
    assert (limits.max_json_depth, limits.max_line_bytes) == (65, 2 << 20)
    assert parse_import_limits([("max_value_chars", "100")]).max_value_chars == 100


def test_a_truncated_openhands_events_array_is_salvaged_wherever_it_is_cut(
        tmp_path: Path) -> None:
    """The README promises truncated arrays are salvaged: an OpenHands events file cut
    anywhere inside its last event — inside a string, a literal, a number, between keys —
    keeps every complete event, with a warning naming the file and the line of the cut."""
    fixture = Path(__file__).parent / "fixtures" / "openhands_v1_events.json"
    full = fixture.read_text(encoding="utf-8")
    whole = load_file(fixture)
    (complete,) = whole.sessions
    start = full.rindex("\n  {") + 1  # the last event, on its own line
    line = full.count("\n", 0, start) + 1
    cuts = list(range(start + 3, len(full) - 4, 5))
    assert len(cuts) > 20
    kinds = set()
    for cut in cuts:
        kinds.add(full[cut - 1])
        path = write(tmp_path, f"cut{cut}.json", full[:cut])
        result = load_file(path)
        assert result.detection.format == "openhands_events", (cut, texts(result))
        (session,) = result.sessions
        assert len(session.events) <= len(complete.events)
        (warning,) = [p for p in result.problems if p.code == "invalid_json"]
        assert warning.severity == "warning" and warning.line == line
        assert warning.text().startswith(f"{path}:{line}: warning: file is truncated after "
                                         "element 17; 17 elements kept (the file ends inside "
                                         f"element 18 of its JSON array, which starts at line "
                                         f"{line}, column 3")
    assert {'"', ":", ","} <= kinds or len(kinds) > 5  # cut in strings, after keys, …


def test_an_array_broken_in_the_middle_is_not_salvaged(tmp_path: Path) -> None:
    """Only a file that ends inside a value is truncated: an error with more data after it
    loses data in the middle, and the file is refused whole, as before."""
    events = json.loads((Path(__file__).parent / "fixtures" / "openhands_v1_events.json")
                        .read_text(encoding="utf-8"))
    text = json.dumps(events, indent=2)
    middle = text.index('"source"', len(text) // 2)
    broken = text[:middle] + '"source": tru,' + text[middle + len('"source": "agent",'):]
    result = load(tmp_path, "broken.json", broken)
    assert codes(result) == ["invalid_json"] and not result.sessions


def test_a_stray_backslash_keeps_the_line_with_a_warning(tmp_path: Path) -> None:
    """GitHub's e-mail scrubbing leaves ``\\***@***.***`` in recordings it shows: the line's
    only fault is a backslash that starts no JSON escape. The line (here the call's result)
    is read with that backslash kept as a character, and a warning names the line."""
    scrubbed = r'{"role": "tool", "tool_call_id": "c1", "content": "mail: \***@***.*** \n ok"}'
    text = jsonl(USER, CALL) + scrubbed + "\n" + jsonl({"role": "assistant", "content": "done"})
    result = load(tmp_path, "s.jsonl", text)
    (session,) = result.sessions
    assert session.counts()["results"] == 1 and session.counts()["unanswered_calls"] == 0
    (tool_result,) = [e for e in session.events if isinstance(e, ToolResult)]
    assert tool_result.text == "mail: \\***@***.*** \n ok"
    (warning,) = [p for p in result.problems if p.severity == "warning"]
    assert (warning.code, warning.line) == ("invalid_escape", 3)
    assert "kept as a character" in warning.text()


def test_a_line_with_a_stray_backslash_and_another_fault_is_skipped(tmp_path: Path) -> None:
    broken = r'{"role": "tool", "tool_call_id": "c1", "content": "\* and no end' + "\n"
    result = load(tmp_path, "s.jsonl", jsonl(USER, CALL) + broken)
    assert [(p.code, p.line) for p in result.problems if p.severity == "warning"] == [
        ("invalid_json_line", 3)]


def test_a_document_with_a_stray_backslash_is_read_with_a_warning(tmp_path: Path) -> None:
    body = json.dumps({"messages": [USER, CALL, RESULT]}).replace('"ok"', '"ok \\\\ \\\\*"')
    body = body.replace("\\\\*", "\\*")  # a lone backslash before "*": no JSON escape
    result = load(tmp_path, "s.json", body)
    (session,) = result.sessions
    (tool_result,) = [e for e in session.events if isinstance(e, ToolResult)]
    assert tool_result.text == "ok \\ \\*"
    assert [p.code for p in result.problems if p.severity == "warning"] == ["invalid_escape"]
    assert not [p for p in result.problems if p.severity == "error"]
