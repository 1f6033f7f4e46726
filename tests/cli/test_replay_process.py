"""How ``loopscope replay`` runs: files in worker processes (runs of consecutive files per task),
the output the same as in one process; and a start that imports only what the command needs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.cli.test_replay_cli import run_cli
from tests.conftest import SAMPLES

from loopscope.cli import replay as replay_module


@pytest.fixture
def many_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The samples four times over (and a file that does not import): enough files that a
    worker's task holds a run of several."""
    monkeypatch.setenv("LOOPSCOPE_CACHE", "off")
    target = tmp_path / "sessions"
    for copy in range(4):
        shutil.copytree(SAMPLES, target / f"copy{copy}")
    (target / "copy2" / "broken.json").write_text('{"messages": [', encoding="utf-8")
    return target


@pytest.mark.parametrize("engine", ["gglib", "openclaw"])
def test_workers_give_the_output_of_one_process(engine: str, many_files: Path) -> None:
    files = sum(1 for _ in many_files.rglob("*.json*"))
    assert replay_module._run_length(files, 2) > 1, "runs of one file: the test proves nothing"
    for output in (["--json"], ["--verbose"]):
        args = ["replay", str(many_files), "--engine", engine, *output]
        alone = run_cli([*args, "--workers", "1"])
        assert alone[0] == 2 and "broken.json" in alone[2]
        for workers in ("2", "3"):
            assert run_cli([*args, "--workers", workers]) == alone, (output, workers)


def test_a_run_of_files_is_never_more_than_sixteen_and_every_worker_gets_several() -> None:
    for files in (1, 7, 16, 17, 100, 2_000, 20_000):
        for workers in (2, 3, 8):
            size = replay_module._run_length(files, workers)
            assert 1 <= size <= 16
            assert size == 16 or files // size >= 8 * workers or size == 1


def test_replay_of_one_engine_imports_neither_the_other_engines_nor_numpy(
        tmp_path: Path) -> None:
    """The start of a cold replay is paid before any file is read: only the chosen engine's
    code (``--openclaw-version`` and ``--help`` still list every engine's releases)."""
    script = (
        "import sys\n"
        "from loopscope.cli import main\n"
        "try:\n"
        f"    main(['replay', {str(SAMPLES / 'ab_cycle_escapes_gglib_trips_pingpong.json')!r}, '--engine', 'gglib',"
        " '--json'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "found = sorted(m for m in sys.modules if m == 'numpy' or m.startswith(("
        "'loopscope.engines.openclaw', 'loopscope.engines.openhands', "
        "'loopscope.engines.gemini_cli', 'loopscope.experiments', 'loopscope.cli.labels')))\n"
        "print('IMPORTED', found, file=sys.stderr)\n")
    env = dict(os.environ, LOOPSCOPE_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("LOOPSCOPE_CACHE", None)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=120)
    assert '"engine":"gglib"' in proc.stdout, proc.stderr
    assert "IMPORTED []" in proc.stderr, proc.stderr


def test_version_options_still_parse_and_are_listed() -> None:
    sample = str(SAMPLES / "ab_cycle_escapes_gglib_trips_pingpong.json")
    code, out, err = run_cli(["replay", sample, "--engine", "openclaw", "--openclaw-version",
                              "2026.9.6", "--json"])
    assert code == 0 and '"engine":"openclaw"' in out, err
    code, out, err = run_cli(["replay", sample, "--engine", "openclaw",
                              "--openclaw-version=2026.9.6", "--json"])
    assert code == 0 and '"engine":"openclaw"' in out, err
    code, _out, err = run_cli(["replay", sample, "--engine", "gglib", "--openclaw-version",
                               "2026.9.6"])
    assert code == 2 and "applies to --engine openclaw only" in err
    code, out, _err = run_cli(["replay", "--help"])
    assert code == 0 and "--openclaw-version VERSION" in out
