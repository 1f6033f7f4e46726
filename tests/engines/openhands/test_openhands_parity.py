"""The public golden parity set ``../shared/reference/parity/openhands/`` (openhands-sdk 1.58.2).

Every session × configuration must equal the reference output under the README's matching rules
(``first_refusal`` and, per step, ``turn, call, verdict, detector, count, after_divergence``,
with strict types). loopscope also writes the informative keys (``tools``, ``signature``,
``scan``, ``message``), so those are held to the expected values too. Each configuration is
resolved from its ``set`` entries exactly as ``--set`` does; the plain replay and the fast path
are both checked, and the real command (``python -m loopscope replay sessions --engine
openhands --set … --json``) once the CLI knows the engine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from tests.engines.openhands._openhands_helpers import (
    PARITY,
    compare,
    config_of,
    expected,
    load_sessions,
    parity_configs,
    session_key,
)

from loopscope.engines.openhands import ENGINE

if not PARITY.is_dir():
    pytest.skip(f"parity set not found at {PARITY}", allow_module_level=True)

CONFIGS = parity_configs()


@pytest.fixture(scope="module")
def sessions() -> dict[str, Any]:
    return load_sessions()


@pytest.fixture(scope="module")
def prepared(sessions: dict[str, Any]) -> dict[str, Any]:
    return {name: ENGINE.prepare(s) for name, s in sessions.items()}


def test_parity_set_shape(sessions: dict[str, Any]) -> None:
    assert len(sessions) == 40
    assert [c["name"] for c in CONFIGS] == [
        "defaults", "disabled", "ao_low", "ao_high", "ae_low", "ae_high", "mono_low",
        "mono_high", "alt_low", "alt_high", "combo", "ones"]


@pytest.mark.parametrize("config", CONFIGS, ids=[c["name"] for c in CONFIGS])
def test_parity(config: dict[str, Any], sessions: dict[str, Any],
                prepared: dict[str, Any]) -> None:
    cfg = config_of(config)
    assert cfg.effective() == config["effective"]
    want = expected(config["name"])
    assert sorted(want) == sorted(sessions)
    failures: list[str] = []
    for name, session in sessions.items():
        plain = ENGINE.replay(session, cfg).to_json()
        fast = ENGINE.run(prepared[name], cfg).to_json()
        assert fast == plain, f"{name}: fast path differs from replay"
        failures.extend(f"{name}: {p}" for p in compare(plain, want[name]))
    assert not failures, "\n".join(failures[:40])


def test_parity_through_the_command(tmp_path: Any) -> None:
    """``python -m loopscope replay sessions --engine openhands --set … --json`` from the
    parity folder, as the README runs it, for every configuration."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    listed = subprocess.run([sys.executable, "-m", "loopscope", "engines", "--json"],
                            capture_output=True, text=True, env=env, timeout=120, check=False)
    if listed.returncode != 0 or '"openhands"' not in listed.stdout:
        pytest.skip("this CLI has no generic `loopscope engines` listing the openhands engine "
                    "yet")
    failures: list[str] = []
    for config in CONFIGS:
        args = [sys.executable, "-m", "loopscope", "replay", "sessions", "--engine",
                "openhands"]
        for entry in config["set"]:
            args += ["--set", entry]
        completed = subprocess.run([*args, "--json"], cwd=PARITY, capture_output=True,
                                   text=True, env=env, timeout=300, check=False)
        assert completed.returncode == 0, completed.stderr[-2000:]
        lines = [json.loads(line) for line in completed.stdout.splitlines() if line.strip()]
        want = expected(config["name"])
        assert [session_key(o["source"]) for o in lines] == list(want), config["name"]
        for line in lines:
            key = session_key(line["source"])
            assert line["source"] == want[key]["source"]
            assert line["engine"] == "openhands" and line["format"] == want[key]["format"]
            failures.extend(f"{config['name']} {key}: {p}" for p in compare(line, want[key]))
    assert not failures, "\n".join(failures[:40])
