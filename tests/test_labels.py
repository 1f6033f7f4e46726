"""The labels sidecar: reading, writing, mapping to replay sources, and surviving bad input."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from loopscope import labels as labels_module
from loopscope.labels import (
    HEADER,
    Label,
    LabelSet,
    clear_label,
    dump_labels,
    label_file_for,
    labels_for_sessions,
    labels_from_json,
    labels_to_json,
    load_labels,
    parse_labels,
    relative_source,
    save_labels,
    set_label,
    update_label_file,
)

HOSTILE_SOURCES = [
    "a,b.json",
    'quote"d.json',
    "new\nline.json",
    "tab\there.jsonl#3",
    "=HYPERLINK(evil).json",
    "résumé/日本語 セッション.json",
    "\u202eevil.json",
    "sub/dir/x.jsonl#10",
    " leading space.json",
]


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def codes(problems: list) -> list[str]:
    return [p.code for p in problems]


# --------------------------------------------------------------------------- values


def test_label_validates_its_fields() -> None:
    assert Label.loop("x.json", 3) == Label("x.json", "loop", 3)
    assert Label.ok("x.json").from_turn is None
    with pytest.raises(ValueError):
        Label("x.json", "maybe")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Label("x.json", "loop", -1)
    with pytest.raises(ValueError):
        Label("x.json", "loop", True)
    with pytest.raises(ValueError):
        Label("x.json", "ok", 2)
    with pytest.raises(ValueError):
        Label("", "ok")


def test_set_and_clear_return_new_sets_and_leave_the_old_one_alone() -> None:
    empty = LabelSet()
    one = set_label(empty, "a.json", "loop", 2)
    two = set_label(one, "b.json", "ok")
    relabelled = set_label(two, "a.json", "ok")
    assert len(empty) == 0 and len(one) == 1 and len(two) == 2
    assert two["a.json"] == Label("a.json", "loop", 2)
    assert relabelled["a.json"] == Label("a.json", "ok", None)
    cleared = clear_label(relabelled, "a.json")
    assert "a.json" not in cleared and "a.json" in relabelled
    assert clear_label(cleared, "never-labelled.json") == cleared
    assert two.with_label("c.json", "loop").without("c.json") == two
    assert two.counts() == {"loop": 1, "ok": 1}


def test_lookup_finds_a_source_spelled_differently() -> None:
    labels = LabelSet([Label.loop("runs/a.jsonl#2", 1)])
    assert labels.lookup("runs/a.jsonl#2") is not None
    assert labels.lookup("./runs//a.jsonl#2") == Label.loop("runs/a.jsonl#2", 1)
    assert labels.lookup("runs/a.jsonl#3") is None


# --------------------------------------------------------------------------- round trip


def test_round_trip_keeps_every_label_exactly(tmp_path: Path) -> None:
    labels = LabelSet(
        [Label.loop("write_loop.json", 2), Label.ok("edit_test.jsonl"), Label.loop("multi.jsonl#0")]
        + [Label.loop(s, i) for i, s in enumerate(HOSTILE_SOURCES)]
    )
    path = tmp_path / "labels.csv"
    save_labels(path, labels)
    loaded, problems = load_labels(path)
    assert problems == []
    assert loaded == labels
    assert path.read_text(encoding="utf-8").splitlines()[0] == ",".join(HEADER)


def test_saved_rows_are_sorted_with_session_numbers_in_numeric_order() -> None:
    labels = LabelSet(Label.ok(f"multi.jsonl#{n}") for n in (10, 2, 0, 1))
    rows = dump_labels(labels).splitlines()[1:]
    assert [r.split(",")[0] for r in rows] == [f"multi.jsonl#{n}" for n in (0, 1, 2, 10)]


def test_empty_from_turn_means_unknown(tmp_path: Path) -> None:
    path = write(tmp_path / "labels.csv", "source,label,from_turn\na.json,loop,\nb.json,loop,0\n")
    loaded, problems = load_labels(path)
    assert problems == []
    assert loaded["a.json"].from_turn is None
    assert loaded["b.json"].from_turn == 0


def test_json_export_and_import_round_trip() -> None:
    labels = LabelSet([Label.loop(s, i) for i, s in enumerate(HOSTILE_SOURCES)] + [Label.ok("z.json")])
    loaded, problems = labels_from_json(labels_to_json(labels))
    assert problems == []
    assert loaded == labels


def test_json_import_reports_bad_entries_with_a_pointer() -> None:
    text = """{"labels": [
        {"source": "a.json", "label": "loop", "from_turn": 4},
        {"source": "b.json", "label": "nope"},
        {"source": "/etc/passwd", "label": "ok"},
        {"source": "c.json", "label": "loop", "from_turn": "3"},
        7,
        {"source": "a.json", "label": "ok", "from_turn": 9}
    ]}"""
    loaded, problems = labels_from_json(text, "export.json")
    assert dict(loaded) == {"a.json": Label.ok("a.json")}
    assert [(p.code, p.pointer) for p in problems] == [
        ("bad_label_row", "/labels/1"),
        ("bad_label_row", "/labels/2"),
        ("bad_label_row", "/labels/3"),
        ("bad_label_row", "/labels/4"),
        ("duplicate_label", "/labels/5"),
    ]
    loaded, problems = labels_from_json("{not json", "export.json")
    assert len(loaded) == 0 and codes(problems) == ["invalid_json"]


# --------------------------------------------------------------------------- bad rows


def test_bad_rows_are_reported_with_file_and_line_and_the_rest_is_kept(tmp_path: Path) -> None:
    path = write(
        tmp_path / "labels.csv",
        "source,label,from_turn\n"
        "good.json,loop,3\n"          # 2
        ",loop,1\n"                   # 3 empty source
        "x.json,maybe,\n"             # 4 unknown label
        "y.json,loop,three\n"         # 5 from_turn not a number
        "z.json,loop,-2\n"            # 6 negative
        "w.json,loop,1.5\n"           # 7 not whole
        "v.json\n"                    # 8 no label column
        "/abs/u.json,ok,\n"           # 9 absolute
        "../t.json,ok,\n"             # 10 outside the folder
        '"broken"quote,ok,\n'         # 11 not CSV
        "\n"                          # 12 blank: skipped silently
        "good.json,ok,\n"             # 13 duplicate: later wins
        "s.json,OK , \n",             # 14 case and spaces are forgiven
    )
    loaded, problems = load_labels(path)
    assert dict(loaded) == {"good.json": Label.ok("good.json"), "s.json": Label.ok("s.json")}
    assert [(p.line, p.code) for p in problems] == [
        (3, "bad_label_row"),
        (4, "bad_label_row"),
        (5, "bad_label_row"),
        (6, "bad_label_row"),
        (7, "bad_label_row"),
        (8, "bad_label_row"),
        (9, "bad_label_row"),
        (10, "bad_label_row"),
        (11, "bad_label_row"),
        (13, "duplicate_label"),
    ]
    assert all(p.severity == "warning" for p in problems)
    assert problems[0].text().startswith(f"{path}:3: warning: ")


def test_a_missing_header_loses_no_other_file_and_says_what_to_write(tmp_path: Path) -> None:
    path = write(tmp_path / "labels.csv", "a.json,loop,2\n")
    loaded, problems = load_labels(path)
    assert len(loaded) == 0
    assert codes(problems) == ["bad_label_header"]
    assert problems[0].severity == "error" and "source,label,loop_from_turn_index" in problems[0].message


def test_header_order_extra_columns_bom_and_crlf_are_accepted(tmp_path: Path) -> None:
    text = "\ufeffLabel,Source,reviewer,From_Turn\r\nloop,a.json,looked at it,4\r\nok,b.json,,\r\n"
    loaded, problems = load_labels(write(tmp_path / "labels.csv", text))
    assert dict(loaded) == {"a.json": Label.loop("a.json", 4), "b.json": Label.ok("b.json")}
    assert codes(problems) == ["unknown_label_column"]
    assert problems[0].severity == "info"


def test_from_turn_on_an_ok_label_is_dropped_with_a_note(tmp_path: Path) -> None:
    loaded, problems = load_labels(write(tmp_path / "labels.csv", "source,label,from_turn\na.json,ok,3\n"))
    assert loaded["a.json"] == Label.ok("a.json")
    assert codes(problems) == ["from_turn_ignored"]


def test_an_empty_file_is_a_warning_not_an_error(tmp_path: Path) -> None:
    loaded, problems = load_labels(write(tmp_path / "labels.csv", ""))
    assert len(loaded) == 0 and codes(problems) == ["empty_labels"]


def test_a_missing_file_raises_oserror_for_the_caller_to_report(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        load_labels(tmp_path / "nope.csv")


def test_many_bad_rows_are_summarised(tmp_path: Path) -> None:
    rows = "".join(f"s{i}.json,bogus,\n" for i in range(50))
    loaded, problems = load_labels(write(tmp_path / "labels.csv", "source,label,from_turn\n" + rows))
    assert len(loaded) == 0
    listed = [p for p in problems if p.count == 1]
    assert len(listed) == labels_module.MAX_PROBLEMS_PER_CODE
    assert problems[-1].count == 50 - labels_module.MAX_PROBLEMS_PER_CODE


# --------------------------------------------------------------------------- hostile values


@pytest.mark.parametrize(
    "data",
    [
        b"\x00\x01\x02\xff\xfe binary junk \x00",
        b"PK\x03\x04" + bytes(range(256)),
        b"source,label\n" + b"\x00" * 10_000,
        b'source,label\n"' + b"x" * 300_000,  # an unterminated, over-long quoted field
        b"source,label,from_turn\n" + b"a" * 200_000 + b",loop,\n",  # over csv's field limit
        ("source,label,from_turn\n" + "x.json,loop," + "9" * 5000 + "\n").encode(),
    ],
)
def test_junk_never_raises(data: bytes) -> None:
    loaded, problems = parse_labels(data, "junk.csv")
    assert isinstance(loaded, LabelSet)
    assert all(p.source == "junk.csv" for p in problems)
    assert problems  # every one of these deserves a message


def test_nul_bytes_reject_only_their_row() -> None:
    loaded, problems = parse_labels(b"source,label,from_turn\na\x00b.json,ok,\nc.json,ok,\n", "l.csv")
    assert dict(loaded) == {"c.json": Label.ok("c.json")}
    assert [(p.line, p.code) for p in problems] == [(2, "bad_label_row")]
    assert "\\x00" in problems[0].message  # escaped for display, not raw


def test_invalid_utf8_is_replaced_and_reported() -> None:
    loaded, problems = parse_labels(b"source,label,from_turn\nbad\xff.json,ok,\ngood.json,ok,\n", "l.csv")
    assert "good.json" in loaded and "bad\ufffd.json" in loaded
    assert codes(problems) == ["encoding"] and problems[0].line == 2


def test_control_characters_in_messages_are_escaped() -> None:
    _, problems = parse_labels("source,label\n\"evil\x1b[31m\u202e.json\",bogus\n", "l.csv")
    assert "\x1b" not in problems[0].message and "\u202e" not in problems[0].message
    assert "\\x1b" in problems[0].message


def test_saving_an_unsafe_source_raises_before_touching_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "labels.csv", "source,label,from_turn\nkeep.json,ok,\n")
    before = path.read_bytes()
    for bad in ["/etc/passwd", "../outside.json", "a/../../b.json", "nul\x00.json", "."]:
        with pytest.raises(ValueError):
            save_labels(path, LabelSet([Label.ok(bad)]))
        assert path.read_bytes() == before
    assert _files(tmp_path) == ["labels.csv"]


def test_sources_are_stored_in_one_spelling(tmp_path: Path) -> None:
    loaded, problems = parse_labels("source,label,from_turn\n./a//b.jsonl#2,loop,1\n")
    assert problems == [] and list(loaded) == ["a/b.jsonl#2"]


# --------------------------------------------------------------------------- atomic write


def _files(folder: Path) -> list[str]:
    """The folder's files but the lock file that every save leaves (deleting a lock file
    after releasing it would let two writers hold "the" lock on two different files)."""
    return sorted(n for n in os.listdir(folder) if n != ".labels.csv.lock")


def test_a_crash_before_the_rename_leaves_the_old_file_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "labels.csv"
    old = LabelSet([Label.loop("a.json", 1), Label.ok("b.json")])
    save_labels(path, old)
    before = path.read_bytes()

    def crash(*_args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        save_labels(path, set_label(old, "c.json", "loop", 7))
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert load_labels(path).labels == old
    assert _files(tmp_path) == ["labels.csv"]  # no temporary file left behind


def test_a_crash_while_writing_leaves_the_old_file_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "labels.csv"
    save_labels(path, LabelSet([Label.ok("a.json")]))
    before = path.read_bytes()

    def crash(_fd: int) -> None:
        raise KeyboardInterrupt  # even an interrupt must clean up

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(KeyboardInterrupt):
        save_labels(path, LabelSet([Label.loop("b.json")]))
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert _files(tmp_path) == ["labels.csv"]


def test_a_failed_first_save_creates_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "replace", lambda *_a: (_ for _ in ()).throw(OSError("boom")))
    with pytest.raises(OSError):
        save_labels(tmp_path / "labels.csv", LabelSet([Label.ok("a.json")]))
    assert _files(tmp_path) == []


def test_the_write_is_fsynced_and_renamed_in_the_same_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, ...]] = []
    real_replace, real_fsync = os.replace, os.fsync

    def spy_replace(src: str, dst: str) -> None:
        calls.append(("replace", os.path.dirname(src), os.path.dirname(dst)))
        real_replace(src, dst)

    def spy_fsync(fd: int) -> None:
        calls.append(("fsync",))
        real_fsync(fd)

    monkeypatch.setattr(os, "replace", spy_replace)
    monkeypatch.setattr(os, "fsync", spy_fsync)
    save_labels(tmp_path / "labels.csv", LabelSet([Label.ok("a.json")]))
    assert calls[0] == ("fsync",)  # the data, before the rename
    assert calls[1] == ("replace", str(tmp_path), str(tmp_path))


def test_saving_keeps_the_file_mode_and_writes_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "data" / "labels.csv"
    save_labels(write(real, "source,label,from_turn\n"), LabelSet([Label.ok("a.json")]))
    os.chmod(real, 0o640)
    link = tmp_path / "labels.csv"
    link.symlink_to(real)
    save_labels(link, LabelSet([Label.loop("b.json")]))
    assert link.is_symlink()
    assert stat.S_IMODE(os.stat(real).st_mode) == 0o640
    assert dict(load_labels(real).labels) == {"b.json": Label.loop("b.json")}


def test_update_label_file_sets_and_clears_one_label(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    update_label_file(path, "a.json", "loop", 3)
    update_label_file(path, "b.json", "ok")
    update_label_file(path, "a.json", None)
    assert dict(load_labels(path).labels) == {"b.json": Label.ok("b.json")}


# --------------------------------------------------------------------------- replay sources


@pytest.fixture
def session_tree(tmp_path: Path) -> Path:
    """root/sessions/{a.json, multi.jsonl, sub/b.json, .hidden/h.json} with two label files."""
    sessions = tmp_path / "root" / "sessions"
    for name in ["a.json", "multi.jsonl", "sub/b.json", "sub/c.json", ".hidden/h.json"]:
        write(sessions / name, "{}")
    write(
        sessions / "labels.csv",
        "source,label,from_turn\n"
        "a.json,loop,2\n"
        "multi.jsonl#1,loop,\n"
        "sub/b.json,ok,\n"          # overridden by sub/labels.csv (nearest wins)
        "sub/c.json,loop,5\n"
        "gone.json,ok,\n",          # names no session: harmless
    )
    write(sessions / "sub" / "labels.csv", "source,label,from_turn\nb.json,loop,1\n")
    write(sessions / ".hidden" / "labels.csv", "source,label,from_turn\nh.json,ok,\n")
    return tmp_path


def test_labels_are_keyed_by_the_replay_source_from_any_working_directory(
    session_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = {
        "a.json": Label.loop("a.json", 2),
        "multi.jsonl#1": Label.loop("multi.jsonl#1"),
        "sub/b.json": Label.loop("sub/b.json", 1),
        "sub/c.json": Label.loop("sub/c.json", 5),
    }
    sessions = session_tree / "root" / "sessions"
    for cwd, arg in [
        (session_tree / "root", "sessions"),
        (session_tree / "root", "sessions/"),
        (session_tree / "root", "./sessions"),
        (sessions, "."),
        (sessions / "sub", ".."),
        (session_tree, str(sessions)),
        (session_tree / "root" / "sessions" / "sub", "../../sessions"),
    ]:
        monkeypatch.chdir(cwd)
        loaded, problems = labels_for_sessions([arg])
        assert problems == []
        want = {}
        for rel, lab in expected.items():
            path, _, n = rel.partition("#")
            key = os.path.join(arg, *path.split("/")) + (f"#{n}" if n else "")
            want[key] = lab.with_source(key)
        assert dict(loaded) == want, (cwd, arg)


def test_keys_match_how_the_loader_spells_sources(
    session_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loader = pytest.importorskip("loopscope.formats.loader")
    monkeypatch.chdir(session_tree / "root")
    for arg in ["sessions", "./sessions/", "sessions/sub"]:
        targets, _ = loader.expand_paths([arg])
        spelled = {path for path, _scanned in targets}
        loaded, _ = labels_for_sessions([arg])
        assert {k.split("#")[0] for k in loaded} <= spelled


def test_a_single_file_path_uses_its_folders_labels(
    session_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(session_tree / "root")
    loaded, _ = labels_for_sessions(["sessions/sub/b.json"])
    assert dict(loaded) == {"sessions/sub/b.json": Label.loop("sessions/sub/b.json", 1)}
    loaded, _ = labels_for_sessions(["sessions/multi.jsonl"])
    assert dict(loaded) == {"sessions/multi.jsonl#1": Label.loop("sessions/multi.jsonl#1")}
    monkeypatch.chdir(session_tree / "root" / "sessions")
    loaded, _ = labels_for_sessions(["a.json"])
    assert dict(loaded) == {"a.json": Label.loop("a.json", 2)}


def test_a_sub_folder_path_does_not_reach_labels_above_it(
    session_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(session_tree / "root")
    loaded, _ = labels_for_sessions(["sessions/sub"])
    assert dict(loaded) == {"sessions/sub/b.json": Label.loop("sessions/sub/b.json", 1)}


def test_an_explicit_labels_file_is_mapped_relative_to_its_own_folder(
    session_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(session_tree)
    loaded, _ = labels_for_sessions(["root/sessions"], labels_file="root/sessions/sub/labels.csv")
    assert dict(loaded) == {"root/sessions/sub/b.json": Label.loop("root/sessions/sub/b.json", 1)}
    with pytest.raises(OSError):
        labels_for_sessions(["root/sessions"], labels_file="root/missing.csv")


def test_problems_in_found_files_are_reported_and_a_folder_named_labels_csv_is_skipped(
    session_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(session_tree / "root")
    sub_labels = Path("sessions/sub/labels.csv")
    sub_labels.unlink()
    sub_labels.mkdir()  # a folder named labels.csv is not a labels file: skipped
    write(Path("sessions/labels.csv"), "source,label,from_turn\na.json,loop,2\nb.json,sometimes,\n")
    loaded, problems = labels_for_sessions(["sessions"])
    assert dict(loaded) == {"sessions/a.json": Label.loop("sessions/a.json", 2)}
    assert [(p.source, p.line, p.code) for p in problems] == [
        ("sessions/labels.csv", 3, "bad_label_row")
    ]


def test_label_file_for_and_relative_source_invert_the_mapping(
    session_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(session_tree / "root")
    assert label_file_for("sessions/sub/b.json", "sessions") == (
        os.path.join("sessions", "sub", "labels.csv"), "b.json")
    assert label_file_for("sessions/multi.jsonl#3", "sessions") == (
        os.path.join("sessions", "labels.csv"), "multi.jsonl#3")
    assert label_file_for("sessions/a.json", "sessions/a.json") == (
        os.path.join("sessions", "labels.csv"), "a.json")
    assert relative_source("sessions/labels.csv", "./sessions/sub/c.json") == "sub/c.json"
    with pytest.raises(ValueError):
        relative_source("sessions/sub/labels.csv", "sessions/a.json")


def test_update_label_file_refuses_to_drop_rows_it_cannot_read(tmp_path: Path) -> None:
    path = write(tmp_path / "labels.csv", "source,label,from_turn\na.json,lop,\nb.json,ok,\n")
    before = path.read_bytes()
    with pytest.raises(ValueError, match=r"labels\.csv:2"):
        update_label_file(path, "c.json", "loop")
    assert path.read_bytes() == before
    write(path, "a.json,loop,\n")  # no header: every row would be lost
    with pytest.raises(ValueError, match="bad_label_header"):
        update_label_file(path, "c.json", "loop")
