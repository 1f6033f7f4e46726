"""Differential test against the real implementation, ``openclaw@2026.6.11`` under node
(``dist/tool-loop-detection-*.js`` exports ``t``, ``n``, ``r``; ``dist/stable-stringify-*.js``).

The bridge ``openclaw_bridge.mjs`` applies ``detect``/``record``/``outcome`` operations to one
state per session and prints every result. The same operations go through loopscope's literal
port, and the sessions they come from through both replay paths; everything is compared call by
call: verdict level, detector, count, message, warning key, paired tool, argsHash, resultHash
and unknown-tool name, plus the final history.

Set ``LOOPSCOPE_OPENCLAW_DIR`` to the folder that holds ``node_modules/openclaw`` (for example
after ``npm install --ignore-scripts --omit=optional openclaw@2026.6.11`` in
``/tmp/openclaw-oracle``). The test skips when node or the package is absent.
``LOOPSCOPE_ORACLE_SESSIONS`` changes the number of generated sessions (default 300).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.engines.openclaw._openclaw_gen import random_block, random_session

from loopscope.engines.openclaw import (
    ENGINE,
    UNDEFINED,
    LoopState,
    OpenClawConfig,
    detect_tool_call_loop,
    record_tool_call,
    record_tool_call_outcome,
    stable_stringify,
)
from loopscope.engines.openclaw.shared.session import CallInput, session_ops
from loopscope.model import Session

pytestmark = pytest.mark.oracle

BRIDGE = Path(__file__).with_name("openclaw_bridge.mjs")
SESSIONS = int(os.environ.get("LOOPSCOPE_ORACLE_SESSIONS", "300"))


def _oracle_dir() -> Path:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH")
    folder = os.environ.get("LOOPSCOPE_OPENCLAW_DIR")
    if not folder:
        pytest.skip("LOOPSCOPE_OPENCLAW_DIR is not set")
    path = Path(folder)
    if not (path / "node_modules" / "openclaw" / "dist").is_dir():
        pytest.skip(f"openclaw package not found under {path}")
    return path


def run_bridge(sessions: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    folder = _oracle_dir()
    env = {**os.environ, "OPENCLAW_LOG_LEVEL": "silent"}
    completed = subprocess.run(
        ["node", str(BRIDGE), str(folder)], input=json.dumps({"sessions": sessions}),
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    result: list[dict[str, Any]] = json.loads(completed.stdout)
    return result


# --------------------------------------------------------------------------- loopscope's side


def _snapshot(record: Any) -> dict[str, Any]:
    return {"toolName": record.tool_name, "argsHash": record.args_hash,
            "toolCallId": record.tool_call_id, "runId": record.run_id,
            "resultHash": record.result_hash, "unknownToolName": record.unknown_tool_name}


def python_ops(ops: list[dict[str, Any]]) -> dict[str, Any]:
    """The bridge's output, computed by loopscope's literal port."""
    state = LoopState()
    results: list[Any] = []
    for op in ops:
        config = op.get("config")
        if op["op"] == "detect":
            v = detect_tool_call_loop(state, op["tool"], op["params"], config, op.get("runId"))
            results.append(None if v is None else {
                "level": v.level, "detector": v.detector, "count": v.count,
                "message": v.message, "warningKey": v.warning_key,
                "pairedToolName": v.paired_tool_name})
        elif op["op"] == "record":
            record_tool_call(state, op["tool"], op["params"], op.get("toolCallId"), config,
                             op.get("runId"))
            results.append({"argsHash": state.history[-1].args_hash,
                            "length": len(state.history)})
        elif op["op"] == "outcome":
            record = record_tool_call_outcome(
                state, op["tool"], op["params"], op.get("toolCallId"),
                op.get("result", UNDEFINED), op.get("error", UNDEFINED), config, op.get("runId"))
            results.append(None if record is None else {**_snapshot(record),
                                                        "length": len(state.history)})
        else:
            results.append(stable_stringify(op["value"]))
    return {"results": results, "history": [_snapshot(r) for r in state.history]}


def session_to_ops(session: Session, block: dict[str, Any]) -> list[dict[str, Any]]:
    """The upstream call sequence of a session, per call detect, record, outcome (``enabled``
    default applied as loopscope does)."""
    ops: list[dict[str, Any]] = []
    for op in session_ops(session):
        if not isinstance(op, CallInput):
            continue
        base = {"tool": op.name, "params": op.params, "config": block, "runId": op.run_id}
        ops.append({"op": "detect", **base})
        ops.append({"op": "record", **base, "toolCallId": op.tool_call_id})
        outcome = {"op": "outcome", **base, "toolCallId": op.tool_call_id}
        if op.result is not UNDEFINED:
            outcome["result"] = op.result
        if op.error is not UNDEFINED:
            outcome["error"] = op.error
        ops.append(outcome)
    return ops


# --------------------------------------------------------------------------- raw operations


def random_raw_ops(rng: random.Random) -> list[dict[str, Any]]:
    """Operations outside shadow mode: outcomes for other runs or ids, outcomes without a call,
    run ids with whitespace, odd config values resolved at run time."""
    tools = ["read", "exec", "process", "list", "gog"]
    runs = [None, "run-1", " run-1 ", "run-2", "", "\u3000"]
    ids = [None, "c1", "c2", ""]
    configs: list[Any] = [
        None, {"enabled": True}, {"enabled": True, "historySize": 5, "warningThreshold": 2},
        {"enabled": 1, "historySize": 4.0, "criticalThreshold": "3"},
        {"enabled": True, "warningThreshold": 3, "criticalThreshold": 2,
         "globalCircuitBreakerThreshold": 1, "detectors": {"pingPong": 0}},
        {"enabled": "yes", "historySize": 0, "unknownToolThreshold": 2,
         "detectors": {"genericRepeat": None}},
    ]
    config = rng.choice(configs)
    ops: list[dict[str, Any]] = []
    for _ in range(rng.randint(10, 80)):
        tool = rng.choice(tools)
        params: Any = rng.choice([{"path": "/a"}, {"path": "/b"}, {"action": "poll",
                                                                   "sessionId": "s"},
                                  "raw", None, [1, 2]])
        run = rng.choice(runs)
        call_id = rng.choice(ids)
        kind = rng.random()
        if kind < 0.35:
            ops.append({"op": "detect", "tool": tool, "params": params, "config": config,
                        "runId": run})
        elif kind < 0.65:
            ops.append({"op": "record", "tool": tool, "params": params, "config": config,
                        "runId": run, "toolCallId": call_id})
        else:
            outcome: dict[str, Any] = {"op": "outcome", "tool": tool, "params": params,
                                       "config": config, "runId": run, "toolCallId": call_id}
            roll = rng.random()
            if roll < 0.3:
                outcome["error"] = rng.choice(["Tool gog not found", "boom", ""])
            elif roll < 0.9:
                outcome["result"] = {"content": [{"type": "text", "text": rng.choice("ab")}],
                                     "details": {"status": rng.choice(["running", "blocked"]),
                                                 "deniedReason": "tool-loop"}
                                     if rng.random() < 0.2 else {}}
            ops.append(outcome)
    return ops


# --------------------------------------------------------------------------- tests


def _check_steps(session: Session, config: OpenClawConfig, node: dict[str, Any]) -> int:
    """Compare both replay paths with the node results of ``session_to_ops``; returns the
    number of calls compared."""
    plain = ENGINE.replay(session, config)
    fast = ENGINE.run(ENGINE.prepare(session), config)
    assert fast.to_json() == plain.to_json()
    results = node["results"]
    assert len(results) == 3 * len(plain.steps)
    for k, step in enumerate(plain.steps):
        v, recorded, outcome = results[3 * k], results[3 * k + 1], results[3 * k + 2]
        extra = step.extra
        where = f"{session.id} call {k}"
        assert extra["args_hash"] == recorded["argsHash"], where
        assert extra["result_hash"] == (outcome["resultHash"] if outcome else None), where
        assert extra["unknown_tool"] == (outcome["unknownToolName"] if outcome else None), where
        if step.detector == "post_compaction_guard":
            assert v is None or v["level"] == "warning", where
            assert extra["guard_abort"] is True
            continue
        if v is None:
            assert step.verdict == "pass", where
            continue
        assert step.verdict == ("refuse" if v["level"] == "critical" else "warn"), where
        assert (step.detector, step.count, extra["level"]) == (v["detector"], v["count"],
                                                              v["level"]), where
        assert extra["message"] == v["message"], where
        assert extra["warning_key"] == v["warningKey"], where
        assert extra["paired_tool"] == v["pairedToolName"], where
    return len(plain.steps)


def test_sessions_match_the_reference_package() -> None:
    _oracle_dir()
    rng = random.Random(20260611)
    cases: list[tuple[Session, OpenClawConfig]] = []
    for n in range(SESSIONS):
        session = random_session(rng, calls=rng.randint(5, 120) if n % 10 else 250)
        block = random_block(rng)
        cases.append((session, OpenClawConfig.from_block(block)))
    op_lists = [session_to_ops(s, dict(c.block)) for s, c in cases]
    node = run_bridge(op_lists)
    calls = 0
    verdicts: dict[str, int] = {}
    for (session, config), ops, expected in zip(cases, op_lists, node, strict=True):
        assert python_ops(ops) == expected, session.id
        calls += _check_steps(session, config, expected)
        for result in expected["results"][0::3]:
            if result is not None:
                key = f"{result['level']}:{result['detector']}"
                verdicts[key] = verdicts.get(key, 0) + 1
    # The generator must exercise every detector at both levels it has.
    for key in ("critical:generic_repeat", "warning:generic_repeat", "warning:ping_pong",
                "critical:ping_pong", "critical:unknown_tool_repeat",
                "warning:known_poll_no_progress", "critical:known_poll_no_progress",
                "critical:global_circuit_breaker"):
        assert verdicts.get(key, 0) > 0, f"no {key} verdict generated: {verdicts}"
    print(f"oracle: {len(cases)} sessions, {calls} calls, verdicts {verdicts}")


def test_raw_operations_match_the_reference_package() -> None:
    _oracle_dir()
    rng = random.Random(7)
    op_lists = [random_raw_ops(rng) for _ in range(200)]
    node = run_bridge(op_lists)
    for ops, expected in zip(op_lists, node, strict=True):
        assert python_ops(ops) == expected


def test_parity_sessions_match_the_reference_package() -> None:
    from tests.engines.openclaw._openclaw_helpers import PARITY, load_session

    _oracle_dir()
    if not PARITY.is_dir():
        pytest.skip("parity set absent")
    configs = json.loads((PARITY / "configs.json").read_text())["configs"]
    cases = []
    for path in sorted((PARITY / "sessions").iterdir()):
        session = load_session(path)
        for config in configs:
            cases.append((session, ENGINE.resolve_config(config["settings"], ()).config))
    op_lists = [session_to_ops(s, dict(c.block)) for s, c in cases]
    node = run_bridge(op_lists)
    for (session, config), expected in zip(cases, node, strict=True):
        _check_steps(session, config, expected)


def test_stable_stringify_matches_the_reference_package() -> None:
    _oracle_dir()
    values: list[Any] = [
        {"b": 1, "a": [1.5, 1e21, 1e-7, -0.0, 2**53 + 1, 12345678901234567890]},
        {"é": 1, "😀": 2, "～": 3, "\ue000": 4, "10": 5, "9": 6},
        "\x00\x1f\x7f\u2028\u2029\ufeff\ud800x\udc00 \ud83d\ude00",
        [None, True, False, {}, [], ""], 1e300, 5e-324, 0.1 + 0.2,
    ]
    node = run_bridge([[{"op": "stable", "value": v} for v in values]])
    assert node[0]["results"] == [stable_stringify(v) for v in values]
