"""Detector-level cases, most of them gglib's own tests under their upstream names (prefixes: LD
loop detection, VD reading the answers, OB classifiers, RH results hashing, SG signatures and
canonical form, ST stagnation), and the FNV, signature and float tables."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loopscope.engines.gglib import (
    COSTLY_OBSERVATION_TOOLS,
    DEFAULT_OBSERVATION_TOOLS,
    MAX_REPR_DEPTH,
    LoopDetected,
    LoopDetector,
    RepeatOutcome,
    StagnationDetected,
    StagnationDetector,
    ToolCall,
    batch_results_hash,
    batch_signature,
    fnv1a_64,
    hash_result_content,
    hash_result_text,
    hex16,
    is_costly_batch,
    is_observation_batch,
    stable_repr,
    tool_signature,
)
from loopscope.engines.gglib.upstream import domain_calls

DEF_PATS = DEFAULT_OBSERVATION_TOOLS


def tc(name: str, args: Any = None, id: str = "c1") -> ToolCall:
    return ToolCall(id, name, {} if args is None else args)


def chk(d: LoopDetector, batch: list[ToolCall], S: int = 2, pats: Any = (), O: int | None = None) -> Any:  # noqa: E741
    return d.check(batch, S, list(pats), O)


def ok_or_err(d: LoopDetector, batch: list[ToolCall], *args: Any) -> str:
    try:
        chk(d, batch, *args)
    except LoopDetected:
        return "ERR"
    return "ok"


def turn(d: LoopDetector, tool: str, ans: Any) -> str:
    """``turn(tool, ans)``: check with (2, [], 15) then record ``ans``."""
    try:
        rec = chk(d, [tc(tool)], 2, [], 15)
    except LoopDetected:
        return "ERR"
    d.record_results(rec, ans)
    return "ok"


# ---------------------------------------------------------------------------------- FNV-1a


@pytest.mark.parametrize(
    ("text", "hexval"),
    [
        ("", "cbf29ce484222325"),
        ("a", "af63dc4c8601ec8c"),
        ("foobar", "85944171f73967e8"),
        ("{}", "08f44b07b5901a25"),
        ("hello", "a430d84680aabd0b"),
        ("café", "48e8823acfa40d89"),
        ("Let me look at the file.", "3b6a680be9a5dda3"),
        ("I cannot proceed further.", "6faaa0c82a271743"),
        ("Sure!", "a1e9591a8a79d653"),
        ("plan A", "e70832b006373fd5"),
        ("plan B", "e7082fb006373abc"),
        ("I am stuck.", "eaba8178650affd0"),
        ("stuck", "9bcdc0ada7f7a0ab"),
    ],
)
def test_fnv_table(text: str, hexval: str) -> None:
    assert hex16(fnv1a_64(text)) == hexval


def test_fnv_python_fallback_agrees() -> None:
    from loopscope.engines.gglib import fnv

    for text in ["", "a", "café", "x" * 1000, "😀\u2028"]:
        assert fnv._fnv1a_64_py(text.encode()) == fnv1a_64(text)


def test_fnv_lone_surrogate_is_replaced() -> None:
    assert fnv1a_64("a\ud800") == fnv1a_64("a\ufffd")


# ----------------------------------------------------------------------------- signatures


@pytest.mark.parametrize(
    ("calls", "sig"),
    [
        ([("t", "{}")], "t:08f44b07b5901a25"),
        ([("x", '{"k":"v"}')], "x:c60340ed39800210"),
        ([("fs_read", '{"path":"/etc/hosts"}')], "fs_read:db2a3b6c5c2b8657"),
        ([("write_file", '{"path":"a.rs"}')], "write_file:ed658c7fbe3ce9f2"),
        ([("read_file", '{"path":"a.rs"}')], "read_file:ed658c7fbe3ce9f2"),
        ([("write_file", "{}")], "write_file:08f44b07b5901a25"),
        ([("write_file", '{"path":"src/main.rs"}')], "write_file:247aba76b12bf80f"),
        ([("run_in_terminal", '{"cmd":"make"}')], "run_in_terminal:8a24337fc7a20d19"),
        ([("tool", '{"b":2,"a":1}')], "tool:a0ebc03bdc71de7b"),
        ([("t", '{"outer":{"y":2,"x":1}}')], "t:da6312ee7883efe6"),
        ([("edit", "{not valid json")], "edit:8b0ae5da9bf33349"),
        ([("search", '{"q":0}')], "search:503ef39a34d74acc"),
        ([("search", '{"q":1}')], "search:503bf79a34d51bc1"),
        ([("b_tool", "{}"), ("a_tool", "{}")], "a_tool:08f44b07b5901a25|b_tool:08f44b07b5901a25"),
        (
            [("write_file", '{"path":"a.rs"}'), ("run_tests", '{"suite":"unit"}')],
            "run_tests:a9c1fbd9ae6404a1|write_file:ed658c7fbe3ce9f2",
        ),
        (
            [("get_errors", '{"f":"a.rs"}'), ("get_errors", '{"f":"b.rs"}')],
            "get_errors:7222bd71cbaae562|get_errors:d315df7f3d4ff879",
        ),
        ([("", "{}")], ":08f44b07b5901a25"),
        ([("", "null")], ":5b9bc4ba528108e4"),
        ([("t", "{}"), ("t", "{}")], "t:08f44b07b5901a25|t:08f44b07b5901a25"),
        ([], ""),
    ],
)
def test_signature_table(calls: list[tuple[str, str]], sig: str) -> None:
    wire = [{"id": f"c{i}", "function": {"name": n, "arguments": a}} for i, (n, a) in enumerate(calls)]
    assert batch_signature(domain_calls(wire)) == sig


# ------------------------------------------------------------------------------- floats (serde layout)


@pytest.mark.parametrize(
    ("literal", "rendered"),
    [
        ("1.0", "1.0"),
        ("100", "100"),
        ("1e2", "100.0"),
        ("1E2", "100.0"),
        ("2.0e0", "2.0"),
        ("-1.0", "-1.0"),
        ("1e15", "1000000000000000.0"),
        ("1e16", "1e16"),
        ("1e17", "1e17"),
        ("1.5e16", "1.5e16"),
        ("0.1", "0.1"),
        ("0.00001", "0.00001"),
        ("0.000001", "1e-6"),
        ("1e-7", "1e-7"),
        ("1.5e-7", "1.5e-7"),
        ("123.456", "123.456"),
        ("12345678.9", "12345678.9"),
        ("0.3333333333333333", "0.3333333333333333"),
        ("1.5e300", "1.5e300"),
        ("-2.5e-300", "-2.5e-300"),
        ("5e-324", "5e-324"),
        ("1.7976931348623157e308", "1.7976931348623157e308"),
        ("0", "0"),
        ("0.0", "0.0"),
        ("-0", "-0.0"),
        ("-0.0", "-0.0"),
        ("9007199254740993", "9007199254740993"),
        ("12345678901234567890", "12345678901234567890"),
        ("18446744073709551615", "18446744073709551615"),
        ("18446744073709551616", "1.8446744073709552e19"),
        ("-9223372036854775808", "-9223372036854775808"),
        ("-9223372036854775809", "-9.223372036854776e18"),
        ("123456789012345678901234567890", "1.2345678901234568e29"),
    ],
)
def test_number_rendering(literal: str, rendered: str) -> None:
    call = domain_calls([{"function": {"name": "t", "arguments": literal}}])[0]
    assert stable_repr(call.arguments) == rendered


NEST = 127 * "[" + 127 * "]"


@pytest.mark.parametrize(
    ("text", "rendered"),
    [
        ("{}", "{}"),
        ('{"b":2,"a":1}', '{"a":1,"b":2}'),
        (' { "b" : 2 ,\n "a":1 } ', '{"a":1,"b":2}'),
        ('{"a":[3,1,{"c":null,"b":true}],"b":[],"c":{}}', '{"a":[3,1,{"b":true,"c":null}],"b":[],"c":{}}'),
        (
            '{"\\u00e9":1,"z":2,"A":3,"a":4,"_":5,"\\ud83d\\ude00":6,"\\uffff":7,"":8}',
            '{"":8,"A":3,"_":5,"a":4,"z":2,"é":1,"\uffff":7,"😀":6}',
        ),
        ('{"a":1,"a":2}', '{"a":2}'),
        (
            '{"s":"a\\"b\\\\c\\n\\t\\u0001\\u001f\\u007f\\u2028\\u00e9\\ud83d\\ude00/\\b\\f\\r"}',
            '{"s":"a\\"b\\\\c\\n\\t\\u0001\\u001f\x7f\u2028é😀/\\b\\f\\r"}',
        ),
        ("{not valid json", '"{not valid json"'),
        ('{"a":1} trailing', '"{\\"a\\":1} trailing"'),
        ("", '""'),
        ("null", "null"),
        ("123", "123"),
        ('"str"', '"str"'),
        ("[1,2,3]", "[1,2,3]"),
        ('{"s":"\\ud800"}', '"{\\"s\\":\\"\\\\ud800\\"}"'),
        ('{"v":NaN}', '"{\\"v\\":NaN}"'),
        ('{"v":1e400}', '"{\\"v\\":1e400}"'),
        (NEST, 16 * "[" + '"..."' + 16 * "]"),
        ("[" + NEST + "]", json.dumps("[" + NEST + "]")),
        ("[[" + NEST + "]]", json.dumps("[[" + NEST + "]]")),
    ],
)
def test_whole_value_table(text: str, rendered: str) -> None:
    call = domain_calls([{"function": {"name": "t", "arguments": text}}])[0]
    assert stable_repr(call.arguments) == rendered


def test_bare_object_and_missing_arguments() -> None:
    [c] = domain_calls([{"function": {"name": "t", "arguments": {"b": 1, "a": [2, {"d": 1, "c": 0}]}}}])
    assert stable_repr(c.arguments) == '{"a":[2,{"c":0,"d":1}],"b":1}'
    [c] = domain_calls([{"function": {"name": "t"}}])
    assert stable_repr(c.arguments) == "null"
    [c] = domain_calls([{"id": "x"}])
    assert stable_repr(c.arguments) == "null"


def nest(d: int) -> Any:
    v: Any = "leaf"
    for _ in range(d):
        v = {"x": v}
    return v


# ------------------------------------------------------------------------------- LD: loop detection


def test_ld01_loop_not_detected_within_limit() -> None:
    d = LoopDetector()
    assert [ok_or_err(d, [tc("t")], 2, [], None) for _ in range(2)] == ["ok", "ok"]


def test_ld02_loop_detected_on_third_identical_batch() -> None:
    d = LoopDetector()
    assert [ok_or_err(d, [tc("t")], 2, [], None) for _ in range(3)] == ["ok", "ok", "ERR"]


def test_ld03_interleaved_batches_never_trigger() -> None:
    d = LoopDetector()
    for _ in range(50):
        assert ok_or_err(d, [tc("a")], 2, [], None) == "ok"
        assert ok_or_err(d, [tc("b")], 2, [], None) == "ok"


def test_ld04_a_run_broken_and_resumed_starts_over() -> None:
    d = LoopDetector()
    got = [ok_or_err(d, [tc(n)], 2, [], None) for n in "aabaaa"]
    assert got == ["ok"] * 5 + ["ERR"]


def test_ld05_the_batch_that_breaks_a_run_starts_its_own() -> None:
    d = LoopDetector()
    assert [ok_or_err(d, [tc(n)], 2, [], None) for n in "abbb"] == ["ok", "ok", "ok", "ERR"]


def test_ld06_loop_error_signature_matches_batch_sig() -> None:
    batch = [tc("x", {"k": "v"})]
    with pytest.raises(LoopDetected) as e:
        chk(LoopDetector(), batch, 0, [], None)
    assert e.value.signature == "x:c60340ed39800210" == batch_signature(batch)


def test_ld07_same_name_different_args_do_not_trigger() -> None:
    d = LoopDetector()
    assert all(ok_or_err(d, [tc("search", {"q": i})], 2, [], None) == "ok" for i in range(10))


def test_ld08_max_strikes_zero_triggers_on_first_occurrence() -> None:
    assert ok_or_err(LoopDetector(), [tc("instant_tool")], 0, [], None) == "ERR"


@pytest.mark.parametrize(
    ("names", "pats", "expected"),
    [  # gglib's is_observation_batch tests, then its pattern-case tests
        (["playwright_mcp_browser_snapshot"], ["snapshot"], True),
        (["take_screenshot_full"], ["screenshot"], True),
        (["BROWSER_SNAPSHOT"], ["snapshot"], True),
        (["browser_snapshot", "do_thing"], ["snapshot"], False),
        (["browser_snapshot"], [], False),
        (["readFile"], ["readFile"], True),
        (["mcp__fs__listDir"], ["listDir"], True),
        (["READ_FILE"], ["read_file"], True),
        (["read_file"], ["READ_FILE"], True),
        (["ReAd_FiLe"], ["rEaD_fIlE"], True),
        (["read_file"], ["read_file"], True),
        (["mcp_read_file"], ["read_file"], True),
        (["write_file"], ["read_file"], False),
        (["read_file", "write_file"], ["read_file"], False),
        (["read_file"], [], False),
        (["anything"], [""], True),  # an empty pattern matches every name, unguarded upstream
        ([], ["x"], True),  # vacuous
        (["browserNavigate"], ["navigate"], True),
        (["fetchWebpage"], ["fetch_webpage"], False),
    ],
)
def test_is_observation_batch(names: list[str], pats: list[str], expected: bool) -> None:
    assert is_observation_batch([tc(n) for n in names], pats) is expected


OBS_TRUE = ["read_file", "read_text_file", "read_media_file", "read_multiple_files", "list_directory", "list_directory_with_sizes", "list_allowed_directories", "directory_tree", "search_files", "get_file_info", "list_files", "list_code_definition_names", "file_search", "grep_search", "semantic_search", "codebase_search", "test_search", "get_errors", "get_changed_files", "get_terminal_output", "list_code_usages", "fetch_webpage", "list_dir", "2:read_file", "mcp_filesystem_read_text_file"]
OBS_FALSE = ["thread_create", "listen_port", "set_global_config", "preview_changes", "write_file", "edit_file", "create_file", "create_directory", "delete_file", "delete_directory", "move_file", "run_in_terminal", "run_in_terminal_background", "apply_patch", "insert_edit_into_file", "replace_string_in_file", "search_and_replace", "execute_command", "write_to_file"]


@pytest.mark.parametrize("name", OBS_TRUE)
def test_ld13_coding_agent_reads_are_observation_tools(name: str) -> None:
    assert is_observation_batch([tc(name)], DEF_PATS)


@pytest.mark.parametrize("name", OBS_FALSE)
def test_ld14_observation_patterns_do_not_match_unrelated_names(name: str) -> None:
    assert not is_observation_batch([tc(name)], DEF_PATS)


def test_default_patterns() -> None:
    assert len(DEF_PATS) == 26
    assert DEF_PATS[0] == "snapshot" and DEF_PATS[-1] == "fetch_webpage"


def test_ld15_a_repeated_file_read_survives() -> None:
    d = LoopDetector()
    assert [ok_or_err(d, [tc("read_file")], 2, DEF_PATS, 15) for _ in range(3)] == ["ok"] * 3


def test_ld17_observation_batch_uses_higher_threshold() -> None:
    d = LoopDetector()
    got = [ok_or_err(d, [tc("playwright_mcp_browser_snapshot")], 2, ["snapshot"], 5) for _ in range(6)]
    assert got == ["ok"] * 5 + ["ERR"]


def test_ld18_mixed_batch_uses_standard_threshold() -> None:
    d = LoopDetector()
    batch = [tc("browser_snapshot"), tc("do_thing")]
    assert [ok_or_err(d, batch, 2, ["snapshot"], 10) for _ in range(3)] == ["ok", "ok", "ERR"]


# ------------------------------------------------------------------------------- VD: reading the answers


def test_vd01_changed_answer_starts_the_run_over() -> None:
    d = LoopDetector()
    assert all(turn(d, "get_output", i) == "ok" for i in range(10))


def test_vd02_alternating_answer_never_trips() -> None:
    d = LoopDetector()
    assert all(turn(d, "get_output", i % 2) == "ok" for i in range(12))


def test_vd03_identical_answer_still_trips() -> None:
    d = LoopDetector()
    assert [turn(d, "write_file", 7) for _ in range(3)] == ["ok", "ok", "ERR"]


def test_vd04_unrecorded_repeat_trips_as_before() -> None:
    d = LoopDetector()
    assert [ok_or_err(d, [tc("write_file")], 2, [], 15) for _ in range(3)] == ["ok", "ok", "ERR"]


def test_vd05_unjoinable_answer_does_not_rescue() -> None:
    d = LoopDetector()
    assert [turn(d, "write_file", None) for _ in range(3)] == ["ok", "ok", "ERR"]


def test_vd06_changed_answer_rescues_only_the_occurrence_that_changed() -> None:
    d = LoopDetector()
    assert [turn(d, "write_file", a) for a in (1, 2, 2, 2)] == ["ok", "ok", "ok", "ERR"]


def test_vd07_mutating_run_rescued_stops_at_the_allowance() -> None:
    d = LoopDetector()
    assert all(turn(d, "write_file", i) == "ok" for i in range(15))
    with pytest.raises(LoopDetected) as e:
        chk(d, [tc("write_file")], 2, [], 15)
    assert e.value.rule == "ceiling" and e.value.total == 16 and e.value.ceiling == 15


def test_vd08_observation_run_rescued_has_no_ceiling() -> None:
    d = LoopDetector()
    for i in range(100):
        rec = chk(d, [tc("read_file")], 2, ["read_file"], 15)
        assert rec.ceiling is None
        d.record_results(rec, i)


def test_vd09_rescue_ceiling_of_none_disables_the_rescue() -> None:
    d = LoopDetector()
    chk(d, [tc("write_file")], 2, [], None)
    rec = chk(d, [tc("write_file")], 2, [], None)
    d.record_results(rec, 1)
    with pytest.raises(LoopDetected) as e:
        chk(d, [tc("write_file")], 2, [], None)
    assert e.value.ceiling == 2


def test_vd10_the_batch_that_breaks_a_run_clears_the_answers() -> None:
    d = LoopDetector()
    turn(d, "a", 1)
    rec = chk(d, [tc("b")], 2, [], 15)
    assert d.record_results(rec, 1) is RepeatOutcome.NOT_COMPARABLE


def test_vd11_none_disables_the_rescue_for_read_only_batches_too() -> None:
    d = LoopDetector()
    got = []
    for a in (1, 2, 3):
        try:
            rec = chk(d, [tc("read_file")], 2, ["read_file"], None)
        except LoopDetected as e:
            got.append("ERR")
            assert e.rule == "ceiling"
            continue
        d.record_results(rec, a)
        got.append("ok")
    assert got == ["ok", "ok", "ERR"]


@pytest.mark.parametrize("allowance", [0, 1])
def test_vd12_low_allowance_never_tightens_the_mutating_threshold(allowance: int) -> None:
    d = LoopDetector()
    turn(d, "write_file", 1)
    rec = chk(d, [tc("write_file")], 2, [], allowance)
    d.record_results(rec, 1)
    with pytest.raises(LoopDetected):
        chk(d, [tc("write_file")], 2, [], allowance)


def test_vd13_recording_for_a_stale_batch_changes_nothing() -> None:
    d = LoopDetector()
    stale = chk(d, [tc("a")], 2, [], 15)
    chk(d, [tc("b")], 2, [], 15)
    assert d.record_results(stale, 1) is RepeatOutcome.NOT_THE_CURRENT_RUN
    assert d.run is not None and d.run.signature == batch_signature([tc("b")])
    assert d.run.last_answers is None


def test_vd14_the_outcome_names_what_happened() -> None:
    d = LoopDetector()
    outcomes = []
    for a in (1, 2, 2):
        rec = chk(d, [tc("write_file")], 2, [], 15)
        outcomes.append(d.record_results(rec, a))
    assert outcomes == [
        RepeatOutcome.NOT_COMPARABLE,
        RepeatOutcome.ANSWER_CHANGED,
        RepeatOutcome.ANSWER_REPEATED,
    ]
    assert [o.value for o in outcomes] == ["not_comparable", "answer_changed", "answer_repeated"]


def test_vd15_a_run_at_its_threshold_trips_before_the_next_answer() -> None:
    d = LoopDetector()
    turn(d, "write_file", 1)
    turn(d, "write_file", 1)
    with pytest.raises(LoopDetected):
        chk(d, [tc("write_file")], 2, [], 15)


def test_vd16_record_twice_raises() -> None:
    d = LoopDetector()
    rec = chk(d, [tc("t")], 2, [], 15)
    d.record_results(rec, 1)
    with pytest.raises(ValueError):
        d.record_results(rec, 1)


def test_refused_occurrence_stays_counted_and_break_run_forgets() -> None:
    d = LoopDetector()
    for _ in range(2):
        chk(d, [tc("t")], 2, [], 15)
    for n in (3, 4):
        with pytest.raises(LoopDetected) as e:
            chk(d, [tc("t")], 2, [], 15)
        assert e.value.count == n and e.value.rule == "strike"
    d.break_run()
    assert d.run is None
    assert chk(d, [tc("t")], 2, [], 15).count == 1


def test_strike_takes_precedence_over_ceiling() -> None:
    d = LoopDetector()
    for _ in range(2):
        chk(d, [tc("read_file")], 2, ["read_file"], None)
    with pytest.raises(LoopDetected) as e:
        chk(d, [tc("read_file")], 2, ["read_file"], None)
    assert e.value.rule == "strike"


@pytest.mark.parametrize(
    ("tool", "pats", "identical_at", "changing_at", "rescued_on"),
    [
        ("write_file", DEF_PATS, 3, 16, range(3, 16)),
        ("read_file", DEF_PATS, 16, None, range(16, 40)),
        ("browser_snapshot", DEF_PATS, 16, None, range(16, 40)),
        ("browser_navigate", DEF_PATS, 16, 16, range(0)),
        ("fetch_webpage", DEF_PATS, 16, 16, range(0)),
        ("mcp__playwright__click", DEF_PATS, 16, 16, range(0)),
    ],
)
def test_ceiling_table(
    tool: str, pats: Any, identical_at: int, changing_at: int | None, rescued_on: range
) -> None:
    """The ceiling table: when identical and ever-changing answers are refused, and where rescues
    occur."""
    for answers, refused_at in (("same", identical_at), ("changing", changing_at)):
        d = LoopDetector()
        got = None
        for n in range(1, 40):
            try:
                rec = chk(d, [tc(tool)], 2, pats, 15)
            except LoopDetected:
                got = n
                break
            if answers == "changing":
                assert rec.rescued == (n in rescued_on)
            d.record_results(rec, 1 if answers == "same" else n)
        assert got == refused_at


def test_ceiling_table_tier_off() -> None:
    for answers in ("same", "changing"):
        d = LoopDetector()
        for n in (1, 2):
            rec = chk(d, [tc("read_file")], 2, DEF_PATS, None)
            assert not rec.rescued
            d.record_results(rec, 1 if answers == "same" else n)
        with pytest.raises(LoopDetected):
            chk(d, [tc("read_file")], 2, DEF_PATS, None)


# ------------------------------------------------------------------------------- OB: classifiers


@pytest.mark.parametrize(
    "name",
    [
        "fetch_webpage", "browser_navigate", "playwright_browser_click", "mcp__playwright__click",
        "BROWSER_NAVIGATE", "click_element_by_index", "double_click_element", "navigate_to_url",
    ],
)
def test_ob05_costly_defaults_recognised(name: str) -> None:
    assert is_costly_batch([tc(name)])


@pytest.mark.parametrize(
    "name",
    ["get_clickable_elements", "browser_get_clickable_elements", "clickhouse_query"],
)
def test_ob06_words_containing_costly_words_keep_the_waiver(name: str) -> None:
    assert not is_costly_batch([tc(name)])


@pytest.mark.parametrize("name", ["browserNavigate", "clickElement", "fetchWebpage"])
def test_ob07_camel_case_names_are_missed(name: str) -> None:
    assert not is_costly_batch([tc(name)])


@pytest.mark.parametrize(
    "name", ["navigate_to_definition", "get_click_count", "ad_click_report", "click_house_query"]
)
def test_ob08_read_only_names_built_from_costly_words_are_bounded(name: str) -> None:
    assert is_costly_batch([tc(name)])


@pytest.mark.parametrize("name", ["read_file", "list_dir", "grep_search", "semantic_search", "get_errors"])
def test_ob09_ordinary_read_only_tools_are_not_costly(name: str) -> None:
    assert not is_costly_batch([tc(name)])


def test_ob10_one_costly_call_makes_the_batch_costly() -> None:
    assert is_costly_batch([tc("read_file"), tc("fetch_webpage")])
    assert not is_costly_batch([tc("read_file"), tc("list_dir")])
    assert not is_costly_batch([])


def test_ob11_every_costly_pattern_is_lowercase() -> None:
    assert all(p == p.lower() for p in COSTLY_OBSERVATION_TOOLS)
    assert COSTLY_OBSERVATION_TOOLS == ("navigate", "click", "fetch_webpage")


def test_costly_segments_with_dots_and_dashes() -> None:
    assert is_costly_batch([tc("browser.navigate")])
    assert is_costly_batch([tc("x-fetch-webpage")])
    assert not is_costly_batch([tc("fetch_web_page")])


# ------------------------------------------------------------------------------- RH: results hashing


def calls_of(*spec: tuple[str, str, str]) -> list[ToolCall]:
    return domain_calls([{"id": i, "function": {"name": n, "arguments": a}} for n, a, i in spec])


def test_rh01_text_and_string_value_answers_hash_alike() -> None:
    assert hash_result_text("1 file changed") == hash_result_content("1 file changed")


def test_rh02_null_and_the_string_null_do_not_collide() -> None:
    assert hash_result_content(None) != hash_result_content("null")


def test_rh03_structured_answers_that_differ() -> None:
    assert hash_result_content({"files": 1}) != hash_result_content({"files": 2})


def test_rh04_same_batch_and_answers_hash_the_same() -> None:
    c = calls_of(("read_file", '{"path":"a.rs"}', "c1"))
    a = [hash_result_content("x")]
    assert batch_results_hash(c, a) == batch_results_hash(c, list(a)) is not None


def test_rh05_swapped_answers_are_not_identical() -> None:
    c = calls_of(("read_file", '{"path":"a.rs"}', "c1"), ("read_file", '{"path":"b.rs"}', "c2"))
    ha, hb = hash_result_content("alpha"), hash_result_content("beta")
    assert batch_results_hash(c, [ha, hb]) != batch_results_hash(c, [hb, ha])


def test_rh06_same_pairs_in_a_different_order_hash_alike() -> None:
    c = calls_of(("a", "{}", "c1"), ("b", "{}", "c2"))
    ha, hb = hash_result_content("x"), hash_result_content("y")
    assert batch_results_hash(c, [ha, hb]) == batch_results_hash(c[::-1], [hb, ha])


def test_rh07_unanswered_call_makes_the_batch_unjoinable() -> None:
    c = calls_of(("a", "{}", "c1"), ("b", "{}", "c2"))
    assert batch_results_hash(c, [hash_result_content("x"), None]) is None


def test_rh08_length_mismatch_is_unjoinable() -> None:
    c = calls_of(("a", "{}", "c1"), ("b", "{}", "c2"))
    x = hash_result_content("x")
    assert batch_results_hash(c, [x]) is None
    assert batch_results_hash(c, [x, x, x]) is None


def test_rh09_same_answer_to_a_different_call_is_a_different_batch() -> None:
    x = [hash_result_content("x")]
    a = calls_of(("read_file", '{"path":"a.rs"}', "c1"))
    b = calls_of(("read_file", '{"path":"b.rs"}', "c1"))
    assert batch_results_hash(a, x) != batch_results_hash(b, x)


def test_rh10_shuffled_argument_keys_hash_alike() -> None:
    ok = [hash_result_content("ok")]
    assert batch_results_hash(calls_of(("write", '{"a":1,"b":2}', "c1")), ok) == batch_results_hash(
        calls_of(("write", '{"b":2,"a":1}', "c1")), ok
    )


def test_rh11_arguments_deeper_than_the_cap_hash_alike() -> None:
    a, b = [ToolCall("c1", "probe", nest(20))], [ToolCall("c1", "probe", nest(21))]
    x = [hash_result_content("same")]
    assert batch_signature(a) == batch_signature(b)
    assert batch_results_hash(a, x) == batch_results_hash(b, x)


def test_rh12_separator_stops_a_name_argument_suffix_collision() -> None:
    c = calls_of(("t", '"123"', "c1"), ("t1", '"23"', "c2"))
    x, y = hash_result_content("alpha"), hash_result_content("beta")
    assert batch_results_hash(c, [x, y]) != batch_results_hash(c, [y, x])


def test_rh13_text_discriminant_keeps_shapes_apart() -> None:
    assert hash_result_text("\u000142") != hash_result_content(42)


def test_results_content_rules() -> None:
    assert hash_result_content({"b": 2, "a": 1}) == hash_result_content({"a": 1, "b": 2})
    assert hash_result_content("x") != hash_result_content([{"type": "text", "text": "x"}])
    assert hash_result_content(-0.0) != hash_result_content(0)


# ------------------------------------------------------------------------------- SG: signatures


def test_sg01_tool_signature_includes_name_and_hash() -> None:
    sig = tool_signature(calls_of(("fs_read", '{"path":"/etc/hosts"}', "c1"))[0])
    assert sig.startswith("fs_read:") and len(sig) == 8 + 16
    assert sig == "fs_read:db2a3b6c5c2b8657"


def test_sg02_batch_signature_is_sorted() -> None:
    assert batch_signature([tc("b_tool"), tc("a_tool")]) == (
        "a_tool:08f44b07b5901a25|b_tool:08f44b07b5901a25"
    )


def test_sg03_batch_signature_ignores_call_order() -> None:
    a = calls_of(("search", '{"q":"rust"}', "c1"), ("read", '{"path":"/"}', "c2"))
    want = "read:d0d2a33776fbdb71|search:f6b34c7d7172ccf8"
    assert batch_signature(a) == batch_signature(a[::-1]) == want


def test_sg04_key_order_same_signature() -> None:
    assert tool_signature(tc("tool", {"a": 1, "b": 2})) == tool_signature(tc("tool", {"b": 2, "a": 1}))
    assert tool_signature(tc("tool", {"a": 1, "b": 2})) == "tool:a0ebc03bdc71de7b"


def test_sg05_nested_objects_are_canonicalised() -> None:
    a = tool_signature(tc("t", {"outer": {"x": 1, "y": 2}}))
    b = tool_signature(tc("t", {"outer": {"y": 2, "x": 1}}))
    assert a == b == "t:da6312ee7883efe6"


def test_sg06_sg07_stable_repr_caps_recursion() -> None:
    assert MAX_REPR_DEPTH == 16
    assert '"..."' in stable_repr(nest(17))
    assert '"..."' in stable_repr(nest(16))
    assert "leaf" not in stable_repr(nest(16))


def test_sg08_below_max_depth_full_output() -> None:
    assert '"..."' not in stable_repr(nest(15)) and '"leaf"' in stable_repr(nest(15))
    assert tool_signature(tc("probe", nest(15))) == "probe:33b8f768212ab333"
    assert tool_signature(tc("probe", nest(14))) == "probe:9d020cf9771f2f75"
    for d in range(16, 22):
        assert tool_signature(tc("probe", nest(d))) == "probe:5742f947304c2a81"


def test_depth_sentinel_applies_to_scalars() -> None:
    v: Any = 1
    for _ in range(16):
        v = [v]
    assert stable_repr(v) == "[" * 16 + '"..."' + "]" * 16


# ------------------------------------------------------------------------------- ST: stagnation


def rec_all(texts: list[str], max_steps: int, tools: bool = False, det: StagnationDetector | None = None) -> list[Any]:
    det = det or StagnationDetector()
    out: list[Any] = []
    for t in texts:
        try:
            det.record(t, tools, max_steps)
            out.append("ok")
        except StagnationDetected as e:
            out.append(("ERR", e.count, e.max_steps))
    return out


def test_st01_no_stagnation_for_varied_responses() -> None:
    assert rec_all([f"response {i}" for i in range(20)], 5) == ["ok"] * 20


def test_st02_stagnation_triggers_at_limit() -> None:
    assert rec_all(["same"] * 4, 3) == ["ok"] * 3 + [("ERR", 4, 3)]


def test_st03_different_responses_accumulate_independently() -> None:
    assert rec_all(list("AABBA"), 2)[4] == ("ERR", 3, 2)
    assert rec_all(list("AABBA"), 2)[:4] == ["ok"] * 4


def test_st04_oscillation_abab_fires() -> None:
    assert rec_all(list("ABABA"), 2) == ["ok"] * 4 + [("ERR", 3, 2)]


def test_st05_error_contains_count_and_limit() -> None:
    det = StagnationDetector()
    det.record("stuck", False, 1)
    with pytest.raises(StagnationDetected) as e:
        det.record("stuck", False, 1)
    assert (e.value.count, e.value.max_steps) == (2, 1)
    assert e.value.repeated_text_hash == "9bcdc0ada7f7a0ab"


def test_st06_st10_max_steps_zero_triggers_on_first_occurrence() -> None:
    assert rec_all(["anything"], 0) == [("ERR", 1, 0)]


def test_st07_a_turn_that_called_a_tool_is_never_recorded() -> None:
    det = StagnationDetector()
    text = "Let me look at the file."
    assert rec_all([text] * 50, 5, tools=True, det=det) == ["ok"] * 50
    assert rec_all([text] * 6, 5, det=det) == ["ok"] * 5 + [("ERR", 6, 5)]


def test_st08_the_window_forgets_aged_out_repeats() -> None:
    texts: list[str] = []
    for i in range(6):
        texts.append("Sure!")
        texts.extend(f"distinct {i}-{j}" for j in range(20))
    assert all(r == "ok" for r in rec_all(texts, 5))


def test_st09_oscillation_trips_at_the_201st_record() -> None:
    res = rec_all(["plan A" if i % 2 == 0 else "plan B" for i in range(1000)], 100)
    first = next(i for i, r in enumerate(res) if r != "ok")
    assert first == 200 and res[first] == ("ERR", 101, 100)


def test_st11_empty_text_records_nothing() -> None:
    det = StagnationDetector()
    assert det.record("", False, 0) is None
    assert len(det.recent) == 0


def test_st12_clear() -> None:
    det = StagnationDetector()
    assert rec_all(["x"] * 5, 5, det=det) == ["ok"] * 5
    det.clear()
    assert rec_all(["x"] * 5, 5, det=det) == ["ok"] * 5


def test_oscillation_at_default_trips_on_11th() -> None:
    res = rec_all(["plan A" if i % 2 == 0 else "plan B" for i in range(12)], 5)
    assert res.index(("ERR", 6, 5)) == 10
