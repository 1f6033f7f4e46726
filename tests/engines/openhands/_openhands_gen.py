"""Seeded random sessions and thresholds for the OpenHands property and differential tests.

Sessions are built with ``SessionBuilder`` (as importers do) and mix what the stuck detector
looks at: the same call repeated with the same or changing results, the same call failing (with
the same or changing error texts), A/B alternation and period-3 cycles, runs of replies without
tool calls (blank ones too), parallel calls, calls without results, results out of order or with
duplicate ids, user messages that cut the window, compactions, and arguments that are equal only
under Python ``==`` (``1``/``1.0``/``true``, key order, ``null`` keys, ``NaN``, duplicate keys,
raw control characters, security-risk typos) or that do not parse at all.
"""

from __future__ import annotations

import random
from typing import Any

from loopscope.engines.openhands import OpenHandsConfig
from loopscope.formats.builder import SessionBuilder
from loopscope.model import Session

ARGUMENT_CLASSES: list[list[Any]] = [
    ['{"n": 1}', '{"n":1.0}', '{"n": true}', '{"n": 1, "z": null}', {"n": 1}, {"n": 1.0}],
    ['{"n": 2}', '{"n": 2.5}', '{"n": "1"}'],
    ['{"a": NaN}', '{"a":NaN}', '{"a": NaN, "b": null}', '{"a": [NaN]}'],
    ['{"p": "x\ny"}', '{"p": "x\\ny"}', '{"p": "x\ty"}', '{"t": "\x07"}', '{"t": "\\u0007"}'],
    ['{"a": 0}', '{"a": false}', '{"a": -0.0}', '{"a": 0.0}', '{"a": -1}'],
    ['{"a":', "nope", "", "{'a': 1}", '{"a": 1,}', '{"a" 1}'],
    ["[1, 2]", '"s"', "null", "3", None, "{}", {}],
    ['{"security_rort": "low", "q": 1}', '{"security_risk": "low", "q": 1}',
     '{"q": 1, "securtiy_risk": "low"}', '{"q": 1, "security_riks": "high"}'],
    ['{"n": 12345678901234567890}', '{"n": 1.2345678901234567e19}', '{"n": 1e22}',
     '{"n": 10000000000000000000000}', '{"n": 9007199254740993}', '{"n": 9007199254740992.0}'],
    ['{"a": {"b": [1, 2, {"c": null}]}}', '{"a":{"b":[1.0,2,{"c":null}]}}',
     '{"a": {"b": [1, 2, {}]}}', '{"a": {"b": [2, 1, {"c": null}]}}'],
    ['{"x": Infinity}', '{"x": 1e999}', '{"x": -Infinity}', '{"x": -1e999}'],
    ['{"k": 1, "k": 2}', '{"k": 2}', '{"k": 1}'],
    ['{"a": 1, "b": 2}', '{"b": 2, "a": 1}', '{"b": 2, "a": 1, "c": null}'],
    ['{"s": "\u00e9"}', '{"s": "\\u00e9"}', '{"s": "e\u0301"}'],
    ['{"path": "src/app.py"}', '{"path":"src/app.py"}', '{"path": "src/app.py "}'],
]
TOOLS = ["read", "exec", "grep", "file_editor", ""]
THOUGHTS = ["", "", "", "Let me check.", "Trying again.", " "]
REPLIES = ["", " ", "\n", "Let me think.", "I will look at the build.", "Done?", "\u3000"]
RESULTS = ["ok", "same", "src/app.py:1: TODO", "", "exit 1", "Permission denied"]


def _pick_args(rng: random.Random, cls: list[Any] | None = None) -> Any:
    if cls is None:
        cls = rng.choice(ARGUMENT_CLASSES)
    return rng.choice(cls)


