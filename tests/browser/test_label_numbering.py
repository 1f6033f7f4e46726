"""One numbering for people (issue #33), in a real browser: the turn the session page shows,
typed into the label box, is stored as that turn's 0-based index, and the refusal at that turn
counts as on time.

Run with ``pytest -m browser tests/browser/test_label_numbering.py``. The app runs on a private
copy of the samples (``own_samples``), so saving never touches the repository's labels.csv.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from loopscope.engines import get_engine
from loopscope.experiments.metrics import compute_metrics
from loopscope.formats import load_paths
from loopscope.labels import Label, labels_for_sessions

pytestmark = pytest.mark.browser

WRITE_LOOP = "write_loop_refused_at_third_batch.json"


def wait_idle(page: Any) -> None:
    """Until Streamlit has finished the current run (as in ``test_e2e.py``)."""
    page.wait_for_timeout(300)
    page.wait_for_function(
        """() => !document.querySelector("[data-testid='stStatusWidget'] [data-testid='stStatusWidgetRunningIcon']")
                 && !document.querySelector("[data-stale='true']")""",
        timeout=60_000,
    )
    page.wait_for_timeout(300)


def stored_index(folder: Path, source: str) -> str | None:
    """The loop start the labels file holds for ``source``, under whichever name it has."""
    text = (folder / "labels.csv").read_text(encoding="utf-8")
    for row in csv.DictReader(io.StringIO(text)):
        if row["source"] == source:
            return row.get("loop_from_turn_index", row.get("from_turn"))
    return None


METRIC_ROWS = {"Loops caught": "loops_caught", "Turns wasted before a catch": "wasted_turns",
               "Loops refused too early": "refused_early", "Loops missed": "loops_missed"}


def dashboard_metrics(page: Any, engine: str) -> dict[str, int]:
    """``engine``'s column of the metrics table on "Labels & sweep" (a data grid: read from
    the table it keeps for screen readers), by metric name."""
    title = get_engine(engine).title
    find = """() => { const t = Array.from(document.querySelectorAll('table[role=grid]')).find(
        g => g.rows.length > 1 && g.rows[0].cells[0].textContent.trim() === 'Metric');
        return t ? Array.from(t.rows).map(r => Array.from(r.cells).map(
            c => c.textContent.trim())) : null; }"""
    page.wait_for_function(find)
    wait_idle(page)
    rows = page.evaluate(find)
    column = rows[0].index(title)
    return {METRIC_ROWS[r[0]]: int(r[column]) for r in rows[1:] if r[0] in METRIC_ROWS}


def main_text(page: Any) -> str:
    return str(page.get_by_test_id("stMain").inner_text())


def test_the_turn_the_page_shows_typed_into_the_label_box_is_stored_as_its_index(
        own_samples_page: Any, own_samples_server: Any, own_samples: Path) -> None:
    page = own_samples_page
    # The session page as the fresh server's very first page: it used to race the server's
    # background import of pandas (a plotly error, 2 starts in 3); pages now wait for it.
    page.goto(f"{own_samples_server.url}/session?session={quote(WRITE_LOOP)}&engines=gglib")
    page.wait_for_selector("[data-testid='stAppViewContainer']")
    page.get_by_text("Label this session", exact=True).wait_for()
    wait_idle(page)
    assert page.get_by_test_id("stException").count() == 0

    # The turn the page shows for gglib's first refusal, as its verdict names it.
    verdict = re.search(r"refused this session at call \d+ \(turn (\d+)\)", main_text(page))
    assert verdict is not None, main_text(page)
    shown = int(verdict.group(1))
    sessions = load_paths([str(own_samples / WRITE_LOOP)]).sessions
    engine = get_engine("gglib")
    config = engine.resolve_config(None, [], None, None).config
    first = engine.replay(sessions[0], config).first_refusal
    assert first is not None and shown == first.turn + 1 == 4  # --json's turn 3
    assert stored_index(own_samples, WRITE_LOOP) == "2"  # the sample's label: turn 3

    # Type it into the label box's loop start, as a person would.
    page.get_by_text("Label this session", exact=True).click()
    box = page.get_by_role("spinbutton", name="Loop starts at turn")
    box.wait_for()
    assert box.input_value() == "3"  # the stored index 2, shown as people count
    box.fill(str(shown))
    box.press("Enter")
    wait_idle(page)
    # (until the page no longer shows the label it opened with: "a real loop from turn 3")
    page.wait_for_function(
        "() => !document.body.innerText.includes('labelled a real loop from turn 3,')")
    wait_idle(page)

    # Stored: the 0-based index, under the name that says so.
    assert stored_index(own_samples, WRITE_LOOP) == str(shown - 1)
    header = (own_samples / "labels.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header == "source,label,loop_from_turn_index"
    # Shown: the refusal at the loop's first turn is right, not too early.
    text = main_text(page)
    assert f"labelled a real loop from turn {shown}, and gglib stops it" in text
    assert "too early" not in text
    assert page.get_by_role("spinbutton", name="Loop starts at turn").input_value() == str(shown)

    # The label-based metrics agree: caught with no wasted turn, never refused early.
    labels = labels_for_sessions([str(own_samples / WRITE_LOOP)]).labels
    m = compute_metrics([engine.replay(s, config) for s in sessions], labels, sessions)
    assert (m.loops_caught, m.wasted_turns, m.refused_early) == (1, 0, 0)

    # And so do the dashboard's: the metrics table of "Labels & sweep" scores every sample
    # with the stored labels, as the metrics computed here from the file do …
    everything = load_paths([str(own_samples)]).sessions
    replays = [engine.replay(s, config) for s in everything]
    stored = labels_for_sessions([str(own_samples)]).labels
    expected = compute_metrics(replays, stored, everything)
    page.goto(f"{own_samples_server.url}/sweep?engines=gglib")
    shown_metrics = dashboard_metrics(page, "gglib")
    for metric in ("loops_caught", "wasted_turns", "refused_early", "loops_missed"):
        assert shown_metrics[metric] == getattr(expected, metric), (metric, shown_metrics)
    # … and differ from what the turn stored a turn later (the old numbering) would give.
    source = next(s.source for s in everything if Path(s.source).name == WRITE_LOOP)
    late = compute_metrics(replays, dict(stored) | {source: Label.loop(source, shown)},
                           everything)
    assert (late.loops_caught, late.refused_early) == (
        expected.loops_caught - 1, expected.refused_early + 1)
