"""Getting sessions into the dashboard: bundled samples, uploads, and confined folders.

* **Samples**: ``sample_transcripts/`` beside ``app.py`` (or ``LOOPSCOPE_SAMPLES``).
* **Uploads**: kept only in a private temporary folder, under generated names
  (``upload-<sha256 prefix><ext>``); the user's file name is used for display only.
* **A folder path**: only inside the allowed roots — ``LOOPSCOPE_ALLOWED_ROOTS`` (paths
  separated by ``os.pathsep``), by default the samples folder and the working directory. The
  path is resolved (symlinks included) before the check, directory symlinks are not followed
  while scanning, and a file whose real path leaves the roots is skipped.

A loaded corpus (sessions, import report, and every engine's prepared sessions) is cached with
``st.cache_resource`` under a fingerprint of the inputs (paths + sizes + mtimes, or upload
digests), so moving a slider never re-reads a file.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from loopscope import background
from loopscope.corpus import Corpus, Progress
from loopscope.corpus import build_corpus as core_build_corpus
from loopscope.model import Problem, escape_for_display
from loopscope.ui import gc_policy
from loopscope.ui.progress import new_bar, throttled

# The extensions a folder scan reads (JSON, JSON Lines, SWE-agent trajectories, inspect_ai
# logs, Markdown exports); uploads also accept zip archives.
UPLOAD_EXTENSIONS = (".json", ".jsonl", ".ndjson", ".traj", ".eval", ".md", ".zip")

SOURCE_SAMPLES = "samples"
SOURCE_UPLOAD = "upload"
SOURCE_FOLDER = "folder"
SOURCE_LABELS = {
    SOURCE_SAMPLES: "the bundled sample sessions",
    SOURCE_UPLOAD: "files from your computer",
    SOURCE_FOLDER: "a folder on the server",
}


# --------------------------------------------------------------------------- places


def samples_dir() -> Path:
    """The bundled ``sample_transcripts/`` (``LOOPSCOPE_SAMPLES`` overrides)."""
    env = os.environ.get("LOOPSCOPE_SAMPLES")
    if env:
        return Path(env).resolve()
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "sample_transcripts"
        if candidate.is_dir():
            return candidate
    return (Path.cwd() / "sample_transcripts").resolve()


def allowed_roots() -> list[Path]:
    """Where a typed folder path may point (``LOOPSCOPE_ALLOWED_ROOTS``)."""
    env = os.environ.get("LOOPSCOPE_ALLOWED_ROOTS")
    if env:
        roots = [Path(p).resolve() for p in env.split(os.pathsep) if p.strip()]
    else:
        roots = [samples_dir(), Path.cwd().resolve()]
    return list(dict.fromkeys(roots))


class PathNotAllowed(ValueError):
    """A folder path outside the allowed roots, or one that does not exist."""


def confine(path_text: str, roots: Sequence[Path] | None = None) -> Path:
    """The resolved path, if it lies inside an allowed root; raises :class:`PathNotAllowed`.

    Relative paths are taken from the working directory. The containment check runs on the
    fully resolved path (``..`` and symlinks resolved) and before any existence check, so the
    answer never tells whether a path outside the roots exists.
    """
    roots = list(roots) if roots is not None else allowed_roots()
    text = (path_text or "").strip()
    if not text:
        raise PathNotAllowed("Type a folder path.")
    if "\x00" in text:
        raise PathNotAllowed("That is not a usable path.")
    try:
        resolved = (Path.cwd() / text).resolve()
    except (OSError, RuntimeError) as exc:
        raise PathNotAllowed(f"That path cannot be resolved ({exc}).") from exc
    if not any(resolved.is_relative_to(r) for r in roots):
        allowed = ", ".join(escape_for_display(str(r)) for r in roots)
        raise PathNotAllowed(
            f"Only folders inside the allowed roots can be opened ({allowed}). "
            "Set LOOPSCOPE_ALLOWED_ROOTS to allow others."
        )
    if not resolved.exists():
        raise PathNotAllowed(f"{escape_for_display(text, 200)} does not exist.")
    return resolved


def scan_files(folder: Path, roots: Sequence[Path] | None = None) -> tuple[list[tuple[str, bool]], int]:
    """``(path, scanned)`` for every candidate session file under ``folder`` (the importer's
    folder-scan rules: sorted, hidden entries skipped, directory symlinks not followed), minus
    files whose real path leaves the allowed roots; and the number of files ignored."""
    from loopscope.formats import expand_paths

    roots = list(roots) if roots is not None else allowed_roots()
    targets, ignored = expand_paths([str(folder)])
    # The scan follows no directory symlink, so below a folder inside the roots only a file
    # that is itself a symlink can lead outside: resolve just those (resolving all 2,000 paths
    # of a large folder cost more than a re-run of both engines).
    folder_inside = _inside(folder.resolve(), roots)
    kept: list[tuple[str, bool]] = []
    for path, scanned in targets:
        if (folder_inside and not os.path.islink(path)) or _inside(Path(path).resolve(), roots):
            kept.append((path, scanned))
        else:
            ignored += 1
    return kept, ignored


def _inside(real: Path, roots: Sequence[Path]) -> bool:
    return any(real.is_relative_to(r) for r in roots)


def fingerprint_files(files: Iterable[str | Path], extra: str = "") -> str:
    """Paths + sizes + mtimes: changes when any file is added, removed or rewritten."""
    lines = [extra]
    for n, f in enumerate(files, start=1):
        if n % background.GIVE_WAY_EVERY == 0:  # (a rescan in the background: see
            background.give_way()  # _BACKGROUND_RESCAN_FROM)
        p = os.fspath(f)
        try:
            stat = os.stat(p)
            lines.append(f"{p}\0{stat.st_size}\0{stat.st_mtime_ns}\n")
        except OSError:
            lines.append(f"{p}\0missing\n")
    return hashlib.sha256("".join(lines).encode("utf-8", "surrogateescape")).hexdigest()[:24]


# --------------------------------------------------------------------------- uploads


@st.cache_resource(show_spinner=False)
def upload_dir() -> str:
    """A private temporary folder for this server process, removed at exit."""
    path = tempfile.mkdtemp(prefix="loopscope-uploads-")
    atexit.register(shutil.rmtree, path, True)
    return path


@dataclass(frozen=True, slots=True)
class StoredUpload:
    digest: str
    original_name: str
    path: str


def safe_extension(name: str) -> str:
    """The upload's extension if it is one loopscope reads, else ``.json``."""
    suffix = Path(name).suffix.lower()
    return suffix if suffix in UPLOAD_EXTENSIONS else ".json"


