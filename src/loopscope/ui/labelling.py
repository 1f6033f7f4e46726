"""Labelling in the dashboard: mark a session as a real loop (and the turn it starts) or good work.

Labels are kept where the command line finds them, in the ``labels.csv`` sidecar next to the
sessions (:mod:`loopscope.labels`), and every change is saved at once, atomically. The app's
view of the labels — :func:`current_labels`, keyed by session ``source`` — is refreshed when
this module saves and when a sidecar changes on disk, and is also written to
``corpus.labels`` so every page sees the same labels.

Two ways in:

* :func:`label_editor` — one session's label: a choice and the turn the loop starts (the
  session detail next to the timeline, the Compare page next to a changed session);
* :func:`label_table` — every session in an editable table (the Sweep page).

Both show and take the loop's first turn as a person reads it on the session page, counted
from 1; the sidecar stores the 0-based index (``loop_from_turn_index`` = the number − 1), and
:mod:`loopscope.numbering` converts, so typing the "turn 4" the timeline shows stores 3.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from loopscope import labels as labels_mod
from loopscope import numbering
from loopscope.labels import Label, LabelSet
from loopscope.model import escape_for_display
from loopscope.ui import state
from loopscope.ui.data_source import Corpus
from loopscope.words import plural

__all__ = [
    "CHOICES",
    "apply_table_edits",
    "current_labels",
    "label_editor",
    "label_root",
    "label_table",
    "save_label",
]

UNLABELLED = "unlabelled"
CHOICES: dict[str, str] = {UNLABELLED: "Not labelled", "loop": "Real loop", "ok": "Good work"}
"""Label value → what the user reads."""

_SAVE_LOCK = threading.Lock()
"""Browser sessions share the server process; saves to one sidecar must not interleave."""


# --------------------------------------------------------------------------- the store


def label_root(corpus: Corpus) -> str | None:
    """The folder whose sidecar(s) hold this corpus's labels.

    A loaded folder is its own root; uploads live together in one private folder, so their
    sidecar sits there (and goes with them: export the labels to keep them).
    """
    if corpus.root:
        return corpus.root
    if corpus.sessions:
        path = corpus.sources[0].partition("#")[0]
        return os.path.dirname(os.path.abspath(path))
    return None


@dataclass
class _Entry:
    labels: LabelSet
    stamp: tuple[tuple[str, int, int], ...]
    problems: list[Any]


@st.cache_resource(show_spinner=False)
def _store() -> dict[str, _Entry]:
    """Labels per corpus root, shared by the server's browser sessions (cleared with the cache)."""
    return {}


def _stamp(root: str) -> tuple[tuple[str, int, int], ...]:
    """Every sidecar under ``root`` with its mtime and size: a change on disk changes this.

    The folders are walked again only when one of them changed (a sidecar created, removed or
    renamed, a folder added: the folder's own mtime changes); otherwise the folders and the
    known sidecars are stat'ed. A walk lists every session file, a cost in proportion to the
    corpus paid on every page run, every slider move included."""
    last = _WALKS.get(root)
    if last is not None and all(_mtime(folder) == mtime for folder, mtime in last[0]):
        return _sidecars(last[1])
    seen: list[tuple[str, int | None]] = []
    paths: list[str] = []
    # A folder changed in the last seconds may change again within its mtime's resolution
    # (a second or two on some file systems) without its mtime moving: walk it again next time.
    settled_before = time.time_ns() - 3_000_000_000
    for folder, dirs, files in os.walk(root, followlinks=False, onerror=lambda e: None):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        mtime = _mtime(folder)
        seen.append((folder, mtime if mtime is not None and mtime < settled_before else -1))
        if labels_mod.LABELS_FILE_NAME in files:
            paths.append(os.path.join(folder, labels_mod.LABELS_FILE_NAME))
    _WALKS[root] = (tuple(seen), tuple(paths))  # (one assignment: no lock needed)
    return _sidecars(paths)


_WALKS: dict[str, tuple[tuple[tuple[str, int | None], ...], tuple[str, ...]]] = {}
"""Per root, the last walk: every folder with its mtime then, and the sidecars it found."""


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _sidecars(paths: Sequence[str]) -> tuple[tuple[str, int, int], ...]:
    out = []
    for path in paths:
        try:
            st_ = os.stat(path)
        except OSError:
            continue
        out.append((path, st_.st_mtime_ns, st_.st_size))
    return tuple(out)


