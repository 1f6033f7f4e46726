"""Differential test against the real ``openclaw@2026.9.6`` under node.

The bridge ``openclaw9_bridge.mjs`` replays each session through the package's own batch
admission (``admitToolCallBatch``), detector, recorder, outcome hashing and post-compaction
guard, in loopscope's shadow mode, and reports per call: the normalised name, argsHash, the
detector's verdict, whether the warning would be shown, the intervention (trigger, recovery or
terminal), the recorded outcome and any guard abort; plus the final history. loopscope's
reference replay and fast path must agree on every step and on the history.

Set ``LOOPSCOPE_OPENCLAW9_DIR`` to the folder holding ``node_modules/openclaw`` at 2026.9.6
(``npm install --ignore-scripts --omit=optional openclaw@2026.9.6``). The tests skip when node
or the package is absent. ``LOOPSCOPE_ORACLE_SESSIONS`` changes the number of generated
sessions (default 300).
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
from tests.engines.openclaw._openclaw9_gen import random_session_2026_9
from tests.engines.openclaw._openclaw_helpers import SHARED, load_session

from loopscope.engines.openclaw import ENGINE
from loopscope.engines.openclaw.shared.session import COMPACTION, USER
from loopscope.engines.openclaw.v2026_9.config import OpenClaw9Config, make_config
from loopscope.engines.openclaw.v2026_9.reference import replay_with_state
from loopscope.engines.openclaw.v2026_9.session import session_messages
from loopscope.jsonrules.javascript import UNDEFINED
from loopscope.model import Session

pytestmark = pytest.mark.oracle

BRIDGE = Path(__file__).with_name("openclaw9_bridge.mjs")
SESSIONS = int(os.environ.get("LOOPSCOPE_ORACLE_SESSIONS", "300"))
PARITY_9 = SHARED / "reference" / "parity" / "openclaw-2026.9.6"
VERSION = "2026.9.6"


def _oracle_dir() -> Path:
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH")
    folder = os.environ.get("LOOPSCOPE_OPENCLAW9_DIR")
    if not folder:
        pytest.skip("LOOPSCOPE_OPENCLAW9_DIR is not set")
    path = Path(folder)
    package = path / "node_modules" / "openclaw" / "package.json"
    if not package.is_file():
        pytest.skip(f"openclaw package not found under {path}")
    version = json.loads(package.read_text())["version"]
    if version != VERSION:
        pytest.skip(f"openclaw {version} under {path}, not {VERSION}")
    return path


def run_bridge(sessions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    folder = _oracle_dir()
    env = {**os.environ, "OPENCLAW_LOG_LEVEL": "silent"}
    completed = subprocess.run(
        ["node", str(BRIDGE), str(folder)], input=json.dumps({"sessions": sessions}),
        capture_output=True, text=True, env=env, timeout=900, check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    result: list[dict[str, Any]] = json.loads(completed.stdout)
    return result


def bridge_input(session: Session, config: OpenClaw9Config) -> dict[str, Any]:
    """The session as the bridge's events (the same reading as the replay)."""
    events: list[dict[str, Any]] = []
    for item in session_messages(session):
        if item == USER:
            events.append({"op": "user"})
        elif item == COMPACTION:
            events.append({"op": "compaction"})
        else:
            assert isinstance(item, list)
            calls = []
            for c in item:
                call: dict[str, Any] = {"name": c.name, "params": c.params,
                                        "toolCallId": c.tool_call_id}
                if c.result is not UNDEFINED:
                    call["result"] = c.result
                if c.error is not UNDEFINED:
                    call["error"] = c.error
                calls.append(call)
            events.append({"op": "message", "runId": item[0].run_id, "calls": calls})
    return {"config": {"enabled": config.enabled}, "events": events}