class _Motif:
    """What the agent keeps doing for a while."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.kind = rng.choice(["same", "same", "errors", "alternate", "cycle3", "prose",
                                "random", "parallel"])
        self.calls = [(rng.choice(TOOLS), rng.choice(ARGUMENT_CLASSES)) for _ in range(3)]
        self.thought = rng.choice(THOUGHTS)
        self.stable_result = rng.random() < 0.7
        self.stable_args = rng.random() < 0.5
        self.n = 0

    def turn(self) -> list[tuple[str, Any, str | None, bool]] | str:
        """A reply text, or calls ``(name, arguments, result text or None, is_error)``."""
        rng = self.rng
        self.n += 1
        kind = self.kind
        if kind == "prose":
            return rng.choice(REPLIES)
        if kind == "random":
            return [(rng.choice(TOOLS), _pick_args(rng), rng.choice([*RESULTS, None]),
                     rng.random() < 0.3)]
        if kind == "parallel":
            k = rng.randint(2, 3)
            return [self._call(j) for j in range(k)]
        if kind == "alternate":
            return [self._call(self.n % 2)]
        if kind == "cycle3":
            return [self._call(self.n % 3)]
        return [self._call(0)]

    def _call(self, j: int) -> tuple[str, Any, str | None, bool]:
        rng = self.rng
        name, cls = self.calls[j]
        args = cls[0] if self.stable_args else _pick_args(rng, cls)
        if rng.random() < 0.05:
            return name, args, None, False
        if self.kind == "errors":
            text = "Permission denied" if self.stable_result else f"err {self.n}"
            return name, args, text, True
        text = RESULTS[j] if self.stable_result else f"{RESULTS[j]} {self.n}"
        return name, args, text, rng.random() < 0.05


def random_session(rng: random.Random, turns: int | None = None, *,
                   sid: str | None = None) -> Session:
    """One session of ``turns`` assistant turns (default: 3 to 60)."""
    if turns is None:
        turns = rng.randint(3, 60)
    b = SessionBuilder()
    if rng.random() < 0.7:
        b.system("You are OpenHands agent.")
    if rng.random() < 0.9:
        b.user("Fix the build.")
    motif = _Motif(rng)
    call_no = 0
    for _ in range(turns):
        roll = rng.random()
        if roll < 0.05:
            b.user(rng.choice(["Try again.", "Go on.", ""]))
        elif roll < 0.07:
            b.compaction("Earlier work summarised.")
        elif roll < 0.08:
            b.system("reminder")
        elif roll < 0.09:
            b.other("developer", "note")
        if rng.random() < 0.15:
            motif = _Motif(rng)
        shape = motif.turn()
        if isinstance(shape, str):
            b.assistant(shape, shape)
            continue
        thought = motif.thought if rng.random() < 0.85 else rng.choice(THOUGHTS)
        turn = b.assistant(thought, thought)
        results: list[tuple[str | None, str, bool]] = []
        for name, args, text, is_error in shape:
            call_no += 1
            call_id: str | None = f"call_{call_no}"
            if rng.random() < 0.03:
                call_id = None
            elif rng.random() < 0.03:
                call_id = "dup"
            kind = "json_text" if isinstance(args, str) else "value"
            b.call(turn, name, args, kind, id=call_id)  # type: ignore[arg-type]
            if text is not None:
                rid = call_id if rng.random() > 0.03 else "other"
                results.append((rid, text, is_error))
        if len(results) > 1 and rng.random() < 0.2:
            rng.shuffle(results)
        if results and rng.random() < 0.03:
            b.assistant("interrupting reply", "interrupting reply")
        for rid, text, is_error in results:
            b.result(rid, text, text, is_error=is_error)
    return b.build(id=sid or f"gen-{rng.randrange(10**9)}", source="gen.json",
                   format="openai_chat")


def random_config(rng: random.Random, *, what_if: bool = False) -> OpenHandsConfig:
    """Thresholds from 1 to 12 (small ones more often), sometimes large; ``enabled`` mostly
    on. ``what_if`` also varies the scanned window."""

    def threshold() -> int:
        roll = rng.random()
        if roll < 0.5:
            return rng.randint(1, 4)
        if roll < 0.9:
            return rng.randint(1, 12)
        return rng.randint(13, 40)

    return OpenHandsConfig(
        enabled=rng.random() < 0.93,
        action_observation=threshold(), action_error=threshold(), monologue=threshold(),
        alternating_pattern=threshold(),
        max_events=rng.choice([20, 20, 1, 2, 5, 9, 31, 60]) if what_if else 20)
