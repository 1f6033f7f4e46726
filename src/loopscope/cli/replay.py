"""``loopscope replay``: every session under PATH through one engine, shadow mode.

With ``--json`` stdout holds exactly one JSON line per session, in sorted file order; everything
else (progress, warnings, problems) goes to stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import click
import orjson

from loopscope import numbering
from loopscope.advice import advice_words, session_advice
from loopscope.bulk import CollectorPaused
from loopscope.cli.common import (
    EngineCommand,
    RunInputs,
    RunStatus,
    chosen_version,
    parse_import_limits,
    prepared_folder,
    progress,
    resolve_engine_config,
    run_inputs,
)
from loopscope.corpus.readback import PreparedFolder
from loopscope.engines import Engine, FirstRefusal, SessionReplay, get_engine
from loopscope.engines.base import PreparedSessions
from loopscope.engines.contract import consequence_of
from loopscope.formats import expand_paths
from loopscope.formats.base import FileImport
from loopscope.labels import Label, labels_for_sessions
from loopscope.model import Problem, escape_for_display
from loopscope.wording import detector_words, plain, without_code_marks
from loopscope.words import plural


@click.command(cls=EngineCommand)
@run_inputs
@click.option("--json", "as_json", is_flag=True, help="JSON Lines: one object per session.")
@click.option("--fail-on-refusal", is_flag=True,
              help="Exit 1 when any session would have been refused.")
@click.option("--fail-on-false-refusal", is_flag=True,
              help="Exit 1 when a session labelled ok (good work) would have been refused.")
@click.option("--workers", "workers_option", type=click.IntRange(min=0), default=0,
              help="Processes replaying files side by side (default 0: one per core; the "
                   "output is the same, in the same order).")
def replay(
    inputs: RunInputs,
    as_json: bool,
    fail_on_refusal: bool,
    fail_on_false_refusal: bool,
    workers_option: int,
) -> None:
    """Replay recorded sessions and show where the loop guard would warn or refuse.

    PATH is a session file or a folder (searched recursively). The format is detected.
    In the JSON output, turn and call numbers count from 0.

    When "loopscope prepare PATH" (or the dashboard) prepared exactly these files as they are
    now, they are read back from the on-disk cache instead of imported: the same output.
    """
    version = chosen_version(inputs.engine_name, inputs.engine_version)
    engine, resolution = resolve_engine_config(inputs.engine_name, inputs.config_file,
                                               inputs.set_pairs, inputs.agent, version=version)
    prepare_version = engine.version_of(resolution.config)
    limits = parse_import_limits(inputs.import_limits)
    status = RunStatus()
    summary = _Summary()
    labels = load_labels_for(inputs.paths, inputs.labels_file, status)

    job = _Job(inputs.engine_name, prepare_version, resolution.config, limits, inputs.format_id,
               labels, as_json, inputs.verbose)
    targets, _ignored = expand_paths(list(inputs.paths))
    folder = prepared_folder(inputs.paths, engine, prepare_version, inputs.format_id,
                             inputs.import_limits)
    out: Any = sys.stdout.buffer if as_json else None  # (bytes, as click.echo writes them)
    bar = progress(None, total=len(targets), desc=f"replay {inputs.engine_name}", unit="file")
    import_lines: list[str] = []
    held: list[_Held] = []
    parts = (_prepared_parts(job, folder, _workers(workers_option, len(folder.files)))
             if folder is not None
             else _file_parts(job, targets, _workers(workers_option, len(targets))))
    for part in parts:
        status.problems.extend(part.problems)
        status.refused = status.refused or part.refused
        status.false_refused = status.false_refused or part.false_refused
        summary.merge(part.summary)
        status.totals.add(*part.tally)
        if out is not None:
            out.write(part.output)  # (one JSON line per session, as click.echo writes them)
            out.flush()
        else:
            held.extend(part.held)
        if inputs.verbose:
            import_lines.append(part.import_line)
        bar.update(1)
    bar.close()

    if not as_json:
        # The advice weighs each change on every other session: written once all are in.
        for text in _describe_all(held, get_engine(inputs.engine_name), resolution.config, labels):
            click.echo(text)
        click.echo(summary.line(inputs.engine_name, bool(labels)))
        status.print_import_line(to_stdout=True)
    status.print_problems(verbose=inputs.verbose)
    if inputs.verbose:
        _print_file_summary(import_lines)
    if as_json:
        status.print_import_line()
    sys.exit(status.exit_code(fail_on_refusal, fail_on_false_refusal))


# --verbose: a per-file import summary (format, sessions, tool calls seen in the file and
# imported), so a file whose calls did not all reach the replay stands out.


def _file_summary_line(f: FileImport, sessions: int) -> str:
    seen = "–" if f.calls_seen is None else str(f.calls_seen)
    line = (f"  {escape_for_display(f.path)}: {f.detection.format or 'not imported'}, "
            f"{plural(sessions, 'session')}, {seen} / {plural(f.calls_imported, 'tool call')}")
    if f.calls_set_aside:
        reasons = ", ".join(f"{n} {reason}" for reason, n in f.calls_set_aside.items())
        line += f" ({reasons}: set aside)"
    if f.calls_lost:
        line += f", {f.calls_lost} NOT IMPORTED"
    return line


def _print_file_summary(lines: list[str]) -> None:
    click.echo(f"loopscope: import summary, {plural(len(lines), 'file')}: tool calls seen in the file "
               "/ imported", err=True)
    for line in lines:
        click.echo(line, err=True)


class _Summary:
    def __init__(self) -> None:
        self.sessions = self.refused = self.warned = self.false_refusals = 0

    def add(self, result: SessionReplay, false_refusal: bool) -> None:
        self.sessions += 1
        self.refused += result.refused
        self.warned += result.warned
        self.false_refusals += false_refusal

    def merge(self, other: _Summary) -> None:
        self.sessions += other.sessions
        self.refused += other.refused
        self.warned += other.warned
        self.false_refusals += other.false_refusals

    def line(self, engine_name: str, labelled: bool) -> str:
        text = (f"{plural(self.sessions, 'session')} replayed with {engine_name}: "
                f"{self.refused:,} refused, {self.warned:,} with warnings")
        if labelled:
            text += f", {self.false_refusals:,} labelled ok but refused"
        return text + "."


# --------------------------------------------------------------------------- files side by side


@dataclass(frozen=True)
class _Job:
    """What every file is replayed with (sent once to each worker process)."""

    engine: str
    version: str
    config: Any
    limits: Any
    format_id: str | None
    labels: Mapping[str, Label]
    as_json: bool
    verbose: bool


@dataclass(frozen=True)
class _Held:
    """One session replayed for the text output (its advice needs the whole corpus)."""

    result: SessionReplay
    prepared: Any
    turns: int
    calls: int


@dataclass
class _Part:
    """One file replayed: its output, summary and import problems."""

    output: bytes = b""
    held: list[_Held] = field(default_factory=list)
    """Text output: every session's replay, described once every file is in."""
    summary: _Summary = field(default_factory=_Summary)
    problems: list[Problem] = field(default_factory=list)
    refused: bool = False
    false_refused: bool = False
    import_line: str = ""
    """This file's line of the ``--verbose`` import summary."""
    tally: tuple[int | None, int, int] = (None, 0, 0)
    """The file's tool calls: counted in it (``None``: not counted), imported, set aside."""


