"""What the command line says, in words a person reads: counts pick their own word (no
"session(s)"), a file that is no recording says what it is and which formats loopscope reads,
and ``loopscope engines`` fits the terminal."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.conftest import SAMPLES

from loopscope.cli import main
from loopscope.formats.detect import FORMAT_NAMES


def run(args: list[str], **env: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, args, catch_exceptions=False, env=env or None)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The samples, their labels, a file of random bytes and a JSON file that is no recording."""
    if not (SAMPLES / "labels.csv").is_file():
        pytest.skip("sample_transcripts/ with labels.csv not found")
    monkeypatch.setenv("LOOPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("LOOPSCOPE_CACHE", raising=False)
    target = tmp_path / "sessions"
    shutil.copytree(SAMPLES, target)
    noise = random.Random(33)
    (target / "random.jsonl").write_bytes(bytes(noise.randrange(256) for _ in range(3000)))
    (target / "notes.json").write_text('{"hello": "world", "items": [1, 2, 3]}\n')
    return target


def _ours(text: str) -> str:
    """The text without the lines ``replay``'s own summary prints (cli/replay.py, another
    change's) and the samples' recorded words ("target(s)", from a cargo log)."""
    lines = [line for line in text.splitlines()
             if "replayed with" not in line and not line.startswith("loopscope: import summary")
             and not line.startswith("  ")]
    return "\n".join(lines).replace("target(s)", "")


def test_no_command_counts_with_s_in_brackets(folder: Path) -> None:
    commands = [
        ["replay", str(folder), "--engine", "gglib", "--verbose"],
        ["replay", str(folder / "random.jsonl"), str(folder / "notes.json"), "--engine",
         "openhands"],
        ["compare", str(folder), "--engine", "openclaw", "--a-version", "2026.6.11",
         "--b-version", "2026.9.6", "--set", "warningThreshold=3"],
        ["compare", str(folder), "--engine", "gglib", "--b", "max_repeated_batch_steps=3"],
        ["sweep", str(folder), "--engine", "gglib", "--vary", "max_repeated_batch_steps=1:4"],
        ["engines"],
        ["prepare", str(folder), "--workers", "1"],
        ["cache", "info"],
        ["cache", "clear"],
    ]
    for args in commands:
        _, out, err = run(args)
        text = _ours(out + "\n" + err)
        assert "(s)" not in text, (args, [x for x in text.splitlines() if "(s)" in x])
    # the lines left out above are only replay's summary, as far as "(s)" goes
    _, out, err = run(commands[0])
    assert "session" in out


def test_a_file_that_is_no_recording_says_what_it_is_and_what_loopscope_reads(
        folder: Path) -> None:
    code, _, err = run(["replay", str(folder / "random.jsonl"), str(folder / "notes.json"),
                        "--engine", "gglib"])
    assert code == 2
    lines = err.splitlines()
    assert (f"{folder / 'random.jsonl'}: error: not a session recording loopscope reads: "
            "binary data, not text [unknown_format]") in lines
    assert (f"{folder / 'notes.json'}: error: not a session recording loopscope reads (JSON "
            'object with keys "hello", "items") [unknown_format]') in lines
    (reads,) = [line for line in lines if line.startswith("loopscope reads: ")]
    assert all(name in reads for name in FORMAT_NAMES.values())
    assert reads.endswith('(see the README, "Session formats"); --format NAME forces one.')
    # in a folder, such files are warnings (the others load): the list is printed once too
    _, _, err = run(["replay", str(folder), "--engine", "gglib"])
    assert sum(line.startswith("loopscope reads: ") for line in err.splitlines()) == 1
    # a folder whose every file is a recording says nothing of the kind
    _, _, err = run(["replay", str(SAMPLES), "--engine", "gglib"])
    assert "loopscope reads:" not in err


@pytest.mark.parametrize(("columns", "width"), [("300", 100), ("72", 72), ("10", 40)])
def test_engines_fits_the_terminal(columns: str, width: int) -> None:
    """Wrapped at the terminal's width, never past 100 characters (nor below 40)."""
    code, out, _ = run(["engines"], COLUMNS=columns)
    assert code == 0
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= width
    assert max(len(line) for line in lines) > width - 15  # wrapped near the width, not short
    # nothing is lost: every setting is still there, once per version
    assert sum(line.lstrip().startswith("warningThreshold (") for line in lines) == 2
