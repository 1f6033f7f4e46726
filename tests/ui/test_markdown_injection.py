"""Strings from recordings cannot put an image, a link or HTML on any page (issue #18).

A session folder is written with hostile tool names, a hostile file name, hostile error texts,
a hostile message role (quoted by the import report) and a labels file whose bad rows quote
hostile text. Every page is rendered with AppTest (the session page once per session), and
every string Streamlit renders as Markdown — bodies of markdown, captions, headings and alerts;
labels, help texts and radio/pill options of widgets, expanders and tabs — is parsed with a
CommonMark + GFM parser (markdown-it-py with linkify). No image, link or HTML may carry the
hostile host ``attacker.invalid``. Plotly chart specs are checked too: Plotly reads ``<a href>``
in tick and hover texts as a link.

Every page escapes them (``loopscope.model.escape_markdown`` / ``markdown_code`` through
``loopscope.ui.plain_words.md`` / ``md_code``, or ``st.text``/``st.code``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("markdown_it")
import streamlit as st
from google.protobuf.message import Message
from markdown_it import MarkdownIt
from markdown_it.token import Token
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
PAGES = ROOT / "src" / "loopscope" / "ui" / "pages"

MARK = "attacker.invalid"
IMAGE = f"![x](https://{MARK}/image.png)"
LINK = f"[click me](https://{MARK}/link)"
HTML = f'<img src="https://{MARK}/html.png">'
TICK = f"`` ` ![tick](https://{MARK}/tick.png) `"  # closes a code span the name is put in
BARE = f"https://{MARK}/bare"  # GFM turns a bare URL into a link
PLOTLY = f'<a href="https://{MARK}/plotly">chart</a>'
TOOLS = [IMAGE, LINK, HTML, TICK, BARE, PLOTLY]
ERROR_TEXT = f"failed: {IMAGE} {LINK} {HTML} {TICK} {BARE}"
FILE_NAME = f"![f](https:{MARK}) [l](https:{MARK}) <img src=https:{MARK}> `x.json"

_MD = MarkdownIt("gfm-like")
_MD.options["html"] = True

# Where Streamlit renders a string as Markdown: (proto message, field path), and every cell of
# an st.table. Selectbox and slider options, dataframes, st.text and st.code show plain text
# and are not listed.
_MARKDOWN_BODIES = {"Markdown", "Alert", "Heading", "Toast"}
_MARKDOWN_FIELDS = {".label", ".help", ".captions"}
_MARKDOWN_OPTIONS = {("Radio", ".options"), ("ButtonGroup", ".options.content")}


def _session(tool: str, n: int) -> dict[str, Any]:
    """An Anthropic-messages session calling ``tool`` ``n`` times with the same input and the
    same failing result: both guards refuse it, so explanations name the tool."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"use {tool}"}]
    for i in range(n):
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Trying {tool} again"},
            {"type": "tool_use", "id": f"t{i}", "name": tool, "input": {"path": tool}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{i}", "is_error": True,
             "content": ERROR_TEXT}]})
    return {"system": "s", "messages": messages}


