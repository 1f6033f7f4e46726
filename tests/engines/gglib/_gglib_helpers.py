"""Shared builders for the gglib engine tests: ``A`` / ``AM`` an assistant batch, ``T`` a tool
answer, ``P`` a prose reply, ``U`` / ``S`` a user / system message, ``W`` a ``write_file`` batch."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from loopscope.engines.gglib import (
    GglibConfig,
    ScanOutcome,
    replay_messages,
    scan_history,
)

REPO_ROOT = Path(__file__).resolve().parents[3]
SHARED = Path(os.environ.get("LOOPSCOPE_SHARED", REPO_ROOT.parent / "shared"))
VECTORS = SHARED / "reference" / "gglib_vectors.json"
PARITY = SHARED / "reference" / "parity" / "gglib"
SAMPLES = REPO_ROOT / "sample_transcripts"

DEF = GglibConfig()


def A(name: str, args: Any = "{}", id: Any = "c1", content: Any = None) -> dict[str, Any]:
    """``A(name, args)#id``: one assistant message with one call; ``args`` is the wire value."""
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": id, "type": "function", "function": {"name": name, "arguments": args}}
        ],
    }


def AM(*calls: tuple[str, Any, Any], content: Any = None) -> dict[str, Any]:
    """``A[n1 a1 #i1, n2 a2 #i2, …]``: several calls in one assistant message."""
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for n, a, i in calls
        ],
    }


def T(id: Any, x: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": id, "content": x}


def P(x: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": x}


def U(x: str = "hi") -> dict[str, Any]:
    return {"role": "user", "content": x}


def S(x: str = "be helpful") -> dict[str, Any]:
    return {"role": "system", "content": x}


def W(id: str = "c1") -> dict[str, Any]:
    return A("write_file", '{"path":"a.rs"}', id)


def scan(messages: list[Any], config: GglibConfig = DEF) -> ScanOutcome:
    """``scan_history`` plus a consistency check with the replay's first refusal."""
    out = scan_history(messages, config)
    steps, first = replay_messages(messages, config)
    if out.verdict == "pass":
        assert first is None, (out, first)
    else:
        assert first is not None and first.detector == out.verdict, (out, first)
        step = next(s for s in steps if s.verdict == "refuse")
        if out.verdict == "loop":
            assert step.signature == out.signature
        else:
            assert step.count == out.count
            assert step.extra["max_steps"] == out.max_steps
    return out


def first_refusal_turn(messages: list[Any], config: GglibConfig = DEF) -> int | None:
    _, first = replay_messages(messages, config)
    return None if first is None else first.turn


def load_json(path: Path) -> Any:
    from loopscope.jsonrules.serde_json import loads_file_level

    return loads_file_level(path.read_bytes())


def jsonl(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def prefix_property(messages: list[Any], config: GglibConfig) -> list[str]:
    """The prefix property: each step up to the first refusal agrees with upstream's
    ``scan_history`` on its transcript prefix (the shadow replay is the proxy walk, extended)."""
    steps, _ = replay_messages(messages, config)
    ends: list[int] = []  # message index just past each assistant turn and its tool messages
    for i, m in enumerate(messages):
        if isinstance(m, dict) and m.get("role") == "assistant":
            j = i + 1
            while j < len(messages) and isinstance(messages[j], dict) and messages[j].get("role") == "tool":
                j += 1
            ends.append(j)
    assert len(ends) == len(steps)
    problems = []
    for step, end in zip(steps, ends, strict=True):
        out = scan_history(messages[:end], config)
        refused = step.verdict == "refuse"
        if refused != (out.verdict != "pass"):
            problems.append(f"turn {step.turn}: verdict {step.verdict} vs {out.verdict}")
        elif refused:
            if out.verdict != step.detector:
                problems.append(f"turn {step.turn}: detector {step.detector} vs {out.verdict}")
            elif out.verdict == "loop" and out.signature != step.signature:
                problems.append(f"turn {step.turn}: signature")
            elif out.verdict == "stagnation" and (
                out.count != step.count or out.max_steps != step.extra["max_steps"]
            ):
                problems.append(f"turn {step.turn}: stagnation count")
        readings = (step.extra["identical"], step.extra["not_evaluated"], step.extra["rescued"])
        if readings != (out.identical_result_repeat, out.repeat_not_evaluated, out.repeat_rescued):
            problems.append(f"turn {step.turn}: readings {readings} vs {out}")
        if refused:
            break
    return problems
