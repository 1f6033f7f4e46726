"""codex_rollout: envelope records, user-item classification, turn
grouping, duplicates, compaction, legacy files, and code-mode extraction (tokenized, not run)."""

from __future__ import annotations

import pytest
from tests.formats._ext_formats_helpers import (
    assert_counts,
    codes,
    load_corpus,
    longest_identical_run,
    only,
    run_records,
    shape,
)

from loopscope.formats import codex_rollout
from loopscope.formats._codex_js import LiteralError, extract_code_mode_call, parse_literal

T = "2026-05-04T10:00:00.000Z"


def env(typ: str, payload: dict, ts: str = T) -> dict:
    return {"timestamp": ts, "type": typ, "payload": payload}


def item(payload: dict) -> dict:
    return env("response_item", payload)


def user_item(text: str) -> dict:
    return item({"type": "message", "role": "user",
                 "content": [{"type": "input_text", "text": text}]})


def user_event(text: str) -> dict:
    return env("event_msg", {"type": "user_message", "message": text})


def fcall(call_id: str, name: str = "shell", args: str = '{"cmd": "ls"}') -> dict:
    return item({"type": "function_call", "call_id": call_id, "name": name, "arguments": args})


def fout(call_id: str, output: object = "ok") -> dict:
    return item({"type": "function_call_output", "call_id": call_id, "output": output})


def exec_call(call_id: str, script: str) -> dict:
    return item({"type": "custom_tool_call", "call_id": call_id, "name": "exec", "input": script})


META = env("session_meta", {"id": "0197-demo", "timestamp": T, "cwd": "/w/app",
                            "originator": "codex_cli_rs", "cli_version": "0.140.0"})


# --------------------------------------------------------------------------- a whole small rollout


def test_spec_example():
    lines = [
        META,
        env("turn_context", {"turn_id": "t1", "cwd": "/w/app", "model": "demo-codex"}),
        user_item("<environment_context>cwd=/w/app</environment_context>"),
        user_item("Is the server up?"),
        user_event("Is the server up?"),
        exec_call("call_1", "const r = await tools.exec_command({cmd:'curl -s localhost:8080/health',"
                            " yield_time_ms: 1000}); text(r.output)"),
        item({"type": "custom_tool_call_output", "call_id": "call_1", "output": [
            {"type": "input_text", "text": "Script completed\nOutput:\n"},
            {"type": "input_text", "text": "ok"}]}),
        item({"type": "message", "role": "assistant",
              "content": [{"type": "output_text", "text": "The server is up."}]}),
    ]
    sessions, problems = run_records(codex_rollout, lines)
    s = only(sessions)
    assert shape(s) == "S U A0[exec_command] R0 A1"
    assert s.id == "0197-demo"
    assert s.agent.name == "Codex CLI" and s.agent.version == "0.140.0"
    assert s.models == ("demo-codex",)
    assert s.metadata["originator"] == "codex_cli_rs"
    system = s.events[0]
    assert system.recorded_role == "user"  # injected context, no matching user_message
    call = s.calls[0]
    assert call.arguments == {"cmd": "curl -s localhost:8080/health", "yield_time_ms": 1000}
    assert call.arguments_kind == "value"
    assert call.raw_arguments == call.arguments
    assert call.id == "call_1"
    assert call.wrapper is not None and call.wrapper.name == "exec" and call.wrapper.extracted
    assert call.wrapper.input.startswith("const r = await tools.exec_command(")
    result = s.events[3]
    assert result.text == "Script completed\nOutput:\n\nok"
    assert result.is_error is False and result.paired_by == "id"
    assert s.turns[1].text == "The server is up."
    assert "code_mode_fallback" not in codes(problems)


def test_every_user_item_is_a_user_event_without_event_msgs():
    s = only(run_records(codex_rollout, [META, user_item("<ctx/>"), user_item("hello")])[0])
    assert shape(s) == "U U"


def test_developer_items_are_system_and_reclassified_user_keeps_role():
    lines = [META, item({"type": "message", "role": "developer", "content": "rules"}),
             user_item("plugins"), user_item("real"), user_event("real")]
    s = only(run_records(codex_rollout, lines)[0])
    assert shape(s) == "S S U"
    assert [e.recorded_role for e in s.events] == ["developer", "user", "user"]