def _read(root: str) -> _Entry:
    loaded, problems = labels_mod.labels_for_sessions([root])
    return _Entry(loaded, _stamp(root), problems)


def current_labels(corpus: Corpus) -> LabelSet:
    """The corpus's labels keyed by session ``source`` (re-read when a sidecar changed)."""
    root = label_root(corpus)
    if root is None:
        return LabelSet()
    store = _store()
    entry = store.get(root)
    if entry is None or entry.stamp != _stamp(root):
        entry = _read(root)
        store[root] = entry
    if corpus.labels is not entry.labels:
        corpus.labels = entry.labels
    return entry.labels


def label_problems(corpus: Corpus) -> list[Any]:
    """Rows of the sidecar(s) that could not be used (file, line, reason)."""
    root = label_root(corpus)
    current_labels(corpus)
    entry = _store().get(root) if root else None
    return [] if entry is None else list(entry.problems)


def save_label(corpus: Corpus, source: str, label: str | None, from_turn: int | None = None) -> None:
    """Label one session (``None`` clears its label) and save the sidecar atomically.

    ``from_turn`` is the 0-based index of the turn the loop starts at (what the sidecar
    stores); the widgets convert the number a person typed with :func:`numbering.index_of`.

    Raises ``OSError``/``ValueError`` when the sidecar cannot be written; nothing changes then.
    """
    root = label_root(corpus)
    if root is None:
        raise ValueError("no folder to keep labels in")
    value = None if label in (None, UNLABELLED) else label
    if value == "ok":
        from_turn = None
    with _SAVE_LOCK:
        path, relative = labels_mod.label_file_for(source, root)
        labels_mod.update_label_file(path, relative, value, from_turn)  # type: ignore[arg-type]
        entry = _read(root)
        _store()[root] = entry
    corpus.labels = entry.labels
    if hasattr(corpus, "label_problems"):
        corpus.label_problems = list(entry.problems)


