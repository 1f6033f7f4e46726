"""Seeded random sessions and configurations for the Qwen Code oracle and parity tests.

Sessions mix what Qwen Code's guards look at: tool-call cycles of 1–4 calls (identical runs,
A-B ping-pong, the same call scattered through a prompt), read-like tools, git inspection shell
commands, ``task_list`` (a stateful read tool), ``tool_call`` envelopes and legacy tool names,
arguments that exercise the key (``canonicalizeForHash`` key order, number formatting, invalid
JSON, falsy values), reply text that chants or carries structure, repeated thinking, and
prompts long enough to cross small caps.
"""

from __future__ import annotations

import json
import random
from typing import Any

from loopscope.engines.qwen_code.config import ADAPTIVE, EXPLICIT, QwenConfig
from loopscope.engines.qwen_code.upstream import Constants
from loopscope.formats.builder import SessionBuilder
from loopscope.model import Session

NAMES = ["read_file", "run_shell_command", "list_directory", "read_many_files", "edit",
         "write_file", "grep_search", "search_file_content", "task_list", "tool_call",
         "read_resource", "listener", "", " read_file", "replace", "task"]

ARGS_TEXT = [
    "", "null", "0", "false", "true", "[]", "{}", '""', '"x"', "1", "[1,2]", "{not json",
    "NaN", '{"a":1} x', "1e400", '{"b":1,"2":3,"a":1,"1":4,"B":2,"_":0}',
    '{"a":1,"a":2,"b":3}', '{"n":[100.0,1e21,1e-7,12345678901234567890,-0]}',
    '{"s":"\\ud800 lone \\ud83d\\ude00 \\u2028"}', '{"z":{"y":[{"b":1,"a":2}],"0":"v"}}',
    '{"path":"/tmp/a.txt"}', '{"path":"/tmp/b.txt"}', '{"command":"npm test"}',
    '{"command":"git status"}', '{"command":"git diff HEAD~1"}',
    '{"command":"git -C repo --no-pager diff --stat && git status"}',
    '{"command":"git diff -- src/a.py"}', '{"command":"GIT LS-FILES | wc -l"}',
    '{"command":"git diff main...feature"}', '{"command":"git diff abc1234"}',
    '{"command":"git log"}', '{"command":"git status; npm test"}', '{"command":7}',
    '{"name":"read_file","arguments":{"path":"/x"}}',
    '{"name":"Read_File","arguments":"{\\"path\\":\\"/x\\"}"}', '{"name":3}',
    '{"name":"search_file_content","arguments":{"q":"x"}}',
]

PHRASES = [
    "I will try again. ", "Let me check the file. ", "ok ", "Retrying the build now.\n",
    "😀 emoji loop ", "ab", "x",
    "This is a much longer sentence that the agent keeps writing over and over again, "
    "because it is stuck in a loop and does not notice it at all, and it goes on and on. ",
    "ÄÖÜ ß 日本語 ", "A", "|cell|",
]

STRUCTURE = [
    "```python\n", "```\n", "print('x')\n", "* item\n", "+ item\n", "- item\n", "1. first\n",
    "# Heading\n", "> quote\n", "| a | b |\n", "-----\n", "ABC", "-----", "====", "\n",
]

THOUGHTS = ["I should read the file again.", "  Checking the config  ", "**Plan** read it",
            "I SHOULD READ THE FILE AGAIN.", "thinking " * 30]


def _chant(rng: random.Random) -> str:
    phrase = rng.choice(PHRASES)
    if rng.random() < 0.2:
        phrase = "".join(rng.choice("abc \n😀") for _ in range(rng.randint(1, 40)))
    if rng.random() < 0.1:
        phrase = "".join(rng.choice("abcdefgh ") for _ in range(rng.randint(150, 400)))
    text = phrase * rng.randint(1, 40)
    if rng.random() < 0.3:
        cut = rng.randint(0, len(text))
        text = text[:cut] + rng.choice(STRUCTURE) + text[cut:]
    return text


