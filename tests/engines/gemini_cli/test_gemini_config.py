"""The settings schema: ``enabled`` and its upstream alias, the what-if constants (hypothetical,
never exported), strict keys and values, config documents and exports."""

from __future__ import annotations

import json

import pytest

from loopscope.config_io import engine_settings, loopscope_config_document
from loopscope.engines.base import ConfigError
from loopscope.engines.gemini_cli.config import GeminiConfig
from loopscope.engines.gemini_cli.engine import ENGINE

WHAT_IFS = ("TOOL_CALL_LOOP_THRESHOLD", "CONTENT_LOOP_THRESHOLD", "CONTENT_CHUNK_SIZE",
            "MAX_HISTORY_LENGTH")


def test_default_config_is_gemini_cli_exactly() -> None:
    config = ENGINE.default_config()
    assert config == GeminiConfig()
    assert ENGINE.values(config) == {"enabled": True, "TOOL_CALL_LOOP_THRESHOLD": 5,
                                     "CONTENT_LOOP_THRESHOLD": 10, "CONTENT_CHUNK_SIZE": 50,
                                     "MAX_HISTORY_LENGTH": 5000}
    assert ENGINE.resolve_config(None, ()).warnings == ()
    assert ENGINE.config({}).warnings == ()


def test_schema_marks_what_ifs_as_not_deployable() -> None:
    specs = {s.name: s for s in ENGINE.settings}
    assert specs["enabled"].deployable and specs["enabled"].kind == "bool"
    assert specs["enabled"].default is True
    for name in WHAT_IFS:
        spec = specs[name]
        assert not spec.deployable
        assert "not a Gemini CLI setting" in spec.label
        assert "not a Gemini CLI setting" in spec.help
    assert {n: specs[n].default for n in WHAT_IFS} == {
        "TOOL_CALL_LOOP_THRESHOLD": 5, "CONTENT_LOOP_THRESHOLD": 10, "CONTENT_CHUNK_SIZE": 50,
        "MAX_HISTORY_LENGTH": 5000}


@pytest.mark.parametrize(("pairs", "enabled"), [
    ([("enabled", "true")], True), ([("enabled", "false")], False),
    ([("model.disableLoopDetection", "true")], False),
    ([("model.disableLoopDetection", "false")], True),
    ([("enabled", "false"), ("model.disableLoopDetection", "false")], True),  # later wins
])
def test_set_pairs_and_alias(pairs: list[tuple[str, str]], enabled: bool) -> None:
    assert ENGINE.resolve_config(None, pairs).config.enabled is enabled


@pytest.mark.parametrize("document", [
    {"model": {"disableLoopDetection": True}},
    {"gemini-cli": {"enabled": False}},
    {"gemini-cli": {"model": {"disableLoopDetection": True}}},
    {"model.disableLoopDetection": True},
    {"enabled": False},
])
def test_config_documents(document: dict[str, object]) -> None:
    part = engine_settings(document, "gemini-cli")
    assert part is not None
    assert ENGINE.resolve_config(part, ()).config.enabled is False


def test_set_wins_over_the_file() -> None:
    config = ENGINE.resolve_config({"model": {"disableLoopDetection": True}},
                                   [("enabled", "true")]).config
    assert config.enabled is True


@pytest.mark.parametrize(("file", "pairs", "needle"), [
    (None, [("historySize", "3")], "historySize"),
    (None, [("enabled", "yes")], "enabled"),
    (None, [("enabled", "2")], "enabled"),
    (None, [("model.disableLoopDetection", "1")], "model.disableLoopDetection"),
    (None, [("TOOL_CALL_LOOP_THRESHOLD", "0")], "TOOL_CALL_LOOP_THRESHOLD"),
    (None, [("CONTENT_LOOP_THRESHOLD", "1")], "CONTENT_LOOP_THRESHOLD"),
    (None, [("CONTENT_CHUNK_SIZE", "x")], "CONTENT_CHUNK_SIZE"),
    ({"model": {"disableLoopDetection": "true"}}, [], "disableLoopDetection"),
    ({"model": True}, [], "model"),
    ({"enabled": 1}, [], "enabled"),
    ({"ui": {"theme": "x"}}, [], "ui"),
    ({"TOOL_CALL_LOOP_THRESHOLD": True}, [], "TOOL_CALL_LOOP_THRESHOLD"),
    ({"enabled": True, "model": {"disableLoopDetection": True}}, [], "contradicts"),
])
def test_bad_usage_names_the_key(file: dict[str, object] | None, pairs: list[tuple[str, str]],
                                 needle: str) -> None:
    with pytest.raises(ConfigError) as error:
        ENGINE.resolve_config(file, pairs)
    assert needle in str(error.value)