def store_upload(data: bytes, original_name: str, folder: str | None = None) -> StoredUpload:
    """Write ``data`` into the upload folder under a generated name (content-addressed)."""
    folder = folder or upload_dir()
    digest = hashlib.sha256(data).hexdigest()
    name = f"upload-{digest[:16]}{safe_extension(original_name)}"
    path = Path(folder) / name
    if not path.exists():
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".part-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    return StoredUpload(digest, original_name, str(path))


# --------------------------------------------------------------------------- the corpus


class _CorpusStore:
    """A small LRU of loaded corpora shared by every browser session of the server."""

    def __init__(self, size: int = 4) -> None:
        self.size = size
        self.items: OrderedDict[str, Corpus] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: str) -> Corpus | None:
        with self.lock:
            value = self.items.get(key)
            if value is not None:
                self.items.move_to_end(key)
            return value

    def put(self, key: str, value: Corpus) -> None:
        with self.lock:
            self.items[key] = value
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)


@st.cache_resource(show_spinner=False)
def corpus_store() -> _CorpusStore:
    return _CorpusStore()


def build_corpus(files: Sequence[tuple[str, bool]], **kwargs: Any) -> Corpus:
    """:func:`loopscope.corpus.build_corpus`, with a large corpus moved out of the cyclic GC's
    way before engines prepare it (otherwise every collection during prepare walks it all), and
    full collections moved to idle time (:func:`gc_policy.calm_for_large_corpus`)."""
    corpus = core_build_corpus(files, on_large=gc_policy.calm_for_large_corpus,
                               snapshot_in_background=True, **kwargs)
    corpus.read_ahead()  # (the rows of the first chart need every engine's table)
    return corpus


# --------------------------------------------------------------------------- entry points


