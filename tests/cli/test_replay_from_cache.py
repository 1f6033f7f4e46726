"""``loopscope replay`` reads a folder's sessions back from the on-disk cache when ``loopscope
prepare`` (or the dashboard) prepared exactly these files: the output, warnings and exit code
are the same as an import's, byte for byte, and a changed folder is always imported again."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.cli.test_replay_cli import run_cli
from tests.conftest import SAMPLES

from loopscope.cli import replay as replay_module
from loopscope.corpus import read_prepared
from loopscope.engines import engine_names, get_engine

ENGINES = list(engine_names())


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOOPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("LOOPSCOPE_CACHE", raising=False)
    target = tmp_path / "sessions"
    shutil.copytree(SAMPLES, target)
    # A file that does not import: its error must come from the cache as from an import.
    (target / "broken.json").write_text('{"messages": [', encoding="utf-8")
    return target


def _prepare(folder: Path) -> None:
    code, _out, err = run_cli(["prepare", str(folder)])
    assert code == 0, err


def _imported(args: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    with monkeypatch.context() as m:
        m.setenv("LOOPSCOPE_CACHE", "off")
        return run_cli(args, cwd=cwd)


def _never(*_args: Any, **_kwargs: Any) -> Any:
    raise AssertionError("this path must not be taken")


@pytest.mark.parametrize("engine", ENGINES)
def test_replay_from_the_cache_equals_an_import(engine: str, folder: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    _prepare(folder)
    cases = [
        ["replay", "sessions", "--engine", engine, "--json"],
        ["replay", str(folder) + "/", "--engine", engine, "--json", "--fail-on-refusal"],
        ["replay", "sessions", "--engine", engine, "--verbose", "--fail-on-false-refusal"],
    ]
    for args in cases:
        expected = _imported(args, folder.parent, monkeypatch)
        assert expected[1].strip(), "the import gave no output: nothing is compared"
        with monkeypatch.context() as m:
            m.setattr(replay_module, "_file_parts", _never)  # from the cache, or it fails
            assert run_cli(args, cwd=folder.parent) == expected, args


def test_the_sources_are_named_as_the_caller_named_the_folder(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _prepare(folder)
    monkeypatch.chdir(folder.parent)
    found = read_prepared("sessions", get_engine("gglib"), None)
    assert found is not None
    assert [f.path for f in found.files][:3] == [
        "sessions/README.md", "sessions/ab_cycle_escapes_gglib_trips_pingpong.json",
        "sessions/broken.json"]
    assert found.files[0].source(found.files[0].reached_as) == found.files[0].path
    assert len(found.prepared) == sum(len(f.rows) for f in found.files)


def test_a_changed_file_is_imported_again(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _prepare(folder)
    args = ["replay", "sessions", "--engine", "gglib", "--json"]
    before = run_cli(args, cwd=folder.parent)
    # Same length, other content, another modification time: the snapshot no longer matches.
    target = folder / "write_loop_refused_at_third_batch.json"
    text = target.read_text(encoding="utf-8")
    target.write_text(text.replace('"write_file"', '"write_fil_"'), encoding="utf-8")
    assert read_prepared(str(folder), get_engine("gglib"), None) is None
    monkeypatch.setattr(replay_module, "_prepared_parts", _never)
    after = run_cli(args, cwd=folder.parent)
    assert after == _imported(args, folder.parent, monkeypatch)
    assert after[1] != before[1]


@pytest.mark.parametrize("extra", [
    ["--format", "openai_chat"],
    ["--import-limit", "max_file_bytes=1000000"],
    ["--openclaw-version", "2026.9.6"],  # prepared at the default version only
])
def test_options_the_snapshot_was_not_made_with_import(extra: list[str], folder: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    _prepare(folder)
    args = ["replay", "sessions", "--engine", "openclaw", "--json", *extra]
    monkeypatch.setattr(replay_module, "_prepared_parts", _never)
    expected = _imported(args, folder.parent, monkeypatch)
    assert '"session"' in expected[1], expected  # (exit 2: the broken file)
    assert run_cli(args, cwd=folder.parent) == expected


def test_nothing_is_read_back_when_the_cache_is_off_or_empty(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert read_prepared(str(folder), get_engine("gglib"), None) is None  # never prepared
    _prepare(folder)
    assert read_prepared(str(folder), get_engine("gglib"), None) is not None
    monkeypatch.setenv("LOOPSCOPE_CACHE", "off")
    assert read_prepared(str(folder), get_engine("gglib"), None) is None


def test_a_folder_never_prepared_is_not_looked_up_while_others_are_kept(
        folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Naming a folder's snapshot needs every engine's code, numpy and every file's stamp
    (~0.2 s at 2,000 files): a replay of a folder with no snapshot skips it, even when the
    cache keeps other folders' snapshots."""
    other = tmp_path / "other"
    shutil.copytree(folder, other)
    _prepare(other)
    monkeypatch.setattr("loopscope.corpus.readback.snapshot_names", _never)
    assert read_prepared(str(folder), get_engine("gglib"), None) is None
    code, out, err = run_cli(["replay", str(folder), "--engine", "gglib", "--json"])
    assert code == 2 and out.count('"session"') >= 10, err  # (exit 2: the broken file)


