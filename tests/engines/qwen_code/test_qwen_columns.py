"""Qwen Code's corpus-wide re-run over columns (``run_many``) equals each session's run, which
equals the plain replay: for random corpora and every setting (the what-ifs included), on a
table (joined from parts and validated, as the cache reads it), a list that keeps derived data
and a plain list; only the sessions the columns cannot answer are run one by one."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.engines.qwen_code._qwen_gen import CONFIGS, random_session
from tests.engines.test_run_many import assert_columns_equal

from loopscope.engines.base import PreparedSessions
from loopscope.engines.qwen_code import columns as qwen_columns
from loopscope.engines.qwen_code.config import ADAPTIVE, EXPLICIT, QwenConfig
from loopscope.engines.qwen_code.engine import ENGINE, QwenCodeEngine
from loopscope.engines.qwen_code.upstream import Constants
from loopscope.engines.table import TableError
from loopscope.formats.builder import SessionBuilder
from loopscope.model import Session

_OWN = Constants()


def _constant(own: int, low: int, high: int) -> Any:
    """Qwen Code's value half the time (its own text walk is kept in columns), else any."""
    return st.one_of(st.just(own), st.integers(low, high))


configs = st.builds(
    QwenConfig,
    skip_loop_detection=st.booleans(),
    max_tool_calls_per_turn=st.one_of(st.integers(0, 30), st.just(100), st.integers(-3, 0)),
    cap_mode=st.sampled_from([ADAPTIVE, EXPLICIT]),
    constants=st.builds(
        Constants,
        tool_call_loop_threshold=st.integers(1, 8),
        content_loop_threshold=_constant(_OWN.content_loop_threshold, 2, 14),
        global_duplicate_threshold=st.integers(1, 9),
        alternating_pattern_cycles=st.integers(1, 5),
        file_read_threshold=st.integers(1, 15),
        stagnation_threshold=st.integers(1, 10),
        adaptive_cap_hard_multiplier=st.integers(1, 4),
        thought_repeat_threshold=_constant(_OWN.thought_repeat_threshold, 1, 5)),
)


def _corpus(seed: int, n: int) -> tuple[list[Session], list[Any], Any]:
    """``n`` random sessions, prepared, and their table (joined from two parts, then opened as
    the on-disk cache opens it: validated and checked)."""
    rng = random.Random(seed)
    sessions = [random_session(rng, max_turns=rng.choice([8, 30, 70])) for _ in range(n)]
    prepared = [ENGINE.prepare(s) for s in sessions]
    spec = ENGINE.table_spec()
    assert spec is not None and not spec.keep_all  # columns of its own
    cut = n // 3
    joined = spec.join([dict(spec.encode(prepared[:cut])), dict(spec.encode(prepared[cut:]))])
    return sessions, prepared, spec.open(joined.columns)


def _all_equal(sessions: list[Session], prepared: list[Any], table: Any,
               config: QwenConfig) -> list[Any]:
    singles = [ENGINE.run(p, config) for p in prepared]
    assert singles == [ENGINE.replay(s, config) for s in sessions]
    assert_columns_equal(ENGINE.run_many(table, config), singles)
    assert_columns_equal(ENGINE.run_many(PreparedSessions(prepared), config), singles)
    assert_columns_equal(ENGINE.run_many(prepared, config), singles)
    return singles


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), config_list=st.lists(configs, min_size=1, max_size=4))
def test_run_many_equals_run_equals_replay(seed: int, config_list: list[QwenConfig]) -> None:
    sessions, prepared, table = _corpus(seed, 9)
    for config in [*config_list, QwenConfig(), QwenConfig(skip_loop_detection=False)]:
        _all_equal(sessions, prepared, table, config)


