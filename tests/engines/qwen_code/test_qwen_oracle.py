"""Differential test against the real implementation, ``@qwen-code/qwen-code@0.24.4`` under
node.

The bridge ``qwen_bridge.mjs`` drives the package's own ``LoopDetectionService`` (reached through
a module loader hook that appends one ``export`` line to the bundle chunk defining it; see the
bridge's header) with each session's recorded events: it does the stream conversion itself
(thinking, line pieces, ``name || "undefined_tool_name"``, ``JSON.parse`` of the arguments,
``args || {}``) and calls ``checkAlwaysOnSafeties`` then ``addAndCheckHeuristicLoops`` as
``client.ts`` does, clearing ``loopDetected`` after every detection. Every step of loopscope's
replay — the reference and the prepared path — must agree: verdict, loop type, tier, count,
the key (the package's own ``getToolCallKey``) and the cap's count. What-if constants are
checked against the chunk with those ``var`` constants rewritten.

Set ``LOOPSCOPE_QWEN_DIR`` to the folder holding ``node_modules/@qwen-code/qwen-code`` (e.g.
after ``npm install --ignore-scripts --omit=optional @qwen-code/qwen-code@0.24.4`` in
``/tmp/loopscope-qwen-oracle``). The test skips when node or the package is absent.
``LOOPSCOPE_ORACLE_SESSIONS`` changes the number of generated sessions (default 500).
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
from tests.engines.qwen_code._qwen_gen import CONFIGS, random_session

from loopscope.engines.qwen_code.config import DEFAULTS, QwenConfig
from loopscope.engines.qwen_code.engine import ENGINE
from loopscope.model import AssistantTurn, Session, UserMessage

pytestmark = pytest.mark.oracle

BRIDGE = Path(__file__).with_name("qwen_bridge.mjs")
SESSIONS = int(os.environ.get("LOOPSCOPE_ORACLE_SESSIONS", "500"))


def oracle_dir() -> Path:
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH")
    folder = os.environ.get("LOOPSCOPE_QWEN_DIR")
    if not folder:
        pytest.skip("LOOPSCOPE_QWEN_DIR is not set")
    path = Path(folder)
    if not (path / "node_modules" / "@qwen-code" / "qwen-code" / "chunks").is_dir():
        pytest.skip(f"@qwen-code/qwen-code not found under {path}")
    return path


def run_bridge(sessions: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    folder = oracle_dir()
    done = subprocess.run(["node", str(BRIDGE), str(folder)],
                          input=json.dumps({"sessions": sessions}), capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)["sessions"]


def bridge_session(session: Session, config: QwenConfig) -> dict[str, Any]:
    """The session's recorded events and the configuration, as the bridge reads them."""
    events: list[dict[str, Any]] = []
    for event in session.events:
        if isinstance(event, UserMessage):
            events.append({"t": "user"})
        elif isinstance(event, AssistantTurn):
            events.append({"t": "turn", "text": event.text, "thinking": event.thinking,
                           "calls": [{"name": c.name, "raw": c.raw_arguments,
                                      "kind": c.arguments_kind} for c in event.tool_calls]})
    changed = {name: value for name, value in config.values().items()
               if name in DEFAULTS and value != DEFAULTS[name]}
    return {"skip": config.skip_loop_detection, "cap": config.max_tool_calls_per_turn,
            "explicit": config.explicit, "constants": changed or None, "events": events}


def compare(session: Session, config: QwenConfig, node_steps: list[dict[str, Any]]
            ) -> set[str]:
    """Assert loopscope's replay (both paths) equals the package's; the detectors that
    fired."""
    plain = ENGINE.replay(session, config)
    fast = ENGINE.run(ENGINE.prepare(session), config)
    assert fast.to_json() == plain.to_json(), f"{session.id}: prepared path differs"
    assert len(plain.steps) == len(node_steps), session.id
    fired: set[str] = set()
    for n, (step, node) in enumerate(zip(plain.steps, node_steps, strict=True)):
        where = f"{session.id} step {n} under {config}"
        hits = node["hits"] if node["kind"] == "content" else [h for h in [node["hit"]] if h]
        if node["kind"] == "call":
            assert step.call is not None, where
            assert step.tools == (node["name"],), where
            assert step.signature == f"{node['name']}:{node['key']}", where
            assert step.extra["turn_calls"] == node["total"], where
        else:
            assert step.call is None, where
        assert step.verdict == ("refuse" if hits else "pass"), where
        assert step.detector == (hits[0]["type"] if hits else None), where
        assert step.extra["tier"] == (hits[0]["tier"] if hits else None), where
        assert step.extra["detections"] == len(hits), where
        fired.update(h["type"] for h in hits)
    return fired


def test_generated_sessions_match_the_package() -> None:
    oracle_dir()
    rng = random.Random(36)
    sessions = [random_session(rng) for _ in range(SESSIONS)]
    jobs = [(s, c) for c in CONFIGS.values() for s in sessions]
    node = run_bridge([bridge_session(s, c) for s, c in jobs])
    fired: dict[str, set[str]] = {name: set() for name in CONFIGS}
    names = [name for name in CONFIGS for _ in sessions]
    for (session, config), steps, name in zip(jobs, node, names, strict=True):
        fired[name] |= compare(session, config, steps)
    # Every configuration must actually refuse something, and every guard that generated
    # sessions can trigger must have fired somewhere, or the comparison proves little.
    assert all(fired.values()), fired
    detectors = set().union(*fired.values())
    assert {"consecutive_identical_tool_calls", "turn_tool_call_cap",
            "global_tool_call_duplicate", "alternating_tool_call_pattern",
            "chanting_identical_sentences", "shell_command_stagnation", "read_file_loop",
            "action_stagnation", "repetitive_thoughts"} <= detectors, detectors
