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
  table when that engine is first used (:class:`KeptCorpus`), and a table's string pool (the
  sessions' texts, most of a snapshot) a checked piece at a time as sessions are read
  (:class:`KeptBytes`).
* **Never trusted blindly**: every member's CRC-32 is checked as it is read (a pool's, each
  64 KiB piece's, against checksums written beside it), the index and the tables are
  validated column by column (types, lengths, every position in range) before use; a damaged
  or foreign snapshot is ignored, deleted and written again (a table found damaged after the
  corpus was opened is prepared again from its files).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import tempfile
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

from loopscope.bulk import LazyBytes
from loopscope.model import Problem

__all__ = [
    "CORPUS_FORMAT",
    "DamagedSnapshot",
    "KeptBytes",
    "KeptCorpus",
    "SessionHead",
    "StreamedArray",
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


_related_files: Callable[[str], list[str]] | None = None


def file_stamp(path: str) -> str:
    """What tells a file's version: size, modification and change times, inode and device
    (``"missing"`` when it cannot be read), and a digest of the stamps of the files its import
    reads besides it (:func:`loopscope.formats.related.related_files`), if any."""
    global _related_files
    stamp = _own_stamp(path)
    if _related_files is None:  # (imported on first use, then kept: the formats import the
        from loopscope.formats.related import related_files  # engines; a file costs 1 µs)

        _related_files = related_files
    related = _related_files(path)
    if not related:
        return stamp
    h = hashlib.sha256()
    for other in related:
        h.update(f"{other}\0{_own_stamp(other)}\n".encode("utf-8", "surrogateescape"))
    return f"{stamp}:{h.hexdigest()[:16]}"


def _own_stamp(path: str) -> str:
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


@dataclass(frozen=True, slots=True)
class StreamedArray:
    """A 1-D array of a snapshot given a piece at a time (:func:`write_corpus`): a table
    joined from the parts of an ingest as it is written, never held whole."""

    dtype: Any
    """Its numpy dtype (every piece is of it)."""
    length: int
    pieces: Callable[[], Iterable[Any]]
    """The pieces (1-D arrays of ``dtype``), in order; called once, when written."""


def write_corpus(key: str, index: Mapping[str, Any], arrays: Mapping[str, Any]) -> bool:
    """Store a corpus snapshot atomically: ``index`` (JSON-ready) and ``arrays`` (name →
    1-D numpy array or :class:`StreamedArray`; names of letters, digits, ``_`` and ``.``),
    an uncompressed zip of ``.npy`` members as ``numpy.savez`` writes them. Each member is
    written as it comes (a streamed one a piece at a time, its pieces' checksums taken on the
    way): the file's arrays are never all in memory. Never raises."""
    import zipfile

    import numpy as np

    try:
        doc = {**index, "format": CORPUS_FORMAT, "key": key}
        target = _corpus_path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".part-", suffix=".npz")
        try:
            with os.fdopen(fd, "wb") as fh, zipfile.ZipFile(
                    fh, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
                _write_member(archive, "index", np.frombuffer(orjson.dumps(doc), dtype=np.uint8))
                checksums: dict[str, Any] = {}
                for name, value in arrays.items():
                    found = _write_member(archive, name, value)
                    if found is not None:
                        checksums[_CHECKSUMS + name] = found
                for name, value in checksums.items():
                    _write_member(archive, name, value)
            os.replace(tmp, target)
        except BaseException:
            with _quiet():
                os.unlink(tmp)
            raise
        return True
    except (OSError, TypeError, ValueError):
        return False


def _write_member(archive: Any, name: str, value: Any) -> Any:
    """Write the member ``name.npy`` of ``value`` (an array or a :class:`StreamedArray`) as
    ``numpy.savez`` does; the checksums of its :data:`CHUNK_BYTES` chunks when it is a byte
    array read piece by piece (:data:`PIECEWISE_FROM_BYTES`), else None."""
    import numpy as np

    if isinstance(value, StreamedArray):
        dtype, length, pieces = np.dtype(value.dtype), value.length, value.pieces()
    else:
        whole = np.ascontiguousarray(np.asarray(value))
        if whole.ndim != 1:
            raise ValueError(f"{name}: not a 1-D array")
        dtype, length, pieces = whole.dtype, len(whole), iter((whole,))
    if dtype.hasobject:
        raise ValueError(f"{name}: an array of objects")
    crc = _ChunkChecksums() if dtype == np.uint8 and length >= PIECEWISE_FROM_BYTES else None
    written = 0
    # (always zip64, as numpy writes: a member may pass 4 GiB)
    with archive.open(name + ".npy", "w", force_zip64=True) as member:
        np.lib.format.write_array_header_1_0(member, {
            "descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False,
            "shape": (length,)})
        for piece in pieces:
            piece = np.ascontiguousarray(piece)
            if piece.dtype != dtype or piece.ndim != 1:
                raise ValueError(f"{name}: a piece of another type")
            written += len(piece)
            if written > length:
                raise ValueError(f"{name}: longer than said")
            data = piece.data.cast("B")
            member.write(data)
            if crc is not None:
                crc.add(data)
    if written != length:
        raise ValueError(f"{name}: shorter than said")
    return None if crc is None else crc.done()


_NPY_HEADER_MAX = 1 << 16
"""The most a ``.npy`` header of a snapshot's member takes (numpy's own headers of 1-D arrays
take 128 bytes)."""
PIECEWISE_FROM_BYTES = 1 << 20
"""A byte array of a snapshot at least this large (a table's string pool: the sessions' JSON
texts of some guards) is read piece by piece when used (:class:`KeptBytes`), its pieces
checked against checksums of :data:`CHUNK_BYTES` each written beside it."""
CHUNK_BYTES = 1 << 16
_CHECKSUMS = "crc."
_KEEP_CHUNKS = 256
"""Chunks of a :class:`KeptBytes` kept once read (16 MiB): a session's strings are near each
other, and read again as its replays are built."""


class _ChunkChecksums:
    """The CRC-32 of each :data:`CHUNK_BYTES` chunk of bytes given in pieces of any size."""

    def __init__(self) -> None:
        self._done: list[int] = []
        self._crc = 0
        self._filled = 0

    def add(self, data: memoryview) -> None:
        at = 0
        while at < len(data):
            take = min(CHUNK_BYTES - self._filled, len(data) - at)
            self._crc = zlib.crc32(data[at:at + take], self._crc)
            self._filled += take
            at += take
            if self._filled == CHUNK_BYTES:
                self._done.append(self._crc)
                self._crc = self._filled = 0

    def done(self) -> Any:
        import numpy as np

        if self._filled:
            self._done.append(self._crc)
            self._crc = self._filled = 0
        return np.array(self._done, dtype=np.uint32)


class DamagedSnapshot(ValueError):
    """A member of a snapshot failed its check as it was read (the snapshot is deleted)."""


class KeptCorpus:
    """A snapshot opened for reading (:func:`open_corpus`): its index, and its arrays read from
    the file when asked (:meth:`read`), each member's CRC-32 checked as it is read.

    Why not all at once: a reopened corpus draws its first chart from the index and the
    re-runs kept beside the tables, and the tables are nearly all of the snapshot (a cold
    disk read of seconds on a large corpus); each is read when its engine is first used
    (the dashboard's first idle moment, or a re-run). The file stays open until every reader
    is done with it, so a snapshot deleted or replaced meanwhile (``loopscope cache clear``,
    :func:`prune`, another process) is still read whole."""

    def __init__(self, key: str, archive: Any, index: dict[str, Any]) -> None:
        self.key = key
        self.index = index
        """The JSON index written with the arrays (format and key checked)."""
        self.names = frozenset(n for n in archive.files
                               if n != "index" and not n.startswith(_CHECKSUMS))
        """The arrays' names."""
        self._archive = archive
        """The open ``numpy.load`` archive (its file closed when it is collected)."""
        self._lock = threading.Lock()

    def read(self, names: Iterable[str]) -> dict[str, Any]:
        """The arrays ``names``: read now, but a large byte array, which is read piece by
        piece when used (:class:`KeptBytes`); :class:`DamagedSnapshot` when one is missing or
        fails its checksum (the snapshot is then deleted, to be written again)."""
        try:
            with self._lock:
                out = {}
                for name in names:
                    if _CHECKSUMS + name in self._archive.files:
                        out[name] = self._piecewise(name)
                    else:
                        out[name] = self._whole(name)
                return out
        except DamagedSnapshot:
            raise
        except Exception as exc:  # a damaged zip raises many kinds of errors: never trusted
            raise self.damaged() from exc

    def read_group(self, prefix: str) -> dict[str, Any]:
        """:meth:`read` of every array named ``prefix…``, by the rest of its name."""
        return {name[len(prefix):]: value for name, value in self.read(
            name for name in self.names if name.startswith(prefix)).items()}

    def damaged(self) -> DamagedSnapshot:
        """The error to raise when a part of the snapshot fails its check (which deletes
        it)."""
        forget_corpus(self.key)
        return DamagedSnapshot(f"the kept snapshot {self.key[:12]}… is damaged; it was "
                               "deleted, and the sessions are prepared again from their files")

    def _member(self, name: str) -> tuple[bytes, int, Any, int, int]:
        """Where the array ``name`` lies in the file (an uncompressed ``.npy`` member, as
        numpy writes them): ``(the member's npy header, its CRC-32, dtype, length, start of
        the array's bytes)``, the npy header read and checked (a 1-D array in C order, of no
        objects, filling the member). Read with ``pread``: the zip's own reads are left
        where they are."""
        import io
        import zipfile

        import numpy as np

        info = self._archive.zip.getinfo(name + ".npy")
        if info.compress_type != zipfile.ZIP_STORED:
            raise ValueError(f"{name}: compressed")
        fd = self._archive.fid.fileno()
        local = os.pread(fd, 30, info.header_offset)
        if len(local) != 30 or local[:4] != b"PK\x03\x04":
            raise ValueError(f"{name}: no local header")
        start = info.header_offset + 30 + int.from_bytes(local[26:28], "little") \
            + int.from_bytes(local[28:30], "little")
        read = os.pread(fd, min(info.file_size, _NPY_HEADER_MAX), start)
        head = io.BytesIO(read)
        version = np.lib.format.read_magic(head)
        read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                       (2, 0): np.lib.format.read_array_header_2_0}.get(version)
        if read_header is None:
            raise ValueError(f"{name}: npy version {version}")
        shape, fortran, dtype = read_header(head)
        begin = start + head.tell()
        if dtype.hasobject or len(shape) != 1 or fortran \
                or begin + shape[0] * dtype.itemsize != start + info.file_size:
            raise ValueError(f"{name}: not a plain 1-D array")
        return read[:head.tell()], info.CRC, dtype, shape[0], begin

    def _whole(self, name: str) -> Any:
        """The array ``name``, read with one system call into memory of its own and checked
        against its member's CRC-32 (zip's check: the npy header and the bytes).

        Why not ``numpy.load``'s read: it goes through :mod:`zipfile` a few KiB at a time,
        updating the checksum in Python at each step with the interpreter held; a reopened
        large corpus reads every table so (gigabytes) in a thread beside the first chart,
        which then waited for the interpreter. ``pread`` and ``zlib.crc32`` of a large buffer
        let go of it."""
        import numpy as np

        header, crc, dtype, length, begin = self._member(name)
        data = bytearray(length * dtype.itemsize)  # (writable, as numpy.load's arrays are)
        if data and os.preadv(self._archive.fid.fileno(), [data], begin) != len(data):
            raise self.damaged()
        if zlib.crc32(data, zlib.crc32(header)) != crc:
            raise self.damaged()
        return np.frombuffer(data, dtype=dtype)

    def _piecewise(self, name: str) -> KeptBytes:
        """The byte array ``name`` as a :class:`KeptBytes`: where its bytes lie in the file
        and their checksums."""
        import numpy as np

        _header, _crc, dtype, length, begin = self._member(name)
        if dtype != np.uint8:
            raise ValueError(f"{name}: not a byte array")
        checksums = self._whole(_CHECKSUMS + name)
        if checksums.dtype != np.uint32 or len(checksums) != -(-length // CHUNK_BYTES):
            raise ValueError(f"{name}: checksums")
        return KeptBytes(self, self._archive.fid.fileno(), begin, length, checksums)

    def forget(self) -> None:
        """Delete the snapshot (its contents did not pass the caller's checks)."""
        forget_corpus(self.key)


class KeptBytes(LazyBytes):
    """A byte array of a snapshot (a table's string pool) read piece by piece as it is used:
    each :data:`CHUNK_BYTES` chunk read is checked against its checksum (a chunk that fails
    raises :class:`DamagedSnapshot` and deletes the snapshot), and the last few are kept.

    Stands for a 1-D ``uint8`` array where a table reads its pool: ``len``, slices
    (``blob[begin:end]``, an array), :meth:`read`, and ``numpy.asarray(blob)`` (every chunk
    read and checked: joining or compacting a table). Why: the rows a chart draws read the
    texts of a few sessions, and the pools are most of a snapshot, which is then neither read
    from disk nor held in memory."""

    def __init__(self, kept: KeptCorpus, fd: int, begin: int, length: int,
                 checksums: Any) -> None:
        import numpy as np

        self.kept = kept  # (keeps the file open)
        self._fd = fd
        self._begin = begin
        self._length = length
        self._checksums = checksums
        self._chunks: OrderedDict[int, bytes] = OrderedDict()
        self._lock = threading.Lock()
        self.dtype = np.dtype(np.uint8)
        self.ndim = 1
        self.shape = (length,)
        self.damaged = False
        """Whether a chunk failed its checksum."""

    def __len__(self) -> int:
        return self._length

    @property
    def size(self) -> int:
        return self._length

    @property
    def nbytes(self) -> int:
        return self._length

    def __getitem__(self, index: Any) -> Any:
        import numpy as np

        if not isinstance(index, slice) or index.step not in (None, 1):
            raise TypeError("a pool is read by contiguous slices")
        begin, end, _ = index.indices(self._length)
        return np.frombuffer(self.read(begin, max(begin, end)), dtype=np.uint8)

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        import numpy as np

        out = np.frombuffer(self.read(0, self._length), dtype=np.uint8)
        return out if dtype is None else out.astype(dtype)

    def read(self, begin: int, end: int) -> bytes:
        """Bytes ``begin .. end - 1``, each chunk they lie in checked."""
        if not 0 <= begin <= end <= self._length:
            raise IndexError((begin, end))
        if begin == end:
            return b""
        first, last = begin // CHUNK_BYTES, (end - 1) // CHUNK_BYTES
        parts = [self._chunk(k) for k in range(first, last + 1)]
        offset = first * CHUNK_BYTES
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        return data[begin - offset:end - offset]

    def _chunk(self, k: int) -> bytes:
        with self._lock:
            found = self._chunks.get(k)
            if found is not None:
                self._chunks.move_to_end(k)
                return found
        at = k * CHUNK_BYTES
        size = min(CHUNK_BYTES, self._length - at)
        try:
            data = os.pread(self._fd, size, self._begin + at)
        except OSError as exc:
            self.damaged = True
            raise self.kept.damaged() from exc
        if len(data) != size or zlib.crc32(data) != int(self._checksums[k]):
            self.damaged = True
            raise self.kept.damaged()
        with self._lock:
            self._chunks[k] = data
            while len(self._chunks) > _KEEP_CHUNKS:
                self._chunks.popitem(last=False)
        return data


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


def _is_entry(path: Path) -> bool:
    """An entry or a snapshot, as :func:`stats` counts and :func:`prune` deletes them: not a
    pointer file (:data:`_MARKS`) nor an unfinished write."""
    return not (path.name.startswith(".part-") or path.suffix in _MARKS)


def stats() -> tuple[int, int]:
    """``(entries, bytes)`` in the cache (corpus snapshots count as entries)."""
    count = size = 0
    root = cache_dir()
    if not root.is_dir():
        return 0, 0
    for path in _cached_files(root):
        if not _is_entry(path):
            continue
        with _quiet():
            size += path.stat().st_size
            count += 1
    return count, size


def clear() -> tuple[int, int]:
    """Delete every entry and snapshot; ``(entries, bytes)`` removed, counted as :func:`stats`
    counts them (the pointer files and unfinished writes go too, but are not entries). Only
    this cache's own files (``<2 hex>/<64 hex>.json``, ``corpus/<64 hex>.npz``, ``.last`` and
    ``.root`` and unfinished ``.part-*``) are touched."""
    count = size = 0
    root = cache_dir()
    if not root.is_dir():
        return 0, 0
    for path in _cached_files(root):
        with _quiet():
            entry = _is_entry(path)
            length = path.stat().st_size
            path.unlink()
            count += entry
            size += length if entry else 0
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
        if not _is_entry(path):
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
