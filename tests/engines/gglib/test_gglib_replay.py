"""loopscope replay cases (shadow mode past the first refusal, ceiling trips, empty prose, the
positional join, call indices) and the step JSON shape."""

from __future__ import annotations

import json
from typing import Any

from tests.engines.gglib._gglib_helpers import AM, DEF, A, P, S, T, U, W

from loopscope.engines.gglib import (
    ENGINE,
    STEP_FIELDS,
    GglibConfig,
    prepare_messages,
    replay_messages,
    run_prepared,
)

EXAMPLE_54 = [
    S("You are a coding agent."),
    U("Fix a.rs"),
    W("c1"), T("c1", "1 file changed"),
    W("c2"), T("c2", "1 file changed"),
    W("c3"), T("c3", "1 file changed"),
    P("I have updated a.rs."),
]

EXPECTED_54 = """
{"turn":0,"call":0,"tools":["write_file"],"signature":"write_file:ed658c7fbe3ce9f2","verdict":"pass","detector":null,"count":1,"after_divergence":false,"kind":"batch","total":1,"effective_max":2,"ceiling":15,"batch_class":"mutating","rule":null,"outcome":"not_comparable","rescued":false,"identical":false,"not_evaluated":false,"answers_joined":true,"max_steps":null,"window":null,"text_hash":null}
{"turn":1,"call":1,"tools":["write_file"],"signature":"write_file:ed658c7fbe3ce9f2","verdict":"pass","detector":null,"count":2,"after_divergence":false,"kind":"batch","total":2,"effective_max":2,"ceiling":15,"batch_class":"mutating","rule":null,"outcome":"answer_repeated","rescued":false,"identical":true,"not_evaluated":false,"answers_joined":true,"max_steps":null,"window":null,"text_hash":null}
{"turn":2,"call":2,"tools":["write_file"],"signature":"write_file:ed658c7fbe3ce9f2","verdict":"refuse","detector":"loop","count":3,"after_divergence":false,"kind":"batch","total":3,"effective_max":2,"ceiling":15,"batch_class":"mutating","rule":"strike","outcome":null,"rescued":false,"identical":true,"not_evaluated":false,"answers_joined":true,"max_steps":null,"window":null,"text_hash":null}
{"turn":3,"call":null,"tools":[],"signature":null,"verdict":"pass","detector":null,"count":1,"after_divergence":true,"kind":"prose","total":null,"effective_max":null,"ceiling":null,"batch_class":null,"rule":null,"outcome":null,"rescued":false,"identical":false,"not_evaluated":false,"answers_joined":null,"max_steps":5,"window":20,"text_hash":"2e00ddf9fed8c21b"}
"""


def both(messages: list[Any], config: GglibConfig = DEF) -> tuple[list[dict[str, Any]], Any]:
    steps, first = replay_messages(messages, config)
    assert run_prepared(prepare_messages(messages), config) == (steps, first)
    return [s.to_json() for s in steps], None if first is None else first.to_json()


def test_rp01_the_54_example() -> None:
    steps, first = both(EXAMPLE_54)
    want = [json.loads(line) for line in EXPECTED_54.strip().splitlines()]
    assert [json.dumps(s) for s in steps] == [json.dumps(w) for w in want]
    assert first == {"turn": 2, "call": 2, "detector": "loop"}


def test_every_key_in_spec_order() -> None:
    steps, _ = both(EXAMPLE_54)
    for s in steps:
        assert tuple(s) == STEP_FIELDS
    assert len(STEP_FIELDS) == 22


def moving(n: int, tool: str = "write_file", args: str = "{}") -> list[Any]:
    out: list[Any] = []
    for i in range(n):
        out += [A(tool, args, f"w{i}"), T(f"w{i}", f"{i} changed")]
    return out