_SCAN_TTL_SECONDS = 10.0
"""How long a folder's scan and fingerprint are trusted: changes to the files show up at the
first interaction after this."""
_BACKGROUND_RESCAN_FROM = 2_000
"""From this many files, an expired scan is served once more while a thread scans again
(a rescan of a large folder is a noticeable part of a slider move): changes then show up at the
first interaction after that scan. The thread scans as idle work (:func:`gc_policy.as_idle_work`):
once the user pauses, and giving way to the runs of a user who acts meanwhile — a scan of
100,000 files is most of a second of Python, which a slider move beside it waited for."""
_recent_scans: dict[tuple[str, str, tuple[Path, ...]], tuple[float, Any]] = {}
_rescanning: set[tuple[str, str, tuple[Path, ...]]] = set()
_scan_lock = threading.Lock()


def _folder_snapshot(folder: Path, origin: str,
                     roots: list[Path]) -> tuple[list[tuple[str, bool]], int, str]:
    """``scan_files`` and the fingerprint of what it found, reused for a few seconds.

    Every slider move reruns the script; walking and ``stat``-ing a 2,000-file folder each time
    cost more than re-running both engines over it, for a folder that almost never changes
    between two moves."""
    key = (str(folder), origin, tuple(roots))
    now = time.monotonic()
    with _scan_lock:
        hit = _recent_scans.get(key)
    if hit is not None and now - hit[0] < _SCAN_TTL_SECONDS:
        return hit[1]
    if hit is not None and len(hit[1][0]) >= _BACKGROUND_RESCAN_FROM:
        with _scan_lock:
            start = key not in _rescanning
            _rescanning.add(key)
        if start:
            rescan = functools.partial(_rescan, folder, origin, roots, key)
            threading.Thread(target=gc_policy.as_idle_work, args=(rescan,), daemon=True,
                             name="loopscope-rescan").start()
        return hit[1]
    return _rescan(folder, origin, roots, key)


def _rescan(folder: Path, origin: str, roots: list[Path],
            key: tuple[str, str, tuple[Path, ...]]) -> tuple[list[tuple[str, bool]], int, str]:
    try:
        now = time.monotonic()
        targets, ignored = scan_files(folder, roots)
        # The labels sidecar is not part of the fingerprint: a label saved from the app must
        # not re-import and re-prepare every session; a cache hit re-reads only a changed
        # sidecar.
        fp = fingerprint_files([p for p, _ in targets], extra=f"{origin}:{folder}")
        with _scan_lock:
            _recent_scans.clear()
            _recent_scans[key] = (now, (targets, ignored, fp))
        return targets, ignored, fp
    finally:
        with _scan_lock:
            _rescanning.discard(key)


def load_folder(folder: Path, origin: str, progress: Progress | None = None) -> Corpus:
    targets, ignored, fp = _folder_snapshot(folder, origin, allowed_roots())
    store = corpus_store()
    cached = store.get(fp)
    if cached is not None:
        cached.refresh_labels_if_changed()
        return cached
    corpus = build_corpus(
        [(p, not scanned) for p, scanned in targets],
        fingerprint=fp,
        origin=origin,
        root=str(folder if folder.is_dir() else folder.parent),
        ignored_files=ignored,
        progress=progress,
    )
    store.put(fp, corpus)
    return corpus


def load_uploads(uploads: Sequence[StoredUpload], progress: Progress | None = None) -> Corpus:
    fp = hashlib.sha256("\n".join(sorted(u.digest for u in uploads)).encode()).hexdigest()[:24]
    store = corpus_store()
    cached = store.get(fp)
    if cached is not None:
        return cached
    ordered = sorted(uploads, key=lambda u: u.path)
    corpus = build_corpus(
        [(u.path, True) for u in ordered],
        fingerprint=fp,
        origin=SOURCE_UPLOAD,
        root=None,
        display_names={u.path: f"{u.original_name} (uploaded)" for u in ordered},
        progress=progress,
    )
    store.put(fp, corpus)
    return corpus


SOURCE_KEY = "source"
FOLDER_KEY = "folder"
UPLOADS_KEY = "_loopscope_uploads"
DATA_ERROR_KEY = "_loopscope_data_error"
"""A problem with the chosen data source, in plain words (shown in the main area)."""
DATA_NOTE_KEY = "_loopscope_data_note"
"""Something the user should know about the data source that is not a problem."""


