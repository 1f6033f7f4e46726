"""OpenClaw 2026.9.6 as a version of the ``openclaw`` engine: settings, what-ifs, retired keys,
config files, per-agent overlays, exports and the engine API the CLI and dashboard use."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from loopscope.engines import ConfigError
from loopscope.engines.openclaw import ENGINE, OpenClawConfig
from loopscope.engines.openclaw.v2026_6.fast import PreparedSession
from loopscope.engines.openclaw.v2026_9.config import (
    LEGACY_KEYS,
    UPSTREAM,
    WHAT_IF_NAMES,
    OpenClaw9Config,
    merge_agent_overlay_2026_9,
)
from loopscope.engines.openclaw.v2026_9.fast import Prepared9
from loopscope.engines.openclaw.v2026_9.upstream import DETECTORS
from loopscope.formats.builder import SessionBuilder

V9 = "2026.9.6"


def _session() -> Any:
    b = SessionBuilder()
    b.user("go")
    for n in range(3):
        turn = b.assistant("")
        b.call(turn, "read", {"path": "/a"}, "value", id=f"c{n}")
        b.result(f"c{n}", [{"type": "text", "text": "same"}], "same")
    return b.build(id="s", source="s.jsonl", format="openclaw_session")


def test_versions_and_default() -> None:
    assert ENGINE.versions == ("2026.6.11", "2026.7.35", "2026.9.6")
    assert ENGINE.default_version == "2026.6.11"
    assert isinstance(ENGINE.default_config(), OpenClawConfig)
    assert isinstance(ENGINE.default_config(V9), OpenClaw9Config)
    with pytest.raises(ConfigError, match=r"2026\.9\.6"):
        ENGINE.settings_for("2026.8.0")


def test_settings_of_2026_9_are_enabled_and_what_ifs_named_after_upstream() -> None:
    specs = ENGINE.settings_for(V9)
    assert [s.name for s in specs] == [
        "enabled", "TOOL_CALL_HISTORY_SIZE", "WARNING_THRESHOLD", "CRITICAL_THRESHOLD",
        "GLOBAL_CIRCUIT_BREAKER_THRESHOLD", "UNKNOWN_TOOL_THRESHOLD", "ARGUMENT_CHURN_THRESHOLD",
        "DEFAULT_WINDOW_SIZE", "LOOP_WARNING_BUCKET_SIZE"]
    enabled, *what_ifs = specs
    assert enabled.deployable and enabled.default is True
    assert [s.default for s in what_ifs] == [30, 10, 20, 30, 10, 10, 3, 10]
    for spec in what_ifs:
        assert spec.deployable is False
        assert "not settable in OpenClaw 2026.9 — a proposal to take upstream" in spec.help
        assert "not settable in OpenClaw 2026.9 — a proposal to take upstream" in spec.group
        assert spec.min == 1
    # 2026.6.11 keeps its schema.
    assert [s.name for s in ENGINE.settings_for("2026.6.11")][:3] == [
        "enabled", "warningThreshold", "criticalThreshold"]


def test_what_if_names_exist_in_the_published_package() -> None:
    """The constants the what-ifs are named after, where upstream names them (the others are
    literals: their help says so)."""
    folder = _package()
    dist = folder / "node_modules" / "openclaw" / "dist"
    texts = {p.name: p.read_text() for p in dist.glob("*.mjs") if p.name.startswith((
        "tool-loop-detection-", "embedded-agent-", "agent-tools.before-tool-call-"))}
    everything = "\n".join(texts.values())
    for name, value in (("TOOL_CALL_HISTORY_SIZE", 30), ("CRITICAL_THRESHOLD", 20),
                        ("GLOBAL_CIRCUIT_BREAKER_THRESHOLD", 30), ("DEFAULT_WINDOW_SIZE", 3),
                        ("LOOP_WARNING_BUCKET_SIZE", 10)):
        assert re.search(rf"const {name} = {value};", everything), name
    detector = next(t for n, t in texts.items() if n.startswith("tool-loop-detection-")
                    and "config" not in n)
    assert "unknownToolStreak.count >= 10" in detector
    assert "argumentChurn.count >= 10" in detector
    assert "function resolveToolLoopWarningThreshold() {\n\treturn 10;" in detector


def _package() -> Path:
    import os

    folder = os.environ.get("LOOPSCOPE_OPENCLAW9_DIR")
    if not folder or not (Path(folder) / "node_modules" / "openclaw" / "dist").is_dir():
        pytest.skip("LOOPSCOPE_OPENCLAW9_DIR (openclaw@2026.9.6) is not set")
    return Path(folder)


def test_config_values_and_version_of() -> None:
    res = ENGINE.config({"CRITICAL_THRESHOLD": 5}, V9)
    cfg = res.config
    assert isinstance(cfg, OpenClaw9Config)
    assert ENGINE.version_of(cfg) == V9
    assert ENGINE.values(cfg) == {"enabled": True, "TOOL_CALL_HISTORY_SIZE": 30,
                                  "WARNING_THRESHOLD": 10, "CRITICAL_THRESHOLD": 5,
                                  "GLOBAL_CIRCUIT_BREAKER_THRESHOLD": 30,
                                  "UNKNOWN_TOOL_THRESHOLD": 10, "ARGUMENT_CHURN_THRESHOLD": 10,
                                  "DEFAULT_WINDOW_SIZE": 3, "LOOP_WARNING_BUCKET_SIZE": 10}
    assert cfg.limits.critical == 5
    assert any(w.startswith("Hypothetical: CRITICAL_THRESHOLD=5") for w in res.warnings)
    assert "not settable in OpenClaw 2026.9" in " ".join(res.warnings)
    # The defaults carry no such warning.
    assert not [w for w in ENGINE.config({}, V9).warnings if "Hypothetical" in w]
    with pytest.raises(ConfigError, match="CRITICAL_THRESHOLD"):
        ENGINE.config({"CRITICAL_THRESHOLD": 0}, V9)
    with pytest.raises(ConfigError, match="unknown setting"):
        ENGINE.config({"criticalthreshold": 5}, V9)


def test_retired_keys_are_accepted_and_ignored_everywhere() -> None:
    via_values = ENGINE.config({"warningThreshold": 3, "detectors.pingPong": False}, V9)
    assert via_values.config.limits == UPSTREAM
    assert via_values.config.ignored_keys == ("detectors", "warningThreshold")
    assert any("no effect in OpenClaw 2026.9.6" in w for w in via_values.warnings)
    via_set = ENGINE.resolve_config(None, [("historySize", "5"), ("enabled", "false")],
                                    version=V9)
    assert via_set.config.limits == UPSTREAM and via_set.config.enabled is False
    # A malformed retired value is still bad usage, as it was.
    with pytest.raises(ConfigError, match="historySize"):
        ENGINE.resolve_config(None, [("historySize", "many")], version=V9)
    with pytest.raises(ConfigError, match="unknown setting 'turnLimit'"):
        ENGINE.resolve_config(None, [("turnLimit", "5")], version=V9)


def test_config_files_of_2026_9() -> None:
    cfg = {"tools": {"loopDetection": {"enabled": False, "historySize": 12}}}
    res = ENGINE.resolve_config(cfg, (), version=V9)
    assert res.config.enabled is False and res.config.ignored_keys == ("historySize",)
    with pytest.raises(ConfigError, match=r"tools\.loopDetection\.turnLimit: unknown key"):
        ENGINE.resolve_config({"tools": {"loopDetection": {"turnLimit": 3}}}, (), version=V9)
    with pytest.raises(ConfigError, match="enabled: must be true or false"):
        ENGINE.resolve_config({"tools": {"loopDetection": {"enabled": "yes"}}}, (), version=V9)
    # A file's "version" picks the release; --openclaw-version wins over it.
    doc = {"version": V9, "tools": {"loopDetection": {"enabled": True}}}
    assert isinstance(ENGINE.resolve_config(doc, ()).config, OpenClaw9Config)
    assert isinstance(ENGINE.resolve_config(doc, (), version="2026.6.11").config, OpenClawConfig)
    # enabled left unset: loopscope's true, said so.
    unset = ENGINE.resolve_config({"tools": {"loopDetection": {}}}, (), version=V9)
    assert unset.config.enabled is True and unset.config.enabled_defaulted
    assert any("2026.9" in n and "rolling detector off" in n for n in unset.notes)


def test_agent_overlay_of_2026_9() -> None:
    cfg = {"tools": {"loopDetection": {"enabled": True}},
           "agents": {"list": [{"id": "Coder", "tools": {"loopDetection": {"enabled": False}}},
                               {"id": "quiet", "tools": {"loopDetection": {}}}]}}
    assert ENGINE.resolve_config(cfg, (), "coder", V9).config.enabled is False
    # Both blocks: {enabled: agent.enabled ?? global.enabled}.
    assert ENGINE.resolve_config(cfg, (), "quiet", V9).config.enabled is True
    assert merge_agent_overlay_2026_9(cfg, "quiet") == {"enabled": True}
    missing = ENGINE.resolve_config(cfg, (), "nobody", V9)
    assert any("nobody" in w for w in missing.warnings)
    only_agent = {"agents": {"entries": {"ops": {"tools": {"loopDetection": {"enabled": False}}}}}}
    assert ENGINE.resolve_config(only_agent, (), "OPS", V9).config.enabled is False


def test_exports_hold_only_enabled() -> None:
    cfg = ENGINE.config({"enabled": False, "CRITICAL_THRESHOLD": 7,
                         "LOOP_WARNING_BUCKET_SIZE": 2}, V9).config
    (export,) = ENGINE.exports(cfg)
    body = export.text
    assert "enabled: false" in body
    for name in WHAT_IF_NAMES:
        assert name not in body
    for key in LEGACY_KEYS:
        assert key not in body
    assert "2026.9.6" in body and "fixed" in export.caption
    assert "CRITICAL_THRESHOLD" in export.caption  # says the what-ifs are not exported


def test_settings_document_reads_back_to_the_same_config() -> None:
    plain = ENGINE.config({"enabled": False}, V9).config
    assert ENGINE.settings_document(plain) == {"version": V9,
                                               "tools": {"loopDetection": {"enabled": False}}}
    hypothetical = ENGINE.config({"CRITICAL_THRESHOLD": 7}, V9).config
    doc = ENGINE.settings_document(hypothetical)
    assert doc["tools"] == {"loopDetection": {"enabled": True}}
    assert doc["CRITICAL_THRESHOLD"] == 7
    assert ENGINE.settings_from_document({"openclaw": doc}) == doc
    again = ENGINE.resolve_config(ENGINE.settings_from_document({"openclaw": doc}), ()).config
    assert again == hypothetical
    assert ENGINE.resolve_config(ENGINE.settings_document(plain), ()).config == plain


def test_prepare_key_and_dispatch() -> None:
    assert ENGINE.prepare_key(V9) != ENGINE.prepare_key("2026.6.11")
    assert ENGINE.prepare_key("2026.7.35") == ENGINE.prepare_key("2026.6.11")
    session = _session()
    prepared = ENGINE.prepare(session, V9)
    assert isinstance(prepared, Prepared9)
    assert isinstance(ENGINE.prepare(session), PreparedSession)
    cfg9 = ENGINE.default_config(V9)
    assert ENGINE.run(prepared, cfg9) == ENGINE.replay(session, cfg9)
    with pytest.raises(TypeError, match="prepare it with version"):
        ENGINE.run(ENGINE.prepare(session), cfg9)
    with pytest.raises(TypeError, match="prepare it with version"):
        ENGINE.run(prepared, ENGINE.default_config())


def test_detectors_listed_with_their_versions() -> None:
    by_id = {d.id: d for d in ENGINE.detectors}
    assert set(DETECTORS) <= set(by_id)
    for new in ("argument_churn", "tool_loop_recovery_terminated", "tool_loop_batch_skipped"):
        assert by_id[new].versions == (V9,)
    for old in ("generic_repeat", "post_compaction_guard"):
        assert by_id[old].versions == ()


def test_counters_of_2026_9() -> None:
    session = _session()
    cfg = ENGINE.default_config(V9)
    prepared = ENGINE.prepare(session, V9)
    series = ENGINE.counters(prepared, ENGINE.run(prepared, cfg), cfg)
    assert series[0].values == (0, 1, 2)
    assert [s.label for s in series if s.role == "limit"] == ["warn at 10", "stop at 20",
                                                              "hard stop at 30"]


def test_engines_command_lists_the_version() -> None:
    import sys

    done = subprocess.run([sys.executable, "-m", "loopscope", "engines", "--json"],
                          capture_output=True, text=True, check=True, timeout=120)
    engines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    openclaw = next(e for e in engines if e["name"] == "openclaw")
    text = json.dumps(openclaw)
    assert "2026.9.6" in text and "ARGUMENT_CHURN_THRESHOLD" in text
