"""Words a person can trust (issue #33): each session counted once, totals with their
differences, import reports in plain words, counts without "(s)"."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from loopscope.ui.pages import registry

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
PAGES = ROOT / "src" / "loopscope" / "ui" / "pages"
SAMPLES = ROOT / "sample_transcripts"


def run_app(query: dict[str, str] | None = None, page: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    if page is not None:
        at.switch_page(str((PAGES / f"{page}.py").relative_to(ROOT)))
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def shown_text(at: AppTest) -> str:
    """Every text a person reads on the page (Markdown unescaped)."""
    parts: list[Any] = []
    for kind in ("markdown", "caption", "info", "warning", "error", "success", "title",
                 "subheader", "header", "code", "toast"):
        parts += [getattr(e, "value", "") for e in getattr(at, kind, [])]
    parts += [e.label for e in at.expander] + [m.label for m in at.metric]
    # the tables' words, not their codes (an HTML table's cells are escaped Markdown)
    for frame in [d.value for d in at.dataframe] + [t.value for t in at.table]:
        columns = [c for c in getattr(frame, "columns", []) if c != "code"]
        parts += [str(c) for c in columns]
        parts += [str(v) for c in columns for v in frame[c].tolist()]
    return unescape(" ".join(str(p) for p in parts))


# --------------------------------------------------------------------------- what changed


def test_the_what_changed_box_counts_each_session_once_with_totals() -> None:
    """gglib with 3 repeats allowed frees two sessions, both labelled loops: one group, "2 no
    longer refused — both labelled loops, now missed", not "2 no longer refused · 2 loops
    missed" side by side; then the totals before and after, with their differences."""
    if not (SAMPLES / "labels.csv").is_file():
        pytest.skip("sample_transcripts/ with labels.csv not found")
    at = run_app({"gglib.max_repeated_batch_steps": "3"})
    box = unescape(" ".join(m.value for m in at.markdown if "gglib" in m.value))
    assert ("**gglib:** 2 no longer refused — both labelled loops, now missed · 2 refused at "
            "another point") in box
    assert "loops missed" not in box  # the two sessions are not counted again
    (totals,) = re.findall(r"gglib totals: ([^\n]*)", box)
    # The totals are those of the two runs, counted here from the replays
    from loopscope.engines import get_engine
    from loopscope.formats import load_paths
    from loopscope.labels import labels_for_sessions

    engine = get_engine("gglib")
    sessions = load_paths([str(SAMPLES)]).sessions
    labels, _ = labels_for_sessions([str(SAMPLES)])
    label = [getattr(labels.get(s.source), "label", None) for s in sessions]

    def counts(values: dict[str, Any]) -> tuple[int, int, int]:
        config = engine.config(values).config
        firsts = [engine.replay(s, config).first_refusal for s in sessions]
        return (sum(f is not None for f in firsts),
                sum(f is not None and lab == "ok" for f, lab in zip(firsts, label, strict=True)),
                sum(f is None and lab == "loop" for f, lab in zip(firsts, label, strict=True)))

    (r0, f0, m0), (r1, f1, m1) = counts({}), counts({"max_repeated_batch_steps": 3})
    assert (r0 - r1, f1 - f0, m1 - m0) == (2, 0, 2)
    assert totals.strip() == (f"refused {r0} → {r1} (−2) · false refusals {f0} (unchanged) · "
                      f"missed loops {m0} → {m1} (+2)")


# --------------------------------------------------------------------------- import report

IMPORT_REPORT = "import_report"
SIGNATURE_ID = re.compile(r"\b[DL]\d{1,2}\b")


def _folder_with_junk(tmp_path: Path) -> Path:
    import random
    import shutil

    folder = tmp_path / "mixed"
    folder.mkdir()
    for name in ("write_loop_refused_at_third_batch.json", "post_compaction_loop.jsonl"):
        shutil.copy(SAMPLES / name, folder / name)
    noise = random.Random(33)
    (folder / "random.jsonl").write_bytes(bytes(noise.randrange(256) for _ in range(3000)))
    (folder / "notes.json").write_text('{"hello": "world", "items": [1, 2, 3]}\n')
    return folder


