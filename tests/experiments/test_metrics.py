"""Every metric, branch by branch, on hand-built replays and labels.

Positions are assistant-turn indices; ``p`` is where the session was first refused.
"""

from __future__ import annotations

import pytest

from loopscope.experiments.metrics import (
    METRIC_NAMES,
    Metrics,
    Outcome,
    compute_metrics,
    metrics_from_outcomes,
)
from tests.experiments._sessions import Label, fake_replay, make_session


def metrics_of(*cases: tuple[str, int | None, Label | None, int], warned: set[str] = frozenset()) -> Metrics:
    """``(source, refused_turn, label, turns)`` per session."""
    replays = [fake_replay(src, p, warned=src in warned) for src, p, _, _ in cases]
    labels = {src: lab for src, _, lab, _ in cases if lab is not None}
    turns = {src: n for src, _, _, n in cases}
    return compute_metrics(replays, labels, turns)


def test_unlabelled_sessions_count_only_in_sessions_refused_and_warned() -> None:
    m = metrics_of(("a", 3, None, 10), ("b", None, None, 4), warned={"a", "b"})
    assert (m.sessions, m.refused, m.warned) == (2, 1, 2)
    assert m.to_json() | {"sessions": 0, "refused": 0, "warned": 0} == Metrics().to_json()
    assert m.precision is None and m.recall is None


def test_ok_session_refused_is_a_false_refusal_losing_the_rest_of_the_session() -> None:
    m = metrics_of(("good", 4, Label("ok"), 10))
    assert m.false_refusals == 1
    assert m.turns_lost == 10 - 4
    assert (m.loops_caught, m.loops_missed, m.refused_early) == (0, 0, 0)
    assert m.precision == 0.0
    assert m.recall is None  # no labelled loop


def test_ok_session_not_refused_counts_nothing() -> None:
    m = metrics_of(("good", None, Label("ok"), 10))
    assert (m.false_refusals, m.turns_lost, m.refused) == (0, 0, 0)
    assert m.precision is None


def test_loop_refused_at_its_start_is_caught_with_no_waste() -> None:
    m = metrics_of(("loop", 5, Label("loop", 5), 9))
    assert (m.loops_caught, m.wasted_turns) == (1, 0)
    assert (m.precision, m.recall) == (1.0, 1.0)


def test_loop_refused_after_its_start_wastes_the_turns_in_between() -> None:
    m = metrics_of(("loop", 7, Label("loop", 2), 9))
    assert (m.loops_caught, m.wasted_turns) == (1, 5)


def test_loop_start_defaults_to_turn_zero() -> None:
    m = metrics_of(("loop", 3, Label("loop", None), 9))
    assert (m.loops_caught, m.wasted_turns, m.refused_early) == (1, 3, 0)


def test_loop_refused_before_it_began_is_refused_early_not_caught() -> None:
    m = metrics_of(("loop", 1, Label("loop", 2), 9))
    assert (m.refused_early, m.loops_caught, m.wasted_turns, m.loops_missed) == (1, 0, 0, 0)
    assert m.precision == 0.0
    assert m.recall == 0.0


def test_loop_never_refused_is_missed() -> None:
    m = metrics_of(("loop", None, Label("loop", 0), 9))
    assert (m.loops_missed, m.loops_caught) == (1, 0)
    assert m.recall == 0.0
    assert m.precision is None  # nothing labelled was refused


def test_precision_and_recall_over_a_mixed_corpus() -> None:
    m = metrics_of(
        ("caught1", 3, Label("loop", 1), 6),  # caught, 2 wasted
        ("caught2", 0, Label("loop"), 6),  # caught, 0 wasted
        ("early", 0, Label("loop", 2), 6),  # refused early
        ("missed", None, Label("loop", 1), 6),  # missed
        ("false", 2, Label("ok"), 6),  # false refusal, 4 lost
        ("fine", None, Label("ok"), 6),
        ("other", 1, None, 6),  # unlabelled, refused
        warned={"fine", "missed"},
    )
    assert m.to_json() == {
        "sessions": 7,
        "refused": 5,
        "warned": 2,
        "false_refusals": 1,
        "turns_lost": 4,
        "loops_caught": 2,
        "wasted_turns": 2,
        "refused_early": 1,
        "loops_missed": 1,
        "precision": 2 / 4,
        "recall": 2 / 4,
    }


