"""Configuration: ``--set`` parsing, config files, validation, overlays and loopscope's
``enabled`` default."""

from __future__ import annotations

from typing import Any

import pytest

from loopscope.engines import ConfigError, get_engine
from loopscope.engines.openclaw import (
    ENABLED_DEFAULT_NOTE,
    ENABLED_UNSET_BANNER,
    ENGINE,
    JSON5_EXPORT_COMMENT,
    SET_KEYS,
    OpenClawConfig,
    normalize_agent_id,
    validate_block,
)


def effective(file: Any = None, pairs: list[str] | None = None, agent: str | None = None
              ) -> tuple[dict[str, Any], tuple[str, ...]]:
    overrides = [tuple(p.split("=", 1)) for p in pairs or []]
    resolution = ENGINE.resolve_config(file, overrides, agent)  # type: ignore[arg-type]
    return resolution.config.effective(), resolution.warnings


def test_get_engine_returns_this_engine() -> None:
    assert get_engine("openclaw") is ENGINE
    assert ENGINE.name == "openclaw"


def test_defaults_enable_detection() -> None:
    config = ENGINE.default_config()
    assert config.resolved.detection_on and config.enabled_defaulted
    eff = config.effective()
    assert (eff["historySize"], eff["warningThreshold"], eff["criticalThreshold"],
            eff["globalCircuitBreakerThreshold"], eff["unknownToolThreshold"]) == (30, 10, 20,
                                                                                   30, 10)
    assert eff["postCompactionGuard"] == {"enabled": True, "windowSize": 3}


def test_notes_are_exposed() -> None:
    assert "loopscope turns it on" in ENABLED_DEFAULT_NOTE
    assert "only the post-compaction guard" in ENABLED_UNSET_BANNER
    assert JSON5_EXPORT_COMMENT.startswith("//")
    assert len(SET_KEYS) == 10


@pytest.mark.parametrize("pairs", [
    ["warningThreshold=3", "criticalThreshold=5", "globalCircuitBreakerThreshold=7"],
])
def test_set_pairs(pairs: list[str]) -> None:
    eff, warnings = effective(pairs=pairs)
    assert (eff["warningThreshold"], eff["criticalThreshold"],
            eff["globalCircuitBreakerThreshold"]) == (3, 5, 7)
    assert eff["enabled"] is True
    assert warnings == ()


def test_misordered_set_warns_and_clamps() -> None:
    eff, warnings = effective(pairs=["warningThreshold=6", "criticalThreshold=4",
                                     "globalCircuitBreakerThreshold=2"])
    assert (eff["warningThreshold"], eff["criticalThreshold"],
            eff["globalCircuitBreakerThreshold"]) == (6, 7, 8)
    text = "\n".join(warnings)
    assert "tools.loopDetection.warningThreshold must be lower than criticalThreshold." in text
    assert ("tools.loopDetection.criticalThreshold must be lower than "
            "globalCircuitBreakerThreshold.") in text
    assert "OpenClaw would refuse to load this config" in text
    assert "criticalThreshold raised to 7 because it must exceed warningThreshold (6)" in text


def test_clamp_note_for_critical_above_breaker() -> None:
    _, warnings = effective(pairs=["criticalThreshold=40"])
    assert any("globalCircuitBreakerThreshold raised to 41" in w for w in warnings)


def test_set_overrides_file() -> None:
    eff, _ = effective({"tools": {"loopDetection": {"warningThreshold": 4}}},
                       ["warningThreshold=5"])
    assert eff["warningThreshold"] == 5


@pytest.mark.parametrize(("pair", "fragment"), [
    ("warningTreshold=3", "warningTreshold"),
    ("historySize=0", "historySize"),
    ("historySize=-2", "historySize"),
    ("historySize=2.5", "historySize"),
    ("historySize=abc", "historySize"),
    ("enabled=yes", "enabled"),
    ("detectors.pingPong=1", "detectors.pingPong"),
    ("detectors.other=true", "detectors.other"),
    ("postCompactionGuard.windowSize=0", "postCompactionGuard.windowSize"),
])
def test_bad_set_pairs_name_the_key(pair: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment.replace(".", r"\.")):
        effective(pairs=[pair])


