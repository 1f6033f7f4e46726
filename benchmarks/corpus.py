"""A reproducible synthetic corpus for the benchmark (not a test fixture).

``generate(folder, sessions=2000, seed=7, formats=...)`` writes sessions that look like real
agent work: ordinary edits and reads, identical retries, polls whose output does or does not
change, A/B cycles, user turns in between, and answers of 0.1–20 KB (log-normal, median about
0.85 KB). The same seed always writes the same bytes.

Formats: ``openai_chat`` (request bodies), ``anthropic_messages`` and ``openclaw_session``
(pi JSONL v3), so cold ingest measures more than one importer.
"""

from __future__ import annotations

import argparse
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

FORMATS = ("openai_chat", "anthropic_messages", "openclaw_session")

_WORDS = (  # noqa: SIM905 - a sentence reads better than a list of words
    "build test error warning passed failed compiling module function import return value "
    "config server request response timeout retry file path line column index cache token "
    "session agent tool result output status running finished pending queue worker thread"
).split()


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any]
    answer: str
    is_error: bool = False


@dataclass(frozen=True)
class Turn:
    """One assistant turn: prose (no calls) or a batch; ``user`` turns carry only text."""

    role: str
    text: str
    calls: tuple[Call, ...] = ()


class _Text:
    """Cheap deterministic filler text of a requested size."""

    def __init__(self, rng: random.Random) -> None:
        words = [rng.choice(_WORDS) for _ in range(40_000)]
        self.block = " ".join(words)
        self.rng = rng

    def answer(self) -> str:
        size = int(min(20_000, max(100, math.exp(self.rng.gauss(6.75, 0.9)))))
        start = self.rng.randrange(0, len(self.block) - size)
        return self.block[start:start + size]


def _session_turns(rng: random.Random, text: _Text, target_calls: int) -> list[Turn]:
    turns: list[Turn] = [Turn("user", "Please fix the failing build and report back.")]
    calls = 0
    while calls < target_calls:
        kind = rng.random()
        if kind < 0.45:  # ordinary distinct work
            name = rng.choice(["read_file", "write_file", "list_dir", "grep", "run_tests"])
            call = Call(name, {"path": f"src/m{rng.randrange(400)}.py", "n": rng.randrange(9)},
                        text.answer())
            turns.append(Turn("assistant", "", (call,)))
            calls += 1
        elif kind < 0.55:  # a parallel batch
            batch = tuple(Call(rng.choice(["read_file", "grep"]), {"path": f"src/p{rng.randrange(300)}.py"},
                               text.answer()) for _ in range(rng.randint(2, 4)))
            turns.append(Turn("assistant", "", batch))
            calls += len(batch)
        elif kind < 0.65:  # identical retries, same answer
            call = Call("write_file", {"path": f"src/loop{rng.randrange(50)}.rs", "content": "fn main() {}"},
                        text.answer())
            for _ in range(rng.randint(2, 6)):
                turns.append(Turn("assistant", "", (call,)))
                calls += 1
        elif kind < 0.75:  # a poll whose output changes (or not)
            changing = rng.random() < 0.5
            base = text.answer()
            for i in range(rng.randint(3, 20)):
                answer = f"{base} step {i}" if changing else base
                turns.append(Turn("assistant", "", (Call("process", {"action": "poll", "sessionId": "s1"}, answer),)))
                calls += 1
        elif kind < 0.82:  # an A/B cycle
            a = Call("run_tests", {"suite": "unit"}, "1 failed")
            b = Call("edit_file", {"path": "src/a.rs"}, "1 file changed")
            for _ in range(rng.randint(2, 8)):
                turns.append(Turn("assistant", "", (a,)))
                turns.append(Turn("assistant", "", (b,)))
                calls += 2
        elif kind < 0.86:  # an unknown tool, retried
            for _ in range(rng.randint(1, 5)):
                turns.append(Turn("assistant", "", (Call("browser_open", {"url": "https://example.test"},
                                                         "Tool browser_open not found", True),)))
                calls += 1
        elif kind < 0.93:
            turns.append(Turn("assistant", rng.choice(["Working on it.", "Let me check the logs.",
                                                       "The tests still fail."])))
        else:
            turns.append(Turn("user", rng.choice(["continue", "try again", "what is the status?"])))
    turns.append(Turn("assistant", "Done."))
    return turns


