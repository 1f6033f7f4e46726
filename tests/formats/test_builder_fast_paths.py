"""The builder's fast paths equal the general code they stand for.

* Pairing: while every call goes to the newest event, :class:`SessionBuilder` numbers calls and
  pairs and freezes results as they come; the first call added to an older turn sends the
  session back to numbering and pairing everything at ``build`` (the general path). A builder
  that starts on the general path is the reference: random sequences of additions, with calls
  to the newest turn, to older turns and to turns refused over the event cap, results by id,
  by position and by structure, must give the same session and the same problems on both.
* Admission written out in ``assistant`` and ``result``, origins of calls built only when
  reported, origins shared across sessions: each against the value it replaces.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from loopscope.formats.anthropic_messages import _block_origin
from loopscope.formats.builder import (
    CallDraft,
    SessionBuilder,
    TurnDraft,
    call_origin,
    line_origin,
    pointer_origin,
    pointer_origins,
)
from loopscope.formats.loader import _renamed
from loopscope.model import Origin, Session


class PairingAtBuild(SessionBuilder):
    """The general path from the start: numbers calls and pairs results at ``build``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._in_order = False


IDS = ["a", "b", "c", None, 7]
ARGUMENTS = ['{"x": 1}', "not json", {"v": [1]}]
SINGLES = ["user", "system", "other", "compaction", "fill"]


def random_operations(seed: int, length: int) -> list[tuple[Any, ...]]:
    """Uniformly random additions (hypothesis picks the seed and the length: its own choice of
    lists favours short, repetitive ones that miss most orders of events)."""
    rng = random.Random(seed)
    ops: list[tuple[Any, ...]] = []
    for _ in range(length):
        kind = rng.choice(["single", "single", "turn", "turn", "call", "result", "result"])
        if kind == "single":
            ops.append((rng.choice(SINGLES),))
        elif kind == "turn":  # an assistant turn and its calls: (call id, arguments) each
            ops.append(("turn", [(rng.choice(IDS), rng.choice(ARGUMENTS))
                                 for _ in range(rng.randrange(4))]))
        elif kind == "call":  # a call added later: (turn counted from the newest, id, arguments)
            ops.append(("call", rng.randrange(4), rng.choice(IDS), rng.choice(ARGUMENTS)))
        else:  # (call id, structure call counted from the newest call or none, details)
            ops.append(("result", rng.choice([*IDS, None]), rng.choice([None, None, 0, 1, 3]),
                        rng.choice([None, {}, {"k": 1}])))
    return ops


def build(builder: SessionBuilder, ops: list[tuple[Any, ...]]) -> tuple[Session, list[Any]]:
    turns: list[TurnDraft] = []
    calls: list[CallDraft] = []
    for n, op in enumerate(ops):
        origin = Origin(n, None)
        kind = op[0]
        if kind == "user":
            builder.user(f"u{n}", origin=origin)
        elif kind == "system":
            builder.system(f"s{n}", origin=origin)
        elif kind == "other":
            builder.other("x", f"o{n}", origin=origin)
        elif kind == "compaction":
            builder.compaction(origin=origin)
        elif kind == "fill":
            builder.fill_compaction(f"summary {n}")
        elif kind == "turn":
            turns.append(builder.assistant(f"t{n}", origin=origin))
            for call_id, raw in op[1]:
                calls.append(builder.call(turns[-1], f"tool{n % 3}", raw,
                                          "json_text" if isinstance(raw, str) else "value",
                                          id=call_id, origin=origin))
        elif kind == "call" and turns:
            _, back, call_id, raw = op
            turn = turns[max(len(turns) - 1 - back, 0)]
            calls.append(builder.call(turn, f"late{n % 3}", raw,
                                      "json_text" if isinstance(raw, str) else "value",
                                      id=call_id, origin=origin))
        elif kind == "result":
            _, call_id, back, details = op
            structure = (calls[max(len(calls) - 1 - back, 0)]
                         if back is not None and calls else None)
            builder.result(call_id, f"r{n}", f"r{n}", details=details, meta={"m": n},
                           structure_call=structure, origin=origin)
    problems: list[Any] = []
    session = builder.build(id="s", source="/s", format="test",
                            report=lambda *a, **k: problems.append((a, k)))
    return session, problems


@settings(max_examples=600, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 40), st.sampled_from([None, 3, 8, 20]))
def test_pairing_as_results_arrive_equals_pairing_at_build(seed: int, length: int,
                                                           cap: int | None) -> None:
    ops = random_operations(seed, length)
    fast = build(SessionBuilder(max_events=cap), ops)
    general = build(PairingAtBuild(max_events=cap), ops)
    assert repr(fast[0]) == repr(general[0])
    assert fast[1] == general[1]