def write_hostile_folder(folder: Path) -> list[str]:
    """The hostile sessions; returns their file names."""
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for i, tool in enumerate(TOOLS):
        name = f"tool-{i}.json"
        (folder / name).write_text(json.dumps(_session(tool, 12)), encoding="utf-8")
        names.append(name)
    (folder / FILE_NAME).write_text(json.dumps(_session("bash", 12)), encoding="utf-8")
    names.append(FILE_NAME)
    odd_role = {"messages": [
        {"role": "user", "content": "x"},
        {"role": IMAGE, "content": LINK},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": HTML, "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": ERROR_TEXT}]}
    (folder / "odd-role.json").write_text(json.dumps(odd_role), encoding="utf-8")
    names.append("odd-role.json")
    (folder / "labels.csv").write_text(
        "source,label,from_turn\n"
        f'tool-0.json,loop,2\n"{IMAGE}",loop,\n"{LINK}",maybe,\ntool-1.json,"{HTML}",\n',
        encoding="utf-8")
    return names


# --------------------------------------------------------------------------- inspection


def _walk(node: Any) -> Iterator[Any]:
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _walk(child)


def _strings(message: Message, path: str = "") -> Iterator[tuple[str, str]]:
    for field, value in message.ListFields():
        values = value if field.is_repeated else [value]
        for v in values:
            if isinstance(v, Message):
                yield from _strings(v, f"{path}.{field.name}")
            elif isinstance(v, str):
                yield f"{path}.{field.name}", v


def _tokens(tokens: list[Token]) -> Iterator[Token]:
    for token in tokens:
        yield token
        yield from _tokens(token.children or [])


def _hostile_tokens(markdown: str) -> list[str]:
    found = []
    for token in _tokens(_MD.parse(markdown)):
        if token.type in ("image", "link_open"):
            target = str(token.attrGet("src") or token.attrGet("href") or "")
            if MARK in target:
                found.append(f"{token.type} {target}")
        elif token.type in ("html_inline", "html_block") and MARK in token.content:
            found.append(f"{token.type} {token.content.strip()[:80]}")
    return found


def injections(at: AppTest) -> list[str]:
    """Every image, link or HTML tag from a hostile string on the rendered page."""
    out = []
    for node in _walk(at._tree):
        proto = getattr(node, "proto", None)
        if not isinstance(proto, Message):
            continue
        kind = type(proto).__name__
        if kind == "Table":  # st.table: every cell and column name is Markdown
            frame = node.value
            for text in [*map(str, frame.columns), *map(str, frame.to_numpy().ravel())]:
                if MARK in text:
                    out.extend(f"Table cell: {hit}" for hit in _hostile_tokens(text))
            continue
        for path, text in _strings(proto):
            if MARK not in text:
                continue
            if kind == "PlotlyChart" and path == ".spec":
                if f'<a href=\\"https://{MARK}' in text or f'<a href="https://{MARK}' in text:
                    out.append(f"PlotlyChart.spec: <a href> to {MARK}")
                continue
            markdown = (path in _MARKDOWN_FIELDS
                        or (path == ".body" and kind in _MARKDOWN_BODIES)
                        or (kind, path) in _MARKDOWN_OPTIONS)
            if markdown:
                out.extend(f"{kind}{path}: {hit}" for hit in _hostile_tokens(text))
    return sorted(set(out))


# --------------------------------------------------------------------------- the pages


@pytest.fixture()
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    folder = tmp_path / "hostile"
    names = write_hostile_folder(folder)
    monkeypatch.setenv("LOOPSCOPE_SAMPLES", str(folder))
    monkeypatch.setenv("LOOPSCOPE_ALLOWED_ROOTS", str(folder))
    st.cache_resource.clear()
    st.cache_data.clear()
    yield [str(folder / n) for n in names]
    st.cache_resource.clear()
    st.cache_data.clear()


def _open(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    if page != "overview":
        at.switch_page(str((PAGES / f"{page}.py").relative_to(ROOT)))
        at.run()
        assert not at.exception, [e.message for e in at.exception]
    return at


PAGE_CASES = [
    pytest.param("overview"),
    pytest.param("compare"),
    pytest.param("sweep"),  # label-file problems quote sources in an alert
    pytest.param("import_report"),  # file names in expanders, problem texts
    pytest.param("export"),
    pytest.param("guide"),
    pytest.param("upgrade"),
]

# Sessions by their position in write_hostile_folder's list: tool names (explanations, the
# transcript), the hostile file name, and a message with a hostile role and tool.
SESSION_CASES = [
    *(pytest.param(i, id=f"tool-{i}") for i in range(len(TOOLS))),
    pytest.param(len(TOOLS), id="file-name"),
    pytest.param(len(TOOLS) + 1, id="odd-role"),
]


def test_the_hostile_folder_loads(hostile: list[str]) -> None:
    """The fixture is what the other tests think it is: every session loads and is refused, so
    the explanations and markers that name tools are on the pages."""
    from loopscope.engines import get_engine
    from loopscope.formats import load_paths

    report = load_paths([str(Path(hostile[0]).parent)])
    assert len(report.sessions) == len(hostile)
    engine = get_engine("gglib")
    refused = [s for s in report.sessions
               if engine.replay(s, engine.default_config()).first_refusal is not None]
    assert len(refused) >= len(TOOLS)
    assert any(p.code == "unknown_role" for p in report.problems)


def test_the_check_finds_unescaped_strings() -> None:
    """The inspection can fail: raw payloads in Markdown are found."""
    for payload in (IMAGE, LINK, HTML, BARE, f"`{TICK}`", FILE_NAME):
        assert _hostile_tokens(f"Tool {payload} failed"), payload


def test_the_check_reads_html_tables() -> None:
    """An st.table's cells are Markdown: a raw payload in one is found, an escaped one not."""
    def page(raw: str, escaped: str) -> None:
        import pandas as pd
        import streamlit as st

        st.table(pd.DataFrame({"file": [raw, escaped]}), hide_index=True)

    from loopscope.ui.plain_words import md

    at = AppTest.from_function(page, args=(LINK, md(LINK)))
    at.run()
    assert [hit.split(": ", 1)[0] for hit in injections(at)] == ["Table cell"]


@pytest.mark.parametrize("page", PAGE_CASES)
def test_no_page_renders_recorded_strings_as_markup(hostile: list[str], page: str) -> None:
    assert injections(_open(page)) == []


@pytest.mark.parametrize("index", SESSION_CASES)
def test_the_session_page_renders_no_recorded_string_as_markup(
        hostile: list[str], index: int) -> None:
    at = _open("session")
    at.selectbox(key="session").set_value(hostile[index]).run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.selectbox(key="session").value == hostile[index]
    assert injections(at) == []
