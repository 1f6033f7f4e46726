"""What the user must not miss, at the top of the main area of every page.

* the last "Apply" of an advice, with what it changed across the corpus and an Undo;
* a data source that could not be used (a folder outside the allowed roots, samples the
  allowed roots leave out) — said in the main area, never a silent fallback;
* uploads skipped because their content was already loaded;
* files that could not be read, or were read with warnings, with a link to the import report
  (first, how many tool calls in how many files were not imported).
"""

from __future__ import annotations

import streamlit as st

from loopscope.corpus import Corpus
from loopscope.ui import data, explain_view
from loopscope.ui.plain import md

__all__ = ["render"]


def render(corpus: Corpus, page: str | None = None) -> None:
    """Every notice that applies (``page``: the url path of the page about to run)."""
    explain_view.render_applied()
    error = st.session_state.get(data.DATA_ERROR_KEY)
    if error:
        st.error(md(error, 600), icon=":material/folder_off:")
    note = st.session_state.get(data.DATA_NOTE_KEY)
    if note:
        st.info(md(note, 400), icon=":material/upload_file:")
    if (not corpus.sessions and not error and corpus.origin == data.SOURCE_SAMPLES
            and data.samples_fallback_note()):
        st.error(md(data.samples_fallback_note() or "", 600), icon=":material/folder_off:")
    from loopscope.ui.settings import DUPLICATES_KEY

    duplicates = st.session_state.get(DUPLICATES_KEY) or []
    if duplicates and st.session_state.get(data.SOURCE_KEY) == data.SOURCE_UPLOAD:
        names = ", ".join(md(n, 80) for n in duplicates[:5])
        more = f" and {len(duplicates) - 5} more" if len(duplicates) > 5 else ""
        st.info(f"{len(duplicates)} uploaded file(s) were already loaded with the same content "
                f"and were skipped: {names}{more}.", icon=":material/content_copy:")
    n_err, n_warn = corpus.import_problem_counts
    lost = corpus.import_totals.lost_text()
    if (n_err or n_warn) and page != "import-report":
        files = sum(1 for f in corpus.report.files if f.has_errors)
        parts = []
        if files:
            parts.append(f"{files} file(s) could not be read completely ({n_err} error(s))")
        if n_warn:
            parts.append(f"{n_warn} warning(s)")
        with st.container(key="import_problems"):
            c1, c2 = st.columns([4, 1], vertical_alignment="center")
            # The calls that did not reach the replay come first: a replay without them can
            # miss the very loop it is looked at for.
            headline = f"**{lost} — see the import report.** " if lost else ""
            c1.warning(headline + "Import: " + "; ".join(parts)
                       + ". Every other file was loaded.", icon=":material/warning:")
            from loopscope.ui.pages import page_for

            target = page_for("import-report")
            if target is not None:
                with c2:
                    st.page_link(target, label="See the import report",
                                 icon=":material/fact_check:")