_JOB: _Job | None = None


def _set_job(job: _Job) -> None:
    global _JOB
    _JOB = job


def _replay_file(target: tuple[str, bool], job: _Job | None = None) -> _Part:
    """Import one file and replay its sessions (in a worker, or here)."""
    from loopscope.formats import load_file

    job = job or _JOB
    assert job is not None
    engine = get_engine(job.engine)
    path, scanned = target
    part = _Part()
    lines: list[bytes] = []
    with CollectorPaused():
        file_import = load_file(path, job.limits, job.format_id, scanned=scanned)
        part.problems = list(file_import.problems)
        part.tally = (file_import.calls_seen, file_import.calls_imported,
                      sum(file_import.calls_set_aside.values()))
        if job.verbose:
            part.import_line = _file_summary_line(file_import, len(file_import.sessions))
        for session in file_import.sessions:
            # The fast path (proven equal to ``engine.replay`` by the engines' property tests).
            prepared = engine.prepare(session, job.version)
            # (the text output names the session's size; the JSON lines do not)
            counts = {"turns": 0, "calls": 0} if job.as_json else session.counts()
            _add_session(part, lines, job, engine, prepared, engine.run(prepared, job.config),
                         counts["turns"], counts["calls"])
    part.output = b"".join(lines)
    return part


_FOLDER: PreparedFolder | None = None
"""The folder read back from the cache, as the workers of :func:`_prepared_parts` inherit it
(forked once it is read: nothing of it is sent to them)."""


