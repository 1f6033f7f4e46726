"""``loopscope sweep`` and ``loopscope compare``: threshold experiments from the command line.

Same conventions as ``loopscope replay``: with ``--json`` stdout holds only JSON Lines; progress,
warnings and problems go to stderr; exit 2 for bad usage or unreadable input (naming the file or
key), and a problem in one file never stops the others.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

import click
import orjson

from loopscope import numbering
from loopscope.cache import DamagedSnapshot
from loopscope.cli.common import (
    EngineCommand,
    RunInputs,
    RunStatus,
    chosen_version,
    iter_sessions,
    parse_import_limits,
    parse_key_value,
    prepared_folder,
    read_settings_file,
    resolve_engine_config,
    run_inputs,
)
from loopscope.corpus.readback import PreparedFolder
from loopscope.engines import ConfigError, get_engine
from loopscope.experiments.compare import CompareResult, compare_columns
from loopscope.experiments.compare import compare as compare_configs
from loopscope.experiments.metrics import LabelLike, Metrics
from loopscope.experiments.sweep import (
    Axis,
    CellConfig,
    GridError,
    SweepResult,
    build_cells,
    parse_axis,
    run_sweep,
    sweep_prepared,
)
from loopscope.experiments.upgrade import impact_of_compare, release_note, settings_move
from loopscope.model import Session, escape_for_display
from loopscope.words import plural

__all__ = ["compare", "sweep"]

MAX_CELL_WARNINGS = 10
"""Clamp warnings printed per sweep before the rest are summarised in one line."""


# --------------------------------------------------------------------------- shared


def _load_sessions(
    paths: Sequence[str], status: RunStatus, import_limits: Sequence[str], format_id: str | None
) -> list[Session]:
    from tqdm import tqdm

    limits = parse_import_limits(import_limits)
    with tqdm(desc="loading", unit="session", file=sys.stderr, disable=None, leave=False) as bar:
        sessions = []
        for session in iter_sessions(paths, status, limits=limits, format_id=format_id):
            sessions.append(session)
            bar.update(1)
    return sessions


def _load_labels(
    paths: Sequence[str], labels_file: str | None, status: RunStatus
) -> Mapping[str, LabelLike]:
    """``--labels FILE``, else the ``labels.csv`` sidecars next to the sessions.

    Keyed by the sessions' ``source``. Rows that cannot be used are problems (printed with the
    others; an unusable labels file counts as bad input).
    """
    from loopscope.labels import labels_for_sessions

    try:
        labels, problems = labels_for_sessions(list(paths), labels_file)
    except OSError as exc:
        where = escape_for_display(labels_file or "labels.csv")
        raise click.UsageError(f"{where}: cannot read the labels file ({exc.strerror or exc})") from exc
    status.problems.extend(problems)
    return labels


def _labels_note(labels: Mapping[str, LabelLike], labels_file: str | None) -> str:
    loops = sum(1 for v in labels.values() if v.label == "loop")
    ok = sum(1 for v in labels.values() if v.label == "ok")
    where = f" from {escape_for_display(labels_file)}" if labels_file else ""
    return f"labels{where}: {loops} loop, {ok} ok"


def _fmt_ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


# --------------------------------------------------------------------------- sweep


_TABLE_METRICS: tuple[str, ...] = (
    "refused", "warned", "false_refusals", "turns_lost", "loops_caught", "wasted_turns",
    "refused_early", "loops_missed", "precision", "recall",
)


def _sweep_table(result: SweepResult) -> str:
    keys = [a.key for a in result.axes]
    header = [*keys, *_TABLE_METRICS]
    rows: list[list[str]] = []
    for cell in result:
        m = cell.metrics.to_json()
        mark = "*" if cell.warnings else ""
        row = [f"{cell.values[k]}{mark}" for k in keys]
        for name in _TABLE_METRICS:
            v = m[name]
            row.append(_fmt_ratio(v) if name in ("precision", "recall") else str(v))
        rows.append(row)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    if any(cell.warnings for cell in result):
        lines.append("* the engine adjusted this cell's configuration (see the warnings)")
    return "\n".join(lines)


def _describe_best(result: SweepResult) -> str:
    best = result.best()
    if best is None:
        return "no cells"
    m: Metrics = best.metrics
    setting = " ".join(f"--set {k}={v}" for k, v in best.values.items())
    wrong = m.false_refusals + m.refused_early + m.loops_missed
    return (
        f"best: {setting}  ({plural(m.loops_caught, 'loop')} caught, {m.loops_missed} missed, "
        f"{plural(m.false_refusals, 'false refusal')}, {m.refused_early} refused early, "
        f"{plural(m.wasted_turns, 'wasted turn')}; {plural(wrong, 'wrong outcome')})"
    )


def _print_cell_warnings(cells: Sequence[CellConfig]) -> None:
    notes = [
        f"{' '.join(f'{k}={v}' for k, v in c.values.items())}: {w}"
        for c in cells
        for w in c.warnings
    ]
    for note in notes[:MAX_CELL_WARNINGS]:
        click.echo(f"loopscope: warning: {note}", err=True)
    if len(notes) > MAX_CELL_WARNINGS:
        click.echo(
            f"loopscope: warning: … and "
            f"{plural(len(notes) - MAX_CELL_WARNINGS, 'more adjusted cell')}",
            err=True,
        )


@click.command(cls=EngineCommand)
@run_inputs
@click.option("--vary", "vary", metavar="KEY=LO:HI[:STEP]", multiple=True, required=True,
              help="A setting to sweep over an integer range (inclusive). Repeat for a "
                   "second (or further) setting.")
@click.option("--workers", type=click.IntRange(min=1), default=None, metavar="N",
              help="Local processes to use (1 = this process). Default: one per CPU for large "
                   "sweeps, this process for small ones.")
@click.option("--dask", "dask_address", metavar="ADDRESS", default=None,
              help="Run on a Dask cluster (tcp://scheduler:8786), or 'local' to start a "
                   "LocalCluster. Needs pip install 'loopscope[dask]'.")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines: one object per grid cell.")
def sweep(
    inputs: RunInputs,
    vary: tuple[str, ...],
    workers: int | None,
    dask_address: str | None,
    as_json: bool,
) -> None:
    """Measure every configuration on a grid of settings against the labelled sessions.

    Each --vary KEY=LO:HI[:STEP] is an engine setting (the same names as --set) swept over
    LO, LO+STEP, … HI. Each grid cell is replayed over every session and scored against the
    labels (labels.csv next to the sessions, or --labels FILE): false refusals, loops caught,
    missed or refused early, wasted turns, precision and recall.

    When "loopscope prepare PATH" (or the dashboard) prepared exactly these files as they are
    now, they are read back from the on-disk cache (not with --dask): the same output.

    \b
    Example:
      loopscope sweep sample_transcripts --engine openclaw \\
          --vary warningThreshold=2:10 --vary criticalThreshold=4:20:2
    """
    version = chosen_version(inputs.engine_name, inputs.engine_version)
    try:
        axes: list[Axis] = [parse_axis(v) for v in vary]
        base_set = [parse_key_value(p, "--set") for p in inputs.set_pairs]
        settings = (read_settings_file(inputs.config_file, inputs.engine_name)
                    if inputs.config_file else None)
        cells = build_cells(inputs.engine_name, axes, settings, base_set, inputs.agent, version)
    except (GridError, ConfigError) as exc:
        raise click.UsageError(str(exc)) from exc
    _print_cell_warnings(cells)

    status = RunStatus()
    # Prepared before (``loopscope prepare``, the dashboard) from exactly these files as they
    # are now, at the cells' release: read back and swept here, one batch run per cell (which
    # reads no string of the table: its pool is not read whole).
    engine = get_engine(inputs.engine_name)
    folder = (prepared_folder(inputs.paths, engine, engine.version_of(cells[0].config),
                              inputs.format_id, inputs.import_limits, whole_pools=False)
              if cells and dask_address is None else None)
    labelling = RunStatus()  # (its problems follow the files', as an import's do)
    labels = _load_labels(inputs.paths, inputs.labels_file, labelling)
    if not labels:
        click.echo(
            "loopscope: warning: no labelled sessions found (labels.csv next to the sessions, "
            "or --labels FILE); only sessions, refused and warned are counted",
            err=True,
        )
    result = _sweep_read_back(inputs.engine_name, folder, cells, labels, axes)
    if result is not None and folder is not None:
        status.problems.extend(folder.problems())
        status.count_prepared(folder)
        count = len(folder.prepared)
    else:
        sessions = _load_sessions(inputs.paths, status, inputs.import_limits, inputs.format_id)
        count = len(sessions)
        result = _sweep_imported(inputs.engine_name, sessions, cells, labels, axes, workers,
                                 dask_address)
    status.problems.extend(labelling.problems)

    if as_json:
        for cell in result:
            click.echo(orjson.dumps(cell.to_json()))
    else:
        click.echo(f"{plural(count, 'session')}, "
                   f"{_labels_note(labels, inputs.labels_file)}, "
                   f"engine {inputs.engine_name}, {plural(len(cells), 'cell')}")
        click.echo(_sweep_table(result))
        click.echo(_describe_best(result))
    status.print_problems(verbose=inputs.verbose)
    status.print_import_line()
    sys.exit(status.exit_code())


def _sweep_read_back(engine_name: str, folder: PreparedFolder | None,
                     cells: Sequence[CellConfig], labels: Mapping[str, LabelLike],
                     axes: Sequence[Axis]) -> SweepResult | None:
    """The sweep of a folder read back from the cache; None when there is none, or when a
    piece of its table read meanwhile was damaged (the snapshot is then deleted: import)."""
    if folder is None:
        return None
    from tqdm import tqdm

    heads = folder.heads()
    try:
        with tqdm(total=len(heads), desc=f"sweep {engine_name} ({len(cells)} cells)",
                  unit="session", file=sys.stderr, disable=None, leave=False) as bar:
            return sweep_prepared(
                engine_name, folder.prepared, [h.turns for h in heads], cells, labels,
                sources=[h.source for h in heads], axes=axes,
                progress=lambda _cells: bar.update(len(heads) / len(cells)),
            )
    except DamagedSnapshot:
        return None


def _sweep_imported(engine_name: str, sessions: Sequence[Session], cells: Sequence[CellConfig],
                    labels: Mapping[str, LabelLike], axes: Sequence[Axis],
                    workers: int | None, dask_address: str | None) -> SweepResult:
    """The sweep of imported sessions: here (``workers`` processes) or on a Dask cluster."""
    from tqdm import tqdm

    with tqdm(total=len(sessions), desc=f"sweep {engine_name} ({len(cells)} cells)",
              unit="session", file=sys.stderr, disable=None, leave=False) as bar:
        if dask_address is None:
            return run_sweep(engine_name, sessions, cells, labels, axes=axes, workers=workers,
                             progress=bar.update)
        from loopscope.experiments.dask_backend import (
            DaskUnavailable,
            cluster_workers,
            dask_client,
            dask_runner,
        )

        try:
            with dask_client(dask_address, workers=workers) as client:
                return run_sweep(engine_name, sessions, cells, labels, axes=axes,
                                 workers=workers or cluster_workers(client),
                                 runner=dask_runner(client), progress=bar.update)
        except DaskUnavailable as exc:
            raise click.UsageError(str(exc)) from exc


# --------------------------------------------------------------------------- compare


def _where(fr: Any) -> str:
    """Where one side first refuses, counted from 1 as ``loopscope replay`` prints it."""
    if fr is None:
        return "not refused"
    return f"refused at {numbering.at(fr)} ({fr.detector})"


_LABEL_TEXT = {"loop": "labelled a real loop", "ok": "labelled good work"}


def _compare(engine_name: str, paths: Sequence[str], status: RunStatus,
             import_limits: Sequence[str], format_id: str | None, config_a: Any,
             config_b: Any) -> CompareResult:
    """Both configurations over the sessions: read back from the on-disk cache when ``prepare``
    (or the dashboard) prepared exactly these files for both sides' version (one batch run
    each), else imported."""
    from tqdm import tqdm

    engine = get_engine(engine_name)
    version_a, version_b = engine.version_of(config_a), engine.version_of(config_b)
    # (a batch run reads no string of the table: its pool is not read whole)
    folder = (prepared_folder(paths, engine, version_a, format_id, import_limits,
                              whole_pools=False)
              if engine.prepare_key(version_a) == engine.prepare_key(version_b) else None)
    if folder is not None:
        heads = folder.heads()
        try:
            result = compare_columns(engine.run_many(folder.prepared, config_a),
                                     engine.run_many(folder.prepared, config_b),
                                     [h.source for h in heads], [h.id for h in heads])
        except DamagedSnapshot:
            pass  # (a damaged piece of the table: the snapshot was deleted; import)
        else:
            status.problems.extend(folder.problems())
            status.count_prepared(folder)
            return result
    sessions = _load_sessions(paths, status, import_limits, format_id)
    with tqdm(total=len(sessions), desc=f"compare {engine_name}", unit="session",
              file=sys.stderr, disable=None, leave=False) as bar:
        return compare_configs(engine_name, sessions, config_a, config_b, progress=bar.update)


def _compare_table(result: CompareResult, labels: Mapping[str, LabelLike]) -> str:
    lines = []
    for change in result:
        label = labels.get(change.source)
        note = f"  [{_LABEL_TEXT[label.label]}]" if label and label.label in _LABEL_TEXT else ""
        lines.append(
            f"{change.change:<7} {escape_for_display(change.source)}{note}\n"
            f"        A: {_where(change.a)}\n"
            f"        B: {_where(change.b)}"
        )
    s = result.summary
    lines.append(
        f"{s['gained']} gained a refusal, {s['lost']} lost one, {s['moved']} moved, "
        f"{s['same']} unchanged."
    )
    return "\n".join(lines)


@click.command(cls=EngineCommand)
@run_inputs
@click.option("--a-version", "a_version", metavar="VERSION", default=None,
              help="The guard's release for configuration A (default: --engine-version / "
                   "--openclaw-version, else the engine's default).")
@click.option("--b-version", "b_version", metavar="VERSION", default=None,
              help="The guard's release for configuration B.")
@click.option("--a-config", "a_config", metavar="FILE", default=None,
              type=click.Path(dir_okay=False),
              help="A config file for A only (instead of --config).")
@click.option("--b-config", "b_config", metavar="FILE", default=None,
              type=click.Path(dir_okay=False),
              help="A config file for B only (instead of --config).")
@click.option("--a", "a_pairs", metavar="KEY=VALUE", multiple=True,
              help="A setting of configuration A (on top of --config/--set). Repeatable.")
@click.option("--b", "b_pairs", metavar="KEY=VALUE", multiple=True,
              help="A setting of configuration B (on top of --config/--set). Repeatable.")
@click.option("--json", "as_json", is_flag=True,
              help="JSON Lines: one object per changed session, then a summary object (with "
                   "different --a-version/--b-version, it also holds summary_text: the upgrade "
                   "impact in one paragraph).")
def compare(
    inputs: RunInputs,
    a_version: str | None,
    b_version: str | None,
    a_config: str | None,
    b_config: str | None,
    a_pairs: tuple[str, ...],
    b_pairs: tuple[str, ...],
    as_json: bool,
) -> None:
    """Compare configuration A with configuration B: which sessions gain, lose or move a refusal.

    A and B both start from --config and --set; each --a / --b KEY=VALUE, --a-config /
    --b-config and --a-version / --b-version then applies to one side only. Only sessions
    whose first refusal differs are listed. With two versions this is the upgrade impact: what
    changes for these sessions if the team moves from release A to release B.

    When "loopscope prepare PATH" (or the dashboard) prepared exactly these files as they are
    now, for both sides' release, they are read back from the on-disk cache: the same output.

    \b
    Examples:
      loopscope compare sample_transcripts --engine gglib \\
          --a max_repeated_batch_steps=2 --b max_repeated_batch_steps=4
      loopscope compare sessions/ --engine openclaw \\
          --a-version 2026.6.11 --a-config openclaw.json --b-version 2026.9.6
    """
    base_version = chosen_version(inputs.engine_name, inputs.engine_version)
    if not (a_pairs or b_pairs or a_version or b_version or a_config or b_config):
        raise click.UsageError("nothing to compare: give at least one --a or --b KEY=VALUE, "
                               "--a-config/--b-config or --a-version/--b-version")
    said: set[str] = set()  # a note both sides share is printed once
    resolution_a, resolution_b = (
        resolve_engine_config(inputs.engine_name, side_config or inputs.config_file,
                              [*inputs.set_pairs, *pairs], inputs.agent, option=option,
                              version=side_version or base_version, said=said)[1]
        for option, side_config, pairs, side_version in (("--a", a_config, a_pairs, a_version),
                                                         ("--b", b_config, b_pairs, b_version)))
    status = RunStatus()
    engine = get_engine(inputs.engine_name)
    version_a = engine.version_of(resolution_a.config)
    version_b = engine.version_of(resolution_b.config)
    result = _compare(inputs.engine_name, inputs.paths, status, inputs.import_limits,
                      inputs.format_id, resolution_a.config, resolution_b.config)
    upgrade = version_a != version_b
    # Labels annotate the readable list and the upgrade paragraph; the JSON change lines are
    # the outcomes alone.
    labels = (_load_labels(inputs.paths, inputs.labels_file, status) if upgrade or not as_json
              else {})
    paragraph = None
    if upgrade:
        move = settings_move(engine.settings_for(version_a), engine.values(resolution_a.config),
                             engine.settings_for(version_b), engine.values(resolution_b.config))
        paragraph = release_note(impact_of_compare(result, labels), engine.title, version_a,
                                 version_b, move)
    if as_json:
        for change in result:
            click.echo(orjson.dumps(change.to_json()))
        closing = result.summary_json()
        if paragraph is not None:
            closing["summary_text"] = paragraph
        click.echo(orjson.dumps(closing))
    else:
        click.echo(_compare_table(result, labels))
        if paragraph is not None:
            click.echo("")
            click.echo(paragraph)
    status.print_problems(verbose=inputs.verbose)
    status.print_import_line()
    sys.exit(status.exit_code())
