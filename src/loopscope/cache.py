"""The on-disk cache of prepared sessions: a second start on the same folder reads one file
instead of importing and preparing every session file again.

* **Where**: ``$LOOPSCOPE_CACHE_DIR`` if set, else the user's cache directory
  (``platformdirs.user_cache_dir("loopscope")``: ``$XDG_CACHE_HOME/loopscope`` on Linux,
  ``~/.cache/loopscope`` by default), folder ``prepared/``. ``LOOPSCOPE_CACHE=off`` turns it
  off. Safe to delete at any time: ``loopscope cache clear`` (or the dashboard's button) does.
* **One snapshot per loaded corpus** (``corpus/<key>.npz``), written once a corpus is loaded:
  every file's import outcome, each engine's prepared sessions of the whole corpus as one table
  of columns (:mod:`loopscope.engines.table`) and each engine's re-run under its default
  configuration — plain numpy arrays and a JSON index in an uncompressed zip, read without
  pickle. Its name is a SHA-256 of every file's path, size, modification and change times,
  inode and device, in order (and whether it was named explicitly), the engines and their
  prepare keys, and a digest of loopscope's own core source (importers and engines): anything
  that could change the data changes the name, so a snapshot is never stale — it is simply
  not found, and old ones age out by :func:`prune`.
* **A changed folder** (files added, removed or rewritten): the last snapshot of the folder
  (remembered per folder, engines and source digest: ``corpus/<name>.last``) gives the
  unchanged files' sessions; only the other files are imported and prepared again.
* **Which folders have a snapshot** (an empty ``corpus/<name>.root`` per folder, named by its
  path alone): a hint that lets ``loopscope replay`` of a folder never prepared skip naming a
  snapshot (which needs every engine's code, numpy and every file's stamp). Only a hint — the
  snapshot may have aged out — never a reason to trust one.
* **Read as needed**: a snapshot's index and re-runs are read when it is opened, each engine's
  table when that engine is first used (:class:`KeptCorpus`).
* **Never trusted blindly**: every member's CRC-32 is checked as it is read, the index and the
  tables are validated column by column (types, lengths, every position in range) before use;
  a damaged or foreign snapshot is ignored, deleted and written again (a table found damaged
  after the corpus was opened is prepared again from its files).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

from loopscope.model import Problem

__all__ = [
    "CORPUS_FORMAT",
    "DamagedSnapshot",
    "KeptCorpus",
    "SessionHead",
    "active",
    "cache_dir",
    "clear",
    "corpus_key",
    "file_stamp",
    "folder_marked",
    "has_corpora",
    "last_corpus",
    "mark_folder",
    "open_corpus",
    "pointer_name",
    "read_corpus",
    "remember_corpus",
    "stats",
    "write_corpus",
]

CORPUS_FORMAT = "loopscope-corpus/1"
"""The format tag of a corpus snapshot's index (bumped with the layout of a snapshot)."""
_CORPUS = "corpus"

_MAX_BYTES_DEFAULT = 4 << 30
""":func:`prune` keeps the cache under this many bytes (``LOOPSCOPE_CACHE_MAX_BYTES``)."""


@dataclass(frozen=True, slots=True)
class SessionHead:
    """What the overview needs of a session without holding it: its identity and size."""

    id: str
    source: str
    format: str
    turns: int
    calls: int


def active() -> bool:
    return os.environ.get("LOOPSCOPE_CACHE", "").strip().lower() not in ("off", "0", "no",
                                                                         "false")


def cache_dir() -> Path:
    """The folder of the cache's entries (not created here)."""
    return Path(_cache_dir(os.environ.get("LOOPSCOPE_CACHE_DIR"), os.environ.get(
        "XDG_CACHE_HOME")))


@lru_cache(maxsize=4)
def _cache_dir(env: str | None, xdg: str | None) -> str:
    del xdg  # (a key only: platformdirs reads it)
    if env:
        return os.path.join(env, "prepared")
    import platformdirs

    return os.path.join(platformdirs.user_cache_dir("loopscope", appauthor=False), "prepared")


