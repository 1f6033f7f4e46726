"""The parity set ``tests/data/parity/qwen-code/`` (written by ``make_qwen_parity.py``, every
step checked against the real ``@qwen-code/qwen-code@0.24.4`` through the oracle bridge):
``loopscope replay sessions --engine qwen-code --set … --json`` must reproduce every expected
replay, type-strictly, on ``session, first_refusal`` and every step's ``turn, call, verdict,
detector, count, signature, after_divergence`` and informative fields."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

PARITY = Path(__file__).resolve().parents[2] / "data" / "parity" / "qwen-code"
CONFIGS: list[dict[str, Any]] = json.loads((PARITY / "configs.json").read_text())["configs"]
KEYS = ("turn", "call", "verdict", "detector", "count", "signature", "after_divergence", "tools",
        "kind", "prompt", "intervention", "tier", "detections", "turn_calls")


def strict_equal(a: Any, b: Any) -> bool:
    """JSON equality where ``1``, ``1.0`` and ``true`` differ."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@pytest.mark.parametrize("config", CONFIGS, ids=[c["name"] for c in CONFIGS])
def test_cli_replay_matches_the_parity_set(config: dict[str, Any]) -> None:
    args = [sys.executable, "-m", "loopscope", "replay", "sessions", "--engine", "qwen-code",
            "--json"]
    for pair in config["set"]:
        args += ["--set", pair]
    env = {**os.environ, "LOOPSCOPE_CACHE": "off",
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[3] / "src"),
                                          os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(args, cwd=PARITY, capture_output=True, text=True, env=env,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    actual = {r["source"]: r for r in map(json.loads, done.stdout.splitlines())}
    expected = [json.loads(line) for line in
                (PARITY / "expected" / f"{config['name']}.jsonl").read_text().splitlines()]
    assert len(actual) == len(expected) == 40
    problems = []
    refusals = 0
    for want in expected:
        got = actual[want["source"]]
        for key in ("session", "format", "engine", "first_refusal"):
            if not strict_equal(got[key], want[key]):
                problems.append(f"{want['source']} {key}")
        if len(got["steps"]) != len(want["steps"]):
            problems.append(f"{want['source']} steps")
            continue
        for n, (g, w) in enumerate(zip(got["steps"], want["steps"], strict=True)):
            problems += [f"{want['source']} step {n} {k}" for k in KEYS
                         if not strict_equal(g.get(k), w.get(k))]
        refusals += want["first_refusal"] is not None
    assert not problems, problems[:20]
    assert refusals > 0
