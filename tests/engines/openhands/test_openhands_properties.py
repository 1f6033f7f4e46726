"""Property tests: the fast path equals the plain replay (every view of the lazy replay, every
field of every step), one prepared session serving many configurations in any order; the
equality classes of arguments equal Python ``==``; raising a threshold never adds a refusal of
its own pattern."""

from __future__ import annotations

import json
import math
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.engines.openhands._openhands_gen import random_config, random_session

from loopscope.engines.base import SessionReplay
from loopscope.engines.openhands import ENGINE, OpenHandsConfig, canonical
from loopscope.formats.builder import SessionBuilder

THRESHOLD = st.one_of(st.integers(1, 3), st.integers(1, 12), st.integers(13, 45))
CONFIGS = st.builds(
    OpenHandsConfig, enabled=st.booleans() | st.just(True), action_observation=THRESHOLD,
    action_error=THRESHOLD, monologue=THRESHOLD, alternating_pattern=THRESHOLD,
    max_events=st.one_of(st.just(20), st.integers(1, 70)))


def assert_same(fast: SessionReplay, plain: SessionReplay, where: str) -> None:
    """Every view of the lazy fast replay equals the reference, each read first on a fresh
    object (a lazy view must not depend on another having been read)."""
    assert fast.first_refusal == plain.first_refusal, where
    assert fast.warned == plain.warned, where
    assert fast.refusal_count == plain.refusal_count, where
    assert fast.warning_count == plain.warning_count, where
    assert fast.to_json() == plain.to_json(), where
    assert fast.markers == plain.markers, where
    assert fast.flagged == plain.flagged, where
    assert fast.steps == plain.steps, where
    assert fast == plain, where


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), configs=st.lists(CONFIGS, min_size=1, max_size=5))
def test_fast_path_equals_reference(seed: int, configs: list[OpenHandsConfig]) -> None:
    session = random_session(random.Random(seed))
    prepared = ENGINE.prepare(session)
    for config in configs:
        plain = ENGINE.replay(session, config)
        assert_same(ENGINE.run(prepared, config), plain, f"seed {seed} {config}")
        # A second fresh run read in another order.
        fast = ENGINE.run(prepared, config)
        assert fast.steps == plain.steps and fast.markers == plain.markers
        assert fast.warning_count == plain.warning_count


def test_fast_path_on_many_sessions_and_thresholds() -> None:
    """A broad seeded sweep: 200 sessions, 6 configurations each (thresholds 1, 2 and beyond
    the window, and the what-if window), one prepared session each, in any order."""
    rng = random.Random(2024)
    flagged = 0
    for _ in range(200):
        session = random_session(rng)
        prepared = ENGINE.prepare(session)
        configs = [random_config(rng, what_if=True) for _ in range(6)]
        configs.append(OpenHandsConfig(action_observation=1, action_error=1, monologue=1,
                                       alternating_pattern=1))
        configs.append(OpenHandsConfig(action_observation=2, action_error=2, monologue=2,
                                       alternating_pattern=2))
        rng.shuffle(configs)
        for config in configs:
            plain = ENGINE.replay(session, config)
            assert_same(ENGINE.run(prepared, config), plain, f"{session.id} {config}")
            flagged += len(plain.markers)
    assert flagged > 1000


def test_counters_have_one_value_per_step() -> None:
    rng = random.Random(3)
    for _ in range(20):
        session = random_session(rng)
        config = random_config(rng)
        prepared = ENGINE.prepare(session)
        replay = ENGINE.run(prepared, config)
        for series in ENGINE.counters(prepared, replay, config):
            assert len(series.values) == len(replay.steps), series.label


# --------------------------------------------------------------------------- equality classes

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.integers(-2**70, 2**70),
    st.sampled_from([0.0, -0.0, 1.0, 2.0, 0.5, 1e22, 2.0**53, 2.0**53 + 2, math.inf, -math.inf,
                     math.nan, 1e-300]),
    st.text(max_size=3))
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner,
                                                                 max_size=3),
    max_leaves=12)


def _variant(value: Any, rng: random.Random) -> Any:
    """An equal value under Python ``==`` written differently (numbers retyped, keys
    reordered), or occasionally a slightly different one."""
    if isinstance(value, bool):
        return int(value) if rng.random() < 0.5 else float(value)
    if isinstance(value, int) and abs(value) < 2**53:
        return rng.choice([value, float(value)] + ([bool(value)] if value in (0, 1) else []))
    if isinstance(value, float) and value.is_integer() and rng.random() < 0.5:
        return int(value)
    if isinstance(value, list):
        return [_variant(v, rng) for v in value]
    if isinstance(value, dict):
        items = [(k, _variant(v, rng)) for k, v in value.items()]
        rng.shuffle(items)
        if items and rng.random() < 0.1:
            items.pop()
        return dict(items)
    return value


def _parsed(value: Any) -> Any:
    """What ``json.loads`` gives for ``value`` (one shared NaN object, as OpenHands sees it),
    inside an object, as tool arguments always are."""
    return json.loads(json.dumps({"v": value}))


@settings(max_examples=400, deadline=None)
@given(a=VALUES, b=VALUES, seed=st.integers(0, 1000))
def test_canonical_keys_agree_with_python_equality(a: Any, b: Any, seed: int) -> None:
    rng = random.Random(seed)
    for x, y in ((a, b), (a, _variant(a, rng)), (b, _variant(b, rng))):
        px, py = _parsed(x), _parsed(y)
        assert (canonical(px) == canonical(py)) == (px == py), (px, py)
        assert canonical(px) == canonical(px)