def test_unknown_label_values_count_as_unlabelled() -> None:
    m = metrics_of(("x", 1, Label("maybe"), 4))
    assert m == Metrics(sessions=1, refused=1)


def test_metric_names_are_the_json_keys_in_order() -> None:
    assert METRIC_NAMES == (
        "sessions", "refused", "warned", "false_refusals", "turns_lost", "loops_caught",
        "wasted_turns", "refused_early", "loops_missed", "precision", "recall",
    )


def test_metrics_add_over_disjoint_sessions() -> None:
    labels = {"a": Label("loop", 1), "b": Label("ok"), "c": Label("loop", 3)}
    outcomes = [
        Outcome("a", 2, False, 5),
        Outcome("b", 1, True, 5),
        Outcome("c", 1, False, 5),
        Outcome("d", None, True, 5),
    ]
    whole = metrics_from_outcomes(outcomes, labels)
    halves = metrics_from_outcomes(outcomes[:2], labels) + metrics_from_outcomes(outcomes[2:], labels)
    assert halves == whole
    assert whole.precision == pytest.approx(1 / 3)


def test_turns_come_from_the_sessions_themselves() -> None:
    session = make_session("s.json", [("user", "go"), ("say", "hm"), ("say", "hm"), ("say", "hm")])
    assert len(session.turns) == 3
    m = compute_metrics([fake_replay("s.json", 1)], {"s.json": Label("ok")}, [session])
    assert m.turns_lost == 2


@pytest.mark.parametrize("engine_name", ["gglib", "openclaw", "openhands", "gemini-cli"])
def test_metrics_and_changes_read_off_a_batch_runs_columns_equal_the_replays(
        engine_name: str) -> None:
    """The dashboard's metrics, sweeps and comparisons read a batch run's columns (building
    20,000 replays costs seconds): the same metrics as :func:`compute_metrics` of the replays
    and the same changes as :func:`compare_replays`, on the samples with their labels, under
    the default configuration and under every integer setting moved down and up by one."""
    from pathlib import Path

    from loopscope.engines import get_engine
    from loopscope.experiments.compare import compare_columns, compare_replays
    from loopscope.experiments.metrics import metrics_of_columns, outcome_of, outcomes_of_columns
    from loopscope.formats import load_paths
    from loopscope.labels import labels_for_sessions

    samples = Path(__file__).resolve().parents[2] / "sample_transcripts"
    sessions = load_paths([str(samples)]).sessions
    labels, _ = labels_for_sessions([str(samples)])
    assert labels, "the samples' labels.csv was not read: the comparison would prove little"
    engine = get_engine(engine_name)
    prepared = [engine.prepare(s) for s in sessions]
    sources = [s.source for s in sessions]
    turns = [len(s.turns) for s in sessions]
    configs = [engine.default_config()]
    for spec in engine.settings_for(engine.default_version):
        if spec.kind == "int":
            for value in (spec.default - 1, spec.default + 1):
                if value >= 1:
                    configs.append(engine.resolve_config(None, [(spec.name, str(value))]).config)
    runs = [engine.run_many(prepared, config) for config in configs]
    for config, columns in zip(configs, runs, strict=True):
        replays = [engine.run(p, config) for p in prepared]
        assert outcomes_of_columns(columns, sources, turns) == [
            outcome_of(r, t) for r, t in zip(replays, turns, strict=True)]
        assert metrics_of_columns(columns, labels, sources, turns) == compute_metrics(
            replays, labels, sessions)
    ids = [s.id for s in sessions]
    before = [engine.run(p, configs[0]) for p in prepared]
    changed = 0
    for config, columns in zip(configs[1:], runs[1:], strict=True):
        expected = compare_replays(zip(before, [engine.run(p, config) for p in prepared],
                                       strict=True))
        assert compare_columns(runs[0], columns, sources, ids) == expected
        changed += len(expected.changes)
    assert any(columns.refused.any() for columns in runs) and changed
