"""Threshold sweeps: the metrics of every configuration on a grid of one or more parameters.

A grid is given as axes ``KEY=LO:HI[:STEP]`` over an engine's ``--set`` keys. Each cell's
configuration is built the way ``loopscope replay`` builds one —
``engine.resolve_config(file_settings, base_set + cell_set, agent)`` — so a cell means exactly
what the same ``--set`` flags mean to ``replay``.

The expensive work is per session, not per cell: sessions are split into contiguous chunks, and
whoever runs a chunk (this process, a worker process, or a Dask worker) prepares each of its
sessions once and runs every cell's configuration over the prepared data. A chunk returns one
partial :class:`~loopscope.experiments.metrics.Metrics` per cell; the metrics are additive
counts, so summing the chunks in chunk order gives the same answer however the work was split
or scheduled.
"""

from __future__ import annotations

import math
import multiprocessing
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from loopscope.engines import ConfigError, get_engine
from loopscope.engines.base import KeepsDerived, PreparedSessions
from loopscope.experiments.metrics import (
    LabelLike,
    Metrics,
    metrics_from_outcomes,
    metrics_of_columns,
    outcome_of,
)

if TYPE_CHECKING:
    from loopscope.model import Session

__all__ = [
    "MAX_CELLS",
    "Axis",
    "ChunkTask",
    "GridError",
    "Progress",
    "SweepCell",
    "SweepResult",
    "build_cells",
    "chunk_sessions",
    "parse_axis",
    "run_chunk",
    "run_sweep",
    "sweep_prepared",
]

MAX_CELLS = 10_000
"""A grid larger than this is almost certainly a typo in a range; refuse it with a message."""

Progress = Callable[[int], object]
"""Called with the number of sessions just finished (``tqdm.update`` fits)."""


class GridError(ValueError):
    """A ``--vary`` axis that cannot be used. The message names the key."""


@dataclass(frozen=True, slots=True)
class Axis:
    """One varied parameter and the values it takes, in order."""

    key: str
    values: tuple[int, ...]

    def __str__(self) -> str:
        return f"{self.key}={self.values[0]}..{self.values[-1]}"


def parse_axis(text: str) -> Axis:
    """``KEY=LO:HI[:STEP]`` → an :class:`Axis` with LO, LO+STEP, … up to HI inclusive."""
    key, sep, spec = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise GridError(f"{text!r}: expected KEY=LO:HI[:STEP]")
    parts = spec.split(":")
    if len(parts) not in (2, 3):
        raise GridError(f"{key}: expected a range LO:HI or LO:HI:STEP, got {spec!r}")
    try:
        numbers = [int(p.strip()) for p in parts]
    except ValueError:
        raise GridError(f"{key}: range bounds must be integers, got {spec!r}") from None
    lo, hi = numbers[0], numbers[1]
    step = numbers[2] if len(numbers) == 3 else 1
    if step < 1:
        raise GridError(f"{key}: STEP must be at least 1, got {step}")
    if lo > hi:
        raise GridError(f"{key}: LO ({lo}) must not exceed HI ({hi})")
    count = (hi - lo) // step + 1
    if count > MAX_CELLS:
        raise GridError(f"{key}: {count} values is more than a sweep can take ({MAX_CELLS})")
    return Axis(key, tuple(range(lo, hi + 1, step)))


def grid_cells(axes: Sequence[Axis]) -> list[dict[str, int]]:
    """Every combination of the axes' values, the first axis varying slowest."""
    cells: list[dict[str, int]] = [{}]
    for axis in axes:
        cells = [{**cell, axis.key: v} for cell in cells for v in axis.values]
    return cells