def expected_steps(node: dict[str, Any]) -> list[dict[str, Any]]:
    """What each step must say, derived from the package's own decisions."""
    out: list[dict[str, Any]] = []
    for event in node["events"]:
        if event is None:
            continue
        intervention = event["intervention"]
        for k, name in enumerate(event["names"]):
            outcome = event["outcomes"][k]
            record, abort = outcome["record"], outcome["abort"]
            step: dict[str, Any] = {
                "signature": event["argsHashes"][k], "name": name,
                "result_hash": record["resultHash"] if record else None,
                "outcome_kind": record["outcomeKind"] if record else None,
                "unknown_tool": record["unknownToolName"] if record else None,
                "guard_abort": abort is not None,
                "verdict": "pass", "detector": None, "count": None, "level": None,
                "message": None, "warning_key": None, "paired_tool": None,
                "intervention": None, "loop_detector": None, "warning_emitted": None,
            }
            if intervention is not None:
                trigger = k == intervention["trigger"]
                kind = intervention["kind"]
                step.update(verdict="refuse", level="critical", intervention=kind,
                            loop_detector=intervention["detector"])
                if not trigger:
                    step["detector"] = "tool_loop_batch_skipped"
                else:
                    verdict = event["checked"][k]
                    assert verdict["detector"] == intervention["detector"]
                    step.update(count=intervention["count"], warning_key=verdict["warningKey"],
                                paired_tool=verdict["pairedToolName"])
                    if kind == "recovery":
                        step.update(detector=intervention["detector"],
                                    message=intervention["reason"])
                    else:
                        step.update(detector="tool_loop_recovery_terminated",
                                    message=node["terminatedMessage"])
            else:
                verdict = event["checked"][k] if event["checked"] else None
                if abort is not None:
                    step.update(verdict="refuse", detector="post_compaction_guard",
                                count=abort["count"], level="critical", message=abort["message"])
                elif verdict is not None:
                    assert verdict["level"] == "warning"
                    step.update(verdict="warn", detector=verdict["detector"],
                                count=verdict["count"], level="warning",
                                message=verdict["message"], warning_key=verdict["warningKey"],
                                paired_tool=verdict["pairedToolName"],
                                warning_emitted=event["emitted"][k])
            out.append(step)
    return out


def _history(state: Any) -> list[dict[str, Any]]:
    return [{"toolName": r.tool_name, "argsHash": r.args_hash, "toolCallId": r.tool_call_id,
             "runId": r.run_id, "resultHash": r.result_hash, "outcomeKind": r.outcome_kind,
             "failureIdentityHash": r.failure_identity_hash, "noProgress": r.no_progress,
             "unknownToolName": r.unknown_tool_name} for r in state.history]


def check_session(session: Session, config: OpenClaw9Config, node: dict[str, Any],
                  counts: dict[str, int]) -> None:
    plain, state = replay_with_state(session, config)
    fast = ENGINE.run(ENGINE.prepare(session, VERSION), config)
    assert fast.to_json() == plain.to_json(), f"{session.id}: fast path differs from replay"
    assert _history(state) == node["history"], f"{session.id}: final history differs"
    expected = expected_steps(node)
    assert len(expected) == len(plain.steps)
    for step, want in zip(plain.steps, expected, strict=True):
        got = {"signature": step.signature, "verdict": step.verdict,
               "detector": step.detector, "count": step.count}
        got.update({key: step.extra[key] for key in want if key in step.extra})
        got["name"] = want["name"] if step.signature.startswith(want["name"] + ":") else None
        assert got == want, f"{session.id} call {step.call}: {got} != {want}"
        key = f"{step.verdict}:{step.detector}"
        if step.extra["intervention"]:
            key += f":{step.extra['intervention']}"
        counts[key] = counts.get(key, 0) + 1
        if step.extra["loop_detector"]:
            loop = f"loop:{step.extra['loop_detector']}"
            counts[loop] = counts.get(loop, 0) + 1
        if step.extra["outcome_kind"]:
            counts[step.extra["outcome_kind"]] = counts.get(step.extra["outcome_kind"], 0) + 1