def test_every_detector_comes_first_somewhere_and_every_config_agrees() -> None:
    """The generator's configurations on a larger corpus: equal everywhere, and every
    detector is some session's first refusal (so the test can fail on each)."""
    sessions, prepared, table = _corpus(34, 80)
    rng = random.Random(35)
    cases = [*CONFIGS.values(),
             QwenConfig(False, 0, EXPLICIT, Constants(stagnation_threshold=3,
                                                      global_duplicate_threshold=20)),
             QwenConfig(True, 9, EXPLICIT, Constants(tool_call_loop_threshold=3,
                                                     stagnation_threshold=2))]
    for _ in range(12):
        cases.append(QwenConfig(rng.random() < 0.4, rng.choice([0, 3, 10, 25, 100]),
                                rng.choice([ADAPTIVE, EXPLICIT]), Constants(
                                    tool_call_loop_threshold=rng.randint(1, 7),
                                    global_duplicate_threshold=rng.randint(2, 8),
                                    alternating_pattern_cycles=rng.randint(1, 4),
                                    file_read_threshold=rng.randint(2, 12),
                                    stagnation_threshold=rng.randint(2, 9),
                                    adaptive_cap_hard_multiplier=rng.randint(1, 3))))
    first: set[str] = set()
    for config in cases:
        singles = _all_equal(sessions, prepared, table, config)
        first |= {r.first_refusal.detector for r in singles if r.first_refusal}
    assert first == set(qwen_columns.DETECTORS)


def _counting_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Sessions run one by one (``ENGINE.run``) from here on."""
    runs: list[int] = []
    plain = QwenCodeEngine.run

    def counted(self: Any, prepared: Any, config: Any) -> Any:
        runs.append(1)
        return plain(self, prepared, config)

    monkeypatch.setattr(QwenCodeEngine, "run", counted)
    return runs


def test_the_re_run_is_in_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the opt-in checks off (Qwen Code's default) no session is run one by one, whatever
    the cap, its mode or a what-if; with them on, only the sessions where an always-on
    detection changes the reply checks (few), and under a content or thought what-if those
    with reply text (thoughts)."""
    _, prepared, table = _corpus(36, 60)
    steps = qwen_columns.Steps(table.columns)
    runs = _counting_runs(monkeypatch)
    for config in (QwenConfig(), QwenConfig(max_tool_calls_per_turn=3, cap_mode=EXPLICIT),
                   QwenConfig(max_tool_calls_per_turn=4),
                   QwenConfig(True, 5, ADAPTIVE, CONFIGS["what-ifs"].constants)):
        ENGINE.run_many(table, config)
        assert runs == [], config
    on = QwenConfig(skip_loop_detection=False)
    columns = ENGINE.run_many(table, on)
    always, _ = qwen_columns._always_on(steps, on)
    alone = qwen_columns.one_by_one(steps, on, always)
    assert len(runs) == len(alone) < len(prepared) // 4
    runs.clear()
    for name, constants, sessions in (
            ("content", Constants(content_loop_threshold=7), steps.text_sessions),
            ("thought", Constants(thought_repeat_threshold=2), steps.thought_sessions)):
        ENGINE.run_many(table, QwenConfig(False, 100, ADAPTIVE, constants))
        assert len(runs) >= len(sessions) > 0, name
        assert len(runs) <= len(np.union1d(sessions, alone)), name
        runs.clear()
    assert columns.refused.any()


def _calls(events: list[Any]) -> Session:
    """A session from ``("text", s)``, ``("user",)`` and ``(name, args)`` events, one assistant
    turn per event."""
    b = SessionBuilder()
    b.user("go")
    for n, event in enumerate(events):
        if event[0] == "user":
            b.user("more")
        elif event[0] == "text":
            b.assistant(event[1])
        else:
            turn = b.assistant("")
            b.call(turn, event[0], event[1], "value", id=f"c{n}")
    return b.build(id="hand", source="hand", format="openai_chat")