@lru_cache(maxsize=1)
def code_digest() -> str:
    """A digest of loopscope's core source (everything but the dashboard and the command
    line): a new importer or engine rule gives every entry a new name."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(("ui/", "cli/")):
            continue
        h.update(rel.encode() + b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()


_WRITES = itertools.count()
"""Numbers this process's temporary files (with its id: no other writer uses the name)."""


class _quiet:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return exc[0] is not None and issubclass(exc[0], OSError)  # type: ignore[arg-type]


_SEVERITIES = ("error", "warning", "info")


def detection_of(value: Any) -> tuple[Any, ...]:
    """A stored detection (format, layout, reason, unsupported), checked."""
    if (type(value) is not list or len(value) != 4
            or not all(v is None or type(v) is str for v in value)):
        raise ValueError("detection")
    return tuple(value)


def problems_of(value: Any) -> list[Problem]:
    """Stored problems, checked."""
    if type(value) is not list:
        raise ValueError("problems")
    problems = []
    for p in value:
        source, line, pointer, severity, code, message, count = p
        if not (type(source) is str and (line is None or type(line) is int)
                and (pointer is None or type(pointer) is str) and severity in _SEVERITIES
                and type(code) is str and type(message) is str and type(count) is int):
            raise ValueError("problem")
        problems.append(Problem(source, line, pointer, severity, code, message, count))
    return problems


def problems_doc(problems: Sequence[Problem]) -> list[list[Any]]:
    return [[p.source, p.line, p.pointer, p.severity, p.code, p.message, p.count]
            for p in problems]


def heads_of(value: Any) -> list[SessionHead]:
    """Stored session heads, checked."""
    if type(value) is not list:
        raise ValueError("heads")
    heads = []
    for h in value:
        sid, source, fmt, turns, calls = h
        if not (type(sid) is str and type(source) is str and type(fmt) is str
                and type(turns) is int and type(calls) is int and turns >= 0 and calls >= 0):
            raise ValueError("session")
        heads.append(SessionHead(sid, source, fmt, turns, calls))
    return heads


def heads_doc(heads: Sequence[SessionHead]) -> list[list[Any]]:
    return [[h.id, h.source, h.format, h.turns, h.calls] for h in heads]


def tally_of(value: Any) -> tuple[int | None, int, dict[str, int]]:
    """A stored call tally (seen, imported, set aside by reason), checked."""
    seen, imported, aside = value
    if not ((seen is None or type(seen) is int) and type(imported) is int
            and type(aside) is dict
            and all(type(k) is str and type(v) is int for k, v in aside.items())):
        raise ValueError("tally")
    return (seen, imported, aside)


# --------------------------------------------------------------------------- corpus snapshots


def file_stamp(path: str) -> str:
    """What tells a file's version: size, modification and change times, inode and device
    (``"missing"`` when it cannot be read)."""
    try:
        st = os.stat(path)
    except OSError:
        return "missing"
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}:{st.st_dev}"