def check_axes(axes: Sequence[Axis]) -> None:
    """Raise :class:`GridError` for no axis, a key varied twice, or a grid too large."""
    if not axes:
        raise GridError("nothing to sweep: give at least one --vary KEY=LO:HI[:STEP]")
    seen: set[str] = set()
    for axis in axes:
        if axis.key in seen:
            raise GridError(f"{axis.key}: varied twice")
        seen.add(axis.key)
    size = math.prod(len(a.values) for a in axes)
    if size > MAX_CELLS:
        raise GridError(
            f"{' × '.join(str(len(a.values)) for a in axes)} = {size} cells is more than a "
            f"sweep can take ({MAX_CELLS}); narrow a range or raise its STEP"
        )


@dataclass(frozen=True, slots=True)
class CellConfig:
    """One grid cell: the varied values and the configuration resolved from them."""

    values: Mapping[str, int]
    config: Any
    warnings: tuple[str, ...]


def build_cells(
    engine: str,
    axes: Sequence[Axis],
    file_settings: Mapping[str, Any] | None = None,
    base_set: Sequence[tuple[str, str]] = (),
    agent: str | None = None,
    version: str | None = None,
    base_values: Mapping[str, Any] | None = None,
) -> list[CellConfig]:
    """Resolve every cell's configuration, as ``replay`` would with ``--set`` base + cell.

    ``base_values`` (typed setting values) replace ``file_settings``/``base_set`` when given.
    Raises :class:`GridError` for bad axes and :class:`~loopscope.engines.base.ConfigError`
    (naming the key) for a key that is not a numeric setting of the engine's schema (naming the
    ones that are) or a value the engine does not accept.
    """
    check_axes(axes)
    eng = get_engine(engine)
    numeric = [s.name for s in eng.settings_for(version) if s.kind in ("int", "int_or_off")]
    for axis in axes:
        if axis.key not in numeric:
            raise ConfigError(f"{axis.key}: not a numeric setting of the {engine} engine "
                            f"(sweepable: {', '.join(numeric) or 'none'})")
    cells: list[CellConfig] = []
    for values in grid_cells(axes):
        if base_values is not None:  # typed values (the dashboard's controls)
            resolution = eng.config({**base_values, **values}, version)
            cells.append(CellConfig(values, resolution.config, tuple(resolution.warnings)))
            continue
        overrides = [*base_set, *((k, str(v)) for k, v in values.items())]
        resolution = eng.resolve_config(file_settings, overrides, agent, version)
        cells.append(CellConfig(values, resolution.config, tuple(resolution.warnings)))
    return cells


@dataclass(frozen=True, slots=True)
class SweepCell:
    """The metrics of one grid cell."""

    engine: str
    values: Mapping[str, int]
    """The varied keys and this cell's values, in axis order."""
    metrics: Metrics
    config: Any
    """The resolved engine configuration the cell ran with."""
    warnings: tuple[str, ...] = ()
    """Clamps and similar notes from resolving the configuration."""

    def to_json(self) -> dict[str, Any]:
        """One line of ``loopscope sweep --json``."""
        return {"engine": self.engine, "config": dict(self.values), "metrics": self.metrics.to_json()}


def _badness(cell: SweepCell) -> tuple[bool, int, int, int]:
    m = cell.metrics
    wrong = m.false_refusals + m.refused_early + m.loops_missed
    return (bool(cell.warnings), wrong, m.wasted_turns, m.turns_lost)


@dataclass(frozen=True, slots=True)
class SweepResult:
    """Every cell of a sweep, in grid order (the first axis varying slowest)."""

    engine: str
    axes: tuple[Axis, ...]
    cells: tuple[SweepCell, ...]

    def __iter__(self) -> Iterator[SweepCell]:
        return iter(self.cells)

    def __len__(self) -> int:
        return len(self.cells)

    def cell(self, **values: int) -> SweepCell:
        """The cell with these varied values."""
        for c in self.cells:
            if dict(c.values) == values:
                return c
        raise KeyError(values)

    def best(self) -> SweepCell | None:
        """The cell with the fewest wrong outcomes on labelled sessions.

        Wrong outcomes are false refusals, loops refused before they began and loops missed;
        ties go to fewer wasted turns, then fewer turns lost, then the earlier cell in grid
        order. A cell the engine had to adjust (a clamp, a threshold raised to keep the order)
        is not what its values say, so it is chosen only when every cell was adjusted.
        ``None`` for an empty grid.
        """
        if not self.cells:
            return None
        return min(self.cells, key=_badness)


