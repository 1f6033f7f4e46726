"""The loader: one file → :class:`FileImport`; paths and folders → :class:`ImportReport`.

It detects the format (:mod:`loopscope.formats.detect`), hands the parsed content to the format
module (``loopscope.formats.<format_id>``), then does what every format shares: session ids
and ``path#n`` sources, candidate problems, ``empty_session``,
``session_truncated``, ``too_many_sessions``, aggregation of infos and the warning cap, and
catching every exception (``internal_error``) so that nothing escapes and earlier sessions are
kept.

The public API is listed once, in the ``__all__`` of :mod:`loopscope.formats`, which
re-exports it from here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import os
import re
import sys
from collections.abc import Iterable, Iterator
from types import ModuleType
from typing import Any

from loopscope import background
from loopscope.bulk import CollectorPaused
from loopscope.formats import jsonio
from loopscope.formats._construct import positional_constructor
from loopscope.formats.base import (
    Detection,
    FileImport,
    ImportContext,
    ImportLimits,
    ImportReport,
)
from loopscope.formats.builder import MAX_EVENTS, TRUNCATIONS
from loopscope.formats.detect import (
    FORMAT_NAMES,
    NOT_A_RECORDING,
    Probe,
    describe_value,
    formats_read,
    plain_reason,
    probe,
)
from loopscope.formats.tally import (
    IMPORTED_CALLS,
    CallTally,
    count_document,
    count_records,
    count_text,
    count_unknown_records,
    count_unknown_text,
    count_unknown_value,
    lost_calls,
)
from loopscope.model import Problem, Session, Severity, escape_for_display

FORMAT_IDS = tuple(FORMAT_NAMES)
UNRECOGNISED_CODES = frozenset({"unknown_format", "not_a_recording"})
"""Problem codes of a file that is no recording loopscope reads (say which formats it does)."""


def formats_line() -> str:
    """One line for a person whose file was not recognised: which formats loopscope reads."""
    return f"loopscope reads: {formats_read()} (see the README, \"Session formats\")"


SCAN_EXTENSIONS = frozenset({".json", ".jsonl", ".ndjson", ".traj", ".eval", ".md",
                             ".parquet"})
SNIFF_EXTENSIONS = frozenset({".txt", ".log", ".out", ".db", ".sqlite", ""})
"""Extensions a folder scan reads only when their content is a recording loopscope knows:
agents and exporters write some recordings under these names (the OpenTelemetry console
exporter's output redirected to a ``.log`` or ``.txt``, opencode's ``opencode.db``), but such
folders hold far more files of these kinds that are not recordings, which must not each
become a warning."""
SERDE_FORMATS = frozenset({"openai_chat", "tau_bench"})
"""Formats whose files follow the gglib file-level number rules: a non-finite or
out-of-range number anywhere makes the file unreadable, because gglib reads these messages as
recorded and serde_json rejects such numbers."""

_COVERED_ELSEWHERE = frozenset({"covered_by_api_history", "cline_task_metadata",
                                "opencode_storage_record"})
"""Info codes of a file whose sessions another file of the same folder holds: it yields none,
and that is no ``no_sessions`` warning."""

_FILE_FAILURES = frozenset({"unreadable", "empty_file", "too_large", "too_deep",
                            "invalid_json"})
_REFUSALS = frozenset({"unknown_format", "not_a_recording", "unsupported_variant",
                       "invalid_json"})
"""Problems that refuse a whole file whose calls can still be counted (see _count_refused)."""


# ------------------------------------------------------------------------------ limits

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|KiB|MiB|GiB|TiB|)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def parse_size(text: str) -> int:
    """``"1GiB"`` → 1073741824; plain integers (``"1000"``, ``"1_000"``) are taken as they are.

    Accepts ``B``, ``KiB``, ``MiB``, ``GiB``, ``TiB`` (case-insensitive), decimals with a unit
    (``"1.5GiB"``). Raises ``ValueError`` with a readable message otherwise.
    """
    match = _SIZE.match(text.replace("_", ""))
    if not match:
        raise ValueError(f"not a size: {text!r} (use a number, optionally with KiB, MiB or GiB)")
    number, unit = match.groups()
    factor = _UNITS[unit.lower()]
    if "." in number and factor == 1:
        raise ValueError(f"not a whole number: {text!r}")
    value = int(float(number) * factor) if "." in number else int(number) * factor
    return value


_LIMIT_NAMES = tuple(f.name for f in dataclasses.fields(ImportLimits))


def parse_limit(spec: str) -> tuple[str, int]:
    """``"max_document_bytes=1GiB"`` → ``("max_document_bytes", 1073741824)``.

    Raises ``ValueError`` for an unknown name, a missing ``=``, or a value that is not a
    positive size/number.
    """
    if "=" not in spec:
        raise ValueError(f"expected NAME=VALUE, got {spec!r}")
    name, _, raw = spec.partition("=")
    name = name.strip()
    if name not in _LIMIT_NAMES:
        raise ValueError(f"unknown import limit {name!r}; known: {', '.join(_LIMIT_NAMES)}")
    value = parse_size(raw)
    if value <= 0:
        raise ValueError(f"import limit {name} must be positive, got {raw.strip()!r}")
    return name, value


def limits_from_specs(specs: Iterable[str], base: ImportLimits | None = None) -> ImportLimits:
    """Apply ``--import-limit NAME=VALUE`` specs (later ones win) to ``base``."""
    changes = dict(parse_limit(spec) for spec in specs)
    return dataclasses.replace(base or ImportLimits(), **changes)


def parse_import_limits(pairs: Iterable[tuple[str, str] | str],
                        base: ImportLimits | None = None) -> ImportLimits:
    """Like :func:`limits_from_specs`, also accepting ``(NAME, VALUE)`` pairs (the CLI's
    already-split ``--import-limit`` values). Raises ``ValueError`` with a readable message."""
    specs = [p if isinstance(p, str) else f"{p[0]}={p[1]}" for p in pairs]
    return limits_from_specs(specs, base)


# ------------------------------------------------------------------------------ detection


def detect_format(path: str | os.PathLike[str], limits: ImportLimits | None = None) -> Detection:
    """Format id, layout and a one-line reason, from the content (not the name). Never raises.

    A JSONL file is only sampled (first 50 records); a JSON document is parsed.
    """
    try:
        return probe(os.fspath(path), limits or ImportLimits()).detection
    except Exception as exc:  # pragma: no cover - defensive
        return Detection(None, "unknown", f"detection failed: {type(exc).__name__}")


# ------------------------------------------------------------------------------ one file


def _module(format_id: str) -> ModuleType | None:
    name = f"loopscope.formats.{format_id}"
    module = sys.modules.get(name)
    if module is not None:  # (import_module's machinery costs more than a file's header)
        return module
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return None
        raise


def load_file(path: str | os.PathLike[str], limits: ImportLimits | None = None,
              format: str | None = None, *, scanned: bool = False) -> FileImport:
    """Import one file: its sessions and problems. Never raises.

    ``format`` forces a format id (detection still finds the layout). ``scanned`` marks a file
    found in a folder scan: ``unknown_format`` is then a warning (an info for a ``.md`` with
    nothing call-shaped in it; see :func:`_refusal_severity`).
    """
    limits = limits or ImportLimits()
    # Parsed JSON holds no reference cycles: the cyclic collector only slowed ingest down
    # (several times over on large files, and a corpus loaded file after file).
    with CollectorPaused():
        return _load_file(os.fspath(path), limits, format, scanned)


def _load_file(path_str: str, limits: ImportLimits, format: str | None,
               scanned: bool) -> FileImport:
    ctx = ImportContext(path_str, limits)
    detection = Detection(None, "unknown", "not examined")
    sessions: list[tuple[int, Session]] = []
    candidates = 0
    imported: list[Any] = []
    imported_token = IMPORTED_CALLS.set(imported)
    try:
        found = probe(path_str, limits)
        detection = found.detection
        if format is not None:
            detection = Detection(format, detection.layout,
                                  f"format forced to {format} ({detection.reason})")
        ctx.detection = detection
        for severity, code, message, line in found.notes:
            ctx.problem(severity, code, message, line=line)  # type: ignore[arg-type]
        candidates = _import(found, detection, format, ctx, sessions, path_str, scanned)
    except Exception as exc:  # the last net: nothing escapes
        ctx.internal_error(exc)
    finally:
        IMPORTED_CALLS.reset(imported_token)
    return _finish(path_str, detection, ctx, sessions, candidates, limits, imported)


def _import(found: Probe, detection: Detection, forced: str | None, ctx: ImportContext,
            sessions: list[tuple[int, Session]], path: str, scanned: bool) -> int:
    """Run the format module; fill ``sessions``; return the number of candidates."""
    if found.error is not None:
        code, message, line = found.error
        if forced is None or code in _FILE_FAILURES or found.detection.layout == "unknown":
            _count_refused(found, ctx, path)
            ctx.problem(_refusal_severity(code, path, scanned, bool(ctx.tally.seen)), code,
                        message, line=line)
            return 0
    if detection.unsupported is not None and forced is None:
        _count_refused(found, ctx, path)
        ctx.problem("error", "unsupported_variant",
                    f"{detection.unsupported}; not imported")
        return 0
    format_id = detection.format
    if format_id is None:  # pragma: no cover - probe always sets error or format
        ctx.problem("error", "unknown_format", NOT_A_RECORDING)
        return 0
    if not re.fullmatch(r"[a-z][a-z0-9_]*", format_id):
        ctx.problem("error", "unsupported_variant",
                    f"unknown format id {escape_for_display(format_id, 60)!r}; not imported")
        return 0
    module = _module(format_id)
    label = FORMAT_NAMES.get(format_id, format_id)
    if module is None:
        ctx.problem("error", "unsupported_variant",
                    f"recognised as {format_id} ({label}); not supported yet")
        return 0
    items = _items(module, found, detection, ctx, path)
    if items is None:
        return 0
    candidates = _collect(items, format_id, ctx, sessions)
    if forced is None and sessions and not any(_recorded_work(s) for _, s in sessions):
        # The keys looked like a recording, but nothing in it is an agent's work: a summary
        # or a note with a few record-like keys. Saying so beats replaying an empty session.
        looks = (describe_value(found.value) if found.has_value
                 else "JSON Lines" if detection.layout == "jsonl" else detection.layout)
        sessions.clear()
        # (what it holds is counted as for any file no importer reads, not by the format's
        # counter: the file is not that format)
        ctx.tally = CallTally()
        _count_refused(found, ctx, path)
        ctx.problem("error", "not_a_recording",
                    f"not a recording: it was taken for {label} by its keys "
                    f"({escape_for_display(plain_reason(detection.reason)[0], 120)}), but holds "
                    "no message "
                    f"of a user or an assistant and no tool result; it looks like {looks}")
    return candidates


def _refusal_severity(code: str, path: str, scanned: bool, holds_calls: bool) -> Severity:
    """How loud a file refused at detection is.

    A file named on the command line is always an error: it was asked for. In a folder scan,
    an ``unknown_format`` file is a warning — a ``.json`` or ``.jsonl`` beside the sessions was
    meant to be one more often than not — except a Markdown file with nothing call-shaped in
    it (a README, a SOURCES.md): that is an info, as a folder of sessions commonly holds one.
    A Markdown file that does hold call-shaped lines is an agent's transcript loopscope cannot
    read: a warning, with its ``calls_not_imported``. Other refusals (damaged, not a
    recording, too large) stay errors."""
    if code != "unknown_format" or not scanned:
        return "error"
    if path.lower().endswith(".md") and not holds_calls:
        return "info"
    return "warning"


def _count_refused(found: Probe, ctx: ImportContext, path: str) -> None:
    """Count the call-shaped content of a file no importer reads (see
    :func:`loopscope.formats.tally.count_unknown_value`), so that its calls are reported as
    not imported instead of vanishing: the parsed value of a JSON document, every record of a
    JSON Lines file (streamed, silently: the file is refused as a whole), or the lines of a
    text — a Markdown transcript, or JSON too damaged to parse. A binary, empty, unreadable or
    oversized file is not counted (``calls_seen`` stays ``None``)."""
    tally = ctx.tally
    layout = found.detection.layout
    try:
        if found.has_value:
            tally.counted = True
            count_unknown_value(found.value, tally.seen.append)
        elif layout == "jsonl":
            scratch = ImportContext(path, ctx.limits)
            # (no ``parsed`` map: a silent pass would keep every line it parses in it)
            records = jsonio.iter_records(path, ctx.limits, scratch, encoding=found.encoding,
                                          report=False, data=found.data)
            tally.counted = True
            count_unknown_records(records, tally.seen.append)
        elif (found.error is not None and found.error[0] in ("unknown_format", "invalid_json")
              and layout in ("unknown", "document") and found.detection.reason != "binary file"
              and 0 < found.size <= ctx.limits.max_document_bytes):
            text = jsonio.read_text_bytes(path, found.encoding, found.data)
            tally.counted = True
            count_unknown_text(text.data.decode("utf-8", "replace"), tally.seen.append)
    except (OSError, jsonio.JsonError):  # (the refusal itself says what is wrong)
        return


def _recorded_work(session: Session) -> bool:
    """Whether a session holds a conversation: a user or assistant message or a tool result
    (a session of nothing but unknown records and notes is no recording)."""
    return any(e.kind in ("user", "assistant", "tool_result") for e in session.events)


_READERS = {
    "zip": ("import_zip",
            "recognised as {} (zip archive); .eval zip archives are not supported yet"),
    "parquet": ("import_parquet", "{} cannot read Parquet"),
    "sqlite": ("import_sqlite", "{} cannot read SQLite"),
    "markdown": ("import_text", "{} cannot read a Markdown file"),
    "document": ("import_document", "{} cannot read a single JSON document"),
    "jsonl": ("import_records", "{} cannot read JSON Lines"),
}
"""Each file layout's importer function, and the error when a format module has none (``{}``
is the format id). A format reads only the layouts it is recorded in; a file in another one is
refused with the reason rather than handed to the wrong reader."""


def _items(module: ModuleType, found: Probe, detection: Detection, ctx: ImportContext,
           path: str) -> Iterator[Session | None] | None:
    format_id = detection.format
    limits = ctx.limits
    layout = detection.layout
    if layout not in _READERS or (layout == "document" and not found.has_value):
        ctx.problem("error", "unsupported_variant",
                    f"{format_id} cannot read this file ({detection.layout})")
        return None
    name, missing = _READERS[layout]
    importer = getattr(module, name, None)
    if importer is None:
        ctx.problem("error", "unsupported_variant", missing.format(format_id))
        return None
    if layout in ("zip", "parquet", "sqlite"):
        return importer(path, ctx)
    if layout == "markdown":
        if found.size > limits.max_document_bytes:
            ctx.problem("error", "too_large",
                        f"file is over the {limits.max_document_bytes} byte limit "
                        "(max_document_bytes); not read")
            return None
        text = jsonio.read_text_bytes(path, found.encoding, found.data)
        if text.bad_utf8_line is not None:
            ctx.problem("warning", "encoding",
                        "invalid UTF-8 bytes (first on this line) were replaced with U+FFFD",
                        line=text.bad_utf8_line)
        decoded = text.data.decode("utf-8", "surrogatepass")
        count_text(str(format_id), decoded, ctx.tally)
        return importer(decoded, ctx)
    if layout == "document":
        count_document(str(format_id), found.value, ctx.tally)
        return importer(found.value, ctx)
    number_errors: list[tuple[int, str]] = []  # layout "jsonl"
    records = jsonio.iter_records(
        path, limits, ctx, encoding=found.encoding,
        on_number_error=lambda line, detail: number_errors.append((line, detail)),
        data=found.data, parsed=found.parsed,
        recover=getattr(module, "recover_line", None))
    items: Iterator[Session | None] = importer(
        count_records(str(format_id), records, ctx.tally), ctx)
    if format_id in SERDE_FORMATS:
        return _serde_guard(items, number_errors, ctx)
    return items


class _NumberRule(Exception):
    pass


def _serde_guard(items: Iterator[Session | None], number_errors: list[tuple[int, str]],
                 ctx: ImportContext) -> Iterator[Session | None]:
    """OpenAI chat JSONL: a non-finite or out-of-range number anywhere makes the file
    unreadable (serde_json rejects it, and gglib reads the file as recorded): stop at the first
    such line."""
    for item in items:
        if number_errors:
            break
        yield item
    if number_errors:
        line, detail = number_errors[0]
        ctx.problems[:] = [(c, p) for c, p in ctx.problems
                           if not (p.code == "invalid_json_line" and p.line == line)]
        ctx.problem("error", "invalid_json",
                    f"the file holds a non-finite or out-of-range number ({detail}); "
                    "not imported", line=line)
        raise _NumberRule


def _collect(items: Iterator[Session | None], format_id: str, ctx: ImportContext,
             sessions: list[tuple[int, Session]]) -> int:
    limits = ctx.limits
    truncations: list[tuple[int, int]] = []
    max_token = MAX_EVENTS.set(limits.max_events_per_session)
    sink_token = TRUNCATIONS.set(truncations)
    n = 0
    try:
        while True:
            if n >= limits.max_sessions_per_file:
                extra = sum(1 for _ in _drain(items))
                if extra:
                    ctx.problem("warning", "too_many_sessions",
                                f"the file holds more than {limits.max_sessions_per_file} "
                                f"sessions (max_sessions_per_file); {extra} more were skipped")
                break
            try:
                item = next(items)
            except StopIteration:
                break
            except _NumberRule:
                sessions.clear()
                return n
            except Exception as exc:
                ctx.internal_error(exc, candidate=n)
                n += 1
                break
            if truncations:
                kept, dropped = truncations.pop()
                truncations.clear()
                ctx.problem("warning", "session_truncated",
                            f"the session has more than {kept} events "
                            f"(max_events_per_session); the last {dropped} were skipped",
                            candidate=n)
            if item is None:
                if not any(c == n and p.severity == "error" for c, p in ctx.problems):
                    ctx.problem("error", "session_failed",
                                "this session could not be imported", candidate=n)
            elif not isinstance(item, Session):
                ctx.problem("error", "internal_error",
                            f"importer bug: yielded a {type(item).__name__}, not a Session",
                            candidate=n)
            elif not item.events:
                ctx.problem("warning", "empty_session",
                            "the session holds no message, call or result; it was dropped",
                            candidate=n)
            else:
                sessions.append((n, item))
            n += 1
    finally:
        MAX_EVENTS.reset(max_token)
        TRUNCATIONS.reset(sink_token)
        close = getattr(items, "close", None)
        if close is not None:
            with contextlib.suppress(Exception):
                close()
    if n == 0 and not any(p.severity == "error" or p.code in _COVERED_ELSEWHERE
                          for _, p in ctx.problems):
        ctx.problem("warning", "no_sessions",
                    f"recognised as {format_id}, but the file holds no session")
    return n


def _drain(items: Iterator[Session | None]) -> Iterator[Any]:
    try:
        yield from items
    except Exception:  # pragma: no cover - counting past the limit only
        return


def _finish(path: str, detection: Detection, ctx: ImportContext,
            found: list[tuple[int, Session]], candidates: int,
            limits: ImportLimits, imported: list[Any]) -> FileImport:
    several = candidates > 1
    tally = ctx.tally
    calls_imported = sum(len(session.calls) for _, session in found)
    if tally.counted:
        # Every call seen in the file is imported or set aside with a reason; any other
        # difference is said, naming the first call lost (a replay without it is no replay).
        missing, first, anchor = lost_calls(tally, imported, calls_imported)
        if missing > 0:
            where = f" (first {first})" if first else ""
            seen = len(tally.seen)
            refusal = next((p.code for _, p in ctx.problems if p.code in _REFUSALS), None)
            if refusal is not None and not found:
                # (the file was refused whole: the count says what that cost)
                text = (f"{_calls(missing)} seen in the file {'was' if missing == 1 else 'were'}"
                        f" not imported{where}: the file was refused ({refusal})")
            else:
                text = ("the one tool call seen in the file was" if seen == 1 else
                        f"{missing:,} of the {seen:,} tool calls seen in the file "
                        + ("was" if missing == 1 else "were")) + f" not imported{where}"
            ctx.problem("warning", "calls_not_imported",
                        f"{text}; the replay does not include "
                        + ("it" if missing == 1 else "them"),
                        line=anchor if isinstance(anchor, int) else None,
                        pointer=anchor if isinstance(anchor, str) else None, count=missing)
    stem = os.path.splitext(os.path.basename(path))[0] or os.path.basename(path)

    def source_of(candidate: int | None) -> str:
        if candidate is None or not several:
            return path
        return f"{path}#{candidate}"

    # (ctx.problem wrote the path as every problem's source: most need no copy)
    problems = [p if (where := source_of(c)) == p.source else
                _new_problem(where, p.line, p.pointer, p.severity, p.code, p.message, p.count)
                for c, p in ctx.problems]
    problems = _aggregate(problems, path, limits.max_warnings_per_code)
    by_source: dict[str, list[Problem]] = {}  # (one pass, not one per session)
    for p in problems:
        by_source.setdefault(p.source, []).append(p)
    sessions: list[Session] = []
    for n, session in found:
        source = source_of(n)
        sid = session.id if isinstance(session.id, str) and session.id else (
            f"{stem}#{n}" if several else stem)
        title = session.title or sid
        mine = tuple(by_source.get(source, ()))
        sessions.append(_renamed(session, sid, source, title, mine))
    return FileImport(path, detection, sessions, problems,
                      calls_seen=tally.seen_count, calls_imported=calls_imported,
                      calls_set_aside=tally.reasons())


_new_problem = positional_constructor(Problem)  # Problem(source, line, …, count)


def _calls(n: int) -> str:
    return f"{n:,} tool call{'' if n == 1 else 's'}"


def _renamed(session: Session, sid: str, source: str, title: str,
             problems: tuple[Problem, ...]) -> Session:
    """``dataclasses.replace(session, id=sid, source=source, title=title, problems=problems)``
    that keeps the session's cached views (``turns``, ``calls``: the builder stores them, see
    ``builder.seed_views``), which ``replace`` would drop for the engines to compute again.

    A ``Session`` holds its fields and cached views in its ``__dict__`` (no ``__post_init__``,
    no slots): a copy of it with the four fields changed is the replaced session. A subclass
    of ``Session`` (no importer makes one) takes ``replace`` itself."""
    if type(session) is not Session:
        return dataclasses.replace(session, id=sid, source=source, title=title,
                                   problems=problems)
    renamed = object.__new__(Session)
    fields = renamed.__dict__
    fields.update(session.__dict__)
    fields["id"] = sid
    fields["source"] = source
    fields["title"] = title
    fields["problems"] = problems
    return renamed


def _aggregate(problems: list[Problem], path: str, cap: int) -> list[Problem]:
    """Infos: one per (source, code) with summed counts. Warnings: at most ``cap`` per code
    and file, then one "… and N more"."""
    out: list[Problem] = []
    info_at: dict[tuple[str, str], int] = {}
    warnings: dict[str, int] = {}
    hidden: dict[str, int] = {}
    for p in problems:
        if p.severity == "info":
            key = (p.source, p.code)
            if key in info_at:
                first = out[info_at[key]]
                out[info_at[key]] = dataclasses.replace(first, count=first.count + p.count)
                continue
            info_at[key] = len(out)
            out.append(p)
        elif p.severity == "warning":
            seen = warnings.get(p.code, 0)
            warnings[p.code] = seen + 1
            if seen < cap:
                out.append(p)
            else:
                hidden[p.code] = hidden.get(p.code, 0) + p.count
        else:
            out.append(p)
    for code, more in hidden.items():
        out.append(Problem(path, None, None, "warning", code,
                           f"… and {more:,} more {code} {'warning' if more == 1 else 'warnings'} in "
                           "this file", more))
    return out


# ------------------------------------------------------------------------------ paths


_SNIFFED: dict[tuple[str, int, int], bool] = {}
"""Content checks of :data:`SNIFF_EXTENSIONS` files by ``(path, size, mtime)``: a folder is
scanned again whenever the dashboard looks for changes, and a log that has not changed need
not be read again."""
_SNIFFED_MAX = 100_000


def _is_recording(path: str) -> bool:
    """Whether detection recognises ``path``'s content as a format (the file's head only for
    text; the tables of an SQLite database)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    key = (path, st.st_size, st.st_mtime_ns)
    known = _SNIFFED.get(key)
    if known is None:
        known = st.st_size > 0 and detect_format(path).format is not None
        if len(_SNIFFED) >= _SNIFFED_MAX:
            _SNIFFED.clear()
        _SNIFFED[key] = known
    return known


