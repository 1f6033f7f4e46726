"""The on-disk cache of prepared sessions: a second start on the same folder reads these
instead of importing and preparing every file again.

* **Where**: ``$LOOPSCOPE_CACHE_DIR`` if set, else the user's cache directory
  (``platformdirs.user_cache_dir("loopscope")``: ``$XDG_CACHE_HOME/loopscope`` on Linux,
  ``~/.cache/loopscope`` by default), folder ``prepared/``. ``LOOPSCOPE_CACHE=off`` turns it
  off. Safe to delete at any time: ``loopscope cache clear`` (or the dashboard's button) does.
* **One entry per session file, engine and prepare key**, named by a SHA-256 of: the file's
  resolved path, size and modification time (ns), the engine and its ``prepare_key``, and a
  digest of loopscope's own core source (importers and engines). Anything that could change
  the prepared data changes the name, so an entry is never stale: it is simply not found, and
  old entries age out by :func:`prune`.
* **What an entry holds**: JSON (orjson) — the file's import outcome (detection, problems,
  each session's identity and size) and each session's prepared data as the engine's own
  ``encode_prepared`` columns. No pickle, nothing executable: an entry is parsed as data and
  validated (format tag, key, every field's type and range by the engine's ``decode_prepared``);
  a damaged, truncated or foreign entry is ignored, deleted and rebuilt, never trusted.
* **One snapshot per loaded corpus** (``corpus/<key>.npz``), written after a corpus was
  loaded without it: every file's import outcome and each engine's prepared sessions of the
  whole corpus as one table of columns (:mod:`loopscope.engines.table`) — plain numpy arrays
  and a JSON index in an uncompressed zip, read without pickle. Its name is a SHA-256 of:
  every file's path, size, modification and change times and inode, in order (and whether it
  was named explicitly), the engines and their prepare keys, and the digest of loopscope's
  core source: a second start on an unchanged folder reads one file instead of one entry per
  session file, and any change to any file (or to loopscope) misses it and falls back to the
  entries above. Every member's CRC-32 is checked as it is read and the tables are validated
  column by column before use; a damaged snapshot is ignored, deleted and written again.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

from loopscope.model import Problem

__all__ = [
    "CORPUS_FORMAT",
    "FORMAT",
    "SessionHead",
    "active",
    "cache_dir",
    "clear",
    "corpus_key",
    "entry_key",
    "read",
    "read_corpus",
    "stats",
    "write",
    "write_corpus",
]

FORMAT = "loopscope-prepared/2"
"""The format tag every entry starts with (bumped with the layout of an entry)."""

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


def file_fingerprint(path: str) -> str | None:
    """Resolved path, size and mtime of a session file, or ``None`` when it cannot be read."""
    try:
        st = os.stat(path)
        real = os.path.realpath(path)
    except OSError:
        return None
    return f"{real}\0{st.st_size}\0{st.st_mtime_ns}"


def entry_key(fingerprint: str, engine: str, prepare_key: str, extra: str = "") -> str:
    """The name of an entry (see the module docstring). ``extra``: anything else the import
    depended on (a forced format, import limits)."""
    text = "\0".join((FORMAT, code_digest(), fingerprint, engine, prepare_key, extra))
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _entry_path(key: str) -> Path:
    return Path(os.path.join(cache_dir(), key[:2], key + ".json"))


def write(key: str, detection: Sequence[Any], problems: Sequence[Problem],
          heads: Sequence[SessionHead], prepared: Sequence[Any],
          tally: tuple[int | None, int, dict[str, int]] = (None, 0, {})) -> bool:
    """Store one entry atomically (a reader sees the whole entry or none). Never raises: a
    cache that cannot be written only costs the next start its time."""
    try:
        doc = {
            "format": FORMAT, "key": key, "detection": list(detection),
            "problems": problems_doc(problems),
            "heads": heads_doc(heads),
            "prepared": list(prepared),
            "tally": [tally[0], tally[1], dict(tally[2])],
        }
        data = orjson.dumps(doc)
        target = _entry_path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".part-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, target)
        except BaseException:
            with _quiet():
                os.unlink(tmp)
            raise
        return True
    except (OSError, TypeError, ValueError):
        return False


class _quiet:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return exc[0] is not None and issubclass(exc[0], OSError)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Entry:
    detection: tuple[Any, ...]
    problems: list[Problem]
    heads: list[SessionHead]
    prepared: list[Any]
    """Each session's ``encode_prepared`` data, not yet decoded."""
    tally: tuple[int | None, int, dict[str, int]] = (None, 0, {})
    """The file's tool calls: seen, imported, set aside on purpose (by reason)."""