@pytest.mark.parametrize(("block", "fragment"), [
    ({"historySize": 0}, "historySize"),
    ({"warningThreshold": 2.5}, "warningThreshold"),
    ({"enabled": "true"}, "enabled"),
    ({"enabled": None}, "enabled"),
    ({"bogus": 1}, "bogus"),
    ({"detectors": {"pingpong": True}}, "pingpong"),
    ({"detectors": {"pingPong": 1}}, "pingPong"),
    ({"postCompactionGuard": {"windowSize": 0}}, "windowSize"),
    ({"postCompactionGuard": {"size": 2}}, "size"),
])
def test_bad_file_values_name_the_key(block: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        effective({"tools": {"loopDetection": block}})
    with pytest.raises(ConfigError, match=fragment):
        effective(block if "bogus" not in block else {"loopDetection": block})


def test_bad_agent_block_is_rejected() -> None:
    cfg = {"agents": {"list": [{"id": "x", "tools": {"loopDetection": {"historySize": -1}}}]}}
    with pytest.raises(ConfigError, match=r"agents\.list\[0\]\.tools\.loopDetection\.historySize"):
        effective(cfg)


def test_bare_block_and_wrapped_block() -> None:
    assert effective({"warningThreshold": 4})[0]["warningThreshold"] == 4
    assert effective({"loopDetection": {"warningThreshold": 4}})[0]["warningThreshold"] == 4


def test_other_openclaw_keys_are_ignored() -> None:
    eff, warnings = effective({"gateway": {"port": 1}, "tools": {"exec": {"x": 1},
                                                                 "loopDetection": {}}})
    assert eff["enabled"] is True and warnings == ()


def test_config_without_block_warns() -> None:
    _, warnings = effective({"gateway": {"port": 1}})
    assert any("no tools.loopDetection" in w for w in warnings)


def test_documentation_overlay_example() -> None:
    cfg = {"agents": {"list": [{"id": "safe-runner", "tools": {"loopDetection": {
        "enabled": True, "warningThreshold": 8, "criticalThreshold": 16}}}]}}
    eff, _ = effective(cfg, agent="safe-runner")
    assert (eff["warningThreshold"], eff["criticalThreshold"],
            eff["globalCircuitBreakerThreshold"], eff["historySize"]) == (8, 16, 30, 30)


def test_overlay_merges_detectors() -> None:
    cfg = {"tools": {"loopDetection": {"enabled": True, "warningThreshold": 10,
                                       "detectors": {"pingPong": False}}},
           "agents": {"list": [{"id": "coder", "tools": {"loopDetection": {
               "criticalThreshold": 16, "detectors": {"genericRepeat": False}}}}]}}
    eff, _ = effective(cfg, agent="coder")
    assert eff["criticalThreshold"] == 16
    assert eff["detectors"] == {"genericRepeat": False, "knownPollNoProgress": True,
                                "pingPong": False}


def test_unknown_agent_warns_and_uses_global() -> None:
    cfg = {"tools": {"loopDetection": {"warningThreshold": 7}},
           "agents": {"list": [{"id": "coder"}]}}
    eff, warnings = effective(cfg, agent="writer")
    assert eff["warningThreshold"] == 7
    assert any("writer" in w for w in warnings)


def test_agent_enabled_false_wins_and_disables_guard() -> None:
    cfg = {"tools": {"loopDetection": {"enabled": True}},
           "agents": {"list": [{"id": "ops", "tools": {"loopDetection": {"enabled": False}}}]}}
    eff, _ = effective(cfg, agent="ops")
    assert eff["enabled"] is False and eff["postCompactionGuard"]["enabled"] is False


def test_merged_misorder_is_clamped_without_refusal_warning() -> None:
    cfg = {"tools": {"loopDetection": {"criticalThreshold": 20}},
           "agents": {"list": [{"id": "a", "tools": {"loopDetection": {"warningThreshold": 25}}}]}}
    eff, warnings = effective(cfg, agent="a")
    assert (eff["warningThreshold"], eff["criticalThreshold"],
            eff["globalCircuitBreakerThreshold"]) == (25, 26, 30)
    assert not any("would refuse" in w for w in warnings)


def test_file_enabled_unset_is_flagged() -> None:
    config = ENGINE.resolve_config({"tools": {"loopDetection": {"warningThreshold": 4}}},
                                   ()).config
    assert config.enabled_defaulted and config.resolved.detection_on
    config = ENGINE.resolve_config({"tools": {"loopDetection": {"enabled": True}}}, ()).config
    assert not config.enabled_defaulted


@pytest.mark.parametrize(("raw", "normalised"), [
    ("  CODER ", "coder"), ("", "main"), ("my agent!", "my-agent"), ("--", "main"),
    ("a" * 70, "a" * 64),
])
def test_agent_id_normalisation(raw: str, normalised: str) -> None:
    assert normalize_agent_id(raw) == normalised


def test_validate_block_returns_ordering_messages() -> None:
    assert validate_block({"warningThreshold": 5, "criticalThreshold": 5}, "x") == [
        "tools.loopDetection.warningThreshold must be lower than criticalThreshold."]


def test_with_settings_and_export() -> None:
    config = OpenClawConfig.from_block({}).with_settings(criticalThreshold=30,
                                                         **{"detectors.pingPong": False})
    assert config.critical_threshold == 30 and config.global_circuit_breaker_threshold == 31
    assert config.resolved.ping_pong_on is False
    exported = config.export_block()
    assert exported["enabled"] is True and exported["globalCircuitBreakerThreshold"] == 31
    assert validate_block(exported, "export") == []