def _scan(root: str) -> tuple[list[str], int]:
    """Candidate files under ``root`` (sorted, hidden skipped, directory symlinks not
    followed) and the number of ignored files: every file of a :data:`SCAN_EXTENSIONS`
    extension, and those of a :data:`SNIFF_EXTENSIONS` one whose content is detected as a
    format."""
    found: list[str] = []
    ignored = 0
    seen = 0
    for folder, dirs, files in os.walk(root, followlinks=False, onerror=lambda e: None):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                         and not os.path.islink(os.path.join(folder, d)))
        for name in sorted(files):
            seen += 1
            if seen % background.GIVE_WAY_EVERY == 0:  # (a host rescanning a large folder in
                background.give_way()  # the background lets a person's request run meanwhile)
            if name.startswith("."):
                continue
            path = os.path.join(folder, name)
            extension = os.path.splitext(name)[1].lower()
            if extension in SCAN_EXTENSIONS or (
                    extension in SNIFF_EXTENSIONS and _is_recording(path)):
                found.append(path)
            else:
                ignored += 1
    return found, ignored


def expand_paths(paths: Iterable[str | os.PathLike[str]]) -> tuple[list[tuple[str, bool]], int]:
    """Files to import, ``(path, scanned)`` in sorted path order, and the number of files a
    folder scan ignored (by extension or, for a ``.log``-like name, by content; hidden files
    are skipped). A path named explicitly is
    always imported (a missing one gives ``unreadable``)."""
    targets: dict[str, bool] = {}  # path -> found by a folder scan
    ignored = 0
    for raw in paths:
        path = os.fspath(raw)
        if os.path.isdir(path):
            files, skipped = _scan(path)
            ignored += skipped
            for f in files:
                targets.setdefault(f, True)
        else:
            targets[path] = False
    return sorted(targets.items()), ignored


def iter_file_imports(paths: Iterable[str | os.PathLike[str]],
                      limits: ImportLimits | None = None,
                      format: str | None = None) -> Iterator[FileImport]:
    """:func:`load_paths` one file at a time (for streaming callers such as the CLI).

    ``format`` forces a format id for every file named or found."""
    limits = limits or ImportLimits()
    targets, _ignored = expand_paths(paths)
    for path, scanned in targets:
        yield load_file(path, limits, format, scanned=scanned)


def load_paths(paths: Iterable[str | os.PathLike[str]],
               limits: ImportLimits | None = None,
               format: str | None = None) -> ImportReport:
    """Files and folders (recursive): one :class:`FileImport` per file, in sorted path
    order."""
    limits = limits or ImportLimits()
    targets, ignored = expand_paths(paths)
    report = ImportReport(ignored_files=ignored)
    for path, scanned in targets:
        report.files.append(load_file(path, limits, format, scanned=scanned))
    return report
