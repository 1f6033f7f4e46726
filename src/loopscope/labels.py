"""Labels: which recorded sessions are real loops and which are good work.

Labels live in a sidecar file next to the sessions, ``labels.csv``::

    source,label,loop_from_turn_index
    write_loop_refused_at_third_batch.json,loop,2
    polling_rescued_by_changing_output.json,ok,
    several_sessions.jsonl#1,loop,

- ``source`` names a session the way the replay does (``file`` or ``file#n`` for a file that
  holds several sessions), but **relative to the folder of the labels file**, with ``/``
  between folders, so the folder can be moved or replayed from anywhere;
- ``label`` is ``loop`` (a real loop) or ``ok`` (good work that must not be refused);
- ``loop_from_turn_index`` is the **0-based index** of the assistant turn where the loop starts
  (the first turn that only repeats earlier work), empty when unknown: ``2`` is the turn that
  ``loopscope replay`` and the dashboard show as *turn 3* (they count from 1, and so do
  ``loopscope label --from-turn`` and the dashboard's label box, which convert). It is the
  same convention as ``--json``'s ``turn``. The experiments count a refusal at or after it as
  a caught loop.

Files written before the column had that name call it ``from_turn`` (with the same 0-based
index in it): they are read as they are, and the next save writes the column under its new
name, keeping every other column and row. A file with both columns is ambiguous: it is read
from ``loop_from_turn_index`` with a warning naming the file and line, ``from_turn`` is kept
as it is, and loopscope does not save into the file until one of the two columns is deleted.

Reading never fails on a bad row: every row that cannot be used becomes a
:class:`~loopscope.model.Problem` naming the file and line, and the other rows are kept.
Other columns (a ``note``, a ``reviewer``) are not read, and are kept when loopscope saves.

Writing is atomic (a temporary file in the same folder, fsync, ``os.replace``), so a crash
leaves either the old file or the new one, never half of one, and a change is a read-modify-
write under an OS file lock (``.labels.csv.lock`` beside the file), so two processes that label
at once (two dashboards, a script running ``loopscope label``) never lose each other's labels.
A ``labels.csv`` that is a symlink out of its folder is neither read nor written.

Cells are written so that a spreadsheet does not run them as formulas: a cell starting with
``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a ``'`` in front (see
:mod:`loopscope.csvsafe`), and reading removes exactly that quote, so a label round-trips
unchanged: a session file really named ``=x.json`` is stored as ``'=x.json`` and read back as
``=x.json``.

:func:`labels_for_sessions` finds the sidecars for the paths a replay was given and re-keys
them by the sources the replay prints, so ``labels.get(session.source)`` just works.

This module is pure: it imports nothing from the UI.
"""

from __future__ import annotations

import csv
import io
import json
import os
import posixpath
import re
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, cast

import filelock

from loopscope import csvsafe
from loopscope.model import Problem, Severity, escape_for_display
from loopscope.words import plural

__all__ = [
    "HEADER",
    "LABELS_FILE_NAME",
    "LABEL_VALUES",
    "LEGACY_TURN_COLUMN",
    "LOCK_TIMEOUT_S",
    "TURN_COLUMN",
    "Label",
    "LabelSet",
    "LabelValue",
    "LabelsLockTimeout",
    "LoadedLabels",
    "clear_label",
    "default_label_file",
    "dump_labels",
    "find_label_file",
    "label_file_for",
    "labels_for_sessions",
    "labels_from_json",
    "labels_to_json",
    "load_labels",
    "parse_labels",
    "relative_source",
    "save_labels",
    "set_label",
    "split_source",
    "update_label_file",
    "update_label_file_many",
]

LABELS_FILE_NAME = "labels.csv"
"""The sidecar's file name; one per folder of sessions."""
TURN_COLUMN = "loop_from_turn_index"
"""The column (and JSON key) of a loop's first turn: a 0-based index, as ``--json``'s ``turn``."""
LEGACY_TURN_COLUMN = "from_turn"
"""What :data:`TURN_COLUMN` was called before: read with the same meaning, renamed on save."""
HEADER: tuple[str, str, str] = ("source", "label", TURN_COLUMN)
NOTE_COLUMNS = ("note",)
"""Columns loopscope writes but does not read (``loopscope label --note``): kept silently."""
LabelValue = Literal["loop", "ok"]
LABEL_VALUES: tuple[LabelValue, LabelValue] = ("loop", "ok")

MAX_LABELS_FILE_BYTES = 64 * 1024 * 1024
"""A labels file larger than this is not read (it cannot be a real sidecar)."""
MAX_PROBLEMS_PER_CODE = 20
"""Problems listed per code and file before the rest are summarised in one line."""
_MAX_FROM_TURN_DIGITS = 9

