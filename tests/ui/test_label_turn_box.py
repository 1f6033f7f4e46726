"""AppTest: the label box's "Loop starts at turn" counts turns from 1, as the session page
shows them, and stores the 0-based index (issue #33: typing the "turn 4" a page shows must not
store a loop that starts a turn later).

Each test runs on a private copy of ``sample_transcripts/`` (``LOOPSCOPE_SAMPLES``), so saving
never touches the repository's ``labels.csv``.
"""

from __future__ import annotations

import csv
import io
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from loopscope.labels import load_labels

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLES = REPO_ROOT / "sample_transcripts"
APP = str(REPO_ROOT / "app.py")
SESSION = "src/loopscope/ui/pages/session.py"
WRITE_LOOP = "write_loop_refused_at_third_batch.json"  # 5 turns; gglib refuses at turn 4


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    if not (SAMPLES / "labels.csv").is_file():
        pytest.skip("sample_transcripts/ with labels.csv not found")
    folder = tmp_path / "samples"
    shutil.copytree(SAMPLES, folder)
    monkeypatch.setenv("LOOPSCOPE_SAMPLES", str(folder))
    monkeypatch.setenv("LOOPSCOPE_ALLOWED_ROOTS", str(folder))
    st.cache_resource.clear()
    st.cache_data.clear()
    yield folder
    st.cache_resource.clear()
    st.cache_data.clear()


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def session_page(name: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["session"] = name
    at.query_params["engines"] = "gglib"
    ok(at.run())
    at.switch_page(SESSION)
    return ok(at.run())


def loop_start_box(at: AppTest) -> Any:
    boxes = [n for n in at.number_input if n.label == "Loop starts at turn"]
    assert len(boxes) == 1
    return boxes[0]


def label_radio(at: AppTest) -> Any:
    radios = [r for r in at.radio if r.key and r.key.startswith("session.label.choice.")]
    assert len(radios) == 1
    return radios[0]


def stored_row(folder: Path, source: str) -> dict[str, str]:
    rows = list(csv.DictReader(io.StringIO((folder / "labels.csv").read_text(encoding="utf-8"))))
    return next(r for r in rows if r["source"] == source)


def page_text(at: AppTest) -> str:
    return re.sub(r"\\(.)", r"\1", " ".join(m.value for m in (*at.markdown, *at.error)))


def test_the_box_counts_from_1_up_to_the_last_turn_and_stores_the_index(corpus: Path) -> None:
    at = session_page(WRITE_LOOP)
    turn = at.number_input(key="turn").value  # the turn the page opened at: the refusal's
    assert turn == 4
    assert "refused this session at call 4 (turn 4)" in page_text(at)
    box = loop_start_box(at)
    assert (box.min, box.max) == (1, 5)  # 5 assistant turns, counted from 1
    assert box.value == 3  # the sidecar's index 2, shown as people count
    assert stored_row(corpus, WRITE_LOOP)["loop_from_turn_index"] == "2"

    box.set_value(turn)  # the turn the page shows for the first refusal
    ok(at.run())
    assert stored_row(corpus, WRITE_LOOP)["loop_from_turn_index"] == str(turn - 1)
    assert load_labels(corpus / "labels.csv").labels[WRITE_LOOP].from_turn == turn - 1
    assert loop_start_box(at).value == turn  # shown back as typed
    text = page_text(at)
    # The refusal at the loop's first turn is on time, not too early.
    assert f"labelled a real loop from turn {turn}, and gglib stops it" in text
    assert "too early" not in text


def test_a_new_loop_label_starts_at_the_turn_open_on_the_page(corpus: Path) -> None:
    from loopscope.labels import update_label_file

    update_label_file(corpus / "labels.csv", WRITE_LOOP, None)  # not labelled yet
    at = session_page(WRITE_LOOP)
    assert label_radio(at).value == "unlabelled"
    shown = at.number_input(key="turn").value
    assert shown == 4
    label_radio(at).set_value("loop")
    ok(at.run())
    assert loop_start_box(at).value == shown  # the number the page shows, not its index
    stored = load_labels(corpus / "labels.csv").labels[WRITE_LOOP]
    assert (stored.label, stored.from_turn) == ("loop", shown - 1)


def test_the_labels_table_counts_from_1_and_refuses_a_0(corpus: Path) -> None:
    from loopscope.ui import data_source, labelling

    c = data_source.load_folder(corpus, data_source.SOURCE_SAMPLES)
    sources = [s.source for s in c.sessions]
    i = next(k for k, s in enumerate(sources) if s.endswith(WRITE_LOOP))
    before = (corpus / "labels.csv").read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="count from 1"):
        labelling.apply_table_edits(c, sources, {i: {labelling.TURN_NUMBER_COLUMN: 0}})
    assert (corpus / "labels.csv").read_text(encoding="utf-8") == before
    assert labelling.apply_table_edits(c, sources, {i: {labelling.TURN_NUMBER_COLUMN: 4}}) == 1
    assert stored_row(corpus, WRITE_LOOP)["loop_from_turn_index"] == "3"
