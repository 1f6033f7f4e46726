"""The benchmark's browser part at small scale: it must find the overview's timeline and see it
change on every slider move (a benchmark that waits on the wrong chart times out after five
minutes and reports nothing). Not a timed test: the figures are only checked to exist."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tests.browser.conftest import ROOT, _require_browser


@pytest.fixture(scope="module")
def bench_modules() -> object:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import corpus

        import browser

        yield browser, corpus
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_the_benchmark_times_slider_moves_on_the_overview_timeline(
        tmp_path: Path, bench_modules: tuple[object, object]) -> None:
    _require_browser()
    browser, corpus = bench_modules
    folder = tmp_path / "corpus"
    corpus.generate(folder, sessions=60)  # type: ignore[attr-defined]
    figures = browser.slider_to_chart(  # type: ignore[attr-defined]
        folder, moves=3, cache_dir=tmp_path / "cache", timeout_s=90)
    assert len(figures["slider_to_chart_all_ms"]) == 3, figures
    assert 0 < figures["slider_to_chart_ms"] <= figures["slider_to_chart_max_ms"]
    assert figures["app_peak_rss_mb"] > 0
    assert "60 sessions from" in figures["app_sessions"], figures