_FROM_TURN = re.compile(rf"[0-9]{{1,{_MAX_FROM_TURN_DIGITS}}}")
_CANDIDATE_SUFFIX = re.compile(r"#([0-9]+)$")
_LOSSY_CODES = frozenset({"bad_label_row", "encoding"})
"""Problems whose rows a rewrite would lose (see :func:`update_label_file`)."""
_BOTH_TURN_COLUMNS = "both_turn_columns"
_UNSAVED_CODES = _LOSSY_CODES | {_BOTH_TURN_COLUMNS}
"""Problems that stop a save: lost rows, or a file whose loop starts are ambiguous."""
_NUL_SENTINEL = "\uffff"  # a noncharacter: stands in for NUL bytes so the csv module can read on


# --------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class Label:
    """One session's label."""

    source: str
    """The session as the replay names it (``path`` or ``path#n``). In a labels file it is
    relative to the file's folder; in the set :func:`labels_for_sessions` returns it is the
    replay's own ``source``."""
    label: LabelValue
    """``"loop"``: a real loop. ``"ok"``: good work that a guard should let through."""
    from_turn: int | None = None
    """The 0-based index of the assistant turn where the loop starts (the file's
    ``loop_from_turn_index``; a person reads it as turn ``from_turn + 1``); ``None`` when
    unknown (and always for ``ok``)."""

    def __post_init__(self) -> None:
        if not isinstance(self.source, str) or not self.source:
            raise ValueError("a label needs a non-empty source")
        if self.label not in LABEL_VALUES:
            raise ValueError(f"label must be 'loop' or 'ok', not {self.label!r}")
        turn = self.from_turn
        if turn is not None and (isinstance(turn, bool) or not isinstance(turn, int) or turn < 0):
            raise ValueError(f"from_turn must be a non-negative integer or None, not {turn!r}")
        if turn is not None and self.label == "ok":
            raise ValueError("from_turn only applies to loops")

    @classmethod
    def loop(cls, source: str, from_turn: int | None = None) -> Label:
        """A real loop, starting at ``from_turn`` when known."""
        return cls(source, "loop", from_turn)

    @classmethod
    def ok(cls, source: str) -> Label:
        """Good work."""
        return cls(source, "ok", None)

    def with_source(self, source: str) -> Label:
        return Label(source, self.label, self.from_turn)

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "label": self.label, TURN_COLUMN: self.from_turn}


class LabelSet(Mapping[str, Label]):
    """An immutable mapping ``source → Label``.

    Changes return new sets (:meth:`with_label`, :meth:`without`), so a set can be shared
    between the dashboard's reruns and the experiments without copying.
    """

    __slots__ = ("_by_source", "_normalised")

    def __init__(self, labels: Iterable[Label] = ()) -> None:
        by_source: dict[str, Label] = {}
        for label in labels:
            if not isinstance(label, Label):
                raise TypeError(f"LabelSet holds Label values, not {type(label).__name__}")
            by_source[label.source] = label  # a later label for the same source wins
        self._by_source = by_source
        self._normalised: dict[str, Label] | None = None

    def __getitem__(self, source: str) -> Label:
        return self._by_source[source]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_source)

    def __len__(self) -> int:
        return len(self._by_source)

    def __repr__(self) -> str:
        return f"LabelSet({list(self._by_source.values())!r})"

    def with_label(self, source: str, label: LabelValue, from_turn: int | None = None) -> LabelSet:
        """A copy with ``source`` labelled (replacing any earlier label)."""
        return LabelSet([*self._by_source.values(), Label(source, label, from_turn)])

    def without(self, source: str) -> LabelSet:
        """A copy without ``source``'s label (unchanged when it had none)."""
        return LabelSet(v for k, v in self._by_source.items() if k != source)

    def lookup(self, source: str) -> Label | None:
        """The label of ``source``, also when it is spelled differently (``./a/x.json`` for
        ``a/x.json``, ``a//x.json``): exact match first, then on the normalised path."""
        found = self._by_source.get(source)
        if found is not None:
            return found
        if self._normalised is None:
            self._normalised = {_normalised_key(k): v for k, v in self._by_source.items()}
        return self._normalised.get(_normalised_key(source))

    def counts(self) -> dict[str, int]:
        """``{"loop": n, "ok": m}``."""
        out: dict[str, int] = dict.fromkeys(LABEL_VALUES, 0)
        for label in self._by_source.values():
            out[label.label] += 1
        return out

    def in_order(self) -> list[Label]:
        """The labels sorted by source, numbering ``#2`` before ``#10`` (the file order)."""
        return sorted(self._by_source.values(), key=lambda lab: _natural_key(lab.source))


def set_label(
    labels: Mapping[str, Label], source: str, label: LabelValue, from_turn: int | None = None
) -> LabelSet:
    """A new set with ``source`` labelled ``label`` (``from_turn`` only for loops)."""
    return LabelSet([*labels.values(), Label(source, label, from_turn)])


def clear_label(labels: Mapping[str, Label], source: str) -> LabelSet:
    """A new set without a label for ``source``."""
    return LabelSet(v for k, v in labels.items() if k != source)


class LoadedLabels(NamedTuple):
    """What reading labels gives: the labels that could be used, and why the others could not.

    It unpacks as ``labels, problems = load_labels(path)``.
    """

    labels: LabelSet
    problems: list[Problem]


# --------------------------------------------------------------------------- reading


