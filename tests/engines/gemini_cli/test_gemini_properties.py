"""Property tests: the fast path equals the plain replay — every field of every step and every
view of the lazy replay — for random sessions and random configurations (the what-if constants
included), one prepared session serving many configurations in any order; and a corpus's batch
run over its table (the content what-ifs walked from the table's text) equals each session's
run and the plain replay."""

from __future__ import annotations

import random
from contextlib import ExitStack
from typing import Any
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.engines.gemini_cli._gemini_gen import random_config, random_session

from loopscope.engines.base import PreparedSessions, SessionReplay
from loopscope.engines.gemini_cli import columns as gemini_columns
from loopscope.engines.gemini_cli.config import GeminiConfig
from loopscope.engines.gemini_cli.engine import ENGINE
from loopscope.engines.gemini_cli.upstream import CONTENT_LOOP


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


what_ifs = st.builds(
    GeminiConfig,
    tool_call_loop_threshold=st.integers(1, 101),
    content_loop_threshold=st.integers(2, 14),
    content_chunk_size=st.integers(1, 70),
    max_history_length=st.one_of(st.integers(1, 80), st.integers(80, 600),
                                 st.integers(600, 6000)),
)


def _corpus(rng: random.Random) -> tuple[list[Any], list[Any], Any]:
    """Random sessions (some twice: equal texts in one block of the corpus's text), prepared,
    and their table as the on-disk cache gives it back (joined from two parts, validated)."""
    sessions = [random_session(rng, steps=rng.randint(3, 70)) for _ in range(rng.randint(1, 7))]
    if rng.random() < 0.5:
        sessions.insert(rng.randint(0, len(sessions)), rng.choice(sessions))
    prepared = [ENGINE.prepare(s) for s in sessions]
    spec = ENGINE.table_spec()
    assert spec is not None
    cut = rng.randint(0, len(prepared))
    joined = spec.join([dict(spec.encode(prepared[:cut])), dict(spec.encode(prepared[cut:]))])
    return sessions, prepared, spec.open(dict(joined.columns))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), config_list=st.lists(what_ifs, min_size=1, max_size=4),
       block=st.sampled_from([None, 1, 40, 300]), hashed=st.sampled_from(["real", "all equal"]))
def test_content_what_ifs_over_a_table_equal_each_session_and_the_plain_replay(
        seed: int, config_list: list[GeminiConfig], block: int | None, hashed: str) -> None:
    """Random sessions × random content what-ifs: the batch run over the table (which walks
    only the stretches that could loop) = each session's run = the plain replay, for every
    session's counts and first refusal; and the content flags alone are exactly the steps the
    plain replay's content detector refuses. Also with text blocks of a few units (stretches
    longer than a block) and with every window hashing alike (the filter then lets every
    stretch through: its condition only has to hold wherever the exact one does)."""
    sessions, prepared, table = _corpus(random.Random(seed))
    listed = PreparedSessions(prepared)
    with ExitStack() as patches:
        if block is not None:
            patches.enter_context(mock.patch.object(gemini_columns, "_BLOCK", block))
        if hashed == "all equal":
            patches.enter_context(mock.patch.object(gemini_columns, "_HIGH", np.uint64(0)))
        for config in [*config_list, GeminiConfig()]:
            batch, batch_list = ENGINE.run_many(table, config), ENGINE.run_many(listed, config)
            flagged: list[int] = []
            offset = 0
            for i, (session, p) in enumerate(zip(sessions, prepared, strict=True)):
                plain = ENGINE.replay(session, config)
                assert ENGINE.run(p, config) == plain
                for columns in (batch, batch_list):
                    assert int(columns.refusal_counts[i]) == plain.refusal_count, (i, config)
                    assert columns.first_refusal(i) == plain.first_refusal, (i, config)
                flagged += [offset + j for j, step in enumerate(plain.steps)
                            if step.detector == CONTENT_LOOP]
                offset += len(plain.steps)
            steps = gemini_columns.Steps(table.columns)
            flags = gemini_columns.content_flags(steps, *config.content_constants)
            assert np.flatnonzero(flags).tolist() == flagged, config


def test_content_what_ifs_find_the_loops_they_should() -> None:
    """The what-ifs do refuse text in these corpora (the property above can fail): a shorter
    window or fewer repeats catch more, a history shorter than a window catches nothing."""
    rng = random.Random(99)
    sessions, prepared, table = _corpus(rng)
    while len(sessions) < 40:
        more = _corpus(rng)
        sessions += more[0]
        prepared += more[1]
    spec = ENGINE.table_spec()
    assert spec is not None
    table = spec.table(prepared)
    steps = gemini_columns.Steps(table.columns)

    def content(chunk: int, threshold: int, history: int) -> int:
        return int(gemini_columns.content_flags(steps, chunk, threshold, history).sum())

    own = content(50, 10, 5000)
    assert own == int(table.columns["content"].sum()) > 0
    assert content(10, 3, 5000) > own > content(50, 10, 40) == content(50, 10, 49) == 0
    assert len(steps._walks) <= 8


def _texts_session(texts: list[str]) -> Any:
    from loopscope.formats.builder import SessionBuilder

    b = SessionBuilder()
    b.user("start")
    for text in texts:
        b.assistant(text)
    return b.build(id=f"t-{abs(hash(tuple(texts)))}", source="made", format="openai_chat")


def test_content_what_ifs_at_the_edges_of_distance_floor_and_length() -> None:
    """Windows exactly at the allowed distance (and one unit further), an earlier occurrence
    exactly at the history floor of the piece that completes the window (and one unit before
    it), and a stretch with exactly ``threshold`` windows: the batch run agrees with the plain
    replay, which refuses exactly the first of each pair."""
    cases = [
        # chunk 2, threshold 2: at most 10 units apart.
        (["ab" + "cdefghij" + "ab"],
         GeminiConfig(content_chunk_size=2, content_loop_threshold=2), True),
        (["ab" + "cdefghijk" + "ab"],
         GeminiConfig(content_chunk_size=2, content_loop_threshold=2), False),
        # Exactly three windows of one text.
        (["aaaa"], GeminiConfig(content_chunk_size=2, content_loop_threshold=3), True),
        (["aaa"], GeminiConfig(content_chunk_size=2, content_loop_threshold=3), False),
        # The second piece completes the repeat at 7 and ends at 15: a history of 15 keeps
        # the first "ab" (floor 0), 14 drops it (floor 1).
        (["abcdef\n", "abghijk\n"],
         GeminiConfig(content_chunk_size=2, content_loop_threshold=2, max_history_length=15),
         True),
        (["abcdef\n", "abghijk\n"],
         GeminiConfig(content_chunk_size=2, content_loop_threshold=2, max_history_length=14),
         False),
    ]
    spec = ENGINE.table_spec()
    assert spec is not None
    for texts, config, refused in cases:
        session = _texts_session(texts)
        plain = ENGINE.replay(session, config)
        assert plain.refused == refused, texts
        table = spec.table([ENGINE.prepare(session)])
        batch = ENGINE.run_many(table, config)
        assert int(batch.refusal_counts[0]) == plain.refusal_count, (texts, config)
        assert batch.first_refusal(0) == plain.first_refusal
