"""Reading zip archives within bounds: the one way loopscope opens a zip (``.eval`` logs,
uploaded ``.zip`` files).

A zip says how big its members are, but a small archive can still inflate to gigabytes (one
member compressed 1000:1, thousands of members, or many central-directory entries pointing at
the same compressed bytes), and ``zipfile`` builds a Python object for every entry of the
central directory before anyone can look at the count. So:

* before ``zipfile`` reads the central directory, its entries are counted by walking their
  fixed-size headers (a few bytes each, no objects): more than ``max_archive_members`` and the
  archive is refused;
* every member is checked against its declared sizes first (``max_document_bytes`` per member,
  ``max_compression_ratio`` of inflated to compressed bytes, the memory that parsing it will
  need), then inflated in chunks while the bytes that really come out are counted against the
  same limits and against ``max_archive_bytes`` for the whole archive, so a header that lies
  about sizes is caught as the data arrives.

Every refusal is an :class:`ArchiveError` whose message names the member (the caller's
problem names the file), with the limit to raise when the archive is genuine. Nothing here
imports a format module; :mod:`loopscope.formats.inspect_eval` and detection use it.
"""

from __future__ import annotations

import os
import struct
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from loopscope.formats.base import ImportLimits, MiB
from loopscope.formats.jsonio import available_memory
from loopscope.model import escape_for_display

__all__ = [
    "CHUNK_BYTES",
    "RATIO_FLOOR_BYTES",
    "ArchiveError",
    "ArchiveLimits",
    "BoundedArchive",
    "count_members",
    "open_archive",
]

CHUNK_BYTES = 1 * MiB
"""Members are inflated this much at a time."""
RATIO_FLOOR_BYTES = 1 * MiB
"""The compression ratio is only held against members that inflate past this: a few hundred
kilobytes of repeated JSON may compress 1000:1 and costs nothing."""

# The fixed parts of the records the member count reads (the zip application note's layout).
_EOCD = struct.Struct("<4s4H2LH")  # end of central directory record, 22 bytes
_EOCD_SIG = b"PK\x05\x06"
_ZIP64_LOCATOR = struct.Struct("<4sLQL")  # 20 bytes, just before the end record
_ZIP64_LOCATOR_SIG = b"PK\x06\x07"
_ZIP64_EOCD = struct.Struct("<4sQ2H2L4Q")  # 56 bytes
_ZIP64_EOCD_SIG = b"PK\x06\x06"
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")  # one central-directory entry header, 46 bytes
_CENTRAL_SIG = b"PK\x01\x02"
_MAX_COMMENT = 0xFFFF

_READ_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError,
                NotImplementedError, RuntimeError, zlib.error, struct.error)
"""What reading a damaged or unsupported archive raises (``RuntimeError``: encrypted members;
``NotImplementedError``: an unknown compression method)."""


