"""``loopscope sweep`` and ``loopscope compare`` as a user runs them.

The headline checks: every sweep cell equals the metrics of ``loopscope replay --json`` run with
that cell's ``--set`` flags, and ``compare`` equals two ``replay`` runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from loopscope.cli import main
from loopscope.experiments.metrics import Outcome, metrics_from_outcomes
from loopscope.formats import load_paths
from loopscope.labels import labels_for_sessions
from tests.conftest import REPO_ROOT, SAMPLES


def run(args: list[str], cwd: Path | None = None) -> tuple[int, str, str]:
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, args, catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout, result.stderr


def json_lines(text: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def samples() -> Path:
    if not (SAMPLES / "labels.csv").is_file():
        pytest.skip("sample_transcripts/ with labels.csv not found")
    return SAMPLES


def replay_metrics(paths: list[str], engine: str, sets: list[str], cwd: Path) -> dict[str, Any]:
    """The metrics of one ``replay --json`` run, counted by hand from its output."""
    args = ["replay", *paths, "--engine", engine, "--json"]
    for s in sets:
        args += ["--set", s]
    code, out, _ = run(args, cwd)
    assert code == 0
    old = os.getcwd()
    os.chdir(cwd)
    try:
        turns = {s.source: len(s.turns) for s in load_paths(paths).sessions}
        labels, _ = labels_for_sessions(paths)
    finally:
        os.chdir(old)
    outcomes = [
        Outcome(
            r["source"],
            None if r["first_refusal"] is None else r["first_refusal"]["turn"],
            any(step["verdict"] == "warn" for step in r["steps"]),
            turns[r["source"]],
        )
        for r in json_lines(out)
    ]
    return metrics_from_outcomes(outcomes, labels).to_json()


@pytest.mark.parametrize(
    ("engine", "vary", "sets"),
    [
        ("gglib", ["max_repeated_batch_steps=1:3", "max_observation_steps=3:15:6"], []),
        ("openclaw", ["warningThreshold=2:6:2", "criticalThreshold=4:8:4"], ["historySize=20"]),
    ],
)
def test_sweep_cells_equal_replay_per_configuration(
    samples: Path, engine: str, vary: list[str], sets: list[str]
) -> None:
    args = ["sweep", "sample_transcripts", "--engine", engine, "--json", "--workers", "1"]
    for v in vary:
        args += ["--vary", v]
    for s in sets:
        args += ["--set", s]
    code, out, _ = run(args, REPO_ROOT)
    assert code == 0
    cells = json_lines(out)
    keys = [v.split("=")[0] for v in vary]
    assert len(cells) == (9 if engine == "gglib" else 6)
    for cell in cells:
        assert set(cell) == {"engine", "config", "metrics"}
        assert cell["engine"] == engine
        assert list(cell["config"]) == keys
        cell_sets = [*sets, *(f"{k}={v}" for k, v in cell["config"].items())]
        assert cell["metrics"] == replay_metrics(["sample_transcripts"], engine, cell_sets, REPO_ROOT)
    # The samples are labelled, so the metrics are about something.
    assert any(c["metrics"]["loops_caught"] for c in cells)
    assert all(c["metrics"]["sessions"] == cells[0]["metrics"]["sessions"] > 5 for c in cells)


def test_sweep_is_the_same_on_worker_processes(samples: Path) -> None:
    base = ["sweep", "sample_transcripts", "--engine", "gglib", "--json",
            "--vary", "max_repeated_batch_steps=1:4", "--vary", "max_stagnation_steps=2:6:2"]
    one = run([*base, "--workers", "1"], REPO_ROOT)
    two = run([*base, "--workers", "2"], REPO_ROOT)
    assert one[0] == two[0] == 0
    assert one[1] == two[1]
    assert len(json_lines(one[1])) == 12


def test_sweep_with_dask_local_is_the_same(samples: Path) -> None:
    pytest.importorskip("distributed")
    base = ["sweep", "sample_transcripts", "--engine", "openclaw", "--json",
            "--vary", "warningThreshold=3:5", "--workers", "1"]
    local = run(base, REPO_ROOT)
    # A real `--dask local` (worker processes) through the installed command.
    proc = subprocess.run(
        [sys.executable, "-m", "loopscope", *base, "--dask", "local"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == local[1]


def test_sweep_table_names_the_best_configuration(samples: Path) -> None:
    code, out, _ = run(["sweep", "sample_transcripts", "--engine", "gglib",
                        "--vary", "max_repeated_batch_steps=1:3"], REPO_ROOT)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("13 sessions, labels: ") and " loop, " in lines[0]
    assert "false_refusals" in lines[1] and "precision" in lines[1]
    assert lines[-1].startswith("best: --set max_repeated_batch_steps=")


def test_sweep_uses_an_explicit_labels_file(samples: Path, tmp_path: Path) -> None:
    labels = tmp_path / "mine.csv"
    labels.write_text("source,label,from_turn\n")  # sources relative to tmp_path: none match
    code, out, err = run(["sweep", "sample_transcripts", "--engine", "gglib", "--json",
                          "--vary", "max_repeated_batch_steps=2:2", "--labels", str(labels)], REPO_ROOT)
    assert code == 0
    m = json_lines(out)[0]["metrics"]
    assert m["loops_caught"] == m["false_refusals"] == m["loops_missed"] == 0
    assert m["precision"] is None and m["recall"] is None
    assert "no labelled sessions" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--vary", "max_repeated_batch_steps=5:1"], "max_repeated_batch_steps: LO (5) must not exceed HI (1)"),
        (["--vary", "max_repeated_batch_steps=1:x"], "max_repeated_batch_steps: range bounds must be integers"),
        (["--vary", "nonsense=1:3"], "nonsense"),
        (["--vary", "max_repeated_batch_steps=1:2", "--vary", "max_repeated_batch_steps=3:4"], "varied twice"),
        (["--vary", "max_repeated_batch_steps=1:2", "--set", "bogus=1"], "bogus"),
        (["--vary", "max_repeated_batch_steps=1:2", "--set", "novalue"], "KEY=VALUE"),
        (["--vary", "max_repeated_batch_steps=1:2", "--labels", "/no/such/labels.csv"], "no/such/labels.csv"),
        ([], "--vary"),
    ],
)
def test_sweep_usage_errors_exit_2_naming_the_key(samples: Path, args: list[str], message: str) -> None:
    code, out, err = run(["sweep", "sample_transcripts", "--engine", "gglib", *args], REPO_ROOT)
    assert code == 2
    assert message in err
    assert out == ""


def test_sweep_reports_a_bad_file_and_still_measures_the_others(samples: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(samples, corpus)
    (corpus / "broken.json").write_text('{"messages": [')
    code, out, err = run(["sweep", str(corpus), "--engine", "gglib", "--json",
                          "--vary", "max_repeated_batch_steps=2:3"])
    assert code == 2
    assert "broken.json" in err
    cells = json_lines(out)
    assert len(cells) == 2 and cells[0]["metrics"]["sessions"] >= 10
    assert cells[0]["metrics"]["loops_caught"] > 0


def test_sweep_warns_about_adjusted_cells(samples: Path) -> None:
    code, out, err = run(["sweep", "sample_transcripts", "--engine", "openclaw",
                          "--vary", "warningThreshold=5:6", "--vary", "criticalThreshold=5:6"], REPO_ROOT)
    assert code == 0
    assert "warningThreshold=5 criticalThreshold=5:" in err
    assert "* the engine adjusted" in out
    assert "best: --set warningThreshold=5 --set criticalThreshold=6" in out


# --------------------------------------------------------------------------- compare


def first_refusals(engine: str, sets: list[str]) -> dict[str, Any]:
    args = ["replay", "sample_transcripts", "--engine", engine, "--json"]
    for s in sets:
        args += ["--set", s]
    code, out, _ = run(args, REPO_ROOT)
    assert code == 0
    return {r["source"]: r["first_refusal"] for r in json_lines(out)}


@pytest.mark.parametrize(
    ("engine", "a", "b"),
    [
        ("gglib", ["max_repeated_batch_steps=2"], ["max_repeated_batch_steps=4"]),
        ("gglib", ["max_observation_steps=none"], ["max_observation_steps=5", "max_stagnation_steps=2"]),
        ("openclaw", ["criticalThreshold=20"], ["warningThreshold=2", "criticalThreshold=4"]),
    ],
)
def test_compare_agrees_with_two_replays(samples: Path, engine: str, a: list[str], b: list[str]) -> None:
    args = ["compare", "sample_transcripts", "--engine", engine, "--json"]
    for s in a:
        args += ["--a", s]
    for s in b:
        args += ["--b", s]
    code, out, _ = run(args, REPO_ROOT)
    assert code == 0
    lines = json_lines(out)
    summary = lines[-1]["summary"]
    changes = lines[:-1]
    ra, rb = first_refusals(engine, a), first_refusals(engine, b)
    expected = [
        {"source": s, "a": ra[s], "b": rb[s],
         "change": "gained" if ra[s] is None else "lost" if rb[s] is None else "moved"}
        for s in ra
        if ra[s] != rb[s]
    ]
    assert changes == expected
    assert changes, "the two configurations should differ on the samples"
    assert summary == {
        "gained": sum(c["change"] == "gained" for c in expected),
        "lost": sum(c["change"] == "lost" for c in expected),
        "moved": sum(c["change"] == "moved" for c in expected),
        "same": len(ra) - len(expected),
    }


def test_compare_shared_set_applies_to_both_sides(samples: Path) -> None:
    code, out, _ = run(["compare", "sample_transcripts", "--engine", "gglib", "--json",
                        "--set", "max_repeated_batch_steps=9",
                        "--a", "max_observation_steps=15", "--b", "max_observation_steps=15"], REPO_ROOT)
    assert code == 0
    assert json_lines(out) == [{"summary": {"gained": 0, "lost": 0, "moved": 0, "same": 13}}]


def test_compare_readable_output(samples: Path) -> None:
    code, out, _ = run(["compare", "sample_transcripts", "--engine", "gglib",
                        "--a", "max_repeated_batch_steps=2", "--b", "max_repeated_batch_steps=4"], REPO_ROOT)
    assert code == 0
    assert "lost    sample_transcripts/write_loop_refused_at_third_batch.json" in out
    assert "        B: not refused" in out
    assert out.rstrip().splitlines()[-1].endswith("unchanged.")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "nothing to compare"),
        (["--a", "bogus=1"], "bogus"),
        (["--b", "warningThreshold=3"], "warningThreshold"),  # an OpenClaw key given to gglib
        (["--a", "max_repeated_batch_steps"], "KEY=VALUE"),
    ],
)
def test_compare_usage_errors_exit_2(samples: Path, args: list[str], message: str) -> None:
    code, out, err = run(["compare", "sample_transcripts", "--engine", "gglib", *args], REPO_ROOT)
    assert code == 2
    assert message in err
    assert out == ""


def test_compare_json_on_a_missing_path_exits_2_but_reports_the_rest(samples: Path) -> None:
    code, out, err = run(["compare", "sample_transcripts", "no-such-folder", "--engine", "gglib",
                          "--json", "--b", "max_repeated_batch_steps=4"], REPO_ROOT)
    assert code == 2
    assert "no-such-folder" in err
    assert json.loads(out.splitlines()[-1])["summary"]["same"] > 0


def test_compare_across_releases_ends_with_the_upgrade_paragraph(samples: Path) -> None:
    args = ["compare", "sample_transcripts", "--engine", "openclaw",
            "--a-version", "2026.6.11", "--b-version", "2026.7.35"]
    code, out, _ = run([*args, "--json"], REPO_ROOT)
    assert code == 0
    closing = json_lines(out)[-1]
    assert closing["summary"]["same"] == 13
    assert closing["summary_text"] == (
        "Moving OpenClaw from 2026.6.11 to 2026.7.35 with the same settings changes nothing for "
        "these 13 sessions: every session is refused, or let through, exactly where it was "
        "before.")
    code, out, _ = run(args, REPO_ROOT)
    assert code == 0 and out.rstrip().endswith("exactly where it was before.")


def test_compare_within_one_release_has_no_upgrade_paragraph(samples: Path) -> None:
    code, out, _ = run(["compare", "sample_transcripts", "--engine", "gglib", "--json",
                        "--b", "max_repeated_batch_steps=4"], REPO_ROOT)
    assert code == 0
    assert "summary_text" not in json_lines(out)[-1]
