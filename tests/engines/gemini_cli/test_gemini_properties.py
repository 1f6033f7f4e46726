"""Property tests: the fast path equals the plain replay — every field of every step and every
view of the lazy replay — for random sessions and random configurations (the what-if constants
included), one prepared session serving many configurations in any order."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.engines.gemini_cli._gemini_gen import random_config, random_session

from loopscope.engines.base import SessionReplay
from loopscope.engines.gemini_cli.config import GeminiConfig
from loopscope.engines.gemini_cli.engine import ENGINE


def _views(replay: SessionReplay) -> tuple[Any, ...]:
    """Every view, each read on a fresh object first (the lazy paths answer without steps)."""
    return (replay.first_refusal, replay.refused, replay.warned, replay.refusal_count,
            replay.warning_count, replay.markers, replay.flagged, replay.to_json(),
            replay.steps)


def _fresh_views(make: Any) -> tuple[Any, ...]:
    """Each view from its own fresh replay, so no view is answered from another's cache."""
    names = ("first_refusal", "refused", "warned", "refusal_count", "warning_count", "markers",
             "flagged")
    out = [getattr(make(), name) for name in names]
    out.append(make().to_json())
    out.append(make().steps)
    return tuple(out)


configs = st.builds(
    GeminiConfig,
    enabled=st.booleans(),
    tool_call_loop_threshold=st.integers(1, 8),
    content_loop_threshold=st.integers(2, 14),
    content_chunk_size=st.integers(1, 70),
    max_history_length=st.one_of(st.just(5000), st.integers(1, 600), st.integers(600, 6000)),
)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), config_list=st.lists(configs, min_size=1, max_size=5))
def test_fast_path_equals_plain_replay(seed: int, config_list: list[GeminiConfig]) -> None:
    session = random_session(random.Random(seed))
    prepared = ENGINE.prepare(session)
    for config in [*config_list, GeminiConfig(), *reversed(config_list)]:
        plain = ENGINE.replay(session, config)
        assert ENGINE.run(prepared, config) == plain
        assert _fresh_views(lambda c=config: ENGINE.run(prepared, c)) == _views(plain)


def test_one_prepared_session_serves_many_configs_in_any_order() -> None:
    rng = random.Random(8)
    for _ in range(25):
        session = random_session(rng, steps=rng.randint(20, 80))
        prepared = ENGINE.prepare(session)
        cases = [random_config(rng) for _ in range(8)]
        first = [ENGINE.run(prepared, c).to_json() for c in cases]
        order = list(range(len(cases)))
        rng.shuffle(order)
        for i in order:
            again = ENGINE.run(prepared, cases[i]).to_json()
            assert again == first[i] == ENGINE.replay(session, cases[i]).to_json()


def test_many_random_sessions_default_and_disabled() -> None:
    rng = random.Random(2026)
    refused = 0
    for _ in range(150):
        session = random_session(rng)
        prepared = ENGINE.prepare(session)
        for config in (GeminiConfig(), GeminiConfig(enabled=False)):
            plain = ENGINE.replay(session, config)
            assert ENGINE.run(prepared, config).to_json() == plain.to_json()
            refused += plain.refused
            if not config.enabled:
                assert not plain.refused
    assert refused > 30  # the generator does produce loops


def test_disabled_records_nothing_and_loops_then_count_per_prompt() -> None:
    """Counts restart at every user message and keep growing within a prompt."""
    rng = random.Random(3)
    for _ in range(80):
        session = random_session(rng)
        steps = ENGINE.replay(session, GeminiConfig()).steps
        counts: dict[int, int] = {}
        for step in steps:
            prompt = step.extra["prompt"]
            if step.verdict == "refuse":
                assert step.count is not None and step.count > counts.get(prompt, 0)
                counts[prompt] = step.count + step.extra["detections"] - 1
                assert step.extra["intervention"] == ("recovery" if step.count == 1 else "halt")
            else:
                assert step.count is None and step.extra["intervention"] is None


def test_remembered_content_walks_are_bounded_and_stay_right() -> None:
    session = random_session(random.Random(77), steps=60)
    prepared = ENGINE.prepare(session)
    configs = [GeminiConfig(content_chunk_size=size) for size in range(5, 41, 3)]
    for config in [*configs, *reversed(configs), GeminiConfig()]:
        assert ENGINE.run(prepared, config) == ENGINE.replay(session, config)
    assert len(prepared._content) <= 8
    assert GeminiConfig().content_constants in prepared._content
