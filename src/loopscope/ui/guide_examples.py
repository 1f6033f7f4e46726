"""Tiny built-in sessions for the Guide page, written as OpenClaw session JSONL so both engines
read them (compactions included). Pure: builds text, no UI imports."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

Call = tuple[str, dict[str, Any], str]
"""(tool, arguments, answer); an answer starting with ``ERROR:`` is recorded as an error."""


@dataclass(frozen=True)
class Example:
    key: str
    engine: str
    title: str
    what: str
    """The detector in plain words."""
    story: str
    """What the example session does."""
    turns: Sequence[Any]
    """Each item: a list of calls (one assistant turn), a ``str`` (a prose reply),
    ``("user", text)`` or ``("compaction", summary)``."""
    settings: dict[str, Any] = field(default_factory=dict)
    """Control values (``engine.key`` → value) the example runs with, on top of the defaults."""


def session_jsonl(example: Example) -> str:
    """The example as an OpenClaw v3 session file."""
    lines: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": f"guide-{example.key}",
         "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/guide"}
    ]
    parent: str | None = None
    n = 0

    def add(entry: dict[str, Any]) -> None:
        nonlocal parent, n
        n += 1
        entry_id = f"e{n:04d}"
        entry = {**entry, "id": entry_id, "parentId": parent,
                 "timestamp": f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}.000Z"}
        parent = entry_id
        lines.append(entry)

    add({"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": "Please fix the failing build."}]}})
    call_no = 0
    for turn in example.turns:
        if isinstance(turn, str):
            add({"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": turn}],
                                                "stopReason": "stop"}})
        elif isinstance(turn, tuple) and turn[0] == "user":
            add({"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": turn[1]}]}})
        elif isinstance(turn, tuple) and turn[0] == "compaction":
            add({"type": "compaction", "summary": turn[1], "firstKeptEntryId": parent, "tokensBefore": 150000})
        else:
            content = []
            results = []
            for tool, args, answer in turn:
                call_no += 1
                cid = f"call_{call_no:03d}"
                content.append({"type": "toolCall", "id": cid, "name": tool, "arguments": args})
                is_error = answer.startswith("ERROR:")
                text = answer[len("ERROR:"):].strip() if is_error else answer
                results.append({"role": "toolResult", "toolCallId": cid, "toolName": tool,
                                "content": [{"type": "text", "text": text}], "isError": is_error})
            add({"type": "message", "message": {"role": "assistant", "content": content, "stopReason": "toolUse"}})
            for r in results:
                add({"type": "message", "message": r})
    return "\n".join(json.dumps(line, separators=(",", ":")) for line in lines) + "\n"


W = ("write_file", {"path": "src/app.py", "content": "print('hi')"}, "Wrote 11 bytes to src/app.py")

EXAMPLES: tuple[Example, ...] = (
    Example(
        "gglib-loop", "gglib", "gglib: the same batch with the same answer",
        "gglib remembers the last batch of tool calls. Each time the exact same batch comes back "
        "and gets the exact same answers, it counts a strike. Batches that change things may "
        "repeat twice; the third identical repeat is refused.",
        "The agent writes the same file with the same content three times.",
        [[W], [W], [W]],
    ),
    Example(
        "gglib-rescue", "gglib", "gglib: a changing answer keeps a run alive (up to the ceiling)",
        "If the answer changes, the repeat is not a strike: the agent may be making progress. "
        "Such a run is still capped by the ceiling (15 by default). Anything that drifts in the "
        "output, such as a timing, counts as a change.",
        "The agent reruns the tests; only the timing in the output changes.",
        [[("run_in_terminal", {"cmd": "pytest"}, f"1 failed in 0.{30 + i}s")] for i in range(5)],
    ),
    Example(
        "gglib-observation", "gglib", "gglib: read-only tools get a larger allowance",
        "Batches whose every tool looks read-only (read_file, list_dir, get_terminal_output, … — "
        "the 'read-only tool patterns') may repeat with the same answer up to the read-only "
        "allowance, 15 by default. Here it is set to 3 so the example stays short.",
        "The agent polls a terminal whose output never changes.",
        [[("get_terminal_output", {"id": "t1"}, "Compiling… (no new output)")] for _ in range(5)],
        {"gglib.max_observation_steps": 3},
    ),
    Example(
        "gglib-cycle", "gglib", "gglib: cycles escape",
        "A run is broken as soon as a different batch comes in, so A, B, A, B … never builds up "
        "strikes, even when every answer is the same. This is a known limitation.",
        "The agent alternates between running the tests and reading the same file.",
        [[("run_tests", {}, "1 failed")] if i % 2 == 0 else [("read_file", {"path": "a.py"}, "x = 1")]
         for i in range(8)],
    ),
    Example(
        "gglib-stagnation", "gglib", "gglib: the same prose reply, again and again",
        "Replies without tool calls are compared exactly. More than 5 identical replies among the "
        "last 20 is stagnation.",
        "The assistant keeps answering with the same sentence.",
        ["I cannot proceed further."] * 6,
    ),
    Example(
        "oc-generic", "openclaw", "OpenClaw: repeated call (generic_repeat)",
        "OpenClaw warns when the same call (same tool, same input) keeps appearing in its recent "
        "history, and blocks it when it also returns the same result many times in a row. Here "
        "the levels are warn 3 / block 5 so the example stays short (defaults 10 / 20).",
        "The agent reads the same file six times and gets the same content.",
        [[("read", {"path": "config.toml"}, "timeout = 30")] for _ in range(6)],
        {"openclaw.warningThreshold": 3, "openclaw.criticalThreshold": 5,
         "openclaw.globalCircuitBreakerThreshold": 7},
    ),
    Example(
        "oc-poll", "openclaw", "OpenClaw: polling without progress (known_poll_no_progress)",
        "A known status poll (process poll/log, command_status) whose answer does not change is "
        "counted on its own: it warns and then blocks at the same levels.",
        "The agent polls a background process that prints nothing new.",
        [[("process", {"action": "poll", "sessionId": "s1"}, "still running")] for _ in range(6)],
        {"openclaw.warningThreshold": 3, "openclaw.criticalThreshold": 5,
         "openclaw.globalCircuitBreakerThreshold": 7},
    ),
    Example(
        "oc-pingpong", "openclaw", "OpenClaw: back and forth (ping_pong)",
        "An exact A, B, A, B … alternation between two calls is counted as one pattern. It "
        "warns on the alternation alone and blocks when both sides keep returning the same "
        "results.",
        "The agent alternates between reading a file and listing a folder, getting the same "
        "answers each time.",
        [[("read", {"path": "a.txt"}, "alpha")] if i % 2 == 0 else [("ls", {"path": "."}, "a.txt b.txt")]
         for i in range(6)],
        {"openclaw.warningThreshold": 3, "openclaw.criticalThreshold": 5,
         "openclaw.globalCircuitBreakerThreshold": 7},
    ),
    Example(
        "oc-unknown", "openclaw", "OpenClaw: calling a tool that does not exist (unknown_tool_repeat)",
        "When the same tool keeps failing with 'unknown tool' / 'not found', OpenClaw blocks it "
        "after a number of tries (10 by default; 3 here). There is no switch for this detector.",
        "The agent keeps calling a tool that is not installed.",
        [[("himalaya", {"folder": "INBOX"}, "ERROR: Tool himalaya not found")] for _ in range(4)],
        {"openclaw.unknownToolThreshold": 3},
    ),
    Example(
        "oc-breaker", "openclaw", "OpenClaw: the circuit breaker (global_circuit_breaker)",
        "A hard limit on the same call returning the same result, which applies even when the "
        "detector switches are off. Here the repeated-call detector is off and the hard stop is 4.",
        "The agent runs the same command five times with the same output.",
        [[("exec", {"command": "make"}, "make: *** [all] Error 1")] for _ in range(5)],
        {"openclaw.detectors.genericRepeat": False, "openclaw.warningThreshold": 2,
         "openclaw.criticalThreshold": 3, "openclaw.globalCircuitBreakerThreshold": 4},
    ),
    Example(
        "oc-compaction", "openclaw", "OpenClaw: looping on after a compaction (post_compaction_guard)",
        "After the conversation is compacted, OpenClaw watches the next few calls (3 by "
        "default). If they are all the same call with the same result, the run is stopped.",
        "The conversation is compacted; then the agent repeats one command three times.",
        [[("exec", {"command": "cat status"}, "pending")], ("compaction", "Earlier work summarised."),
         [("exec", {"command": "cat status"}, "pending")], [("exec", {"command": "cat status"}, "pending")],
         [("exec", {"command": "cat status"}, "pending")]],
    ),
)
