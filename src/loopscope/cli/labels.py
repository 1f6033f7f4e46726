"""``loopscope label`` and ``loopscope labels export``: labels from scripts and CI.

``loopscope label PATH... (loop|ok)`` writes through the same locked read-modify-write as the
dashboard (:func:`loopscope.labels.update_label_file_many`), so a script and a dashboard, or
two scripts, labelling the same folder at once keep every label. ``loopscope labels export``
prints the labels as CSV or JSON.

Turns: ``--from-turn N`` and the confirmation line count from 1, as ``loopscope replay`` prints
turns; the labels file and ``labels export`` (CSV and JSON) store the 0-based index, N − 1,
under the name ``loop_from_turn_index`` (:mod:`loopscope.labels`).

Exit status as for the other commands: 0 success, 2 for bad usage or unreadable input — the
message names the file — and every other PATH is still labelled.
"""

from __future__ import annotations

import io
import os
import sys
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import click

from loopscope import csvsafe, numbering
from loopscope import labels as labels_mod
from loopscope.labels import HEADER, Label, LabelSet, LabelValue
from loopscope.model import Problem, escape_for_display
from loopscope.words import plural

EXIT_OK = 0
EXIT_BAD_INPUT = 2

__all__ = ["label", "labels", "register"]


def register(group: click.Group) -> None:
    """Add ``label`` and ``labels`` to the ``loopscope`` command group."""
    group.add_command(label)
    group.add_command(labels)


def _shown(text: str) -> str:
    return escape_for_display(text, 200)


def _error(message: str) -> None:
    click.echo(f"loopscope: error: {message}", err=True)


def _print_problems(problems: Sequence[Problem]) -> bool:
    """Print warnings and errors to stderr; whether any was an error."""
    for problem in problems:
        if problem.severity != "info":
            click.echo(problem.text(), err=True)
    return any(p.severity == "error" for p in problems)


# --------------------------------------------------------------------------- label


def _sources_of(path: str, totals: Any = None, lost: list[Problem] | None = None
                ) -> tuple[list[tuple[str, int]], str | None]:
    """The replay sources ``path`` names (``file`` or ``file#n``), each with its number of
    assistant turns, and an error, if any.

    A plain file that holds several sessions names all of them (``file#0``, ``file#1``, …);
    ``file#n`` must be one of them, spelled as ``loopscope replay`` prints it. The file's
    calls go to ``totals`` (an ``ImportTotals``) and its ``calls_not_imported`` warning to
    ``lost``.
    """
    from loopscope.formats import load_file

    file_part, suffix = labels_mod.split_source(path)
    if os.path.isdir(file_part):
        return [], f"{_shown(file_part)} is a folder; name session files (or file#n)"
    if not os.path.isfile(file_part):
        return [], f"{_shown(file_part)}: no such file"
    imported = load_file(file_part)
    if totals is not None:
        totals.add_file(imported)
    if lost is not None:
        lost.extend(p for p in imported.problems if p.code == "calls_not_imported")
    turns = {s.source: len(s.turns) for s in imported.sessions}
    sources = list(turns)
    if not sources:
        reasons = "; ".join(p.message for p in imported.problems if p.severity == "error")
        return [], (f"{_shown(file_part)}: no session could be read"
                    + (f" ({_shown(reasons)})" if reasons else ""))
    if not suffix:
        return list(turns.items()), None
    if path in sources:
        return [(path, turns[path])], None
    if sources == [file_part]:
        return [], (f"{_shown(path)}: {_shown(file_part)} holds one session; label it as "
                    f"{_shown(file_part)} (without {suffix})")
    return [], (f"{_shown(path)}: {_shown(file_part)} holds sessions #0 to "
                f"#{len(sources) - 1}")


