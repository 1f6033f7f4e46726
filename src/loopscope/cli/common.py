"""What every loopscope command shares: options, config resolution, loading, problems, exits.

Conventions, the same for every command (CI scripts rely on them): exit 0 on success, 1 when
``--fail-on-refusal`` and a session was refused, 2 for bad usage or unreadable input. A problem
in one file never stops the other files; it is printed to stderr and counted in the exit
status. Warnings never change it.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

import click

from loopscope.engines import ConfigError, Engine, engine_names, get_engine
from loopscope.engines.base import ConfigResolution
from loopscope.formats.base import ImportTotals
from loopscope.model import Problem, Session, escape_for_display

if TYPE_CHECKING:
    from loopscope.corpus import PreparedFolder

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_BAD_INPUT = 2

F = TypeVar("F", bound=Callable[..., Any])


def parse_key_value(text: str, option: str) -> tuple[str, str]:
    """``KEY=VALUE`` → ``(KEY, VALUE)``; the value may be empty (``observation_tools=``)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise click.BadParameter(f"expected KEY=VALUE, got {escape_for_display(text, 60)!r}",
                                 param_hint=option)
    return key.strip(), value


def settings_epilog() -> str:
    """Every engine's ``--set`` keys, from the engines' schemas (shown under ``--help``)."""
    lines = ["\b", "Settings (--set KEY=VALUE; `loopscope engines` tells more):"]
    for name in engine_names():
        engine = get_engine(name)
        versions = f" (versions {', '.join(engine.versions)})" if len(engine.versions) > 1 else ""
        lines.append(f"  {name}{versions}:")
        for version in engine.versions:
            specs = engine.settings_for(version)
            if len(engine.versions) > 1:
                lines.append(f"    {version}:")
            for spec in specs:
                what_if = "" if spec.deployable else ", what-if"
                lines.append(f"      {spec.name} ({spec.kind}, default "
                             f"{spec.format(spec.default) if spec.kind != 'str_list' else '…'}"
                             f"{what_if})")
    return "\n".join(lines)


class EngineCommand(click.Command):
    """A command with the engine options (:func:`engine_options`) whose ``--help`` ends with
    every engine's settings.

    What needs every engine imported is built only when used — the settings for ``--help``,
    the ``--<engine>-version`` options when the command line names one (or asks for help or
    completion) — so ``replay --engine gglib`` starts without importing the other engines."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_VERSION_OPTIONS_META] = ctx.resilient_parsing or any(  # (completion: all)
            _may_name_a_version_option(a) for a in args)
        return super().parse_args(ctx, args)

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        params = super().get_params(ctx)
        if not ctx.meta.get(_VERSION_OPTIONS_META, True):
            return params
        # (after ``--engine-version``, where ``--help`` lists them)
        at = next((i + 1 for i, p in enumerate(params) if p.name == "engine_version"),
                  len(params))
        return [*params[:at], *_version_options(), *params[at:]]

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_epilog(ctx, formatter)
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(settings_epilog())


_VERSION_OPTIONS_META = "loopscope.version_options"


def _may_name_a_version_option(arg: str) -> bool:
    """Whether a command-line word needs the ``--<engine>-version`` options to parse: one of
    them (``--openclaw-version 2026.9.6``, ``--openclaw-version=…``), or help (which lists
    them). A value that merely looks like one only costs the engines' import."""
    name = arg.partition("=")[0]
    return name in ("--help", "-h") or (name.startswith("--") and name.endswith("-version")
                                         and name != "--engine-version")


@cache
def _version_options() -> tuple[click.Option, ...]:
    """``--<engine>-version`` for every engine that models several releases (``--openclaw-version
    2026.9.6``), collected in ``ctx.meta`` by :func:`_remember_version`."""
    options = []
    for name in engine_names():
        engine = get_engine(name)
        if len(engine.versions) > 1:
            options.append(click.Option(
                [f"--{name}-version"], metavar="VERSION", default=None, expose_value=False,
                callback=_remember_version(name), is_eager=False,
                help=f"{engine.title}: the release to replay ({', '.join(engine.versions)}; "
                     f"default {engine.default_version})."))
    return tuple(options)


def engine_options(func: F) -> F:
    """``--engine``, ``--engine-version``/``--openclaw-version``, ``--config``, ``--set`` and
    ``--agent``, shared by replay/sweep/compare (commands of class :class:`EngineCommand`)."""
    func = click.option("--agent", "agent", metavar="ID", default=None,
                        help="OpenClaw: resolve the agents.list[] overlay of this agent id.")(func)
    func = click.option("--set", "set_pairs", metavar="KEY=VALUE", multiple=True,
                        help="Override one setting, using the engine's own key names (listed "
                             "below). Repeatable.")(func)
    func = click.option("--config", "config_file", metavar="FILE", default=None,
                        type=click.Path(dir_okay=False),
                        help="JSON, JSON5 or TOML: the guard's own config file (an "
                             "openclaw.json, gglib settings, …) or a loopscope config "
                             "holding several engines.")(func)
    # (and ``--<engine>-version`` for each engine with several releases: EngineCommand)
    func = click.option("--engine-version", "engine_version", metavar="VERSION", default=None,
                        help="The release of the guard to replay (default: the engine's "
                             "default; see `loopscope engines`).")(func)
    func = click.option("--engine", "engine_name", type=click.Choice(list(engine_names())),
                        required=True, help="Which loop guard to replay.")(func)
    return func


