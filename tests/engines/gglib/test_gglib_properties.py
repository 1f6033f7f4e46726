"""Property tests (hypothesis): invariances, monotonicity, fast path = reference (every view of
the lazy replay, every field of every step), the prefix property."""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.engines.gglib._gglib_helpers import prefix_property

from loopscope.engines.base import SessionReplay
from loopscope.engines.gglib import (
    DEFAULT_OBSERVATION_TOOLS,
    ENGINE,
    GglibConfig,
    ToolCall,
    batch_signature,
    prepare_messages,
    replay_messages,
    run_prepared,
    stable_repr,
    tool_signature,
)
from loopscope.engines.gglib.fast import _answer_key, _encode_answer

PROFILE = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ------------------------------------------------------------------------------- strategies

scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=4)
json_values = st.recursive(
    scalars,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=4),
    max_leaves=12,
)

NAMES = ["write_file", "read_file", "browser_navigate", "run_tests", "fetch_webpage", "", "get_errors"]
ARGS: list[Any] = ["{}", '{"a":1}', '{"b":2,"a":1}', '{"a":1,"b":2}', "{not json", {"a": 1}, "-0", '{"x":-0.0}', None, "null"]
IDS: list[Any] = ["c1", "c2", "c3", "", 7, None]
CONTENTS: list[Any] = ["same", "other", "", None, {"a": 1}, {"a": 1.0}, [{"type": "text", "text": "same"}], 42]
TEXTS: list[Any] = ["A", "B", "", None, [{"type": "text", "text": "A"}], {"x": 1}]


def call_element(draw: Any) -> Any:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.sampled_from([7, None, "s", {"id": "c1"}, {"function": "x"}]))
    el: dict[str, Any] = {"type": "function", "function": {"name": draw(st.sampled_from(NAMES))}}
    a = draw(st.sampled_from([*ARGS, "MISSING"]))
    if a != "MISSING":
        el["function"]["arguments"] = a
    i = draw(st.sampled_from([*IDS, "MISSING"]))
    if i != "MISSING":
        el["id"] = i
    return el


@st.composite
def message(draw: Any) -> Any:
    kind = draw(st.sampled_from(["batch", "batch", "batch", "tool", "tool", "prose", "user", "system", "junk"]))
    if kind == "batch":
        n = draw(st.integers(1, 3))
        m: dict[str, Any] = {"role": "assistant", "content": draw(st.sampled_from(TEXTS))}
        m["tool_calls"] = [call_element(draw) for _ in range(n)]
        return m
    if kind == "tool":
        m = {"role": "tool", "content": draw(st.sampled_from(CONTENTS))}
        i = draw(st.sampled_from([*IDS, "MISSING"]))
        if i != "MISSING":
            m["tool_call_id"] = i
        return m
    if kind == "prose":
        m = {"role": "assistant", "content": draw(st.sampled_from(TEXTS))}
        tc = draw(st.sampled_from(["MISSING", None, [], {}, "x"]))
        if tc != "MISSING":
            m["tool_calls"] = tc
        return m
    if kind == "user":
        return {"role": "user", "content": "go"}
    if kind == "system":
        return {"role": draw(st.sampled_from(["system", "developer", "Assistant", 7])), "content": "x"}
    return draw(st.sampled_from([None, 7, "x", [], {}]))


@st.composite
def session(draw: Any) -> list[Any]:
    """Sessions biased towards repeats: a few distinct batches reused many times."""
    pool = draw(st.lists(message(), min_size=1, max_size=8))
    idx = draw(st.lists(st.integers(0, len(pool) - 1), max_size=60))
    return [pool[i] for i in idx]


@st.composite
def config(draw: Any) -> GglibConfig:
    pats = draw(
        st.sampled_from(
            [DEFAULT_OBSERVATION_TOOLS, (), ("read",), ("READ_FILE", "navigate"), ("",), ("write", "fetch")]
        )
    )
    return GglibConfig(
        max_repeated_batch_steps=draw(st.integers(0, 4)),
        max_observation_steps=draw(st.sampled_from([None, 0, 1, 2, 3, 15])),
        observation_tools=pats,
        max_stagnation_steps=draw(st.integers(0, 4)),
    )


# ------------------------------------------------------------------------------- properties