def test_a_call_to_an_older_turn_leaves_the_fast_path() -> None:
    builder = SessionBuilder()
    first = builder.assistant("one")
    builder.call(first, "a", None, "value", id="x")
    assert builder._in_order
    builder.result("x", "r", "r")
    builder.call(first, "b", None, "value", id="y")  # after a later event
    assert not builder._in_order
    session = builder.build(id="s", source="/s", format="test")
    assert [c.result for c in session.calls] == [1, None]


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.none(), st.integers(1, 10)), st.one_of(st.none(), st.text(max_size=8)),
       st.sampled_from(["tool_calls", "content"]), st.integers(0, 12))
def test_a_call_placed_in_its_message_has_the_origin_spelled_out(
        line: int | None, pointer: str | None, field: str, index: int) -> None:
    """A call given as an element of its message's list (``element``) reports the origin the
    importers used to build for it."""
    builder = SessionBuilder()
    turn = builder.assistant("")
    draft = builder.call(turn, "f", "{bad", "json_text", origin=Origin(line, pointer),
                         element=(field, index))
    spelled_out = Origin(line, None if pointer is None else f"{pointer}/{field}/{index}")
    assert call_origin(draft) == spelled_out
    problems: list[Any] = []
    builder.build(id="s", source="/s", format="test",
                  report=lambda *a, **k: problems.append(k))
    assert (problems[0]["line"], problems[0]["pointer"]) == (line, spelled_out.pointer)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["user", "system", "other", "compaction", "turn", "result"]),
                max_size=12), st.sampled_from([None, 0, 2, 5]))
def test_every_admitted_event_notes_its_time(kinds: list[str], cap: int | None) -> None:
    """Each kind of event notes its time when the session takes it, none once it is full."""
    builder = SessionBuilder(max_events=cap)
    for n, kind in enumerate(kinds):
        stamp = f"t{n}"
        if kind == "turn":
            builder.assistant("", timestamp=stamp)
        elif kind == "result":
            builder.result(None, "r", "r", timestamp=stamp)
        elif kind == "compaction":
            builder.compaction(timestamp=stamp)
        else:
            getattr(builder, kind)(*(["x"] if kind == "other" else []), "text",
                                   timestamp=stamp)
    taken = len(kinds) if cap is None else min(cap, len(kinds))
    assert builder.timestamps == [f"t{n}" for n in range(taken)]
    assert builder.event_count == taken and builder.dropped_events == len(kinds) - taken


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.integers(1, 5)),
                          st.one_of(st.none(), st.sampled_from(["", "/3", "/messages/1"])),
                          st.sampled_from([None, "messages", "content"]), st.integers(0, 5)),
                max_size=30))
def test_shared_origins_equal_the_origins_they_stand_for(
        specs: list[tuple[int | None, str | None, str | None, int]]) -> None:
    """Origins shared across sessions are the ones the importers built for each message."""
    for line, pointer, name, index in specs:
        if line is not None:
            assert line_origin(line) == Origin(line) and line_origin(line) is line_origin(line)
        if pointer is not None:
            spelled = f"{pointer}/{index}" if name is None else f"{pointer}/{name}/{index}"
            assert pointer_origin(pointer, name, index) == Origin(None, spelled)
        origin = Origin(line, pointer)
        assert _block_origin(origin, index) == Origin(
            line, None if pointer is None else f"{pointer}/content/{index}")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["", "/3", "/messages/1"]),
                          st.sampled_from([None, "messages", "content"]), st.integers(0, 40)),
                max_size=20))
def test_runs_of_shared_origins_equal_one_origin_each(
        specs: list[tuple[str, str | None, int]]) -> None:
    """A run of a list's origins is the origin of each element, whatever was asked before."""
    for pointer, name, count in specs:
        run = pointer_origins(pointer, name, count)
        assert run == [pointer_origin(pointer, name, i) for i in range(count)]


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 40), st.sampled_from([None, 3, 20]),
       st.booleans())
def test_stored_views_equal_the_views_computed(seed: int, length: int, cap: int | None,
                                                at_build: bool) -> None:
    """The turns and calls a built session holds (``seed_views``) are what ``Session.turns``
    and ``Session.calls`` compute from its events; the loader's renamed copy keeps them and
    equals ``dataclasses.replace``."""
    ops = random_operations(seed, length)
    session, _ = build((PairingAtBuild if at_build else SessionBuilder)(max_events=cap), ops)
    fresh = dataclasses.replace(session)  # (a copy computes its views)
    assert "turns" not in vars(fresh)
    assert session.turns == fresh.turns and session.calls == fresh.calls
    assert [id(t) for t in session.turns] == [id(t) for t in fresh.turns]
    renamed = _renamed(session, "id2", "/s#1", "title", ())
    assert renamed == dataclasses.replace(session, id="id2", source="/s#1", title="title",
                                          problems=())
    assert repr(renamed) == repr(dataclasses.replace(session, id="id2", source="/s#1",
                                                     title="title", problems=()))
    assert renamed.calls is session.calls and session.id == "s"
