"""OpenClaw's own tool-loop tests (numbered in the test names), the post-compaction guard cases
(``g1``…) and extra vectors taken from openclaw@2026.6.11, run against the literal port
(``detect``/``record``/``outcome``) through :class:`Driver` (``R`` record, ``S`` record with a
result, ``F`` record with an error, ``D`` detect)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from tests.engines.openclaw._openclaw_helpers import EN, Driver, text_result, verdict_tuple

from loopscope.engines.openclaw import (
    UNDEFINED,
    LoopState,
    PostCompactionGuard,
    WarningDeduper,
    hash_tool_call,
    record_tool_call,
    record_tool_call_outcome,
    tool_call_stats,
)
from loopscope.engines.openclaw.v2026_6.upstream import detect_tool_call_loop

HEX64 = re.compile(r"^[a-f0-9]{64}$")

READ_ARGS = {"path": "/same.txt"}
READ_RESULT = text_result("same output", {"ok": True})


def READ(d: Driver, n: int, config: Any = EN) -> None:
    for _ in range(n):
        d.S("read", READ_ARGS, READ_RESULT, config=config)


def POLL(d: Driver, session: str, n: int, config: Any = EN) -> None:
    for _ in range(n):
        d.S("process", {"action": "poll", "sessionId": session},
            text_result("(no new output)\n\nProcess still running.",
                        {"status": "running", "aggregated": "steady"}), config=config)


def PP(d: Driver, n: int, text: Any) -> None:
    for i in range(n):
        if i % 2 == 0:
            d.S("read", {"path": "/a.txt"}, text_result(text("read", i), {"ok": True}))
        else:
            d.S("list", {"dir": "/workspace"}, text_result(text("list", i), {"ok": True}))


def PAY(i: int) -> dict[str, Any]:
    return {"ok": True, "channel": "feishu", "chatId": "oc_chat", "runId": f"run_{i}",
            "messageId": f"om_{i}", "receipt": {"platformMessageId": f"p_{i}"}}


SA = {"action": "send", "target": "feishu:oc_chat", "text": "ping"}


def SEND(d: Driver, tool: str, args: Any, payload: Any) -> Any:
    return d.S(tool, args, {"content": [{"type": "text", "text": json.dumps(payload, indent=2)}],
                            "details": payload})


# --------------------------------------------------------------------------- hashing and recording


def test_01_to_05_args_hash_basics() -> None:
    assert hash_tool_call("read", {"path": "/f"}) == hash_tool_call("read", {"path": "/f"})
    assert hash_tool_call("read", {"path": "/file1.txt"}) != hash_tool_call(
        "read", {"path": "/file2.txt"})
    assert hash_tool_call("read", {"p": 1}) != hash_tool_call("write", {"p": 1})
    for params in ("string-param", 123, None):
        assert re.match(r"^tool:[a-f0-9]{64}$", hash_tool_call("tool", params))
    assert hash_tool_call("t", {"a": 1, "b": 2}) == hash_tool_call("t", {"b": 2, "a": 1})


def test_06_large_params() -> None:
    assert re.match(r"^read:[a-f0-9]{64}$", hash_tool_call("read", {"data": "x" * 20000}))


def test_07_circular_params() -> None:
    def build() -> dict[str, Any]:
        shared = {"value": 1}
        root: dict[str, Any] = {"first": shared, "second": shared}
        root["self"] = root
        return root

    assert hash_tool_call("tool", build()) == hash_tool_call("tool", build())


def test_08_10_11_recording() -> None:
    state = LoopState()
    record_tool_call(state, "read", {"path": "/file.txt"}, "call-1", EN, timestamp=123)
    assert len(state.history) == 1
    assert state.history[0].tool_name == "read"
    assert state.history[0].tool_call_id == "call-1"
    assert state.history[0].timestamp == 123
    record_tool_call(state, "read", {"path": "/file.txt"}, None, EN, "  run-1 ")
    assert state.history[1].run_id == "run-1"


def test_09_sliding_window() -> None:
    state = LoopState()
    for i in range(40):
        record_tool_call(state, "tool", {"iteration": i}, None, EN)
    assert len(state.history) == 30
    assert state.history[0].args_hash == hash_tool_call("tool", {"iteration": 10})


def test_12_history_size() -> None:
    state = LoopState()
    for i in range(10):
        record_tool_call(state, "tool", {"iteration": i}, None, {"enabled": True, "historySize": 4})
    assert len(state.history) == 4
    assert state.history[0].args_hash == hash_tool_call("tool", {"iteration": 6})


def test_36_large_output_hash() -> None:
    state = LoopState()
    params = {"action": "log", "sessionId": "sess-big"}
    record_tool_call(state, "process", params, "log-big", EN)
    record = record_tool_call_outcome(
        state, "process", params, "log-big",
        text_result("y" * 40000, {"status": "running", "totalLines": 1, "totalChars": 40000}),
        UNDEFINED, EN)
    assert record is not None and record.result_hash is not None
    assert HEX64.match(record.result_hash)


def test_37_pre_recorded_call_gets_its_result() -> None:
    state = LoopState()
    params = {"action": "lookup", "path": "cron.maxConcurrentRuns"}
    record_tool_call(state, "gateway", params, "call-1", EN)
    record = record_tool_call_outcome(state, "gateway", params, "call-1",
                                      text_result("same schema"), UNDEFINED, EN)
    assert record is not None and record.tool_call_id == "call-1"
    assert len(state.history) == 1
    assert isinstance(state.history[0].result_hash, str)


def test_38_trimming_while_returning() -> None:
    state = LoopState()
    last = None
    for i in range(33):
        params = {"action": "lookup", "path": f"config.{i}"}
        record_tool_call(state, "gateway", params, f"call-{i}", EN)
        last = record_tool_call_outcome(state, "gateway", params, f"call-{i}",
                                        text_result("x"), UNDEFINED, EN)
    assert last is not None and last.tool_call_id == "call-32"
    assert len(state.history) == 30
    assert state.history[0].tool_call_id == "call-3"


def test_39_no_cross_run_attach() -> None:
    state = LoopState()
    record_tool_call(state, "read", READ_ARGS, "call-1", EN, "run-1")
    record_tool_call_outcome(state, "read", READ_ARGS, "call-1", READ_RESULT, UNDEFINED, EN,
                             "run-2")
    assert len(state.history) == 2
    assert state.history[0].result_hash is None
    assert state.history[1].run_id == "run-2"
    assert state.history[1].result_hash is not None


def test_outcome_without_hash_records_nothing() -> None:
    state = LoopState()
    record_tool_call(state, "x", {}, "c", EN)
    veto = text_result("blocked", {"status": "blocked", "deniedReason": "tool-loop"})
    assert record_tool_call_outcome(state, "x", {}, "c", veto, UNDEFINED, EN) is None
    assert record_tool_call_outcome(state, "x", {}, "c", UNDEFINED, UNDEFINED, EN) is None
    assert state.history[0].result_hash is None


# --------------------------------------------------------------------------- detection


def test_13_disabled_by_default() -> None:
    d = Driver()
    for _ in range(20):
        d.R("read", READ_ARGS, config=None)
    assert d.D("read", READ_ARGS, config=None) is None


def test_14_unique_calls() -> None:
    d = Driver()
    for i in range(15):
        d.R("read", {"path": f"/file{i}.txt"})
    assert d.D("read", {"path": "/new-file.txt"}) is None


def test_15_to_17_run_scoping() -> None:
    d = Driver()
    for _ in range(10):
        d.R("read", READ_ARGS, run="heartbeat-1")
    assert d.D("read", READ_ARGS, run="heartbeat-2") is None
    d = Driver()
    for _ in range(10):
        d.R("read", READ_ARGS, run="run-1")
    assert verdict_tuple(d.D("read", READ_ARGS, run="run-1")) == ("warning", "generic_repeat", 10)
    assert d.D("read", READ_ARGS) is None


def test_18_generic_warning() -> None:
    d = Driver()
    for _ in range(10):
        d.R("read", READ_ARGS)
    v = d.D("read", READ_ARGS)
    assert verdict_tuple(v) == ("warning", "generic_repeat", 10)
    assert "WARNING" in v.message and "10 times" in v.message


def test_19_generic_critical() -> None:
    d = Driver()
    READ(d, 20)
    v = d.D("read", READ_ARGS)
    assert verdict_tuple(v) == ("critical", "generic_repeat", 20)
    assert "identical outcomes" in v.message
    d = Driver()
    READ(d, 19)
    assert verdict_tuple(d.D("read", READ_ARGS)) == ("warning", "generic_repeat", 19)


def test_20_custom_thresholds() -> None:
    cfg = {"enabled": True, "warningThreshold": 2, "criticalThreshold": 4,
           "detectors": {"genericRepeat": False, "knownPollNoProgress": True, "pingPong": False}}
    d = Driver()
    args = {"action": "poll", "sessionId": "sess-custom"}
    POLL(d, "sess-custom", 2, cfg)
    assert verdict_tuple(d.D("process", args, cfg)) == ("warning", "known_poll_no_progress", 2)
    POLL(d, "sess-custom", 2, cfg)
    assert verdict_tuple(d.D("process", args, cfg)) == ("critical", "known_poll_no_progress", 4)


def test_21_all_detectors_off() -> None:
    cfg = {"enabled": True, "detectors": {"genericRepeat": False, "knownPollNoProgress": False,
                                          "pingPong": False}}
    d = Driver()
    POLL(d, "sess-no-detectors", 20, cfg)
    assert d.D("process", {"action": "poll", "sessionId": "sess-no-detectors"}, cfg) is None


def test_22_23_poll_warning_and_critical() -> None:
    args = {"action": "poll", "sessionId": "sess-1"}
    d = Driver()
    POLL(d, "sess-1", 10)
    v = d.D("process", args)
    assert verdict_tuple(v) == ("warning", "known_poll_no_progress", 10)
    assert "no progress" in v.message
    assert v.warning_key == (
        "poll:process:process:49e57b888f46767b725107d24370e31869c8110f24fccb663b3cd9f54b74fe70:"
        "3dd0ce52bc8c569b73d432663043d8308f2f726318b5c97e201eab2ecd6c2056")
    d = Driver()
    POLL(d, "sess-1", 20)
    v = d.D("process", args)
    assert verdict_tuple(v) == ("critical", "known_poll_no_progress", 20)
    assert "CRITICAL" in v.message


def test_24_poll_progressing() -> None:
    d = Driver()
    args = {"action": "poll", "sessionId": "sess-1"}
    for i in range(25):
        d.S("process", args, text_result(f"line {i}", {"status": "running",
                                                       "aggregated": f"line {i}"}))
    assert d.D("process", args) is None


@pytest.mark.parametrize("cfg", [
    {"enabled": True, "detectors": {"genericRepeat": False, "knownPollNoProgress": True,
                                    "pingPong": True}},
    EN,
])
def test_25_global_breaker(cfg: Any) -> None:
    d = Driver()
    READ(d, 30, cfg)
    v = d.D("read", READ_ARGS, cfg)
    assert verdict_tuple(v) == ("critical", "global_circuit_breaker", 30)
    assert "global circuit breaker" in v.message


def test_26_exec_completed_volatile_details() -> None:
    d = Driver()
    args = {"command": "grafana-api.sh datasources"}
    for i in range(20):
        d.S("exec", args, text_result("Loki\nPrometheus", {
            "status": "completed", "exitCode": 0, "durationMs": 100 + i, "cwd": f"/tmp/run-{i}",
            "aggregated": "Loki\nPrometheus"}))
    assert verdict_tuple(d.D("exec", args)) == ("critical", "generic_repeat", 20)


def test_27_exec_running_volatile_session() -> None:
    d = Driver()
    args = {"command": "tail -f /var/log/app.log", "yieldMs": 1000}
    for i in range(20):
        d.S("exec", args, text_result(
            f"Command still running (session sess-{i}, pid {1000 + i})",
            {"status": "running", "sessionId": f"sess-{i}", "pid": 1000 + i,
             "startedAt": 1780390800000 + i, "cwd": "/srv", "tail": "(no new output)"}))
    assert verdict_tuple(d.D("exec", args)) == ("critical", "generic_repeat", 20)


def test_28_exec_changing_output() -> None:
    d = Driver()
    args = {"command": "date"}
    for i in range(30):
        d.S("exec", args, text_result(f"tick {i}", {"status": "completed", "exitCode": 0,
                                                   "durationMs": 5 + i,
                                                   "aggregated": f"tick {i}"}))
    assert verdict_tuple(d.D("exec", args)) == ("warning", "generic_repeat", 30)


def test_29_exec_changing_empty_output_failures() -> None:
    d = Driver()
    args = {"command": "openclaw flaky-helper"}
    for i in range(30):
        d.S("exec", args, text_result(f"Runtime failed before spawn: attempt {i}", {
            "status": "failed", "exitCode": None, "durationMs": 3 + i, "aggregated": ""}))
    assert verdict_tuple(d.D("exec", args)) == ("warning", "generic_repeat", 30)


def test_30_unknown_tool_below_threshold() -> None:
    d = Driver()
    for i in range(9):
        d.F("exec", {"command": f"echo {i}"}, "Tool exec not found")
    assert d.D("exec", {"command": "echo still allowed"}) is None


def test_31_unknown_tool_changing_args() -> None:
    d = Driver()
    for i in range(20):
        d.F("exec", {"command": f"echo {i}", "n": i}, "Tool exec not found")
    v = d.D("exec", {"command": "echo still looping"})
    assert verdict_tuple(v) == ("critical", "unknown_tool_repeat", 20)
    assert v.message.startswith("CRITICAL: attempted unavailable tool exec 20 times.")
    assert v.warning_key == "unknown-tool:exec:exec"


def test_unknown_tool_gates_ignore_detector_toggles() -> None:
    cfg = {"enabled": True, "detectors": {"genericRepeat": False, "knownPollNoProgress": False,
                                          "pingPong": False}}
    d = Driver()
    for i in range(10):
        d.F("exec", {"command": f"echo {i}"}, "Tool exec not found", config=cfg)
    assert verdict_tuple(d.D("exec", {"command": "x"}, cfg)) == (
        "critical", "unknown_tool_repeat", 10)


def test_32_ping_pong_warning() -> None:
    d = Driver()
    for i in range(9):
        if i % 2 == 0:
            d.R("read", {"path": "/a.txt"})
        else:
            d.R("list", {"dir": "/workspace"})
    v = d.D("list", {"dir": "/workspace"})
    assert verdict_tuple(v) == ("warning", "ping_pong", 10)
    assert "ping-pong loop" in v.message
    assert v.paired_tool_name == "read"
    assert v.warning_key == (
        "pingpong:list:2fb7db606f6f1cb521541fb584b19d434286b036d72397c35b1302c51d090763|"
        "read:2fcd6ae8d7e15b65166da05b7a60e67e1c918d9eb8d854b20cf47c3439981357")


def test_33_ping_pong_critical() -> None:
    d = Driver()
    PP(d, 19, lambda tool, i: f"{tool} stable")
    assert verdict_tuple(d.D("list", {"dir": "/workspace"})) == ("critical", "ping_pong", 20)


def test_34_ping_pong_progressing() -> None:
    d = Driver()
    PP(d, 19, lambda tool, i: f"{tool} {i}")
    assert verdict_tuple(d.D("list", {"dir": "/workspace"})) == ("warning", "ping_pong", 20)


def test_35_alternation_broken() -> None:
    d = Driver()
    d.R("read", {"path": "/a.txt"})
    d.R("list", {"dir": "/workspace"})
    d.R("read", {"path": "/a.txt"})
    d.R("write", {"path": "/tmp/out.txt"})
    assert d.D("list", {"dir": "/workspace"}) is None


def test_40_empty_history() -> None:
    assert Driver().D("tool", {"arg": 1}) is None


# --------------------------------------------------------------------------- message sends


def test_41_duplicate_sends_stable_hash() -> None:
    d = Driver()
    first = SEND(d, "message", SA, PAY(0))
    second = SEND(d, "message", SA, PAY(1))
    assert first.result_hash == second.result_hash


def test_42_broadcast_nested_ids() -> None:
    d = Driver()
    args = {"action": "broadcast", "text": "hi"}
    hashes = [SEND(d, "message", args, {"results": [{"channel": "feishu", "ok": True, "result": {
        "messageId": f"om_{i}", "receipt": i}}]}).result_hash for i in range(2)]
    assert hashes[0] == hashes[1]


def test_43_identical_arg_send_loop() -> None:
    d = Driver()
    for i in range(20):
        SEND(d, "message", SA, PAY(i))
    assert verdict_tuple(d.D("message", SA)) == ("critical", "generic_repeat", 20)


def test_44_sessions_send() -> None:
    d = Driver()
    args = {"sessionKey": "agent:main:peer", "text": "ping"}
    for i in range(20):
        SEND(d, "sessions_send", args, {"ok": True, "runId": f"run_{i}"})
    assert verdict_tuple(d.D("sessions_send", args)) == ("critical", "generic_repeat", 20)


def test_45_channel_plugin_send_is_not_send_like() -> None:
    d = Driver()
    args = {"to": "telegram:123", "text": "ping"}
    for i in range(20):
        SEND(d, "telegram", args, PAY(i))
    assert verdict_tuple(d.D("telegram", args)) == ("warning", "generic_repeat", 20)


@pytest.mark.parametrize(("args", "payload"), [
    ({"action": "reply", "text": "ping"}, PAY),
    ({"action": "upload-file", "path": "a.png"},
     lambda i: {"ok": True, "fileId": f"f_{i}", "messageId": f"om_{i}"}),
    ({"action": "poll", "question": "lunch?"},
     lambda i: {"ok": True, "pollId": f"p_{i}", "messageId": f"om_{i}"}),
    ({"action": "send", "text": "hello"},
     lambda i: {"message": {"id": f"qa_{i}", "accountId": "default", "direction": "outbound",
                            "conversation": {"id": "loop-room", "chatType": "channel"},
                            "senderId": "openclaw", "text": "hello",
                            "timestamp": 1780390800000 + i}}),
])
def test_46_47_48_55_send_loops_are_critical(args: Any, payload: Any) -> None:
    d = Driver()
    for i in range(20):
        SEND(d, "message", args, payload(i))
    assert verdict_tuple(d.D("message", args)) == ("critical", "generic_repeat", 20)


def test_49_distinct_texts() -> None:
    d = Driver()
    for i in range(20):
        SEND(d, "message", {"action": "send", "target": "t", "text": f"line {i}"}, PAY(i))
    assert d.D("message", {"action": "send", "target": "t", "text": "line final"}) is None


@pytest.mark.parametrize(("args", "first", "second"), [
    ({"action": "read", "channel": "x"}, {"ok": True, "messageId": "m_0", "ts": 1000},
     {"ok": True, "messageId": "m_1", "ts": 2000}),
    ({"action": "channel-create", "name": "x"}, {"ok": True, "messageId": "m_0", "timestamp": 1},
     {"ok": True, "messageId": "m_1", "timestamp": 2}),
    (SA, {"ok": True, "messageId": "om_0", "route": {"id": "conv-A"}},
     {"ok": True, "messageId": "om_0", "route": {"id": "conv-B"}}),
])
def test_50_51_52_hashes_differ(args: Any, first: Any, second: Any) -> None:
    d = Driver()
    assert SEND(d, "message", args, first).result_hash != SEND(d, "message", args,
                                                               second).result_hash


def test_53_sticky_veto() -> None:
    d = Driver()
    for i in range(20):
        SEND(d, "message", SA, PAY(i))
    d.R("message", SA, "message-veto")
    record_tool_call_outcome(d.state, "message", SA, "message-veto", text_result(
        "blocked", {"status": "blocked", "deniedReason": "tool-loop"}), UNDEFINED, EN)
    assert verdict_tuple(d.D("message", SA)) == ("critical", "generic_repeat", 20)


def test_54_plugin_vetoes_escalate() -> None:
    d = Driver()
    args = {"action": "read", "channel": "x"}
    for _ in range(20):
        d.S("message", args, text_result("blocked", {"status": "blocked",
                                                     "deniedReason": "plugin-before-tool-call"}))
    assert verdict_tuple(d.D("message", args)) == ("critical", "generic_repeat", 20)


def test_56_conversation_id_changes() -> None:
    d = Driver()
    args = {"action": "send", "text": "hello"}
    for i in range(20):
        SEND(d, "message", args, {"message": {
            "id": f"qa_{i}", "accountId": "default", "direction": "outbound",
            "conversation": {"id": f"loop-room-{i}", "chatType": "channel"},
            "senderId": "openclaw", "text": "hello", "timestamp": 1780390800000 + i}})
    assert verdict_tuple(d.D("message", args)) == ("warning", "generic_repeat", 20)


# --------------------------------------------------------------------------- statistics


def test_57_to_59_statistics() -> None:
    assert tool_call_stats(LoopState()) == {"total_calls": 0, "unique_patterns": 0,
                                            "most_frequent": None}
    d = Driver()
    for _ in range(5):
        d.R("read", {"path": "/file.txt"})
    d.R("write", {"path": "/output.txt"})
    d.R("list", {"path": "/home"})
    d.R("read", {"path": "/other.txt"})
    stats = tool_call_stats(d.state)
    assert (stats["total_calls"], stats["unique_patterns"]) == (8, 4)
    d = Driver()
    for _ in range(3):
        d.R("read", {"path": "file1"})
    for _ in range(7):
        d.R("read", {"path": "file2"})
    for _ in range(2):
        d.R("write", {"path": "x"})
    assert tool_call_stats(d.state)["most_frequent"] == {"tool_name": "read", "count": 7}


# --------------------------------------------------------------------------- post-compaction guard


def _obs(guard: PostCompactionGuard, tool: str, args: Any, result: str) -> Any:
    return guard.observe(tool, hash_tool_call(tool, args), result)


def test_g1_to_g3_arming() -> None:
    guard = PostCompactionGuard(3)
    observation = _obs(guard, "read", "/x", "r1")
    assert not observation.should_abort and not guard.armed
    guard.arm()
    assert guard.armed and guard.remaining_attempts == 3
    remaining = [_obs(guard, t, "/x", "r1").remaining_attempts for t in ("a", "b", "c")]
    assert remaining == [2, 1, 0] and not guard.armed


def test_g4_abort_on_identical_triples() -> None:
    guard = PostCompactionGuard(3)
    guard.arm()
    args = {"action": "lookup", "path": "x"}
    results = [_obs(guard, "gateway", args, "r1") for _ in range(3)]
    assert [r.should_abort for r in results] == [False, False, True]
    assert results[2].detector == "compaction_loop_persisted"
    assert (results[2].count, results[2].tool_name) == (3, "gateway")


def test_g5_g6_no_abort_on_changes() -> None:
    guard = PostCompactionGuard(3)
    guard.arm()
    assert not any(_obs(guard, "read", "/x", r).should_abort for r in ("r1", "r2", "r3"))
    guard = PostCompactionGuard(3)
    guard.arm()
    assert not any(_obs(guard, "read", a, "r1").should_abort for a in ("/a", "/b", "/c"))


def test_g7_g8_window_two_then_rearm() -> None:
    guard = PostCompactionGuard(2)
    guard.arm()
    assert not _obs(guard, "read", "/x", "r").should_abort
    second = _obs(guard, "read", "/x", "r")
    assert second.should_abort and second.count == 2 and not guard.armed
    assert not _obs(guard, "read", "/x", "r").should_abort
    guard.arm()
    assert guard.armed and guard.remaining_attempts == 2


def test_g9_disabled_guard() -> None:
    guard = PostCompactionGuard(3, enabled=False)
    guard.arm()
    assert not any(_obs(guard, "read", "/x", "r").should_abort for _ in range(3))


def test_g10_different_tools_disarm() -> None:
    guard = PostCompactionGuard(3)
    guard.arm()
    for tool in ("read", "write", "exec"):
        _obs(guard, tool, "/x", "r")
    assert not guard.armed and guard.remaining_attempts == 0


def test_g11_abort_fields() -> None:
    guard = PostCompactionGuard(2)
    guard.arm()
    _obs(guard, "read", "/x", "r")
    abort = _obs(guard, "read", "/x", "r")
    assert abort.error_name == "PostCompactionLoopPersistedError"
    assert abort.message == (
        "CRITICAL: tool read repeated 2 times with identical arguments and identical results "
        "within 2 attempts after auto-compaction. The compaction did not break the loop. "
        "Aborting to prevent runaway resource use.")
    assert (abort.detector, abort.count, abort.tool_name) == ("compaction_loop_persisted", 2,
                                                              "read")


def test_g12_window_one() -> None:
    guard = PostCompactionGuard(1)
    guard.arm()
    observation = _obs(guard, "read", "/x", "r")
    assert observation.should_abort and observation.count == 1


# --------------------------------------------------------------------------- warning de-duplication


@pytest.mark.parametrize(("counts", "emitted"), [
    (list(range(10, 20)), [True] + [False] * 9),
    ([10, 20], [True, True]),
    ([9], [False]),
    ([25, 15], [True, False]),
])
def test_warning_dedup_vectors(counts: list[int], emitted: list[bool]) -> None:
    deduper = WarningDeduper()
    assert [deduper.should_emit("k", "generic_repeat", "read", c, "run-1")
            for c in counts] == emitted


def test_warning_dedup_evicts_oldest_key() -> None:
    deduper = WarningDeduper()
    for n in range(257):
        assert deduper.should_emit(f"k{n}", "d", "t", 10)
    assert deduper.should_emit("k0", "d", "t", 10)  # evicted, so emitted again
    assert not deduper.should_emit("k256", "d", "t", 10)


# --------------------------------------------------------------------------- extra vectors of the package


def test_low_threshold_ping_pong() -> None:
    cfg = {"enabled": True, "warningThreshold": 1, "criticalThreshold": 2}
    d = Driver()
    d.S("exec", {"command": "x"}, text_result("exec"), config=cfg)
    d.S("exec", {"command": "x"}, text_result("exec"), config=cfg)
    d.S("read", {"path": "y"}, text_result("read"), config=cfg)
    assert verdict_tuple(d.D("exec", {"command": "x"}, cfg)) == ("critical", "ping_pong", 3)


def _interleave(d: Driver, config: Any) -> None:
    for i in range(20):
        d.S("read", {"path": "/a"}, text_result("same"), config=config)
        d.S("list", {"dir": f"/d{i}"}, text_result(f"x{i}"), config=config)


def test_interleaving_wide_window() -> None:
    cfg = {"enabled": True, "historySize": 60}
    d = Driver()
    _interleave(d, cfg)
    assert verdict_tuple(d.D("read", {"path": "/a"}, cfg)) == ("critical", "generic_repeat", 20)


def test_interleaving_default_window() -> None:
    d = Driver()
    _interleave(d, EN)
    assert verdict_tuple(d.D("read", {"path": "/a"})) == ("warning", "generic_repeat", 15)


@pytest.mark.parametrize(("warning", "expected"), [
    (3, ("warning", "ping_pong", 5)), (10, ("critical", "generic_repeat", 20)),
])
def test_warning_masks_critical(warning: int, expected: tuple[str, str, int]) -> None:
    cfg = {"enabled": True, "warningThreshold": warning}
    d = Driver()
    for _ in range(19):
        d.S("read", {"path": "/a"}, text_result("same"), config=cfg)
    d.S("ls", {}, text_result("x"), config=cfg)
    d.S("read", {"path": "/a"}, text_result("same"), config=cfg)
    d.S("ls", {}, text_result("x"), config=cfg)
    assert verdict_tuple(d.D("read", {"path": "/a"}, cfg)) == expected


@pytest.mark.parametrize(("block", "expected"), [
    ({"warningThreshold": 25}, (25, 26, 30)),
    ({"warningThreshold": 5, "criticalThreshold": 5, "globalCircuitBreakerThreshold": 3},
     (5, 6, 7)),
    ({"criticalThreshold": 40}, (10, 40, 41)),
    ({"historySize": 0, "warningThreshold": 2.5, "criticalThreshold": -1}, (10, 20, 30)),
])
def test_config_clamps(block: dict[str, Any], expected: tuple[int, int, int]) -> None:
    from loopscope.engines.openclaw import resolve_loop_detection

    r = resolve_loop_detection(block)
    assert (r.warning_threshold, r.critical_threshold,
            r.global_circuit_breaker_threshold) == expected
    assert r.history_size == 30


def test_detection_with_scoped_and_unscoped_mix_never_mix() -> None:
    d = Driver()
    for _ in range(10):
        d.R("read", READ_ARGS)
    assert detect_tool_call_loop(d.state, "read", READ_ARGS, EN, "run-1") is None
    assert detect_tool_call_loop(d.state, "read", READ_ARGS, EN, "   ") is not None