def test_rp02_ceiling_trip() -> None:
    steps, first = both(moving(16))
    last = steps[15]
    assert (last["verdict"], last["rule"], last["count"], last["total"]) == ("refuse", "ceiling", 2, 16)
    assert (last["effective_max"], last["ceiling"]) == (2, 15)
    for s in steps[2:15]:
        assert s["rescued"] is True and s["outcome"] == "answer_changed" and s["count"] == 2
    assert not steps[0]["rescued"] and not steps[1]["rescued"]
    assert first == {"turn": 15, "call": 15, "detector": "loop"}


def test_rp03_refused_again_after_divergence() -> None:
    msgs = [W("c0"), W("c1"), W("c2"), W("c3"), A("run_tests", id="r")]
    steps, first = both(msgs)
    assert (steps[2]["verdict"], steps[2]["rule"], steps[2]["count"]) == ("refuse", "strike", 3)
    assert (steps[3]["verdict"], steps[3]["count"], steps[3]["after_divergence"]) == ("refuse", 4, True)
    assert steps[3]["not_evaluated"] is True
    assert (steps[4]["verdict"], steps[4]["count"]) == ("pass", 1)
    assert first == {"turn": 2, "call": 2, "detector": "loop"}


def test_rp04_user_turn_after_divergence_starts_fresh() -> None:
    steps, _ = both([W("c0"), W("c1"), W("c2"), U("try again"), W("c9")])
    assert steps[2]["verdict"] == "refuse"
    assert (steps[3]["verdict"], steps[3]["count"], steps[3]["total"]) == ("pass", 1, 1)
    assert steps[3]["after_divergence"] is True


def test_rp05_stagnation_after_divergence() -> None:
    steps, first = both([P("I am stuck.")] * 7 + [U("hm"), P("I am stuck.")])
    assert [s["count"] for s in steps[:5]] == [1, 2, 3, 4, 5]
    assert all(s["verdict"] == "pass" for s in steps[:5])
    assert (steps[5]["verdict"], steps[5]["detector"], steps[5]["count"]) == ("refuse", "stagnation", 6)
    assert (steps[6]["verdict"], steps[6]["count"], steps[6]["after_divergence"]) == ("refuse", 7, True)
    assert (steps[7]["verdict"], steps[7]["count"]) == ("pass", 1)
    assert steps[0]["text_hash"] == "eaba8178650affd0"
    assert first == {"turn": 5, "call": None, "detector": "stagnation"}


def test_rp06_empty_prose_steps() -> None:
    msgs = [
        {"role": "assistant", "content": None},
        {"role": "assistant", "content": ""},
        {"role": "assistant", "content": None, "tool_calls": []},
    ]
    steps, first = both(msgs)
    assert len(steps) == 3 and first is None
    for s in steps:
        assert (s["verdict"], s["detector"], s["count"], s["text_hash"], s["kind"]) == (
            "pass", None, None, None, "prose"
        )


def test_rp07_rescue_arrives_one_turn_late() -> None:
    steps, _ = both([W("c1"), T("c1", "1"), W("c2"), T("c2", "1"), W("c3"), T("c3", "2")])
    s = steps[2]
    assert (s["verdict"], s["rule"], s["count"]) == ("refuse", "strike", 3)
    assert (s["identical"], s["not_evaluated"], s["answers_joined"]) == (False, False, True)


def test_rp08_tier_off_ceiling() -> None:
    msgs: list[Any] = []
    for i, ans in enumerate(["1", "2", "3"]):
        msgs += [A("read_file", '{"path":"a.rs"}', f"c{i}"), T(f"c{i}", ans)]
    steps, _ = both(msgs, GglibConfig(max_observation_steps=None))
    s = steps[2]
    assert (s["verdict"], s["rule"], s["count"], s["total"]) == ("refuse", "ceiling", 2, 3)
    assert (s["effective_max"], s["ceiling"], s["batch_class"]) == (2, 2, "observation")


def test_rp09_positional_join_and_call_indices() -> None:
    msgs = [AM(("x", "{}", "c1"), ("y", "{}", "c2")), T("c1", "ok"), A("z", id="c3")]
    steps, _ = both(msgs)
    assert (steps[0]["verdict"], steps[0]["answers_joined"], steps[0]["call"]) == ("pass", False, 0)
    assert steps[0]["tools"] == ["x", "y"]
    assert steps[1]["call"] == 2


