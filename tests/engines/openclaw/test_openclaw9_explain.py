"""Plain-language explanations, limitations, advice and guide examples of OpenClaw 2026.9.6."""

from __future__ import annotations

from typing import Any

import pytest
from tests.engines.openclaw.test_openclaw9_upstream import Chat

from loopscope.advice import smallest_changes
from loopscope.engines.openclaw import ENGINE
from loopscope.engines.openclaw.v2026_9.explain import LIMITATIONS_2026_9

V9 = "2026.9.6"
FAIL = ("FAILED", {"status": "failed", "exitCode": 1, "aggregated": "FAILED: 3 tests"}, False)


def _run(session: Any, **values: Any) -> tuple[Any, Any]:
    config = ENGINE.config(values, V9).config
    return ENGINE.replay(session, config), config


def _explain(step: Any, replay: Any, config: Any) -> Any:
    return ENGINE.explainer.explain_step(step, replay, config)


def test_recovery_terminal_and_skipped_explanations() -> None:
    same = ("read", {"path": "/a"}, ("same", {}, False))
    session = Chat().repeat(20).message(("ls", {}, ("x", {}, False)), same).message(same).build()
    replay, config = _run(session)
    skipped, recovery, terminal = replay.steps[20], replay.steps[21], replay.steps[22]

    e = _explain(recovery, replay, config)
    assert e.headline == ("The agent called `read` with exactly the same input 20 times in a "
                          "row and got exactly the same answer each time.")
    assert "try once more" in (e.guard_action or "")
    _title, text = e.upstream[0]
    assert text.endswith("Do not repeat this exact tool action. Reassess the task. You may "
                         "answer the user, ask for clarification, or continue with a different "
                         "tool or different arguments.")
    assert "CRITICAL_THRESHOLD" in (e.which_limit or "") and "fixed in OpenClaw" in e.which_limit
    assert e.levers[0] == "CRITICAL_THRESHOLD" and "enabled" in e.levers

    e = _explain(skipped, replay, config)
    assert e.headline == ("Not run because another call in the same message triggered the loop "
                          "stop.")
    assert any("call 22" in fact and "`read`" in fact for fact in e.what_happened)
    assert ("OpenClaw's result for this call",
            "This tool was not executed because another call in the batch triggered critical "
            "tool-loop recovery. Reassess the task before choosing the next action.") in e.upstream

    e = _explain(terminal, replay, config)
    assert e.headline == ("OpenClaw let the agent try once more after warning it; the second "
                          "loop in the same run ended the run.")
    assert ("OpenClaw's final message", "OpenClaw stopped this run because tool-loop recovery "
            "encountered another critical loop. No blocked tool action was executed.") in e.upstream
    assert "stopped the run" in (e.guard_action or "")


def test_argument_churn_and_warning_buckets_in_plain_words() -> None:
    session = Chat()
    for i in range(12):
        session.message(("read", {"path": f"/{'abc'[i % 3]}"}, ("ENOENT", {}, True)))
    replay, config = _run(session.build())
    churn = [s for s in replay.steps if s.detector == "argument_churn"]
    assert [s.count for s in churn] == [10, 11]
    e = _explain(churn[0], replay, config)
    assert e.headline.startswith("The agent keeps calling `read` with a few different inputs "
                                 "(3 variants), 10 calls in all")
    assert "the call still runs" in (e.guard_action or "")
    assert "ARGUMENT_CHURN_THRESHOLD" in (e.which_limit or "")
    later = _explain(churn[1], replay, config)
    assert "once per 10 repetitions" in (later.guard_action or "")


def test_terminal_exec_failures_in_plain_words() -> None:
    session = Chat()
    for i in range(21):
        session.message(("exec", {"command": f"pytest --seed {i}"},
                         (f"FAILED after {i}ms", {"status": "failed", "exitCode": 1,
                                                  "aggregated": f"FAILED after {i + 5}ms"},
                          False)))
    replay, config = _run(session.build())
    step = replay.steps[20]
    assert (step.verdict, step.detector, step.count) == ("refuse", "generic_repeat", 20)
    e = _explain(step, replay, config)
    assert "failed the same way 20 times" in e.headline
    assert any("non-zero exit code" in fact for fact in e.what_happened)


