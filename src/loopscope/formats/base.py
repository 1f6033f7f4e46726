"""Shared types of the importers: limits, detection, per-file results, and the problem sink.

Every format module turns parsed records into sessions through
:class:`loopscope.formats.builder.SessionBuilder` and reports through an
:class:`ImportContext`; neither ever raises to the loader, so a bad record, candidate or file
never costs another file's sessions.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from loopscope.formats._construct import positional_constructor
from loopscope.formats.tally import CallTally
from loopscope.model import Problem, Session, Severity, escape_for_display

Layout = Literal["document", "jsonl", "markdown", "zip", "parquet", "sqlite", "unknown"]

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB


_new_problem = positional_constructor(Problem)  # Problem(...) without its frozen __init__


@dataclass(frozen=True, slots=True)
class ImportLimits:
    """Resource limits, so hostile or enormous input stays bounded. Every one is configurable."""

    max_file_bytes: int = 2 * GiB
    max_document_bytes: int = 256 * MiB
    memory_factor: int = 8
    max_line_bytes: int = 64 * MiB
    max_json_depth: int = 512
    max_value_chars: int = 8_000_000
    max_events_per_session: int = 1_000_000
    max_sessions_per_file: int = 100_000
    max_warnings_per_code: int = 20
    max_archive_members: int = 100_000
    """Entries a zip archive (``.eval``) may hold; counted before the archive is opened."""
    max_archive_bytes: int = 1 * GiB
    """Bytes all members of one zip archive may inflate to, together."""
    max_compression_ratio: int = 100
    """Inflated ÷ compressed size a zip member may reach (past 1 MiB inflated). Real session
    logs deflate 3–12:1, 3,000 identical calls of a made-up loop 73:1, a zip bomb 400–1000:1."""


@dataclass(frozen=True, slots=True)
class Detection:
    """What a file looks like: its format, layout and why."""

    format: str | None
    """The format id, or ``None`` when nothing matched (or the file is unusable)."""
    layout: Layout
    reason: str
    """One line a person can read: why this format was chosen, or what was seen."""
    unsupported: str | None = None
    """Set when the file is recognised but not supported (mini-swe-agent, a zip that is no
    inspect log): the ``unsupported_variant`` message. ``format`` is then ``None``."""


@dataclass(frozen=True, slots=True)
class Record:
    """One parsed JSONL record with its 1-based physical line."""

    line: int
    value: Any


@dataclass
class ImportContext:
    """What a format module needs to know about the file, and where it reports problems.

    ``path`` is the file path as reached (the PATH argument joined with the relative path in a
    scanned folder). Problems about one candidate are reported with ``candidate=n``; the loader
    rewrites their source to ``path#n`` once it knows the file holds several candidates.
    """

    path: str
    limits: Any  # ImportLimits; Any keeps format modules free of a circular import in tests
    problems: list[tuple[int | None, Problem]] = field(default_factory=list)
    detection: Detection | None = None
    """What detection decided (format, layout, reason); ``None`` when the format was forced."""
    skipped_lines: dict[int, str] = field(default_factory=dict)
    """JSONL only: physical lines the loader skipped so far (line → problem code), filled
    while streaming. When a format makes one candidate per line (``output.jsonl``,
    conversation per line), a skipped line between two records is a failed candidate: it
    still takes its number, so ``path#n`` sources stay stable; see :meth:`skipped_between`."""
    tally: CallTally = field(default_factory=CallTally)
    """The tool calls seen in the file (counted by the loader) and those an importer set aside
    on purpose (:meth:`set_aside_calls`)."""

    def set_aside_calls(self, reason: str, *, line: int | None = None,
                        pointer: str | None = None, count: int = 1) -> None:
        """Tell the tally that ``count`` tool call(s) recorded at ``line``/``pointer`` are left
        out on purpose (a repeated id, an abandoned branch…), so they are not reported as lost.
        The importer reports the reason itself (usually an info)."""
        self.tally.aside(reason, line if line is not None else pointer, count)

    def problem(
        self,
        severity: Severity,
        code: str,
        message: str,
        *,
        line: int | None = None,
        pointer: str | None = None,
        candidate: int | None = None,
        count: int = 1,
    ) -> None:
        self.problems.append(
            (candidate, _new_problem(self.path, line, pointer, severity, code, message, count))
        )

    def skipped_between(self, after_line: int, before_line: int) -> list[int]:
        """Lines skipped by the loader strictly between two physical lines, in order."""
        return sorted(n for n in self.skipped_lines if after_line < n < before_line)

    def one_candidate_per_line(
        self, records: Iterable[Record], what: str = "conversation"
    ) -> Iterator[tuple[int, Record | None]]:
        """Number the candidates of a one-session-per-line file.

        Yields ``(n, record)`` per parsed line, and ``(n, None)`` for a line the loader skipped
        (invalid JSON, too long, …): that line was a candidate too, so it keeps its number and
        gets a ``session_failed`` problem here.
        """
        n = 0
        previous_line = 0
        for record in itertools.chain(records, [None]):  # streamed; None marks the end
            until = (1 << 62) if record is None else record.line
            for line in self.skipped_between(previous_line, until):
                self.problem("error", "session_failed",
                             f"line {line} could not be read; this {what} was not imported",
                             line=line, candidate=n)
                yield n, None
                n += 1
            if record is None:
                return
            previous_line = record.line
            yield n, record
            n += 1

    def internal_error(self, exc: BaseException, *, candidate: int | None = None,
                       line: int | None = None, pointer: str | None = None) -> None:
        """Report an unexpected exception (a bug) as ``internal_error``; sessions completed before
        it are kept."""
        self.problem("error", "internal_error",
                     f"importer bug: {type(exc).__name__}: {escape_for_display(str(exc), 200)}; "
                     + ("this session was not imported" if candidate is not None
                        else "the rest of the file was not imported"),
                     line=line, pointer=pointer, candidate=candidate)


