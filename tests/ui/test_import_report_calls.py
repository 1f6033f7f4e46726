"""The import report lists, per file, the tool calls seen in it and those imported (issue #16)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
PAGE = "src/loopscope/ui/pages/import_report.py"
FIXTURES = ROOT / "tests" / "formats" / "fixtures"


def calls_table(at: AppTest) -> Any:
    """The tool-call table as a person reads it: an HTML table of Markdown cells (recorded
    names escaped, numbers with thousands separators, "—" for a count not taken)."""
    frames = [t.value for t in at.table if "calls seen" in getattr(t.value, "columns", [])]
    assert frames, "the tool-call table is missing"
    frame = frames[0].map(lambda v: re.sub(r"\\(.)", r"\1", v))
    for column in ("sessions", "calls seen", "calls imported", "set aside", "not imported"):
        frame[column] = [None if v == "—" else int(v.replace(",", "")) for v in frame[column]]
    return frame.set_index("file")


def test_import_report_shows_seen_and_imported_calls_per_file() -> None:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["source"] = "folder"
    at.query_params["folder"] = str(FIXTURES)
    at.run()
    at.switch_page(PAGE)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    frame = calls_table(at)
    row = frame.loc["openinference_spans.jsonl"]
    assert (row["calls seen"], row["calls imported"], row["set aside"], row["not imported"]) \
        == (7, 5, 2, 0)
    assert "tool span" in row["why set aside"]
    assert frame.loc["tau_bench_react_act.json", "calls imported"] == 6
    assert frame.loc["claude_code_export_prettier.md", "calls seen"] == 4
    # every expander title carries the file's counts
    # (titles are Markdown: recorded names are escaped; read them as a person does)
    titles = [re.sub(r"\\(.)", r"\1", e.label) for e in at.expander]
    assert any("langsmith_runs.jsonl" in t and "6 seen / 3 imported calls" in t for t in titles)


def test_rows_say_what_was_not_imported(tmp_path: Path) -> None:
    from loopscope.formats import load_file
    from loopscope.ui.pages.import_report import calls_rows

    lines = ['{"type":"user","uuid":"u","sessionId":"s","message":{"role":"user","content":"x"}}',
             '{"type":"assistant-draft","uuid":"a","sessionId":"s","message":{"role":"assistant",'
             '"content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]}}']
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    (row,) = calls_rows([load_file(str(path))], lambda p: Path(p).name)
    assert (row["calls seen"], row["calls imported"], row["not imported"]) == (1, 0, 1)


def test_capture_off_warning_is_shown_beside_its_file(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A trace whose tool calls carry no arguments or results: the file's entry in the import
    report is open (a warning) and lists content_not_captured."""
    import shutil

    monkeypatch.setenv("LOOPSCOPE_ALLOWED_ROOTS", str(tmp_path))
    shutil.copy(FIXTURES / "otlp_capture_off.json", tmp_path / "otlp_capture_off.json")
    shutil.copy(FIXTURES / "otlp_langfuse.jsonl", tmp_path / "otlp_langfuse.jsonl")
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["source"] = "folder"
    at.query_params["folder"] = str(tmp_path)
    at.run()
    at.switch_page(PAGE)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    entries = {re.sub(r"\\(.)", r"\1", e.label).split(" — ")[0]: e for e in at.expander}
    off = next(e for name, e in entries.items() if name.endswith("otlp_capture_off.json"))
    assert "warning" in off.label
    frame = off.table[0].value.map(lambda v: re.sub(r"\\(.)", r"\1", v))
    row = frame[frame["code"] == "content_not_captured"].iloc[0]
    assert row["severity"] == "warning"
    assert row["file"].endswith("otlp_capture_off.json")
    assert "see only tool names" in row["problem"]
    full = next(e for name, e in entries.items() if name.endswith("otlp_langfuse.jsonl"))
    assert not any("content_not_captured" in str(t.value.get("code", "")) for t in full.table)