def test_turn_grouping_reasoning_message_and_parallel_calls():
    lines = [
        META, user_item("go"), user_event("go"),
        item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "Plan."}],
              "encrypted_content": "x"}),
        item({"type": "message", "role": "assistant",
              "content": [{"type": "output_text", "text": "Running "},
                          {"type": "output_text", "text": "both."}]}),
        env("event_msg", {"type": "token_count"}),  # no event, does not end the turn
        fcall("c1"), fcall("c2", "read", '{"p": 1}'),
        fout("c2", "two"), fout("c1", "one"),
        item({"type": "reasoning", "summary": []}),
        item({"type": "message", "role": "assistant", "content": [{"type": "output_text",
                                                                  "text": "Done."}]}),
    ]
    s = only(run_records(codex_rollout, lines)[0])
    assert shape(s) == "U A0[shell, read] R1 R0 A1"
    assert s.turns[0].text == "Running both."
    assert s.turns[0].thinking == "Plan."
    assert s.calls[0].arguments == {"cmd": "ls"} and s.calls[0].arguments_kind == "json_text"
    assert s.metadata["skipped"]["event_msg:token_count"] == 1


def test_duplicate_calls_and_outputs_are_dropped():
    lines = [META, user_item("go"), fcall("c1"), fout("c1"), fcall("c1"), fout("c1"),
             fcall("c2"), fout("c2")]
    sessions, problems = run_records(codex_rollout, lines)
    s = only(sessions)
    assert shape(s) == "U A0[shell] R0 A1[shell] R1"
    dup = [p for p in problems if p.code == "duplicates_skipped"]
    assert len(dup) == 1 and dup[0].count == 2 and dup[0].line == 5


def test_compacted_lines_make_compactions_and_context_compacted_only_as_fallback():
    with_both = [META, user_item("a"), user_event("a"), env("compacted", {"message": "summary 1"}),
                 env("event_msg", {"type": "context_compacted"})]
    s = only(run_records(codex_rollout, with_both)[0])
    assert shape(s) == "U C"
    assert s.events[1].summary == "summary 1"
    only_event = [META, user_item("a"), user_event("a"),
                  env("event_msg", {"type": "context_compacted", "message": "m"})]
    s = only(run_records(codex_rollout, only_event)[0])
    assert shape(s) == "U C"
    assert s.events[1].summary == "m"


def test_custom_tool_call_outside_code_mode_is_free_text_and_bad_json_is_kept():
    lines = [META, user_item("p"),
             item({"type": "custom_tool_call", "call_id": "p1", "name": "apply_patch",
                   "input": "*** Begin Patch\n*** End Patch"}),
             item({"type": "custom_tool_call_output", "call_id": "p1", "output": "done"}),
             fcall("f1", "shell", "{not json"), fout("f1")]
    sessions, problems = run_records(codex_rollout, lines)
    s = only(sessions)
    patch, bad = s.calls
    assert patch.name == "apply_patch" and patch.arguments_kind == "free_text"
    assert patch.arguments == "*** Begin Patch\n*** End Patch" and patch.wrapper is None
    assert bad.arguments == "{not json" and bad.arguments_error
    assert "bad_arguments" in codes(problems, "info")


def test_legacy_shell_output_exit_code_goes_to_meta_and_content_stays_a_string():
    out = '{"output": "boom", "metadata": {"exit_code": 2, "duration_seconds": 0.5}}'
    s = only(run_records(codex_rollout, [META, user_item("x"), fcall("c"), fout("c", out)])[0])
    result = s.events[-1]
    assert result.content == out and result.text == out
    assert result.meta["exit_code"] == 2 and result.meta["duration_seconds"] == 0.5
    assert result.is_error is False


def test_legacy_file_without_envelope():
    lines = [
        {"id": "legacy-1", "timestamp": T, "instructions": "Be brief."},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "function_call", "call_id": "c", "name": "shell", "arguments": "{}"},
        {"record_type": "state"},
        {"type": "function_call_output", "call_id": "c", "output": "ok"},
    ]
    s = only(run_records(codex_rollout, lines)[0])
    assert s.id == "legacy-1"
    assert s.metadata["instructions"] == "Be brief."
    assert shape(s) == "U A0[shell] R0"