def _turn_number(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    """``--from-turn N`` as a person reads the turn (from 1) → the stored 0-based index."""
    if value is None:
        return None
    try:
        return numbering.index_of(value)
    except ValueError:
        raise click.BadParameter(
            f"{value}: turns count from 1, as `loopscope replay` prints them (turn 1 is the "
            "first assistant turn)", ctx, param) from None


@click.command("label")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.argument("value", metavar="(loop|ok)", type=click.Choice(["loop", "ok"]))
@click.option("--from-turn", "from_turn", type=int, default=None, metavar="N",
              callback=_turn_number,
              help="loop only: the assistant turn where the loop starts, counted from 1 as "
                   "`loopscope replay` and the dashboard show it. The labels file stores the "
                   "0-based index (N - 1) in its loop_from_turn_index column.")
@click.option("--note", "note", default=None, metavar="TEXT",
              help="Also write TEXT in the labels file's note column.")
@click.option("--labels", "labels_file", metavar="FILE", default=None,
              type=click.Path(dir_okay=False),
              help="The labels file to write (default: the nearest labels.csv from the "
                   "session's folder up to the current folder, else one next to the session).")
def label(paths: tuple[str, ...], value: LabelValue, from_turn: int | None, note: str | None,
          labels_file: str | None) -> None:
    """Label sessions as a real loop or as good work, in labels.csv.

    PATH is a session file, or FILE#N for one session of a file that holds several (as
    `loopscope replay` names it); a file holding several sessions labels all of them. Labels
    are keyed relative to the labels file's folder, so PATHs must lie inside it.
    """
    if from_turn is not None and value == "ok":
        raise click.UsageError("--from-turn only applies to loop")
    failed = False
    by_file: dict[str, list[tuple[str, str]]] = defaultdict(list)  # file -> (source, key)
    from loopscope.formats.base import ImportTotals

    totals = ImportTotals()
    lost: list[Problem] = []
    for path in paths:
        sources, error = _sources_of(path, totals, lost)
        if error is not None:
            _error(error)
            failed = True
            continue
        for source, turns in sources:
            if from_turn is not None and from_turn >= turns:
                _error(f"{_shown(source)}: --from-turn {numbering.number(from_turn)} is past "
                       f"the session's last turn (it has {plural(turns, 'assistant turn')}, counted "
                       "from 1 as `loopscope replay` prints them); not labelled")
                failed = True
                continue
            target = labels_file or labels_mod.default_label_file(source)
            try:
                key = labels_mod.relative_source(target, source)
            except ValueError:
                _error(f"{_shown(source)} is not inside the folder of {_shown(target)}; labels "
                       "are keyed relative to the labels file's folder")
                failed = True
                continue
            by_file[target].append((source, key))
    columns = {"note": note} if note is not None else None
    for target, entries in by_file.items():
        changes = [(key, value, from_turn) for _, key in entries]
        try:
            labels_mod.update_label_file_many(target, changes, columns=columns)
        except (ValueError, OSError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            # The reason names the rows at fault: it is shown whole (a long path must not cut it).
            _error(f"{_shown(target)}: labels not saved ({escape_for_display(reason, 2000)})")
            failed = True
            continue
        turn = f" from turn {numbering.number(from_turn)}" if from_turn is not None else ""
        for source, key in entries:
            click.echo(f"{_shown(target)}: {_shown(key)} = {value}{turn}  ({_shown(source)})")
    # A label on a session some of whose calls were not imported is a label on less than the
    # recording: said, with the closing line replay prints (quiet otherwise: the output of
    # label is the labels written). Warnings never change the exit status.
    if totals.calls_lost:
        _print_problems(lost)
        click.echo(f"loopscope: {totals.line()}", err=True)
    sys.exit(EXIT_BAD_INPUT if failed else EXIT_OK)


# --------------------------------------------------------------------------- labels export


@click.group("labels")
def labels() -> None:
    """Work with labels files (labels.csv)."""


@labels.command("export")
@click.argument("paths", nargs=-1, metavar="[PATH...]")
@click.option("--labels", "labels_file", metavar="FILE", default=None,
              type=click.Path(dir_okay=False),
              help="The labels file to read (default: labels.csv next to the sessions, or in "
                   "the current folder without PATH).")
@click.option("--format", "fmt", type=click.Choice(["csv", "json"]), default="csv",
              show_default=True, help="Output format.")
def export(paths: tuple[str, ...], labels_file: str | None, fmt: str) -> None:
    """Print the current labels as CSV or JSON.

    Without PATH: the rows of the labels file (sources relative to its folder). With PATH:
    the labels of the sessions under PATH, keyed as `loopscope replay` names them. Problems in
    the file go to stderr; CSV cells a spreadsheet would run as formulas are quoted. As in
    labels.csv, loop_from_turn_index (CSV column and JSON key) is the 0-based index of the turn
    a loop starts at: `loopscope replay` shows it as turn loop_from_turn_index + 1.
    """
    if paths:
        try:
            loaded, problems = labels_mod.labels_for_sessions(list(paths), labels_file)
        except OSError as exc:
            _error(f"{_shown(labels_file or '')}: cannot read the labels file "
                   f"({_shown(exc.strerror or str(exc))})")
            sys.exit(EXIT_BAD_INPUT)
    else:
        name = labels_file or labels_mod.find_label_file(".")
        if name is None:
            _error(f"no {labels_mod.LABELS_FILE_NAME} in the current folder; name one with "
                   "--labels FILE or give session PATHs")
            sys.exit(EXIT_BAD_INPUT)
        try:
            loaded, problems = labels_mod.load_labels(name)
        except OSError as exc:
            _error(f"{_shown(name)}: cannot read the labels file "
                   f"({_shown(exc.strerror or str(exc))})")
            sys.exit(EXIT_BAD_INPUT)
    failed = _print_problems(problems)
    click.echo(_as_json(loaded) if fmt == "json" else _as_csv(loaded), nl=False)
    sys.exit(EXIT_BAD_INPUT if failed else EXIT_OK)


def _as_json(loaded: LabelSet) -> str:
    return labels_mod.labels_to_json(loaded)


def _as_csv(loaded: LabelSet) -> str:
    out = io.StringIO()
    writer = csvsafe.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    for lab in loaded.in_order():
        writer.writerow(_row(lab))
    return out.getvalue()


def _row(lab: Label) -> list[str]:
    return [lab.source, lab.label, "" if lab.from_turn is None else str(lab.from_turn)]
