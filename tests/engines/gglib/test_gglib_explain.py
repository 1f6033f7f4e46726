"""Explanations, upstream texts, setting changes and limitations."""

from __future__ import annotations

import json
from typing import Any

from tests.engines.gglib._gglib_helpers import AM, DEF, A, P, T, U, W

from loopscope.engines.base import Step
from loopscope.engines.gglib import GglibConfig, replay_messages
from loopscope.engines.gglib.explain import (
    explain_first_refusal,
    explain_step,
    session_limitations,
    upstream_note,
    upstream_refusal_body,
)

WF = "write_file"


def looping(n: int) -> list[Any]:
    return [A(WF, '{"path":"src/main.rs"}', "c1"), T("c1", "1 file changed")] * n


def moving(n: int, tool: str = WF) -> list[Any]:
    out: list[Any] = []
    for i in range(n):
        out += [A(tool, id=f"w{i}"), T(f"w{i}", f"{i} changed")]
    return out


def refused(messages: list[Any], config: GglibConfig = DEF) -> tuple[Step, tuple[Step, ...]]:
    steps, _ = replay_messages(messages, config)
    return next(s for s in steps if s.verdict == "refuse"), steps


# ------------------------------------------------------------------------------- upstream texts


def test_sp06_refusal_body_names_the_signature() -> None:
    step, _ = refused(looping(3))
    body = upstream_refusal_body(step)
    assert body is not None
    parsed = json.loads(body)
    assert list(parsed["error"]) == ["message", "type", "code"]
    assert parsed["error"]["code"] == parsed["error"]["type"] == "loop_detected"
    assert "write_file:247aba76b12bf80f" in parsed["error"]["message"]


def test_stagnation_refusal_body() -> None:
    step, _ = refused([P("I cannot proceed further.")] * 6)
    parsed = json.loads(upstream_refusal_body(step) or "")
    assert parsed["error"]["code"] == "stagnation_detected"
    assert "6 times (limit 5)" in parsed["error"]["message"]


def test_nt01_pass_has_no_note() -> None:
    steps, _ = replay_messages(looping(2), DEF)
    assert all(upstream_note(s) is None and upstream_refusal_body(s) is None for s in steps)


def _loop_step(signature: str) -> Step:
    return Step(2, 2, ("write_file",), signature, "refuse", "loop", 3, False, {"max_steps": None})


def test_nt02_sp08_loop_note() -> None:
    note = upstream_note(_loop_step("write_file:1f2e3d4c"))
    assert note is not None
    assert note.startswith("[gglib loop guard]") and "write_file:1f2e3d4c" in note
    step, _ = refused(looping(3))
    assert (upstream_note(step) or "").startswith("[gglib loop guard]")


def test_nt03_stagnation_note() -> None:
    step, _ = refused([P("I cannot proceed further.")] * 6)
    note = upstream_note(step) or ""
    assert note.startswith("[gglib loop guard]")
    assert "6" in note and "limit of 5" in note


def test_nt04_signature_is_bounded() -> None:
    sig = "x" * 300
    note = upstream_note(_loop_step(sig)) or ""
    assert "`" + "x" * 240 + "…`" in note
    assert "x" * 241 not in note
    exact = upstream_note(_loop_step("y" * 240)) or ""
    assert "`" + "y" * 240 + "`" in exact


# ------------------------------------------------------------------------------- explanations


def test_explain_mutating_strike_same_result() -> None:
    step, steps = refused(looping(3))
    e = explain_step(step, steps, DEF)
    assert "write_file" in e.headline and "3 times" in e.headline
    assert "same result each time" in e.headline
    assert e.governing_keys == ("max_repeated_batch_steps",)
    assert any("at most 2 times" in d for d in e.details)
    assert e.upstream_note and e.upstream_refusal


def test_explain_strike_not_comparable() -> None:
    step, steps = refused([A(WF)] * 3)
    e = explain_step(step, steps, DEF)
    assert "could not compare" in e.headline


def test_explain_l4_new_output() -> None:
    step, steps = refused([W("c1"), T("c1", "1"), W("c2"), T("c2", "1"), W("c3"), T("c3", "2")])
    e = explain_step(step, steps, DEF)
    assert "L4" in e.limitations
    assert any("decides before it sees the output" in d for d in e.details)


def test_explain_ceiling() -> None:
    step, steps = refused(moving(16))
    e = explain_step(step, steps, DEF)
    assert "kept changing" in e.headline and "16" in e.headline and "15" in e.headline
    assert "L5" in e.limitations