def test_generated_sessions_match_the_real_package() -> None:
    _oracle_dir()
    rng = random.Random(2026_9_6)
    cases: list[tuple[Session, OpenClaw9Config]] = []
    for n in range(SESSIONS):
        session = random_session_2026_9(rng, calls=rng.randint(5, 120) if n % 8 else 260)
        cases.append((session, make_config(rng.random() < 0.93)))
    node = run_bridge([bridge_input(s, c) for s, c in cases])
    counts: dict[str, int] = {}
    for (session, config), result in zip(cases, node, strict=True):
        check_session(session, config, result, counts)
    # The generator must reach every detector, intervention and outcome kind of 2026.9.6.
    for key in ("warn:generic_repeat", "warn:ping_pong", "warn:known_poll_no_progress",
                "warn:argument_churn", "refuse:generic_repeat:recovery",
                "refuse:tool_loop_recovery_terminated:terminal",
                "refuse:tool_loop_batch_skipped:recovery",
                "refuse:tool_loop_batch_skipped:terminal", "refuse:unknown_tool_repeat:recovery",
                "refuse:known_poll_no_progress:recovery", "refuse:post_compaction_guard",
                "refuse:ping_pong:recovery", "loop:global_circuit_breaker",
                "terminal-exec-failure", "tool-loop-veto"):
        assert counts.get(key, 0) > 0, f"nothing generated for {key}: {counts}"
    calls = sum(v for k, v in counts.items() if k.startswith(("pass:", "warn:", "refuse:")))
    print(f"oracle 2026.9.6: {len(cases)} sessions, {calls} calls agree; {counts}")


def test_parity_sessions_match_the_real_package() -> None:
    _oracle_dir()
    if not PARITY_9.is_dir():
        pytest.skip("parity set absent")
    configs = json.loads((PARITY_9 / "configs.json").read_text())["configs"]
    cases = []
    for path in sorted((PARITY_9 / "sessions").iterdir()):
        session = load_session(path)
        for config in configs:
            cases.append((session, ENGINE.resolve_config(config["settings"], (),
                                                         version=VERSION).config))
    node = run_bridge([bridge_input(s, c) for s, c in cases])
    counts: dict[str, int] = {}
    for (session, config), result in zip(cases, node, strict=True):
        check_session(session, config, result, counts)


def test_names_and_overlays_match_the_real_package() -> None:
    from loopscope.engines.openclaw.v2026_9.config import merge_agent_overlay_2026_9
    from loopscope.engines.openclaw.v2026_9.hashing import normalize_tool_name

    _oracle_dir()
    names = ["Bash", " exec ", "", "  ", "APPLY-PATCH", "cron", "Cron ", "read", "\u3000Read\ufeff",
             "\u0130stanbul", "ΣΑΣ", "bash\u0085"]
    overlays: list[tuple[Any, Any]] = [
        ({"tools": {"loopDetection": {"enabled": True}}}, None),
        ({"tools": {"loopDetection": {"enabled": True}},
          "agents": {"list": [{"id": "coder", "tools": {"loopDetection": {"enabled": False}}}]}},
         "coder"),
        ({"tools": {"loopDetection": {"enabled": False}},
          "agents": {"list": [{"id": "Coder", "tools": {"loopDetection": {}}}]}}, "coder"),
        ({"agents": {"list": [{"id": "x", "tools": {"loopDetection": {"enabled": True}}}]}}, "x"),
        ({"agents": {"entries": {"Ops": {"tools": {"loopDetection": {"enabled": False}}}}},
          "tools": {"loopDetection": {"enabled": True}}}, "ops"),
        ({"tools": {}}, "nobody"),
    ]
    events: list[dict[str, Any]] = [{"op": "normalize", "name": n} for n in names]
    events += [{"op": "overlay", "cfg": cfg, "agentId": agent} for cfg, agent in overlays]
    node = run_bridge([{"config": {"enabled": True}, "events": events}])[0]["events"]
    assert node[:len(names)] == [normalize_tool_name(n) for n in names]
    for (cfg, agent), got in zip(overlays, node[len(names):], strict=True):
        merged = merge_agent_overlay_2026_9(cfg, agent)
        assert got == ({"absent": True} if merged is UNDEFINED else {"merged": merged}), cfg


