"""Hand-built sessions and labels for the experiment tests.

A session is written as a list of turns: ``("call", tool, args, answer)`` is an assistant turn
with one tool call and its answer, ``("say", text)`` a prose-only assistant turn and
``("user", text)`` a user message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from loopscope.engines.base import FirstRefusal, SessionReplay, Step
from loopscope.formats.builder import SessionBuilder
from loopscope.model import Session

Turn = tuple[Any, ...]


def make_session(source: str, turns: list[Turn]) -> Session:
    b = SessionBuilder()
    n = 0
    for turn in turns:
        if turn[0] == "user":
            b.user(turn[1])
        elif turn[0] == "say":
            b.assistant(turn[1])
        else:
            _, tool, args, answer = turn
            t = b.assistant("")
            call_id = f"c{n}"
            n += 1
            b.call(t, tool, json.dumps(args), "json_text", id=call_id)
            b.result(call_id, answer, answer)
    return b.build(id=source.rsplit("/", 1)[-1], source=source, format="openai_chat")


@dataclass(frozen=True)
class Label:
    """What ``loopscope.labels`` hands the metrics: a label and the turn a loop starts."""

    label: str
    from_turn: int | None = None


def fake_replay(source: str, refused_turn: int | None, *, warned: bool = False) -> SessionReplay:
    """A replay whose only interesting parts are where it refused and whether it warned."""
    steps = []
    if warned:
        steps.append(Step(0, 0, ("t",), "s", "warn", "loop", 2, False))
    first = None
    if refused_turn is not None:
        steps.append(Step(refused_turn, refused_turn, ("t",), "s", "refuse", "loop", 3, False))
        first = FirstRefusal(refused_turn, refused_turn, "loop")
    return SessionReplay(source, source, "openai_chat", "gglib", tuple(steps), first)