def test_a_users_settings_json_is_read_for_loop_detection_only() -> None:
    """A real ~/.gemini/settings.json holds many other settings: they are ignored, while a typo
    in a flat (loopscope) object is still refused (above: ``ui`` alone)."""
    settings = {"theme": "GitHub", "ui": {"hideBanner": True},
                "model": {"name": "gemini-2.5-pro", "disableLoopDetection": True}}
    assert ENGINE.resolve_config(settings, []).config.enabled is False
    settings["model"] = {"name": "gemini-2.5-pro"}
    assert ENGINE.resolve_config(settings, []).config.enabled is True


def test_unknown_key_message_lists_the_accepted_keys() -> None:
    with pytest.raises(ConfigError) as error:
        ENGINE.resolve_config(None, [("warningThreshold", "3")])
    message = str(error.value)
    for key in ("enabled", "model.disableLoopDetection", *WHAT_IFS):
        assert key in message
    with pytest.raises(ConfigError):
        ENGINE.config({"warningThreshold": 3})


def test_hypothetical_values_carry_a_warning() -> None:
    resolution = ENGINE.resolve_config(None, [("TOOL_CALL_LOOP_THRESHOLD", "3"),
                                              ("CONTENT_CHUNK_SIZE", "50")])
    assert resolution.config.tool_call_loop_threshold == 3
    assert len(resolution.warnings) == 1  # CONTENT_CHUNK_SIZE=50 is Gemini CLI's own value
    warning = resolution.warnings[0]
    assert "TOOL_CALL_LOOP_THRESHOLD=3" in warning and "hypothetical" in warning
    assert "not a Gemini CLI setting" in warning
    assert len(ENGINE.config({name: 7 for name in WHAT_IFS}).warnings) == 4


def test_exports_hold_only_the_gemini_cli_setting() -> None:
    config = ENGINE.resolve_config(None, [("enabled", "false"),
                                          ("TOOL_CALL_LOOP_THRESHOLD", "3")]).config
    (export,) = ENGINE.exports(config)
    assert json.loads(export.text) == {"model": {"disableLoopDetection": True}}
    assert "TOOL_CALL_LOOP_THRESHOLD" not in export.text
    assert "TOOL_CALL_LOOP_THRESHOLD" in export.caption and "not Gemini CLI settings" in (
        export.caption)
    (default_export,) = ENGINE.exports(ENGINE.default_config())
    assert json.loads(default_export.text) == {"model": {"disableLoopDetection": False}}
    # The exported fragment reads back as the same (deployable) configuration.
    assert ENGINE.resolve_config(ENGINE.settings_from_document(json.loads(export.text)),
                                 ()).config == GeminiConfig(enabled=False)


@pytest.mark.parametrize("config", [GeminiConfig(), GeminiConfig(enabled=False),
                                    GeminiConfig(tool_call_loop_threshold=3,
                                                 max_history_length=100)])
def test_loopscope_document_round_trip(config: GeminiConfig) -> None:
    document = json.loads(json.dumps(loopscope_config_document({"gemini-cli": config})))
    part = engine_settings(document, "gemini-cli")
    assert ENGINE.resolve_config(part, ()).config == config
    assert ENGINE.config(ENGINE.values(config)).config == config


def test_documents_for_other_engines_are_not_read() -> None:
    assert ENGINE.settings_from_document({"tools": {"loopDetection": {"enabled": True}}}) is None
    assert ENGINE.settings_from_document({"max_repeated_batch_steps": 3}) is None
    assert engine_settings({"openclaw": {"enabled": True}}, "gemini-cli") is None
