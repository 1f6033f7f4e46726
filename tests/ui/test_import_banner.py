"""The overview says how many tool calls were not imported, in how many files, with a link to
the import report (issue #37): a folder with an unsupported or damaged file never looks
complete."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from tests.ui.test_app import run_app

UNKNOWN_AGENT_MD = """# Session export

**User:** fix the build

**Tool: bash** `make`

**Tool: bash** `make`

**Tool: read_file** `Makefile`
"""


def _chat(calls: int) -> str:
    lines = [{"role": "user", "content": "go"}]
    for i in range(calls):
        lines.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]})
        lines.append({"role": "tool", "tool_call_id": f"c{i}", "content": "x"})
    return "".join(json.dumps(line) + "\n" for line in lines)


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def test_the_overview_banner_counts_the_calls_not_imported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import streamlit as st

    (tmp_path / "good.jsonl").write_text(_chat(4), encoding="utf-8")
    (tmp_path / "agent.md").write_text(UNKNOWN_AGENT_MD, encoding="utf-8")  # 3 calls
    # an unknown JSON holding 2 calls as name + arguments
    (tmp_path / "steps.json").write_text(json.dumps({"steps": [
        {"toolName": "grep", "args": {"q": "x"}}, {"toolName": "grep", "args": {"q": "y"}}]}),
        encoding="utf-8")
    (tmp_path / "damaged.json").write_bytes(b"\x00\x01\x02 not a session")
    monkeypatch.setenv("LOOPSCOPE_ALLOWED_ROOTS", str(tmp_path))
    monkeypatch.setenv("LOOPSCOPE_CACHE", "off")
    st.cache_resource.clear()
    try:
        at = run_app({"source": "folder", "folder": str(tmp_path)})
        warnings = [_unescape(w.value) for w in at.main.warning]
        banner = [w for w in warnings
                  if "5 tool calls in 2 files were not imported — see the import report" in w]
        assert banner, warnings
        links = [el.proto.label for el in at.get("page_link")]
        assert "See the import report" in links
        # The report it links to lists the same files and counts.
        at.switch_page("src/loopscope/ui/pages/import_report.py")
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        frames = [t.value for t in at.table if "not imported" in getattr(t.value, "columns", [])]
        assert frames, "the import report's tool-call table is missing"
        lost = frames[0].map(lambda v: re.sub(r"\\(.)", r"\1", v)).set_index("file")[
            "not imported"]
        assert (lost["agent.md"], lost["steps.json"], lost["good.jsonl"]) == ("3", "2", "0")
    finally:
        st.cache_resource.clear()


def test_no_banner_when_every_call_was_imported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import streamlit as st

    (tmp_path / "good.jsonl").write_text(_chat(2), encoding="utf-8")
    (tmp_path / "README.md").write_text("# Notes\n\nNothing to replay here.\n",
                                        encoding="utf-8")
    monkeypatch.setenv("LOOPSCOPE_ALLOWED_ROOTS", str(tmp_path))
    monkeypatch.setenv("LOOPSCOPE_CACHE", "off")
    st.cache_resource.clear()
    try:
        at = run_app({"source": "folder", "folder": str(tmp_path)})
        assert not [w.value for w in at.main.warning if "not imported" in w.value]
    finally:
        st.cache_resource.clear()
