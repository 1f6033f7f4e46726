"""The on-disk cache of prepared sessions and ingest on several cores: the same corpus and the
same replays whichever way it was loaded; a damaged cache entry is ignored and rebuilt."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from loopscope import cache
from loopscope.cli import main
from loopscope.corpus import build_corpus, ingestion
from loopscope.corpus import loaded as loaded_mod
from loopscope.corpus import sessions as sessions_mod
from loopscope.corpus import snapshot as snapshot_mod
from loopscope.corpus.ingestion import (
    PART_MAX_FILES,
    PARTS_PER_WORKER,
    ingest,
    part_size,
    time_left,
)
from loopscope.engines import get_engine
from loopscope.formats import expand_paths, load_paths

SAMPLES = Path(__file__).resolve().parents[1] / "sample_transcripts"


def _join_snapshot_writers() -> None:
    import threading

    for thread in threading.enumerate():
        if thread.name == "loopscope-snapshot":
            thread.join()


@pytest.fixture()
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOOPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("LOOPSCOPE_CACHE", raising=False)
    return tmp_path / "cache" / "prepared"


def _files(folder: Path) -> list[tuple[str, bool]]:
    targets, _ = expand_paths([str(folder)])
    return [(p, not scanned) for p, scanned in targets]


def _replays(corpus: Any) -> dict[str, list[Any]]:
    out = {}
    for name in ("gglib", "openclaw"):
        eng = get_engine(name)
        config = eng.default_config()
        out[name] = [r.to_json() for r in eng.run_many(corpus.prepared(get_engine(name)), config)]
    return out


def _corpus(folder: Path, **kwargs: Any) -> Any:
    return build_corpus(_files(folder), fingerprint="t", origin="folder", root=str(folder),
                        **kwargs)


def test_cached_start_equals_a_fresh_one_and_the_reference(cache_dir: Path) -> None:
    fresh = _corpus(SAMPLES)
    assert fresh.cached_files == 0 and cache.stats()[0] > 0
    again = _corpus(SAMPLES)
    assert again.cached_files == len(again.report.files)
    assert again.heads == fresh.heads
    assert _replays(again) == _replays(fresh)
    # ... and equal to replaying the sessions themselves, read again from their files.
    sessions = load_paths([str(SAMPLES)]).sessions
    assert list(again.sessions) == sessions
    for name, replays in _replays(again).items():
        eng = get_engine(name)
        assert replays == [eng.replay(s, eng.default_config()).to_json() for s in sessions]


def test_a_rewritten_file_is_never_served_from_the_cache(cache_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "s"
    shutil.copytree(SAMPLES, folder)
    _corpus(folder)
    victim = sorted(folder.glob("*.json*"))[0]
    text = victim.read_text()
    victim.write_text(text + "\n")  # new size and mtime: a new fingerprint
    again = _corpus(folder)  # (the folder's snapshot misses: one file changed)
    assert again.cached_files == len(again.report.files) - 1


def test_worker_processes_give_the_same_corpus(cache_dir: Path) -> None:
    files = _files(SAMPLES) * 6  # enough files for the pool
    wanted = [(get_engine("gglib"), None), (get_engine("openclaw"), None)]
    serial = ingest(files, wanted, workers=1)
    pooled = ingest(files, wanted, workers=2)
    assert [r.heads for r in pooled.files] == [r.heads for r in serial.files]
    assert [r.problems for r in pooled.files] == [r.problems for r in serial.files]
    assert set(serial.prepared) == set(pooled.prepared) == {("gglib", "latest"),
                                                            ("openclaw", "configurable")}
    for key, table in serial.prepared.items():
        eng = get_engine(key[0])
        assert len(table) == sum(len(r.heads) for r in serial.files)
        assert [eng.encode_prepared(p) for p in pooled.prepared[key]] == \
            [eng.encode_prepared(p) for p in table]


def test_the_pool_says_how_long_is_left(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import itertools

    # A clock 10 s further on every time it is read: the pool starts at 0 s, its first part
    # arrives at 10 s, the next at 20 s…
    ticks = itertools.count(0, 10)
    monkeypatch.setattr(ingestion, "_clock", lambda: float(next(ticks)))
    files = _files(SAMPLES) * 6
    seen: list[tuple[float, str]] = []
    ingest(files, [(get_engine("gglib"), None)], workers=2, progress=lambda f, t: seen.append((f, t)))
    n = len(files)
    assert seen and seen[-1][0] == 1.0
    assert seen[-1][1] == f"Read {n:,} of {n:,} files on 2 cores"  # (done: nothing left)
    first_done = round(seen[0][0] * n)
    assert first_done < n
    # 10 s for the first part: the rest at that pace.
    assert seen[0][1] == (f"Read {first_done:,} of {n:,} files on 2 cores"
                          + time_left(10.0, first_done, n))
    assert "left" in seen[0][1]


@pytest.mark.parametrize(("elapsed", "done", "total", "text"), [
    (10.0, 100, 1000, " · about 90 s left"),
    (10.0, 500, 1000, " · about 10 s left"),
    (10.0, 600, 1000, " · a few seconds left"),
    (30.0, 100, 1000, " · about 4 min left"),
    (12.0, 250, 1000, " · about 35 s left"),  # 36 s, to the nearest 5
    (1.0, 500, 1000, ""),  # the workers are still starting
    (10.0, 20, 1000, ""),  # too little done to say
    (10.0, 1000, 1000, ""),  # done
    (10.0, 0, 1000, ""),
])
def test_time_left(elapsed: float, done: int, total: int, text: str) -> None:
    assert time_left(elapsed, done, total) == text


def test_time_left_never_grows_as_the_files_come_in() -> None:
    # At one pace (0.01 s a file) the estimate only ever falls.
    total = 20_000
    shown = []
    for done in range(600, total, 250):
        text = time_left(done * 0.01, done, total)
        if "min" in text:
            shown.append(60 * int(text.split("about ")[1].split(" min")[0]))
        elif " s left" in text:
            shown.append(int(text.split("about ")[1].split(" s")[0]))
        else:
            shown.append(5 if text else 0)
    assert shown == sorted(shown, reverse=True) and shown[0] >= 180 and shown[-1] <= 5


@pytest.mark.parametrize("workers", [1, 2, 3, 8])
def test_parts_are_large_for_many_files_and_many_per_worker_for_few(workers: int) -> None:
    assert part_size(20_000, workers) == PART_MAX_FILES == 64
    for n in [*range(1, 200), 1_000, 2_000, 5_000]:
        size = part_size(n, workers)
        assert 1 <= size <= PART_MAX_FILES
        # Below the largest, the smallest parts that make at most PARTS_PER_WORKER per worker.
        if size < PART_MAX_FILES:
            assert -(-n // size) <= workers * PARTS_PER_WORKER
            assert size == 1 or -(-n // (size - 1)) > workers * PARTS_PER_WORKER


def test_loading_a_corpus_turns_numpys_huge_pages_off(cache_dir: Path) -> None:
    import numpy as np

    switch = np._core.multiarray  # (numpy 2; the bulk helper finds numpy 1's too)
    switch._set_madvise_hugepage(True)
    try:
        _corpus(SAMPLES)
        assert switch._get_madvise_hugepage() is False
    finally:
        switch._set_madvise_hugepage(True)


def test_cache_command_clears(cache_dir: Path) -> None:
    _corpus(SAMPLES)
    runner = CliRunner()
    entries, size = cache.stats()
    assert entries >= 1
    info = runner.invoke(main, ["cache", "info"])
    named = f"{entries} entry" if entries == 1 else f"{entries} entries"
    assert info.exit_code == 0 and f": {named}, {size / 1e6:.1f} MB; cache on" in info.output
    cleared = runner.invoke(main, ["cache", "clear"])
    # (the same count and size as info gave: the snapshot's pointer files are not entries)
    assert cleared.exit_code == 0 and f"removed {named} ({size / 1e6:.1f} MB)" in cleared.output
    assert cache.stats() == (0, 0)
    assert not any(p.is_file() for p in cache.cache_dir().rglob("*"))


def test_cache_off(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPSCOPE_CACHE", "off")
    _corpus(SAMPLES)
    assert cache.stats() == (0, 0)


def test_replay_workers_output_is_identical() -> None:
    runner = CliRunner()
    for engine in ("gglib", "openclaw"):
        one = runner.invoke(main, ["replay", str(SAMPLES), "--engine", engine, "--json",
                                   "--workers", "1"])
        two = runner.invoke(main, ["replay", str(SAMPLES), "--engine", engine, "--json",
                                   "--workers", "2"])
        assert one.exit_code == two.exit_code == 0
        assert one.stdout_bytes == two.stdout_bytes and one.stdout_bytes.count(b"\n") > 5


def test_a_small_corpus_keeps_its_sessions_once_read_again(tmp_path: Path) -> None:
    """Pages that walk every session re-read each file once in a small corpus, not on every
    rerun; a large one keeps only the last few files."""

    src = Path(__file__).resolve().parents[1] / "sample_transcripts"
    files = [(str(p), True) for p in sorted(src.glob("*.json*"))]
    c = build_corpus(files, fingerprint="keep", origin="folder", root=str(src), workers=1)
    reads = []
    original = sessions_mod.reload

    def counting(path: str, explicit: bool, heads: Any) -> Any:
        reads.append(path)
        return original(path, explicit, heads)

    sessions_mod.reload = counting  # type: ignore[assignment]
    try:
        first = [s.source for s in c.sessions]
        again = [s.source for s in c.sessions]
    finally:
        sessions_mod.reload = original  # type: ignore[assignment]
    assert first == again == c.sources
    assert len(reads) == len({path for path, _ in files if loaded_mod.file_stamp(path)})


def test_a_second_start_reads_the_corpus_snapshot_only(cache_dir: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from loopscope.engines.table import PreparedTable

    fresh = _corpus(SAMPLES)
    snapshots = sorted(cache_dir.glob("corpus/*.npz"))
    assert len(snapshots) == 1
    ingested: list[Any] = []
    original = ingestion.ingest
    monkeypatch.setattr(ingestion, "ingest",
                        lambda files, *a, **k: ingested.append(files) or original(files, *a, **k))
    again = _corpus(SAMPLES)
    assert ingested == []  # one file read, nothing imported
    assert again.cached_files == len(again.report.files)
    assert again.heads == fresh.heads
    assert [f.problems for f in again.report.files] == [f.problems for f in fresh.report.files]
    assert [(f.calls_seen, f.calls_imported, f.calls_set_aside) for f in again.report.files] == [
        (f.calls_seen, f.calls_imported, f.calls_set_aside) for f in fresh.report.files]
    assert all(isinstance(again.prepared(get_engine(name)), PreparedTable) for name in ("gglib", "openclaw"))
    assert _replays(again) == _replays(fresh)
    # Another set of engines is another snapshot.
    _corpus(SAMPLES, prepare=[(get_engine("gglib"), None)])
    assert len(list(cache_dir.glob("corpus/*.npz"))) == 2


def _everything(c: Any) -> dict[str, Any]:
    """All a corpus says: files and their outcome, sessions, every engine's prepared data and
    replays under its default configuration (and another one)."""
    from loopscope.engines import engine_names

    out: dict[str, Any] = {
        "files": [(f.path, f.detection, f.problems, f.calls_seen, f.calls_imported,
                   f.calls_set_aside) for f in c.report.files],
        "heads": c.heads,
    }
    for name in engine_names():
        eng = get_engine(name)
        config = eng.default_config()
        out[name] = [eng.encode_prepared(p) for p in c.prepared(get_engine(name))]
        kept = c.run_many(get_engine(name), config)
        out[name + " runs"] = (kept.refusal_counts.tolist(), kept.warning_counts.tolist(),
                               kept.first_refusals(), [r.to_json() for r in kept])
    other = get_engine("openclaw").resolve_config(None, [("historySize", "7"),
                                                         ("warningThreshold", "2")]).config
    out["openclaw other"] = [r.to_json() for r in c.run_many(get_engine("openclaw"), other)]
    return out


def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every string pool of a snapshot read piece by piece, in pieces of 64 bytes (the
    samples' pools are smaller than a real corpus's first piece)."""
    monkeypatch.setattr(cache, "PIECEWISE_FROM_BYTES", 1)
    monkeypatch.setattr(cache, "CHUNK_BYTES", 64)
    monkeypatch.setattr(cache, "_KEEP_CHUNKS", 4)  # (a piece read again is read again)


