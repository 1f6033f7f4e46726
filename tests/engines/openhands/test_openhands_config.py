"""Settings: the schema, ``--set`` and config-file values, errors naming the key, the what-if
and its warning, and the exports in OpenHands' own format."""

from __future__ import annotations

import ast
import json
from typing import Any

import pytest

from loopscope.engines.base import ConfigError
from loopscope.engines.contract import Engine
from loopscope.engines.openhands import ENGINE, OpenHandsConfig
from loopscope.engines.registry import engine_names, get_engine

THRESHOLDS = ("action_observation", "action_error", "monologue", "alternating_pattern")


def resolve(file: dict[str, Any] | None = None, **sets: str) -> Any:
    return ENGINE.resolve_config(file, list(sets.items()))


def test_registered_and_follows_the_contract() -> None:
    assert "openhands" in engine_names()
    engine = get_engine("openhands")
    assert engine is ENGINE and isinstance(engine, Engine)
    assert engine.step_unit == "turn" and engine.versions == ("1.58.2",)
    assert [d.id for d in engine.detectors] == list(THRESHOLDS)


def test_schema() -> None:
    specs = {s.name: s for s in ENGINE.settings}
    assert list(specs) == ["enabled", *THRESHOLDS, "MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION"]
    assert specs["enabled"].default is True and specs["enabled"].deployable
    for name, default in zip(THRESHOLDS, (4, 3, 3, 6), strict=True):
        spec = specs[name]
        assert (spec.kind, spec.default, spec.min, spec.max, spec.deployable) == (
            "int", default, 1, None, True)
        lo, hi = spec.range
        assert lo == 1 and default < hi <= 25
    assert "above 10 can never fire" in specs["action_observation"].help
    assert "above 10 can never fire" in specs["alternating_pattern"].help
    assert "above 20 can never fire" in specs["monologue"].help
    what_if = specs["MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION"]
    assert (what_if.default, what_if.deployable) == (20, False)
    assert "Hypothetical" in what_if.help


@pytest.mark.parametrize("text", ["true", "TRUE", "1", "yes", "On"])
def test_enabled_true_words(text: str) -> None:
    assert resolve(enabled=text).config.enabled is True


@pytest.mark.parametrize("text", ["false", "False", "0", "no", "OFF"])
def test_enabled_false_words(text: str) -> None:
    assert resolve(enabled=text).config.enabled is False


@pytest.mark.parametrize(("key", "value", "message"), [
    ("action_observation", "0", "action_observation: must be at least 1"),
    ("action_error", "-2", "action_error: must be at least 1"),
    ("monologue", "2.5", "monologue: expected a whole number"),
    ("alternating_pattern", "six", "alternating_pattern: expected a whole number"),
    ("enabled", "maybe", "enabled: expected true or false"),
    ("max_events", "3", "unknown setting 'max_events'"),
    ("MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION", "0",
     "MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION: must be at least 1"),
])
def test_bad_values_name_the_key(key: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ENGINE.resolve_config(None, [(key, value)])


def test_no_upper_bound() -> None:
    config = resolve(action_observation="1000", monologue="99999").config
    assert (config.action_observation, config.monologue) == (1000, 99999)


def test_config_files() -> None:
    assert resolve({"monologue": 5, "enabled": "off"}).config == OpenHandsConfig(
        False, 4, 3, 5, 6, 20)
    own = {"stuck_detection": False,
           "stuck_detection_thresholds": {"action_observation": 2, "alternating_pattern": 4}}
    assert resolve(own).config == OpenHandsConfig(False, 2, 3, 3, 4, 20)
    assert resolve({"openhands": {"action_error": 5}}.get("openhands")).config.action_error == 5
    # --set wins over the file.
    assert resolve({"monologue": 5}, monologue="7").config.monologue == 7


@pytest.mark.parametrize(("file", "message"), [
    ({"monolog": 3}, "unknown setting 'monolog'"),
    ({"stuck_detection_thresholds": {"loops": 2}}, "stuck_detection_thresholds.loops"),
    ({"stuck_detection_thresholds": 3}, "stuck_detection_thresholds: expected an object"),
    ({"action_error": 2.0}, "action_error: expected a whole number"),
    ({"action_error": True}, "action_error: expected a whole number"),
    ({"enabled": 1}, "enabled: expected true or false"),
    ({"action_observation": 0}, "action_observation: must be at least 1"),
])
def test_bad_files_name_the_key(file: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve(file)


def test_settings_from_document() -> None:
    assert ENGINE.settings_from_document({"openhands": {"monologue": 4}}) == {"monologue": 4}
    own = {"stuck_detection_thresholds": {"monologue": 4}}
    assert ENGINE.settings_from_document(own) == own
    assert ENGINE.settings_from_document({"gglib": {}}) is None


def test_settings_document_round_trip() -> None:
    config = resolve(action_error="5", MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION="30").config
    document = ENGINE.settings_document(config)
    assert ENGINE.resolve_config(document, []).config == config


def test_the_what_if_is_hypothetical() -> None:
    assert resolve().warnings == ()
    resolution = resolve(MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION="40")
    assert resolution.config.max_events == 40
    (note,) = resolution.warnings
    assert "hypothetical" in note and "not an OpenHands setting" in note


def test_exports_are_openhands_own_formats_without_the_what_if() -> None:
    config = resolve(action_observation="5", monologue="2", enabled="false",
                     MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION="33").config
    python, thresholds = ENGINE.exports(config)
    assert json.loads(thresholds.text) == {"action_observation": 5, "action_error": 3,
                                           "monologue": 2, "alternating_pattern": 6}
    assert "StuckDetectionThresholds(" in python.text
    assert "    action_observation=5,\n" in python.text
    assert "stuck_detection=False," in python.text
    assert "Conversation(" in python.text
    ast.parse(python.text)  # valid Python
    for export in (python, thresholds):
        assert "MAX_EVENTS" not in export.text and "33" not in export.text
