"""Words a person can trust (issue #33): each session counted once, totals with their
differences, import reports in plain words, counts without "(s)"."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

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