def _outcomes(c: Any) -> dict[str, Any]:
    """:func:`_everything` but the prepared objects (one prepared again session by session
    carries fewer memoised results than one read from a table)."""
    from loopscope.engines import engine_names

    return {k: v for k, v in _everything(c).items() if k not in engine_names()}


@pytest.mark.parametrize("pieces", [False, True])
def test_a_changed_folder_reuses_what_did_not_change(cache_dir: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      pieces: bool) -> None:
    """Files added, removed and rewritten: only those are imported again; the corpus equals a
    corpus loaded from scratch (also when the snapshot's string pools are read piece by
    piece: they are then joined whole, checked)."""

    if pieces:
        small_pieces(monkeypatch)

    folder = tmp_path / "s"
    shutil.copytree(SAMPLES, folder)
    _corpus(folder)
    victims = sorted(folder.glob("*.json*"))
    victims[0].unlink()
    victims[3].write_text(victims[3].read_text() + "\n")
    shutil.copy(victims[5], folder / "zz_added_copy.json")
    ingested: list[Any] = []
    original = ingestion.ingest
    monkeypatch.setattr(ingestion, "ingest",
                        lambda files, *a, **k: ingested.append(list(files)) or original(
                            files, *a, **k))
    changed = _corpus(folder)
    assert [sorted(Path(p).name for p, _ in files) for files in ingested] == [
        sorted([victims[3].name, "zz_added_copy.json"])]
    assert changed.cached_files == len(changed.report.files) - 2
    with monkeypatch.context() as off:
        off.setattr(cache, "active", lambda: False)
        want = _everything(_corpus(folder))
    assert _everything(changed) == want
    # ... and the next start reads the new snapshot only.
    ingested.clear()
    assert _everything(_corpus(folder)) == want and ingested == []