def test_a_snapshot_kept_without_its_folder_mark_is_found_again_after_the_next_load(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The mark is only a hint: a snapshot written before marks existed (or a mark deleted)
    costs one import; the next ``prepare`` (or dashboard start) marks the folder again."""
    from loopscope import cache

    _prepare(folder)
    assert read_prepared(str(folder), get_engine("gglib"), None) is not None
    marks = list((cache.cache_dir() / "corpus").glob("*.root"))
    assert len(marks) == 1
    marks[0].unlink()
    assert read_prepared(str(folder), get_engine("gglib"), None) is None
    _prepare(folder)  # (reads the kept snapshot: nothing is imported or written)
    assert marks[0].is_file()
    assert read_prepared(str(folder), get_engine("gglib"), None) is not None
    assert cache.clear()[0] >= 1 and not marks[0].exists()


@pytest.mark.parametrize("engine,a,b", [
    ("gglib", "max_repeated_batch_steps=2", "max_repeated_batch_steps=4"),
    ("openclaw", "criticalThreshold=4", "criticalThreshold=9"),
    ("openhands", "action_observation=3", "action_observation=6"),
])
def test_compare_from_the_cache_equals_an_import(engine: str, a: str, b: str, folder: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """``loopscope compare`` reads a prepared folder back as ``replay`` does: the same
    changes, labels, problems and exit code, byte for byte."""
    from loopscope.cli import experiments

    _prepare(folder)
    cases = [
        ["compare", "sessions", "--engine", engine, "--a", a, "--b", b, "--json"],
        ["compare", str(folder) + "/", "--engine", engine, "--a", a, "--b", b],
    ]
    for args in cases:
        expected = _imported(args, folder.parent, monkeypatch)
        assert expected[0] == 2 and "broken.json" in expected[2], expected  # (the broken file)
        assert expected[1].strip(), "the import gave no output: nothing is compared"
        with monkeypatch.context() as m:
            m.setattr(experiments, "_load_sessions", _never)  # from the cache, or it fails
            assert run_cli(args, cwd=folder.parent) == expected, args


def test_compare_of_two_prepare_keys_imports(folder: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Two OpenClaw releases prepare differently; the cache holds the default release only."""
    from loopscope.cli import experiments

    _prepare(folder)
    args = ["compare", "sessions", "--engine", "openclaw", "--a-version", "2026.6.11",
            "--b-version", "2026.9.6", "--json"]
    expected = _imported(args, folder.parent, monkeypatch)
    seen: list[object] = []
    original = experiments._load_sessions
    monkeypatch.setattr(experiments, "_load_sessions",
                        lambda *a: seen.append(a) or original(*a))
    assert run_cli(args, cwd=folder.parent) == expected
    assert seen, "imported"


@pytest.mark.parametrize("engine,vary", [
    ("gglib", ["--vary", "max_repeated_batch_steps=1:4", "--vary", "max_observation_steps=3:9:3"]),
    ("openclaw", ["--vary", "criticalThreshold=4:10:2"]),
    ("openhands", ["--vary", "action_observation=2:5"]),
])
def test_sweep_from_the_cache_equals_an_import(engine: str, vary: list[str], folder: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """``loopscope sweep`` reads a prepared folder back too: the same cells, metrics against
    the same labels, problems and exit code, byte for byte."""
    from loopscope.cli import experiments

    _prepare(folder)
    cases = [
        ["sweep", "sessions", "--engine", engine, *vary, "--json"],
        ["sweep", str(folder) + "/", "--engine", engine, *vary],
    ]
    for args in cases:
        expected = _imported(args, folder.parent, monkeypatch)
        assert expected[0] == 2 and "broken.json" in expected[2], expected
        assert '"loops_caught"' in expected[1] or "loops_caught" in expected[1]
        with monkeypatch.context() as m:
            m.setattr(experiments, "_load_sessions", _never)  # from the cache, or it fails
            assert run_cli(args, cwd=folder.parent) == expected, args


@pytest.mark.parametrize("engine", ["openclaw", "gglib"])
@pytest.mark.parametrize("as_json", [True, False])
def test_the_cache_does_no_more_work_than_an_import(engine: str, as_json: bool, folder: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay read back from the cache must never cost more than importing the files
    (issue #34): the work that grows with the corpus, counted on both paths in this process
    (one worker), is no larger from the cache — numpy arrays built from a table's whole
    columns (a copy per session made reading a corpus quadratic in its size) and the
    per-file lines of ``--verbose`` built though not printed."""
    import numpy as np

    _prepare(folder)
    args = ["replay", "sessions", "--engine", engine, "--workers", "1"]
    if as_json:
        args.append("--json")

    def counted(run: Any = None) -> tuple[Any, dict[str, int]]:
        counts = {"numpy.append elements": 0, "file summary lines": 0}
        append, summary = np.append, replay_module._file_summary_line

        def counting_append(arr: Any, values: Any, *rest: Any, **kw: Any) -> Any:
            out = append(arr, values, *rest, **kw)
            counts["numpy.append elements"] += int(out.size)
            return out

        def counting_summary(*a: Any) -> str:
            counts["file summary lines"] += 1
            return summary(*a)

        with monkeypatch.context() as m:
            m.setattr(np, "append", counting_append)
            m.setattr(replay_module, "_file_summary_line", counting_summary)
            return (run or (lambda: run_cli(args, cwd=folder.parent)))(), counts

    with monkeypatch.context() as m:
        m.setenv("LOOPSCOPE_CACHE", "off")
        m.setattr(replay_module, "_prepared_parts", _never)
        imported, import_work = counted()
    with monkeypatch.context() as m:
        m.setattr(replay_module, "_file_parts", _never)  # from the cache, or it fails
        cached, cache_work = counted()
        # Opening the table checks its columns once (whole arrays): not work per session.
        found, opening = counted(lambda: read_prepared(str(folder), get_engine(engine), None))
    assert found is not None and cached == imported
    for what, n in cache_work.items():
        assert n - opening[what] <= import_work[what], (what, cache_work, opening, import_work)


@pytest.mark.parametrize("engine", ["openclaw", "gemini-cli"])
def test_replay_from_the_cache_in_workers_equals_an_import(engine: str, folder: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``--json`` the sessions read back from the cache are replayed in forked workers,
    as an import's files are: the same lines, in the same order, and the same exit code."""
    _prepare(folder)
    args = ["replay", "sessions", "--engine", engine, "--json", "--workers", "2"]
    expected = _imported(args, folder.parent, monkeypatch)
    assert expected[1].count('"session"') >= 10
    tasks: list[object] = []
    original = replay_module._in_pool
    monkeypatch.setattr(replay_module, "_file_parts", _never)
    monkeypatch.setattr(replay_module, "_in_pool",
                        lambda job, runs, task, workers: tasks.extend(runs)
                        or original(job, runs, task, workers))
    assert run_cli(args, cwd=folder.parent) == expected
    assert len(tasks) >= 2, "replayed in workers"


_SWEEPS = {"gglib": ["--vary", "max_repeated_batch_steps=1:3"],
           "openclaw": ["--vary", "criticalThreshold=4:10:3"],
           "openhands": ["--vary", "action_observation=2:4"],
           "gemini-cli": ["--vary", "TOOL_CALL_LOOP_THRESHOLD=2:4"],
           "qwen-code": ["--vary", "TOOL_CALL_LOOP_THRESHOLD=2:4"]}
_COMPARES = {"gglib": ["--a", "max_repeated_batch_steps=2", "--b", "max_repeated_batch_steps=4"],
             "openclaw": ["--a", "criticalThreshold=4", "--b", "criticalThreshold=9"],
             "openhands": ["--a", "action_observation=3", "--b", "action_observation=6"],
             "gemini-cli": ["--a", "TOOL_CALL_LOOP_THRESHOLD=2", "--b",
                            "TOOL_CALL_LOOP_THRESHOLD=8"],
             "qwen-code": ["--a", "TOOL_CALL_LOOP_THRESHOLD=2", "--b",
                           "TOOL_CALL_LOOP_THRESHOLD=8"]}


@pytest.mark.parametrize("command", ["sweep", "compare"])
@pytest.mark.parametrize("engine", ENGINES)
def test_sweep_and_compare_from_the_cache_do_not_read_the_whole_string_pool(
        command: str, engine: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``sweep`` and ``compare`` print counts and first refusals, which every engine's batch
    run (``run_many``) reads off the table's columns (and a few strings: gglib's tool names):
    read back from the cache, they must not read the table's whole string pool (the sessions'
    texts — most of a snapshot, hundreds of MB on a large corpus — which an import never
    builds), neither to check it nor to use it."""
    from loopscope import cache
    from loopscope.cli import experiments

    assert set(_SWEEPS) == set(ENGINES) == set(_COMPARES)
    # (the pools of the samples are small: kept piece by piece as a large corpus's are)
    monkeypatch.setattr(cache, "PIECEWISE_FROM_BYTES", 1)
    _prepare(folder)
    args = [command, "sessions", "--engine", engine,
            *(_SWEEPS if command == "sweep" else _COMPARES)[engine], "--json"]
    expected = _imported(args, folder.parent, monkeypatch)
    assert expected[1].strip() and expected[0] == 2, expected  # (exit 2: the broken file)
    whole: list[int] = []
    read_whole = cache.KeptBytes.__array__
    monkeypatch.setattr(cache.KeptBytes, "__array__",
                        lambda self, *a, **kw: whole.append(len(self)) or read_whole(self, *a, **kw))
    monkeypatch.setattr(experiments, "_load_sessions", _never)  # from the cache, or it fails
    assert run_cli(args, cwd=folder.parent) == expected
    assert whole == [], f"the whole pool read: {whole} bytes"
    # The check is live: a replay, which prints every step, reads the whole pool first.
    monkeypatch.setattr(replay_module, "_file_parts", _never)
    code, _out, _err = run_cli(["replay", "sessions", "--engine", engine, "--json"],
                               cwd=folder.parent)
    assert code == 2 and whole, "the pool is kept piece by piece"


def test_a_damaged_piece_of_a_table_read_by_a_sweep_imports_instead(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pool not read whole is checked piece by piece as it is used: a damaged piece met
    during the batch runs deletes the snapshot, and the command imports the files instead
    (the same output)."""
    from loopscope import cache
    from loopscope.experiments import sweep as sweep_module

    monkeypatch.setattr(cache, "PIECEWISE_FROM_BYTES", 1)
    _prepare(folder)
    args = ["sweep", "sessions", "--engine", "openhands", *_SWEEPS["openhands"], "--json"]
    expected = _imported(args, folder.parent, monkeypatch)
    original = sweep_module.sweep_prepared

    def damaged(engine: str, prepared: Any, *a: Any, **kw: Any) -> Any:
        pool = prepared.columns["string_bytes"]
        assert isinstance(pool, cache.KeptBytes)
        pool._checksums = pool._checksums ^ 1  # (every piece now fails its check)
        pool.read(0, 1)
        return original(engine, prepared, *a, **kw)

    monkeypatch.setattr("loopscope.cli.experiments.sweep_prepared", damaged)
    assert run_cli(args, cwd=folder.parent) == expected
    assert read_prepared(str(folder), get_engine("openhands"), None) is None  # (deleted)
