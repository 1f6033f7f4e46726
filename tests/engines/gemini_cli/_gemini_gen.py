"""Seeded random sessions and configurations for the Gemini CLI property and oracle tests.

Sessions mix what the two detectors look at: tool-call cycles of 1–6 calls repeated a random
number of times (parallel calls included), arguments that exercise ``JSON.stringify`` (key
order with array-index keys, number formatting, lone surrogates, falsy values, invalid JSON),
names that JavaScript trims differently from Python, and reply text that chants (short and long
periods, astral characters and lone surrogate halves, windows that cut a surrogate pair) or
carries structure (fences, lists, headings, tables, quotes, dividers) — across several prompts.
"""

from __future__ import annotations

import json
import random
from typing import Any

from loopscope.engines.gemini_cli.config import GeminiConfig
from loopscope.formats.builder import SessionBuilder
from loopscope.model import Session

NAMES = ["read_file", "run_shell_command", "list_directory", " read_file", "read_file\u3000",
         "\tglob\n", "", " ", "\u0085grep", "edit\u200b", "search_file_content", "\ud83dtool",
         "write_file"]

ARGS_TEXT = [
    "", "null", "0", "-0", "false", "true", "[]", "{}", '""', '"x"', "0.0", "1", "[1,2]",
    "{not json", "NaN", "Infinity", "\ufeff{}", "{'a': 1}", '{"a":1} x', "1e400", "-1e400",
    '{"b":1,"2":3,"a":1,"1":4}', '{"01":1,"-1":2,"4294967295":3,"4294967294":4,"10":5,"9":6}',
    '{"a":1,"a":2,"b":3}', '{"n":[100.0,1e21,1e-7,0.0000001,1e16,12345678901234567890,'
    '9007199254740993,-0,-0.0,5e-324,0.1]}',
    '{"s":"\\ud800 lone \\udc00 \\ud83d\\ude00 \\u2028 \\u007f \\/ \\b\\f\\n\\r\\t\\u0001"}',
    '{"path":"/tmp/a.txt"}', '{"path":"/tmp/b.txt"}', '{"command":"npm test"}',
    '{"deep":{"z":[{"y":1,"0":2}],"k":"v"}}', '"   "', "[0]", '{"__proto__":1,"x":2}',
]

PHRASES = [
    "I will try again. ", "Let me check the file. ", "ok ", "Retrying the build now.\n",
    "😀 emoji loop ", "\ud83d lone high ", "\ude00 lone low ", "ab", "x",
    "This is a much longer sentence that the agent keeps writing over and over again, "
    "because it is stuck in a loop and does not notice it. ",
    "Step: check config, run tests, read logs, fix code, run tests again, and repeat all "
    "of that until something changes; ",
    "ÄÖÜ ß 日本語 ", "tab\tand\u00a0nbsp ", "A", "|cell|", "==== ",
]

STRUCTURE = [
    "```python\n", "```\n", "print('x')\n", "* item\n", "+ item\n", "- item\n", "1. first\n",
    "12. twelfth\n", "# Heading\n", "## Sub\n", "> quote\n", "| a | b |\n", "|---|---|\n",
    "-----\n", "+++\n", "ABC", "2026", "DONE.", "-----", "====", "\u2500\u2500\u2500",
    "   * indented item\n", "\n", "\r\n", "text with ``` inline ``` fences\n", "#nospace\n",
    ">noquote\n", "\u2028line sep\n", "  \n", "\u3000* ideographic-space item\n",
]


def collision_text(size: int, repeats: int, first: str = "\ud800", second: str = "\ud801",
                   filler: str = "y") -> str:
    """Text whose repeated windows hash like an earlier, different window: windows that differ
    only in a lone surrogate half share a hash (both halves hash as U+FFFD), so Gemini CLI
    records none of the repeats of the second one."""
    return first + filler * (size - 1) + "Q" + (second + filler * (size - 1)) * repeats


