"""Sweeps: grid parsing, chunking, and — the point — cells equal to replaying each configuration."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopscope.engines import get_engine
from loopscope.engines.base import ConfigError
from loopscope.experiments.metrics import Metrics, compute_metrics
from loopscope.experiments.sweep import (
    MAX_CELLS,
    Axis,
    ChunkTask,
    GridError,
    SweepCell,
    SweepResult,
    build_cells,
    check_axes,
    chunk_sessions,
    grid_cells,
    parse_axis,
    run_in_process,
    run_sweep,
    sweep_prepared,
)
from loopscope.model import Session
from tests.experiments._sessions import Label, make_session


def engine_or_skip(name: str) -> Any:
    try:
        return get_engine(name)
    except ImportError:
        pytest.skip(f"the {name} engine is not built yet")


# --------------------------------------------------------------------------- grid


@pytest.mark.parametrize(
    ("text", "axis"),
    [
        ("max_repeated_batch_steps=1:4", Axis("max_repeated_batch_steps", (1, 2, 3, 4))),
        ("warningThreshold=2:10:4", Axis("warningThreshold", (2, 6, 10))),
        ("criticalThreshold=3:8:2", Axis("criticalThreshold", (3, 5, 7))),
        (" historySize = 5:5 ", Axis("historySize", (5,))),
        ("postCompactionGuard.windowSize=-1:1", Axis("postCompactionGuard.windowSize", (-1, 0, 1))),
    ],
)
def test_parse_axis(text: str, axis: Axis) -> None:
    assert parse_axis(text) == axis


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("warningThreshold", "expected KEY=LO:HI"),
        ("=1:3", "expected KEY=LO:HI"),
        ("warningThreshold=5", "warningThreshold: expected a range"),
        ("warningThreshold=1:2:3:4", "warningThreshold: expected a range"),
        ("warningThreshold=a:3", "warningThreshold: range bounds must be integers"),
        ("warningThreshold=1.5:3", "warningThreshold: range bounds must be integers"),
        ("warningThreshold=5:2", "warningThreshold: LO (5) must not exceed HI (2)"),
        ("warningThreshold=1:5:0", "warningThreshold: STEP must be at least 1"),
        ("warningThreshold=0:99999999", "more than a sweep can take"),
    ],
)
def test_parse_axis_rejects_bad_ranges_naming_the_key(text: str, message: str) -> None:
    with pytest.raises(GridError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_axis(text)


def test_grid_order_is_first_axis_slowest() -> None:
    cells = grid_cells([Axis("a", (1, 2)), Axis("b", (7, 8, 9))])
    assert cells == [
        {"a": 1, "b": 7}, {"a": 1, "b": 8}, {"a": 1, "b": 9},
        {"a": 2, "b": 7}, {"a": 2, "b": 8}, {"a": 2, "b": 9},
    ]


def test_check_axes() -> None:
    with pytest.raises(GridError, match="nothing to sweep"):
        check_axes([])
    with pytest.raises(GridError, match="a: varied twice"):
        check_axes([Axis("a", (1,)), Axis("a", (2,))])
    big = tuple(range(200))
    with pytest.raises(GridError, match="200 × 200 = 40000 cells"):
        check_axes([Axis("a", big), Axis("b", big)])
    assert MAX_CELLS >= 200 * 50
    check_axes([Axis("a", big), Axis("b", big[:50])])


def test_build_cells_resolves_like_replay_and_keeps_clamp_warnings() -> None:
    engine = get_engine("gglib")
    cells = build_cells(
        "gglib",
        [parse_axis("max_repeated_batch_steps=0:2")],
        {"max_stagnation_steps": 7},
        [("max_observation_steps", "none")],
    )
    assert [dict(c.values) for c in cells] == [
        {"max_repeated_batch_steps": v} for v in (0, 1, 2)
    ]
    for cell in cells:
        expected = engine.resolve_config(
            {"max_stagnation_steps": 7},
            [("max_observation_steps", "none"), ("max_repeated_batch_steps", str(cell.values["max_repeated_batch_steps"]))],
        )
        assert cell.config == expected.config
        assert cell.warnings == expected.warnings
    assert cells[0].warnings and "max_repeated_batch_steps" in cells[0].warnings[0]
    assert cells[1].warnings == ()


def test_build_cells_rejects_an_unknown_key() -> None:
    with pytest.raises(ConfigError, match="no_such_key"):
        build_cells("gglib", [parse_axis("no_such_key=1:2")])


# --------------------------------------------------------------------------- chunking


@given(st.lists(st.integers(0, 30), max_size=40), st.integers(1, 12))
def test_chunks_are_contiguous_nonempty_and_cover_every_session(sizes: list[int], n: int) -> None:
    sessions = [make_session(f"s{i}", [("say", "x")] * k) for i, k in enumerate(sizes)]
    chunks = chunk_sessions(sessions, n)
    assert [s for c in chunks for s in c] == sessions
    assert all(chunks)
    assert len(chunks) <= n
    if sessions:
        assert len(chunks) == min(n, len(sessions))


# --------------------------------------------------------------------------- equal to replay

TOOLS = ("write_file", "read_file", "run_tests", "get_terminal_output")
turn_strategy = st.one_of(
    st.tuples(
        st.just("call"),
        st.sampled_from(TOOLS),
        st.fixed_dictionaries({"p": st.integers(0, 2)}),
        st.sampled_from(["ok", "fail", "same"]),
    ),
    st.tuples(st.just("say"), st.sampled_from(["thinking", "done"])),
    st.tuples(st.just("user"), st.just("again")),
)
# Runs of the same turn make the guards fire often enough for the grid to matter.
session_spec = st.lists(st.tuples(turn_strategy, st.integers(1, 6)), max_size=6).map(
    lambda runs: [turn for turn, times in runs for _ in range(times)]
)
sessions_strategy = st.lists(session_spec, min_size=1, max_size=6).map(
    lambda specs: [make_session(f"corpus/s{i}.json", spec) for i, spec in enumerate(specs)]
)
label_strategy = st.one_of(
    st.none(),
    st.builds(Label, st.just("ok")),
    st.builds(Label, st.just("loop"), st.one_of(st.none(), st.integers(0, 8))),
)

AXES: dict[str, list[tuple[str, int, int]]] = {
    "gglib": [
        ("max_repeated_batch_steps", 0, 5),
        ("max_observation_steps", 1, 6),
        ("max_stagnation_steps", 1, 5),
    ],
    "openclaw": [
        ("warningThreshold", 1, 6),
        ("criticalThreshold", 2, 8),
        ("globalCircuitBreakerThreshold", 3, 12),
        ("historySize", 2, 10),
        ("unknownToolThreshold", 1, 4),
        ("postCompactionGuard.windowSize", 1, 4),
    ],
}


@st.composite
def axes_strategy(draw: st.DrawFn, engine: str) -> list[Axis]:
    keys = draw(st.lists(st.sampled_from(AXES[engine]), min_size=1, max_size=2, unique=True))
    axes = []
    for key, lo, hi in keys:
        a = draw(st.integers(lo, hi))
        b = draw(st.integers(a, min(hi, a + 3)))
        axes.append(Axis(key, tuple(range(a, b + 1))))
    return axes


def replay_metrics(engine_name: str, sessions: Sequence[Session], config: Any, labels: Any) -> Metrics:
    """The plain path: ``replay`` every session under one configuration, then the metrics."""
    engine = get_engine(engine_name)
    return compute_metrics([engine.replay(s, config) for s in sessions], labels, sessions)


def chunked_in_process(tasks: Sequence[ChunkTask], progress: Any) -> list[list[Metrics]]:
    """Run the multi-chunk path without processes (a runner that is not ``run_in_process``)."""
    return run_in_process(tasks, progress)


@pytest.mark.parametrize("engine_name", ["gglib", "openclaw"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_cell_equals_replaying_that_configuration(engine_name: str, data: st.DataObject) -> None:
    engine_or_skip(engine_name)
    sessions = data.draw(sessions_strategy)
    labels = {
        s.source: lab
        for s in sessions
        if (lab := data.draw(label_strategy)) is not None
    }
    axes = data.draw(axes_strategy(engine_name))
    cells = build_cells(engine_name, axes)
    workers = data.draw(st.integers(1, 4))
    seen: list[int] = []
    result = run_sweep(engine_name, sessions, cells, labels, axes=axes, workers=1, progress=seen.append)
    chunked = run_sweep(
        engine_name, sessions, cells, labels, axes=axes, workers=workers, runner=chunked_in_process
    )
    assert sum(seen) == len(sessions)
    assert chunked.cells == result.cells
    assert [dict(c.values) for c in result] == grid_cells(axes)
    for cell in result:
        overrides = [(k, str(v)) for k, v in cell.values.items()]
        config = get_engine(engine_name).resolve_config(None, overrides).config
        assert cell.metrics == replay_metrics(engine_name, sessions, config, labels), cell.values


def test_local_processes_give_the_in_process_answer() -> None:
    sessions = [
        make_session("c/loop.json", [("user", "go")] + [("call", "write_file", {"p": 1}, "ok")] * 6),
        make_session("c/poll.json", [("call", "get_terminal_output", {}, "same")] * 20),
        make_session("c/good.json", [("call", "write_file", {"p": 1}, "ok"), ("call", "run_tests", {}, "fail")] * 3),
        make_session("c/prose.json", [("say", "thinking")] * 8),
    ]
    labels = {"c/loop.json": Label("loop", 1), "c/good.json": Label("ok"), "c/prose.json": Label("loop", 2)}
    axes = [parse_axis("max_repeated_batch_steps=1:4"), parse_axis("max_stagnation_steps=2:6:2")]
    cells = build_cells("gglib", axes)
    here = run_sweep("gglib", sessions, cells, labels, axes=axes, workers=1)
    seen: list[int] = []
    pooled = run_sweep("gglib", sessions, cells, labels, axes=axes, workers=2, progress=seen.append)
    assert pooled.cells == here.cells
    assert sum(seen) == len(sessions)
    # Not trivially equal: the grid really changes the outcome.
    assert len({c.metrics for c in here}) > 1


def test_an_empty_corpus_gives_zero_metrics_per_cell() -> None:
    axes = [parse_axis("max_repeated_batch_steps=1:3")]
    result = run_sweep("gglib", [], build_cells("gglib", axes), {}, axes=axes, workers=3)
    assert [c.metrics for c in result] == [Metrics()] * 3


def test_best_prefers_fewest_wrong_outcomes_then_least_waste() -> None:
    def cell(v: int, **m: int) -> SweepCell:
        return SweepCell("gglib", {"k": v}, Metrics(**m), None)

    result = SweepResult(
        "gglib",
        (Axis("k", (1, 2, 3, 4)),),
        (
            cell(1, false_refusals=2, loops_caught=3, labelled_loops=3),
            cell(2, loops_caught=3, wasted_turns=4, labelled_loops=3),
            cell(3, loops_caught=3, wasted_turns=2, labelled_loops=3),
            cell(4, loops_caught=2, loops_missed=1, labelled_loops=3),
        ),
    )
    best = result.best()
    assert best is not None and best.values == {"k": 3}
    # An adjusted cell (clamped, reordered) is never the recommendation while others exist.
    adjusted = SweepCell("gglib", {"k": 0}, Metrics(loops_caught=3, labelled_loops=3), None, ("clamped",))
    with_adjusted = SweepResult("gglib", result.axes, (adjusted, *result.cells))
    assert with_adjusted.best() == best
    assert SweepResult("gglib", result.axes, (adjusted,)).best() == adjusted
    assert result.cell(k=2).metrics.wasted_turns == 4
    assert SweepResult("gglib", (), ()).best() is None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_sweeping_already_prepared_sessions_gives_the_same_cells(data: st.DataObject) -> None:
    sessions = data.draw(sessions_strategy)
    labels = {s.source: lab for s in sessions if (lab := data.draw(label_strategy)) is not None}
    axes = data.draw(axes_strategy("gglib"))
    cells = build_cells("gglib", axes)
    engine = get_engine("gglib")
    ticks: list[int] = []
    prepared = sweep_prepared(
        "gglib", [engine.prepare(s) for s in sessions], [len(s.turns) for s in sessions],
        cells, labels, sources=[s.source for s in sessions], axes=axes, progress=ticks.append,
    )
    assert prepared.cells == run_sweep("gglib", sessions, cells, labels, axes=axes, workers=1).cells
    assert len(ticks) == len(cells)