def labels_version(labels: Mapping[str, Label]) -> str:
    """A short digest of the labels, for widget keys that must reset when labels change."""
    text = "\n".join(f"{k}\t{v.label}\t{v.from_turn}" for k, v in sorted(labels.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _widget_id(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:16]


# --------------------------------------------------------------------------- one session


def _on_editor_change(corpus: Corpus, source: str, choice_key: str, turn_key: str) -> None:
    choice = st.session_state.get(choice_key) or UNLABELLED
    shown = st.session_state.get(turn_key)
    try:
        # The box shows turns from 1, as the session page does; the sidecar keeps the index.
        from_turn = (numbering.index_of(int(shown))
                     if choice == "loop" and shown is not None else None)
        save_label(corpus, source, choice, from_turn)
    except (OSError, ValueError) as exc:
        st.session_state["_labelling_error"] = f"The label was not saved: {exc}"
    else:
        st.session_state["_labelling_error"] = None
        st.toast(f"Saved: {CHOICES[choice]} — {corpus.display(source)}", icon=":material/label:")


def label_editor(
    source: str,
    *,
    key: str = "label",
    turns: int | None = None,
    suggested_turn: int | None = None,
    corpus: Corpus | None = None,
) -> Label | None:
    """Controls to label one session; a change is saved at once. Returns the current label.

    ``turns`` bounds the loop-start turn; ``suggested_turn`` (e.g. the turn open in the
    timeline; a 0-based index, like the label's ``from_turn``) fills it when the session is
    first marked as a loop. The box itself shows and takes the turn counted from 1.
    """
    corpus = corpus or state.corpus()
    labels = current_labels(corpus)
    current = labels.get(source)
    wid = _widget_id(source)
    choice_key = f"{key}.choice.{wid}"
    turn_key = f"{key}.turn_number.{wid}"  # the turn as shown: counted from 1
    # The sidecar is the truth: show what it holds (also after another page changed it).
    st.session_state[choice_key] = current.label if current else UNLABELLED
    stored = current.from_turn if current is not None and current.label == "loop" else None
    if current is not None and current.label == "loop":
        st.session_state[turn_key] = None if stored is None else numbering.number(stored)
    elif turn_key not in st.session_state or st.session_state[turn_key] is None:
        st.session_state[turn_key] = (None if suggested_turn is None
                                      else numbering.number(suggested_turn))

    cols = st.columns([2, 1])
    with cols[0]:
        st.radio(
            "Label",
            options=list(CHOICES),
            format_func=CHOICES.__getitem__,
            key=choice_key,
            horizontal=True,
            on_change=_on_editor_change,
            args=(corpus, source, choice_key, turn_key),
            help="Real loop: the agent was stuck; a guard should stop it. Good work: a guard "
            "must let it through. Saved to labels.csv next to the sessions.",
        )
    with cols[1]:
        st.number_input(
            "Loop starts at turn",
            min_value=1,
            # (a start saved beyond the session's end stays shown as it is)
            max_value=max(turns, numbering.number(stored) if stored is not None else 1)
            if turns else None,
            step=1,
            key=turn_key,
            placeholder="unknown (turn 1)",
            disabled=st.session_state[choice_key] != "loop",
            on_change=_on_editor_change,
            args=(corpus, source, choice_key, turn_key),
            help="The first assistant turn that only repeats earlier work, counted from 1 as "
            "the session page shows turns. A refusal from here on counts as a caught loop; "
            "before it, as refused too early. (labels.csv stores the 0-based index, this "
            "number − 1, as loop_from_turn_index.)",
        )
    error = st.session_state.get("_labelling_error")
    if error:
        st.error(error)
    return current_labels(corpus).get(source)


# --------------------------------------------------------------------------- every session

_TABLE_LABELS = {"loop": "real loop", "ok": "good work"}
_TABLE_VALUES = {v: k for k, v in _TABLE_LABELS.items()}
TURN_NUMBER_COLUMN = "loop_start_turn"
"""The table's loop-start column: the turn counted from 1, as shown (the sidecar stores it − 1)."""


def _row_label(row_edit: Mapping[str, Any], current: Label | None) -> tuple[str | None, int | None]:
    if "label" in row_edit:
        shown = row_edit["label"]
        value = _TABLE_VALUES.get(shown) if shown else None
    else:
        value = current.label if current else None
    if TURN_NUMBER_COLUMN in row_edit:
        raw = row_edit[TURN_NUMBER_COLUMN]
        # Counted from 1 as shown; below 1 is a ValueError that says so (nothing is saved).
        from_turn = (None if raw is None or raw != raw  # NaN != NaN
                     else numbering.index_of(int(raw)))
    else:
        from_turn = current.from_turn if current else None
    return value, (from_turn if value == "loop" else None)


def apply_table_edits(
    corpus: Corpus, sources: Sequence[str], edited_rows: Mapping[Any, Mapping[str, Any]]
) -> int:
    """Save the label edits of a :func:`label_table` (``edited_rows`` of ``st.data_editor``).

    Returns how many sessions changed. The loop-start column counts turns from 1, as shown;
    ``ValueError`` (before anything is saved) for a number below 1.
    """
    labels = current_labels(corpus)
    wanted = []
    for row, edit in edited_rows.items():
        i = int(row)
        if not 0 <= i < len(sources):
            continue
        source = sources[i]
        current = labels.get(source)
        value, from_turn = _row_label(edit, current)  # every row checked before any save
        before = (current.label, current.from_turn) if current else (None, None)
        if (value, from_turn) != before:
            wanted.append((source, value, from_turn))
    for source, value, from_turn in wanted:
        save_label(corpus, source, value, from_turn)
    return len(wanted)


def _on_table_change(corpus: Corpus, sources: Sequence[str], key: str) -> None:
    edits = (st.session_state.get(key) or {}).get("edited_rows", {})
    try:
        n = apply_table_edits(corpus, sources, edits)
    except (OSError, ValueError) as exc:
        st.session_state["_labelling_error"] = f"Labels were not saved: {exc}"
        return
    st.session_state["_labelling_error"] = None
    if n:
        st.toast(f"Saved {plural(n, 'label')}", icon=":material/label:")


def label_table(
    extra_columns: Mapping[str, Sequence[Any]] | None = None,
    extra_config: Mapping[str, Any] | None = None,
    *,
    key: str = "label_table",
    corpus: Corpus | None = None,
) -> None:
    """Every session with its label and loop start, editable in place; edits save at once.

    ``extra_columns`` adds read-only context (e.g. where the guards first refuse), aligned with
    the corpus's sessions, and ``extra_config`` their column settings. The editable columns
    have fixed widths so that the whole editor fits the page from 1000 px up.
    """
    import pandas as pd

    corpus = corpus or state.corpus()
    labels = current_labels(corpus)
    sources = corpus.sources  # (the heads: a large corpus's sessions are not kept in memory)
    records: dict[str, list[Any]] = {
        "session": [corpus.display(s) for s in sources],
        "turns": corpus.turn_counts,
        "label": [_TABLE_LABELS.get(lab.label, "") if (lab := labels.get(s)) else "" for s in sources],
        TURN_NUMBER_COLUMN: [
            numbering.number(lab.from_turn)
            if (lab := labels.get(s)) and lab.from_turn is not None else None
            for s in sources
        ],
    }
    for name, values in (extra_columns or {}).items():
        records[name] = list(values)
    frame = pd.DataFrame(records)
    frame[TURN_NUMBER_COLUMN] = frame[TURN_NUMBER_COLUMN].astype("Int64")
    # A new key whenever the labels change, so the editor starts from what was saved.
    table_key = f"{key}.{labels_version(labels)}"
    st.data_editor(
        frame,
        key=table_key,
        hide_index=True,
        width="stretch",
        num_rows="fixed",
        placeholder="",  # (an empty loop start or refusal shows empty, not "None")
        disabled=[c for c in frame.columns if c not in ("label", TURN_NUMBER_COLUMN)],
        column_config={
            "session": st.column_config.TextColumn("Session", width=125),
            "turns": st.column_config.NumberColumn("Turns", width=55,
                                                   help="Assistant turns in the session."),
            "label": st.column_config.SelectboxColumn(
                "Label", options=["", *_TABLE_LABELS.values()], width=95,
                help="real loop: a guard should stop it; good work: a guard must let it through.",
            ),
            TURN_NUMBER_COLUMN: st.column_config.NumberColumn(
                "Loop starts at turn", min_value=1, step=1, width=150,
                help="Real loops only: the first assistant turn that only repeats earlier "
                "work, counted from 1 as the session page shows turns. Empty = turn 1. "
                "(labels.csv stores the 0-based index, this number − 1.)",
            ),
            **dict(extra_config or {}),
        },
        on_change=_on_table_change,
        args=(corpus, sources, table_key),
    )
    error = st.session_state.get("_labelling_error")
    if error:
        st.error(error)
    counts = labels.counts() if isinstance(labels, LabelSet) else {}
    where = label_root(corpus)
    st.caption(
        f"{plural(counts.get('loop', 0), 'real loop')}, "
        f"{plural(counts.get('ok', 0), 'good session')}, "
        f"{len(sources) - sum(1 for s in sources if s in labels):,} not labelled. "
        + (f"Saved in labels.csv under {escape_for_display(where, 120)}." if where else "")
    )


def label_transfer(corpus: Corpus | None = None) -> None:
    """Download the labels (CSV, sources relative to the folder) and import a labels file."""
    corpus = corpus or state.corpus()
    root = label_root(corpus)
    labels = current_labels(corpus)
    if root is None:
        return
    relative = []
    for source, lab in labels.items():
        try:
            relative.append(Label(labels_mod.relative_source(os.path.join(root, "x"), source),
                                  lab.label, lab.from_turn))
        except ValueError:
            continue
    cols = st.columns(2)
    with cols[0]:
        st.download_button(
            "Download labels (CSV)",
            labels_mod.dump_labels(LabelSet(relative)),
            file_name="labels.csv",
            mime="text/csv",
            icon=":material/download:",
        )
    with cols[1]:
        upload = st.file_uploader(
            "Import labels (CSV or JSON)", type=["csv", "json"], key="labels_import",
            help="Sources relative to the sessions' folder, as in labels.csv. Imported labels "
            "replace the labels of the same sessions.",
        )
    if upload is not None and st.session_state.get("_labels_imported") != upload.file_id:
        data = upload.getvalue()
        if upload.name.lower().endswith(".json"):
            loaded, problems = labels_mod.labels_from_json(data, upload.name)
        else:
            loaded, problems = labels_mod.parse_labels(data, upload.name)
        by_source = set(corpus.sources)
        matched = 0
        for lab in loaded.values():
            source = os.path.join(root, *lab.source.partition("#")[0].split("/"))
            source += lab.source[len(lab.source.partition("#")[0]):]
            if source in by_source:
                save_label(corpus, source, lab.label, lab.from_turn)
                matched += 1
        st.session_state["_labels_imported"] = upload.file_id
        st.success(f"Imported {plural(matched, 'label')}; {len(loaded) - matched:,} named no "
                   "loaded session.")
        for p in problems[:10]:
            st.warning(p.text())
