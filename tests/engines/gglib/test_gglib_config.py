"""Configuration keys, clamps and the gglib settings object."""

from __future__ import annotations

from typing import Any

import pytest

from loopscope.engines.base import ConfigError
from loopscope.engines.gglib import DEFAULT_OBSERVATION_TOOLS, ENGINE, GglibConfig, resolve_config


def test_defaults() -> None:
    c = resolve_config(None, []).config
    assert c == GglibConfig() == ENGINE.default_config()
    assert (c.max_repeated_batch_steps, c.max_observation_steps, c.max_stagnation_steps) == (2, 15, 5)
    assert c.observation_tools == DEFAULT_OBSERVATION_TOOLS


def test_set_pairs_and_strings() -> None:
    a = resolve_config(None, [("max_repeated_batch_steps", "3"), ("max_observation_steps", "None")])
    b = resolve_config(None, ["max_repeated_batch_steps=3", "max_observation_steps=NULL"])
    assert a.config == b.config
    assert a.config.max_repeated_batch_steps == 3 and a.config.max_observation_steps is None
    assert a.warnings == ()


@pytest.mark.parametrize(
    ("key", "value", "effective"),
    [
        ("max_observation_steps", "0", 1),
        ("max_observation_steps", "-4", 1),
        ("max_observation_steps", "101", 100),
        ("max_stagnation_steps", "0", 1),
        ("max_stagnation_steps", "1000", 100),
        ("max_repeated_batch_steps", "0", 1),
        ("max_repeated_batch_steps", "250", 100),
    ],
)
def test_clamps_warn_once(key: str, value: str, effective: int) -> None:
    res = resolve_config(None, [(key, value)])
    assert getattr(res.config, key) == effective
    assert len(res.warnings) == 1 and key in res.warnings[0] and str(effective) in res.warnings[0]


def test_clamp_applies_to_the_merged_result() -> None:
    res = resolve_config({"max_observation_steps": 0}, [("max_observation_steps", "7")])
    assert res.config.max_observation_steps == 7 and res.warnings == ()
    res = resolve_config(None, [("max_observation_steps", "0"), ("max_stagnation_steps", "0")])
    assert len(res.warnings) == 2


@pytest.mark.parametrize(
    ("pairs", "needle"),
    [
        ([("max_repeated_batch_steps", "abc")], "max_repeated_batch_steps"),
        ([("max_observation_steps", "2.5")], "max_observation_steps"),
        ([("max_stagnation_steps", "")], "max_stagnation_steps"),
        ([("max_repeated_batch_steps", "none")], "max_repeated_batch_steps"),
        ([("historySize", "3")], "historySize"),
        ([("max_repeated_batch_step", "3")], "unknown"),
        (["no_equals_sign"], "KEY=VALUE"),
    ],
)
def test_usage_errors_name_the_key(pairs: list[Any], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        resolve_config(None, pairs)


@pytest.mark.parametrize(
    ("text", "tools"),
    [
        ("", ()),
        ("read_file", ("read_file",)),
        (" Read , list_,,snapshot ", ("Read", "list_", "snapshot")),
        (",,", ()),
    ],
)
def test_observation_tools_comma_form(text: str, tools: tuple[str, ...]) -> None:
    assert resolve_config(None, [("observation_tools", text)]).config.observation_tools == tools


def test_observation_tools_array_form_is_verbatim() -> None:
    c = resolve_config({"observation_tools": ["read_file", "", " x "]}, []).config
    assert c.observation_tools == ("read_file", "", " x ")
    c = resolve_config({"observation_tools": "a, b"}, []).config
    assert c.observation_tools == ("a", "b")
    with pytest.raises(ConfigError, match="observation_tools"):
        resolve_config({"observation_tools": ["a", 3]}, [])
    with pytest.raises(ConfigError, match="observation_tools"):
        resolve_config({"observation_tools": 3}, [])


def test_settings_object_nulls() -> None:
    c = resolve_config({"max_observation_steps": None, "max_stagnation_steps": None}, []).config
    assert c.max_observation_steps is None and c.max_stagnation_steps == 5
    with pytest.raises(ConfigError, match="max_repeated_batch_steps"):
        resolve_config({"max_repeated_batch_steps": None}, [])


@pytest.mark.parametrize("value", [2.5, 2.0, True, [2], {"a": 1}, "abc"])
def test_settings_object_bad_values(value: Any) -> None:
    with pytest.raises(ConfigError, match="max_stagnation_steps"):
        resolve_config({"max_stagnation_steps": value}, [])


def test_settings_object_ignores_other_keys() -> None:
    res = resolve_config({"loop_guard_mode": "refuse", "tools": {"loopDetection": {}}, "max_observation_steps": 30}, [])
    assert res.config.max_observation_steps == 30


def test_set_overrides_file_in_order() -> None:
    res = resolve_config(
        {"max_repeated_batch_steps": 4, "observation_tools": ["a"]},
        [("max_repeated_batch_steps", "5"), ("max_repeated_batch_steps", "6"), ("observation_tools", "b,c")],
    )
    assert res.config.max_repeated_batch_steps == 6
    assert res.config.observation_tools == ("b", "c")


def test_engine_resolve_config_ignores_agent() -> None:
    assert ENGINE.resolve_config(None, [], agent="main").config == GglibConfig()


def test_config_to_json_round_trip() -> None:
    c = GglibConfig(3, None, ("a",), 4)
    assert resolve_config(c.to_json(), []).config == c