@pytest.mark.parametrize("events", [
    # Consecutive detections are not counted by the shell streak nor by the cap.
    [("run_shell_command", {"command": "git status"})] * 9
    + [("run_shell_command", {"command": "git diff"})] * 3,
    [("read_file", {"path": "/a"})] * 7 + [("edit", {"p": i}) for i in range(6)],
    # An always-on detection with text pending: the session is run one by one.
    [("text", "same words again and again " * 30), ("read_file", {"path": "/a"})] * 6,
    [("read_file", {"path": "/a"}), ("edit", {}), ("user",)] * 4,
])
def test_hand_built_sessions(events: list[Any]) -> None:
    session = _calls(events)
    prepared = [ENGINE.prepare(session)]
    table = ENGINE.table_spec().table(prepared)
    for config in (QwenConfig(), QwenConfig(skip_loop_detection=False),
                   QwenConfig(False, 4, EXPLICIT, Constants(tool_call_loop_threshold=3,
                                                            stagnation_threshold=4)),
                   QwenConfig(True, 2, ADAPTIVE, Constants(tool_call_loop_threshold=2,
                                                           stagnation_threshold=2,
                                                           global_duplicate_threshold=2))):
        _all_equal([session], prepared, table, config)


def test_a_damaged_table_is_refused() -> None:
    _, _, table = _corpus(37, 6)
    spec = ENGINE.table_spec()
    calls = np.flatnonzero(table.columns["call"] >= 0)
    texts = np.flatnonzero(table.columns["call"] < 0)
    for name, at, value in (("key", calls[0], -1), ("rep", calls[0], 0),
                            ("text_hit", texts[0], len(qwen_columns.DETECTORS)),
                            ("text_hit", calls[0], 0), ("name", texts[0], 2),
                            ("turn", 0, -1), ("text_kind", texts[0], 5)):
        damaged = {k: v.copy() for k, v in table.columns.items()}
        damaged[name][at] = value
        with pytest.raises(TableError):
            spec.open(damaged)
    spec.open({k: v.copy() for k, v in table.columns.items()})  # (the undamaged one opens)


def test_a_table_reads_back_every_session() -> None:
    """Beside its columns the table keeps each session's JSON: a session read back (a drawn
    row, an opened session) is the session prepared."""
    sessions, prepared, table = _corpus(38, 12)
    config = CONFIGS["what-ifs"]
    for i, (session, p) in enumerate(zip(sessions, prepared, strict=True)):
        back = table[i]
        assert ENGINE.encode_prepared(back) == ENGINE.encode_prepared(p), i
        assert ENGINE.run(back, config) == ENGINE.replay(session, config), i


def test_a_call_that_clears_nothing_lets_thoughts_pile_up(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The 5th identical call is stopped by the always-on tier, so it is not fed to the
    heuristics and does not clear the thoughts: the thought before it and the one after make
    three in a row with the one before (a detection the walk with every call fed never sees).
    The columns hand this session to the per-session run; without the thought after the call
    nothing can differ, and nothing is run one by one."""
    def session(last_thought: bool) -> Session:
        b = SessionBuilder()
        b.user("go")
        thought = "I should read the file again."
        for k in range(5):
            if k == 4:
                b.assistant("", thinking=thought)
            turn = b.assistant("", thinking=thought)
            b.call(turn, "read_file", {"path": "/a"}, "value", id=f"c{k}")
        if last_thought:
            b.assistant("", thinking=thought)
        return b.build(id="thoughts", source="hand", format="openai_chat")

    config = QwenConfig(skip_loop_detection=False)
    runs = _counting_runs(monkeypatch)
    for last in (True, False):
        one = session(last)
        table = ENGINE.table_spec().table([ENGINE.prepare(one)])
        replay = ENGINE.replay(one, config)
        assert ("repetitive_thoughts" in [s.detector for s in replay.steps]) is last
        runs.clear()
        columns = ENGINE.run_many(table, config)
        assert len(runs) == (1 if last else 0)
        assert_columns_equal(columns, [replay])
