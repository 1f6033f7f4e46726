"""Replay semantics: a worked example, the replay-level guard cases g13–g15 (refusal after a
compaction, off when disabled, a new run starts disarmed), session reading (run ids, inputs
per call) and the step fields."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from loopscope.engines.openclaw import ENGINE, STEP_FIELDS, OpenClawConfig
from loopscope.engines.openclaw.shared.session import CallInput, session_ops
from loopscope.formats.builder import SessionBuilder
from loopscope.model import Session


def _content(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


class S:
    """A tiny session DSL over the builder (``openclaw_session`` unless ``chat``)."""

    def __init__(self, chat: bool = False) -> None:
        self.b = SessionBuilder()
        self.chat = chat
        self.n = 0

    def user(self, text: str = "go") -> S:
        self.b.user(text)
        return self

    def compaction(self) -> S:
        self.b.compaction("summary")
        return self

    def prose(self, text: str = "ok") -> S:
        self.b.assistant(text)
        return self

    def call(self, name: str, args: Any, text: str | None = "ok", *, details: Any = None,
             error: bool = False, call_id: str | None = "auto", result_id: str | None = None
             ) -> S:
        self.n += 1
        cid = f"c{self.n}" if call_id == "auto" else call_id
        turn = self.b.assistant("")
        kind: Literal["json_text", "value"] = (
            "json_text" if self.chat and isinstance(args, str) else "value")
        self.b.call(turn, name, args, kind, id=cid)
        if text is not None:
            rid = result_id if result_id is not None else cid
            if self.chat:
                self.b.result(rid, text, text, is_error=error)
            else:
                self.b.result(rid, _content(text), text, is_error=error,
                              details=details if details is not None else {})
        return self

    def build(self) -> Session:
        return self.b.build(id="s", source="s.jsonl",
                            format="openai_chat" if self.chat else "openclaw_session")


def replay(session: Session, block: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    config = OpenClawConfig.from_block(block or {})
    plain = ENGINE.replay(session, config)
    fast = ENGINE.run(ENGINE.prepare(session), config)
    assert fast.to_json() == plain.to_json()
    return plain.to_json()["steps"]


def test_worked_example_7_6() -> None:
    exec_args = {"command": "tail -n 3 build.log"}
    s = S().user()
    for duration in (41, 37):
        s.call("exec", exec_args, "deploy: waiting for health check", details={
            "status": "completed", "exitCode": 0, "durationMs": duration,
            "aggregated": "deploy: waiting for health check", "cwd": f"/srv/{duration}"})
    s.call("read", {"path": "deploy/status.json"}, '{"status": "error"}', details={
        "status": "error", "tool": "read", "error": "ENOENT: no such file"})
    s.compaction()
    s.call("exec", exec_args, "CRITICAL: …", details={
        "status": "blocked", "deniedReason": "tool-loop", "reason": "CRITICAL: …"})
    session = s.build()
    steps = replay(session, {"enabled": True, "warningThreshold": 1, "criticalThreshold": 2})
    exec_sig = "exec:50006eb5504473a67e6784ae1466dbb21a617c2574b671a5b113c3d950c07e7b"
    read_sig = "read:8b2579875ed4d579d1fa6cf7e87ce2da74931357679ea5d8cf672213298e0a97"
    exec_hash = "69f2b61aae788f42b86ff8760fbc959763232942b6649baf519ff40b5e13d5a8"
    assert [(s["verdict"], s["detector"], s["count"]) for s in steps] == [
        ("pass", None, None), ("warn", "generic_repeat", 1), ("pass", None, None),
        ("refuse", "ping_pong", 3)]
    assert [s["signature"] for s in steps] == [exec_sig, exec_sig, read_sig, exec_sig]
    assert steps[0]["result_hash"] == steps[1]["result_hash"] == exec_hash
    assert steps[3]["result_hash"] is None and steps[3]["recorded_block"] is True
    assert steps[3]["warning_key"] == f"pingpong:{exec_sig}|{read_sig}"
    assert steps[3]["paired_tool"] == "read"
    assert {s["run_id"] for s in steps} == {"run-1"}
    result = ENGINE.replay(session, OpenClawConfig.from_block(
        {"enabled": True, "warningThreshold": 1, "criticalThreshold": 2}))
    assert result.to_json()["first_refusal"] == {"turn": 3, "call": 3, "detector": "ping_pong"}


def _three_identical(s: S) -> S:
    for _ in range(3):
        s.call("gateway", {"action": "lookup"}, "same")
    return s


def test_g13_guard_refuses_after_compaction() -> None:
    steps = replay(_three_identical(S().user().compaction()).build())
    assert [s["verdict"] for s in steps] == ["pass", "pass", "refuse"]
    last = steps[2]
    assert (last["detector"], last["count"], last["level"]) == ("post_compaction_guard", 3,
                                                               "critical")
    assert last["guard_abort"] is True and last["warning_key"] is None
    assert last["message"] == (
        "CRITICAL: tool gateway repeated 3 times with identical arguments and identical results "
        "within 3 attempts after auto-compaction. The compaction did not break the loop. "
        "Aborting to prevent runaway resource use.")


def test_g14_guard_off_when_disabled() -> None:
    steps = replay(_three_identical(S().user().compaction()).build(), {"enabled": False})
    assert [s["verdict"] for s in steps] == ["pass"] * 3


def test_g15_new_run_starts_disarmed() -> None:
    steps = replay(_three_identical(S().user().compaction().user()).build())
    assert [s["verdict"] for s in steps] == ["pass"] * 3


def test_guard_fires_with_detectors_unset_upstream_default() -> None:
    # enabled explicitly null-ish at the engine level: detectors off, guard still on.
    config = OpenClawConfig.from_block({"enabled": 0})
    steps = ENGINE.replay(_three_identical(S().user().compaction()).build(), config).steps
    assert [s.verdict for s in steps] == ["pass", "pass", "refuse"]


def test_guard_abort_kept_under_a_critical_detector() -> None:
    s = S().user()
    for _ in range(2):
        s.call("read", {"path": "/a"}, "same")
    s.compaction()
    s.call("read", {"path": "/a"}, "same")
    steps = replay(s.build(), {"warningThreshold": 1, "criticalThreshold": 2,
                               "postCompactionGuard": {"windowSize": 1}})
    assert steps[2]["detector"] == "generic_repeat" and steps[2]["guard_abort"] is True


def test_guard_overrides_a_warning_and_replay_continues() -> None:
    s = S().user()
    for _ in range(3):
        s.call("read", {"path": "/a"}, "same")
    s.compaction()
    for _ in range(3):
        s.call("read", {"path": "/a"}, "same")
    steps = replay(s.build(), {"warningThreshold": 2, "criticalThreshold": 10,
                               "postCompactionGuard": {"windowSize": 1}})
    assert [s["verdict"] for s in steps] == ["pass", "pass", "warn", "refuse", "warn", "warn"]
    assert steps[3]["detector"] == "post_compaction_guard"
    assert [s["after_divergence"] for s in steps] == [False] * 4 + [True, True]
    assert steps[3]["paired_tool"] is None


def test_runs_follow_user_messages_only() -> None:
    s = S().call("read", {"path": "/a"}).user()
    s.b.system("injected")
    s.b.other("custom", "x")
    s.call("read", {"path": "/a"}).user().call("read", {"path": "/a"})
    steps = replay(s.build())
    assert [x["run_id"] for x in steps] == ["run-0", "run-1", "run-2"]


def test_turn_counts_prose_turns() -> None:
    steps = replay(S().user().prose().call("read", {"path": "/a"}).prose().build())
    assert (steps[0]["turn"], steps[0]["call"]) == (1, 0)


def test_empty_session_has_no_steps() -> None:
    result = ENGINE.replay(S().user().prose().build(), ENGINE.default_config())
    assert result.to_json()["steps"] == [] and result.first_refusal is None


def test_outcome_is_the_first_later_result_with_the_call_id() -> None:
    s = S().user()
    s.call("read", {"path": "/a"}, None, call_id="x")
    s.call("list", {"dir": "/"}, "first", call_id="y", result_id="x")  # answers "x", not "y"
    s.call("list", {"dir": "/"}, "second", call_id="x")
    session = s.build()
    calls = [op for op in session_ops(session) if isinstance(op, CallInput)]
    assert calls[0].result["content"] == _content("first")
    assert calls[1].result is not None
    from loopscope.engines.openclaw import UNDEFINED

    assert calls[1].result is UNDEFINED
    assert calls[2].result["content"] == _content("second")


def test_call_without_id_has_no_outcome() -> None:
    steps = replay(S().user().call("read", {"path": "/a"}, "x", call_id=None,
                                   result_id="z").build())
    assert steps[0]["result_hash"] is None


def test_chat_mapping_error_flag_and_unknown_tool() -> None:
    s = S(chat=True).user()
    for _ in range(10):
        s.call("gog", '{"id": 0}', "Unknown tool: gog", error=True)
    s.call("gog", '{"id": 1}', "x")
    steps = replay(s.build())
    assert steps[0]["result_hash"].startswith("error:")
    assert steps[0]["unknown_tool"] == "gog"
    assert (steps[10]["verdict"], steps[10]["detector"], steps[10]["count"]) == (
        "refuse", "unknown_tool_repeat", 10)
    assert steps[10]["warning_key"] == "unknown-tool:gog:gog"


def test_chat_arguments_use_js_json_parse() -> None:
    s = S(chat=True).user()
    s.call("t", '{"n": 100.0}').call("t", '{"n": 1e2}').call("t", "NaN").call("t", "")
    steps = replay(s.build())
    assert steps[0]["signature"] == steps[1]["signature"] == (
        "t:b39022c4ed96525c42cd0e7ce55308533962a655f1c19d5dac2f03e9dd995b2c")
    assert steps[2]["signature"] == (
        "t:8832c23fc14920027a721e7d09588179b6e4e010531653677eb5717873a17988")
    assert steps[3]["signature"] == (
        "t:12ae32cb1ec02d01eda3581b127c1fee3b0dc53572ed6baf239721a03d82e126")


def test_openclaw_error_text_is_not_trimmed() -> None:
    steps = replay(S().user().call("x", {}, "  boom\n", error=True).build())
    from loopscope.jsonrules.javascript import digest

    assert steps[0]["result_hash"] == "error:" + digest("  boom\n")


def test_adapter_failures_are_hashed_as_results() -> None:
    details = {"status": "error", "tool": "exec", "error": "Tool exec not found"}
    steps = replay(S().user().call("exec", {}, "x", details=details).build())
    assert not steps[0]["result_hash"].startswith("error:")
    assert steps[0]["unknown_tool"] is None


def test_missing_arguments_hash_as_empty_object() -> None:
    s = S().user()
    s.call("t", None)
    steps = replay(s.build())
    assert steps[0]["signature"] == (
        "t:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a")


def test_step_fields_and_types() -> None:
    s = S().user()
    for _ in range(12):
        s.call("read", {"path": "/a"}, "same")
    steps = replay(s.build())
    for step in steps:
        assert list(step)[: len(STEP_FIELDS)] == list(STEP_FIELDS)
        assert step["args_hash"] == step["signature"]
    warn = steps[10]
    assert (warn["verdict"], warn["level"], warn["warning_emitted"]) == ("warn", "warning", True)
    assert steps[11]["warning_emitted"] is False
    assert steps[0]["level"] is None and steps[0]["message"] is None


def test_disabled_config_passes_everything() -> None:
    s = S().user()
    for _ in range(40):
        s.call("read", {"path": "/a"}, "same")
    steps = replay(s.build(), {"enabled": False})
    assert {x["verdict"] for x in steps} == {"pass"}
    assert steps[5]["result_hash"] is not None


@pytest.mark.parametrize("history", [3, 10, 30])
def test_window_is_shared_across_runs(history: int) -> None:
    s = S().user()
    for i in range(5):
        s.call("ls", {"i": i})
    s.user()
    for _ in range(12):
        s.call("read", {"path": "/a"}, "same")
    steps = replay(s.build(), {"historySize": history, "warningThreshold": 2,
                               "criticalThreshold": 100})
    counts = [x["count"] for x in steps[5:]]
    assert counts[-1] == min(11, history)