def load_labels(path: str | os.PathLike[str]) -> LoadedLabels:
    """Read a labels file. Sources stay as written: relative to the file's folder.

    Bad rows never stop the reading; each is a problem with the file and line. A ``path`` that
    is a symlink to a file outside its folder is not read (an ``unsafe_link`` error). Raises
    ``OSError`` only when the file itself cannot be read (missing, a folder, no permission).
    """
    name = os.fspath(path)
    try:
        _target(name)
    except ValueError as exc:
        return LoadedLabels(LabelSet(), [_problem(name, None, "error", "unsafe_link",
                                                  f"{exc}; not read")])
    size = os.path.getsize(name)
    if size > MAX_LABELS_FILE_BYTES:
        return LoadedLabels(LabelSet(), [_problem(
            name, None, "error", "too_large",
            f"labels file is {size} bytes, over the {MAX_LABELS_FILE_BYTES}-byte limit; not read")])
    with open(name, "rb") as f:
        data = f.read(MAX_LABELS_FILE_BYTES + 1)
    return parse_labels(data, name)


def parse_labels(data: bytes | str, name: str = LABELS_FILE_NAME) -> LoadedLabels:
    """Read labels from the bytes (or text) of a labels file; ``name`` is used in problems.

    Used for uploads as well as files on disk.
    """
    table = _read_table(data, name)
    return LoadedLabels(table.labels, table.problems)


@dataclass(frozen=True, slots=True)
class _Table:
    """A labels file as read for a rewrite: the labels, and the columns loopscope does not
    read (a ``note``, a ``reviewer``) with each labelled row's cells in them, so that saving
    one label keeps everything else the user wrote."""

    labels: LabelSet
    problems: list[Problem]
    layout: tuple[str, ...] = HEADER
    """The header as it will be written: the known columns by their names, other columns as
    the user spelled them, in the file's order."""
    extras: Mapping[str, Mapping[int, str]] = field(default_factory=dict)
    """source → {position in ``layout`` → cell} for the columns loopscope does not read."""


def _read_table(data: bytes | str, name: str) -> _Table:
    sink = _Problems(name)
    text = _decode(data, sink)
    if not text.strip():
        sink.add(None, "warning", "empty_labels", "labels file is empty; no labels read")
        return _Table(LabelSet(), sink.done())
    if "\x00" in text:
        text = text.replace("\x00", _NUL_SENTINEL)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header: _Header | None = None
    seen: dict[str, int] = {}
    labels: list[Label] = []
    extras: dict[str, dict[int, str]] = {}
    row_start = 1  # physical line where the current record starts
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            sink.add(row_start, "warning", "bad_label_row", f"row is not valid CSV ({exc}); skipped")
            row_start = reader.line_num + 1
            continue
        line, row_start = row_start, reader.line_num + 1
        if not any(cell.strip() for cell in row):
            continue  # blank line
        row = [csvsafe.restore(cell) for cell in row]
        if header is None:
            header = _read_header(row, line, sink)
            if header is None:
                return _Table(LabelSet(), sink.done())
            continue
        label = _read_row(row, header, line, sink)
        if label is None:
            continue
        if label.source in seen:
            sink.add(line, "warning", "duplicate_label",
                     f"{_quote(label.source)} is already labelled on line {seen[label.source]}; "
                     "this later row wins")
        seen[label.source] = line
        labels.append(label)
        kept = {at: row[i].replace(_NUL_SENTINEL, "\x00")
                for at, i in header.extra_cells if i < len(row) and row[i]}
        if kept:
            extras[label.source] = kept
        else:
            extras.pop(label.source, None)
    if header is None:
        sink.add(None, "error", "bad_label_header",
                 f"labels file has no header; the first line must be {','.join(HEADER)}")
        return _Table(LabelSet(labels), sink.done())
    return _Table(LabelSet(labels), sink.done(), header.layout, extras)


def _decode(data: bytes | str, sink: _Problems) -> str:
    if isinstance(data, str):
        return data.removeprefix("\ufeff")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        sink.add(line, "warning", "encoding",
                 "labels file is not valid UTF-8; invalid bytes were replaced with U+FFFD "
                 "(those sources will not match any session)")
        return data.decode("utf-8-sig", errors="replace")


class _Header(NamedTuple):
    columns: dict[str, int]
    """Known column → its index in a row."""
    layout: tuple[str, ...]
    """Every column to write back, known ones by name, in the file's order."""
    extra_cells: list[tuple[int, int]]
    """(position in ``layout``, index in a row) of each column loopscope does not read."""
    turn_name: str = TURN_COLUMN
    """The turn column as the file names it (:data:`LEGACY_TURN_COLUMN` in an old file)."""