def test_explain_costly_ceiling_and_tier_off() -> None:
    step, steps = refused(moving(16, "browser_navigate"))
    e = explain_step(step, steps, DEF)
    assert any("cost something elsewhere" in d for d in e.details)
    cfg = GglibConfig(max_observation_steps=None)
    step, steps = refused(moving(3, "read_file"), cfg)
    e = explain_step(step, steps, cfg)
    assert step.extra["rule"] == "ceiling"
    assert any("read-only allowance is switched off" in d for d in e.details)


def test_explain_quiet_poll() -> None:
    msgs: list[Any] = []
    for i in range(16):
        msgs += [A("get_terminal_output", id=f"p{i}"), T(f"p{i}", "compiling…")]
    step, steps = refused(msgs)
    e = explain_step(step, steps, DEF)
    assert "L2" in e.limitations and e.governing_keys == ("max_observation_steps",)
    assert tuple(x for x, _ in session_limitations(steps, DEF) if x == "L2") == ("L2", )


def test_explain_stagnation() -> None:
    step, steps = refused([P("Sure!")] * 6)
    e = explain_step(step, steps, DEF)
    assert "6 times" in e.headline and "20" in e.headline and "limit is 5" in e.headline
    assert e.governing_keys == ("max_stagnation_steps",)


def test_explain_after_divergence_and_pass_steps() -> None:
    steps, _ = replay_messages([*looping(4), P("done")], DEF)
    e = explain_step(steps[3], steps, DEF)
    assert "L9" in e.limitations
    assert explain_step(steps[0], steps, DEF).headline.startswith("Occurrence 1")
    assert "L9" in explain_step(steps[4], steps, DEF).limitations
    rescued = replay_messages(moving(3), DEF)[0]
    assert "L3" in explain_step(rescued[2], rescued, DEF).limitations


def test_explain_first_refusal_sentence() -> None:
    r: Any = type("R", (), {"steps": replay_messages(looping(3), DEF)[0]})()
    text = explain_first_refusal(None, r, DEF)
    assert text and "write_file" in text
    r2: Any = type("R", (), {"steps": replay_messages(looping(2), DEF)[0]})()
    assert explain_first_refusal(None, r2, DEF) is None


# ------------------------------------------------------------------------------- setting changes


# ------------------------------------------------------------------------------- limitations


def ids(steps: Any, cfg: GglibConfig = DEF, messages: Any = None, warnings: Any = ()) -> list[str]:
    return [i for i, _ in session_limitations(steps, cfg, messages, warnings)]


def test_l1_cycle_reading() -> None:
    rt, wf = A("run_tests", '{"suite":"unit"}'), W()
    msgs: list[Any] = []
    for k in range(5):
        msgs += [rt | {"tool_calls": [{**rt["tool_calls"][0], "id": f"r{k}"}]}, T(f"r{k}", "1 failed")]
        msgs += [A(WF, '{"path":"a.rs"}', f"w{k}"), T(f"w{k}", "1 file changed")]
    steps, first = replay_messages(msgs, DEF)
    assert first is None and "L1" in ids(steps)
    del wf


def test_l5_l9_l12_l3() -> None:
    steps, _ = replay_messages([*moving(16), P("done"), A("x")], DEF)
    got = ids(steps)
    for lim in ("L3", "L5", "L9", "L12"):
        assert lim in got
    assert got == sorted(got, key=lambda x: int(x[1:]))


def test_l6_l7_l13_l14() -> None:
    steps, _ = replay_messages([A("browserNavigate"), A("navigate_to_definition"), A("a:b|c")], DEF)
    got = ids(steps, GglibConfig(observation_tools=("read_file", "")), warnings=["gglib: max_stagnation_steps=0 is outside 1..100; …"])
    for lim in ("L6", "L7", "L13", "L14"):
        assert lim in got


def test_l8_l11_l15_need_messages() -> None:
    deep: Any = "leaf"
    for _ in range(16):
        deep = {"x": deep}
    msgs = [A("probe", json.dumps(deep)), None, W(), U("go on"), W()]
    steps, _ = replay_messages(msgs, DEF)
    got = ids(steps, DEF, msgs)
    for lim in ("L8", "L11", "L15"):
        assert lim in got
    assert "L8" not in ids(steps)


def test_l10_on_stagnation() -> None:
    steps, _ = replay_messages([P("same")] * 6, DEF)
    assert "L10" in ids(steps)


def test_clean_session_has_no_limitations() -> None:
    msgs = [AM(("read_file", '{"path":"a"}', "c1")), T("c1", "x"), W("c2"), T("c2", "ok"), P("done")]
    steps, _ = replay_messages(msgs, DEF)
    assert ids(steps, DEF, msgs) == []
