"""Counts in words (``loopscope.words``) and notices that say only what is true."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from loopscope.corpus import build_corpus
from loopscope.formats import expand_paths
from loopscope.words import join_words, plural

SAMPLES = Path(__file__).resolve().parents[1] / "sample_transcripts"


def test_plural_picks_the_word_for_the_count() -> None:
    assert plural(1, "session") == "1 session"
    assert plural(0, "session") == "0 sessions"
    assert plural(20_000, "tool call") == "20,000 tool calls"
    assert plural(2, "entry", "entries") == "2 entries"
    assert plural(1, "file was", "files were") == "1 file was"
    assert join_words([]) == "" and join_words(["a"]) == "a"
    assert join_words(["a", "b", "c"]) == "a, b and c"


def test_kept_from_an_earlier_start_is_said_only_when_it_is_true(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder never loaded is read from its files; only a second start reads the prepared
    sessions kept by the first, and only then says so."""
    monkeypatch.setenv("LOOPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("LOOPSCOPE_CACHE", raising=False)
    folder = tmp_path / "new"
    shutil.copytree(SAMPLES, folder)
    targets, _ = expand_paths([str(folder)])
    files = [(p, not scanned) for p, scanned in targets]

    def start() -> list[str]:
        said: list[str] = []
        build_corpus(files, fingerprint="f", origin="folder", root=str(folder), workers=1,
                     progress=lambda _f, text: said.append(text))
        return said

    first = start()
    assert not [t for t in first if "kept from" in t], first
    second = start()
    assert any("kept from an earlier start" in t for t in second), second