def _read_header(row: list[str], line: int, sink: _Problems) -> _Header | None:
    names = [cell.strip().lower() for cell in row]
    columns: dict[str, int] = {}
    layout: list[str] = []
    extra_cells: list[tuple[int, int]] = []
    both = TURN_COLUMN in names and LEGACY_TURN_COLUMN in names
    for i, n in enumerate(names):
        if n == LEGACY_TURN_COLUMN and not both:
            n = TURN_COLUMN  # the old name: same 0-based index, written back under the new name
        if n in HEADER and n not in columns:
            columns[n] = i
            layout.append(n)
        elif row[i].strip():
            extra_cells.append((len(layout), i))
            layout.append(row[i].strip())
    if "source" not in columns or "label" not in columns:
        sink.add(line, "error", "bad_label_header",
                 f"the first line must be the header {','.join(HEADER)} "
                 f"(found {_quote(','.join(row))}); no labels read")
        return None
    if both:
        sink.add(line, "warning", _BOTH_TURN_COLUMNS,
                 f"the header has both {LEGACY_TURN_COLUMN} (the old name) and {TURN_COLUMN}; "
                 f"loopscope reads {TURN_COLUMN} (the 0-based index of the turn a loop starts "
                 f"at), keeps {LEGACY_TURN_COLUMN} as it is, and saves no label into this file "
                 "until one of the two columns is deleted")
    for _, i in extra_cells:
        if row[i].strip().lower() in NOTE_COLUMNS:
            continue  # written by ``loopscope label --note``
        if both and row[i].strip().lower() == LEGACY_TURN_COLUMN:
            continue  # said above
        sink.add(line, "info", "unknown_label_column",
                 f"column {_quote(row[i])} is not one of {', '.join(HEADER)}; loopscope does "
                 "not read it and keeps it when it saves")
    layout.extend(n for n in HEADER if n not in columns)  # the turn column, when the file had none
    turn_at = columns.get(TURN_COLUMN)
    return _Header(columns, tuple(layout), extra_cells,
                   names[turn_at] if turn_at is not None else TURN_COLUMN)


def _read_row(row: list[str], header: _Header, line: int, sink: _Problems) -> Label | None:
    columns = header.columns

    def cell(name: str) -> str:
        i = columns.get(name)
        return row[i] if i is not None and i < len(row) else ""

    source_error = _check_source(cell("source"))
    if source_error is not None:
        sink.add(line, "warning", "bad_label_row", f"{source_error}; row skipped")
        return None
    source = _clean_source(cell("source"))
    value = cell("label").strip().lower()
    if value not in LABEL_VALUES:
        sink.add(line, "warning", "bad_label_row",
                 f"label {_quote(cell('label'))} for {_quote(source)} is not 'loop' or 'ok'; "
                 "row skipped")
        return None
    turn_text = cell(TURN_COLUMN).strip()
    from_turn: int | None = None
    if turn_text:
        column = header.turn_name
        if not _FROM_TURN.fullmatch(turn_text):
            sink.add(line, "warning", "bad_label_row",
                     f"{column} {_quote(turn_text)} for {_quote(source)} is not a whole number "
                     f"0..{10 ** _MAX_FROM_TURN_DIGITS - 1} (the 0-based index of the turn the "
                     "loop starts at); row skipped")
            return None
        from_turn = int(turn_text)
        if value == "ok":
            sink.add(line, "info", "from_turn_ignored",
                     f"{column} is only meaningful for loops; ignored for {_quote(source)}")
            from_turn = None
    return Label(source, cast(LabelValue, value), from_turn)


# --------------------------------------------------------------------------- writing


def dump_labels(labels: Mapping[str, Label]) -> str:
    """The CSV text of ``labels``: the header, then one row per label sorted by source.

    Cells a spreadsheet would run as a formula are quoted (:mod:`loopscope.csvsafe`); reading
    the text back gives the same labels."""
    return _dump(labels, HEADER, {})


def _dump(labels: Mapping[str, Label], layout: Sequence[str],
          extras: Mapping[str, Mapping[int, str]]) -> str:
    first = {column: layout.index(column) for column in HEADER if column in layout}
    buf = io.StringIO()
    writer = csvsafe.writer(buf, lineterminator="\n")
    writer.writerow(layout)
    for label in LabelSet(labels.values()).in_order():
        error = _check_source(label.source)
        if error is not None:
            raise ValueError(f"cannot save label: {error}")
        known = {"source": label.source, "label": label.label,
                 TURN_COLUMN: "" if label.from_turn is None else str(label.from_turn)}
        cells = extras.get(label.source, {})
        writer.writerow([known[column] if first.get(column) == i else cells.get(i, "")
                         for i, column in enumerate(layout)])
    return buf.getvalue()


LOCK_TIMEOUT_S = 30.0
"""How long a save waits for another process (or thread) saving the same labels file."""
_STALE_PREFIX_OLD = ".labels-"
"""Temporary files of earlier versions (``.labels-XXXX.csv.tmp``): removed once an hour old."""
_STALE_AGE_S = 3600.0


class LabelsLockTimeout(TimeoutError):
    """Another writer held the labels file's lock for longer than :data:`LOCK_TIMEOUT_S`."""