def corpus_key(files: Sequence[tuple[str, bool]], tables: Sequence[tuple[str, str]],
               stamps: Sequence[str] | None = None) -> str:
    """The name of the snapshot of ``files`` (path, named explicitly?) prepared for ``tables``
    (engine, prepare key): see the module docstring. ``stamps``: each file's
    :func:`file_stamp`, when already taken."""
    if stamps is None:
        stamps = [file_stamp(path) for path, _ in files]
    h = hashlib.sha256()
    h.update("\0".join((CORPUS_FORMAT, code_digest(), *(f"{e}:{k}" for e, k in tables)))
             .encode("utf-8", "surrogateescape") + b"\n")
    for (path, explicit), stamp in zip(files, stamps, strict=True):
        h.update(f"{path}\0{int(explicit)}\0{stamp}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def pointer_name(root: str, tables: Sequence[tuple[str, str]]) -> str:
    """The name under which the last snapshot of the folder ``root`` (for ``tables``, with
    this loopscope's code) is remembered: a later start on the changed folder reuses what
    did not change (:func:`last_corpus`)."""
    text = "\0".join((CORPUS_FORMAT, code_digest(), root, *(f"{e}:{k}" for e, k in tables)))
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def last_corpus(pointer: str) -> str | None:
    """The key of the last snapshot remembered under ``pointer``, if any."""
    try:
        text = _pointer_path(pointer).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if len(text) == 64 and all(c in "0123456789abcdef" for c in text) else None


def remember_corpus(pointer: str, key: str) -> None:
    """Remember ``key`` as the last snapshot under ``pointer`` (atomically; never raises)."""
    target = _pointer_path(pointer)
    tmp = target.parent / f".part-{pointer[:16]}-{os.getpid()}-{next(_WRITES)}"
    with _quiet():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(key, encoding="ascii")
        os.replace(tmp, target)


def mark_folder(root: str) -> None:
    """Note that a snapshot of the folder ``root`` is kept (see the module docstring; never
    raises)."""
    with _quiet():
        path = _folder_mark_path(root)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()


def folder_marked(root: str) -> bool:
    """Whether a snapshot of the folder ``root`` may be kept (:func:`mark_folder`)."""
    return _folder_mark_path(root).is_file()


def _folder_mark_path(root: str) -> Path:
    name = hashlib.sha256(f"{CORPUS_FORMAT}\0{root}".encode("utf-8", "surrogateescape"))
    return Path(os.path.join(cache_dir(), _CORPUS, name.hexdigest() + ".root"))


def _pointer_path(pointer: str) -> Path:
    return Path(os.path.join(cache_dir(), _CORPUS, pointer + ".last"))


def _corpus_path(key: str) -> Path:
    return Path(os.path.join(cache_dir(), _CORPUS, key + ".npz"))


def write_corpus(key: str, index: Mapping[str, Any], arrays: Mapping[str, Any]) -> bool:
    """Store a corpus snapshot atomically: ``index`` (JSON-ready) and ``arrays`` (name →
    1-D numpy array; names of letters, digits, ``_`` and ``.``). Never raises."""
    import numpy as np

    try:
        doc = {**index, "format": CORPUS_FORMAT, "key": key}
        members = {"index": np.frombuffer(orjson.dumps(doc), dtype=np.uint8), **arrays}
        target = _corpus_path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".part-", suffix=".npz")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, **members)
            os.replace(tmp, target)
        except BaseException:
            with _quiet():
                os.unlink(tmp)
            raise
        return True
    except (OSError, TypeError, ValueError):
        return False


class DamagedSnapshot(ValueError):
    """A member of a snapshot failed its check as it was read (the snapshot is deleted)."""


class KeptCorpus:
    """A snapshot opened for reading (:func:`open_corpus`): its index, and its arrays read from
    the file when asked (:meth:`read`), each member's CRC-32 checked as it is read.

    Why not all at once: a reopened corpus draws its first chart from the index and the
    re-runs kept beside the tables, and at 20,000 sessions the tables are 540 MB of the
    snapshot's 545 (a cold disk read of seconds); each is read when its engine is first used
    (the dashboard's first idle moment, or a re-run). The file stays open until every reader
    is done with it, so a snapshot deleted or replaced meanwhile (``loopscope cache clear``,
    :func:`prune`, another process) is still read whole."""

    def __init__(self, key: str, archive: Any, index: dict[str, Any]) -> None:
        self.key = key
        self.index = index
        """The JSON index written with the arrays (format and key checked)."""
        self.names = frozenset(archive.files) - {"index"}
        """The arrays' names."""
        self._archive = archive
        self._lock = threading.Lock()

    def read(self, names: Iterable[str]) -> dict[str, Any]:
        """The arrays ``names``, read now; :class:`DamagedSnapshot` when one is missing or
        fails its checksum (the snapshot is then deleted, to be written again)."""
        try:
            with self._lock:
                return {name: self._archive[name] for name in names}
        except Exception as exc:  # a damaged zip raises many kinds of errors: never trusted
            forget_corpus(self.key)
            raise DamagedSnapshot(f"the kept snapshot {self.key[:12]}… is damaged") from exc

    def forget(self) -> None:
        """Delete the snapshot (its contents did not pass the caller's checks)."""
        forget_corpus(self.key)


