"""Transcript-level cases of ``scan_history``, most of them gglib's own tests under their upstream
names (prefixes: LG proxy loop guard, UT user turns, RS rescue reading, CO costly batches, PS
prose stagnation, WI permissive reading of the wire, SP / NT request step and note)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.engines.gglib._gglib_helpers import AM, DEF, A, P, S, T, U, W, first_refusal_turn, scan

from loopscope.engines.gglib import GglibConfig, domain_calls, replay_messages

WF = "write_file"
LOOP = "loop"
STAG = "stagnation"


def readings(out: Any) -> tuple[bool, bool, bool]:
    return out.identical_result_repeat, out.repeat_not_evaluated, out.repeat_rescued


# ------------------------------------------------------------------------------- LG: proxy loop guard


def test_lg01_empty_and_first_turn_bodies_pass() -> None:
    assert scan([]).verdict == "pass"
    assert scan([S("be helpful"), U("hi")]).verdict == "pass"
    assert replay_messages([S("be helpful"), U("hi")], DEF)[0] == ()


def test_lg03_non_assistant_roles_are_ignored() -> None:
    msgs = [U("same"), {"role": "tool", "content": "same result", "tool_call_id": "c1"}] * 10
    assert scan(msgs).verdict == "pass"
    assert replay_messages(msgs, DEF)[0] == ()


def test_lg04_two_identical_batches_pass() -> None:
    assert scan([W(), W()]).verdict == "pass"


def test_lg05_distinct_arguments_never_trip() -> None:
    assert scan([A(WF, f'{{"path":"file{i}.rs"}}') for i in range(10)]).verdict == "pass"


def test_lg06_third_identical_batch_trips() -> None:
    msgs = [W(), W(), W()]
    out = scan(msgs)
    assert (out.verdict, out.signature) == (LOOP, "write_file:ed658c7fbe3ce9f2")
    assert first_refusal_turn(msgs) == 2


def test_lg07_repeat_with_real_work_in_between_never_trips() -> None:
    assert scan([W(), A("run_tests", '{"suite":"unit"}')] * 50).verdict == "pass"


def test_lg08_cycle_escapes() -> None:
    rt = A("run_tests", '{"suite":"unit"}')
    assert scan([rt, rt, W()] * 40).verdict == "pass"


def test_lg09_prose_and_results_do_not_break_the_run() -> None:
    msgs = [
        W("c1"), T("c1", "1 file changed"), P("that did not work, let me try again"),
        W("c2"), T("c2", "1 file changed"), P("still not right"),
        W("c3"), T("c3", "1 file changed"),
    ]
    assert scan(msgs).verdict == LOOP


def test_lg10_user_interjection_breaks_the_run() -> None:
    assert scan([W(), U("keep going"), W(), W()]).verdict == "pass"


def test_lg11_thrice_read_file_does_not_trip() -> None:
    assert scan([A("read_file", '{"path":"a.rs"}')] * 3).verdict == "pass"


ERR = "error: cannot borrow `x` as mutable"


def test_lg12_same_answer_is_reported() -> None:
    out = scan([W("c1"), T("c1", ERR), W("c2"), T("c2", ERR)])
    assert out.verdict == "pass" and out.identical_result_repeat


def test_lg13_different_answer_is_not_reported() -> None:
    out = scan([W("c1"), T("c1", ERR), W("c2"), T("c2", "ok, 1 file changed")])
    assert not out.identical_result_repeat


def test_lg14_synthetic_ids_compare_the_right_results() -> None:
    q = "call_qwen_0"
    out = scan([W(q), T(q, "FIRST CONTENT"), W(q), T(q, "TOTALLY DIFFERENT CONTENT")])
    assert not out.identical_result_repeat


def test_lg15_structured_results_that_differ() -> None:
    msgs = [
        A(WF, id="c1"), T("c1", {"ok": True, "bytes": 1}),
        A(WF, id="c2"), T("c2", {"ok": False, "bytes": 99999}),
    ]
    assert not scan(msgs).identical_result_repeat


def test_lg16_malformed_tool_call_id_does_not_disable_the_guard() -> None:
    msgs = [A(WF), {"role": "tool", "tool_call_id": 7, "content": "x"}, A(WF), A(WF)]
    assert scan(msgs).verdict == LOOP


def test_lg17_prose_turn_after_repeat_clears_the_observation() -> None:
    prefix = [W("c1"), T("c1", "same"), W("c2"), T("c2", "same")]
    assert scan(prefix).identical_result_repeat
    msgs = list(prefix)
    for _ in range(6):
        msgs += [P("here is what I found"), U("thanks, next?")]
        out = scan(msgs)
        assert readings(out)[:2] == (False, False)


def test_lg18_user_interjection_after_repeat_clears_the_observation() -> None:
    out = scan([W("c1"), T("c1", "same"), W("c2"), T("c2", "same"), U("stop, do X instead")])
    assert readings(out)[:2] == (False, False)


def test_lg19_previous_map_survives_prose_and_user_turns() -> None:
    msgs = [W("c1"), T("c1", "same"), P("let me think about that"), U("go on"), W("c2"), T("c2", "same")]
    assert scan(msgs).identical_result_repeat


def test_lg20_tool_calling_turns_are_not_recorded_by_stagnation() -> None:
    msgs: list[Any] = [W("c0"), T("c0", "same"), W("c1"), T("c1", "same")]
    for i in range(8):
        m = A(WF, f'{{"path":"f{i}.rs"}}', f"t{i}", content="still working on it")
        msgs += [m, T(f"t{i}", "ok")]
    out = scan(msgs)
    assert out.verdict == "pass" and not out.identical_result_repeat


def test_lg21_swapped_answers_are_not_identical() -> None:
    ga, gb = ("get_errors", '{"f":"a.rs"}'), ("get_errors", '{"f":"b.rs"}')
    msgs = [
        AM((*ga, "a1"), (*gb, "b1")), T("a1", "RESULT-ONE"), T("b1", "RESULT-TWO"),
        AM((*ga, "a2"), (*gb, "b2")), T("a2", "RESULT-TWO"), T("b2", "RESULT-ONE"),
    ]
    assert not scan(msgs).identical_result_repeat


def test_lg22_object_valued_arguments_do_not_disable_the_guard() -> None:
    assert scan([A(WF, {"path": "a.rs"}, f"c{i}") for i in (1, 2, 3)]).verdict == LOOP


def test_lg23_odd_shapes_never_disable_the_guard() -> None:
    odd = {
        "role": 7,
        "content": {"weird": True},
        "tool_calls": [
            {"id": 42, "type": "function", "function": {"name": ["not", "a", "string"], "arguments": 9}}
        ],
        "tool_call_id": 7,
    }
    out = scan([odd, A(WF), A(WF), A(WF)])
    assert (out.verdict, out.signature) == (LOOP, "write_file:08f44b07b5901a25")


def test_lg24_lg27_repeat_without_results_is_not_evaluated() -> None:
    out = scan([W("c1"), W("c2")])
    assert readings(out)[:2] == (False, True)


def test_lg25_first_time_batch() -> None:
    assert readings(scan([W("c1")]))[:2] == (False, False)


def test_lg26_differing_results_are_evaluated() -> None:
    out = scan([W("c1"), T("c1", "first"), W("c2"), T("c2", "second")])
    assert readings(out)[:2] == (False, False)


def test_lg28_only_the_newest_batch_is_reported_on() -> None:
    msgs = [
        W("c1"), T("c1", "same"), W("c2"), T("c2", "same"),
        A(WF, '{"path":"b.rs"}', "c3"), T("c3", "moved on"),
    ]
    assert not scan(msgs).identical_result_repeat


def test_lg29_same_answer_trips_and_is_reported() -> None:
    msgs: list[Any] = []
    for i in (1, 2, 3):
        msgs += [A(WF, id=f"c{i}"), T(f"c{i}", "same")]
    out = scan(msgs)
    assert out.verdict == LOOP and out.identical_result_repeat


def test_lg30_the_two_paths_agree_on_when_a_run_trips() -> None:
    seq = [(WF, "a"), ("run_tests", "green"), (WF, "a")] + [(WF, "b")] * 3
    msgs: list[Any] = []
    for i, (tool, ans) in enumerate(seq):
        msgs += [A(tool, id=f"id{i}"), T(f"id{i}", ans)]
    out = scan(msgs)
    assert (out.verdict, out.signature) == (LOOP, "write_file:08f44b07b5901a25")
    assert out.identical_result_repeat
    assert first_refusal_turn(msgs) == 5


def test_lg31_duplicate_tool_call_ids_are_unjoinable() -> None:
    msgs = [AM((WF, "{}", "c1"), ("run_tests", "{}", "c1")), T("c1", "only one answer")] * 2
    out = scan(msgs)
    assert out.verdict == "pass" and readings(out) == (False, True, False)


def moving(n: int, tool: str = WF, fmt: str = "{i} changed", id_prefix: str = "w") -> list[Any]:
    msgs: list[Any] = []
    for i in range(n):
        msgs += [A(tool, id=f"{id_prefix}{i}"), T(f"{id_prefix}{i}", fmt.format(i=i))]
    return msgs


def test_lg32_rejection_does_not_inherit_the_rescue() -> None:
    msgs = moving(15, fmt="{i} files changed", id_prefix="c")
    out = scan(msgs)
    assert out.verdict == "pass" and out.repeat_rescued
    out = scan([*msgs, A(WF, id="c15"), T("c15", "brand new")])
    assert out.verdict == LOOP and not out.repeat_rescued
    steps, _ = replay_messages([*msgs, A(WF, id="c15"), T("c15", "brand new")], DEF)
    assert steps[-1].extra["rule"] == "ceiling"


def test_lg34_duplicate_answers_for_one_call_are_unjoinable() -> None:
    msgs = [A(WF, id="c1"), T("c1", "a"), T("c1", "b")] * 2
    assert readings(scan(msgs)) == (False, True, False)


def test_lg35_second_occurrence_is_not_a_rescue() -> None:
    out = scan([A(WF, id="c1"), T("c1", "1 file changed"), A(WF, id="c2"), T("c2", "2 files changed")])
    assert not out.repeat_rescued


LG38 = [
    A(WF, id="c1"), T("c1", "1 file changed"),
    A(WF, id="c2"), T("c2", "2 files changed"),
    A(WF, id="c3"), T("c3", "3 files changed"),
]


def test_lg38_answer_changed_is_no_longer_a_loop() -> None:
    out = scan(LG38)
    assert out.verdict == "pass" and out.repeat_rescued and not out.identical_result_repeat


@pytest.mark.parametrize("tail", [P("…"), U("…")])
def test_lg36_prose_or_user_after_a_rescue_clears(tail: Any) -> None:
    assert readings(scan([*LG38, tail])) == (False, False, False)


def test_lg37_same_answer_is_not_rescued() -> None:
    out = scan([A(WF, id="c1"), T("c1", "same"), A(WF, id="c2"), T("c2", "same")])
    assert not out.repeat_rescued and out.identical_result_repeat


def test_lg39_unanswered_repeat_still_trips() -> None:
    assert scan([A(WF)] * 3).verdict == LOOP


def test_lg40_partially_answered_repeat_still_trips() -> None:
    msgs: list[Any] = []
    for i in range(3):
        msgs += [AM((WF, "{}", f"a{i}"), ("run_tests", "{}", f"b{i}")), T(f"a{i}", "done")]
    assert scan(msgs).verdict == LOOP


def test_lg41_mutating_repeat_with_new_answers_stops_at_the_allowance() -> None:
    assert scan(moving(15)).verdict == "pass"
    msgs = moving(16)
    assert scan(msgs).verdict == LOOP
    assert first_refusal_turn(msgs) == 15


def test_lg42_observation_repeats_are_reported_even_though_they_pass() -> None:
    rf = '{"path":"a.rs"}'
    out = scan([A("read_file", rf, "c1"), T("c1", "fn main() {}"), A("read_file", rf, "c2"), T("c2", "fn main() {}")])
    assert out.verdict == "pass" and out.identical_result_repeat


def test_lg43_shuffled_argument_keys_still_trip() -> None:
    out = scan([A("edit", '{"a":1,"b":2}'), A("edit", '{"b":2,"a":1}'), A("edit", '{"a":1,"b":2}')])
    assert (out.verdict, out.signature) == (LOOP, "edit:a0ebc03bdc71de7b")


def test_lg44_batch_signature_ignores_call_order() -> None:
    msgs = [
        AM(("a", "{}", "c1"), ("b", "{}", "c2")),
        AM(("b", "{}", "c1"), ("a", "{}", "c2")),
        AM(("a", "{}", "c1"), ("b", "{}", "c2")),
    ]
    out = scan(msgs)
    assert (out.verdict, out.signature) == (LOOP, "a:08f44b07b5901a25|b:08f44b07b5901a25")


def test_lg45_malformed_arguments_hash_as_raw_string() -> None:
    out = scan([A("edit", "{not valid json")] * 3)
    assert (out.verdict, out.signature) == (LOOP, "edit:8b0ae5da9bf33349")


def test_lg46_observation_batches_use_elevated_threshold() -> None:
    assert scan([A("browser_snapshot")] * 3).verdict == "pass"
    msgs = [A("browser_snapshot")] * 16
    assert scan(msgs).verdict == LOOP
    assert first_refusal_turn(msgs) == 15


def test_lg47_mixed_observation_action_batch_uses_standard_threshold() -> None:
    b = AM(("browser_snapshot", "{}", "c1"), ("do_thing", "{}", "c2"))
    assert scan([b] * 3).verdict == LOOP


def test_lg48_five_identical_texts_pass_then_sixth_trips() -> None:
    assert scan([P("I am stuck.")] * 5).verdict == "pass"
    msgs = [P("I am stuck.")] * 6
    out = scan(msgs)
    assert (out.verdict, out.count, out.max_steps) == (STAG, 6, 5)
    assert first_refusal_turn(msgs) == 5


@pytest.mark.parametrize("test_id", ["LG-49", "PS-06"])
def test_lg49_ps06_oscillation_trips_inside_the_window(test_id: str) -> None:
    msgs = [P("plan A" if i % 2 == 0 else "plan B") for i in range(12)]
    out = scan(msgs)
    assert (out.verdict, out.count, out.max_steps) == (STAG, 6, 5)
    assert first_refusal_turn(msgs) == 10


def test_lg50_content_part_arrays_feed_stagnation() -> None:
    m = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "same answer"},
            {"type": "image_url", "image_url": {"url": "ignored"}},
        ],
    }
    out = scan([m] * 6)
    assert (out.verdict, out.count, out.max_steps) == (STAG, 6, 5)


def test_lg51_null_content_with_tool_calls_feeds_loop_only() -> None:
    assert scan([A("t")] * 3).verdict == LOOP


def test_lg53_persisted_stagnation_threshold() -> None:
    out = scan([P("stuck")] * 3, GglibConfig(max_stagnation_steps=2))
    assert (out.verdict, out.count, out.max_steps) == (STAG, 3, 2)


# ------------------------------------------------------------------------------- UT: user turns


def build(i: int) -> list[Any]:
    return [A("run_in_terminal", '{"cmd":"make"}', f"b{i}"), T(f"b{i}", "error: 3 warnings emitted"), P("the build failed")]


def test_ut01_three_user_requests_are_not_a_loop() -> None:
    assert scan([U(), *build(0), U(), *build(1), U(), *build(2)]).verdict == "pass"


def test_ut02_the_same_three_attempts_unprompted_are_a_loop() -> None:
    out = scan([*build(0), *build(1), *build(2)])
    assert (out.verdict, out.signature) == (LOOP, "run_in_terminal:8a24337fc7a20d19")
    assert out.identical_result_repeat


def test_ut03_a_user_turn_resets_the_read_only_allowance() -> None:
    first = []
    for i in range(15):
        first += [W(f"w{i}"), T(f"w{i}", f"{i} changed")]
    assert scan(first).verdict == "pass"
    rest = [*list(first), U("carry on")]
    for i in range(15, 29):
        rest += [W(f"w{i}"), T(f"w{i}", f"{i} changed")]
    assert scan(rest).verdict == "pass"


def test_ut04_prose_repeats_either_side_of_a_user_turn_do_not_accumulate() -> None:
    assert scan([P("I cannot proceed.")] * 3 + [U()] + [P("I cannot proceed.")] * 3).verdict == "pass"


def test_ut05_six_adjacent_prose_repeats_still_stagnate() -> None:
    out = scan([P("x")] * 6 + [U(), P("Here is another way.")])
    assert (out.verdict, out.count, out.max_steps) == (STAG, 6, 5)


def test_ut06_a_leading_system_message_changes_nothing() -> None:
    assert scan([S(), *build(0), *build(1), *build(2)]).verdict == LOOP


# ------------------------------------------------------------------------------- RS: rescue reading


def rs_moving(n: int) -> list[Any]:
    return moving(n)


@pytest.mark.parametrize(("n", "verdict", "rs"), [(2, "pass", False), (1, "pass", False)])
def test_rs01_rs05_not_a_rescue(n: int, verdict: str, rs: bool) -> None:
    out = scan(rs_moving(n))
    assert out.verdict == verdict and out.repeat_rescued is rs


@pytest.mark.parametrize("n", range(3, 16))
def test_rs02_rs03_occurrences_past_the_threshold_are_rescues(n: int) -> None:
    out = scan(rs_moving(n))
    assert out.verdict == "pass" and out.repeat_rescued


def test_rs04_the_ceiling_ends_the_rescues() -> None:
    out = scan(rs_moving(16))
    assert out.verdict == LOOP and not out.repeat_rescued


# ------------------------------------------------------------------------------- CO: costly batches


def co_moving(tool: str, n: int) -> list[Any]:
    return moving(n, tool=tool, id_prefix="c")


def co_repeated(tool: str, n: int) -> list[Any]:
    return moving(n, tool=tool, fmt="same", id_prefix="c")


@pytest.mark.parametrize("tool", ["fetch_webpage", "browser_navigate", "mcp__playwright__click"])
def test_co01_costly_observation_batch_refused_at_the_ceiling(tool: str) -> None:
    assert scan(co_moving(tool, 15)).verdict == "pass"
    assert scan(co_moving(tool, 16)).verdict == LOOP


@pytest.mark.parametrize("tool", ["fetch_webpage", "browser_click", "browser_navigate"])
def test_co02_sixty_moving_costly_calls_no_longer_pass(tool: str) -> None:
    msgs = co_moving(tool, 60)
    assert scan(msgs).verdict == LOOP
    assert first_refusal_turn(msgs) == 15


def test_co03_costly_tool_keeps_the_elevated_threshold() -> None:
    assert scan(co_repeated("browser_navigate", 15)).verdict == "pass"
    assert scan(co_repeated("browser_navigate", 16)).verdict == LOOP
    steps, _ = replay_messages(co_repeated("browser_navigate", 16), DEF)
    assert steps[-1].extra["rule"] == "strike"
    assert steps[-1].extra["batch_class"] == "costly_observation"


def test_co04_a_genuinely_read_only_batch_has_no_ceiling() -> None:
    assert scan(co_moving("read_file", 100)).verdict == "pass"


def test_co05_a_mutating_batch_is_bounded_as_before() -> None:
    assert scan(co_moving(WF, 15)).verdict == "pass"
    assert scan(co_moving(WF, 16)).verdict == LOOP


# ------------------------------------------------------------------------------- PS: prose stagnation


def narrated(i: int, path: str, ans: str) -> list[Any]:
    m = A("read_file", f'{{"path":"{path}"}}', f"c{i}", content="Let me look at the file.")
    return [m, T(f"c{i}", ans)]


def test_ps01_same_preamble_before_different_reads_is_not_stagnation() -> None:
    msgs = [x for i in range(6) for x in narrated(i, f"src/{i}.rs", "fn main() {}")]
    assert scan(msgs).verdict == "pass"


def test_ps02_narration_does_not_undercut_the_read_only_allowance() -> None:
    msgs = [x for i in range(6) for x in narrated(i, "src/main.rs", "fn main() {}")]
    assert scan(msgs).verdict == "pass"


def test_ps03_stuck_mutating_batch_is_caught_by_the_other_guard() -> None:
    msgs: list[Any] = []
    for i in range(3):
        msgs += [A(WF, '{"path":"a.rs"}', f"w{i}", content="Let me fix it."), T(f"w{i}", "1 changed")]
    out = scan(msgs)
    assert out.verdict == LOOP and not out.repeat_rescued


def test_ps04_six_identical_prose_turns_stagnate() -> None:
    out = scan([P("Sure!")] * 6)
    assert (out.verdict, out.count, out.max_steps) == (STAG, 6, 5)


def test_ps05_identical_prose_spread_beyond_the_window() -> None:
    msgs: list[Any] = []
    for i in range(6):
        msgs.append(P("Sure!"))
        msgs += [P(f"a distinct answer {i}-{j}") for j in range(5)]
    assert scan(msgs).verdict == "pass"


# ------------------------------------------------------------------------------- WI: permissive reading of the wire


CONTROL = [A(WF, '{"path":"a.rs"}')] * 3


@pytest.mark.parametrize(
    "odd",
    [
        U("go"),
        {"role": "assistant", "content": "on it", "tool_calls": None},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "x", "function": "search"}]},
        {"role": "assistant", "content": None, "tool_calls": [7, None]},
        {"role": "assistant", "content": None, "tool_calls": {}},
    ],
)
def test_wi01_to_wi05_odd_shapes_do_not_disable_the_guard(odd: Any) -> None:
    assert scan([odd, *CONTROL]).verdict == LOOP


@pytest.mark.parametrize("shape", [None, "write_file", {}, 7, True])
def test_wi06_every_non_array_shape_reads_as_no_calls(shape: Any) -> None:
    assert domain_calls(shape) == []


def test_wi07_well_formed_call() -> None:
    [c] = domain_calls(
        [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"a.rs"}'}}]
    )
    assert (c.id, c.name, c.arguments) == ("c1", "read_file", {"path": "a.rs"})


def test_wi08_bare_object_arguments() -> None:
    [c] = domain_calls([{"function": {"name": "read_file", "arguments": {"path": "a.rs"}}}])
    assert (c.id, c.name, c.arguments) == ("", "read_file", {"path": "a.rs"})


def test_wi09_malformed_arguments_fall_back_to_the_raw_string() -> None:
    [c] = domain_calls([{"id": "c1", "function": {"name": "edit", "arguments": "{not json"}}])
    assert c.arguments == "{not json"


def test_wi10_a_call_without_a_function_is_still_a_call() -> None:
    [c] = domain_calls([{"id": "c1"}])
    assert (c.id, c.name, c.arguments) == ("c1", "", None)


def test_wi11_non_string_id_and_name_read_as_empty() -> None:
    [c] = domain_calls([{"id": 42, "function": {"name": ["read_file"], "arguments": "{}"}}])
    assert (c.id, c.name, c.arguments) == ("", "", {})


def test_junk_elements_are_calls() -> None:
    calls = domain_calls([7, None, "s", {"function": "search"}])
    assert [(c.id, c.name, c.arguments) for c in calls] == [("", "", None)] * 4


@pytest.mark.parametrize(
    ("raw", "value"), [("123", 123), ("null", None), ('"str"', "str"), ("", ""), ('{"a":1} trailing', '{"a":1} trailing')]
)
def test_argument_strings_parse_to_any_type(raw: str, value: Any) -> None:
    [c] = domain_calls([{"function": {"name": "t", "arguments": raw}}])
    assert c.arguments == value and type(c.arguments) is type(value)


# ------------------------------------------------------------------------------- SP / NT: request step and note (portable parts)


def body(h: list[Any]) -> list[Any]:
    return [S(), *h, U("continue")]


def looping(n: int) -> list[Any]:
    return [A(WF, '{"path":"src/main.rs"}', "c1"), T("c1", "1 file changed")] * n


def stagnating(n: int) -> list[Any]:
    return [P("I cannot proceed further.")] * n


def repeated_read(n: int) -> list[Any]:
    return [A("read_file", '{"path":"src/main.rs"}', "c1"), T("c1", "fn main() {}")] * n


def test_sp02_benign_history_passes() -> None:
    assert scan(body([W("c1"), T("c1", "ok"), P("done")])).verdict == "pass"


def test_sp04_sp08_repeated_batch_is_a_loop() -> None:
    out = scan(body(looping(3)))
    assert (out.verdict, out.signature) == (LOOP, "write_file:247aba76b12bf80f")


def test_sp05_sp08_repeated_reply_is_stagnation() -> None:
    out = scan(body(stagnating(6)))
    assert (out.verdict, out.count, out.max_steps) == (STAG, 6, 5)


def test_sp07_a_repeat_the_verdict_cannot_see_is_still_read() -> None:
    out = scan([S(), U("check the file"), *repeated_read(2)])
    assert out.verdict == "pass" and out.identical_result_repeat and not out.repeat_not_evaluated


def test_nt09_the_note_neither_creates_nor_masks_a_trip() -> None:
    note = "\n\n[gglib loop guard] This conversation has repeated the tool-call batch ..."
    two = looping(2)
    two[-1] = T("c1", "1 file changed" + note)
    assert scan(two).verdict == "pass"
    three = looping(3)
    three[-1] = T("c1", "1 file changed" + note)
    assert scan(three).verdict == LOOP
