"""The public parity sets of the newer OpenClaw versions: ``openclaw-2026.9.6`` and
``openclaw-2026.7.35`` (beside the repository, ``../shared/reference/parity/``).

Each configuration is resolved from its ``set`` pairs and from its ``settings`` (``--config``),
with the version given; every session must equal the expected output (``session``,
``first_refusal``, the step count and, type-strictly, every key of every expected step), on the
plain replay and on the fast path. The same sets also go through the real command,
``loopscope replay sessions --engine openclaw --openclaw-version VERSION … --json``, run from
the parity folder as the READMEs say. 2026.7.35 ships the loop code of 2026.6.11: its output
must equal 2026.6.11's, on every session and configuration.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.cli.test_replay_cli import run_cli, strict_equal
from tests.engines.openclaw._openclaw_gen import random_block, random_session
from tests.engines.openclaw._openclaw_helpers import PARITY, SHARED, load_session
from tests.engines.openclaw.test_openclaw_parity import _compare, _pairs

from loopscope.engines.openclaw import ENGINE, STEP_FIELDS_2026_9, OpenClawConfig
from loopscope.engines.openclaw.v2026_9.config import OpenClaw9Config

PARITY_ROOT = SHARED / "reference" / "parity"
SETS = {"2026.9.6": PARITY_ROOT / "openclaw-2026.9.6",
        "2026.7.35": PARITY_ROOT / "openclaw-2026.7.35"}
REPO = Path(__file__).resolve().parents[3]


def _configs(version: str) -> list[dict[str, Any]]:
    path = SETS[version] / "configs.json"
    if not path.is_file():
        pytest.skip(f"parity set for {version} not found at {path.parent}")
    data = json.loads(path.read_text())
    assert data["openclaw_version"] == version
    configs: list[dict[str, Any]] = data["configs"]
    return configs


def _expected(version: str, name: str) -> dict[str, dict[str, Any]]:
    out = {}
    for line in (SETS[version] / "expected" / f"{name}.jsonl").read_text().splitlines():
        if line.strip():
            obj = json.loads(line)
            out[Path(obj["source"]).name.split("#")[0]] = obj
    return out


_LOADED: dict[str, dict[str, Any]] = {}


def _sessions(version: str) -> dict[str, Any]:
    if version not in _LOADED:
        files = sorted((SETS[version] / "sessions").iterdir())
        _LOADED[version] = {p.name: load_session(p) for p in files}
    return _LOADED[version]


def _check_set(version: str, config: dict[str, Any], source: str) -> int:
    if source == "set":
        resolution = ENGINE.resolve_config(None, _pairs(config), version=version)
    else:
        resolution = ENGINE.resolve_config(config["settings"], (), version=version)
    cfg = resolution.config
    assert ENGINE.version_of(cfg) == version
    assert cfg.effective() == config["effective"]
    sessions = _sessions(version)
    expected = _expected(version, config["name"])
    assert sorted(expected) == sorted(sessions)
    failures: list[str] = []
    for name, session in sessions.items():
        plain = ENGINE.replay(session, cfg).to_json()
        fast = ENGINE.run(ENGINE.prepare(session, version), cfg).to_json()
        assert fast == plain, f"{name}: fast path differs from replay"
        if version == "2026.9.6":
            assert all(tuple(step) == STEP_FIELDS_2026_9 for step in plain["steps"])
        failures.extend(f"{name}: {p}" for p in _compare(plain, expected[name]))
    assert not failures, "\n".join(failures[:40])
    return len(sessions)


@pytest.mark.parametrize("source", ["set", "settings"])
def test_parity_2026_9_6(source: str) -> None:
    configs = _configs("2026.9.6")
    assert [c["name"] for c in configs] == ["defaults", "disabled", "legacy_keys"]
    assert len(_sessions("2026.9.6")) == 40
    checked = sum(_check_set("2026.9.6", c, source) for c in configs)
    assert checked == 120


def test_legacy_keys_are_ignored_with_a_warning() -> None:
    config = next(c for c in _configs("2026.9.6") if c["name"] == "legacy_keys")
    for resolution in (ENGINE.resolve_config(None, _pairs(config), version="2026.9.6"),
                       ENGINE.resolve_config(config["settings"], (), version="2026.9.6")):
        assert isinstance(resolution.config, OpenClaw9Config)
        warning = next(w for w in resolution.warnings if "no effect" in w)
        for key in ("historySize", "warningThreshold", "criticalThreshold",
                    "globalCircuitBreakerThreshold", "unknownToolThreshold", "detectors",
                    "postCompactionGuard"):
            assert key in warning
        assert "would refuse to load" in warning and "openclaw doctor" in warning
    # Ignored means ignored: the outputs equal those of `defaults` (checked above), and the
    # replay is the same object-for-object.
    defaults = ENGINE.resolve_config(None, [("enabled", "true")], version="2026.9.6").config
    legacy = ENGINE.resolve_config(None, _pairs(config), version="2026.9.6").config
    session = _sessions("2026.9.6")["oc96pub-010.json"]
    assert ENGINE.replay(session, legacy) == ENGINE.replay(session, defaults)
    assert legacy.limits == defaults.limits


@pytest.mark.parametrize("source", ["set", "settings"])
def test_parity_2026_7_35(source: str) -> None:
    configs = _configs("2026.7.35")
    assert len(configs) == 11
    checked = sum(_check_set("2026.7.35", c, source) for c in configs)
    assert checked == 440


def _same_output(session: Any, block: dict[str, Any]) -> None:
    old = OpenClawConfig.from_block(block, "2026.6.11")
    new = OpenClawConfig.from_block(block, "2026.7.35")
    assert ENGINE.prepare_key("2026.7.35") == ENGINE.prepare_key("2026.6.11")
    prepared = ENGINE.prepare(session, "2026.7.35")
    assert ENGINE.replay(session, new).to_json() == ENGINE.replay(session, old).to_json()
    assert ENGINE.run(prepared, new).to_json() == ENGINE.run(prepared, old).to_json()


def test_2026_7_35_equals_2026_6_11() -> None:
    """Same loop code: the same output for every session and configuration — the 2026.7.35
    and 2026.6.11 parity sets under every configuration of both, and generated sessions under
    random configurations."""
    blocks: list[dict[str, Any]] = []
    for version in SETS:
        if version == "2026.7.35":
            blocks += [c["settings"]["tools"]["loopDetection"] for c in _configs(version)]
    sessions = list(_sessions("2026.7.35").values())
    if PARITY.is_dir():
        sessions += [load_session(p) for p in sorted((PARITY / "sessions").iterdir())]
    for session in sessions:
        for block in blocks:
            _same_output(session, block)
    rng = random.Random(735)
    for _ in range(60):
        _same_output(random_session(rng), random_block(rng))


# --------------------------------------------------------------------------- the real command


def assert_matches_expected(version: str, name: str, stdout: str) -> int:
    """The README's matching rules on the command's JSON lines; returns the steps compared."""
    expected = [json.loads(line) for line in
                (SETS[version] / "expected" / f"{name}.jsonl").read_text().splitlines()
                if line.strip()]
    actual = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    assert [a["source"] for a in actual] == [e["source"] for e in expected]
    compared = 0
    for exp, act in zip(expected, actual, strict=True):
        where = f"{version} {name}: {exp['source']}"
        assert act["session"] == exp["session"], where
        assert act["engine"] == "openclaw", where
        assert strict_equal(act["first_refusal"], exp["first_refusal"]), where
        assert len(act["steps"]) == len(exp["steps"]), where
        for i, (want, got) in enumerate(zip(exp["steps"], act["steps"], strict=True)):
            for key, value in want.items():
                assert key in got and strict_equal(got[key], value), (
                    f"{where} step {i} {key}: expected {value!r}, got {got.get(key)!r}")
            compared += 1
    return compared


@pytest.mark.parametrize("version", ["2026.9.6", "2026.7.35"])
@pytest.mark.parametrize("via", ["set", "config"])
def test_parity_through_the_cli(version: str, via: str) -> None:
    configs = _configs(version)
    folder = SETS[version]
    steps = 0
    for config in configs:
        args = ["replay", "sessions", "--engine", "openclaw", "--openclaw-version", version,
                "--json"]
        if via == "set":
            for pair in config["set"]:
                args += ["--set", pair]
        else:
            args += ["--config", f"configs/{config['name']}.json"]
        code, stdout, stderr = run_cli(args, cwd=folder)
        assert code == 0, f"{config['name']}: exit {code}\n{stderr}"
        steps += assert_matches_expected(version, config["name"], stdout)
        if config["name"] == "legacy_keys":
            assert "no effect in OpenClaw 2026.9.6" in stderr
    assert steps > 0


def test_python_m_loopscope_replays_2026_9_6() -> None:
    """The exact command of the README, in a fresh process."""
    config = next(c for c in _configs("2026.9.6") if c["name"] == "legacy_keys")
    args = [sys.executable, "-m", "loopscope", "replay", "sessions", "--engine", "openclaw",
            "--openclaw-version", "2026.9.6", "--json"]
    for pair in config["set"]:
        args += ["--set", pair]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(args, cwd=SETS["2026.9.6"], capture_output=True, text=True, env=env,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert assert_matches_expected("2026.9.6", "legacy_keys", done.stdout) > 0
    assert "ignored" in done.stderr


def test_unknown_version_is_bad_usage() -> None:
    code, _, stderr = run_cli(["replay", str(SETS["2026.9.6"] / "sessions"), "--engine",
                               "openclaw", "--openclaw-version", "2026.9.7", "--json"])
    assert code == 2
    assert "2026.6.11" in stderr and "2026.9.6" in stderr