def open_corpus(key: str) -> KeptCorpus | None:
    """The snapshot called ``key``, opened (its index read and checked; arrays read when
    asked: :class:`KeptCorpus`), or ``None`` when there is none or it is damaged (it is then
    deleted, to be written again). Read without pickle."""
    import numpy as np

    path = _corpus_path(key)
    if not path.is_file():
        return None
    try:
        archive = np.load(path, allow_pickle=False)
        try:
            doc = orjson.loads(archive["index"].tobytes())
            if type(doc) is not dict or doc.get("format") != CORPUS_FORMAT \
                    or doc.get("key") != key:
                raise ValueError("not a snapshot of this cache")
        except BaseException:
            archive.close()
            raise
        with _quiet():
            os.utime(path)  # recently used: pruned last
        return KeptCorpus(key, archive, doc)
    except Exception:  # a damaged zip raises many kinds of errors: never trusted
        forget_corpus(key)
        return None


def read_corpus(key: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``(index, arrays)`` of the snapshot called ``key``, every array read now
    (:func:`open_corpus` reads them when asked), or ``None`` when there is none or it is
    damaged (it is then deleted). The index's fields and the arrays' shapes are the caller's
    to check."""
    kept = open_corpus(key)
    if kept is None:
        return None
    try:
        return kept.index, kept.read(kept.names)
    except DamagedSnapshot:
        return None


def has_corpora() -> bool:
    """Whether any corpus snapshot is kept (a cheap test before naming one, which needs every
    engine's table code and numpy)."""
    try:
        with os.scandir(os.path.join(cache_dir(), _CORPUS)) as entries:
            return any(entry.name.endswith(".npz") for entry in entries)
    except OSError:
        return False


def forget_corpus(key: str) -> None:
    """Delete the snapshot called ``key`` (a damaged one)."""
    with _quiet():
        _corpus_path(key).unlink()


def _cached_files(root: Path) -> list[Path]:
    """Every file of this cache: entries, snapshots and unfinished writes."""
    found = [p for p in root.glob("*/*") if p.parent.name == _CORPUS or len(p.parent.name) == 2]
    return [p for p in found
            if p.suffix in (".json", ".npz", *_MARKS) or p.name.startswith(".part-")]


_MARKS = (".last", ".root")
"""Small files that point at snapshots: not entries, never pruned (cleared with the rest)."""


def stats() -> tuple[int, int]:
    """``(entries, bytes)`` in the cache (corpus snapshots count as entries)."""
    count = size = 0
    root = cache_dir()
    if not root.is_dir():
        return 0, 0
    for path in _cached_files(root):
        if path.name.startswith(".part-") or path.suffix in _MARKS:
            continue
        with _quiet():
            size += path.stat().st_size
            count += 1
    return count, size


def clear() -> tuple[int, int]:
    """Delete every entry and snapshot; ``(entries, bytes)`` removed. Only this cache's own
    files (``<2 hex>/<64 hex>.json``, ``corpus/<64 hex>.npz``, ``.last`` and ``.root`` and
    unfinished ``.part-*``) are touched."""
    count = size = 0
    root = cache_dir()
    if not root.is_dir():
        return 0, 0
    for path in _cached_files(root):
        with _quiet():
            size += path.stat().st_size
            path.unlink()
            count += 1
    for sub in root.iterdir():
        if sub.is_dir() and (len(sub.name) == 2 or sub.name == _CORPUS):
            with _quiet():
                sub.rmdir()
    return count, size


def prune(max_bytes: int | None = None) -> int:
    """Delete the least recently written (snapshots: used) files until the cache holds at
    most ``max_bytes`` (``LOOPSCOPE_CACHE_MAX_BYTES``, default 4 GiB); returns the files
    deleted."""
    if max_bytes is None:
        try:
            max_bytes = int(os.environ.get("LOOPSCOPE_CACHE_MAX_BYTES", _MAX_BYTES_DEFAULT))
        except ValueError:
            max_bytes = _MAX_BYTES_DEFAULT
    root = cache_dir()
    if not root.is_dir():
        return 0
    entries = []
    total = 0
    for path in _cached_files(root):
        if path.name.startswith(".part-") or path.suffix in _MARKS:
            continue
        with _quiet():
            st = path.stat()
            entries.append((st.st_mtime, st.st_size, path))
            total += st.st_size
    removed = 0
    entries.sort()
    now = time.time()
    for mtime, size, path in entries:
        if total <= max_bytes:
            break
        if now - mtime < 60:  # being written by this run: keep
            continue
        with _quiet():
            path.unlink()
            total -= size
            removed += 1
    return removed
