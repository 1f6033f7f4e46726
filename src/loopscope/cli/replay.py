"""``loopscope replay``: every session under PATH through one engine, shadow mode.

With ``--json`` stdout holds exactly one JSON line per session (product spec §3); everything
else (progress, warnings, problems) goes to stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from typing import Any

import click
import orjson

from loopscope.advice import smallest_changes
from loopscope.cli.common import (
    EngineCommand,
    RunStatus,
    chosen_version,
    engine_options,
    import_options,
    iter_sessions,
    parse_import_limits,
    progress,
    resolve_engine_config,
)
from loopscope.engines import Engine, SessionReplay
from loopscope.labels import Label, labels_for_sessions
from loopscope.model import Session, escape_for_display


@click.command(cls=EngineCommand)
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@engine_options
@import_options
@click.option("--json", "as_json", is_flag=True, help="JSON Lines: one object per session.")
@click.option("--fail-on-refusal", is_flag=True,
              help="Exit 1 when any session would have been refused.")
@click.option("--fail-on-false-refusal", is_flag=True,
              help="Exit 1 when a session labelled ok (good work) would have been refused.")
def replay(
    paths: tuple[str, ...],
    engine_name: str,
    engine_version: str | None,
    config_file: str | None,
    set_pairs: tuple[str, ...],
    agent: str | None,
    format_id: str | None,
    import_limits: tuple[str, ...],
    labels_file: str | None,
    verbose: bool,
    as_json: bool,
    fail_on_refusal: bool,
    fail_on_false_refusal: bool,
) -> None:
    """Replay recorded sessions and show where the loop guard would warn or refuse.

    PATH is a session file or a folder (searched recursively). The format is detected.
    In the JSON output, turn and call numbers count from 0.
    """
    version = chosen_version(engine_name, engine_version)
    engine, resolution = resolve_engine_config(engine_name, config_file, set_pairs, agent,
                                               version=version)
    prepare_version = engine.version_of(resolution.config)
    limits = parse_import_limits(import_limits)
    status = RunStatus()
    summary = _Summary()
    labels = load_labels_for(paths, labels_file, status)

    files: list[Any] = []
    sessions = (_sessions_noting_files(paths, status, limits, format_id, files) if verbose
                else iter_sessions(paths, status, limits=limits, format_id=format_id))
    for session in progress(sessions, desc=f"replay {engine_name}"):
        # The fast path (proven equal to ``engine.replay`` by the engines' property tests).
        prepared = engine.prepare(session, prepare_version)
        result = engine.run(prepared, resolution.config)
        label = labels.get(session.source)
        false_refusal = result.refused and label is not None and label.label == "ok"
        status.refused = status.refused or result.refused
        status.false_refused = status.false_refused or false_refusal
        summary.add(result, false_refusal)
        if as_json:
            click.echo(orjson.dumps(result.to_json()))
        else:
            click.echo(_describe(session, result, engine, prepared, resolution.config, label))

    if not as_json:
        click.echo(summary.line(engine_name, bool(labels)))
    status.print_problems(verbose=verbose)
    if verbose:
        _print_file_summary(files)
    sys.exit(status.exit_code(fail_on_refusal, fail_on_false_refusal))


# --verbose: a per-file import summary (format, sessions, tool calls seen in the file and
# imported), so a file whose calls did not all reach the replay stands out.


def _sessions_noting_files(paths: tuple[str, ...], status: RunStatus, limits: Any,
                           format_id: str | None, files: list[Any]) -> Iterator[Session]:
    """``iter_sessions``, keeping each file's import for the summary."""
    from loopscope.formats import iter_file_imports

    for file_import in iter_file_imports(list(paths), limits=limits, format=format_id):
        status.problems.extend(file_import.problems)
        files.append(file_import)
        yield from file_import.sessions


def _print_file_summary(files: list[Any]) -> None:
    click.echo(f"loopscope: import summary, {len(files)} file(s): tool calls seen in the file "
               "/ imported", err=True)
    for f in files:
        seen = "–" if f.calls_seen is None else str(f.calls_seen)
        line = (f"  {escape_for_display(f.path)}: {f.detection.format or 'not imported'}, "
                f"{len(f.sessions)} session(s), {seen} / {f.calls_imported} tool call(s)")
        if f.calls_set_aside:
            reasons = ", ".join(f"{n} {reason}" for reason, n in f.calls_set_aside.items())
            line += f" ({reasons}: set aside)"
        if f.calls_lost:
            line += f", {f.calls_lost} NOT IMPORTED"
        click.echo(line, err=True)


class _Summary:
    def __init__(self) -> None:
        self.sessions = self.refused = self.warned = self.false_refusals = 0

    def add(self, result: SessionReplay, false_refusal: bool) -> None:
        self.sessions += 1
        self.refused += result.refused
        self.warned += result.warned
        self.false_refusals += false_refusal

    def line(self, engine_name: str, labelled: bool) -> str:
        text = (f"{self.sessions} session(s) replayed with {engine_name}: "
                f"{self.refused} refused, {self.warned} with warnings")
        if labelled:
            text += f", {self.false_refusals} labelled ok but refused"
        return text + "."


def load_labels_for(paths: tuple[str, ...], labels_file: str | None, status: RunStatus) -> Mapping[str, Label]:
    """Labels from ``--labels`` or from ``labels.csv`` next to the sessions (may be empty)."""
    try:
        loaded = labels_for_sessions(list(paths), labels_file)
    except OSError as exc:
        status.fail(f"{escape_for_display(labels_file or '')}: cannot read the labels file ({exc.strerror or exc})")
        return {}
    status.problems.extend(loaded.problems)
    return loaded.labels


def _describe(session: Session, result: SessionReplay, engine: Engine[Any, Any], prepared: Any,
              config: Any, label: Label | None) -> str:
    """A readable block for one session: where it would first be refused, and why (turns and
    calls counted from 1, as people count)."""
    verdicts = {"pass": 0, "warn": 0, "refuse": 0}
    for step in result.steps:
        verdicts[step.verdict] += 1
    counts = session.counts()
    labelled = ""
    if label is not None:
        labelled = f", labelled {label.label}"
        if label.label == "loop" and label.from_turn is not None:
            labelled += f" from turn {label.from_turn + 1}"
    lines = [
        f"{escape_for_display(result.source)}  [{result.format}, {counts['turns']} turns, "
        f"{counts['calls']} tool calls{labelled}]",
        f"  steps: {verdicts['pass']} pass, {verdicts['warn']} warn, {verdicts['refuse']} refuse",
    ]
    first = result.first_refusal
    if first is None:
        lines.append("  not refused")
    else:
        call = "" if first.call is None else f", call {first.call + 1}"
        lines.append(f"  first refusal: turn {first.turn + 1}{call} by {first.detector}")
        step = next(s for s in result.steps if s.verdict == "refuse")
        why = engine.explainer.explain_step(step, result, config)
        lines.append(f"  why: {why.headline}")
        if why.guard_action:
            lines.append(f"  the guard: {why.guard_action}")
        changes = smallest_changes(engine, prepared, config, step, limit=1)
        if changes:
            best = changes[0]
            specs = engine.settings_for(engine.version_of(config))
            lines.append(f"  smallest change that lets it through: {best.description} "
                         f"(--set {' --set '.join(best.set_args(specs))}); then "
                         f"{best.effect}")
    return "\n".join(lines)