def test_what_if_is_named_as_hypothetical() -> None:
    session = Chat().repeat(6).build()
    replay, config = _run(session, CRITICAL_THRESHOLD=5, WARNING_THRESHOLD=2)
    step = next(s for s in replay.steps if s.verdict == "refuse")
    e = _explain(step, replay, config)
    assert "a what-if: OpenClaw 2026.9.6 uses 20 (CRITICAL_THRESHOLD)" in (e.which_limit or "")
    ids = [lim.id for lim in ENGINE.explainer.limitations(session, replay, config)]
    assert "fixed_thresholds" in ids and "one_shot_recovery" in ids


def test_limitations_of_2026_9() -> None:
    same = ("read", {"path": "/a"}, ("same", {}, False))
    session = (Chat().message(("Bash", {"command": "ls"}, ("x", {}, False)))
               .repeat(20).message(("ls", {}, ("x", {}, False)), same).compaction()
               .message(("gog", {}, ("Tool gog not found", {}, True))).build())
    resolution = ENGINE.resolve_config(None, [("historySize", "5")], version=V9)
    replay = ENGINE.replay(session, resolution.config)
    found = ENGINE.explainer.limitations(session, replay, resolution.config,
                                         resolution.warnings)
    ids = {lim.id for lim in found}
    assert {"legacy_keys_ignored", "one_shot_recovery", "shadow_after_stop",
            "batch_stops_together", "names_normalised", "unregistered_tools_checked",
            "guard_arms_on_every_compaction"} <= ids
    assert all(lim.text == LIMITATIONS_2026_9[lim.id] for lim in found)
    # 2026.6.11's explainer still answers for its own configurations.
    old = ENGINE.default_config()
    old_ids = {lim.id for lim in ENGINE.explainer.limitations(
        session, ENGINE.replay(session, old), old)}
    assert "names_not_normalised" in old_ids and "one_shot_recovery" not in old_ids


def test_advice_offers_only_enabled_unless_what_ifs_are_asked_for() -> None:
    session = Chat().repeat(21).build()
    config = ENGINE.default_config(V9)
    prepared = ENGINE.prepare(session, V9)
    real = smallest_changes(ENGINE, prepared, config)
    assert [c.changes for c in real] == [(("enabled", True, False),)]
    hypothetical = smallest_changes(ENGINE, prepared, config, include_what_ifs=True)
    by_setting = {c.setting: c for c in hypothetical}
    assert by_setting["CRITICAL_THRESHOLD"].to_value == 21
    assert by_setting["CRITICAL_THRESHOLD"].deployable is False
    assert any("Hypothetical" in n for n in by_setting["CRITICAL_THRESHOLD"].notes)


@pytest.mark.parametrize("example", [e for e in ENGINE.guide_examples() if e.version == V9],
                         ids=lambda e: e.detector)
def test_guide_examples_of_2026_9(example: Any) -> None:
    config = ENGINE.config(dict(example.values), example.version).config
    replay = ENGINE.replay(example.session, config)
    assert ENGINE.run(ENGINE.prepare(example.session, V9), config) == replay
    hits = [s for s in replay.steps if s.detector == example.detector]
    assert hits, f"{example.detector} does not fire in its example"
    e = _explain(hits[0], replay, config)
    assert e.headline
    first = replay.first_refusal
    if example.detector == "tool_loop_recovery_terminated":
        # 22 reads: the 21st is stopped with a second chance, the 22nd ends the run.
        assert [(s.call, s.detector) for s in replay.steps if s.verdict == "refuse"] == [
            (20, "generic_repeat"), (21, "tool_loop_recovery_terminated")]
    elif example.detector == "tool_loop_batch_skipped":
        assert first is not None and (first.call, first.detector) == (20,
                                                                       "tool_loop_batch_skipped")
        assert replay.steps[21].detector == "generic_repeat"
    elif example.detector == "argument_churn":
        assert first is None and [s.call for s in hits] == [10]
    else:
        assert first is not None and (first.call, first.detector) == (20, "generic_repeat")
        assert replay.steps[20].extra["outcome_kind"] == "terminal-exec-failure"
        assert len({s.signature for s in replay.steps}) == 21  # every command differs


def test_every_new_detector_has_a_guide_example() -> None:
    detectors = {e.detector for e in ENGINE.guide_examples() if e.version == V9}
    assert {"argument_churn", "tool_loop_recovery_terminated",
            "tool_loop_batch_skipped"} <= detectors