def test_junk_calls_are_counted_and_non_assistant_calls_are_not() -> None:
    msgs = [
        {"role": "user", "tool_calls": [{"id": "u", "function": {"name": "x"}}]},
        {"role": "assistant", "content": None, "tool_calls": [7, None, "s"]},
        {"role": "Assistant", "content": "misspelt"},
        A("z", id="c3"),
        {"role": "assistant", "content": "hello", "tool_calls": {}},
    ]
    steps, _ = both(msgs)
    assert [s["turn"] for s in steps] == [0, 1, 2]
    assert [s["call"] for s in steps] == [0, 3, None]
    assert steps[0]["tools"] == ["", "", ""]
    assert steps[0]["signature"] == "|".join([":5b9bc4ba528108e4"] * 3)
    assert steps[2]["kind"] == "prose" and steps[2]["count"] == 1


def test_non_object_entries_break_runs() -> None:
    steps, first = both([W("c0"), W("c1"), None, W("c2")])
    assert first is None and steps[2]["count"] == 1


def test_batch_classes_and_costly_mutating() -> None:
    msgs = [A("read_file"), A("browser_navigate"), A("write_file"), A("browserNavigate")]
    steps, _ = both(msgs)
    assert [s["batch_class"] for s in steps] == ["observation", "costly_observation", "mutating", "observation"]
    assert [s["ceiling"] for s in steps] == [None, 15, 15, None]
    steps, _ = both([A("browser_navigate")], GglibConfig(observation_tools=()))
    assert (steps[0]["batch_class"], steps[0]["effective_max"], steps[0]["ceiling"]) == ("mutating", 2, 15)


def test_prose_window_fields() -> None:
    steps, _ = both([P("a")], GglibConfig(max_stagnation_steps=0))
    assert (steps[0]["verdict"], steps[0]["max_steps"], steps[0]["window"]) == ("refuse", 0, 1)
    steps, _ = both([P("a")], GglibConfig(max_stagnation_steps=7))
    assert (steps[0]["max_steps"], steps[0]["window"]) == (7, 28)


def test_narration_with_calls_is_not_a_prose_step() -> None:
    steps, _ = both([A("t", content="Let me look at the file.")] * 2)
    assert all(s["kind"] == "batch" and s["text_hash"] is None for s in steps)


def test_engine_surface() -> None:
    assert ENGINE.name == "gglib"
    assert ENGINE.default_config() == GglibConfig()
    replay = ENGINE.replay_messages(EXAMPLE_54, DEF, session="s", source="p.json")
    j = replay.to_json()
    assert (j["session"], j["source"], j["engine"], j["format"]) == ("s", "p.json", "gglib", "openai_chat")
    assert j["first_refusal"] == {"turn": 2, "call": 2, "detector": "loop"}
    prepared = ENGINE.prepare_messages(EXAMPLE_54, session="s", source="p.json")
    assert ENGINE.run(prepared, DEF) == replay


class _FakeSession:
    id = "sess"
    source = "x/sess.json"
    format = "openai_chat"

    def chat_view(self) -> list[Any]:
        return EXAMPLE_54


def test_session_level_api() -> None:
    s: Any = _FakeSession()
    r = ENGINE.replay(s, DEF)
    assert (r.session, r.source, r.format, r.engine) == ("sess", "x/sess.json", "openai_chat", "gglib")
    assert ENGINE.run(ENGINE.prepare(s), DEF) == r
    assert r.refused and r.first_refusal is not None and r.first_refusal.turn == 2


def test_get_engine() -> None:
    from loopscope.engines import get_engine

    assert get_engine("gglib") is ENGINE


def test_observation_cache_is_per_pattern_tuple() -> None:
    prepared = prepare_messages([A("read_file"), A("write_file")])
    a = prepared.observation_flags(("read_file",))
    b = prepared.observation_flags(())
    assert a == (True, False) and b == (False, False)
    assert prepared.observation_flags(("read_file",)) is a