def _target(path: str | os.PathLike[str]) -> str:
    """The file a save of ``path`` writes: ``path`` itself, or where its symlink leads when that
    stays inside ``path``'s folder. ``ValueError`` for a link that leaves the folder: a
    ``labels.csv`` planted as a link must not make loopscope replace a file elsewhere."""
    name = os.path.abspath(os.fspath(path))
    target = os.path.realpath(name)
    folder = os.path.realpath(os.path.dirname(name))
    if not _is_within(target, folder):
        raise ValueError(
            f"{escape_for_display(name)} is a symbolic link to {escape_for_display(target)}, "
            "outside its folder; loopscope does not follow it (replace the link with the file, "
            "or name the file itself with --labels)")
    return target


def _lock_path(target: str) -> str:
    folder, base = os.path.split(target)
    return os.path.join(folder, f".{base}.lock")


@contextmanager
def _locked(target: str) -> Iterator[None]:
    """Hold the OS lock of ``target`` (a ``.<name>.lock`` file beside it) for a read-modify-
    write: other loopscope processes (a second dashboard, ``loopscope label`` in a script)
    wait for it, so no save overwrites another's label. Stale temporary files of writers that
    died mid-save are removed while the lock is held, when nobody else can be writing one."""
    lock = filelock.FileLock(_lock_path(target), timeout=LOCK_TIMEOUT_S)
    try:
        lock.acquire()
    except filelock.Timeout as exc:
        raise LabelsLockTimeout(
            f"{escape_for_display(target)}: another process has been saving labels for over "
            f"{LOCK_TIMEOUT_S:.0f} s (lock file {escape_for_display(_lock_path(target))}); "
            "nothing was changed, try again") from exc
    try:
        _remove_stale_temporaries(target)
        yield
    finally:
        lock.release()


def _temp_prefix(target: str) -> str:
    return f".{os.path.basename(target)}."


def _remove_stale_temporaries(target: str) -> None:
    folder = os.path.dirname(target)
    prefix = _temp_prefix(target)
    try:
        names = os.listdir(folder)
    except OSError:
        return
    now = time.time()
    for entry in names:
        if not entry.endswith(".tmp"):
            continue
        path = os.path.join(folder, entry)
        stale = False
        if entry.startswith(prefix):
            stale = True  # ours, and the lock is held: its writer is gone
        elif entry.startswith(_STALE_PREFIX_OLD) and entry.endswith(".csv.tmp"):
            with suppress(OSError):
                stale = now - os.lstat(path).st_mtime > _STALE_AGE_S
        if stale and not os.path.islink(path):
            with suppress(OSError):
                os.unlink(path)


def save_labels(path: str | os.PathLike[str], labels: Mapping[str, Label]) -> None:
    """Write ``labels`` (sources relative to ``path``'s folder) to ``path``, atomically.

    Done under the file's OS lock (see :func:`update_label_file`). Columns of the existing file
    that loopscope does not read (a ``note``) are kept for the sources still labelled. The text
    goes to a hidden temporary file in the same folder, is flushed and fsynced, and then
    replaces ``path`` in one ``os.replace``; the folder is fsynced afterwards. If anything
    fails the temporary file is removed, the old file is left as it was, and the error is
    raised. A ``path`` that is a symlink is written through to its target when that is inside
    ``path``'s folder, else ``ValueError``.
    """
    dump_labels(labels)  # validate everything before touching the disk
    target = _target(path)
    with _locked(target):
        table = _current_table(target)
        layout, extras = (HEADER, {}) if table is None else (table.layout, table.extras)
        _write_atomic(target, _dump(labels, layout, extras))


def _current_table(target: str) -> _Table | None:
    """The file's table when it exists and can be read whole, else ``None``."""
    try:
        size = os.path.getsize(target)
        if size > MAX_LABELS_FILE_BYTES:
            return None
        with open(target, "rb") as f:
            return _read_table(f.read(MAX_LABELS_FILE_BYTES + 1), target)
    except OSError:
        return None


def _write_atomic(target: str, text: str) -> None:
    folder = os.path.dirname(target) or "."
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(target), suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        try:
            mode = os.stat(target).st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o644
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_folder(folder)