@pytest.fixture
def mixed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    import streamlit as st

    folder = _folder_with_junk(tmp_path)
    monkeypatch.setenv("LOOPSCOPE_ALLOWED_ROOTS", str(tmp_path))
    st.cache_resource.clear()
    st.cache_data.clear()
    yield folder
    st.cache_resource.clear()
    st.cache_data.clear()


def test_the_import_report_says_what_a_file_is_in_plain_words(mixed: Path) -> None:
    from loopscope.formats.detect import FORMAT_NAMES

    query = {"source": "folder", "folder": str(mixed)}
    overview = run_app(query)
    (banner,) = [unescape(w.value) for w in overview.main.warning
                 if w.value.startswith("Import:")]
    assert banner == ("Import: 2 files are not session recordings loopscope reads. Every other "
                      "file was loaded.")
    at = run_app(query, IMPORT_REPORT)
    text = shown_text(at)
    # what the files are, in words
    assert "not a session recording loopscope reads: binary data, not text" in text
    assert ('not a session recording loopscope reads (JSON object with keys "hello", '
            '"items")') in text
    assert "could not be read completely" not in text
    # every format loopscope reads, from FORMAT_NAMES (so new importers join the list)
    (info,) = [unescape(i.value) for i in at.info if "loopscope reads:" in unescape(i.value)]
    assert info.startswith("2 files are not session recordings loopscope reads. loopscope "
                           "reads: ")
    assert all(name in info for name in FORMAT_NAMES.values())
    # no signature row ids (D10, L2) in what a person reads; formats by their names
    assert not SIGNATURE_ID.search(text), SIGNATURE_ID.findall(text)
    titles = [unescape(e.label) for e in at.expander]
    assert any(t.startswith("post_compaction_loop.jsonl — OpenClaw/pi session · 1 session · ")
               for t in titles), titles
    assert any(t.startswith("random.jsonl — not recognised · 0 sessions · ") for t in titles)
    # the ids stay available, out of the main text: in the caption's tooltip
    helps = [c.proto.help for c in at.caption if c.proto.help]
    assert any(SIGNATURE_ID.search(h) for h in helps), helps
    # the problem code is the last column of a problem table, after the words
    frames = [t.value for t in [*at.dataframe, *at.table]
              if "problem" in getattr(t.value, "columns", [])]
    assert frames and all(list(f.columns)[-1] == "code" for f in frames)


# --------------------------------------------------------------------------- no "(s)"

PAGE_FILES = sorted(spec.module.rpartition(".")[2] for spec in registry.PAGES)
"""Every page of the menu (its file under ``ui/pages/``)."""


def _without_recorded_text(text: str) -> str:
    """The samples' recordings say "target(s)" (a cargo log): their words, not ours."""
    return text.replace("target(s)", "")


@pytest.mark.parametrize("page", PAGE_FILES)
def test_no_page_counts_with_s_in_brackets(page: str, mixed: Path) -> None:
    """Every count a page shows picks its own word ("1 session", "2 sessions"): no page says
    "session(s)" — on a folder with sessions, labels and files that are no recordings."""
    import shutil

    shutil.copy(SAMPLES / "labels.csv", mixed / "labels.csv")
    at = run_app({"source": "folder", "folder": str(mixed)}, page)
    text = _without_recorded_text(shown_text(at))
    assert "(s)" not in text, re.findall(r".{40}\(s\).{20}", text)


def test_the_guide_says_the_default_settings_once_per_guard() -> None:
    """"Settings: the guard's shipped defaults." under every example was the same sentence
    sixteen times: each guard's tab now says it once, and an example names only its own."""
    at = run_app(page="guide")
    text = shown_text(at)
    tabs = len(at.tabs)
    assert tabs >= 2
    assert text.count("shipped defaults") == tabs
    assert "Settings for this example:" in text  # examples with their own settings say so