def test_hosted_call_with_embedded_result_is_paired_by_structure():
    lines = [META, user_item("q"),
             item({"type": "web_search_call", "id": "ws_1", "status": "completed",
                   "action": {"type": "search", "query": "x"}, "results": ["r"]}),
             item({"type": "message", "role": "assistant",
                   "content": [{"type": "output_text", "text": "found"}]})]
    s = only(run_records(codex_rollout, lines)[0])
    assert shape(s) == "U A0[web_search] R0"
    assert s.calls[0].arguments == {"type": "search", "query": "x"}
    assert s.events[2].paired_by == "structure"


def test_code_mode_fallback_is_one_free_text_exec_call():
    script = "const a = await tools.exec_command({cmd:'ls'}); const b = await tools.write_stdin({});"
    lines = [META, user_item("x"), exec_call("c1", script),
             item({"type": "custom_tool_call_output", "call_id": "c1", "output": "ok"})]
    sessions, problems = run_records(codex_rollout, lines)
    s = only(sessions)
    call = s.calls[0]
    assert call.name == "exec" and call.arguments_kind == "free_text"
    assert call.raw_arguments == script and call.arguments == script
    assert call.wrapper is not None and call.wrapper.extracted is False and call.wrapper.reason
    assert "code_mode_fallback" in codes(problems, "info")
    # the chat view gives the engine the JSON encoding of the script
    view = s.chat_view()
    assert view[1]["tool_calls"][0]["function"]["arguments"].startswith('"const a')


# --------------------------------------------------------------------------- code-mode scanner


@pytest.mark.parametrize(("script", "name", "arguments"), [
    ("const r = await tools.exec_command({cmd:\"ls\",\"workdir\":\"/w\",yield_time_ms:10}); "
     "text(r.output)", "exec_command", {"cmd": "ls", "workdir": "/w", "yield_time_ms": 10}),
    ("await tools.t({a:'x\\'y', b: [1, 2, ], c: {d: null, e: true, f: false,},})",
     "t", {"a": "x'y", "b": [1, 2], "c": {"d": None, "e": True, "f": False}}),
    ("tools.t({h: 0x1F, n: -2.5, e: 1e3, p: +4, s: .5})", "t",
     {"h": 31, "n": -2.5, "e": 1000, "p": 4, "s": 0.5}),
    ("tools.t(`multi\nline`)", "t", "multi\nline"),
    ("tools.t('\\u00e9\\x41\\n\\t\\u{1F600}')", "t", "éA\n\t😀"),
    ("tools.t(\"\\ud83d\\ude00\")", "t", "😀"),
    ("const patch = \"*** Begin Patch\\n*** End Patch\";\ntext(await tools.apply_patch(patch));",
     "apply_patch", "*** Begin Patch\n*** End Patch"),
    ("let p = {a: 1}\nawait tools.t(p)", "t", {"a": 1}),
    ("// tools.fake(1)\n/* tools.fake(2) */ const s = 'tools.fake(3)';\ntools.real({x: `tools.y()`})",
     "real", {"x": "tools.y()"}),
    ("await tools.update_plan( { plan: [ {step:'a', status:'done'} ] } )", "update_plan",
     {"plan": [{"step": "a", "status": "done"}]}),
    ("tools.t()", "t", None),
    ("tools.t(42)", "t", 42),
])
def test_code_mode_extracts(script, name, arguments):
    result = extract_code_mode_call(script)
    assert result.ok, result.reason
    assert result.name == name
    assert result.arguments == arguments


@pytest.mark.parametrize(("script", "reason_part"), [
    ("text('no tools here')", "no tools"),
    ("await tools.a(1); await tools.b(2)", "2 tools calls"),
    ("tools.a({x: 1}, {y: 2})", "several arguments"),
    ("tools.a(1 + 2)", "expression"),
    ("tools.a(foo(1))", "expression"),
    ("tools.a(`x${y}`)", "substitution"),
    ("tools.a(unbound)", "not bound"),
    ("const p = make();\ntools.a(p)", "expression"),
    ("tools.a({x: Infinity})", "not a literal"),
    ("tools.a({x: [1,,2]})", "not a literal"),
    ("x.tools.a(1)", "no tools"),
    ("tools.a({'unterminated: 1})", "not a literal"),
    (12, "not a string"),
])
def test_code_mode_fallbacks(script, reason_part):
    result = extract_code_mode_call(script)
    assert not result.ok
    assert reason_part in (result.reason or "")