class ArchiveError(Exception):
    """The archive (or one member) is refused. ``code`` is a problem code (``too_large`` for
    a limit, ``unreadable`` for damage); ``member`` names the member when one is at fault;
    ``limit`` is the :class:`ImportLimits` field that refused it, if any."""

    def __init__(self, code: str, message: str, member: str | None = None,
                 limit: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.member = member
        self.limit = limit


@dataclass(frozen=True, slots=True)
class ArchiveLimits:
    """The bounds one archive is read within (from :class:`ImportLimits`)."""

    max_members: int
    max_total_bytes: int
    max_member_bytes: int
    max_ratio: int
    memory_factor: int

    @classmethod
    def from_import_limits(cls, limits: Any) -> ArchiveLimits:
        defaults = ImportLimits()

        def get(name: str) -> int:
            return int(getattr(limits, name, getattr(defaults, name)))

        return cls(get("max_archive_members"), get("max_archive_bytes"),
                   get("max_document_bytes"), get("max_compression_ratio"), get("memory_factor"))


def _size(n: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor:
            return f"{n / factor:.1f} {unit}"
    return f"{n} bytes"


def _shown(name: str) -> str:
    return escape_for_display(name, 120)


# --------------------------------------------------------------------------- member count


def _central_directory(handle: Any, file_size: int) -> tuple[int, int, int] | None:
    """``(start, size, declared entries)`` of the central directory, or ``None`` when no end
    record is found (``zipfile`` then says what is wrong). Mirrors how ``zipfile`` finds it,
    a prefix before the archive (self-extracting, concatenated) included."""
    tail = min(file_size, _EOCD.size + _MAX_COMMENT)
    handle.seek(file_size - tail)
    data = handle.read(tail)
    at = data.rfind(_EOCD_SIG)
    while at != -1 and len(data) - at < _EOCD.size:
        at = data.rfind(_EOCD_SIG, 0, at)
    if at == -1:
        return None
    # The directory's own offset field is not used: a prefix before the archive shifts every
    # offset, while the end record's position cannot lie.
    _, _, _, _, entries, cd_size, _, _ = _EOCD.unpack_from(data, at)
    eocd_pos = file_size - tail + at
    start = eocd_pos - cd_size
    if eocd_pos >= _ZIP64_LOCATOR.size:
        handle.seek(eocd_pos - _ZIP64_LOCATOR.size)
        locator = handle.read(_ZIP64_LOCATOR.size)
        if len(locator) == _ZIP64_LOCATOR.size and locator.startswith(_ZIP64_LOCATOR_SIG):
            record_at = eocd_pos - _ZIP64_LOCATOR.size - _ZIP64_EOCD.size
            if record_at >= 0:
                handle.seek(record_at)
                record = handle.read(_ZIP64_EOCD.size)
                if len(record) == _ZIP64_EOCD.size and record.startswith(_ZIP64_EOCD_SIG):
                    fields = _ZIP64_EOCD.unpack(record)
                    entries, cd_size = fields[7], fields[8]
                    start = record_at - cd_size
    if start < 0:
        return None
    return start, cd_size, entries


def count_members(path: str, limit: int) -> int | None:
    """How many entries the central directory of ``path`` holds, counting at most ``limit + 1``
    (so a huge directory costs no more than ``limit`` small reads). ``None`` when the file has
    no readable end record. Raises ``OSError`` when the file cannot be read."""
    with open(path, "rb") as handle:
        file_size = os.fstat(handle.fileno()).st_size
        found = _central_directory(handle, file_size)
        if found is None:
            return None
        start, cd_size, declared = found
        if declared > limit:
            return declared
        handle.seek(start)
        count = consumed = 0
        while consumed < cd_size and count <= limit:
            header = handle.read(_CENTRAL.size)
            if len(header) < _CENTRAL.size or not header.startswith(_CENTRAL_SIG):
                break  # damaged: zipfile will say so
            fields = _CENTRAL.unpack(header)
            variable = fields[12] + fields[13] + fields[14]  # name, extra, comment lengths
            handle.seek(variable, os.SEEK_CUR)
            consumed += _CENTRAL.size + variable
            count += 1
        return count


# --------------------------------------------------------------------------- reading


class BoundedArchive:
    """An open zip archive whose members are read within :class:`ArchiveLimits`.

    Use :func:`open_archive`; close it (or use it as a context manager) when done.
    """

    def __init__(self, archive: zipfile.ZipFile, limits: ArchiveLimits,
                 available_memory: int | None) -> None:
        self._zip = archive
        self.limits = limits
        self.inflated = 0
        """Bytes inflated so far, over every member read."""
        self._available = available_memory

    def __enter__(self) -> BoundedArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._zip.close()

    def members(self) -> list[zipfile.ZipInfo]:
        """The file members (folders left out), in archive order."""
        return [info for info in self._zip.infolist() if not info.is_dir()]

    def names(self) -> list[str]:
        return [info.filename for info in self.members()]

    def check(self, info: zipfile.ZipInfo) -> None:
        """Refuse ``info`` on its declared sizes alone, before anything is inflated."""
        declared = info.file_size
        self._check_size(info, declared, self.inflated + declared)
        needed = declared * self.limits.memory_factor
        if self._available is not None and needed > self._available:
            raise ArchiveError("too_large", f"member {_shown(info.filename)} is {_size(declared)};"
                               f" parsing it needs about {_size(needed)} but only "
                               f"{_size(self._available)} of memory is available "
                               "(memory_factor); not read", info.filename, "memory_factor")

    def _check_size(self, info: zipfile.ZipInfo, member_bytes: int, total_bytes: int) -> None:
        limits = self.limits
        name = _shown(info.filename)
        if member_bytes > limits.max_member_bytes:
            raise ArchiveError("too_large", f"member {name} inflates to more than "
                               f"{_size(limits.max_member_bytes)} (max_document_bytes); not read",
                               info.filename, "max_document_bytes")
        if total_bytes > limits.max_total_bytes:
            raise ArchiveError("too_large", "the archive inflates to more than "
                               f"{_size(limits.max_total_bytes)} (max_archive_bytes); stopped "
                               f"at member {name}", info.filename, "max_archive_bytes")
        if member_bytes > RATIO_FLOOR_BYTES:
            ratio = member_bytes / max(info.compress_size, 1)
            if ratio > limits.max_ratio:
                raise ArchiveError("too_large", f"member {name} inflates {ratio:.0f}:1 (to "
                                   f"{_size(member_bytes)} or more), over the {limits.max_ratio}:1"
                                   " limit (max_compression_ratio): a zip bomb, or an unusual "
                                   "archive; not read", info.filename, "max_compression_ratio")

    def iter_chunks(self, info: zipfile.ZipInfo) -> Iterator[bytes]:
        """The inflated bytes of ``info`` in chunks of at most :data:`CHUNK_BYTES`, counted as
        they come: the member size, the ratio and the archive total are enforced on what is
        really inflated, whatever the headers claim. Raises :class:`ArchiveError`."""
        self.check(info)
        produced = 0
        try:
            with self._zip.open(info) as handle:
                while chunk := handle.read(CHUNK_BYTES):
                    produced += len(chunk)
                    self.inflated += len(chunk)
                    self._check_size(info, produced, self.inflated)
                    yield chunk
        except _READ_ERRORS as exc:
            raise ArchiveError("unreadable", f"member {_shown(info.filename)} cannot be read "
                               f"({escape_for_display(str(exc) or type(exc).__name__, 120)})",
                               info.filename) from None

    def read(self, info: zipfile.ZipInfo) -> bytes:
        """The whole inflated member (within the limits). Raises :class:`ArchiveError`."""
        return b"".join(self.iter_chunks(info))


def open_archive(path: str, limits: Any = None) -> BoundedArchive:
    """Open the zip at ``path`` for bounded reading. ``limits`` is an :class:`ImportLimits`
    (or anything with its attribute names). Raises :class:`ArchiveError` when the archive is
    damaged or has more than ``max_archive_members`` entries."""
    bounds = ArchiveLimits.from_import_limits(limits if limits is not None else ImportLimits())
    try:
        count = count_members(path, bounds.max_members)
    except OSError as exc:
        raise ArchiveError("unreadable", "the zip archive cannot be read "
                           f"({escape_for_display(exc.strerror or str(exc), 120)})") from None
    too_many = ArchiveError("too_large", f"the archive holds more than {bounds.max_members:,} "
                            "members (max_archive_members); not read", None, "max_archive_members")
    if count is not None and count > bounds.max_members:
        raise too_many
    try:
        archive = zipfile.ZipFile(path)
    except _READ_ERRORS as exc:
        raise ArchiveError("unreadable", "the zip archive cannot be read "
                           f"({escape_for_display(str(exc) or type(exc).__name__, 120)})") from None
    if len(archive.infolist()) > bounds.max_members:  # the walk above stopped early on damage
        archive.close()
        raise too_many
    return BoundedArchive(archive, bounds, available_memory())