def _fsync_folder(folder: str) -> None:
    """Make the rename itself durable (POSIX); a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        with suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def update_label_file(
    path: str | os.PathLike[str],
    source: str,
    label: LabelValue | None,
    from_turn: int | None = None,
    *,
    columns: Mapping[str, str] | None = None,
) -> LoadedLabels:
    """Set (or, with ``label=None``, clear) one label in the file at ``path`` and save it.

    ``source`` is relative to the file's folder. A missing file is created. ``columns`` sets
    cells of other columns on that row (``{"note": "…"}``), adding the column when the file
    has none.

    The read, the change and the write happen under the file's OS lock (``filelock``, a
    ``.labels.csv.lock`` file beside it), so two processes labelling at once both keep their
    labels; the write stays atomic. Columns loopscope does not read are kept. When the file
    has rows it cannot use (or cannot be read as labels at all), nothing is written and
    ``ValueError`` says which problems to fix first: rewriting would silently drop those rows.
    ``ValueError`` too for a ``path`` that is a symlink out of its folder;
    :class:`LabelsLockTimeout` (an ``OSError``) when another writer holds the lock too long.
    """
    return update_label_file_many(path, [(source, label, from_turn)], columns=columns)


def update_label_file_many(
    path: str | os.PathLike[str],
    changes: Sequence[tuple[str, LabelValue | None, int | None]],
    *,
    columns: Mapping[str, str] | None = None,
) -> LoadedLabels:
    """:func:`update_label_file` for several ``(source, label, from_turn)`` changes at once:
    one locked read-modify-write, one rewrite. ``columns`` applies to every changed row.
    Every change is validated before the file is touched."""
    for column in columns or {}:
        if column.strip().lower() in (*HEADER, LEGACY_TURN_COLUMN) or not column.strip():
            raise ValueError(f"{_quote(column)} cannot be set as an extra column")
    for source, label, from_turn in changes:  # ValueError before touching anything
        if label is not None:
            error = _check_source(source)
            if error is not None:
                raise ValueError(f"cannot save label: {error}")
            Label(source, label, from_turn)
    target = _target(path)
    with _locked(target):
        if os.path.exists(target):
            current = _current_table(target)
            if current is None:
                current_labels, problems = load_labels(target)  # raises or says why
                current = _Table(current_labels, problems)
        else:
            current = _Table(LabelSet(), [])
        problems = current.problems
        blocking = [p for p in problems if p.severity == "error" or p.code in _UNSAVED_CODES]
        if blocking:
            raise ValueError(
                "not saving: rewriting the labels file would drop rows it cannot read; fix "
                "these first: " + "; ".join(p.text() for p in blocking[:3])
            )
        updated: LabelSet = current.labels
        layout = list(current.layout)
        extras = {k: dict(v) for k, v in current.extras.items()}
        for source, label, from_turn in changes:
            key = _clean_source(source) if _check_source(source) is None else source
            if label is None:
                updated = clear_label(updated, key)
                extras.pop(key, None)
                continue
            updated = set_label(updated, key, label, from_turn)
            for column, value in (columns or {}).items():
                name = column.strip()
                if name not in layout:
                    layout.append(name)
                extras.setdefault(key, {})[layout.index(name)] = value
        _write_atomic(target, _dump(updated, layout, extras))
    return LoadedLabels(updated, problems)


# --------------------------------------------------------------------------- JSON


def labels_to_json(labels: Mapping[str, Label]) -> str:
    """``{"labels": [{"source", "label", "loop_from_turn_index"}, …]}``, sorted by source
    (``loop_from_turn_index``: the 0-based index, as in the CSV)."""
    rows = [lab.to_json() for lab in LabelSet(labels.values()).in_order()]
    return json.dumps({"labels": rows}, ensure_ascii=False, indent=2) + "\n"


def labels_from_json(data: bytes | str, name: str = "labels.json") -> LoadedLabels:
    """Read the output of :func:`labels_to_json` (or a bare list of its objects).

    Like the CSV reader, bad entries are problems (with a JSON Pointer), never errors. An
    entry may name its loop start ``from_turn`` (the key's old name, the same 0-based index).
    """
    sink = _Problems(name)
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as exc:
        sink.add(None, "error", "invalid_json", f"labels JSON does not parse ({exc}); no labels read")
        return LoadedLabels(LabelSet(), sink.done())
    rows = value.get("labels") if isinstance(value, dict) else value
    prefix = "/labels" if isinstance(value, dict) else ""
    if not isinstance(rows, list):
        sink.add(None, "error", "bad_label_header",
                 'expected {"labels": [...]} or a list of labels; no labels read')
        return LoadedLabels(LabelSet(), sink.done())
    labels: list[Label] = []
    seen: dict[str, str] = {}
    for i, row in enumerate(rows):
        pointer = f"{prefix}/{i}"
        if not isinstance(row, dict):
            sink.add(None, "warning", "bad_label_row", "entry is not an object; skipped", pointer)
            continue
        source, value_ = row.get("source"), row.get("label")
        key = TURN_COLUMN if TURN_COLUMN in row else LEGACY_TURN_COLUMN
        turn = row.get(key)
        error = _check_source(source) if isinstance(source, str) else "source must be a string"
        if error is not None:
            sink.add(None, "warning", "bad_label_row", f"{error}; skipped", pointer)
            continue
        source = _clean_source(cast(str, source))
        if value_ not in LABEL_VALUES:
            sink.add(None, "warning", "bad_label_row",
                     f"label {_quote(str(value_))} is not 'loop' or 'ok'; skipped", pointer)
            continue
        if TURN_COLUMN in row and LEGACY_TURN_COLUMN in row:
            sink.add(None, "warning", "bad_label_row",
                     f"entry has both {LEGACY_TURN_COLUMN} (the old name) and {TURN_COLUMN}; "
                     "keep one; skipped", pointer)
            continue
        if turn is not None and (isinstance(turn, bool) or not isinstance(turn, int) or turn < 0):
            sink.add(None, "warning", "bad_label_row",
                     f"{key} {_quote(json.dumps(turn))} is not a non-negative integer (the "
                     "0-based index of the turn the loop starts at); skipped", pointer)
            continue
        if value_ == "ok":
            turn = None
        if source in seen:
            sink.add(None, "warning", "duplicate_label",
                     f"{_quote(source)} is already labelled at {seen[source]}; this later entry wins",
                     pointer)
        seen[source] = pointer
        labels.append(Label(source, cast(LabelValue, value_), turn))
    return LoadedLabels(LabelSet(labels), sink.done())


# --------------------------------------------------------------------------- sessions


def find_label_file(folder: str | os.PathLike[str]) -> str | None:
    """``folder/labels.csv`` when it exists (for a file, the labels file of its folder)."""
    name = os.fspath(folder)
    if not os.path.isdir(name):
        name = os.path.dirname(name) or "."
    candidate = os.path.join(name, LABELS_FILE_NAME)
    return candidate if os.path.isfile(candidate) else None


def labels_for_sessions(
    paths: Sequence[str | os.PathLike[str]],
    labels_file: str | os.PathLike[str] | None = None,
) -> LoadedLabels:
    """The labels of the sessions reached through ``paths``, keyed by the replay's ``source``.

    ``paths`` are the PATH arguments of a replay. Without ``labels_file``, labels files are
    found next to the sessions: for a folder, ``labels.csv`` in the folder itself and in every
    folder below it that the replay scans (hidden folders and folder symlinks are skipped, as
    the loader does); for a file, ``labels.csv`` in the file's folder. When several labels
    files cover one session, the nearest one wins. ``labels_file`` replaces that search with
    one given file (its sources are still relative to its own folder); ``OSError`` is raised
    only when that explicit file cannot be read.

    Keys are spelled exactly as the loader spells sources (the PATH argument joined with the
    path inside it), so ``labels.get(session.source)`` finds them. Rows that name no session
    under ``paths`` are left out.
    """
    spelled = [os.fspath(p) for p in paths]
    files: list[str] = []
    if labels_file is not None:
        files.append(os.fspath(labels_file))
    else:
        for p in spelled:
            files.extend(_label_files_for(p))
    # Nearest wins: apply shallow folders first so that deeper files override them.
    ordered = sorted(dict.fromkeys(files), key=lambda f: _depth(os.path.dirname(os.path.abspath(f))))
    out: dict[str, Label] = {}
    problems: list[Problem] = []
    for f in ordered:
        if labels_file is not None:
            loaded, found_problems = load_labels(f)
        else:
            try:
                loaded, found_problems = load_labels(f)
            except OSError as exc:
                problems.append(_problem(f, None, "error", "unreadable",
                                         f"labels file cannot be read ({exc.strerror or exc}); ignored"))
                continue
        problems.extend(found_problems)
        base = os.path.dirname(os.path.abspath(f))
        for label in loaded.values():
            for key in _replay_sources(base, label.source, spelled):
                out[key] = label.with_source(key)
    return LoadedLabels(LabelSet(out.values()), problems)


def label_file_for(source: str, root: str | os.PathLike[str]) -> tuple[str, str]:
    """Where a label for the session ``source`` (as the replay names it) should be saved.

    ``root`` is the PATH argument the session was reached through. Returns the labels file
    (the nearest existing ``labels.csv`` between the session's folder and ``root``, else the
    one in ``root``'s folder) and ``source`` relative to that file's folder.
    """
    path, _ = _split_candidate(source)
    root_name = os.fspath(root)
    top = root_name if os.path.isdir(root_name) else (os.path.dirname(root_name) or ".")
    top_abs = os.path.abspath(top)
    folder = os.path.dirname(os.path.abspath(path))
    chosen = os.path.join(top, LABELS_FILE_NAME)
    while _is_within(folder, top_abs):
        candidate = os.path.join(folder, LABELS_FILE_NAME)
        if os.path.isfile(candidate):
            rel_folder = os.path.relpath(folder, top_abs)
            chosen = os.path.normpath(os.path.join(top, rel_folder, LABELS_FILE_NAME))
            break
        if folder == top_abs:
            break
        folder = os.path.dirname(folder)
    return chosen, relative_source(chosen, source)


def relative_source(labels_path: str | os.PathLike[str], source: str) -> str:
    """``source`` (as the replay names it) relative to the folder of ``labels_path``, with
    ``/`` separators; ``ValueError`` when the session is not inside that folder."""
    path, suffix = _split_candidate(source)
    base = os.path.dirname(os.path.abspath(os.fspath(labels_path)))
    target = os.path.abspath(path)
    if not _is_within(target, base) or target == base:
        raise ValueError(f"{escape_for_display(source)} is not inside {escape_for_display(base)}")
    rel = os.path.relpath(target, base).replace(os.sep, "/")
    return rel + suffix


def _label_files_for(path: str) -> list[str]:
    if os.path.isdir(path):
        found: list[str] = []
        for folder, dirs, files in os.walk(path, followlinks=False, onerror=lambda e: None):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                             and not os.path.islink(os.path.join(folder, d)))
            if LABELS_FILE_NAME in files and os.path.isfile(os.path.join(folder, LABELS_FILE_NAME)):
                found.append(os.path.join(folder, LABELS_FILE_NAME))
        return found
    found_file = find_label_file(path)
    return [] if found_file is None else [found_file]


def _replay_sources(base_abs: str, rel_source: str, paths: Sequence[str]) -> list[str]:
    """Every spelling under which the replay of ``paths`` names the session ``rel_source``
    of a labels file in ``base_abs``."""
    rel_path, suffix = _split_candidate(rel_source)
    target = os.path.normpath(os.path.join(base_abs, *rel_path.split("/")))
    keys: list[str] = []
    if not os.path.isfile(target):
        return keys  # a label for a session file that is not there
    for p in paths:
        p_abs = os.path.abspath(p)
        if os.path.isdir(p):
            if _is_within(target, p_abs) and target != p_abs:
                inside = os.path.relpath(target, p_abs).split(os.sep)
                keys.append(os.path.join(p, *inside) + suffix)
        elif p_abs == target:
            keys.append(p + suffix)
    return list(dict.fromkeys(keys))


# --------------------------------------------------------------------------- helpers


def _check_source(source: str) -> str | None:
    """Why ``source`` cannot be a stored (folder-relative) source, or ``None``."""
    if not isinstance(source, str) or not source.strip():
        return "source is empty"
    shown = _quote(source)
    if _NUL_SENTINEL in source or "\x00" in source:
        return f"source {shown} contains a NUL byte"
    path, _ = _split_candidate(source)
    if path.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:[\\/]", path):
        return f"source {shown} is an absolute path; it must be relative to the labels file's folder"
    if ".." in path.split("/"):
        return f"source {shown} leaves the labels file's folder ('..')"
    if posixpath.normpath(path) in (".", ""):
        return f"source {shown} names a folder, not a session file"
    return None


def _clean_source(source: str) -> str:
    """``./a//x.json#2`` → ``a/x.json#2``: one spelling per session."""
    path, suffix = _split_candidate(source)
    return posixpath.normpath(path) + suffix


def split_source(source: str) -> tuple[str, str]:
    """``x.jsonl#2`` → (``x.jsonl``, ``#2``); a source without a session number → (source,
    ``""``)."""
    return _split_candidate(source)


def default_label_file(source: str) -> str:
    """Where ``loopscope label`` writes the label of ``source`` (a replay source) when no
    ``--labels`` is given: the nearest existing ``labels.csv`` from the session's folder up to
    the working directory (when the session is inside it), else ``labels.csv`` in the
    session's own folder."""
    path, _ = _split_candidate(source)
    folder = os.path.dirname(path) or "."
    here = os.path.abspath(".")
    current = os.path.abspath(folder)
    while _is_within(current, here):
        candidate = os.path.join(current, LABELS_FILE_NAME)
        if os.path.isfile(candidate):
            return os.path.relpath(candidate) if not os.path.isabs(path) else candidate
        if current == here:
            break
        current = os.path.dirname(current)
    return os.path.join(folder, LABELS_FILE_NAME)


def _split_candidate(source: str) -> tuple[str, str]:
    """``x.jsonl#2`` → (``x.jsonl``, ``#2``); anything else → (source, ``""``)."""
    match = _CANDIDATE_SUFFIX.search(source)
    if match is None or match.start() == 0:
        return source, ""
    return source[: match.start()], source[match.start():]


def _normalised_key(source: str) -> str:
    path, suffix = _split_candidate(source)
    return os.path.normpath(path) + suffix


def _natural_key(source: str) -> tuple[str, int]:
    path, suffix = _split_candidate(source)
    return (path, int(suffix[1:]) if suffix else -1)


def _is_within(path_abs: str, folder_abs: str) -> bool:
    return path_abs == folder_abs or path_abs.startswith(folder_abs.rstrip(os.sep) + os.sep)


def _depth(folder_abs: str) -> int:
    return len([part for part in folder_abs.split(os.sep) if part])


def _quote(value: str) -> str:
    return '"' + escape_for_display(value.replace(_NUL_SENTINEL, "\x00"), 60) + '"'


def _problem(source: str, line: int | None, severity: Severity, code: str, message: str,
             pointer: str | None = None, count: int = 1) -> Problem:
    return Problem(source, line, pointer, severity, code, message, count)


class _Problems:
    """Collects one file's problems, listing at most ``MAX_PROBLEMS_PER_CODE`` per code."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.items: list[Problem] = []
        self.extra: dict[str, int] = {}

    def add(self, line: int | None, severity: Severity, code: str, message: str,
            pointer: str | None = None) -> None:
        if sum(1 for p in self.items if p.code == code) >= MAX_PROBLEMS_PER_CODE:
            self.extra[code] = self.extra.get(code, 0) + 1
            return
        self.items.append(_problem(self.name, line, severity, code, message, pointer))

    def done(self) -> list[Problem]:
        out = sorted(self.items, key=lambda p: p.line or 0)
        for code, more in self.extra.items():
            severity = next(p.severity for p in self.items if p.code == code)
            out.append(_problem(self.name, None, severity, code,
                                f"… and {plural(more, 'more ' + code + ' problem')} in this file",
                                count=more))
        return out
