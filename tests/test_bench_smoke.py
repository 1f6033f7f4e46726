"""A small-scale smoke run of the benchmark (not a timed test: it checks that every part runs
and reports its figures; the figures themselves are for benchmarks/README.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
