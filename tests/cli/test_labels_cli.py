"""``loopscope label`` and ``loopscope labels export`` (issue #18): scripts and CI label
sessions through the same locked path as the dashboard."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.conftest import SAMPLES

from loopscope.cli import main
from loopscope.labels import Label, labels_for_sessions, load_labels, update_label_file

WRITE_LOOP = "write_loop_refused_at_third_batch.json"
LEGIT = "edit_test_edit_test_legitimate.jsonl"


def run(args: list[str], cwd: Path) -> tuple[int, str, str]:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, args, catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout, result.stderr


def conversation(n: int) -> dict[str, object]:
    return {"messages": [
        {"role": "user", "content": f"task {n}"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "x"}]}


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "sessions"
    root.mkdir()
    for name in (WRITE_LOOP, LEGIT):
        shutil.copy(SAMPLES / name, root / name)
    (root / "many.jsonl").write_text(
        "".join(json.dumps(conversation(i)) + "\n" for i in range(3)), encoding="utf-8")
    return root


def test_label_writes_the_sidecar_the_replay_reads(folder: Path) -> None:
    code, out, err = run(["label", WRITE_LOOP, "loop", "--from-turn", "3"], folder)
    assert (code, err) == (0, "")
    assert WRITE_LOOP in out and "loop from turn 3" in out  # as typed; index 2 stored
    code, _, _ = run(["label", LEGIT, "ok", "--note", "checked by CI"], folder)
    assert code == 0
    assert dict(load_labels(folder / "labels.csv").labels) == {
        WRITE_LOOP: Label.loop(WRITE_LOOP, 2), LEGIT: Label.ok(LEGIT)}
    rows = list(csv.DictReader(io.StringIO((folder / "labels.csv").read_text())))
    assert {r["source"]: r["note"] for r in rows} == {LEGIT: "checked by CI", WRITE_LOOP: ""}
    # The replay finds the label from anywhere, keyed by the source it prints.
    found = labels_for_sessions([str(folder)]).labels
    assert found[str(folder / WRITE_LOOP)] == Label.loop(str(folder / WRITE_LOOP), 2)


def test_a_file_of_several_sessions_and_one_of_them(folder: Path) -> None:
    code, out, _ = run(["label", "many.jsonl", "ok"], folder)
    assert code == 0 and out.count("= ok") == 3
    code, _, _ = run(["label", "many.jsonl#1", "loop", "--from-turn", "1"], folder)
    assert code == 0
    labels = dict(load_labels(folder / "labels.csv").labels)
    assert labels == {"many.jsonl#0": Label.ok("many.jsonl#0"),
                      "many.jsonl#1": Label.loop("many.jsonl#1", 0),
                      "many.jsonl#2": Label.ok("many.jsonl#2")}


def test_bad_paths_name_the_file_and_the_others_are_still_labelled(folder: Path) -> None:
    code, out, err = run(["label", "many.jsonl#7", "missing.json", WRITE_LOOP + "#1", ".",
                          LEGIT, "ok"], folder)
    assert code == 2
    assert "many.jsonl#7: many.jsonl holds sessions #0 to #2" in err
    assert "missing.json: no such file" in err
    assert f"{WRITE_LOOP} holds one session" in err
    assert "is a folder" in err
    # The good PATH was written despite the bad ones.
    assert dict(load_labels(folder / "labels.csv").labels) == {LEGIT: Label.ok(LEGIT)}
    assert LEGIT in out


def test_usage_errors_exit_2(folder: Path) -> None:
    code, _, err = run(["label", LEGIT, "ok", "--from-turn", "3"], folder)
    assert code == 2 and "--from-turn only applies to loop" in err
    code, _, _ = run(["label", LEGIT, "maybe"], folder)
    assert code == 2
    assert not (folder / "labels.csv").exists()


def test_labels_file_elsewhere_must_contain_the_sessions(folder: Path, tmp_path: Path) -> None:
    other = tmp_path / "other" / "labels.csv"
    other.parent.mkdir()
    code, _, err = run(["label", LEGIT, "ok", "--labels", str(other)], folder)
    assert code == 2 and "not inside the folder of" in err and str(other) in err
    code, _, _ = run(["label", f"sessions/{LEGIT}", "ok", "--labels", "labels.csv"], tmp_path)
    assert code == 0
    assert dict(load_labels(tmp_path / "labels.csv").labels) == {
        f"sessions/{LEGIT}": Label.ok(f"sessions/{LEGIT}")}


def test_a_file_it_cannot_rewrite_safely_is_left_alone(folder: Path) -> None:
    sidecar = folder / "labels.csv"
    sidecar.write_text("source,label\nx.json,maybe\n", encoding="utf-8")
    code, _, err = run(["label", LEGIT, "ok"], folder)
    assert code == 2 and "labels.csv: labels not saved" in err and "maybe" in err
    assert sidecar.read_text(encoding="utf-8") == "source,label\nx.json,maybe\n"


def test_nearest_existing_sidecar_up_to_the_working_folder_is_used(folder: Path) -> None:
    (folder / "labels.csv").write_text("source,label,from_turn\n", encoding="utf-8")
    sub = folder / "sub"
    sub.mkdir()
    shutil.copy(SAMPLES / LEGIT, sub / LEGIT)
    code, _, _ = run(["label", f"sub/{LEGIT}", "ok"], folder)
    assert code == 0 and not (sub / "labels.csv").exists()
    assert list(load_labels(folder / "labels.csv").labels) == [f"sub/{LEGIT}"]


def test_export_csv_and_json(folder: Path) -> None:
    run(["label", WRITE_LOOP, "loop", "--from-turn", "3"], folder)
    run(["label", "many.jsonl#2", "ok"], folder)
    code, out, _ = run(["labels", "export"], folder)
    assert code == 0
    assert out == f"source,label,loop_from_turn_index\nmany.jsonl#2,ok,\n{WRITE_LOOP},loop,2\n"
    code, out, _ = run(["labels", "export", "--format", "json", str(folder)], folder.parent)
    assert code == 0
    assert json.loads(out) == {"labels": [
        {"source": str(folder / "many.jsonl#2"), "label": "ok", "loop_from_turn_index": None},
        {"source": str(folder / WRITE_LOOP), "label": "loop", "loop_from_turn_index": 2}]}


def test_export_neutralises_formulas_and_reports_problems(folder: Path) -> None:
    (folder / "labels.csv").write_text(
        "source,label,from_turn\n'=1+1.json,ok,\n+x.json,loop,\nbad.json,maybe,\n",
        encoding="utf-8")
    code, out, err = run(["labels", "export"], folder)
    assert code == 0  # a bad row is a warning: the rest is exported
    assert "bad.json" in err and "maybe" in err
    assert out == "source,label,loop_from_turn_index\n'+x.json,loop,\n'=1+1.json,ok,\n"


def test_export_without_a_labels_file_exits_2(tmp_path: Path) -> None:
    code, _, err = run(["labels", "export"], tmp_path)
    assert code == 2 and "no labels.csv in the current folder" in err
    code, _, err = run(["labels", "export", "--labels", str(tmp_path / "nope.csv")], tmp_path)
    assert code == 2 and "nope.csv" in err


def test_the_command_and_the_dashboard_path_write_at_once(folder: Path) -> None:
    """A `loopscope label` process and this process (the dashboard's call) writing the same
    labels.csv at the same time keep every label."""
    for i in range(40):
        shutil.copy(SAMPLES / LEGIT, folder / f"c{i:02d}.jsonl")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    names = [f"c{i:02d}.jsonl" for i in range(40)]
    script = ("import sys\nfrom loopscope.cli import main\nfor n in sys.argv[1:]:\n"
              "    try:\n        main(['label', n, 'ok'])\n"
              "    except SystemExit as done:\n        assert done.code == 0, done.code\n")
    proc = subprocess.Popen([sys.executable, "-c", script, *names], cwd=folder, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (folder / "labels.csv").exists():  # the command is up and writing
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.005)
    for i in range(40):
        update_label_file(folder / "labels.csv", f"d{i:02d}.json", "loop", i)
    output, errors = proc.communicate(timeout=120)
    assert proc.returncode == 0, errors
    labels = load_labels(folder / "labels.csv").labels
    assert len(labels) == 80, output