def _text(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.35:
        return ""
    if roll < 0.65:
        return _chant(rng)
    if roll < 0.85:
        return "".join(rng.choice(STRUCTURE + PHRASES) for _ in range(rng.randint(1, 12)))
    return "".join(f"Unique line {rng.randint(0, 10**6)} about item {n}.\n"
                   for n in range(rng.randint(1, 20)))


def _args(rng: random.Random) -> tuple[Any, str]:
    roll = rng.random()
    if roll < 0.04:
        return None, "json_text"
    if roll < 0.08:
        return rng.choice([{"path": "/x"}, [], {}, "free", 0, {"2": 1, "a": [1.5]}]), "value"
    if roll < 0.7:
        return rng.choice(ARGS_TEXT), "json_text"
    return json.dumps({"path": f"/f{rng.randint(0, 3)}", "n": rng.randint(0, 2)}), "json_text"


GIT_COMMANDS = ["git status", "git diff", "git diff --stat HEAD", "git ls-files",
                "git --no-pager diff HEAD~2..HEAD", "git status && git diff"]


def _cycle(rng: random.Random) -> list[tuple[Any, ...]]:
    """The calls the model cycles through for a while: random ones, or different git
    inspection commands (the always-on shell stagnation check)."""
    if rng.random() < 0.15:
        return [("run_shell_command", json.dumps({"command": c}), "json_text")
                for c in rng.sample(GIT_COMMANDS, rng.randint(2, 4))]
    return [(rng.choice(NAMES), *_args(rng)) for _ in range(rng.randint(1, 4))]


def random_session(rng: random.Random, *, max_turns: int = 70) -> Session:
    b = SessionBuilder()
    if rng.random() < 0.9:
        b.user("start")
    total = rng.randint(3, max_turns)
    calls = _cycle(rng)
    call_no = 0
    made = 0
    thought = rng.choice(THOUGHTS)
    while made < total:
        roll = rng.random()
        if roll < 0.04:
            b.user("next request")
            continue
        if roll < 0.1:
            calls = _cycle(rng)
        if rng.random() < 0.1:
            thought = rng.choice(THOUGHTS)
        turn = b.assistant(_text(rng) if rng.random() < 0.5 else "",
                           thinking=thought if rng.random() < 0.25 else "")
        made += 1
        n_calls = 0 if rng.random() < 0.2 else (1 if rng.random() < 0.7 else rng.randint(2, 5))
        pending = []
        for _ in range(n_calls):
            name, raw, kind = (calls[call_no % len(calls)] if rng.random() < 0.8
                               else (rng.choice(NAMES), *_args(rng)))
            call_no += 1
            cid = f"call_{call_no}"
            b.call(turn, name, raw, kind, id=cid)
            pending.append(cid)
        for cid in pending:
            b.result(cid, "result", "result")
    return b.build(id=f"gen-{rng.randint(0, 10**9)}", source="generated", format="openai_chat")


CONFIGS: dict[str, QwenConfig] = {
    "defaults": QwenConfig(),
    "detection-on": QwenConfig(skip_loop_detection=False),
    "explicit-cap-12": QwenConfig(max_tool_calls_per_turn=12, cap_mode=EXPLICIT),
    "adaptive-cap-4": QwenConfig(max_tool_calls_per_turn=4, cap_mode=ADAPTIVE),
    "cap-off-detection-on": QwenConfig(False, 0, EXPLICIT),
    "what-ifs": QwenConfig(False, 6, ADAPTIVE, Constants(
        tool_call_loop_threshold=3, content_loop_threshold=6, global_duplicate_threshold=4,
        alternating_pattern_cycles=2, file_read_threshold=5, stagnation_threshold=4,
        adaptive_cap_hard_multiplier=3, thought_repeat_threshold=2)),
}
"""The configurations every generated session is replayed under."""
