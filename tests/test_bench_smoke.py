"""A small-scale smoke run of the benchmark (not a timed test: it checks that every part runs
and reports its figures; the figures themselves are for benchmarks/README.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_benchmark_runs_at_small_scale(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "bench.py"), "--sessions", "24",
         "--workdir", str(tmp_path), "--skip-node", "--skip-browser", "--ingest-runs", "1",
         "--repeats", "1"],
        capture_output=True, text=True, timeout=300, cwd=REPO,
        env={**__import__("os").environ, "LOOPSCOPE_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("BENCH "))
    figures = json.loads(line[len("BENCH "):])
    assert figures["sessions"] == 24
    for key in ("warm_rerun_both_batch_ms", "warm_rerun_both_ms", "cold_ingest_mb_s",
                "cli_gglib_s", "cli_openclaw_s", "cli_prepare_s", "cli_gglib_prepared_s",
                "cli_openclaw_prepared_s", "rerun_openhands_first_ms",
                "rerun_openhands_later_ms", "rerun_gemini-cli_first_ms",
                "rerun_gemini-cli_later_ms", "rerun_gemini_content_what_if_ms"):
        assert figures[key] > 0, key
    # The yardstick at the start and at the end (no browser part here).
    for key in ("machine_yardstick_s", "machine_fresh_memory_s_per_gib"):
        assert len(figures[key]) == 2 and all(y > 0 for y in figures[key]), key
    assert "machine yardstick" in proc.stdout


def test_the_benchmarks_reopened_corpus_figure(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark's in-process reopen (what the browser's second start does before
    Streamlit's own work): every file from the cache the first load wrote."""
    import shutil

    from loopscope.corpus import build_corpus, prepared_folder_files

    folder = tmp_path / "s"
    shutil.copytree(REPO / "sample_transcripts", folder)
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("LOOPSCOPE_CACHE_DIR", str(cache_dir))
    monkeypatch.delenv("LOOPSCOPE_CACHE", raising=False)
    files, _, root = prepared_folder_files(folder)
    build_corpus(files, fingerprint="t", origin="folder", root=root)
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    sys.modules.pop("bench", None)
    import bench

    found = bench._reopened_corpus(folder, cache_dir)
    assert found["reopen_corpus_cached_files"] == len(files)
    assert found["reopen_corpus_open_s"] > 0 and found["reopen_corpus_tables_s"] > 0
