"""Property tests (engine spec §3.4, §7.8): the fast path equals the plain replay, monotonicity
of the critical thresholds, and hash invariances."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.engines.openclaw._openclaw_gen import random_block, random_session

from loopscope.engines.openclaw import ENGINE, OpenClawConfig, hash_tool_call
from loopscope.engines.openclaw.jsvalue import js_json_parse, stable_stringify

SEEDS = range(60)


def _sessions() -> list[Any]:
    rng = random.Random(4242)
    return [random_session(rng) for _ in SEEDS]


SESSIONS = _sessions()


def test_fast_path_equals_plain_replay() -> None:
    rng = random.Random(99)
    for session in SESSIONS:
        prepared = ENGINE.prepare(session)
        for _ in range(4):
            config = OpenClawConfig.from_block(random_block(rng))
            assert ENGINE.run(prepared, config) == ENGINE.replay(session, config), session.id


def test_fast_path_reuse_in_any_order() -> None:
    """Cached counters and steps never leak between configurations."""
    rng = random.Random(5)
    session = SESSIONS[0]
    prepared = ENGINE.prepare(session)
    configs = [OpenClawConfig.from_block(random_block(rng)) for _ in range(12)]
    first = [ENGINE.run(prepared, c) for c in configs]
    again = [ENGINE.run(prepared, c) for c in reversed(configs)]
    assert first == list(reversed(again))


def _refused(session: Any, config: OpenClawConfig) -> set[int]:
    return {n for n, s in enumerate(ENGINE.replay(session, config).steps)
            if s.verdict == "refuse"}


def _critical_generic(session: Any, config: OpenClawConfig) -> set[int]:
    return {n for n, s in enumerate(ENGINE.replay(session, config).steps)
            if s.verdict == "refuse" and s.detector == "generic_repeat"}


def test_raising_critical_threshold_never_adds_refusals() -> None:
    rng = random.Random(11)
    for session in SESSIONS[:40]:
        block = random_block(rng)
        block["enabled"] = True
        base = OpenClawConfig.from_block(block)
        low = base.critical_threshold
        prepared = ENGINE.prepare(session)
        previous = {n for n, s in enumerate(ENGINE.run(prepared, base).steps)
                    if s.verdict == "refuse"}
        for critical in (low + 1, low + 3, low + 10, low + 40):
            raised = base.with_settings(criticalThreshold=critical)
            steps = ENGINE.run(prepared, raised).steps
            refused = {n for n, s in enumerate(steps) if s.verdict == "refuse"}
            assert refused <= previous, (session.id, critical)
            generic = {n for n, s in enumerate(steps)
                       if s.verdict == "refuse" and s.detector == "generic_repeat"}
            lower_generic_or_breaker = {
                n for n, s in enumerate(ENGINE.run(prepared, base).steps)
                if s.verdict == "refuse" and s.detector in ("generic_repeat",
                                                            "global_circuit_breaker")}
            assert generic <= lower_generic_or_breaker, (session.id, critical)
            previous = refused


def test_raising_breaker_and_unknown_thresholds_never_adds_refusals() -> None:
    rng = random.Random(12)
    for session in SESSIONS[:40]:
        base = OpenClawConfig.from_block({**random_block(rng), "enabled": True})
        before = _refused(session, base)
        for key in ("globalCircuitBreakerThreshold", "unknownToolThreshold"):
            current = base.settings()[key]
            raised = base.with_settings(**{key: current + rng.randint(1, 10)})
            assert _refused(session, raised) <= before


def test_raising_guard_window_never_refuses_a_clean_session() -> None:
    rng = random.Random(13)
    for session in SESSIONS:
        base = OpenClawConfig.from_block({**random_block(rng), "enabled": True})
        if _refused(session, base):
            continue
        for window in range(base.guard_window_size + 1, base.guard_window_size + 4):
            assert not _refused(session, base.with_settings(
                **{"postCompactionGuard.windowSize": window}))


def test_counts_do_not_depend_on_thresholds() -> None:
    """For a fixed window, every detector count is threshold-independent (§3.4)."""
    session = SESSIONS[1]
    prepared = ENGINE.prepare(session)
    ENGINE.run(prepared, OpenClawConfig.from_block({"warningThreshold": 1}))
    ENGINE.run(prepared, OpenClawConfig.from_block({"warningThreshold": 9,
                                                    "criticalThreshold": 50}))
    assert list(prepared._counters) == [30]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=6), children, max_size=5),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=8), json_values, max_size=8), st.randoms())
def test_argument_key_order_never_changes_the_hash(params: dict[str, Any],
                                                   rnd: random.Random) -> None:
    items = list(params.items())
    rnd.shuffle(items)
    assert hash_tool_call("t", dict(items)) == hash_tool_call("t", params)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_stable_text_parses_back_to_the_value(value: Any) -> None:
    """The stable form is JSON whose JS parse has the same stable form."""
    text = stable_stringify(value)
    ok, parsed = js_json_parse(text)
    assert ok
    assert stable_stringify(parsed) == text