def permuted(value: Any, rnd: random.Random) -> Any:
    if isinstance(value, dict):
        items = [(k, permuted(v, rnd)) for k, v in value.items()]
        rnd.shuffle(items)
        return dict(items)
    if isinstance(value, list):
        return [permuted(v, rnd) for v in value]
    return value


@PROFILE
@given(json_values, st.integers(0, 2**32))
def test_key_order_never_changes_a_signature(value: Any, seed: int) -> None:
    other = permuted(value, random.Random(seed))
    assert stable_repr(other) == stable_repr(value)
    assert tool_signature(ToolCall("c", "t", other)) == tool_signature(ToolCall("c", "t", value))
    # Through the wire too: a JSON text with the keys in another order.
    from loopscope.engines.gglib import domain_calls

    a = domain_calls([{"function": {"name": "t", "arguments": json.dumps(value)}}])
    b = domain_calls([{"function": {"name": "t", "arguments": json.dumps(other)}}])
    assert batch_signature(a) == batch_signature(b)


@PROFILE
@given(st.lists(st.tuples(st.sampled_from(NAMES), json_values), min_size=1, max_size=5), st.randoms())
def test_call_order_never_changes_a_signature(calls: list[tuple[str, Any]], rnd: random.Random) -> None:
    batch = [ToolCall(f"c{i}", n, a) for i, (n, a) in enumerate(calls)]
    shuffled = list(batch)
    rnd.shuffle(shuffled)
    assert batch_signature(shuffled) == batch_signature(batch)


@PROFILE
@given(session(), st.randoms())
def test_call_order_never_changes_a_verdict(messages: list[Any], rnd: random.Random) -> None:
    shuffled = []
    for m in messages:
        if isinstance(m, dict) and isinstance(m.get("tool_calls"), list):
            m = dict(m)
            tcs = list(m["tool_calls"])
            rnd.shuffle(tcs)
            m["tool_calls"] = tcs
        shuffled.append(m)
    a, fa = replay_messages(messages, GglibConfig())
    b, fb = replay_messages(shuffled, GglibConfig())
    assert fa == fb
    assert [(s.signature, s.verdict, s.count, s.extra["identical"]) for s in a] == [
        (s.signature, s.verdict, s.count, s.extra["identical"]) for s in b
    ]


@PROFILE
@given(session(), config(), st.integers(1, 5))
def test_raising_strikes_never_adds_a_loop_refusal_on_a_mutating_batch(
    messages: list[Any], cfg: GglibConfig, extra: int
) -> None:
    low, _ = replay_messages(messages, cfg)
    higher = GglibConfig(
        cfg.max_repeated_batch_steps + extra,
        cfg.max_observation_steps,
        cfg.observation_tools,
        cfg.max_stagnation_steps,
    )
    high, _ = replay_messages(messages, higher)
    assert len(low) == len(high)
    for a, b in zip(low, high, strict=True):
        if b.extra["batch_class"] == "mutating" and b.detector == "loop":
            assert a.detector == "loop", (a, b)
    assert sum(s.detector == "loop" for s in high) <= sum(s.detector == "loop" for s in low)


@PROFILE
@given(session(), config())
def test_run_prepare_equals_replay(messages: list[Any], cfg: GglibConfig) -> None:
    reference = replay_messages(messages, cfg)
    assert run_prepared(prepare_messages(messages), cfg) == reference


@PROFILE
@given(session(), st.lists(config(), min_size=2, max_size=4))
def test_one_prepare_serves_many_configs(messages: list[Any], cfgs: list[GglibConfig]) -> None:
    prepared = prepare_messages(messages)
    for cfg in cfgs:
        assert run_prepared(prepared, cfg) == replay_messages(messages, cfg)


@PROFILE
@given(session(), config())
def test_prefix_property_on_generated_sessions(messages: list[Any], cfg: GglibConfig) -> None:
    assert prefix_property(messages, cfg) == []


# ------------------------------------------------------------------------------- the lazy fast path


def _reference(messages: list[Any], cfg: GglibConfig) -> SessionReplay:
    steps, first = replay_messages(messages, cfg)
    return SessionReplay("s", "p.json", "openai_chat", "gglib", steps, first)


