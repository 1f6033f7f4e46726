"""The dashboard's page registry: which pages exist, in the menu's order. Adding a page is one
line in :data:`PAGES`.

Each entry names a module that defines ``render()`` and ends with::

    if __name__ == "__main__":  # run as a Streamlit page
        render()

Streamlit runs the page's file as a script (so ``AppTest.switch_page`` can open it by path, and
importing the module stays side-effect free). Pages read the corpus, configurations and
replays from :mod:`loopscope.ui.state` and draw in the main area.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import streamlit as st


@dataclass(frozen=True, slots=True)
class PageSpec:
    module: str
    """Dotted module path; the module defines ``render() -> None``."""
    title: str
    url_path: str
    icon: str | None = None
    default: bool = False


PAGES: list[PageSpec] = [
    PageSpec("loopscope.ui.pages.overview", "Overview", "overview", ":material/view_timeline:", default=True),
    PageSpec("loopscope.ui.pages.session", "Session detail", "session", ":material/timeline:"),
    PageSpec("loopscope.ui.pages.guide", "Guide: how guards decide", "guide", ":material/menu_book:"),
    PageSpec("loopscope.ui.pages.compare", "Compare", "compare", ":material/compare_arrows:"),
    PageSpec("loopscope.ui.pages.upgrade", "Upgrade impact", "upgrade", ":material/upgrade:"),
    PageSpec("loopscope.ui.pages.sweep", "Labels & sweep", "sweep", ":material/grid_on:"),
    PageSpec("loopscope.ui.pages.import_report", "Import report", "import-report", ":material/fact_check:"),
    PageSpec("loopscope.ui.pages.export", "Export", "export", ":material/download:"),
]


def page_file(module: str) -> Path:
    """The file Streamlit runs for a page module."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(module)
    return Path(spec.origin)


def build_pages() -> list[st.Page]:
    return [
        st.Page(page_file(p.module), title=p.title, url_path=p.url_path, icon=p.icon,
                default=p.default)
        for p in PAGES
    ]


def page_for(url_path: str) -> st.Page | None:
    """The ``st.Page`` object to pass to ``st.switch_page`` for a registered page."""
    return _PAGE_OBJECTS.get(url_path)


_PAGE_OBJECTS: dict[str, st.Page] = {}


def register(pages: list[st.Page]) -> None:
    _PAGE_OBJECTS.clear()
    for spec, page in zip(PAGES, pages, strict=True):
        _PAGE_OBJECTS[spec.url_path] = page
