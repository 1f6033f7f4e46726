"""The public golden parity set ``../shared/reference/parity/gglib/``.

Every session × configuration must equal the reference output: ``first_refusal``, the number of
steps and, type-strictly, every key of every expected step. Each configuration is resolved twice,
from its ``set`` pairs and from its ``settings`` object. The prefix property (each step up to
the first refusal agrees with upstream's ``scan_history`` on the transcript up to it) is checked
on every session and configuration as well.

Sessions are read by :func:`session_messages`. It reads the body's ``messages`` with the
file-level serde loader; :func:`session_messages_via_importer` is the same through
``loopscope.formats.load_file`` + ``Session.chat_view()``, used by the importer test below once
the importer exists.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.engines.gglib._gglib_helpers import PARITY, jsonl, load_json, prefix_property

from loopscope.engines.gglib import (
    ENGINE,
    STEP_FIELDS,
    GglibConfig,
    prepare_messages,
    resolve_config,
)
from loopscope.engines.gglib.engine import PreparedSession

if not (PARITY / "configs.json").is_file():
    pytest.skip(f"gglib parity set not found at {PARITY}", allow_module_level=True)

CONFIGS: list[dict[str, Any]] = load_json(PARITY / "configs.json")["configs"]
SESSION_FILES = sorted((PARITY / "sessions").glob("*.json"))


def session_messages(path: Path) -> list[Any]:
    """The OpenAI-chat messages of one parity body (file-level serde number rules)."""
    body = load_json(path)
    messages = body.get("messages", [])
    assert isinstance(messages, list)
    return messages


def session_messages_via_importer(path: Path) -> tuple[Any, list[Any]]:
    """``(session, chat_view)`` through the importer; skips when it does not exist yet."""
    formats = pytest.importorskip("loopscope.formats")
    load_file = getattr(formats, "load_file", None)
    if load_file is None:
        pytest.skip("loopscope.formats.load_file is not available yet")
    result = load_file(path)
    sessions = result.sessions
    assert len(sessions) == 1, path
    return sessions[0], sessions[0].chat_view()


def resolve(cfg: dict[str, Any], how: str) -> GglibConfig:
    if how == "set":
        pairs = [tuple(item.split("=", 1)) for item in cfg["set"]]
        res = resolve_config(None, pairs)
    else:
        res = resolve_config(cfg["settings"], [])
    eff = cfg["effective"]
    c = res.config
    assert c.max_repeated_batch_steps == eff["max_repeated_batch_steps"]
    assert c.max_observation_steps == eff["max_observation_steps"]
    assert c.max_stagnation_steps == eff["max_stagnation_steps"]
    if eff["observation_tools"] == "default":
        assert c.uses_default_tools
    else:
        assert list(c.observation_tools) == eff["observation_tools"]
    # One clamp warning for obs0, none for the others.
    assert len(res.warnings) == (1 if cfg["name"] == "obs0" else 0), res.warnings
    return c


def same(a: Any, b: Any) -> bool:
    """Type-strict JSON equality (1, 1.0 and true differ)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def compare(got: dict[str, Any], want: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    if got["session"] != want["session"]:
        problems.append(f"session {got['session']!r} != {want['session']!r}")
    if not same(got["first_refusal"], want["first_refusal"]):
        problems.append(f"first_refusal {got['first_refusal']} != {want['first_refusal']}")
    if len(got["steps"]) != len(want["steps"]):
        problems.append(f"{len(got['steps'])} steps != {len(want['steps'])}")
        return problems
    for g, w in zip(got["steps"], want["steps"], strict=True):
        for key, value in w.items():
            if key not in g or not same(g[key], value):
                problems.append(f"turn {w.get('turn')}: {key} {g.get(key)!r} != {value!r}")
    return problems


EXPECTED = {c["name"]: {e["source"]: e for e in jsonl(PARITY / "expected" / f"{c['name']}.jsonl")} for c in CONFIGS}


def test_the_set_is_complete() -> None:
    assert len(CONFIGS) == 8
    assert len(SESSION_FILES) == 40
    for name, by_source in EXPECTED.items():
        assert sorted(by_source) == [f"sessions/{p.name}" for p in SESSION_FILES], name


@pytest.mark.parametrize("how", ["set", "settings"])
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c["name"])
def test_parity(cfg: dict[str, Any], how: str) -> None:
    config = resolve(cfg, how)
    failures: dict[str, list[str]] = {}
    matched = 0
    for path in SESSION_FILES:
        source = f"sessions/{path.name}"
        want = EXPECTED[cfg["name"]][source]
        messages = session_messages(path)
        reference = ENGINE.replay_messages(messages, config, session=path.stem, source=source)
        fast = ENGINE.run(
            PreparedSession(path.stem, source, "openai_chat", prepare_messages(messages)), config
        )
        assert fast == reference, source
        got = reference.to_json()
        for step in got["steps"]:
            assert tuple(step) == STEP_FIELDS
        problems = compare(got, want)
        if problems:
            failures[source] = problems[:5]
        else:
            matched += 1
    assert not failures, failures
    assert matched == len(SESSION_FILES)


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c["name"])
def test_prefix_property_on_the_golden_set(cfg: dict[str, Any]) -> None:
    config = resolve(cfg, "set")
    failures = {}
    for path in SESSION_FILES:
        problems = prefix_property(session_messages(path), config)
        if problems:
            failures[path.name] = problems[:3]
    assert not failures, failures


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c["name"])
def test_parity_through_the_importer(cfg: dict[str, Any]) -> None:
    """The same comparison through ``load_file`` and ``Session.chat_view()`` (skips until then)."""
    config = resolve(cfg, "set")
    failures = {}
    for path in SESSION_FILES:
        session, view = session_messages_via_importer(path)
        assert view == session_messages(path), path.name
        replay = ENGINE.run(ENGINE.prepare(session), config)
        assert replay == ENGINE.replay(session, config)
        got = replay.to_json()
        assert got["source"].replace("\\", "/").endswith(f"sessions/{path.name}")
        problems = compare(got, EXPECTED[cfg["name"]][f"sessions/{path.name}"])
        if problems:
            failures[path.name] = problems[:5]
    assert not failures, failures
