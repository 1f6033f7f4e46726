"""The dashboard notices a labels.csv created, edited, removed or added in a new folder under
the corpus root, and does not list every session file again on each page run when nothing
changed (it walks the folders only when one of them changed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from loopscope.ui import labelling

_PAST = 1_700_000_000  # seconds: folders "settled" long ago


def _settle(*folders: Path) -> None:
    for folder in folders:
        os.utime(folder, (_PAST, _PAST))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.json").write_text("{}")
    (tmp_path / "sub" / "b.json").write_text("{}")
    _settle(tmp_path, tmp_path / "sub")
    return tmp_path


def _walks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = os.walk

    def counting(top: str, *args: object, **kwargs: object) -> object:
        calls.append(top)
        return real(top, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(labelling.os, "walk", counting)
    return calls


def test_sidecar_changes_are_seen(root: Path) -> None:
    key = str(root)
    assert labelling._stamp(key) == ()
    sidecar = root / "sub" / "labels.csv"
    sidecar.write_text("source,label\n")
    first = labelling._stamp(key)
    assert [p for p, _, _ in first] == [str(sidecar)]
    sidecar.write_text("source,label\nb.json,loop\n")  # edited in place
    assert labelling._stamp(key) != first
    (root / "new").mkdir()
    (root / "new" / "labels.csv").write_text("source,label\n")
    assert len(labelling._stamp(key)) == 2
    sidecar.unlink()
    assert [p for p, _, _ in labelling._stamp(key)] == [str(root / "new" / "labels.csv")]


def test_unchanged_folders_are_not_walked_again(root: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    key = str(root)
    (root / "labels.csv").write_text("source,label\n")
    _settle(root)
    walks = _walks(monkeypatch)
    stamp = labelling._stamp(key)
    assert labelling._stamp(key) == stamp and labelling._stamp(key) == stamp
    assert len(walks) == 1
    (root / "labels.csv").write_text("source,label\na.json,ok\n")  # the file, not the folder
    assert labelling._stamp(key) != stamp
    assert len(walks) == 1
    (root / "sub" / "labels.csv").write_text("source,label\n")  # a new sidecar: folder changed
    assert len(labelling._stamp(key)) == 2
    assert len(walks) == 2


def test_a_folder_changed_just_now_is_walked_again(root: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Its mtime may not move again within the file system's resolution."""
    os.utime(root / "sub")  # now
    walks = _walks(monkeypatch)
    labelling._stamp(str(root))
    labelling._stamp(str(root))
    assert len(walks) == 2
