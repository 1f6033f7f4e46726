"""Differential test against the real implementation, ``@google/gemini-cli-core@0.61.0`` under
node.

The bridge ``gemini_bridge.mjs`` drives the package's own ``LoopDetectionService`` with each
session's recorded events (it does the stream conversion itself: line pieces, name trimming,
``JSON.parse`` of the arguments, ``args || {}``), calling ``clearDetection()`` after every
detection. Every step of loopscope's replay — both the reference and the fast path — must
agree with it: verdict, detector, count, signature (the package's own ``getToolCallKey``),
detail, number of detections and pieces. What-if constants are checked against the package's
module with those constants changed.

Set ``LOOPSCOPE_GEMINI_DIR`` to the folder that holds ``node_modules/@google/gemini-cli-core``
(for example after ``npm install --ignore-scripts --omit=optional
@google/gemini-cli-core@0.61.0`` in ``/tmp/gemini-oracle``). The test skips when node or the
package is absent. ``LOOPSCOPE_ORACLE_SESSIONS`` changes the number of generated sessions
(default 300).
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
from tests.engines.gemini_cli._gemini_gen import random_config, random_session

from loopscope.engines.gemini_cli.config import DEFAULTS, GeminiConfig
from loopscope.engines.gemini_cli.engine import ENGINE
from loopscope.jsonrules.node_json import json_parse, json_stringify
from loopscope.model import AssistantTurn, Session, UserMessage

pytestmark = pytest.mark.oracle

BRIDGE = Path(__file__).with_name("gemini_bridge.mjs")
SESSIONS = int(os.environ.get("LOOPSCOPE_ORACLE_SESSIONS", "300"))
REPO_ROOT = Path(__file__).resolve().parents[3]
SHARED = Path(os.environ.get("LOOPSCOPE_SHARED", REPO_ROOT.parent / "shared"))
PARITY = SHARED / "reference" / "parity" / "gemini-cli"


def _oracle_dir() -> Path:
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH")
    folder = os.environ.get("LOOPSCOPE_GEMINI_DIR")
    if not folder:
        pytest.skip("LOOPSCOPE_GEMINI_DIR is not set")
    path = Path(folder)
    if not (path / "node_modules" / "@google" / "gemini-cli-core" / "dist").is_dir():
        pytest.skip(f"@google/gemini-cli-core not found under {path}")
    return path


def run_bridge(sessions: list[dict[str, Any]], stringify: list[str] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    folder = _oracle_dir()
    payload = json.dumps({"sessions": sessions, "stringify": list(stringify)}, allow_nan=False)
    completed = subprocess.run(
        ["node", str(BRIDGE), str(folder)], input=payload.encode(), capture_output=True,
        timeout=900, check=False)
    assert completed.returncode == 0, completed.stderr.decode(errors="replace")[-3000:]
    result: dict[str, Any] = json.loads(completed.stdout)
    return result


def bridge_session(session: Session, config: GeminiConfig) -> dict[str, Any]:
    """The session's recorded events, as the bridge reads them."""
    events: list[dict[str, Any]] = []
    for event in session.events:
        if isinstance(event, UserMessage):
            events.append({"t": "user"})
        elif isinstance(event, AssistantTurn):
            events.append({"t": "turn", "text": event.text, "calls": [
                {"name": c.name, "raw": c.raw_arguments, "kind": c.arguments_kind}
                for c in event.tool_calls]})
    changed = {name: value for name, value in config.values().items()
               if name in DEFAULTS and value != DEFAULTS[name]}
    return {"constants": changed or None, "disabled": not config.enabled, "events": events}


