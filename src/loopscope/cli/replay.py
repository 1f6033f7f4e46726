"""``loopscope replay``: every session under PATH through one engine, shadow mode.

With ``--json`` stdout holds exactly one JSON line per session (product spec §3); everything
else (progress, warnings, problems) goes to stderr.
"""

from __future__ import annotations

import sys
from typing import Any

import click
import orjson

from loopscope.cli.common import (
    RunStatus,
    engine_options,
    import_options,
    iter_sessions,
    parse_import_limits,
    progress,
    resolve_engine_config,
)
from loopscope.engines.base import SessionReplay
from loopscope.model import Session, escape_for_display


@click.command()
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@engine_options
@import_options
@click.option("--json", "as_json", is_flag=True, help="JSON Lines: one object per session.")
@click.option("--fail-on-refusal", is_flag=True,
              help="Exit 1 when any session would have been refused.")
def replay(
    paths: tuple[str, ...],
    engine_name: str,
    config_file: str | None,
    set_pairs: tuple[str, ...],
    agent: str | None,
    format_id: str | None,
    import_limits: tuple[str, ...],
    labels_file: str | None,
    verbose: bool,
    as_json: bool,
    fail_on_refusal: bool,
) -> None:
    """Replay recorded sessions and show where the loop guard would warn or refuse.

    PATH is a session file or a folder (searched recursively). The format is detected.
    """
    engine, resolution = resolve_engine_config(engine_name, config_file, set_pairs, agent)
    limits = parse_import_limits(import_limits)
    status = RunStatus()
    summary = _Summary()

    for session in progress(iter_sessions(paths, status, limits=limits, format_id=format_id),
                            desc=f"replay {engine_name}"):
        result = engine.replay(session, resolution.config)
        status.refused = status.refused or result.refused
        summary.add(result)
        if as_json:
            click.echo(orjson.dumps(result.to_json()))
        else:
            click.echo(_describe(session, result, engine_name, resolution.config))

    if not as_json:
        click.echo(summary.line(engine_name))
    status.print_problems(verbose=verbose)
    sys.exit(status.exit_code(fail_on_refusal))


class _Summary:
    def __init__(self) -> None:
        self.sessions = self.refused = self.warned = 0

    def add(self, result: SessionReplay) -> None:
        self.sessions += 1
        self.refused += result.refused
        self.warned += result.warned

    def line(self, engine_name: str) -> str:
        return (f"{self.sessions} session(s) replayed with {engine_name}: "
                f"{self.refused} refused, {self.warned} with warnings.")


def _describe(session: Session, result: SessionReplay, engine_name: str, config: Any) -> str:
    """A readable block for one session: where it would first be refused, and why."""
    verdicts = {"pass": 0, "warn": 0, "refuse": 0}
    for step in result.steps:
        verdicts[step.verdict] += 1
    counts = session.counts()
    lines = [
        f"{escape_for_display(result.source)}  [{result.format}, {counts['turns']} turns, "
        f"{counts['calls']} tool calls]",
        f"  steps: {verdicts['pass']} pass, {verdicts['warn']} warn, {verdicts['refuse']} refuse",
    ]
    first = result.first_refusal
    if first is None:
        lines.append("  not refused")
    else:
        call = "" if first.call is None else f", call {first.call}"
        lines.append(f"  first refusal: turn {first.turn}{call} by {first.detector}")
        sentence = _explain_first_refusal(engine_name, session, result, config)
        if sentence:
            lines.append(f"  why: {sentence}")
    return "\n".join(lines)


def _explain_first_refusal(engine_name: str, session: Session, result: SessionReplay,
                           config: Any) -> str | None:
    from loopscope.explain import explain_first_refusal

    return explain_first_refusal(engine_name, session, result, config)