def samples_allowed(roots: Sequence[Path] | None = None) -> bool:
    """Whether the bundled samples lie inside the allowed roots (a server that sets
    ``LOOPSCOPE_ALLOWED_ROOTS`` elsewhere confines them away: the samples fallback is then
    empty, and the page says so)."""
    roots = list(roots) if roots is not None else allowed_roots()
    return _inside(samples_dir(), roots)


def samples_fallback_note() -> str | None:
    """Why the samples shown are empty, when the allowed roots leave them out."""
    if samples_allowed():
        return None
    allowed = ", ".join(escape_for_display(str(r), 120) for r in allowed_roots())
    return ("The bundled sample sessions lie outside the folders this server may read "
            f"(LOOPSCOPE_ALLOWED_ROOTS: {allowed}), so none are shown. Upload files, or open "
            "a folder inside those roots, from the sidebar.")


def load_current_corpus(show_progress: bool = True) -> Corpus:
    """The corpus for the data source chosen in the sidebar (samples when nothing else works)."""
    source = st.session_state.get(SOURCE_KEY, SOURCE_SAMPLES)
    st.session_state[DATA_ERROR_KEY] = None
    st.session_state[DATA_NOTE_KEY] = None
    bar = None

    def draw(fraction: float, text: str) -> None:
        nonlocal bar
        if not show_progress:
            return
        if bar is None:
            bar = new_bar(text)
        bar.progress(min(max(fraction, 0.0), 1.0), text=text)

    progress = throttled(draw)

    try:
        if source == SOURCE_UPLOAD:
            uploads: list[StoredUpload] = list(st.session_state.get(UPLOADS_KEY, []))
            if uploads:
                return load_uploads(uploads, progress)
            st.session_state[DATA_NOTE_KEY] = ("No files uploaded yet: add session files in "
                                               "the sidebar. Until then, the bundled samples "
                                               "are shown.")
        elif source == SOURCE_FOLDER:
            try:
                folder = confine(str(st.session_state.get(FOLDER_KEY, "")))
            except PathNotAllowed as exc:
                st.session_state[DATA_ERROR_KEY] = (
                    f"The folder cannot be opened: {exc} The bundled samples are shown "
                    "instead.")
            else:
                return load_folder(folder, SOURCE_FOLDER, progress)
        if not samples_allowed():
            note = samples_fallback_note()
            previous = st.session_state.get(DATA_ERROR_KEY)
            st.session_state[DATA_ERROR_KEY] = (
                f"{previous.removesuffix(' The bundled samples are shown instead.')} {note}"
                if previous else note)
        return load_folder(samples_dir(), SOURCE_SAMPLES, progress)
    finally:
        if bar is not None:
            bar.empty()


def problems_sorted(problems: Iterable[Problem]) -> list[Problem]:
    """Errors first, then warnings, then infos; by source and line within each."""
    rank = {"error": 0, "warning": 1, "info": 2}
    return sorted(problems, key=lambda p: (rank.get(p.severity, 3), p.source, p.line or 0))


# --------------------------------------------------------------------------- the on-disk cache


def render_cache_notice(corpus: Corpus) -> None:
    """Say how the corpus was loaded (how much from the on-disk cache of prepared sessions) and
    offer to clear that cache (safe: the next load prepares the sessions again)."""
    from loopscope import cache

    if not cache.active() or not corpus.report.files:
        return
    files = len(corpus.report.files)
    st.caption(f"Loaded in {corpus.load_seconds:.1f} s · {corpus.cached_files:,} of {files:,} "
               "files from the cache of prepared sessions.")
    st.button("Clear the cache", key="clear_prepared_cache", on_click=_clear_cache,
              help=f"Deletes the prepared sessions kept in {cache.cache_dir()} (safe: the next "
                   "load of a folder prepares its sessions again).")
    done = st.session_state.pop("_loopscope_cache_cleared", None)
    if done:
        st.caption(done)


def _clear_cache() -> None:
    from loopscope import cache

    entries, size = cache.clear()
    st.session_state["_loopscope_cache_cleared"] = (
        f"Removed {entries:,} cached entries ({size / 1e6:.1f} MB).")