def _chant(rng: random.Random) -> str:
    if rng.random() < 0.1:
        return collision_text(rng.choice([50, 50, rng.randint(2, 60)]), rng.randint(8, 14),
                              rng.choice(["\ud800", "\udc00", "\ud83d"]),
                              rng.choice(["\ud801", "\udfff", "\ud83e"]), rng.choice("yé😀"))
    phrase = rng.choice(PHRASES)
    if rng.random() < 0.3:
        phrase = "".join(rng.choice("abc \n😀\ud800") for _ in range(rng.randint(1, 40)))
    times = rng.randint(1, 40)
    text = phrase * times
    if rng.random() < 0.3:
        cut = rng.randint(0, len(text))
        text = text[:cut] + rng.choice(STRUCTURE) + text[cut:]
    if rng.random() < 0.2:
        text = rng.choice(["Intro line.\n", "```\n", "* ", ""]) + text
    return text


def _text(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.25:
        return ""
    if roll < 0.6:
        return _chant(rng)
    if roll < 0.85:
        return "".join(rng.choice(STRUCTURE + PHRASES) for _ in range(rng.randint(1, 12)))
    return "".join(f"Unique line {rng.randint(0, 10**6)} about item {n}.\n"
                   for n in range(rng.randint(1, 20)))


def _args(rng: random.Random) -> tuple[Any, str]:
    """``(raw arguments, kind)``."""
    roll = rng.random()
    if roll < 0.05:
        return None, "json_text"
    if roll < 0.1:
        return rng.choice([{"path": "/x"}, [], {}, "free", 0, None, {"2": 1, "a": [1.5]}]), "value"
    if roll < 0.13:
        return rng.choice(["plain words", ""]), "free_text"
    if roll < 0.8:
        return rng.choice(ARGS_TEXT), "json_text"
    return json.dumps({"path": f"/f{rng.randint(0, 3)}", "n": rng.randint(0, 2)}), "json_text"


def random_session(rng: random.Random, *, steps: int | None = None) -> Session:
    b = SessionBuilder()
    if rng.random() < 0.9:
        b.user("start")
    total = steps if steps is not None else rng.randint(3, 60)
    calls = [(rng.choice(NAMES), *_args(rng)) for _ in range(rng.randint(1, 6))]
    call_no = 0
    made = 0
    while made < total:
        roll = rng.random()
        if roll < 0.06:
            b.user("next request")
            continue
        if roll < 0.08:
            b.system("system note")
            continue
        if roll < 0.12:
            calls = [(rng.choice(NAMES), *_args(rng)) for _ in range(rng.randint(1, 6))]
        turn = b.assistant(_text(rng) if rng.random() < 0.6 else "",
                           thinking="thinking " * 20 if rng.random() < 0.1 else "")
        made += 1
        n_calls = 0 if rng.random() < 0.35 else (1 if rng.random() < 0.8 else rng.randint(2, 4))
        pending = []
        for _ in range(n_calls):
            # Follow the current cycle most of the time, so that loops happen.
            name, raw, kind = (calls[call_no % len(calls)] if rng.random() < 0.85
                               else (rng.choice(NAMES), *_args(rng)))
            call_no += 1
            cid = f"call_{call_no}"
            b.call(turn, name, raw, kind, id=cid)
            pending.append(cid)
        for cid in pending:
            b.result(cid, "result", "result")
    return b.build(id=f"gen-{rng.randint(0, 10**9)}", source="generated", format="openai_chat")


def random_config(rng: random.Random, *, what_ifs: bool = True) -> GeminiConfig:
    if not what_ifs or rng.random() < 0.3:
        return GeminiConfig(enabled=rng.random() < 0.9)
    return GeminiConfig(
        enabled=rng.random() < 0.95,
        tool_call_loop_threshold=rng.choice([5, 5, rng.randint(1, 8)]),
        content_loop_threshold=rng.choice([10, 10, rng.randint(2, 14)]),
        content_chunk_size=rng.choice([50, 50, rng.randint(1, 60)]),
        max_history_length=rng.choice([5000, 5000, rng.randint(5, 400), rng.randint(400, 6000)]),
    )