def compare(session: Session, config: GeminiConfig, node_steps: list[dict[str, Any]]) -> int:
    """Assert loopscope's replay (both paths) equals the package's; the number of steps."""
    plain = ENGINE.replay(session, config)
    fast = ENGINE.run(ENGINE.prepare(session), config)
    assert fast.to_json() == plain.to_json(), f"{session.id}: fast path differs from replay"
    steps = plain.steps
    assert len(steps) == len(node_steps), session.id
    diverged = False
    for n, (step, node) in enumerate(zip(steps, node_steps, strict=True)):
        where = f"{session.id} ({session.source}) step {n} under {config}"
        if node["kind"] == "call":
            results = [node["result"]]
            assert step.call is not None, where
            assert step.tools == (node["name"],), where
            assert step.signature == f"{node['name']}:{node['key']}", where
        else:
            results = node["results"]
            assert step.call is None, where
            assert step.extra["pieces"] == len(results), where
        hits = [r for r in results if r["count"]]
        first = hits[0] if hits else None
        assert step.verdict == ("refuse" if hits else "pass"), where
        assert step.detector == (first["type"] if first else None), where
        assert step.count == (first["count"] if first else None), where
        assert step.extra["detail"] == (first["detail"] if first else None), where
        assert step.extra["detections"] == len(hits), where
        assert step.after_divergence is diverged, where
        diverged = diverged or bool(hits)
    return len(steps)


def _check(cases: list[tuple[Session, GeminiConfig]]) -> tuple[int, int, dict[str, int]]:
    node = run_bridge([bridge_session(s, c) for s, c in cases])["sessions"]
    steps = 0
    detections: dict[str, int] = {}
    for (session, config), node_steps in zip(cases, node, strict=True):
        steps += compare(session, config, node_steps)
        for node_step in node_steps:
            for r in node_step.get("results", [node_step.get("result")]):
                if r and r["count"]:
                    key = f"{r['type']}:{'recovery' if r['count'] == 1 else 'halt'}"
                    detections[key] = detections.get(key, 0) + 1
    return len(cases), steps, detections


def test_random_sessions_match_the_reference_package() -> None:
    _oracle_dir()
    rng = random.Random(20260061)
    cases = []
    for n in range(SESSIONS):
        session = random_session(rng, steps=rng.randint(3, 60) if n % 10 else 150)
        # Gemini CLI's two configurations for every session, plus a what-if for most.
        cases.append((session, GeminiConfig()))
        cases.append((session, GeminiConfig(enabled=False)))
        if n % 4:
            cases.append((session, random_config(rng)))
    count, steps, detections = _check(cases)
    for key in ("consecutive_identical_tool_calls:recovery", "consecutive_identical_tool_calls:halt",
                "chanting_identical_sentences:recovery", "chanting_identical_sentences:halt"):
        assert detections.get(key, 0) > 0, f"no {key} generated: {detections}"
    print(f"oracle: {count} session×config cases agree ({steps} steps), detections {detections}")


def test_parity_sessions_match_the_reference_package() -> None:
    from loopscope.formats import load_file

    _oracle_dir()
    if not PARITY.is_dir():
        pytest.skip("parity set absent")
    sessions = [s for path in sorted((PARITY / "sessions").iterdir())
                for s in load_file(str(path)).sessions]
    assert len(sessions) == 40
    rng = random.Random(61)
    cases = [(s, c) for s in sessions for c in (GeminiConfig(), GeminiConfig(enabled=False),
                                                random_config(rng))]
    count, steps, detections = _check(cases)
    print(f"oracle: parity {count} session×config cases agree ({steps} steps), {detections}")


def test_json_stringify_matches_the_reference_package() -> None:
    _oracle_dir()
    texts = [
        '{"b":1,"2":3,"a":1,"1":4}', '{"01":1,"-1":2,"4294967295":3,"4294967294":4,"0":5}',
        "[100.0,1e21,1e-7,0.0000001,1e16,12345678901234567890,9007199254740993,-0,1e400,-1e400]",
        '"\\ud800x\\udc00 \\ud83d\\ude00 \\u2028\\u2029\\u007f/\\b\\f\\n\\r\\t\\u0000\\u001f"',
        '{"a":1,"a":2,"b":{"a":3,"a":[1,{"1":2,"0":3}]}}', "5e-324", "0.1", "1.5e300", "-0.0",
        "123456789012345678901234567890", "1" + "0" * 400, '{"__proto__":{"x":1}}',
        '{"é":1,"😀":2,"～":3,"\\ue000":4}', "[]", "{}", '""', "null", "true",
        "[" * 1500 + "]" * 1500, '{"a":' * 1200 + "1" + "}" * 1200,
        "{bad", "NaN", "\ufeff{}", "[1,]", "'x'", "1 2",
    ]
    node = run_bridge([], texts)["stringify"]
    ours = []
    for text in texts:
        ok, value = json_parse(text)
        ours.append(json_stringify(value) if ok else None)
    assert ours == node
