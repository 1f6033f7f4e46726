"""The qwen-code engine's settings: Qwen Code's defaults, its settings.json in and out (a
present ``maxToolCallsPerTurn`` is a hard cap, an absent one adaptive), what-if notes, bad
values, and the command line (``loopscope engines --json``, ``replay --config settings.json``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopscope.config_io import engine_settings, loopscope_config_document
from loopscope.engines.base import ConfigError
from loopscope.engines.qwen_code.config import QwenConfig
from loopscope.engines.qwen_code.engine import ENGINE
from loopscope.engines.qwen_code.upstream import Constants

REPO_ROOT = Path(__file__).resolve().parents[3]
PARITY = REPO_ROOT / "tests" / "data" / "parity" / "qwen-code"


def loopscope(*args: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src"), "LOOPSCOPE_CACHE": "off"}
    return subprocess.run([sys.executable, "-m", "loopscope", *args], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=300, check=False)


def test_defaults_are_qwen_codes() -> None:
    config = ENGINE.default_config()
    assert config == QwenConfig()
    assert (config.skip_loop_detection, config.max_tool_calls_per_turn, config.cap_mode) == (
        True, 100, "adaptive")
    assert config.notes == ()
    assert [s.name for s in ENGINE.settings if s.deployable] == [
        "model.skipLoopDetection", "model.maxToolCallsPerTurn", "capMode"]
    assert all(s.name.isupper() for s in ENGINE.settings if not s.deployable)


@pytest.mark.parametrize(("model", "skip", "cap", "mode"), [
    ({}, True, 100, "adaptive"),
    ({"skipLoopDetection": False}, False, 100, "adaptive"),
    ({"maxToolCallsPerTurn": 100}, True, 100, "explicit"),
    ({"maxToolCallsPerTurn": 40, "skipLoopDetection": True}, True, 40, "explicit"),
    ({"maxToolCallsPerTurn": -5}, True, 0, "explicit"),
])
def test_a_qwen_settings_json_is_read(model: dict[str, object], skip: bool, cap: int,
                                      mode: str) -> None:
    document = {"model": {"name": "qwen3-coder-plus", **model}, "ui": {"theme": "x"}}
    part = ENGINE.settings_from_document(document) if model else document
    assert part is not None
    config = ENGINE.resolve_config(part, ()).config
    assert (config.skip_loop_detection, config.max_tool_calls_per_turn, config.cap_mode) == (
        skip, cap, mode)


@pytest.mark.parametrize("config", [
    QwenConfig(), QwenConfig(False), QwenConfig(True, 30, "explicit"),
    QwenConfig(False, 0, "explicit"),
])
def test_export_is_a_qwen_settings_json_that_reads_back(config: QwenConfig) -> None:
    (export,) = ENGINE.exports(config)
    data = json.loads(export.text)
    assert set(data) == {"model"}
    assert data["model"]["skipLoopDetection"] is config.skip_loop_detection
    assert ("maxToolCallsPerTurn" in data["model"]) is (config.cap_mode == "explicit")
    assert ENGINE.resolve_config(data, ()).config == config


def test_what_ifs_carry_notes_and_are_not_exported() -> None:
    config = ENGINE.resolve_config(None, [("TOOL_CALL_LOOP_THRESHOLD", "3"),
                                          ("model.maxToolCallsPerTurn", "50")]).config
    assert config.constants.tool_call_loop_threshold == 3
    notes = " ".join(config.notes)
    assert "TOOL_CALL_LOOP_THRESHOLD=3 is hypothetical" in notes
    assert "adaptive cap of 50 is hypothetical" in notes
    (export,) = ENGINE.exports(config)
    assert json.loads(export.text) == {"model": {"skipLoopDetection": True}}
    assert "TOOL_CALL_LOOP_THRESHOLD" in export.caption and "adaptive cap 50" in export.caption


@pytest.mark.parametrize("config", [QwenConfig(), QwenConfig(False, 7, "explicit"),
                                    QwenConfig(constants=Constants(global_duplicate_threshold=3))])
def test_loopscope_document_round_trip(config: QwenConfig) -> None:
    document = json.loads(json.dumps(loopscope_config_document({"qwen-code": config})))
    part = engine_settings(document, "qwen-code")
    assert ENGINE.resolve_config(part, ()).config == config


@pytest.mark.parametrize(("file", "pairs"), [
    (None, [("capMode", "hard")]),
    (None, [("model.skipLoopDetection", "yes")]),
    (None, [("maxToolCallsPerTurn", "5")]),
    ({"model": {"maxToolCallsPerTurn": 2.5}}, []),
    ({"model": {"skipLoopDetection": "false"}}, []),
])
def test_bad_values_are_refused(file: dict[str, object] | None,
                                pairs: list[tuple[str, str]]) -> None:
    with pytest.raises(ConfigError):
        ENGINE.resolve_config(file, pairs)


def test_other_engines_documents_are_not_read() -> None:
    assert ENGINE.settings_from_document({"model": {"disableLoopDetection": True}}) is None
    assert engine_settings({"gemini-cli": {"enabled": True}}, "qwen-code") is None


def test_engines_json_lists_qwen_code() -> None:
    done = loopscope("engines", "--json")
    assert done.returncode == 0, done.stderr
    engines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    (qwen,) = [e for e in engines if e["name"] == "qwen-code"]
    assert qwen["versions"] == ["0.24.4"]
    names = {s["name"]: s for s in qwen["settings"]}
    assert names["model.skipLoopDetection"]["default"] is True
    assert names["model.maxToolCallsPerTurn"]["default"] == 100
    assert names["TOOL_CALL_LOOP_THRESHOLD"]["deployable"] is False


def test_replay_reads_a_qwen_settings_json(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"model": {"maxToolCallsPerTurn": 3}}))
    session = PARITY / "sessions" / "qcp-000.json"
    by_file = loopscope("replay", str(session), "--engine", "qwen-code", "--config",
                        str(settings), "--json")
    by_set = loopscope("replay", str(session), "--engine", "qwen-code", "--set",
                       "model.maxToolCallsPerTurn=3", "--set", "capMode=explicit", "--json")
    assert by_file.returncode == by_set.returncode == 0, by_file.stderr
    first = json.loads(by_file.stdout)
    assert first == json.loads(by_set.stdout)
    assert first["first_refusal"]["detector"] == "turn_tool_call_cap"