def assert_lazy_equals(prepared: Any, cfg: GglibConfig, ref: SessionReplay) -> None:
    """Every view of a fast-path replay equals the reference, each read on a fresh replay
    before anything else has built its steps; then the steps, field by field."""
    c = ENGINE.run(prepared, cfg)
    assert (c.refusal_count, c.warning_count) == (ref.refusal_count, ref.warning_count)
    assert c._markers is None and c._steps is None  # counted, not built
    m = ENGINE.run(prepared, cfg)
    assert m.markers == ref.markers  # read first: built without any step
    assert m._steps is None and m._flagged is None
    assert [x.x for x in m.markers] == [x.x for x in ref.markers]
    r = ENGINE.run(prepared, cfg)
    assert r._steps is None  # nothing built yet
    assert (r.first_refusal, r.refused, r.warned) == (ref.first_refusal, ref.refused, ref.warned)
    assert r.flagged == ref.flagged
    assert (r.refusal_count, r.warning_count) == (ref.refusal_count, ref.warning_count)
    assert r._steps is None  # the flagged steps did not need the pass steps
    fresh = ENGINE.run(prepared, cfg)
    assert fresh.to_json() == ref.to_json()
    assert orjson.dumps(fresh.to_json()) == orjson.dumps(ref.to_json())
    steps = ENGINE.run(prepared, cfg).steps
    assert len(steps) == len(ref.steps)
    for mine, theirs in zip(steps, ref.steps, strict=True):
        assert mine == theirs
        assert mine.after_divergence == theirs.after_divergence
        assert dict(mine.extra) == dict(theirs.extra)
        assert list(mine.extra) == list(theirs.extra)  # key order is the output order
    assert ENGINE.run(prepared, cfg) == ref
    assert ref == ENGINE.run(prepared, cfg)


@PROFILE
@given(session(), config())
def test_lazy_run_equals_replay_in_every_view(messages: list[Any], cfg: GglibConfig) -> None:
    prepared = ENGINE.prepare_messages(messages, session="s", source="p.json")
    assert_lazy_equals(prepared, cfg, _reference(messages, cfg))


@PROFILE
@given(session(), st.lists(config(), min_size=2, max_size=5), st.randoms())
def test_lazy_run_serves_many_configs_in_any_order(
    messages: list[Any], cfgs: list[GglibConfig], rnd: random.Random
) -> None:
    """Per-pattern tables and per-window stagnation counts never leak between configs."""
    prepared = ENGINE.prepare_messages(messages, session="s", source="p.json")
    order = cfgs + cfgs[::-1]
    rnd.shuffle(order)
    for cfg in order:
        assert_lazy_equals(prepared, cfg, _reference(messages, cfg))


@st.composite
def looping_session(draw: Any) -> list[Any]:
    """Long runs of one batch with answers that repeat or change, prose repeats, breaks: the
    cases where refusals continue a run after divergence, and where runs restart."""
    out: list[Any] = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["run", "run", "prose", "break", "other"]))
        if kind == "run":
            name = draw(st.sampled_from(NAMES))
            args = draw(st.sampled_from(ARGS))
            for _ in range(draw(st.integers(1, 12))):
                out.append({"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": name, "arguments": args}}]})
                if draw(st.booleans()):
                    out.append({"role": "tool", "tool_call_id": "c1",
                                "content": draw(st.sampled_from(["same", "same", "other", {"a": 1}]))})
                if draw(st.integers(0, 9)) == 0:
                    out.append({"role": "assistant", "content": draw(st.sampled_from(TEXTS))})
        elif kind == "prose":
            text = draw(st.sampled_from(["A", "B", ""]))
            out.extend({"role": "assistant", "content": text}
                       for _ in range(draw(st.integers(1, 10))))
        elif kind == "break":
            out.append({"role": "user", "content": "go on"})
        else:
            out.append(draw(message()))
    return out


@PROFILE
@given(looping_session(), config())
def test_lazy_run_on_long_runs(messages: list[Any], cfg: GglibConfig) -> None:
    prepared = ENGINE.prepare_messages(messages, session="s", source="p.json")
    assert_lazy_equals(prepared, cfg, _reference(messages, cfg))