def _prepared_parts(job: _Job, folder: PreparedFolder, workers: int) -> Iterator[_Part]:
    """:func:`_file_parts` for files read back from the on-disk cache. With ``--json`` the
    replays are split among ``workers`` forked processes as an import's files are (replaying
    and writing each session's steps is most of the work, and the import path has every
    core); the text output's replays are held for the advice, so it stays in this one."""
    import multiprocessing

    files = range(len(folder.files))
    if workers <= 1 or not job.as_json or "fork" not in multiprocessing.get_all_start_methods():
        yield from _prepared_run(job, folder, files)
        return
    global _FOLDER
    _FOLDER = folder
    try:
        size = _run_length(len(files), workers)
        runs = [files[i:i + size] for i in range(0, len(files), size)]
        yield from _in_pool(job, runs, _prepared_files, workers)
    finally:
        _FOLDER = None


def _prepared_files(rows: range) -> list[_Part]:
    """:func:`_prepared_run` of a run of files (one task of a worker)."""
    assert _JOB is not None and _FOLDER is not None
    return list(_prepared_run(_JOB, _FOLDER, rows))


def _prepared_run(job: _Job, folder: PreparedFolder, which: range) -> Iterator[_Part]:
    """The parts of files ``which`` of ``folder``, in order."""
    engine = get_engine(job.engine)
    with CollectorPaused():
        for f in (folder.files[k] for k in which):
            r = f.result
            seen, imported, aside = r.tally
            part = _Part(problems=f.problems(), tally=(seen, imported, sum(aside.values())))
            if job.verbose:  # (as an import writes it: only when it is printed)
                part.import_line = _file_summary_line(
                    FileImport(f.path, r.detection, calls_seen=seen, calls_imported=imported,
                               calls_set_aside=dict(aside)), len(r.heads))
            lines: list[bytes] = []
            for row, head in zip(f.rows, r.heads, strict=True):
                prepared = folder.prepared[row]
                result = engine.run(prepared, job.config)
                _add_session(part, lines, job, engine, prepared,
                             result.with_source(f.source(result.source)), head.turns,
                             head.calls)
            part.output = b"".join(lines)
            yield part


def _add_session(part: _Part, lines: list[bytes], job: _Job, engine: Engine[Any, Any],
                 prepared: Any, result: SessionReplay, turns: int, calls: int) -> None:
    """One session's replay into its file's part: summary, exit status and output."""
    label = job.labels.get(result.source)
    false_refusal = result.refused and label is not None and label.label == "ok"
    part.refused = part.refused or result.refused
    part.false_refused = part.false_refused or false_refusal
    part.summary.add(result, false_refusal)
    if job.as_json:
        lines.append(orjson.dumps(result.to_json()))
        lines.append(b"\n")
    else:
        part.held.append(_Held(result, prepared, turns, calls))