def _openai_chat(turns: list[Turn], sid: int) -> bytes:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    n = 0
    for turn in turns:
        if turn.role == "user":
            messages.append({"role": "user", "content": turn.text})
            continue
        message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
        if turn.calls:
            ids = [f"call_{sid}_{n + i}" for i in range(len(turn.calls))]
            message["tool_calls"] = [
                {"id": cid, "type": "function",
                 "function": {"name": c.name, "arguments": orjson.dumps(c.arguments).decode()}}
                for cid, c in zip(ids, turn.calls, strict=True)]
            messages.append(message)
            for cid, c in zip(ids, turn.calls, strict=True):
                tool: dict[str, Any] = {"role": "tool", "tool_call_id": cid, "content": c.answer}
                if c.is_error:
                    tool["is_error"] = True
                messages.append(tool)
            n += len(turn.calls)
        else:
            messages.append(message)
    return orjson.dumps({"model": "gpt-4o", "messages": messages})


def _anthropic(turns: list[Turn], sid: int) -> bytes:
    messages: list[dict[str, Any]] = []
    n = 0
    for turn in turns:
        if turn.role == "user":
            messages.append({"role": "user", "content": turn.text})
            continue
        blocks: list[dict[str, Any]] = []
        if turn.text:
            blocks.append({"type": "text", "text": turn.text})
        results: list[dict[str, Any]] = []
        for c in turn.calls:
            cid = f"toolu_{sid}_{n}"
            n += 1
            blocks.append({"type": "tool_use", "id": cid, "name": c.name, "input": c.arguments})
            results.append({"type": "tool_result", "tool_use_id": cid,
                            "content": [{"type": "text", "text": c.answer}], "is_error": c.is_error})
        messages.append({"role": "assistant", "content": blocks})
        if results:
            messages.append({"role": "user", "content": results})
    return orjson.dumps({"model": "claude-sonnet-4-5", "system": "You are a coding agent.",
                         "messages": messages})


def _openclaw(turns: list[Turn], sid: int) -> bytes:
    lines = [{"type": "session", "version": 3, "id": f"bench-{sid}", "timestamp": "2026-05-04T08:00:00.000Z",
              "cwd": "/srv/bench"}]
    parent: str | None = None
    entry = 0
    n = 0
    ts = 1777881600000

    def add(obj: dict[str, Any]) -> None:
        nonlocal parent, entry, ts
        entry += 1
        ts += 1000
        eid = f"{sid:04x}{entry:04x}"
        lines.append({"type": "message", "id": eid, "parentId": parent, "timestamp": ts, "message": obj})
        parent = eid

    for turn in turns:
        if turn.role == "user":
            add({"role": "user", "content": [{"type": "text", "text": turn.text}], "timestamp": ts})
            continue
        content: list[dict[str, Any]] = []
        if turn.text:
            content.append({"type": "text", "text": turn.text})
        ids = []
        for c in turn.calls:
            ids.append(f"call_{sid}_{n}")
            content.append({"type": "toolCall", "id": ids[-1], "name": c.name, "arguments": c.arguments})
            n += 1
        add({"role": "assistant", "content": content, "provider": "bench", "model": "m1",
             "stopReason": "toolUse" if turn.calls else "stop", "timestamp": ts})
        for cid, c in zip(ids, turn.calls, strict=True):
            add({"role": "toolResult", "toolCallId": cid, "toolName": c.name,
                 "content": [{"type": "text", "text": c.answer}], "details": {}, "isError": c.is_error,
                 "timestamp": ts})
    return b"\n".join(orjson.dumps(line) for line in lines) + b"\n"


_WRITERS = {"openai_chat": (_openai_chat, ".json"), "anthropic_messages": (_anthropic, ".json"),
            "openclaw_session": (_openclaw, ".jsonl")}


def generate(folder: Path, sessions: int = 2000, seed: int = 7, calls_per_session: int = 50,
             formats: tuple[str, ...] = FORMATS) -> dict[str, int]:
    """Write the corpus; returns ``{"sessions", "calls", "bytes"}``."""
    rng = random.Random(seed)
    text = _Text(rng)
    folder.mkdir(parents=True, exist_ok=True)
    total_calls = total_bytes = 0
    for sid in range(sessions):
        fmt = formats[sid % len(formats)]
        turns = _session_turns(rng, text, max(1, int(rng.gauss(calls_per_session, calls_per_session / 4))))
        writer, ext = _WRITERS[fmt]
        data = writer(turns, sid)
        (folder / f"s{sid:05d}_{fmt}{ext}").write_bytes(data)
        total_calls += sum(len(t.calls) for t in turns)
        total_bytes += len(data)
    return {"sessions": sessions, "calls": total_calls, "bytes": total_bytes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--formats", default=",".join(FORMATS))
    args = parser.parse_args()
    print(generate(args.folder, args.sessions, args.seed, formats=tuple(args.formats.split(","))))


if __name__ == "__main__":
    main()