def test_literal_parser_rejects_trailing_text_and_never_executes():
    assert parse_literal("{a: 1, 'b': [\"c\"]}") == {"a": 1, "b": ["c"]}
    with pytest.raises(LiteralError):
        parse_literal("{a: 1} + 1")
    # a deeply nested literal fails cleanly instead of recursing without bound
    assert not extract_code_mode_call("tools.a(" + "[" * 5000 + "]" * 5000 + ")").ok


def test_literal_parser_reads_quoted_and_template_strings():
    # each closes at its own quote only, and escapes read alike in both
    assert parse_literal("'a`b\"c'") == 'a`b"c'
    assert parse_literal("`a'b\"c\\`d`") == "a'b\"c`d"
    # a template keeps a line break, CR and CRLF read as LF; a quoted string fails on one
    assert parse_literal("`a\r\nb\rc\nd`") == "a\nb\nc\nd"
    for quoted in ("'a\nb'", '"a\rb"'):
        with pytest.raises(LiteralError, match="newline in string literal"):
            parse_literal(quoted)
    with pytest.raises(LiteralError, match="unterminated string literal"):
        parse_literal("'abc")
    with pytest.raises(LiteralError, match="unterminated template literal"):
        parse_literal("`abc")
    # '${' is a substitution in a template only
    assert parse_literal("'${x}'") == "${x}"
    assert parse_literal("`$ {x}`") == "$ {x}"


# --------------------------------------------------------------------------- the real recordings (../shared/corpus)

CODEX = "codex/webdev-task-sxw-02__trajectory.jsonl"


@pytest.mark.corpus
def test_corpus_counts_and_ids():
    imported = load_corpus(CODEX)
    assert imported.detection.format == "codex_rollout"
    s = only(imported.sessions)
    assert s.id == "019f54a2-5eec-7e52-8991-3826499c82ef"
    assert s.source.endswith(CODEX)
    assert_counts(s, calls=57, turns=58, user=1, results=57, unanswered=0)
    assert sum(1 for e in s.events if e.kind == "system") == 4
    assert not [p for p in imported.problems if p.severity != "info"]
    extracted = [c for c in s.calls if c.wrapper is not None and c.wrapper.extracted]
    assert len(extracted) == 56
    names = [c.name for c in extracted]
    assert (names.count("write_stdin"), names.count("exec_command"), names.count("apply_patch"),
            names.count("update_plan")) == (26, 14, 14, 2)


@pytest.mark.corpus
def test_corpus_spot_checks():
    s = only(load_corpus(CODEX).sessions)
    c0 = s.calls[0]
    assert c0.name == "exec_command" and c0.arguments_kind == "value"
    assert c0.arguments == {
        "cmd": "pwd && rg --files -g '!*node_modules*' -g '!*.lock' | sed -n '1,240p'",
        "workdir": "/root/charles/webdev-task-sxw-02/webdev-task-sxw-02",
        "yield_time_ms": 10000, "max_output_tokens": 20000}
    assert c0.wrapper.name == "exec" and c0.wrapper.extracted is True
    assert s.calls[3].name == "apply_patch"
    assert s.calls[3].arguments.startswith("*** Begin Patch\n*** Add File: .gitignore\n")
    poll = {"session_id": 36178, "chars": "", "yield_time_ms": 1000, "max_output_tokens": 12000}
    assert all(c.name == "write_stdin" and c.arguments == poll for c in s.calls[23:37])
    wait = s.calls[41]
    assert wait.name == "wait" and wait.arguments_kind == "json_text"
    assert wait.raw_arguments == '{"cell_id":"41","yield_time_ms":20000,"max_tokens":12000}'
    assert longest_identical_run(s) == (14, 23, "write_stdin")
    first_result = s.events[s.calls[0].result]
    assert first_result.text.startswith("Script completed\nWall time 0.0 seconds\nOutput:\n")