class _PlainLabel(NamedTuple):
    """A label reduced to what the metrics read, so it travels to workers cheaply."""

    label: str
    from_turn: int | None


class ChunkTask(NamedTuple):
    """One unit of work: a contiguous run of sessions against every cell's configuration."""

    engine: str
    sessions: tuple[Session, ...]
    configs: tuple[Any, ...]
    labels: dict[str, _PlainLabel]


def run_chunk(
    engine: str,
    sessions: Sequence[Session],
    configs: Sequence[Any],
    labels: Mapping[str, LabelLike],
) -> list[Metrics]:
    """Metrics of ``sessions`` under each of ``configs``, preparing each session once.

    Runs in a worker (process or Dask), so it takes only picklable arguments and imports the
    engine by name.
    """
    eng = get_engine(engine)
    per_config: list[list[Any]] = [[] for _ in configs]
    version = eng.version_of(configs[0]) if configs else None
    for session in sessions:
        prepared = eng.prepare(session, version)
        turns = len(session.turns)
        for outcomes, config in zip(per_config, configs, strict=True):
            outcomes.append(outcome_of(eng.run(prepared, config), turns))
    return [metrics_from_outcomes(outcomes, labels) for outcomes in per_config]


def _run_task(task: ChunkTask) -> list[Metrics]:
    return run_chunk(task.engine, task.sessions, task.configs, task.labels)


def chunk_sessions(sessions: Sequence[Session], n: int) -> list[tuple[Session, ...]]:
    """Split ``sessions`` into at most ``n`` contiguous, non-empty chunks of similar size.

    Size is measured in events (the work of preparing a session grows with them), so one huge
    session does not leave every other worker idle behind it.
    """
    if not sessions:
        return []
    n = max(1, min(n, len(sessions)))
    weights = [len(s.events) + 1 for s in sessions]
    target = sum(weights) / n
    chunks: list[tuple[Session, ...]] = []
    start = 0
    acc = 0.0
    for i, w in enumerate(weights):
        acc += w
        remaining_sessions = len(sessions) - (i + 1)
        remaining_chunks = n - len(chunks) - 1
        if (acc >= target and remaining_chunks > 0) or remaining_sessions == remaining_chunks > 0:
            chunks.append(tuple(sessions[start : i + 1]))
            start = i + 1
            acc = 0.0
    if start < len(sessions):
        chunks.append(tuple(sessions[start:]))
    return chunks


ChunkRunner = Callable[[Sequence[ChunkTask], Progress], list[list[Metrics]]]
"""Runs chunk tasks somewhere and returns their results in task order."""


def run_in_process(tasks: Sequence[ChunkTask], progress: Progress) -> list[list[Metrics]]:
    """Run every chunk here, one after another."""
    results = []
    for task in tasks:
        results.append(_run_task(task))
        progress(len(task.sessions))
    return results


def process_pool_runner(workers: int) -> ChunkRunner:
    """Run chunks on ``workers`` local processes.

    Workers are started with ``spawn``: forking a process that runs threads (the dashboard's
    server does) can deadlock, and spawn behaves the same on every platform.
    """

    def run(tasks: Sequence[ChunkTask], progress: Progress) -> list[list[Metrics]]:
        results: list[list[Metrics] | None] = [None] * len(tasks)
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            pending = {pool.submit(_run_task, task): i for i, task in enumerate(tasks)}
            try:
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        i = pending.pop(future)
                        results[i] = future.result()
                        progress(len(tasks[i].sessions))
            except BaseException:
                pool.shutdown(wait=False, cancel_futures=True)
                raise
        return [r for r in results if r is not None]

    return run


