"""Plain-language explanations, levers and limitations."""

from __future__ import annotations

from tests.engines.openclaw.test_openclaw_replay import S

from loopscope.engines.openclaw import ENGINE, OpenClawConfig
from loopscope.engines.openclaw.v2026_6.explain import (
    LIMITATIONS,
    explain_first_refusal,
    explain_step,
    plain_sentence,
    session_limitations,
)


def _repeat_session(n: int = 25, *, text: str = "same", tool: str = "read") -> S:
    s = S().user()
    for i in range(n):
        s.call(tool, {"path": "/a"}, text if text != "changing" else f"v{i}")
    return s


def test_generic_refusal_sentence_and_levers() -> None:
    session = _repeat_session().build()
    config = ENGINE.default_config()
    result = ENGINE.replay(session, config)
    step = next(s for s in result.steps if s.verdict == "refuse")
    assert plain_sentence(step) == ("The agent called `read` with exactly the same input 20 "
                                    "times in a row and got exactly the same answer each time.")
    explanation = explain_step(step, config)
    assert explanation.upstream_message is not None
    assert explanation.upstream_message.startswith("CRITICAL: Called read")
    assert "blocked" in explanation.text
    assert explain_first_refusal(None, result, config) is not None
    # The levers the advice search tries first (tests/test_advice.py checks the search).
    levers = ENGINE.explainer.explain_step(step, result, config).levers
    assert levers[:2] == ("criticalThreshold", "detectors.genericRepeat")


def test_guard_levers() -> None:
    s = S().user().compaction()
    for _ in range(3):
        s.call("gateway", {"action": "lookup"}, "same")
    session = s.build()
    config = ENGINE.default_config()
    step = ENGINE.replay(session, config).steps[2]
    assert plain_sentence(step) is not None and "compacted" in plain_sentence(step)  # type: ignore[operator]


def test_unknown_tool_and_warning_sentences() -> None:
    s = S(chat=True).user()
    for _ in range(10):
        s.call("gog", '{"id": 0}', "Unknown tool: gog", error=True)
    s.call("gog", '{"id": 1}', "x")
    steps = ENGINE.replay(s.build(), ENGINE.default_config()).steps
    assert plain_sentence(steps[10]) == (
        "The agent tried to use a tool that doesn't exist (`gog`) 10 times in a row.")
    steps = ENGINE.replay(_repeat_session(12, text="changing").build(),
                          ENGINE.default_config()).steps
    warn = next(st for st in steps if st.verdict == "warn")
    assert "OpenClaw only logs this" in (plain_sentence(warn) or "")
    assert "only writes warnings" in explain_step(warn).text


def test_pass_step_explanation() -> None:
    steps = ENGINE.replay(S().user().call("ls", {}).build(), ENGINE.default_config()).steps
    assert plain_sentence(steps[0]) is None
    assert "through" in explain_step(steps[0]).headline


def test_limitations_apply() -> None:
    session = _repeat_session(35, text="changing").build()
    config = OpenClawConfig.from_block({"warningThreshold": 5})
    result = ENGINE.replay(session, config)
    ids = [key for key, _ in session_limitations(result, config, session)]
    assert "warnings_only_logged" in ids
    assert "warnings_below_10" in ids
    assert "changing_outputs" in ids
    assert "window_bounds_counts" in ids
    assert all(text == LIMITATIONS[key] for key, text in
               session_limitations(result, config, session))


def test_limitations_for_ping_pong_and_transcript_facts() -> None:
    s = S().user().compaction()
    for i in range(12):
        if i % 2:
            s.call("list", {"dir": "/"}, f"l{i}")
        else:
            s.call("Bash", {"command": "ls"}, f"b{i}")
    session = s.build()
    config = ENGINE.default_config()
    ids = {key for key, _ in session_limitations(ENGINE.replay(session, config), config,
                                                 session)}
    assert {"breaker_per_pattern", "ping_pong_without_evidence",
            "guard_arms_on_every_compaction", "names_not_normalised"} <= ids


def test_clamping_and_threshold_above_window() -> None:
    config = OpenClawConfig.from_block({"warningThreshold": 40})
    result = ENGINE.replay(S().user().call("ls", {}).build(), config)
    ids = {key for key, _ in session_limitations(result, config)}
    assert {"clamping", "threshold_above_window"} <= ids
