"""What the user must not miss, at the top of the main area of every page.

* the last "Apply" of an advice, with what it changed across the corpus and an Undo;
* a data source that could not be used (a folder outside the allowed roots, samples the
  allowed roots leave out) — said in the main area, never a silent fallback;
* uploads skipped because their content was already loaded;
* files that could not be read, or were read with warnings, with a link to the import report
  (first, how many tool calls in how many files were not imported).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

from loopscope.corpus import Corpus
from loopscope.formats.loader import UNRECOGNISED_CODES
from loopscope.ui import data_source, explain_view
from loopscope.ui.plain_words import md
from loopscope.words import plural

__all__ = ["import_parts", "render"]


def import_parts(files: Sequence[Any], warnings: int) -> list[str]:
    """What went wrong in the import, by what it means for the files: not a recording at all,
    not imported, imported in part (a file with an error may still give sessions) — never
    "could not be read completely" for a file that is not a recording."""
    unrecognised = not_imported = partly = 0
    for f in files:
        flagged = [p for p in f.problems
                   if p.code in UNRECOGNISED_CODES and p.severity in ("error", "warning")]
        if flagged:  # (a file a folder scan found is flagged with a warning, not an error)
            unrecognised += 1
            warnings -= sum(1 for p in flagged if p.severity == "warning")
        elif not f.has_errors:
            continue
        elif f.sessions:
            partly += 1
        else:
            not_imported += 1
    parts = []
    if unrecognised:
        parts.append(plural(unrecognised, "file is not a session recording",
                            "files are not session recordings") + " loopscope reads")
    if not_imported:
        parts.append(plural(not_imported, "file") + " could not be imported")
    if partly:
        parts.append(plural(partly, "file was", "files were") + " imported only in part")
    if warnings:
        parts.append(plural(warnings, "warning"))
    return parts


def render(corpus: Corpus, page: str | None = None) -> None:
    """Every notice that applies (``page``: the url path of the page about to run)."""
    explain_view.render_applied()
    error = st.session_state.get(data_source.DATA_ERROR_KEY)
    if error:
        st.error(md(error, 600), icon=":material/folder_off:")
    note = st.session_state.get(data_source.DATA_NOTE_KEY)
    if note:
        st.info(md(note, 400), icon=":material/upload_file:")
    if (not corpus.sessions and not error and corpus.origin == data_source.SOURCE_SAMPLES
            and data_source.samples_fallback_note()):
        st.error(md(data_source.samples_fallback_note() or "", 600), icon=":material/folder_off:")
    from loopscope.ui.settings import DUPLICATES_KEY

    duplicates = st.session_state.get(DUPLICATES_KEY) or []
    if duplicates and st.session_state.get(data_source.SOURCE_KEY) == data_source.SOURCE_UPLOAD:
        names = ", ".join(md(n, 80) for n in duplicates[:5])
        more = f" and {len(duplicates) - 5} more" if len(duplicates) > 5 else ""
        st.info(f"{plural(len(duplicates), 'uploaded file was', 'uploaded files were')} "
                f"already loaded with the same content and skipped: {names}{more}.",
                icon=":material/content_copy:")
    n_err, n_warn = corpus.import_problem_counts
    lost = corpus.import_totals.lost_text()
    if (n_err or n_warn) and page != "import-report":
        parts = import_parts(corpus.report.files, n_warn)
        with st.container(key="import_problems"):
            c1, c2 = st.columns([4, 1], vertical_alignment="center")
            # The calls that did not reach the replay come first: a replay without them can
            # miss the very loop it is looked at for.
            headline = f"**{lost} — see the import report.** " if lost else ""
            c1.warning(headline + "Import: " + "; ".join(parts)
                       + ". Every other file was loaded.", icon=":material/warning:")
            from loopscope.ui.pages.registry import page_for

            target = page_for("import-report")
            if target is not None:
                with c2:
                    st.page_link(target, label="See the import report",
                                 icon=":material/fact_check:")
