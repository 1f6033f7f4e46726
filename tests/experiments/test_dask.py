"""The same sweep on a Dask LocalCluster gives exactly the local answer."""

from __future__ import annotations

import pytest

from loopscope.experiments.sweep import build_cells, parse_axis, run_sweep
from tests.experiments._sessions import Label, make_session

distributed = pytest.importorskip("distributed")

from loopscope.experiments.dask_backend import dask_client, dask_runner  # noqa: E402


def test_dask_local_cluster_matches_the_local_sweep() -> None:
    sessions = [
        make_session("d/loop.json", [("user", "go")] + [("call", "write_file", {"p": 1}, "ok")] * 6),
        make_session("d/poll.json", [("call", "get_terminal_output", {}, "same")] * 20),
        make_session("d/good.json", [("call", "write_file", {"p": 1}, "ok"), ("call", "run_tests", {}, "fail")] * 3),
        make_session("d/prose.json", [("say", "thinking")] * 8),
        make_session("d/mixed.json", [("call", "read_file", {"p": 2}, "x")] * 4 + [("say", "done")]),
    ]
    labels = {
        "d/loop.json": Label("loop", 1),
        "d/poll.json": Label("loop", 3),
        "d/good.json": Label("ok"),
        "d/prose.json": Label("loop"),
    }
    axes = [parse_axis("max_repeated_batch_steps=1:4"), parse_axis("max_observation_steps=2:10:4")]
    cells = build_cells("gglib", axes)
    local = run_sweep("gglib", sessions, cells, labels, axes=axes, workers=1)

    seen: list[int] = []
    with dask_client("local", workers=2, processes=False) as client:
        on_dask = run_sweep(
            "gglib", sessions, cells, labels, axes=axes, workers=2,
            runner=dask_runner(client), progress=seen.append,
        )
    assert on_dask.cells == local.cells
    assert sum(seen) == len(sessions)
    assert len({c.metrics for c in local}) > 1


def test_cluster_workers_counts_the_local_cluster() -> None:
    from loopscope.experiments.dask_backend import cluster_workers

    with dask_client("local", workers=2, processes=False) as client:
        assert cluster_workers(client) == 2


def test_an_unreachable_scheduler_is_a_clear_error() -> None:
    from loopscope.experiments.dask_backend import DaskUnavailable

    with pytest.raises(DaskUnavailable, match=r"tcp://127\.0\.0\.1:9"), dask_client("tcp://127.0.0.1:9", timeout="1s"):
        pass


def _corpus_facts(c: object) -> dict[str, object]:
    """What a corpus says: every file's outcome, every session, each engine's prepared data
    and default re-run."""
    from loopscope.engines import engine_names, get_engine

    out: dict[str, object] = {
        "files": [(f.path, f.detection, f.problems, f.calls_seen, f.calls_imported,
                   f.calls_set_aside) for f in c.report.files],  # type: ignore[attr-defined]
        "heads": c.heads,  # type: ignore[attr-defined]
    }
    for name in engine_names():
        eng = get_engine(name)
        runs = c.run_many(eng, eng.default_config())  # type: ignore[attr-defined]
        out[name] = ([eng.encode_prepared(p) for p in c.prepared(eng)],  # type: ignore[attr-defined]
                     runs.refusal_counts.tolist(), runs.warning_counts.tolist(),
                     runs.first_refusals())
    return out