_SEVERITIES = ("error", "warning", "info")


def read(key: str) -> Entry | None:
    """The entry called ``key``, or ``None`` when there is none or it does not validate (it is
    then deleted, to be written again)."""
    path = _entry_path(key)
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        return _validated(orjson.loads(data), key)
    except (ValueError, TypeError, KeyError, IndexError):
        with _quiet():
            path.unlink()
        return None


def _validated(doc: Any, key: str) -> Entry:
    if type(doc) is not dict or doc.get("format") != FORMAT or doc.get("key") != key:
        raise ValueError("not an entry of this cache")
    detection = detection_of(doc["detection"])
    problems = problems_of(doc["problems"])
    heads = heads_of(doc["heads"])
    prepared = doc["prepared"]
    if type(prepared) is not list or len(prepared) != len(heads):
        raise ValueError("prepared")
    return Entry(detection, problems, heads, prepared, tally_of(doc["tally"]))


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


def corpus_key(files: Sequence[tuple[str, bool]], tables: Sequence[tuple[str, str]]) -> str:
    """The name of the snapshot of ``files`` (path, named explicitly?) prepared for ``tables``
    (engine, prepare key): see the module docstring."""
    h = hashlib.sha256()
    h.update("\0".join((CORPUS_FORMAT, code_digest(), *(f"{e}:{k}" for e, k in tables)))
             .encode("utf-8", "surrogateescape") + b"\n")
    for path, explicit in files:
        try:
            st = os.stat(path)
            stamp = f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}:{st.st_dev}"
        except OSError:
            stamp = "missing"
        h.update(f"{path}\0{int(explicit)}\0{stamp}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


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


def read_corpus(key: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``(index, arrays)`` of the snapshot called ``key``, or ``None`` when there is none or it
    is damaged (it is then deleted, to be written again). Read without pickle; every member's
    CRC-32 is verified as it is read (a changed byte fails it), the index's fields and the
    arrays' shapes are the caller's to check."""
    import numpy as np

    path = _corpus_path(key)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
        doc = orjson.loads(arrays.pop("index").tobytes())
        if type(doc) is not dict or doc.get("format") != CORPUS_FORMAT or doc.get("key") != key:
            raise ValueError("not a snapshot of this cache")
        with _quiet():
            os.utime(path)  # recently used: pruned last
        return doc, arrays
    except Exception:  # a damaged zip raises many kinds of errors: never trusted
        forget_corpus(key)
        return None


def forget_corpus(key: str) -> None:
    """Delete the snapshot called ``key`` (a damaged one)."""
    with _quiet():
        _corpus_path(key).unlink()


def _cached_files(root: Path) -> list[Path]:
    """Every file of this cache: entries, snapshots and unfinished writes."""
    found = [p for p in root.glob("*/*") if p.parent.name == _CORPUS or len(p.parent.name) == 2]
    return [p for p in found if p.suffix in (".json", ".npz") or p.name.startswith(".part-")]


def stats() -> tuple[int, int]:
    """``(entries, bytes)`` in the cache (corpus snapshots count as entries)."""
    count = size = 0
    root = cache_dir()
    if not root.is_dir():
        return 0, 0
    for path in _cached_files(root):
        if path.name.startswith(".part-"):
            continue
        with _quiet():
            size += path.stat().st_size
            count += 1
    return count, size


def clear() -> tuple[int, int]:
    """Delete every entry and snapshot; ``(entries, bytes)`` removed. Only this cache's own
    files (``<2 hex>/<64 hex>.json``, ``corpus/<64 hex>.npz`` and unfinished ``.part-*``) are
    touched."""
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
        if path.name.startswith(".part-"):
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
