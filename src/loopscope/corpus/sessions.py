"""A corpus's sessions read again from their files when asked: the normalised sessions are not
kept once prepared (only each session's :class:`~loopscope.cache.SessionHead`), so memory stays
that of the prepared data; a session a page opens is imported again and checked against its
head, which names the file when it changed.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from loopscope.cache import SessionHead
from loopscope.formats.base import Detection, FileImport
from loopscope.model import Problem, Session, escape_for_display

__all__ = ["KEEP_SESSIONS_UP_TO", "CorpusSessions", "FileSessions", "SessionsChanged", "head_of",
           "load_one", "reload"]


def head_of(session: Session) -> SessionHead:
    """``session``'s identity and size (what a corpus keeps of it)."""
    return SessionHead(session.id, session.source, session.format, len(session.turns),
                       len(session.calls))


KEEP_SESSIONS_UP_TO = int(os.environ.get("LOOPSCOPE_KEEP_SESSIONS", "3000"))
"""A corpus of at most this many sessions keeps each file's sessions once they were read
again (pages that walk every session then pay for it once); a larger one keeps only the last
few files, so memory stays that of the prepared data."""


class FileSessions(Sequence[Session]):
    """A file's sessions, read again from the file when asked (:func:`reload`), and kept when
    ``keep`` (a small corpus)."""

    def __init__(self, path: str, explicit: bool, heads: Sequence[SessionHead],
                 keep: bool = False) -> None:
        self.path = path
        self.explicit = explicit
        self.heads = list(heads)
        self.keep = keep
        self._kept: list[Session] | None = None

    def _sessions(self) -> list[Session]:
        if self._kept is not None:
            return self._kept
        found = reload(self.path, self.explicit, self.heads) if self.heads else []
        if self.keep:
            self._kept = found
        return found

    def __len__(self) -> int:
        return len(self.heads)

    def __getitem__(self, index: Any) -> Any:
        return self._sessions()[index]

    def __iter__(self) -> Any:
        return iter(self._sessions())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


class CorpusSessions(Sequence[Session]):
    """Every session of a corpus, in file order, each read again from its file when asked;
    :attr:`heads` tells their identity and size without reading them."""

    def __init__(self, parts: Sequence[FileSessions], heads: list[SessionHead]) -> None:
        self.parts = list(parts)
        self.heads = heads
        if len(heads) <= KEEP_SESSIONS_UP_TO:
            for part in self.parts:
                part.keep = True
        self._part_of: list[tuple[int, int]] = [
            (k, j) for k, part in enumerate(self.parts) for j in range(len(part))]

    def __len__(self) -> int:
        return len(self.heads)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        k, j = self._part_of[index]
        return self.parts[k][j]

    def __iter__(self) -> Any:
        for part in self.parts:
            yield from part

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


_RELOADED: OrderedDict[str, list[Session]] = OrderedDict()
_RELOADED_FILES = 8
_reload_lock = threading.Lock()


class SessionsChanged(RuntimeError):
    """A file no longer holds the sessions it held when the corpus was loaded."""


def reload(path: str, explicit: bool, heads: Sequence[SessionHead]) -> list[Session]:
    """A file's sessions read again (the last few files are kept); :class:`SessionsChanged`
    when they are not the ones loaded before (the file was rewritten: load the folder again)."""
    from loopscope.formats import load_file

    with _reload_lock:
        found = _RELOADED.get(path)
        if found is not None:
            _RELOADED.move_to_end(path)
    if found is None:
        found = load_one(load_file, path, explicit).sessions
        with _reload_lock:
            _RELOADED[path] = found
            while len(_RELOADED) > _RELOADED_FILES:
                _RELOADED.popitem(last=False)
    if [head_of(s) for s in found] != list(heads):
        with _reload_lock:
            _RELOADED.pop(path, None)
        raise SessionsChanged(f"{escape_for_display(path)} changed since it was loaded; "
                              "load the sessions again")
    return found


def load_one(load_file: Callable[..., FileImport], path: str, explicit: bool) -> FileImport:
    """``load_file(path)`` of one file; an importer that raises (it must not) gives the file an
    ``internal_error`` problem and no sessions, so the other files still load."""
    try:
        return load_file(path, scanned=not explicit)
    except Exception as exc:  # an importer must never raise; if one does, keep going
        return FileImport(
            path,
            Detection(None, "unknown", "the importer failed"),
            [],
            [Problem(path, None, None, "error", "internal_error", f"the importer failed: {exc!r}")],
        )