def test_run_does_not_build_steps() -> None:
    messages = [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "write_file", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"}] * 5
    prepared = ENGINE.prepare_messages(messages)
    r = ENGINE.run(prepared, GglibConfig())
    assert r.refused and r.first_refusal is not None and r.first_refusal.turn == 2
    assert r._steps is None and not r.warned
    assert [f.position for f in r.flagged] == [2, 3, 4]
    assert r._steps is None
    assert [s.count for s in r.steps] == [1, 2, 3, 4, 5]


# ------------------------------------------------------------------------- memoised arguments

# Values whose JSON texts (the memo keys) collide or nearly do: NaN and ±Infinity are written
# like null; 1, 1.0 and true differ; key order differs; integers beyond 64 bits and lone
# surrogates have no key at all.
TRICKY_VALUES: list[Any] = [
    None, float("nan"), float("inf"), float("-inf"), 1, 1.0, True, 0, 0.0, -0.0, "1", [1],
    {"a": 1, "b": 2}, {"b": 2, "a": 1}, {"a": None}, {"a": float("nan")}, {"a": 1.0},
    {"a": True}, 2**70, -(2**70), "\ud800", {"k": "\ud800"}, [[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]],
]


@PROFILE
@given(st.lists(st.sampled_from(range(len(TRICKY_VALUES))), min_size=1, max_size=30),
       st.sampled_from(range(len(TRICKY_VALUES))), config())
def test_memoised_value_arguments_equal_the_reference(picks: list[int], first: int,
                                                      cfg: GglibConfig) -> None:
    """Arguments recorded as values are rendered once per JSON text, per session and across
    sessions: a value never takes the rendering of another whose text collides with its own."""
    messages: list[Any] = [{"role": "user", "content": "go"}]
    for n, k in enumerate([first, *picks]):
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{n}", "type": "function",
             "function": {"name": "read_file", "arguments": TRICKY_VALUES[k]}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": "same"})
    reference = replay_messages(messages, cfg)
    assert run_prepared(prepare_messages(messages), cfg) == reference
    # again, now that the values' renderings are shared across sessions
    assert run_prepared(prepare_messages(messages), cfg) == reference
    assert run_prepared(prepare_messages(list(reversed(messages))), cfg) == replay_messages(
        list(reversed(messages)), cfg)


def test_memoised_arguments_never_answer_for_another_type() -> None:
    """A value orjson writes like an earlier one (a UUID like its string) is no JSON value: it
    fails as on the reference path instead of taking the string's rendering."""
    text = "12345678-1234-5678-1234-567812345678"
    for arguments in ({"id": text}, {"id": uuid.UUID(text)}):
        messages = [{"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}]}]
        if isinstance(arguments["id"], str):
            prepare_messages(messages)
            continue
        with pytest.raises(TypeError):
            replay_messages(messages, GglibConfig())
        with pytest.raises(TypeError):
            prepare_messages(messages)


# ------------------------------------------------------------------------------ answer keys


class _Dict(dict):  # type: ignore[type-arg]
    pass


class _Str(str):
    __slots__ = ()


class _Equal(str):
    """A string equal to every string (orjson writes what it holds)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


def _tricky_answers() -> list[Any]:
    """Answers that encode alike or nearly: one text block in every container and subclass
    orjson writes the same, with a lone surrogate (written by compact_json instead), with extra
    keys (one sorting between "text" and "type"), two blocks, other types."""
    out: list[Any] = ["a", _Str("a"), "", None, 1, {"type": "text", "text": "a"}]
    for text in ["a", _Str("a"), "a\ud800", '","type":"text"}]']:
        for kind in ["text", _Str("text"), _Equal("image"), "image"]:
            for extra in [{}, {"x": 1}, {"tf": "z"}]:
                block = {"type": kind, "text": text, **extra}
                out += [[block], (block,), [_Dict(block)], [block, block]]
    return out


TRICKY_ANSWERS = _tricky_answers()


def test_answer_keys_are_equal_iff_the_encodings_are() -> None:
    keys = [_answer_key(c) for c in TRICKY_ANSWERS]
    encodings = [_encode_answer(c) for c in TRICKY_ANSWERS]
    for i, (key, encoding) in enumerate(zip(keys, encodings, strict=True)):
        for other_key, other_encoding in zip(keys[i:], encodings[i:], strict=True):
            assert (key == other_key) == (encoding == other_encoding)
    assert len(set(keys)) == len(set(encodings))
    assert _answer_key([{"type": "text", "text": "a"}]) == (3, "a")  # read off, not written


@settings(max_examples=300, deadline=None)
@given(st.lists(json_values, min_size=2, max_size=6))
def test_answer_keys_of_json_values(contents: list[Any]) -> None:
    keys = [_answer_key(c) for c in contents]
    encodings = [_encode_answer(c) for c in contents]
    for i in range(len(contents)):
        for j in range(len(contents)):
            assert (keys[i] == keys[j]) == (encodings[i] == encodings[j])