def _workers(option: int, files: int) -> int:
    if option > 0:
        return option
    return max(1, min(os.cpu_count() or 1, files // 8))


def _file_parts(job: _Job, targets: list[tuple[str, bool]], workers: int) -> Iterator[_Part]:
    """Every file replayed, in ``targets``' (sorted) order: in ``workers`` processes when more
    than one, with a bounded number of files in flight (memory stays that of a few files)."""
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    if workers <= 1 or "fork" not in methods:
        for target in targets:
            yield _replay_file(target, job)
        return
    # Files go to the workers in runs of consecutive files: a task costs the parent (which
    # shares the cores with the workers) about as much as importing a small file, so one task
    # per file spent a third of the parent's and the workers' time on the pool itself.
    size = _run_length(len(targets), workers)
    yield from _in_pool(job, [targets[i:i + size] for i in range(0, len(targets), size)],
                        _replay_files, workers)


def _in_pool(job: _Job, tasks: list[Any], task: Callable[[Any], list[_Part]],
             workers: int) -> Iterator[_Part]:
    """``task(t)``'s parts for every ``t`` of ``tasks``, in order, computed in ``workers``
    forked processes with a bounded number of tasks in flight (memory stays that of a few)."""
    import concurrent.futures
    import multiprocessing
    from collections import deque

    runs = iter(tasks)
    # fork: the command line runs no threads, and workers start with the parent's modules.
    context = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context,
                                                initializer=_set_job,
                                                initargs=(job,)) as pool:
        pending: deque[Any] = deque()
        for run in runs:
            pending.append(pool.submit(task, run))
            if len(pending) >= 4 * workers:
                break
        while pending:
            parts = pending.popleft().result()
            nxt = next(runs, None)
            if nxt is not None:
                pending.append(pool.submit(task, nxt))
            yield from parts


def _run_length(files: int, workers: int) -> int:
    """Files per task: few tasks, but enough of them (8 a worker) that the workers finish
    together and the progress bar moves; at most 16 files' outputs held per task."""
    return max(1, min(16, files // (8 * workers)))


def _replay_files(targets: list[tuple[str, bool]]) -> list[_Part]:
    """:func:`_replay_file` for a run of files (one task of a worker)."""
    return [_replay_file(target) for target in targets]


def load_labels_for(paths: tuple[str, ...], labels_file: str | None, status: RunStatus) -> Mapping[str, Label]:
    """Labels from ``--labels`` or from ``labels.csv`` next to the sessions (may be empty)."""
    try:
        loaded = labels_for_sessions(list(paths), labels_file)
    except OSError as exc:
        status.fail(f"{escape_for_display(labels_file or '')}: cannot read the labels file ({exc.strerror or exc})")
        return {}
    status.problems.extend(loaded.problems)
    return loaded.labels


def _describe_all(held: list[_Held], engine: Engine[Any, Any], config: Any,
                  labels: Mapping[str, Label]) -> Iterator[str]:
    """Every session's text block, in order, each with the advice its label asks for (the
    session page's advice, in the same words), weighed on all the sessions replayed."""
    prepared = PreparedSessions(h.prepared for h in held)
    runs: dict[bytes, list[FirstRefusal | None]] = {}

    def first_refusals(other: Any) -> list[FirstRefusal | None]:
        key = orjson.dumps(engine.settings_document(other), option=orjson.OPT_SORT_KEYS)
        if key not in runs:
            runs[key] = list(engine.run_many(prepared, other).first_refusals())
        return runs[key]

    given = [labels.get(h.result.source) for h in held]
    kinds: list[str | None] = [None if g is None else g.label for g in given]
    before = [h.result.first_refusal for h in held]
    for index, h in enumerate(held):
        yield _describe(h, index, engine, config, given[index], kinds, before, first_refusals)


def _describe(h: _Held, index: int, engine: Engine[Any, Any], config: Any,
              label: Label | None, kinds: list[str | None],
              before: list[FirstRefusal | None], first_refusals: Any) -> str:
    """A readable block for one session: where it would first be refused, why, whether that
    stops the agent, and the advice (turns and calls counted from 1, as people count)."""
    result = h.result
    verdicts = {"pass": 0, "warn": 0, "refuse": 0}
    for step in result.steps:
        verdicts[step.verdict] += 1
    labelled = ""
    if label is not None:
        labelled = f", labelled {label.label}"
        if label.label == "loop" and label.from_turn is not None:
            labelled += f" from turn {numbering.number(label.from_turn)}"
    lines = [
        f"{escape_for_display(result.source)}  [{result.format}, "
        f"{plural(h.turns, 'turn')}, {plural(h.calls, 'tool call')}{labelled}]",
        f"  steps: {verdicts['pass']} pass, {verdicts['warn']} warn, {verdicts['refuse']} refuse",
    ]
    specs = engine.settings_for(engine.version_of(config))
    first = result.first_refusal
    if first is None:
        lines.append("  not refused")
    else:
        lines.append(f"  first refusal: {numbering.at(first)} — "
                     f"{detector_words(engine, first.detector)}")
        step = next(s for s in result.steps if s.verdict == "refuse")
        why = engine.explainer.explain_step(step, result, config)
        ids = [lim.id for lim in why.limitations]
        lines.append(f"  why: {_text(plain(why.headline, specs, ids))}")
        lines.append(f"  for the agent: "
                     f"{_text(plain(consequence_of(engine, why), specs, ids))}")
    advice = session_advice(engine, h.prepared, config,
                            label=None if label is None else label.label,
                            from_turn=None if label is None else label.from_turn,
                            index=index, before=before, first_refusals=first_refusals,
                            labels=kinds, replay=result)
    words = advice_words(advice, specs)
    if words is not None:
        head, *changes = words.lines()
        lines.append(f"  advice: {_text(head)}")
        lines.extend(f"    - {_text(line)}" for line in changes)
    return "\n".join(lines)


def _text(sentence: str) -> str:
    """An engine's or the advice's sentence as plain terminal text: code marks dropped,
    control characters escaped (a recorded tool name cannot forge output)."""
    return escape_for_display(without_code_marks(sentence))
