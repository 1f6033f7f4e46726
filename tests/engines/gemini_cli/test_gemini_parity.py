"""The public golden parity set ``../shared/reference/parity/gemini-cli/`` (the output of the real
``@google/gemini-cli-core@0.61.0`` detector).

Every session × configuration must equal the expected output: ``session``, ``first_refusal``,
the number of steps and, type-strictly, ``turn, call, verdict, detector, count, signature,
after_divergence`` of every step. The informative fields (``tools, kind, prompt, intervention,
detail, detections, pieces``) are compared too. Each configuration is resolved twice: from its
``set`` pairs and from its ``settings`` object (a Gemini CLI ``settings.json`` fragment). Both
the plain replay and the fast path are checked.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from loopscope.engines.gemini_cli.engine import ENGINE
from loopscope.formats import load_file

REPO_ROOT = Path(__file__).resolve().parents[3]
SHARED = Path(os.environ.get("LOOPSCOPE_SHARED", REPO_ROOT.parent / "shared"))
PARITY = SHARED / "reference" / "parity" / "gemini-cli"

if not PARITY.is_dir():
    pytest.skip(f"parity set not found at {PARITY}", allow_module_level=True)

CONFIGS: list[dict[str, Any]] = json.loads((PARITY / "configs.json").read_text())["configs"]
SESSION_FILES = sorted((PARITY / "sessions").iterdir())
COMPARED = ("turn", "call", "verdict", "detector", "count", "signature", "after_divergence")
INFORMATIVE = ("tools", "kind", "prompt", "intervention", "detail", "detections", "pieces")


def strict_equal(a: Any, b: Any) -> bool:
    """JSON equality where ``1``, ``1.0`` and ``true`` differ."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def compare(actual: dict[str, Any], expected: dict[str, Any],
            keys: tuple[str, ...] = COMPARED + INFORMATIVE) -> list[str]:
    problems = []
    for key in ("session", "format", "engine", "first_refusal"):
        if not strict_equal(actual[key], expected[key]):
            problems.append(f"{key} {actual[key]!r} != {expected[key]!r}")
    if len(actual["steps"]) != len(expected["steps"]):
        return [*problems, f"{len(actual['steps'])} steps != {len(expected['steps'])}"]
    for n, (got, want) in enumerate(zip(actual["steps"], expected["steps"], strict=True)):
        for key in keys:
            if (key in want or key in got) and not strict_equal(got.get(key), want.get(key)):
                problems.append(f"step {n} {key}: {got.get(key)!r} != {want.get(key)!r}")
    return problems


def expected_lines(name: str) -> dict[str, dict[str, Any]]:
    out = {}
    for line in (PARITY / "expected" / f"{name}.jsonl").read_text().splitlines():
        if line.strip():
            obj = json.loads(line)
            out[obj["source"]] = obj
    return out


@pytest.fixture(scope="module")
def sessions() -> dict[str, Any]:
    out = {}
    for path in SESSION_FILES:
        for session in load_file(str(path)).sessions:
            out["sessions/" + session.source.split("sessions/", 1)[1]] = session
    return out


def test_parity_set_shape(sessions: dict[str, Any]) -> None:
    assert len(SESSION_FILES) == 34
    assert len(sessions) == 40
    assert [c["name"] for c in CONFIGS] == ["defaults", "disabled"]


@pytest.mark.parametrize("config", CONFIGS, ids=[c["name"] for c in CONFIGS])
@pytest.mark.parametrize("source", ["set", "settings"])
def test_parity(config: dict[str, Any], source: str, sessions: dict[str, Any]) -> None:
    if source == "set":
        pairs = [tuple(item.split("=", 1)) for item in config["set"]]
        resolution = ENGINE.resolve_config(None, pairs)  # type: ignore[arg-type]
    else:
        resolution = ENGINE.resolve_config(ENGINE.settings_from_document(config["settings"]), ())
    cfg = resolution.config
    assert resolution.warnings == ()
    effective = config["effective"]
    assert cfg.enabled is effective["enabled"]
    values = ENGINE.values(cfg)
    for name in ("TOOL_CALL_LOOP_THRESHOLD", "CONTENT_LOOP_THRESHOLD", "CONTENT_CHUNK_SIZE",
                 "MAX_HISTORY_LENGTH"):
        assert values[name] == effective["constants"][name]
    expected = expected_lines(config["name"])
    assert sorted(expected) == sorted(sessions)
    failures: list[str] = []
    for key, session in sessions.items():
        plain = ENGINE.replay(session, cfg).to_json()
        fast = ENGINE.run(ENGINE.prepare(session), cfg).to_json()
        assert fast == plain, f"{key}: fast path differs from replay"
        failures.extend(f"{key}: {p}" for p in compare(plain, expected[key]))
    assert not failures, "\n".join(failures[:40])


def test_expected_refusals_are_as_documented() -> None:
    """The README's figures: under defaults 21 sessions refuse, 13 first on a tool-call loop
    and 8 on a content loop; under disabled nothing refuses."""
    firsts = [o["first_refusal"] for o in expected_lines("defaults").values()]
    detectors = [f["detector"] for f in firsts if f is not None]
    assert detectors.count("consecutive_identical_tool_calls") == 13
    assert detectors.count("chanting_identical_sentences") == 8
    assert all(o["first_refusal"] is None for o in expected_lines("disabled").values())