def test_prepare_on_a_dask_cluster_equals_preparing_here(tmp_path: object,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The import and prepare step on a LocalCluster (tasks of a few files each) gives the
    corpus this process gives."""
    from pathlib import Path

    from loopscope.corpus import build_corpus
    from loopscope.experiments.dask_backend import dask_ingest
    from loopscope.formats import expand_paths

    monkeypatch.setenv("LOOPSCOPE_CACHE", "off")
    samples = Path(__file__).resolve().parents[2] / "sample_transcripts"
    found, _ = expand_paths([str(samples)])
    files = [(p, not s) for p, s in found] * 3
    here = build_corpus(files, fingerprint="t", origin="folder", root=str(samples), workers=1)
    seen: list[float] = []
    with dask_client("local", workers=2, processes=False) as client:
        there = build_corpus(files, fingerprint="t", origin="folder", root=str(samples),
                             ingest_with=dask_ingest(client, chunk=4),
                             progress=lambda f, _t: seen.append(f))
    assert _corpus_facts(there) == _corpus_facts(here)
    assert seen and max(seen) == 1.0


def test_loopscope_prepare_with_dask_local_fills_the_cache(
        tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """``loopscope prepare --dask local`` (worker processes) keeps the folder's corpus in the
    cache: opening the folder then imports nothing, and the corpus equals one prepared here."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from loopscope import corpus as corpus_mod
    from loopscope.corpus import ingestion
    from loopscope.formats import expand_paths

    root = Path(__file__).resolve().parents[2]
    folder = Path(str(tmp_path)) / "sessions"
    shutil.copytree(root / "sample_transcripts", folder)
    cache = Path(str(tmp_path)) / "cache"
    env = {**os.environ, "LOOPSCOPE_CACHE_DIR": str(cache)}
    env.pop("LOOPSCOPE_CACHE", None)
    proc = subprocess.run([sys.executable, "-m", "loopscope", "prepare", str(folder), "--dask",
                           "local", "--workers", "2"], cwd=root, capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert " 13 sessions, " in proc.stdout and "kept in" in proc.stdout
    found, _ = expand_paths([str(folder.resolve())])
    files = [(p, not s) for p, s in found]
    calls: list[object] = []
    original = ingestion.ingest
    with monkeypatch.context() as m:
        m.setenv("LOOPSCOPE_CACHE_DIR", str(cache))
        m.delenv("LOOPSCOPE_CACHE", raising=False)
        m.setattr(ingestion, "ingest", lambda *a, **k: calls.append(a) or original(*a, **k))
        kept = corpus_mod.build_corpus(files, fingerprint="t", origin="folder",
                                       root=str(folder.resolve()))
    assert calls == [] and kept.cached_files == len(files)
    with monkeypatch.context() as m:
        m.setenv("LOOPSCOPE_CACHE", "off")
        here = corpus_mod.build_corpus(files, fingerprint="t", origin="folder",
                                       root=str(folder.resolve()), workers=1)
    assert _corpus_facts(kept) == _corpus_facts(here)


def test_prepare_with_dask_local_writes_the_local_snapshot_byte_for_byte(
        tmp_path: object) -> None:
    """``loopscope prepare --dask local`` cuts its tasks as the local import cuts its parts
    (each part's string pools are its own), so both keep the same snapshot file, byte for
    byte — on a folder large enough for the local process pool (its parts of several files,
    where the Dask tasks used to be larger)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from tests.test_cache_ingest import _benchmark_folder

    root = Path(__file__).resolve().parents[2]
    folder = _benchmark_folder(Path(str(tmp_path)) / "sessions", 96)
    snapshots = []
    for name, extra in (("here", []), ("dask", ["--dask", "local"])):
        cache = Path(str(tmp_path)) / name
        env = {**os.environ, "LOOPSCOPE_CACHE_DIR": str(cache)}
        env.pop("LOOPSCOPE_CACHE", None)
        proc = subprocess.run([sys.executable, "-m", "loopscope", "prepare", str(folder),
                               "--workers", "2", *extra], cwd=root, capture_output=True,
                              text=True, timeout=300, env=env)
        assert proc.returncode == 0, proc.stderr
        assert " 96 sessions, " in proc.stdout
        found = list((cache / "prepared" / "corpus").glob("*.npz"))
        assert len(found) == 1
        snapshots.append(found[0])
    here, there = snapshots
    assert here.name == there.name
    assert here.read_bytes() == there.read_bytes()
