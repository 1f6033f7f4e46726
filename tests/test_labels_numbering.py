"""One numbering (issue #33): ``labels.csv`` stores the loop start as ``loop_from_turn_index``,
the 0-based index; people read and type turns from 1; old files (a ``from_turn`` column with
the same index in it) are read and migrated on the next save without losing anything."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from loopscope import numbering
from loopscope.labels import (
    HEADER,
    TURN_COLUMN,
    Label,
    dump_labels,
    labels_from_json,
    labels_to_json,
    load_labels,
    update_label_file,
)

OLD_FILE = (
    "source,note,label,from_turn,reviewer\n"
    "a.json,looked twice,loop,2,ann\n"
    "b.json,,ok,,bob\n"
    "c.jsonl#1,starts late,loop,7,\n"
    "d.json,,loop,,\n"
)


def rows(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))


# --------------------------------------------------------------------------- the helper


def test_people_count_from_one_and_the_index_from_zero() -> None:
    assert [numbering.number(i) for i in (0, 3)] == [1, 4]
    assert [numbering.index_of(n) for n in (1, 4)] == [0, 3]
    for bad in (0, -2):
        with pytest.raises(ValueError, match="count from 1"):
            numbering.index_of(bad)
    assert numbering.turn_and_call(3, 3) == "turn 4, call 4"
    assert numbering.turn_and_call(5) == "turn 6"
    assert numbering.call_then_turn(2, 3) == "call 4 (turn 3)"
    assert numbering.call_then_turn(2) == "turn 3"


# --------------------------------------------------------------------------- the file


def test_the_column_says_it_holds_the_0_based_index() -> None:
    assert TURN_COLUMN == "loop_from_turn_index" and HEADER[2] == TURN_COLUMN
    assert dump_labels({"x.json": Label.loop("x.json", 3)}) == (
        "source,label,loop_from_turn_index\nx.json,loop,3\n")
    assert json.loads(labels_to_json({"x.json": Label.loop("x.json", 3)})) == {
        "labels": [{"source": "x.json", "label": "loop", "loop_from_turn_index": 3}]}


def test_an_old_file_is_read_as_the_index_and_renamed_on_the_next_save(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_text(OLD_FILE, encoding="utf-8")
    loaded, problems = load_labels(path)
    assert [p.code for p in problems] == ["unknown_label_column"]  # (the reviewer: an info)
    # The old column held the 0-based index: the same numbers, the same meaning.
    assert dict(loaded) == {"a.json": Label.loop("a.json", 2), "b.json": Label.ok("b.json"),
                            "c.jsonl#1": Label.loop("c.jsonl#1", 7), "d.json": Label.loop("d.json")}
    assert path.read_text(encoding="utf-8") == OLD_FILE  # reading never rewrites

    update_label_file(path, "e.json", "loop", 0, columns={"note": "new"})
    assert rows(path) == [
        ["source", "note", "label", "loop_from_turn_index", "reviewer"],  # in place, renamed
        ["a.json", "looked twice", "loop", "2", "ann"],
        ["b.json", "", "ok", "", "bob"],
        ["c.jsonl#1", "starts late", "loop", "7", ""],
        ["d.json", "", "loop", "", ""],
        ["e.json", "new", "loop", "0", ""],
    ]
    again, problems = load_labels(path)
    assert [p.code for p in problems] == ["unknown_label_column"]
    assert dict(again) == {**dict(loaded), "e.json": Label.loop("e.json", 0)}
    assert not list(tmp_path.glob(".labels.csv.*.tmp"))  # the atomic write left nothing behind


def test_a_file_with_both_columns_is_read_from_the_new_one_and_not_saved_into(
        tmp_path: Path) -> None:
    text = ("source,label,from_turn,loop_from_turn_index\n"
            "a.json,loop,3,2\n"
            "b.json,ok,,\n")
    path = tmp_path / "labels.csv"
    path.write_text(text, encoding="utf-8")
    loaded, problems = load_labels(path)
    assert dict(loaded) == {"a.json": Label.loop("a.json", 2), "b.json": Label.ok("b.json")}
    assert [(p.code, p.line, p.severity) for p in problems] == [
        ("both_turn_columns", 1, "warning")]
    shown = problems[0].text()
    assert shown.startswith(f"{path}:1: warning: ")
    assert "from_turn" in shown and "loop_from_turn_index" in shown
    with pytest.raises(ValueError, match="both from_turn"):
        update_label_file(path, "c.json", "ok")
    assert path.read_text(encoding="utf-8") == text  # nothing lost, nothing half-written


@pytest.mark.parametrize("header", ["loop_from_turn_index", "from_turn"])
def test_a_bad_index_names_the_file_line_and_column_and_keeps_the_rest(
        tmp_path: Path, header: str) -> None:
    text = (f"source,label,{header}\n"
            "a.json,loop,1\n"
            "b.json,loop,turn 4\n"
            "c.json,loop,-1\n"
            "d.json,ok,\n")
    path = tmp_path / "labels.csv"
    path.write_text(text, encoding="utf-8")
    loaded, problems = load_labels(path)
    assert dict(loaded) == {"a.json": Label.loop("a.json", 1), "d.json": Label.ok("d.json")}
    assert [(p.code, p.line) for p in problems] == [("bad_label_row", 3), ("bad_label_row", 4)]
    assert problems[0].text().startswith(f"{path}:3: warning: {header} \"turn 4\" for \"b.json\"")
    assert "0-based index" in problems[0].message
    # A save would drop those rows: it is refused and the file is left as it was.
    with pytest.raises(ValueError, match="fix these first"):
        update_label_file(path, "e.json", "ok")
    assert path.read_text(encoding="utf-8") == text


def test_json_reads_the_old_key_and_refuses_an_entry_with_both() -> None:
    loaded, problems = labels_from_json(json.dumps({"labels": [
        {"source": "a.json", "label": "loop", "from_turn": 2},
        {"source": "b.json", "label": "loop", "loop_from_turn_index": 4},
        {"source": "c.json", "label": "loop", "from_turn": 1, "loop_from_turn_index": 1},
        {"source": "d.json", "label": "loop", "loop_from_turn_index": "4"},
    ]}))
    assert dict(loaded) == {"a.json": Label.loop("a.json", 2), "b.json": Label.loop("b.json", 4)}
    assert [(p.code, p.pointer) for p in problems] == [
        ("bad_label_row", "/labels/2"), ("bad_label_row", "/labels/3")]
    assert "loop_from_turn_index" in problems[1].message
