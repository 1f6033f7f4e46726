"""One numbering for people (issue #33), on the command line: every command's text counts
turns and calls from 1, and ``--from-turn`` takes the turn as ``replay`` prints it, while the
labels file and ``--json`` keep the 0-based index."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from tests.conftest import REPO_ROOT, SAMPLES

from loopscope.cli import main
from loopscope.labels import Label, load_labels

WRITE_LOOP = "write_loop_refused_at_third_batch.json"
COMPARE_GGLIB = ["compare", "sample_transcripts", "--engine", "gglib",
                 "--a", "max_repeated_batch_steps=2", "--b", "max_repeated_batch_steps=4"]
COMPARE_RELEASES = ["compare", "sample_transcripts", "--engine", "openclaw",
                    "--a-version", "2026.6.11", "--b-version", "2026.9.6"]


def run(args: list[str], cwd: Path) -> tuple[int, str, str]:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, args, catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "sessions"
    root.mkdir()
    shutil.copy(SAMPLES / WRITE_LOOP, root / WRITE_LOOP)
    return root


@pytest.fixture(scope="module")
def samples() -> Path:
    if not (SAMPLES / "labels.csv").is_file():
        pytest.skip("sample_transcripts/ with labels.csv not found")
    return SAMPLES


# --------------------------------------------------------------------------- label


def test_from_turn_is_the_turn_replay_prints_and_the_file_keeps_its_index(folder: Path) -> None:
    # The turn as a person reads it in `replay`'s text ...
    code, out, _ = run(["replay", WRITE_LOOP, "--engine", "gglib"], folder)
    shown = int(re.search(r"first refusal: turn (\d+)", out).group(1))  # type: ignore[union-attr]
    code, out, _ = run(["replay", WRITE_LOOP, "--engine", "gglib", "--json"], folder)
    index = orjson.loads(out.splitlines()[0])["first_refusal"]["turn"]
    assert (shown, index) == (4, 3)
    # ... typed into --from-turn is stored as the index --json gives for the same turn.
    code, out, err = run(["label", WRITE_LOOP, "loop", "--from-turn", "4"], folder)
    assert (code, err) == (0, "")
    assert f"{WRITE_LOOP} = loop from turn 4" in out
    assert dict(load_labels(folder / "labels.csv").labels) == {WRITE_LOOP: Label.loop(WRITE_LOOP, 3)}
    assert (folder / "labels.csv").read_text().splitlines() == [
        "source,label,loop_from_turn_index", f"{WRITE_LOOP},loop,3"]
    # The replay reads it back as the turn it was typed as, and the refusal is on time.
    code, out, _ = run(["replay", WRITE_LOOP, "--engine", "gglib"], folder)
    assert "labelled loop from turn 4]" in out and "first refusal: turn 4, call 4" in out


def test_from_turn_0_is_refused_saying_turns_count_from_1(folder: Path) -> None:
    code, out, err = run(["label", WRITE_LOOP, "loop", "--from-turn", "0"], folder)
    assert code == 2 and out == ""
    assert "--from-turn" in err and "turns count from 1" in err
    assert not (folder / "labels.csv").exists()


def test_from_turn_past_the_last_turn_is_refused_naming_the_session(folder: Path) -> None:
    code, _, err = run(["label", WRITE_LOOP, "loop", "--from-turn", "6"], folder)
    assert code == 2
    assert f"{WRITE_LOOP}: --from-turn 6 is past the session's last turn (it has 5" in err
    assert not (folder / "labels.csv").exists()
    code, out, _ = run(["label", WRITE_LOOP, "loop", "--from-turn", "5"], folder)  # the last
    assert code == 0 and "loop from turn 5" in out
    assert load_labels(folder / "labels.csv").labels[WRITE_LOOP] == Label.loop(WRITE_LOOP, 4)


def test_label_help_says_how_turns_are_counted(folder: Path) -> None:
    code, out, _ = run(["label", "--help"], folder)
    assert code == 0
    text = " ".join(out.split())
    assert "counted from 1" in text and "0-based index (N - 1)" in text
    assert "loop_from_turn_index" in text


def test_labels_export_names_the_index_in_the_csv_and_the_json(folder: Path) -> None:
    run(["label", WRITE_LOOP, "loop", "--from-turn", "2"], folder)
    code, out, _ = run(["labels", "export"], folder)
    assert code == 0
    assert out.splitlines() == ["source,label,loop_from_turn_index", f"{WRITE_LOOP},loop,1"]
    code, out, _ = run(["labels", "export", "--format", "json"], folder)
    assert code == 0
    assert orjson.loads(out)["labels"] == [
        {"source": WRITE_LOOP, "label": "loop", "loop_from_turn_index": 1}]


# --------------------------------------------------------------------------- compare


def _first_refusal_by_replay(sets: list[str]) -> dict[str, str]:
    code, out, _ = run(["replay", "sample_transcripts", "--engine", "gglib",
                        *[arg for s in sets for arg in ("--set", s)]], REPO_ROOT)
    assert code == 0
    found: dict[str, str] = {}
    source = None
    for line in out.splitlines():
        if line and not line.startswith(" "):
            source = line.split("  [")[0]
        match = re.match(r"  first refusal: (turn \d+(?:, call \d+)?) — ", line)
        if match and source:
            found[source] = match.group(1)
    return found


def test_compare_prints_the_same_turn_and_call_as_replay(samples: Path) -> None:
    code, out, _ = run(COMPARE_GGLIB, REPO_ROOT)
    assert code == 0
    a_side = _first_refusal_by_replay(["max_repeated_batch_steps=2"])
    b_side = _first_refusal_by_replay(["max_repeated_batch_steps=4"])
    compared = 0
    blocks = re.findall(r"^\S+ +(\S+).*\n +A: (.*)\n +B: (.*)$", out, re.MULTILINE)
    assert blocks
    for source, a, b in blocks:
        for side, replayed in ((a, a_side), (b, b_side)):
            if side == "not refused":
                assert source not in replayed
                continue
            where = re.match(r"refused at (turn \d+(?:, call \d+)?) \(", side)
            assert where is not None, side
            assert where.group(1) == replayed[source], (source, side)
            compared += 1
    assert compared >= 4  # 1 moved (both sides) and 3 lost (side A)
    # The sample the issue names: replay says turn 4, call 4; so does compare now.
    assert "        A: refused at turn 4, call 4 (loop)" in out


def test_compare_prints_a_note_both_sides_share_once(samples: Path) -> None:
    code, _, err = run(COMPARE_RELEASES, REPO_ROOT)
    assert code == 0
    notes = [line for line in err.splitlines() if line.startswith("loopscope: note: ")]
    assert notes and len(notes) == len(set(notes)), err
    assert "enabled" in notes[0]
