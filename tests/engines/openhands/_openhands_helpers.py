"""Shared helpers for the OpenHands engine tests: the parity set's paths, sessions and
configurations, and strict JSON comparison."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from loopscope.engines.openhands import ENGINE, OpenHandsConfig
from loopscope.formats import load_file
from loopscope.model import Session

REPO_ROOT = Path(__file__).resolve().parents[3]
SHARED = Path(os.environ.get("LOOPSCOPE_SHARED", REPO_ROOT.parent / "shared"))
PARITY = SHARED / "reference" / "parity" / "openhands"
CORPUS = Path(os.environ.get("LOOPSCOPE_CORPUS", SHARED / "corpus"))


def parity_configs() -> list[dict[str, Any]]:
    configs: list[dict[str, Any]] = json.loads((PARITY / "configs.json").read_text())["configs"]
    return configs


def set_pairs(config: dict[str, Any]) -> list[tuple[str, str]]:
    """A parity configuration's ``--set KEY=VALUE`` entries as pairs."""
    return [(key, value) for key, _, value in (item.partition("=") for item in config["set"])]


def config_of(config: dict[str, Any]) -> OpenHandsConfig:
    """A parity configuration resolved from its ``set`` entries, as ``--set`` does."""
    resolved: OpenHandsConfig = ENGINE.resolve_config(None, set_pairs(config)).config
    return resolved


def session_key(source: str) -> str:
    """``x.json`` or ``x.jsonl#n``: how the parity README matches sessions."""
    return Path(source).name


def load_sessions() -> dict[str, Session]:
    """Every session of the parity set by :func:`session_key`, in sorted file order."""
    out: dict[str, Session] = {}
    for path in sorted((PARITY / "sessions").iterdir()):
        imported = load_file(str(path))
        assert not [p for p in imported.problems if p.severity == "error"], path
        for session in imported.sessions:
            out[session_key(session.source)] = session
    return out


def expected(name: str) -> dict[str, dict[str, Any]]:
    """``expected/<name>.jsonl`` by session key."""
    out: dict[str, dict[str, Any]] = {}
    for line in (PARITY / "expected" / f"{name}.jsonl").read_text().splitlines():
        if line.strip():
            obj = json.loads(line)
            out[session_key(obj["source"])] = obj
    return out


def strict_equal(a: Any, b: Any) -> bool:
    """JSON equality where ``1``, ``1.0`` and ``true`` differ."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


COMPARED_STEP_KEYS = ("turn", "call", "verdict", "detector", "count", "after_divergence")
"""What the parity README compares per step (``tools``, ``signature``, ``scan`` and ``message``
are informative; they are checked separately, as loopscope writes them too)."""


def compare(actual: dict[str, Any], want: dict[str, Any], *, informative: bool = True
            ) -> list[str]:
    """The README's matching rules (plus, with ``informative``, every other expected key)."""
    problems = []
    if actual["session"] != want["session"]:
        problems.append(f"session {actual['session']!r} != {want['session']!r}")
    if not strict_equal(actual["first_refusal"], want["first_refusal"]):
        problems.append(f"first_refusal {actual['first_refusal']} != {want['first_refusal']}")
    if len(actual["steps"]) != len(want["steps"]):
        problems.append(f"{len(actual['steps'])} steps != {len(want['steps'])}")
        return problems
    for n, (got, expected_step) in enumerate(zip(actual["steps"], want["steps"], strict=True)):
        keys = list(expected_step) if informative else list(COMPARED_STEP_KEYS)
        if informative and set(got) != set(expected_step):
            problems.append(f"step {n} keys {sorted(got)} != {sorted(expected_step)}")
        for key in keys:
            if key not in got or not strict_equal(got[key], expected_step[key]):
                problems.append(f"step {n} {key}: {got.get(key)!r} != {expected_step[key]!r}")
    return problems


def chat(*turns: Any, thought: str = "", first_user: bool = True) -> Session:
    """A session built in code, as an importer would build it.

    Each turn is a reply text (``str``), ``("user", text)``, ``("compaction",)`` or a list of
    calls ``(name, arguments, result)`` where arguments is the recorded argument text (or a
    value), and result is ``None`` (no result), a text, or ``("error", text)``. Tool-call
    turns carry ``thought`` as their text.
    """
    from loopscope.formats.builder import SessionBuilder

    builder = SessionBuilder()
    if first_user:
        builder.user("Please fix the build.")
    n = 0
    for turn in turns:
        if isinstance(turn, str):
            builder.assistant(turn, turn)
        elif isinstance(turn, tuple) and turn[0] == "user":
            builder.user(turn[1])
        elif isinstance(turn, tuple) and turn[0] == "compaction":
            builder.compaction("summary")
        else:
            draft = builder.assistant(thought, thought)
            results = []
            for name, arguments, result in turn:
                n += 1
                kind = "json_text" if isinstance(arguments, str) else "value"
                builder.call(draft, name, arguments, kind, id=f"call_{n}")
                if result is not None:
                    results.append((f"call_{n}", result))
            for call_id, result in results:
                if isinstance(result, tuple):
                    builder.result(call_id, result[1], result[1], is_error=True)
                else:
                    builder.result(call_id, result, result)
    return builder.build(id="chat", source="chat.json", format="openai_chat")


def verdicts(replay: Any) -> list[tuple[str, str | None, int | None]]:
    return [(s.verdict, s.detector, s.count) for s in replay.steps]