VERSIONS_META = "loopscope.versions"


def _remember_version(engine_name: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is not None:
            ctx.meta.setdefault(VERSIONS_META, {})[engine_name] = value
        return value
    return remember


def chosen_version(engine_name: str, engine_version: str | None) -> str | None:
    """The version asked for by ``--engine-version`` or ``--<engine>-version``."""
    ctx = click.get_current_context()
    asked: dict[str, str] = ctx.meta.get(VERSIONS_META, {})
    for other, version in asked.items():
        if other != engine_name:
            raise click.UsageError(f"--{other}-version applies to --engine {other} only; use "
                                   "--engine-version")
        if engine_version is not None and engine_version != version:
            raise click.UsageError(f"--engine-version and --{other}-version disagree")
        return version
    return engine_version


def import_options(func: F) -> F:
    """``--format``, ``--import-limit`` and ``--labels``."""
    func = click.option("--labels", "labels_file", metavar="FILE", default=None,
                        type=click.Path(dir_okay=False),
                        help="labels.csv to use instead of the one found next to the sessions.")(func)
    func = click.option("--import-limit", "import_limits", metavar="NAME=VALUE", multiple=True,
                        help="Raise or lower an import limit, e.g. max_document_bytes=1GiB.")(func)
    func = click.option("--verbose", "-v", "verbose", is_flag=True,
                        help="Also list import notes (info-level problems).")(func)
    func = click.option("--format", "format_id", metavar="NAME", default=None,
                        help="Force a session format instead of detecting it.")(func)
    return func


@dataclass(frozen=True, slots=True)
class RunInputs:
    """What ``replay``, ``sweep`` and ``compare`` are each given before their own options: the
    sessions (``PATH...`` and :func:`import_options`) and the engine with its configuration
    (:func:`engine_options`)."""

    paths: tuple[str, ...]
    engine_name: str
    engine_version: str | None
    config_file: str | None
    set_pairs: tuple[str, ...]
    agent: str | None
    format_id: str | None
    verbose: bool
    import_limits: tuple[str, ...]
    labels_file: str | None


def run_inputs(func: Callable[..., Any]) -> Callable[..., Any]:
    """``PATH...``, :func:`engine_options` and :func:`import_options`, handed to the command
    as one :class:`RunInputs`, its first parameter (its own options follow as keywords).
    Placed where those decorators stood, so ``--help`` lists the options in the same order."""
    names = [f.name for f in fields(RunInputs)]

    @functools.wraps(func)
    def command(**options: Any) -> Any:
        inputs = RunInputs(**{name: options.pop(name) for name in names})
        return func(inputs, **options)

    wrapped = import_options(command)
    wrapped = engine_options(wrapped)
    return click.argument("paths", nargs=-1, required=True, metavar="PATH...")(wrapped)


@dataclass
class RunStatus:
    """Accumulates what decides the exit status; printed problems go through it."""

    bad_input: bool = False
    refused: bool = False
    false_refused: bool = False
    """A session labelled ``ok`` was refused."""
    problems: list[Problem] = field(default_factory=list)
    totals: ImportTotals = field(default_factory=ImportTotals)
    """Files read, calls imported and calls not imported (the closing line)."""

    def fail(self, message: str) -> None:
        """A usage or input error that does not stop the other files."""
        self.bad_input = True
        click.echo(f"loopscope: error: {message}", err=True)

    def exit_code(self, fail_on_refusal: bool = False, fail_on_false_refusal: bool = False) -> int:
        if self.bad_input or any(p.severity == "error" for p in self.problems):
            return EXIT_BAD_INPUT
        if (fail_on_refusal and self.refused) or (fail_on_false_refusal and self.false_refused):
            return EXIT_REFUSED
        return EXIT_OK

    def print_problems(self, *, verbose: bool = False) -> None:
        """Problems to stderr, one ``source[:line]: severity: message [code]`` line each, sorted
        by source, then line.

        Errors and warnings are always printed. Infos (normal imperfections such as calls left
        unanswered at the end of a session) would drown them on a real corpus, so they are
        counted in one line unless ``verbose``.
        """
        shown = [p for p in self.problems if verbose or p.severity != "info"]
        for problem in sorted(shown, key=lambda p: (p.source, p.line or 0, p.pointer or "")):
            click.echo(problem.text(), err=True)
        from loopscope.formats.loader import UNRECOGNISED_CODES, formats_line
        from loopscope.words import plural

        if any(p.code in UNRECOGNISED_CODES and p.severity != "info" for p in self.problems):
            click.echo(f"{formats_line()}; --format NAME forces one.", err=True)
        hidden = len(self.problems) - len(shown)
        if hidden:
            click.echo(f"loopscope: {plural(hidden, 'import note')} not shown; use --verbose "
                       "to list them", err=True)

    def print_import_line(self, *, to_stdout: bool = False) -> None:
        """The closing line of a command that imports: ``F files, C calls imported, L calls
        not imported (see warnings)`` — on stdout after a readable ``replay`` (its summary),
        else on stderr (stdout then holds only the command's own output: JSON Lines, a
        table a script reads)."""
        if to_stdout:
            click.echo(self.totals.line())
        else:
            click.echo(f"loopscope: {self.totals.line()}", err=True)

    def count_prepared(self, folder: Any) -> None:
        """The files of a folder read back from the on-disk cache, into :attr:`totals`."""
        for f in folder.files:
            seen, imported, aside = f.result.tally
            self.totals.add(seen, imported, sum(aside.values()))


def read_settings_file(path: str, engine_name: str) -> Mapping[str, Any] | None:
    """The part of a config file that concerns ``engine_name`` (see ``loopscope.config_io``).

    Raises :class:`ConfigError` naming the file and the reason.
    """
    from loopscope.config_io import ConfigFileError, engine_settings, read_config_file

    try:
        return engine_settings(read_config_file(path), engine_name)
    except ConfigFileError as exc:
        raise ConfigError(str(exc)) from exc


def resolve_engine_config(
    engine_name: str,
    config_file: str | None,
    set_pairs: Sequence[str],
    agent: str | None,
    *,
    option: str = "--set",
    version: str | None = None,
    said: set[str] | None = None,
) -> tuple[Engine[Any, Any], ConfigResolution[Any]]:
    """Engine + configuration from ``--config``/``--set``/``--agent`` and the version;
    ``--set`` wins over the file.

    Its warnings and notes go to stderr, each once: ``said`` (shared by the calls of one
    command that resolves several configurations, such as ``compare``'s A and B) holds the
    lines already printed, and a line in it is not printed again.

    Raises :class:`click.UsageError` (exit 2) with a message naming the key, file or version.
    """
    engine = get_engine(engine_name)
    overrides = [parse_key_value(p, option) for p in set_pairs]
    try:
        settings = read_settings_file(config_file, engine_name) if config_file else None
        resolution = engine.resolve_config(settings, overrides, agent, version)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from exc
    printed = set() if said is None else said
    lines = [*(f"loopscope: warning: {w}" for w in resolution.warnings),
             *(f"loopscope: note: {n}" for n in resolution.notes)]
    for line in lines:
        if line not in printed:
            printed.add(line)
            click.echo(line, err=True)
    return engine, resolution


def parse_import_limits(pairs: Sequence[str]) -> Any:
    from loopscope.formats import ImportLimits, parse_import_limits

    if not pairs:
        return ImportLimits()
    try:
        return parse_import_limits([parse_key_value(p, "--import-limit") for p in pairs])
    except ValueError as exc:
        raise click.UsageError(f"--import-limit: {exc}") from exc


def iter_sessions(
    paths: Sequence[str], status: RunStatus, *, limits: Any = None, format_id: str | None = None
) -> Iterator[Session]:
    """Every session under ``paths``, file by file in sorted path order.

    Problems are collected in ``status`` (printed at the end); a path that does not exist is a
    bad-input error that does not stop the others.
    """
    from loopscope.formats import iter_file_imports

    for file_import in iter_file_imports(list(paths), limits=limits, format=format_id):
        status.problems.extend(file_import.problems)
        status.totals.add_file(file_import)
        yield from file_import.sessions


def prepared_folder(paths: Sequence[str], engine: Engine[Any, Any], version: str | None,
                    format_id: str | None, import_limits: Sequence[str], *,
                    whole_pools: bool = True) -> PreparedFolder | None:
    """The sessions under ``paths`` read back from the on-disk cache
    (:class:`~loopscope.corpus.readback.PreparedFolder`) when one folder or file was given without
    ``--format`` or ``--import-limit`` and ``loopscope prepare`` (or the dashboard) prepared
    exactly its files as they are now for ``engine`` at ``version``; else ``None``: import.
    What a command prints is the same either way (the tests compare them byte for byte).
    ``whole_pools``: see :func:`~loopscope.corpus.readback.read_prepared`."""
    if len(paths) != 1 or format_id is not None or import_limits:
        return None
    from loopscope.corpus.readback import read_prepared

    return read_prepared(paths[0], engine, version, whole_pools=whole_pools)


def progress(iterable: Any, *, total: int | None = None, desc: str = "",
             unit: str = "session") -> Any:
    """A tqdm bar on stderr, shown only on a terminal (never pollutes ``--json`` output)."""
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, file=sys.stderr, disable=None, leave=False,
                unit=unit)