def default_workers() -> int:
    """One worker per CPU this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not every platform has sched_getaffinity
        return max(1, os.cpu_count() or 1)


CHUNKS_PER_WORKER = 4
"""More chunks than workers balance uneven sessions and make the progress bar move."""

SMALL_SWEEP = 5_000
"""Session × cell runs below which spawning processes costs more than it saves."""


def run_sweep(
    engine: str,
    sessions: Sequence[Session],
    cells: Sequence[CellConfig],
    labels: Mapping[str, LabelLike],
    *,
    axes: Sequence[Axis] = (),
    workers: int | None = None,
    runner: ChunkRunner | None = None,
    progress: Progress | None = None,
) -> SweepResult:
    """The metrics of every cell over ``sessions``.

    ``workers``: ``1`` runs in this process; ``N > 1`` on N local processes; ``None`` picks
    (in this process for a small sweep, else one process per CPU). ``runner`` overrides where
    chunks run (the Dask backend passes one). The result is the same whichever runs it.
    """
    if workers is not None and workers < 1:
        raise ValueError("workers must be at least 1")
    plain = {
        source: _PlainLabel(label.label, label.from_turn)
        for source, label in labels.items()
        if label.label in ("loop", "ok")
    }
    if runner is None:
        if workers is None:
            workers = 1 if len(sessions) * len(cells) < SMALL_SWEEP else default_workers()
        if workers == 1:
            runner = run_in_process
    if runner is run_in_process:
        # One chunk per session: the same work, but progress is reported per session.
        chunks: list[tuple[Session, ...]] = [(s,) for s in sessions]
    else:
        n = workers or default_workers()
        runner = runner or process_pool_runner(n)
        chunks = chunk_sessions(sessions, n * CHUNKS_PER_WORKER)
    configs = tuple(c.config for c in cells)
    tasks = [
        ChunkTask(engine, chunk, configs, {s.source: plain[s.source] for s in chunk if s.source in plain})
        for chunk in chunks
    ]
    results = runner(tasks, progress or (lambda n: None))
    totals = [Metrics() for _ in cells]
    for partial in results:  # in chunk order: integer sums, so the order only matters for style
        totals = [t + p for t, p in zip(totals, partial, strict=True)]
    return SweepResult(
        engine,
        tuple(axes),
        tuple(
            SweepCell(engine, c.values, m, c.config, c.warnings)
            for c, m in zip(cells, totals, strict=True)
        ),
    )


def sweep_prepared(
    engine: str,
    prepared: Sequence[Any],
    turns: Sequence[int],
    cells: Sequence[CellConfig],
    labels: Mapping[str, LabelLike],
    *,
    sources: Sequence[str],
    axes: Sequence[Axis] = (),
    progress: Progress | None = None,
) -> SweepResult:
    """A sweep over sessions some caller has already prepared (the dashboard keeps them).

    ``prepared`` are ``engine.prepare(session)`` results (a list, or a corpus's table),
    ``sources`` and ``turns`` each session's source and number of assistant turns, aligned.
    Runs here, cell by cell, one batch run (``run_many``: vectorised for gglib and OpenClaw)
    per cell; ``progress`` is called once per cell. Equal to :func:`run_sweep` over the same
    sessions.
    """
    eng = get_engine(engine)
    if not isinstance(prepared, KeepsDerived):
        # (a plain list: what the engine derives from all of them is then kept for every cell)
        prepared = PreparedSessions(prepared)
    out: list[SweepCell] = []
    for cell in cells:
        metrics = metrics_of_columns(eng.run_many(prepared, cell.config), labels, sources,
                                     turns)
        out.append(SweepCell(engine, cell.values, metrics, cell.config, cell.warnings))
        if progress is not None:
            progress(1)
    return SweepResult(engine, tuple(axes), tuple(out))