def test_canonical_edge_cases() -> None:
    def same(x: str, y: str) -> bool:
        return canonical(json.loads(x)) == canonical(json.loads(y))

    assert same('{"n": 1}', '{"n": 1.0}') and same('{"n": 1}', '{"n": true}')
    assert same('{"a": 0}', '{"a": -0.0}') and same('{"a": 0}', '{"a": false}')
    assert same('{"a": 1, "b": 2}', '{"b": 2, "a": 1}')
    assert same('{"x": NaN}', '{"x": NaN}') and same('{"x": [NaN]}', '{"x": [NaN]}')
    assert same('{"x": Infinity}', '{"x": 1e999}')
    assert not same('{"x": Infinity}', '{"x": -Infinity}')
    assert not same('{"n": 9007199254740993}', '{"n": 9007199254740992.0}')
    assert same('{"n": 10000000000000000000000}', '{"n": 1e22}')
    assert not same('{"n": "1"}', '{"n": 1}') and not same('{"a": []}', '{"a": {}}')
    assert not same('{"a": [1, 2]}', '{"a": [2, 1]}')
    deep = '{"a": ' + "[" * 900 + "]" * 900 + "}"
    assert same(deep, deep)  # nesting as deep as the parser allows: no recursion


class _Name(str):
    """A ``str`` subclass: its values are not plain scalars to the fast path."""


RECORDED_VALUES: list[Any] = [
    {"n": 1}, {"n": 1.0}, {"n": True}, {"n": 2}, {"n": "1"}, {"n": 1, "z": None},
    {"a": 0}, {"a": -0.0}, {"a": False}, {"a": 0.0},
    {"x": math.nan}, {"x": math.nan, "y": None}, {"x": math.inf}, {"x": -math.inf},
    {"n": 10**5000}, {"n": 10**5000 + 1}, {"n": 2**53 + 1}, {"n": 2.0**53},
    {"a": 1, "b": 2}, {"b": 2, "a": 1}, {1: "a"}, {"1": "a"}, {True: "a"}, {"true": "a"},
    {"security_rort": "low", "q": 1}, {"security_risk": "low", "q": 1},
    {"a": [1]}, {"a": [1.0]}, {"a": {"b": None}}, {"a": {}}, {}, {"s": _Name("x")},
    {"s": "x"}, {"s": "\ud800"}, {"t": (1, 2)}, {"t": [1, 2]}, {"o": object()}, None, [1],
]
"""Arguments recorded as values (not texts): equal ones written differently, and values that
``json.dumps`` rewrites (NaN, tuples, non-string keys), refuses (an integer too long, an
object) or that are not plain."""


def test_recorded_argument_values_agree_with_the_reference() -> None:
    """The fast path remembers flat recorded objects by their entries; every pair of values
    still compares as the reference's actions do. Each session calls ``a`` then ``b`` with the
    same result, so the second check refuses (two identical pairs) exactly when the actions are
    equal; ``b`` is also a fresh copy of ``a`` (a new NaN object)."""
    config = OpenHandsConfig(action_observation=2, action_error=9, monologue=9,
                             alternating_pattern=9)
    refused = 0
    for i, a in enumerate(RECORDED_VALUES):
        for j, b in enumerate([*RECORDED_VALUES, _fresh(a)]):
            builder = SessionBuilder()
            builder.user("go")
            for k, value in enumerate((a, b)):
                turn = builder.assistant("", "")
                builder.call(turn, "read", value, "value", id=f"c{k}")
                builder.result(f"c{k}", "ok", "ok")
            session = builder.build(id=f"values-{i}-{j}", source="gen.json",
                                    format="anthropic_messages")
            plain = ENGINE.replay(session, config)
            assert_same(ENGINE.run(ENGINE.prepare(session), config), plain, session.id)
            refused += plain.first_refusal is not None
    assert refused > 2 * len(RECORDED_VALUES)


def _fresh(value: Any) -> Any:
    """An equal copy (a new NaN object where ``value`` holds one)."""
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    if isinstance(value, float) and value != value:
        return float("nan")
    return value


# --------------------------------------------------------------------------- monotonicity


def _refused(prepared: Any, values: dict[str, Any], field: str, value: int) -> set[int]:
    """The steps refused by the pattern ``field`` names, with ``field`` set to ``value``."""
    config = ENGINE.config({**values, field: value}).config
    return {m.position for m in ENGINE.run(prepared, config).markers
            if m.verdict == "refuse" and m.detector == field}


def test_raising_a_threshold_never_adds_a_refusal_of_its_pattern() -> None:
    """action_observation, monologue and alternating_pattern are each read by one pattern
    only, and none of them changes the nudges: a higher value refuses a subset of the steps."""
    rng = random.Random(11)
    for _ in range(80):
        session = random_session(rng)
        prepared = ENGINE.prepare(session)
        values = random_config(rng).values()
        for field in ("action_observation", "monologue", "alternating_pattern"):
            low = values[field]
            higher = _refused(prepared, values, field, low + rng.randint(1, 4))
            assert higher <= _refused(prepared, values, field, low), (session.id, field)