@dataclass
class FileImport:
    """Everything one file produced."""

    path: str
    detection: Detection
    sessions: list[Session] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    calls_seen: int | None = None
    """Tool calls the loader counted in the file, apart from the importer; ``None`` when this
    layout is not counted (a zip archive) or the file was not read."""
    calls_imported: int = 0
    """Tool calls in ``sessions``."""
    calls_set_aside: dict[str, int] = field(default_factory=dict)
    """Calls left out on purpose, by reason (repeated ids, abandoned branches, …)."""

    @property
    def calls_lost(self) -> int:
        """Seen calls neither imported nor set aside (each file with some has a
        ``calls_not_imported`` warning)."""
        if self.calls_seen is None:
            return 0
        return max(0, self.calls_seen - self.calls_imported - sum(self.calls_set_aside.values()))

    @property
    def has_errors(self) -> bool:
        return any(p.severity == "error" for p in self.problems)


def _n(count: int, one: str) -> str:
    return f"{count:,} {one}{'' if count == 1 else 's'}"


@dataclass
class ImportTotals:
    """What a run imported, file by file: the closing line of every command that imports,
    and the dashboard's banner. Calls *not imported* are the calls counted in a file and
    neither imported nor set aside on purpose (:attr:`FileImport.calls_lost`): each such
    file has a ``calls_not_imported`` warning."""

    files: int = 0
    calls_imported: int = 0
    calls_lost: int = 0
    files_losing: int = 0
    """Files with calls not imported."""

    def add(self, calls_seen: int | None, calls_imported: int, set_aside: int) -> None:
        """One file: its counted calls (``None``: not counted), imported and set aside."""
        lost = 0 if calls_seen is None else max(0, calls_seen - calls_imported - set_aside)
        self.files += 1
        self.calls_imported += calls_imported
        self.calls_lost += lost
        self.files_losing += lost > 0

    def add_file(self, f: FileImport) -> None:
        self.add(f.calls_seen, f.calls_imported, sum(f.calls_set_aside.values()))

    def line(self) -> str:
        """``"3 files, 12 calls imported, 40 calls not imported (see warnings)"`` (the last
        part only when some were not)."""
        text = f"{_n(self.files, 'file')}, {_n(self.calls_imported, 'call')} imported"
        if self.calls_lost:
            text += f", {_n(self.calls_lost, 'call')} not imported (see warnings)"
        return text

    def lost_text(self) -> str:
        """``"40 tool calls in 2 files were not imported"`` (empty when none were)."""
        if not self.calls_lost:
            return ""
        verb = "was" if self.calls_lost == 1 else "were"
        return (f"{_n(self.calls_lost, 'tool call')} in {_n(self.files_losing, 'file')} "
                f"{verb} not imported")


@dataclass
class ImportReport:
    """The files of one ``load_paths`` call, in sorted path order."""

    files: list[FileImport] = field(default_factory=list)
    ignored_files: int = 0
    """Files a folder scan skipped because of their extension (counted, not reported one by one)."""

    @property
    def sessions(self) -> list[Session]:
        return [s for f in self.files for s in f.sessions]

    @property
    def problems(self) -> list[Problem]:
        return [p for f in self.files for p in f.problems]

    @property
    def has_errors(self) -> bool:
        return any(f.has_errors for f in self.files)

    def totals(self) -> ImportTotals:
        totals = ImportTotals()
        for f in self.files:
            totals.add_file(f)
        return totals

    def __iter__(self) -> Iterator[FileImport]:
        return iter(self.files)