def test_a_damaged_last_snapshot_is_not_reused(cache_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "s"
    shutil.copytree(SAMPLES, folder)
    fresh = _corpus(folder)
    (snapshot,) = cache_dir.glob("corpus/*.npz")
    data = snapshot.read_bytes()
    snapshot.write_bytes(data[: len(data) // 3])
    (folder / "zz_new.json").write_text((SAMPLES / sorted(p.name for p in SAMPLES.glob(
        "*.json"))[0]).read_text())
    again = _corpus(folder)
    assert again.cached_files == 0 and len(again.report.files) == len(fresh.report.files) + 1
    assert not snapshot.exists()


def _snapshot_of(cache_dir: Path, folder: Path) -> Path:
    """The one snapshot of ``folder``'s files in the cache. (A test that damages a snapshot
    loads a copy of the samples: the dashboard's tests leave scripts loading the samples
    themselves, whose snapshot, written into whichever cache is set then, has their name.)"""
    found = [p for p in cache_dir.glob("corpus/*.npz")
             if (kept := cache.open_corpus(p.stem)) is not None
             and kept.index["files"][0][0].startswith(str(folder))]
    assert len(found) == 1
    return found[0]


def _flip_member(snapshot: Path, prefix: str) -> str:
    """Flip one bit in the middle of the largest array of the snapshot whose name starts
    with ``prefix``; that array's name."""
    import zipfile

    with zipfile.ZipFile(snapshot) as archive:
        member = max((i for i in archive.infolist() if i.filename.startswith(prefix)),
                     key=lambda i: i.file_size)
    data = bytearray(snapshot.read_bytes())
    header = member.header_offset
    start = header + 30 + int.from_bytes(data[header + 26:header + 28], "little") + int.from_bytes(
        data[header + 28:header + 30], "little")
    data[start + member.file_size - max(member.file_size // 4, 1)] ^= 1
    snapshot.write_bytes(bytes(data))
    return member.filename


@pytest.mark.parametrize("damage", ["truncated", "flipped index", "flipped re-run", "garbage",
                                    "another key"])
def test_a_damaged_snapshot_is_ignored_and_rebuilt(cache_dir: Path, tmp_path: Path,
                                                   damage: str) -> None:
    folder = tmp_path / "s"  # (a folder of its own: see _snapshot_of)
    shutil.copytree(SAMPLES, folder)
    want = _everything(_corpus(folder))
    snapshot = _snapshot_of(cache_dir, folder)
    data = snapshot.read_bytes()
    if damage == "truncated":
        snapshot.write_bytes(data[: len(data) // 2])
    elif damage == "flipped index":  # one bit (the checksum catches it)
        _flip_member(snapshot, "index")
    elif damage == "flipped re-run":
        _flip_member(snapshot, "r0.")
    elif damage == "garbage":
        snapshot.write_bytes(b"PK\x03\x04 not a zip at all")
    else:  # a valid snapshot of other files, under this name: never trusted
        other = tmp_path / "other"
        other.mkdir()
        shutil.copy(sorted(SAMPLES.glob("*.json*"))[0], other)
        _corpus(other)
        shutil.copyfile(_snapshot_of(cache_dir, other), snapshot)
    again = _corpus(folder)
    assert again.cached_files == 0
    assert _everything(again) == want
    assert snapshot.is_file() and snapshot.read_bytes() != b"PK\x03\x04 not a zip at all"
    assert cache.read_corpus(snapshot.stem) is not None  # written again, and sound


def test_a_snapshot_reads_its_arrays_as_numpy_writes_them_in_one_read_each(
        cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every array of a snapshot read back equals ``numpy.load``'s (values, type, writable),
    without ``numpy.load``'s read through the zip (a few KiB at a time, its checksum updated in
    Python with the interpreter held: a large corpus's tables are gigabytes)."""
    import numpy as np

    folder = tmp_path / "s"
    shutil.copytree(SAMPLES, folder)
    _corpus(folder)
    snapshot = _snapshot_of(cache_dir, folder)
    kept = cache.open_corpus(snapshot.stem)
    assert kept is not None
    through_zip: list[str] = []
    original = np.lib.npyio.NpzFile.__getitem__
    monkeypatch.setattr(np.lib.npyio.NpzFile, "__getitem__",
                        lambda self, key: through_zip.append(key) or original(self, key))
    found = kept.read(sorted(kept.names))
    assert through_zip == []
    with np.load(snapshot, allow_pickle=False) as archive:
        dtypes = set()
        for name, value in found.items():
            if isinstance(value, cache.KeptBytes):  # (a pool read piecewise: its bytes)
                value = np.frombuffer(value.read(0, len(value)), dtype=np.uint8)
            want = original(archive, name)
            assert value.dtype == want.dtype and np.array_equal(value, want), name
            assert value.flags.writeable or isinstance(found[name], cache.KeptBytes)
            dtypes.add(value.dtype.kind)
    assert {"b", "i", "u"} <= dtypes


def test_a_flipped_bit_in_an_array_header_is_found(cache_dir: Path, tmp_path: Path) -> None:
    """The check covers a member's npy header as well as its bytes (zip's CRC-32 covers
    both)."""
    import zipfile

    folder = tmp_path / "s"
    shutil.copytree(SAMPLES, folder)
    _corpus(folder)
    snapshot = _snapshot_of(cache_dir, folder)
    with zipfile.ZipFile(snapshot) as archive:
        member = next(i for i in archive.infolist() if i.filename.startswith("t0."))
    data = bytearray(snapshot.read_bytes())
    start = member.header_offset + 30 + int.from_bytes(
        data[member.header_offset + 26:member.header_offset + 28], "little") + int.from_bytes(
        data[member.header_offset + 28:member.header_offset + 30], "little")
    padding = data.index(b"  ", start)  # (the header's padding: still a valid header)
    assert padding < start + 128
    data[padding] = ord("\t")
    snapshot.write_bytes(bytes(data))
    kept = cache.open_corpus(snapshot.stem)
    assert kept is not None
    with pytest.raises(cache.DamagedSnapshot):
        kept.read([member.filename.removesuffix(".npy")])
    assert not snapshot.exists()


@pytest.mark.parametrize("table", ["t0.", "t1.", "t2.", "t3."])
@pytest.mark.parametrize("many_files", [False, True])
def test_a_table_found_damaged_when_first_used_is_prepared_again(
        cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: str,
        many_files: bool) -> None:
    """A snapshot's tables are read when their engine is first used: one found damaged then
    is prepared again from the files (the corpus the same: from many files on every core, as
    a table; from a few, session by session), the snapshot deleted, and the next start
    writes a sound one."""
    from loopscope.engines import engine_names
    from loopscope.engines.table import PreparedTable

    if many_files:
        monkeypatch.setattr(ingestion, "PARALLEL_MIN_FILES", 4)  # (the samples: 13 files)
    folder = tmp_path / "s"  # (a folder of its own: see _snapshot_of)
    shutil.copytree(SAMPLES, folder)
    want = _outcomes(_corpus(folder))
    snapshot = _snapshot_of(cache_dir, folder)
    _flip_member(snapshot, table)
    again = _corpus(folder)
    assert again.cached_files == len(again.report.files)  # (opened: index and re-runs sound)
    assert _outcomes(again) == want
    assert not snapshot.exists()
    damaged = snapshot_mod.snapshot_specs(ingestion.every_engine())[int(table[1])].engine
    for name in engine_names():
        assert isinstance(again.prepared(get_engine(name)), PreparedTable) == (many_files or name != damaged)
    _join_snapshot_writers()  # (a snapshot written meanwhile)
    third = _corpus(folder)
    assert third.cached_files == 0 and _outcomes(third) == want
    assert cache.read_corpus(snapshot.stem) is not None


def test_a_reopened_corpus_reads_each_table_when_its_engine_is_first_used(
        cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first chart of a reopened corpus (every engine's re-run under its default
    configuration, the counts and first refusals) reads no table of the snapshot; a replay
    read, or a re-run under another configuration, reads that engine's table only."""
    from loopscope.engines import engine_names
    from loopscope.engines.table import PreparedTable

    fresh = _corpus(SAMPLES)
    read: list[str] = []
    original = cache.KeptCorpus.read
    monkeypatch.setattr(cache.KeptCorpus, "read", lambda self, names: original(
        self, [n for n in names if read.append(n) or True]))
    again = _corpus(SAMPLES)
    assert again.cached_files == len(again.report.files)
    for name in engine_names():
        kept = again.run_many(get_engine(name), get_engine(name).default_config())
        assert kept.first_refusals() == fresh.run_many(
            get_engine(name), get_engine(name).default_config()).first_refusals()
    assert read and all(n.startswith("r") for n in read)
    read.clear()
    gglib = get_engine("gglib")
    replays = again.run_many(get_engine("gglib"), gglib.default_config())
    assert replays[0].to_json() == fresh.run_many(get_engine("gglib"), gglib.default_config())[0].to_json()
    assert read and {n.split(".")[0] for n in read} == {"t0"}
    assert isinstance(again.prepared(get_engine("gglib")), PreparedTable)
    read.clear()
    other = get_engine("openclaw").resolve_config(None, [("warningThreshold", "3")]).config
    assert [r.to_json() for r in again.run_many(get_engine("openclaw"), other)] == [
        r.to_json() for r in fresh.run_many(get_engine("openclaw"), other)]
    assert read and {n.split(".")[0] for n in read} == {"t1"}


def test_snapshot_of_a_changed_folder_is_never_used(cache_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "s"
    shutil.copytree(SAMPLES, folder)
    first = _corpus(folder)
    victim = sorted(folder.glob("*.json*"))[0]
    victim.unlink()
    fewer = _corpus(folder)
    assert len(fewer.report.files) == len(first.report.files) - 1
    assert all(f.path != str(victim) for f in fewer.report.files)
    assert len(list(cache_dir.glob("corpus/*.npz"))) == 2


@pytest.mark.parametrize("workers", [1, 2])
def test_the_re_runs_made_while_loading_equal_a_fresh_re_run(cache_dir: Path,
                                                             workers: int) -> None:
    """The default configuration's re-run comes with the corpus (made by the workers, kept in
    the snapshot): equal to running every engine over the prepared sessions, and each replay
    equal to the reference replay of the session."""
    from loopscope.engines import engine_names

    files = _files(SAMPLES) * (1 if workers == 1 else 6)
    sessions = [s for path, explicit in files
                for s in load_paths([path]).sessions] if workers == 1 else None
    for attempt in ("fresh", "snapshot"):
        c = build_corpus(files, fingerprint="t", origin="folder", root=str(SAMPLES),
                         workers=workers)
        assert (c.cached_files == len(files)) == (attempt == "snapshot")
        for name in engine_names():
            eng = get_engine(name)
            config = eng.default_config()
            kept = c.run_many(get_engine(name), config)
            assert (name, repr(config)) in c._runs
            fresh = eng.run_many(c.prepared(get_engine(name)), config)
            assert kept.refusal_counts.tolist() == fresh.refusal_counts.tolist()
            assert kept.warning_counts.tolist() == fresh.warning_counts.tolist()
            assert kept.first_refusals() == fresh.first_refusals()
            if sessions is not None:
                assert [r.to_json() for r in kept] == [
                    eng.replay(s, config).to_json() for s in sessions]
        other = get_engine("gglib").resolve_config(None, [("max_repeated_batch_steps", "5")])
        assert ("gglib", repr(other.config)) not in c._runs  # run when asked
        assert c.run_many(get_engine("gglib"), other.config).refusal_counts.tolist() == get_engine(
            "gglib").run_many(c.prepared(get_engine("gglib")), other.config).refusal_counts.tolist()


def test_warm_derives_the_first_re_runs_arrays_once(cache_dir: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """``Corpus.warm`` builds what gglib's and OpenClaw's first re-run under a new
    configuration derive from the whole corpus (the dashboard does it in idle time); the
    replays are the same after it, and a second warm does nothing."""
    corpus = _corpus(SAMPLES)
    moved = {"gglib": [("max_repeated_batch_steps", "3")], "openclaw": [("warningThreshold", "3")]}
    for name, pairs in moved.items():
        eng = get_engine(name)
        table = corpus.prepared(get_engine(name))
        assert (name, "pack") not in table.derived  # (the default re-run came with the load)
        corpus.warm(get_engine(name))
        pack = table.derived[(name, "pack")]
        corpus.warm(get_engine(name))
        assert table.derived[(name, "pack")] is pack
        config = eng.resolve_config(None, pairs).config
        assert [r.to_json() for r in corpus.run_many(get_engine(name), config)] == [
            eng.replay(s, config).to_json() for s in corpus.sessions]
    corpus.warm(get_engine("openclaw"), "2026.9.6")  # a version not prepared: warming never prepares
    assert not corpus.is_prepared(get_engine("openclaw"), "2026.9.6")
    runs: list[Any] = []
    for name in ("openhands", "gemini-cli"):  # run session by session: nothing to derive
        monkeypatch.setattr(get_engine(name), "run", lambda *a: runs.append(a))
        corpus.warm(get_engine(name))
    assert runs == []


def test_another_release_is_prepared_like_the_corpus_was_loaded(
        cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A release the corpus was not loaded with (the Upgrade page's B) is prepared as the
    corpus was loaded — every file imported again on every core, kept in the on-disk cache —
    not session by session in this process: the same prepared sessions, as a table; a second
    start reads it from the cache; a file that no longer holds its sessions is not trusted."""
    from loopscope.engines.table import PreparedTable

    folder = tmp_path / "s"
    shutil.copytree(SAMPLES, folder)
    monkeypatch.setattr(ingestion, "PARALLEL_MIN_FILES", 4)  # (the samples: 13 files)
    calls: list[Any] = []
    original = ingestion.ingest
    monkeypatch.setattr(ingestion, "ingest",
                        lambda files, wanted, **k: calls.append(wanted) or original(
                            files, wanted, **k))
    eng = get_engine("openclaw")
    old, new = eng.versions[0], eng.versions[-1]
    assert eng.prepare_key(old) != eng.prepare_key(new)
    loaded = _corpus(folder, prepare=[(get_engine("openclaw"), old)])
    assert calls == [[(get_engine("openclaw"), old)]]
    table = loaded.prepared(get_engine("openclaw"), new)
    assert calls[-1] == [(get_engine("openclaw"), new)] and isinstance(table, PreparedTable)
    sessions = load_paths([str(folder)]).sessions
    assert [eng.encode_prepared(p) for p in table] == [
        eng.encode_prepared(eng.prepare(s, new)) for s in sessions]
    config = eng.default_config(new)
    assert [r.to_json() for r in loaded.run_many(get_engine("openclaw"), config)] == [
        eng.replay(s, config).to_json() for s in sessions]
    for thread in __import__("threading").enumerate():  # (the snapshot, written meanwhile)
        if thread.name == "loopscope-snapshot":
            thread.join()
    calls.clear()
    again = _corpus(folder, prepare=[(get_engine("openclaw"), old)])
    assert [eng.encode_prepared(p) for p in again.prepared(get_engine("openclaw"), new)] == [
        eng.encode_prepared(p) for p in table]
    assert calls == []  # both read from the cache
    # A file rewritten with fewer sessions since the corpus was loaded: not trusted (the
    # sessions are then prepared one by one, which says what changed).
    third = _corpus(folder, prepare=[(get_engine("openclaw"), old)])
    victim = next(p for p in sorted(folder.glob("*.json*"))
                  if any(s.source == str(p) for s in sessions))
    victim.write_text("[]")
    with pytest.raises(sessions_mod.SessionsChanged):
        third.prepared(get_engine("openclaw"), new)


def test_the_dashboards_untouched_controls_read_the_re_run_made_while_loading(
        cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The configuration built from every setting's default spelled out (the dashboard's
    controls before any is moved) may be written differently from the engine's default
    configuration (OpenClaw's), but behaves the same, so the re-run made while loading serves
    it: for every engine and version, the same replays either way."""
    from loopscope.engines import engine_names

    sessions = load_paths([str(SAMPLES)]).sessions
    spelled_differently = []
    for name in engine_names():
        eng = get_engine(name)
        for version in eng.versions:
            default = eng.default_config(version)
            spelled = eng.config({spec.name: spec.default for spec in eng.settings_for(version)},
                                 version).config
            assert repr(spelled) == loaded_mod.defaults_spelled(eng, version)
            if repr(spelled) != repr(default):
                spelled_differently.append(name)
            assert [eng.replay(s, spelled).to_json() for s in sessions] == [
                eng.replay(s, default).to_json() for s in sessions]
    assert "openclaw" in spelled_differently  # (what the alias is for)
    c = _corpus(SAMPLES)
    eng = get_engine("openclaw")
    spelled = eng.config({spec.name: spec.default for spec in eng.settings_for()}).config
    with monkeypatch.context() as m:  # read off the kept re-run: no re-run made
        m.setattr(eng, "run_many", lambda *a: pytest.fail("re-run"))
        served = c.run_many(get_engine("openclaw"), spelled)
    assert [r.to_json() for r in served] == [eng.replay(s, spelled).to_json() for s in sessions]


def test_read_ahead_reads_every_table_in_a_thread(cache_dir: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The dashboard reads a reopened corpus's tables in a thread as soon as it is opened
    (its first chart's rows need them all): every table, in engine order, the replays the
    same; a corpus not read from a snapshot starts no thread."""
    import threading

    from loopscope.engines.table import PreparedTable
    from loopscope.ui import data_source

    want = _replays(_corpus(SAMPLES))
    read: list[str] = []
    original = cache.KeptCorpus.read
    monkeypatch.setattr(cache.KeptCorpus, "read", lambda self, names: original(
        self, [n for n in names if read.append(n) or True]))
    started: list[str] = []
    start = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start",
                        lambda self: started.append(self.name) or start(self))
    again = data_source.build_corpus(_files(SAMPLES), fingerprint="t", origin="folder",
                              root=str(SAMPLES))
    assert started == ["loopscope-read-tables"]
    for thread in threading.enumerate():
        if thread.name == "loopscope-read-tables":
            thread.join()
    tables = [n.split(".")[0] for n in read if n.startswith("t")]
    from loopscope.engines import engine_names

    assert [t for k, t in enumerate(tables) if k == 0 or tables[k - 1] != t] == [
        f"t{k}" for k in range(len(engine_names()))]  # (every guard has a table)
    read.clear()
    assert all(isinstance(again.prepared(get_engine(name)), PreparedTable) for name in ("gglib", "openclaw"))
    assert read == []  # (read already)
    assert _replays(again) == want
    started.clear()
    with monkeypatch.context() as off:
        off.setattr(cache, "active", lambda: False)
        data_source.build_corpus(_files(SAMPLES), fingerprint="t", origin="folder", root=str(SAMPLES))
    assert "loopscope-read-tables" not in started




def test_string_pools_are_read_piece_by_piece(cache_dir: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A reopened corpus reads its tables' string pools (the sessions' texts of some guards)
    a checked piece at a time, as sessions are read: the corpus says the same as a fresh one,
    a session read reads a few pieces, and every piece is checked once read."""
    from loopscope.engines import engine_names

    small_pieces(monkeypatch)
    want = _everything(_corpus(SAMPLES))
    again = _corpus(SAMPLES)
    pools = {name: again.prepared(get_engine(name)).columns["string_bytes"] for name in engine_names()}
    assert all(isinstance(pool, cache.KeptBytes) for pool in pools.values())
    reads: list[tuple[int, int]] = []
    original = os.pread
    monkeypatch.setattr(os, "pread", lambda fd, size, at: reads.append((size, at)) or original(
        fd, size, at))
    gglib = get_engine("gglib")
    again.run_many(get_engine("gglib"), gglib.default_config())[3].to_json()
    pool = pools["gglib"]
    assert reads and all(size <= 64 for size, _ in reads) and len(reads) < len(pool) // 64
    reads.clear()  # a re-run under another configuration reads the tool-name sets only
    again.run_many(get_engine("gglib"), gglib.resolve_config(None, [("max_repeated_batch_steps", "5")]
                                                 ).config)
    assert reads and len(reads) < len(pool) // 64
    monkeypatch.setattr(os, "pread", original)
    assert _everything(again) == want
    assert all(isinstance(again.prepared(get_engine(name)).columns["string_bytes"], cache.KeptBytes)
               for name in engine_names())  # (never read whole)


def test_a_damaged_piece_of_a_pool_is_found_when_read(cache_dir: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A piece of a string pool that fails its checksum when a session is read: the read
    fails saying so, the snapshot is deleted, the guard's sessions are prepared again from
    the files (the corpus the same), and a command line imports instead."""
    import numpy as np

    small_pieces(monkeypatch)
    folder = tmp_path / "s"  # (a folder of its own: see _snapshot_of)
    shutil.copytree(SAMPLES, folder)
    want = _outcomes(_corpus(folder))
    snapshot = _snapshot_of(cache_dir, folder)
    runner = CliRunner()
    printed = runner.invoke(main, ["replay", str(folder), "--engine", "gglib", "--json"])
    _flip_member(snapshot, "t0.string_bytes")
    damaged = snapshot.read_bytes()
    again = _corpus(folder)
    with pytest.raises(cache.DamagedSnapshot, match="damaged"):
        np.asarray(again.prepared(get_engine("gglib")).columns["string_bytes"])
    assert not snapshot.exists()
    assert _outcomes(again) == want  # (gglib prepared again)
    snapshot.write_bytes(damaged)
    assert runner.invoke(main, ["replay", str(folder), "--engine", "gglib", "--json"]
                         ).output == printed.output
    assert not snapshot.exists()


def test_a_snapshot_read_piece_by_piece_is_closed_with_its_corpus(
        cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file a pool is read from stays open while the corpus lives, and is closed when it
    goes (no file left open per reopened corpus)."""
    import gc
    import warnings

    small_pieces(monkeypatch)
    _corpus(SAMPLES)
    again = _corpus(SAMPLES)
    again.prepared(get_engine("gemini-cli"))[0]  # (a piece read: the file opened)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        del again
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


def test_joined_parts_give_up_their_columns(cache_dir: Path) -> None:
    """Each engine's columns leave the parts as they are joined (the parts and the joined
    tables are never both held whole: at 100,000 sessions that was twice ~3.6 GB), and the
    joined tables equal a join of the parts left untouched."""
    import copy

    from loopscope.corpus import every_engine, ingest_part, join_parts

    found, _ = expand_paths([str(SAMPLES)])
    files = [(p, not s) for p, s in found]
    wanted = every_engine()
    parts = [ingest_part(files[:6], wanted), ingest_part(files[6:], wanted)]
    untouched = copy.deepcopy(parts)
    joined = join_parts(parts, wanted)
    reference = join_parts(untouched, wanted)
    assert joined.prepared and set(joined.prepared) == set(reference.prepared)
    for _, data, _ in parts:
        assert not set(data) & set(joined.prepared)
    for key, table in joined.prepared.items():
        eng = get_engine(key[0])
        assert [eng.encode_prepared(p) for p in table] == [
            eng.encode_prepared(p) for p in reference.prepared[key]]


def _benchmark_folder(folder: Path, sessions: int) -> Path:
    """``sessions`` files of the benchmark's generator (``benchmarks/corpus.py``): tables
    large enough to tell them from what an ingest holds beside them."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "_bench_corpus", Path(__file__).resolve().parents[1] / "benchmarks" / "corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    try:
        spec.loader.exec_module(module)
        module.generate(folder, sessions=sessions)
    finally:
        del sys.modules[spec.name]
    return folder


def _members(snapshot: Path) -> dict[str, bytes]:
    import zipfile

    with zipfile.ZipFile(snapshot) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_a_cold_ingest_writes_its_snapshot_without_holding_its_tables(
        cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tables of a cold ingest go into its snapshot a column at a time, from the parts
    kept on disk as they arrived: neither the parts nor the joined tables are held whole when
    the snapshot is written (at 100,000 sessions they were ~3.5 GB each, and the parent
    process peaked near 7 GB). Measured with tracemalloc (numpy's arrays included) when the
    write starts and over it, against the size of the tables written."""
    import tracemalloc

    folder = _benchmark_folder(tmp_path / "bench", 300)
    seen: dict[str, int] = {}
    write = cache.write_corpus

    def measured(key: str, index: Any, arrays: Any) -> bool:
        seen["held"] = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        try:
            return write(key, index, arrays)
        finally:
            seen["peak"] = tracemalloc.get_traced_memory()[1]

    with monkeypatch.context() as off:  # (every module imported, every memo filled)
        off.setenv("LOOPSCOPE_CACHE", "off")
        _corpus(folder, workers=1)
    monkeypatch.setattr(cache, "write_corpus", measured)
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        corpus = _corpus(folder, workers=1)
        after = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    seen["peak"] -= start
    seen["held"] -= start
    members = _members(_snapshot_of(cache_dir, folder))
    tables = sum(len(data) for name, data in members.items() if name.startswith("t"))
    assert tables > 2_000_000
    # What is held beside the write: the files' outcomes and the re-runs, not the tables.
    assert seen["held"] < tables / 4, (seen, tables)
    assert seen["peak"] - seen["held"] < tables / 4, (seen, tables)
    # The corpus reads its tables back from the snapshot when first used, as a reopen does.
    assert isinstance(corpus._prepared[("gglib", get_engine("gglib").prepare_key(None))],
                      snapshot_mod.KeptTable)
    assert after < tables
    assert corpus.cached_files == 0 and len(corpus.sessions) == 300


def test_a_snapshot_streamed_from_the_parts_equals_one_written_from_joined_tables(
        cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every member of the snapshot written a part at a time (two workers, parts of a few
    files; pools checked in 64-byte chunks, so chunks straddle the parts) is byte for byte
    the member written from the same parts' tables joined in memory, and the corpus equals
    the one read back from it and one loaded without the cache."""
    from loopscope.corpus import every_engine, ingest_part, join_parts

    small_pieces(monkeypatch)
    folder = _benchmark_folder(tmp_path / "bench", 90)
    streamed = _corpus(folder, workers=2)
    snapshot = _snapshot_of(cache_dir, folder)
    members = _members(snapshot)
    assert any(name.startswith("crc.") for name in members)
    # The same snapshot, written by the in-memory path from a join of one-file parts.
    files = _files(folder)
    wanted = every_engine()
    names = snapshot_mod.snapshot_names(files, wanted, str(folder))
    assert names is not None and names.key == snapshot.stem
    monkeypatch.setenv("LOOPSCOPE_CACHE_DIR", str(tmp_path / "other"))
    size = part_size(len(files), 2)  # (the parts the pool made: each has its own pool)
    joined = join_parts([ingest_part(files[at:at + size], wanted)
                         for at in range(0, len(files), size)], wanted)
    snapshot_mod._write_snapshot(names, files, wanted, joined)
    reference = _members(tmp_path / "other" / "prepared" / "corpus" / snapshot.name)
    assert list(members) == list(reference)
    assert [name for name in members if members[name] != reference[name]] == []
    monkeypatch.setenv("LOOPSCOPE_CACHE_DIR", str(cache_dir.parent))
    again = _corpus(folder)
    assert again.cached_files == 90
    monkeypatch.setenv("LOOPSCOPE_CACHE", "off")
    assert _everything(streamed) == _everything(again) == _everything(_corpus(folder))
    assert not list(cache_dir.glob("corpus/.part-*"))


def test_a_snapshot_that_cannot_be_written_leaves_the_tables_in_memory(
        cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cold ingest whose snapshot is not written (a full disk) still gives the whole
    corpus: its tables joined in memory from the parts kept on disk, nothing left behind."""
    from loopscope.engines.table import PreparedTable

    folder = tmp_path / "s"
    shutil.copytree(SAMPLES, folder)
    monkeypatch.setattr(cache, "write_corpus", lambda *a, **k: False)
    corpus = _corpus(folder, workers=1)
    assert all(isinstance(t, PreparedTable) for t in corpus._prepared.values())
    assert not list(cache_dir.glob("corpus/*"))
    monkeypatch.setenv("LOOPSCOPE_CACHE", "off")
    assert _everything(corpus) == _everything(_corpus(folder))


def _watch_spills(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every :class:`~loopscope.corpus.spill.SpilledParts` a cold ingest makes from now on,
    each with ``adds``: per part added, ``(its tables' bytes, held_bytes, spilled)`` after."""
    import numpy as np

    from loopscope.corpus import spill as spill_mod

    made: list[Any] = []

    class Watched(spill_mod.SpilledParts):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.adds: list[tuple[int, int, bool]] = []
            made.append(self)

        def add(self, part: Any) -> None:
            size = sum(np.asarray(value).nbytes for kind, columns in part[1].values()
                       if kind == "table" for value in columns.values())
            super().add(part)
            self.adds.append((size, self.held_bytes, self.spilled))

    monkeypatch.setattr(spill_mod, "SpilledParts", Watched)
    return made


def test_held_parts_stay_within_the_budget_and_join_as_the_parts_do(
        cache_dir: Path, tmp_path: Path) -> None:
    """Parts added to :class:`SpilledParts` under budgets from none to all of them: the bytes
    held never pass the budget (with the part arriving, never the budget plus one part); the
    first part that would pass it sends every held part to the file and none is held after;
    the tables joined equal a join of the same parts in memory, whichever the budget, and
    leave the parts as they are joined."""
    import copy

    import numpy as np

    from loopscope.corpus import every_engine, ingest_part, join_parts
    from loopscope.corpus.spill import SpilledParts

    wanted = every_engine()
    files = _files(SAMPLES)
    parts = [ingest_part([f], wanted) for f in files]
    sizes = [sum(np.asarray(value).nbytes for kind, columns in data.values()
                 if kind == "table" for value in columns.values()) for _, data, _ in parts]
    assert len(parts) >= 8 and sizes[0] == 0 < min(sizes[1:])  # (README.md: no sessions)
    reference = join_parts(copy.deepcopy(parts), wanted)
    total = sum(sizes)
    for budget in (0, sum(sizes[:4]), total // 2, total):
        with SpilledParts(wanted, str(tmp_path / "spill"), hold_bytes=budget) as spill:
            crossed = None
            for k, part in enumerate(copy.deepcopy(parts)):
                spill.add(part)
                assert spill.held_bytes <= budget
                if crossed is None and spill.spilled:
                    crossed = k
                if crossed is not None:  # (every part so far in the file: none held)
                    assert spill.held_bytes == 0 and spill._size == sum(sizes[:k + 1])
                else:
                    assert spill.held_bytes == sum(sizes[:k + 1])
            assert spill.peak_held_bytes <= budget + max(sizes)
            held = [k for k in range(len(parts)) if sum(sizes[:k + 1]) <= budget]
            assert crossed == (0 if budget == 0 else None if budget == total else len(held))
            joined = spill.joined()
            assert not any(spill._tables)  # (the tables left the parts as they were joined)
        assert joined.files == reference.files
        assert set(joined.prepared) == set(reference.prepared)
        for key, table in joined.prepared.items():
            eng = get_engine(key[0])
            assert [eng.encode_prepared(p) for p in table] == [
                eng.encode_prepared(p) for p in reference.prepared[key]], (budget, key)
        assert _runs_of(joined) == _runs_of(reference)


def _runs_of(ingested: Any) -> dict[Any, Any]:
    return {key: ({name: value.tolist() for name, value in columns.items()}, detectors)
            for key, (columns, detectors) in ingested.runs.items()}


def _cold_snapshot(folder: Path, cache_root: Path, monkeypatch: pytest.MonkeyPatch,
                   background: bool) -> tuple[Any, bytes]:
    """``folder`` loaded cold into the cache at ``cache_root`` (as the dashboard when
    ``background``, as ``loopscope prepare`` else); the corpus, and its snapshot's bytes
    once written."""
    monkeypatch.setenv("LOOPSCOPE_CACHE_DIR", str(cache_root))
    corpus = _corpus(folder, workers=1, snapshot_in_background=background)
    _join_snapshot_writers()
    (snapshot,) = (cache_root / "prepared" / "corpus").glob("*.npz")
    return corpus, snapshot.read_bytes()


def test_a_budget_held_crossed_or_zero_gives_the_same_corpus_and_snapshot(
        cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cold ingest whose parts all fit the dashboard's budget, one whose budget is passed
    a few parts in (held parts then written to the file), and one with no budget (the
    command line): the same corpus, and the same snapshot file, byte for byte."""
    import time
    import types
    import zipfile

    from loopscope.engines.table import PreparedTable

    # (a zip member's header carries the time it was written: the same for all three)
    monkeypatch.setattr(zipfile, "time", types.SimpleNamespace(
        time=lambda: 1_800_000_000.0, localtime=time.localtime))
    folder = _benchmark_folder(tmp_path / "bench", 30)
    spills = _watch_spills(monkeypatch)
    held, held_bytes = _cold_snapshot(folder, tmp_path / "held", monkeypatch, True)
    (whole,) = spills
    assert not whole.spilled and len(whole.adds) == 30
    assert all(isinstance(t, PreparedTable) for t in held._prepared.values())
    sizes = [size for size, _, _ in whole.adds]
    budget = sum(sizes[:4])
    monkeypatch.setattr(snapshot_mod, "HOLD_IN_MEMORY_BYTES", budget)
    crossed, crossed_bytes = _cold_snapshot(folder, tmp_path / "crossed", monkeypatch, True)
    part = spills[1]
    assert [spilled for _, _, spilled in part.adds] == [False] * 4 + [True] * 26
    assert [now for _, now, _ in part.adds][:5] == [sum(sizes[:k]) for k in (1, 2, 3, 4)] + [0]
    assert part.peak_held_bytes <= budget + max(sizes) and part._size == sum(sizes)
    assert all(isinstance(t, snapshot_mod.KeptTable) for t in crossed._prepared.values())
    zero, zero_bytes = _cold_snapshot(folder, tmp_path / "zero", monkeypatch, False)
    assert spills[2].spilled and spills[2].hold_bytes == 0
    assert held_bytes == crossed_bytes == zero_bytes
    monkeypatch.setenv("LOOPSCOPE_CACHE", "off")
    assert _everything(held) == _everything(crossed) == _everything(zero) == _everything(
        _corpus(folder))


def test_the_command_line_spills_every_part_and_the_dashboard_holds_a_small_corpus(
        cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``loopscope prepare`` (no budget) writes every part to the file even for a few
    files, waits for the snapshot and says so; the dashboard's cold load of a corpus within
    its budget writes nothing to the file, returns tables in memory, says nothing of
    keeping, and writes the snapshot in a thread: the next start reads it."""
    from loopscope.engines.table import PreparedTable

    folder = tmp_path / "s"
    shutil.copytree(SAMPLES, folder)
    spills = _watch_spills(monkeypatch)
    result = CliRunner().invoke(main, ["prepare", str(folder), "--workers", "1"])
    assert result.exit_code == 0, result.output
    (cli,) = spills
    assert cli.spilled and cli._size > 0 and cli.peak_held_bytes == 0
    assert all(not held for _, held, _ in cli.adds)
    cache.clear()
    said: list[str] = []
    corpus = _corpus(folder, workers=1, progress=lambda _f, text: said.append(text))
    assert "Keeping the prepared sessions for the next start" in said
    assert spills[1].spilled
    assert all(isinstance(t, snapshot_mod.KeptTable) for t in corpus._prepared.values())
    cache.clear()
    said.clear()
    corpus = _corpus(folder, workers=1, progress=lambda _f, text: said.append(text),
                     snapshot_in_background=True)
    dashboard = spills[2]
    assert not dashboard.spilled and dashboard._fh is None and dashboard._size == 0
    assert dashboard.hold_bytes == snapshot_mod.HOLD_IN_MEMORY_BYTES
    assert "Keeping the prepared sessions for the next start" not in said
    assert corpus._prepared and all(isinstance(t, PreparedTable)
                                    for t in corpus._prepared.values())
    _join_snapshot_writers()
    again = _corpus(folder, workers=1, snapshot_in_background=True)
    assert again.cached_files == len(again.report.files) and len(spills) == 3
    monkeypatch.setenv("LOOPSCOPE_CACHE", "off")
    assert _everything(again) == _everything(corpus) == _everything(_corpus(folder))
