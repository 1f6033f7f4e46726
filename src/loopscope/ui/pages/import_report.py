"""Import report: every file with its detected format, its sessions and its problems.

Errors first and expanded, warnings expanded, infos collapsed: what stopped a file matters
most. A problem in one file never stops the others from loading.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from loopscope.formats.detect import FORMAT_NAMES, plain_reason
from loopscope.formats.loader import UNRECOGNISED_CODES, formats_line
from loopscope.model import escape_for_display
from loopscope.ui import data_source, layout, state
from loopscope.ui.plain_words import md, md_code
from loopscope.words import plural

SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


def render() -> None:
    st.title("Import report", anchor=False)
    corpus = state.corpus()
    report = corpus.report
    problems = report.problems
    n_err = sum(1 for p in problems if p.severity == "error")
    n_warn = sum(1 for p in problems if p.severity == "warning")
    n_info = sum(1 for p in problems if p.severity == "info")
    c = st.columns(5)
    c[0].metric("Files", f"{len(report.files):,}")
    c[1].metric("Sessions", f"{len(corpus.sessions):,}")
    c[2].metric("Files with errors", f"{sum(1 for f in report.files if f.has_errors):,}")
    c[3].metric("Warnings", f"{n_warn:,}")
    c[4].metric("Other files ignored", f"{report.ignored_files:,}",
                help="Files a folder scan skipped because of their extension.")
    st.caption(f"Loaded in {corpus.load_seconds:.2f} s · {plural(n_err, 'error')}, "
               f"{plural(n_warn, 'warning')}, {plural(n_info, 'note')}. Files with problems "
               "never stop the other files.")
    unrecognised = [f for f in report.files if any(
        p.code in UNRECOGNISED_CODES and p.severity != "info" for p in f.problems)]
    if unrecognised:
        st.info(plural(len(unrecognised), "file is not a session recording",
                       "files are not session recordings") + " loopscope reads. "
                f"{md(formats_line())}.", icon=":material/help:")

    _calls_table(report.files, corpus.display)

    if corpus.label_problems:
        with st.expander(f"Labels file: {plural(len(corpus.label_problems), 'problem')}",
                         expanded=True,
                         icon=":material/warning:"):
            for p in data_source.problems_sorted(corpus.label_problems):
                st.markdown(f"- {md(p.text(), 400)}")
    elif corpus.label_file:
        st.caption(f"Labels read from {md(corpus.display(corpus.label_file))}.")

    def file_rank(f: object) -> tuple[int, str]:
        sev = [SEVERITY_RANK.get(p.severity, 3) for p in getattr(f, "problems", [])]
        return (min(sev) if sev else 3, getattr(f, "path", ""))

    for n, f in enumerate(sorted(report.files, key=file_rank)):
        worst = min((SEVERITY_RANK.get(p.severity, 3) for p in f.problems), default=3)
        tag = {0: "error", 1: "warning", 2: "note", 3: "ok"}[worst]
        icon = {0: ":material/error:", 1: ":material/warning:", 2: ":material/info:",
                3: ":material/check_circle:"}[worst]
        fmt = f.detection.format
        what = FORMAT_NAMES.get(fmt, fmt) if fmt else "not recognised"
        title = (f"{md(corpus.display(f.path))} — {md(what)} "
                 f"· {plural(len(f.sessions), 'session')} · {md(_calls_text(f))} · {tag}")
        with st.expander(title, expanded=worst <= 1, icon=icon):
            reason, ids = plain_reason(f.detection.reason)
            st.caption(md(reason, 300), help=(
                f"Detection signature {', '.join(ids)} (the rows of the format detection)"
                if ids else None))
            if f.problems:
                rows = [
                    {
                        "severity": p.severity,
                        "file": corpus.display(p.source),
                        "line": p.line if p.line is not None else (p.pointer or ""),
                        "problem": escape_for_display(p.message, 400),
                        "times": p.count,
                        "code": p.code,
                    }
                    for p in data_source.problems_sorted(f.problems)
                ]
                layout.wrapped_table(rows, key=f"problems_{n}", column_config={
                    "code": st.column_config.TextColumn(
                        help="The problem's code, as loopscope replay prints it in "
                             "brackets (to search for it)")})
            if f.sessions:
                st.markdown(
                    "\n".join(
                        f"- {md_code(s.id, 80)} — {plural(len(s.calls), 'tool call')}, "
                        f"{plural(len(s.turns), 'assistant turn')}"
                        for s in f.sessions[:50]
                    )
                    + ("\n- …" if len(f.sessions) > 50 else "")
                )


def _calls_text(f: Any) -> str:
    """``seen / imported`` tool calls of one file, as the expander title shows it."""
    seen = "–" if f.calls_seen is None else f"{f.calls_seen:,}"
    text = f"{seen} seen / {f.calls_imported:,} imported calls"
    return text + (f" ({f.calls_lost:,} not imported)" if f.calls_lost else "")


def calls_rows(files: list[Any], display: Callable[[str], str]) -> list[dict[str, Any]]:
    """One row per file: the tool calls counted in the file and those that reached the replay
    (a call left out on purpose, e.g. a repeated id, is *set aside*; any other difference is
    *not imported*)."""
    rows = []
    for f in files:
        aside = f.calls_set_aside
        rows.append({
            "file": display(f.path),
            "format": f.detection.format or "—",
            "sessions": len(f.sessions),
            "calls seen": f.calls_seen,
            "calls imported": f.calls_imported,
            "set aside": sum(aside.values()),
            "not imported": f.calls_lost,
            "why set aside": "; ".join(f"{n} {reason}" for reason, n in aside.items()),
        })
    return rows


def _calls_table(files: list[Any], display: Callable[[str], str]) -> None:
    rows = calls_rows(files, display)
    seen = sum(r["calls seen"] or 0 for r in rows)
    imported = sum(r["calls imported"] for r in rows)
    lost = sum(r["not imported"] for r in rows)
    st.subheader("Tool calls per file", anchor=False)
    st.caption(f"{seen:,} tool calls seen in the files, {imported:,} imported"
               + (f", {lost:,} not imported (see the warnings below)" if lost else "")
               + ". Calls are counted in each file apart from its import; calls left out on "
               "purpose (repeated ids, abandoned branches) are set aside, with the reason.")
    if rows:
        # Cells wrap: a file's name and why calls were set aside are read whole at any width.
        layout.wrapped_table(
            sorted(rows, key=lambda r: (-r["not imported"], r["file"])), key="calls_per_file",
            column_config={"calls seen": st.column_config.NumberColumn(help=CALLS_SEEN_HELP)})
        st.caption(f"Calls seen: {CALLS_SEEN_HELP[0].lower()}{CALLS_SEEN_HELP[1:]}")


CALLS_SEEN_HELP = ("Counted in the file by a reader of its own; “—” when the layout is not "
                   "counted (a zip archive).")


if __name__ == "__main__":  # run as a Streamlit page
    render()
