"""``python -m loopscope replay … --engine gemini-cli`` end to end, as a separate process.

The parity set through the real command, exactly as its README gives it (run from the parity
folder, with ``--set`` pairs and with ``--config configs/<name>.json``), compared with its
matching rules; then the command-line contract of the engine's settings: the
``model.disableLoopDetection`` alias, bad keys and values (exit 2, naming the accepted keys),
the hypothetical-value warning, and ``loopscope engines``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.engines.gemini_cli.test_gemini_parity import (
    COMPARED,
    CONFIGS,
    PARITY,
    compare,
    expected_lines,
)

REPO_ROOT = Path(__file__).resolve().parents[3]


def loopscope(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "loopscope", *args], cwd=cwd or REPO_ROOT,
                          capture_output=True, text=True, env=env, timeout=300, check=False)


def _lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


@pytest.mark.parametrize("config", CONFIGS, ids=[c["name"] for c in CONFIGS])
@pytest.mark.parametrize("via", ["set", "config"])
def test_parity_set_through_the_command(config: dict[str, Any], via: str) -> None:
    args = ["replay", "sessions", "--engine", "gemini-cli", "--json"]
    if via == "set":
        for pair in config["set"]:
            args += ["--set", pair]
    else:
        args += ["--config", f"configs/{config['name']}.json"]
    done = loopscope(*args, cwd=PARITY)
    assert done.returncode == 0, done.stderr
    actual = _lines(done.stdout)
    expected = expected_lines(config["name"])
    assert [a["source"] for a in actual] == list(expected), "sessions in sorted file order"
    failures = []
    for line in actual:
        # The README's rule: first_refusal and the compared keys, type-strictly.
        failures += [f"{line['source']}: {p}" for p in
                     compare(line, expected[line["source"]], COMPARED)]
    assert not failures, "\n".join(failures[:40])
    assert sum(a["first_refusal"] is not None for a in actual) == (
        21 if config["name"] == "defaults" else 0)


def test_alias_and_bad_usage(tmp_path: Path) -> None:
    session = PARITY / "sessions" / "gmp-002.json"
    off = loopscope("replay", str(session), "--engine", "gemini-cli", "--json",
                    "--set", "model.disableLoopDetection=true")
    assert off.returncode == 0, off.stderr
    assert _lines(off.stdout)[0]["first_refusal"] is None
    on = loopscope("replay", str(session), "--engine", "gemini-cli", "--json",
                   "--set", "model.disableLoopDetection=false")
    assert _lines(on.stdout)[0]["first_refusal"] == {
        "turn": 4, "call": 4, "detector": "consecutive_identical_tool_calls"}

    bad_key = loopscope("replay", str(session), "--engine", "gemini-cli",
                        "--set", "historySize=3")
    assert bad_key.returncode == 2
    assert "historySize" in bad_key.stderr
    assert "enabled" in bad_key.stderr and "model.disableLoopDetection" in bad_key.stderr
    bad_value = loopscope("replay", str(session), "--engine", "gemini-cli", "--set", "enabled=2")
    assert bad_value.returncode == 2 and "enabled" in bad_value.stderr

    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"model": {"disableLoopDetection": "yes"}}))
    bad_file = loopscope("replay", str(session), "--engine", "gemini-cli", "--config",
                         str(settings))
    assert bad_file.returncode == 2 and "disableLoopDetection" in bad_file.stderr

    what_if = loopscope("replay", str(session), "--engine", "gemini-cli", "--json",
                        "--set", "TOOL_CALL_LOOP_THRESHOLD=3")
    assert what_if.returncode == 0
    assert "hypothetical" in what_if.stderr and "not a Gemini CLI setting" in what_if.stderr
    assert _lines(what_if.stdout)[0]["first_refusal"]["call"] == 2


def test_engines_command_lists_the_schema() -> None:
    done = loopscope("engines", "--json")
    assert done.returncode == 0, done.stderr
    entry = next(e for e in _lines(done.stdout) if e["name"] == "gemini-cli")
    assert any("LLM loop check is not replayed" in note for note in entry["notes"])
    settings = {s["name"]: s for s in entry["settings"]}
    assert list(settings) == ["enabled", "TOOL_CALL_LOOP_THRESHOLD", "CONTENT_LOOP_THRESHOLD",
                              "CONTENT_CHUNK_SIZE", "MAX_HISTORY_LENGTH"]
    assert settings["enabled"]["deployable"] is True
    for name in list(settings)[1:]:
        assert settings[name]["deployable"] is False
        assert "not a Gemini CLI setting" in settings[name]["label"]
        assert "not a Gemini CLI setting" in settings[name]["help"]