def test_outcome_hashing_matches_the_real_package() -> None:
    """Markers, terminal exec failures and their identity, unchanged writes, sends, vetoes and
    errors: the record OpenClaw appends for an outcome, field by field."""
    from tests.engines.openclaw.test_openclaw9_upstream import marked

    from loopscope.engines.openclaw.v2026_9.hashing import hash_tool_outcome

    a, b = "0123456789abcdef", "fedcba9876543210"
    texts = [marked(a), marked(b), marked(a, close=b), marked(a.upper()), marked(a, escapes=1),
             marked(a, escapes=2), marked(a, escapes=3), marked(a, body=marked(b)),
             marked(a, body='say "hi"', escapes=1), marked(a, body='x\\"y', escapes=1),
             marked(a, body="\u00e9\ud83d\ude00 ok")]
    volatile = [
        "2026-09-06T10:00:00Z build failed", "2026-09-07 11:22:33.123+02:00 build failed",
        "2026-09-06t10:00:00z x", "failed at 10:00:01.5", "attempt 3 failed", "Attempt #17",
        "RETRY=22: no route", "attempts 3", "took 120ms", "took 4.5 seconds", "took 3 s",
        "took 12s", "waited 2 minutes", "1 hour", "pid 4000 died", "PID: 77", "ppid=2",
        "pid4000", "took 2\u017f", "\u212aelvin 3 s", "\u0130d 5 ms", "took 5\u00a0ms",
        "\u0663 seconds", "x_3s", "3sx", "attempt\u30003", "12:00:00 and 13:00:00 at pid 1",
        "(Command exited with code 1)", "", "  ",
    ]
    ops: list[dict[str, Any]] = []
    for text in texts:
        ops.append({"op": "outcome", "tool": "web_fetch", "params": {},
                    "result": {"content": [{"type": "text", "text": text}],
                               "details": {"raw": text, text: 1}}})
    for text in volatile:
        for exit_code in (1, 0, 2.5, "1"):
            ops.append({"op": "outcome", "tool": "exec", "params": {"command": "x"},
                        "result": {"content": [{"type": "text", "text": "fallback"}],
                                   "details": {"status": "failed", "exitCode": exit_code,
                                               "aggregated": text}}})
    for details in ({"changed": False}, {"changed": True}, {"changed": 0}, {}):
        ops.append({"op": "outcome", "tool": "write", "params": {"path": "a"},
                    "result": {"content": [{"type": "text", "text": "ok"}], "details": details}})
    payload = {"ok": True, "messageId": "m", "timestamp": 5, "message": {
        "id": "x", "text": "hi", "direction": "out"}}
    for tool in ("conversations_send", "conversations_turn", "sessions_send", "telegram",
                 "message", "discord"):
        ops.append({"op": "outcome", "tool": tool, "params": {"action": "send", "to": "x"},
                    "result": {"content": [{"type": "text", "text": "sent"}],
                               "details": payload}})
    ops.append({"op": "outcome", "tool": "read", "params": {},
                "result": {"content": [], "details": {"status": "blocked",
                                                      "deniedReason": "tool-loop"}}})
    ops.append({"op": "outcome", "tool": "gog", "params": {}, "error": "Unknown tool: gog"})
    ops.append({"op": "outcome", "tool": "read", "params": {}, "error": marked(a)})
    node = run_bridge([{"config": {"enabled": True}, "events": ops}])[0]["events"]
    for op, got in zip(ops, node, strict=True):
        outcome = hash_tool_outcome(op["tool"], op["params"], op.get("result", UNDEFINED),
                                    op.get("error", UNDEFINED))
        mine = None if not outcome.recorded else {
            "resultHash": outcome.result_hash, "outcomeKind": outcome.outcome_kind,
            "failureIdentityHash": outcome.failure_identity_hash,
            "noProgress": outcome.no_progress, "unknownToolName": outcome.unknown_tool_name}
        theirs = None if got is None else {k: got[k] for k in (
            "resultHash", "outcomeKind", "failureIdentityHash", "noProgress", "unknownToolName")}
        assert mine == theirs, op
