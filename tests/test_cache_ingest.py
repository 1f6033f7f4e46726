"""The on-disk cache of prepared sessions and ingest on several cores: the same corpus and the
same replays whichever way it was loaded; a damaged cache entry is ignored and rebuilt."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from loopscope import cache
from loopscope.cli import main
from loopscope.corpus import build_corpus, ingest
from loopscope.engines import get_engine
from loopscope.engines.base import run_many
from loopscope.formats import expand_paths, load_paths

SAMPLES = Path(__file__).resolve().parents[1] / "sample_transcripts"


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
        out[name] = [r.to_json() for r in run_many(eng, corpus.prepared(name), config)]
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


def test_a_damaged_entry_is_ignored_and_rebuilt(cache_dir: Path) -> None:
    fresh = _corpus(SAMPLES)
    entries = sorted(cache_dir.glob("*/*.json"))
    assert entries
    damage = [b"", b"{not json", b'{"format": "loopscope-prepared/1", "key": "x"}',
              entries[0].read_bytes()[: len(entries[0].read_bytes()) // 2]]
    for path, junk in zip(entries, damage * len(entries), strict=False):
        path.write_bytes(junk)
    # A valid entry of another key, copied over: never trusted either.
    shutil.copyfile(entries[-1], entries[-2]) if len(entries) > 5 else None
    again = _corpus(SAMPLES)
    assert _replays(again) == _replays(fresh)
    assert again.cached_files < len(again.report.files)
    third = _corpus(SAMPLES)  # rebuilt: every file from the cache again
    assert third.cached_files == len(third.report.files)


def test_a_rewritten_file_is_never_served_from_the_cache(cache_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "s"
    shutil.copytree(SAMPLES, folder)
    _corpus(folder)
    victim = sorted(folder.glob("*.json*"))[0]
    text = victim.read_text()
    victim.write_text(text + "\n")  # new size and mtime: a new fingerprint
    again = _corpus(folder)
    assert again.cached_files == len(again.report.files) - 1


def test_worker_processes_give_the_same_corpus(cache_dir: Path) -> None:
    files = _files(SAMPLES) * 6  # enough files for the pool
    wanted = [("gglib", None), ("openclaw", None)]
    serial = ingest(files, wanted, workers=1, use_cache=False)
    pooled = ingest(files, wanted, workers=2, use_cache=False)
    assert [r.heads for r in pooled] == [r.heads for r in serial]
    assert [r.problems for r in pooled] == [r.problems for r in serial]
    for key in serial[0].prepared:
        eng = get_engine(key[0])
        assert [[eng.encode_prepared(p) for p in r.prepared[key]] for r in pooled] == \
            [[eng.encode_prepared(p) for p in r.prepared[key]] for r in serial]


def test_cache_command_clears(cache_dir: Path) -> None:
    _corpus(SAMPLES)
    runner = CliRunner()
    info = runner.invoke(main, ["cache", "info"])
    assert info.exit_code == 0 and "entries" in info.output
    cleared = runner.invoke(main, ["cache", "clear"])
    assert cleared.exit_code == 0 and "removed" in cleared.output
    assert cache.stats() == (0, 0)


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
    from loopscope import corpus as corpus_mod

    src = Path(__file__).resolve().parents[1] / "sample_transcripts"
    files = [(str(p), True) for p in sorted(src.glob("*.json*"))]
    c = corpus_mod.build_corpus(files, fingerprint="keep", origin="folder", root=str(src),
                                workers=1)
    reads = []
    original = corpus_mod.reload

    def counting(path: str, explicit: bool, heads: Any) -> Any:
        reads.append(path)
        return original(path, explicit, heads)

    corpus_mod.reload = counting  # type: ignore[assignment]
    try:
        first = [s.source for s in c.sessions]
        again = [s.source for s in c.sessions]
    finally:
        corpus_mod.reload = original  # type: ignore[assignment]
    assert first == again == c.sources
    assert len(reads) == len({path for path, _ in files if corpus_mod.file_stamp(path)})
