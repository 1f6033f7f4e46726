"""The public golden parity set ``../shared/reference/parity/openclaw/``.

Every session × configuration must equal the reference output: ``session``, ``first_refusal``,
the number of steps and, type-strictly, every key of every expected step. Each configuration is
resolved twice: from its ``set`` pairs and from its ``settings`` object (``--config``). Both
the plain replay and the fast path are checked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.engines.openclaw._openclaw_helpers import PARITY, load_session

from loopscope.engines.openclaw import ENGINE, OpenClawConfig

if not PARITY.is_dir():
    pytest.skip(f"parity set not found at {PARITY}", allow_module_level=True)

CONFIGS: list[dict[str, Any]] = json.loads((PARITY / "configs.json").read_text())["configs"]
SESSION_FILES = sorted((PARITY / "sessions").iterdir())


def _pairs(config: dict[str, Any]) -> list[tuple[str, str]]:
    return [(key, value) for key, _, value in (item.partition("=") for item in config["set"])]


def strict_equal(a: Any, b: Any) -> bool:
    """JSON equality where ``1``, ``1.0`` and ``true`` differ."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@pytest.fixture(scope="module")
def sessions() -> dict[str, Any]:
    return {path.name: load_session(path) for path in SESSION_FILES}


@pytest.fixture(scope="module")
def prepared(sessions: dict[str, Any]) -> dict[str, Any]:
    return {name: ENGINE.prepare(s) for name, s in sessions.items()}


def _expected(name: str) -> dict[str, dict[str, Any]]:
    out = {}
    for line in (PARITY / "expected" / f"{name}.jsonl").read_text().splitlines():
        if line.strip():
            obj = json.loads(line)
            out[Path(obj["source"]).name.split("#")[0]] = obj
    return out


def _compare(actual: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    problems = []
    if actual["session"] != expected["session"]:
        problems.append(f"session {actual['session']!r} != {expected['session']!r}")
    if not strict_equal(actual["first_refusal"], expected["first_refusal"]):
        problems.append(f"first_refusal {actual['first_refusal']} != {expected['first_refusal']}")
    if len(actual["steps"]) != len(expected["steps"]):
        problems.append(f"{len(actual['steps'])} steps != {len(expected['steps'])}")
        return problems
    for n, (got, want) in enumerate(zip(actual["steps"], expected["steps"], strict=True)):
        for key, value in want.items():
            if key not in got or not strict_equal(got[key], value):
                problems.append(f"step {n} {key}: {got.get(key)!r} != {value!r}")
    return problems


def test_parity_set_shape() -> None:
    assert len(SESSION_FILES) == 40
    assert len(CONFIGS) == 11


@pytest.mark.parametrize("config", CONFIGS, ids=[c["name"] for c in CONFIGS])
@pytest.mark.parametrize("source", ["set", "settings"])
def test_parity(config: dict[str, Any], source: str, sessions: dict[str, Any],
                prepared: dict[str, Any]) -> None:
    if source == "set":
        resolution = ENGINE.resolve_config(None, _pairs(config))
    else:
        resolution = ENGINE.resolve_config(config["settings"], ())
    cfg: OpenClawConfig = resolution.config
    assert cfg.effective() == config["effective"]
    if config["name"] == "misordered":
        assert any("must be lower than" in w for w in resolution.warnings)
    expected = _expected(config["name"])
    assert sorted(expected) == [p.name for p in SESSION_FILES]
    failures: list[str] = []
    for path in SESSION_FILES:
        plain = ENGINE.replay(sessions[path.name], cfg).to_json()
        fast = ENGINE.run(prepared[path.name], cfg).to_json()
        assert fast == plain, f"{path.name}: fast path differs from replay"
        for problem in _compare(plain, expected[path.name]):
            failures.append(f"{path.name}: {problem}")
    assert not failures, "\n".join(failures[:40])
