"""The sidebar: where the sessions come from, which guards to show, and every setting of
every engine.

Each control is made from the engine's settings schema (:mod:`loopscope.ui.state`) and bound to
the URL. Notices under each engine come from the engine's own ``config`` (clamps, ordering,
hypothetical values), so what the sidebar says is exactly what the replay uses.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import streamlit as st

from loopscope import config_io
from loopscope.engines import ConfigError, get_engine
from loopscope.ui import data_source, state
from loopscope.ui.plain_words import md, md_code, plain
from loopscope.ui.state import OFF, Field

PRESETS: dict[str, tuple[str, dict[str, Any]]] = {
    "defaults": ("Shipped defaults", {}),
}

LOAD_NOTES_KEY = "_loopscope_config_notes"
LOAD_ERROR_KEY = "_loopscope_config_error"


# --------------------------------------------------------------------------- data source


def render_data_source() -> None:
    """Where the sessions come from: samples, uploads (temp folder only) or a confined folder."""
    st.header("Sessions", anchor=False)
    # The option values are what the URL carries (?source=folder), so they are shown as is.
    source = st.radio(
        "Load sessions from",
        options=list(data_source.SOURCE_LABELS),
        captions=list(data_source.SOURCE_LABELS.values()),
        key=data_source.SOURCE_KEY,
        bind="query-params",
        help="Uploaded files are kept only in a private temporary folder on the server. "
        "A folder must lie inside the allowed roots (LOOPSCOPE_ALLOWED_ROOTS).",
    )
    if source == data_source.SOURCE_UPLOAD:
        files = st.file_uploader(
            "Session files",
            accept_multiple_files=True,
            type=[e.lstrip(".") for e in data_source.UPLOAD_EXTENSIONS],
            key="_loopscope_uploader",
            help="JSON, JSONL, Markdown, SWE-agent .traj, inspect_ai .eval, or a zip archive.",
        )
        _store_uploads(files or [])
    elif source == data_source.SOURCE_FOLDER:
        st.text_input(
            "Folder path",
            key=data_source.FOLDER_KEY,
            bind="query-params",
            placeholder="e.g. sample_transcripts",
            help="Relative paths start at the server's working directory. Allowed roots: "
            + ", ".join(md_code(str(r)) for r in data_source.allowed_roots()),
        )


DUPLICATES_KEY = "_loopscope_upload_duplicates"
"""Names of uploaded files whose content was already uploaded (skipped, not loaded twice)."""


def _store_uploads(files: list[Any]) -> None:
    """Copy uploads into the temporary folder under generated names (once per file id); a
    file whose content is already among the uploads is skipped, so adding the same files
    twice never duplicates sessions."""
    known: dict[str, data_source.StoredUpload] = st.session_state.setdefault(
        "_loopscope_upload_ids", {})
    stored: dict[str, data_source.StoredUpload] = {}
    duplicates: list[str] = []
    for f in files:
        fid = getattr(f, "file_id", None) or f"{f.name}:{f.size}"
        item = known.get(fid)
        if item is None:
            item = data_source.store_upload(f.getvalue(), f.name)
            known[fid] = item
        if item.digest in stored:
            duplicates.append(f.name)
            continue
        stored[item.digest] = item
    st.session_state[data_source.UPLOADS_KEY] = list(stored.values())
    st.session_state[DUPLICATES_KEY] = duplicates


def render_corpus_status(corpus: data_source.Corpus) -> None:
    """A one-line count in the sidebar (problems are shown in the main area)."""
    report = corpus.report
    n_err, n_warn = corpus.import_problem_counts
    parts = [f"**{len(corpus.sessions):,}** sessions from **{len(report.files):,}** files"]
    if n_err or n_warn:
        parts.append(f"{n_err:,} file errors, {n_warn:,} warnings (see *Import report*)")
    st.caption(" · ".join(parts))
    data_source.render_cache_notice(corpus)


# --------------------------------------------------------------------------- presets & files


def _apply_preset(name: str) -> None:
    values = state.default_values()
    values.update(PRESETS[name][1])
    state.apply_settings(values)
    st.session_state[LOAD_NOTES_KEY] = []
    st.session_state[LOAD_ERROR_KEY] = None


def render_presets_and_files() -> None:
    with st.expander("Presets and config files", expanded=False, icon=":material/tune:"):
        cols = st.columns(len(PRESETS))
        for col, (name, (title, _)) in zip(cols, PRESETS.items(), strict=True):
            col.button(title, key=f"_preset_{name}", on_click=_apply_preset, args=(name,),
                       width="stretch")
        upload = st.file_uploader(
            "Load a config file",
            type=["json", "json5", "toml"],
            key="_loopscope_config_upload",
            help="An OpenClaw config (openclaw.json with tools.loopDetection and agents.list), a "
            "bare loopDetection block, a gglib settings object, or a loopscope config holding both. "
            "JSON, JSON5 or TOML.",
        )
        if upload is not None:
            document, error = _parse_upload(upload)
            if error:
                st.error(md(error, 400))
            elif document is not None:
                agents = _agent_ids(document)
                agent = None
                if agents:
                    agent = st.selectbox(
                        "Agent",
                        options=["", *agents],
                        format_func=lambda a: a or "(global tools.loopDetection)",
                        key="_loopscope_config_agent",
                        help="OpenClaw applies an agent's tools.loopDetection over the global block "
                        "(agents.list[]).",
                    )
                st.button("Apply this config", key="_loopscope_config_apply", type="primary",
                          on_click=_apply_document, args=(document, agent or None))
        err = st.session_state.get(LOAD_ERROR_KEY)
        if err:
            st.error(md(err, 400))
        for note in st.session_state.get(LOAD_NOTES_KEY, []) or []:
            st.info(md(note, 400), icon=":material/info:")


def _parse_upload(upload: Any) -> tuple[dict[str, Any] | None, str | None]:
    try:
        return config_io.parse_config_text(upload.getvalue(), name=upload.name), None
    except config_io.ConfigFileError as exc:
        return None, str(exc)


def _agent_ids(document: Mapping[str, Any]) -> list[str]:
    """The agent ids of an OpenClaw-style ``agents.list[]`` in the document, if any."""
    entries: Any = None
    for name in config_io.engines_addressed(document):
        part = config_io.engine_settings(document, name) or {}
        agents = part.get("agents") if isinstance(part, Mapping) else None
        entries = agents.get("list") if isinstance(agents, Mapping) else None
        if isinstance(entries, list):
            break
    if not isinstance(entries, list):
        return []
    ids = [e.get("id") for e in entries if isinstance(e, Mapping) and isinstance(e.get("id"), str)]
    return [i for i in ids if i]


def document_values(
    document: Mapping[str, Any], agent: str | None = None
) -> tuple[dict[str, Any], list[str]]:
    """Control values and notices for a loaded config document (raises ``ConfigError``)."""
    values: dict[str, Any] = {}
    notes: list[str] = []
    addressed = config_io.engines_addressed(document)
    if not addressed:
        raise ConfigError(
            "this file holds no settings loopscope knows (expected a guard's own config file, "
            "such as an openclaw.json with tools.loopDetection or gglib settings, or a "
            "loopscope config)"
        )
    for name in addressed:
        engine = get_engine(name)
        settings = config_io.engine_settings(document, name)
        resolution = engine.resolve_config(settings, [], agent)
        cfg = resolution.config
        title = state.engine_titles()[name]
        notes.extend(f"{title}: {w}" for w in (*resolution.warnings, *resolution.notes))
        version = engine.version_of(cfg)
        values[state.version_key(name)] = version
        for key, shown in state.control_values(name, engine.values(cfg)).items():
            f = state.fields_by_key()[key]
            coerced = state.coerce_for_control(f, shown)
            if f.kind == "int" and coerced != shown:
                notes.append(f"{title}: {f.label}: the file's {shown} is beyond this control's "
                             f"range; set to {coerced}")
            values[key] = coerced
    return values, notes


def _apply_document(document: Mapping[str, Any], agent: str | None) -> None:
    try:
        values, notes = document_values(document, agent)
    except (ConfigError, config_io.ConfigFileError) as exc:
        st.session_state[LOAD_ERROR_KEY] = str(exc)
        st.session_state[LOAD_NOTES_KEY] = []
        return
    state.apply_settings(values)
    st.session_state[LOAD_ERROR_KEY] = None
    st.session_state[LOAD_NOTES_KEY] = notes or ["Config applied."]


# --------------------------------------------------------------------------- engine controls


def _restore_default(f: Field) -> None:
    st.session_state[f.key] = f.default


TYPED_KEY = "typed"
"""The toggle (and URL key) that turns every number slider into a box to type a value in."""


def _current(f: Field, key: str | None = None) -> Any:
    """The control's value, from the URL before it is drawn (a bound control reads the URL
    only when drawn). ``key``: the control's own key when it is not the sidebar's."""
    key = key or f.key
    if key in st.session_state:
        return st.session_state[key]
    text = st.query_params.get(key)
    if text is None:
        return f.default
    if f.kind in ("patterns", "choice"):
        return text
    if f.kind == "bool":
        return text.lower() == "true"
    try:
        return OFF if f.kind == "int_or_off" and text == OFF else int(text)
    except ValueError:
        return f.default


TYPED_FIELDS_KEY = "_loopscope_typed_fields"


def _typed(f: Field, key: str | None = None) -> bool:
    """A number box rather than a slider: asked for, or the value lies beyond the slider (and
    then for the rest of the session, so the control does not change shape under the user)."""
    if st.session_state.get(TYPED_KEY, st.query_params.get(TYPED_KEY) == "true"):
        return True
    key = key or f.key
    sticky: set[str] = st.session_state.setdefault(TYPED_FIELDS_KEY, set())
    if key in sticky:
        return True
    value = _current(f, key)
    if isinstance(value, int) and not isinstance(value, bool) and not f.min <= value <= f.max:
        sticky.add(key)
        return True
    return False


MOVED_KEY = "_loopscope_setting_moved"
"""Set (by the controls' ``on_change``) when the run was started by moving a sidebar setting."""


def _moved() -> None:
    st.session_state[MOVED_KEY] = True


def control(f: Field, key: str | None = None) -> None:
    """The control of one setting, bound to the URL under ``key`` (default: the sidebar's
    ``<engine>.<setting>``; the Compare page draws the same controls under its own keys)."""
    key = key or f.key
    common: dict[str, Any] = {"key": key, "help": f.help, "bind": "query-params"}
    if key == f.key:
        common["on_change"] = _moved
    if f.kind in ("int", "int_or_off") and _typed(f, key):
        if f.kind == "int":
            st.number_input(f.label, min_value=f.lowest, max_value=f.highest, value=f.default,
                            step=1, **common)
        else:
            st.text_input(f"{f.label} (a number, or off)", value=str(f.default), **common)
    elif f.kind == "int":
        st.slider(f.label, min_value=f.min, max_value=f.max, value=f.default, step=1, **common)
    elif f.kind == "int_or_off":
        st.select_slider(f.label, options=[OFF, *range(f.min, f.max + 1)], value=f.default,
                         **common)
    elif f.kind == "bool":
        st.toggle(f.label, value=f.default, **common)
    elif f.kind == "choice":
        st.selectbox(f.label, options=list(f.spec.choices), **common)
    elif f.kind == "patterns":
        st.text_area(f"{f.label} (one per line)", value=f.default, height=160, **common)
        if key == f.key:
            st.button("Restore the defaults", key=f"_restore_{f.key}",
                      on_click=_restore_default, args=(f,), icon=":material/restart_alt:")


_control = control


def render_engine_choice() -> list[str]:
    """Which guards the pages show (every engine by default); bound to the URL."""
    titles = state.engine_titles()
    st.multiselect(
        "Guards to show", options=list(state.engines()), default=list(state.engines()),
        format_func=titles.__getitem__, key=state.SHOWN_KEY, bind="query-params",
        help="Every loaded session is replayed through each guard shown here.",
    )
    return state.shown_engines()


def _mentioned(text: str, fields: list[Field]) -> Field | None:
    """The control a notice is about: the first setting it names."""
    best: tuple[int, Field] | None = None
    for f in fields:
        m = re.search(rf"(?<![\w`]){re.escape(f.native)}(?![\w`])", text)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), f)
    return best[1] if best else None


def _notice(kind: str, text: str, specs: Any) -> None:
    """A notice in the sidebar's words, with the guard's own wording as a muted aside."""
    shown = plain(text, specs)
    (st.warning if kind == "warning" else st.info)(md(shown, 600), icon=(
        ":material/warning:" if kind == "warning" else ":material/info:"))
    if shown != text:
        st.caption(f"In the guard's terms: {md(text, 400)}")


def _set_value(key: str, value: Any) -> None:
    state.apply_settings({key: value})


def render_engine(name: str) -> Any:
    """One engine's version choice, notes, controls (real settings, then what-ifs) and the
    notices of the configuration they make, each under the control it is about; returns the
    engine's resolution."""
    engine = get_engine(name)
    if len(engine.versions) > 1:
        st.selectbox(
            f"{engine.title} release", options=list(engine.versions),
            index=engine.versions.index(engine.default_version), key=state.version_key(name),
            bind="query-params",
            format_func=lambda v: f"{v} (default)" if v == engine.default_version else v,
            help=f"The {engine.title} release to replay. Releases can differ in what they "
            "detect and in their settings; the Upgrade impact page compares two.",
        )
    for note in engine.notes:
        st.caption(md(note, 400))
    fields = list(state.fields_of(name))
    version = state.current_version(name)
    # The notices go under the controls they are about, so the configuration is resolved
    # before the controls are drawn: from their values, or the URL's when not drawn yet.
    values = {f.key: _current(f) for f in fields}
    res = state.resolve(name, values, version)
    specs = engine.settings_for(version)
    notices: dict[str | None, list[tuple[str, str]]] = {}
    for kind, texts in (("warning", res.warnings), ("info", res.notes)):
        for text in texts:
            target = _mentioned(text, fields)
            notices.setdefault(target.key if target else None, []).append((kind, text))
    chosen = state.setting_values(name, values, version)
    try:
        in_use = engine.values(res.config)
    except Exception:  # an engine that cannot say: show what was chosen
        in_use = chosen
    real = [f for f in fields if f.spec.deployable]
    what_ifs = [f for f in fields if not f.spec.deployable]

    def draw(f: Field) -> None:
        _control(f)
        if f.kind == "int_or_off":
            try:
                state.from_control(f, _current(f))
            except (TypeError, ValueError):
                st.error(f"Type a whole number or “{OFF}”; the default is used meanwhile.",
                         icon=":material/error:")
        for kind, text in notices.get(f.key, []):
            _notice(kind, text, specs)
        used = in_use.get(f.native, chosen.get(f.native))
        if f.kind in ("int", "int_or_off") and used != chosen.get(f.native):
            value = state.to_control(f, used)
            c1, c2 = st.columns([1.4, 1], vertical_alignment="center")
            c1.caption(f"In use: **{md(str(value))}**")
            c2.button(f"Set {value}", key=f"_use_{f.key}", on_click=_set_value,
                      args=(f.key, value), help="Move the control to the value the guard uses.")

    for f in real:
        draw(f)
    if what_ifs:
        st.markdown(f"**What-ifs** — not settable in {md(engine.title)} {md(version)}: a "
                    "proposal to take to the guard's authors")
        for f in what_ifs:
            draw(f)
    for kind, text in notices.get(None, []):
        _notice(kind, text, specs)
    return res


def render_engine_settings() -> dict[str, Any]:
    """Every shown engine's controls with their notices; returns their resolutions."""
    resolutions: dict[str, Any] = {}
    shown = render_engine_choice()
    for name in shown:
        with st.expander(f"{state.engine_titles()[name]} settings", expanded=True,
                         icon=":material/tune:"):
            _slow_reruns_note(name)
            resolutions[name] = render_engine(name)
    return resolutions


SLOW_RERUNS_FROM = 5_000
"""Sessions from which a guard that re-runs session by session says a change takes seconds."""


def _slow_reruns_note(engine: str) -> None:
    corpus = state.corpus()
    sessions = len(corpus.sources)
    if sessions < SLOW_RERUNS_FROM:
        return
    title = state.engine_titles()[engine]
    version = state.current_version(engine)
    eng = get_engine(engine)
    if not corpus.reruns_in_columns(eng, version):
        st.caption(f":material/hourglass_top: {title} replays each of the {sessions:,} sessions "
                   "one by one: a change here takes seconds (the first one longest). Hide this "
                   "guard above while you tune the others.")
        return
    # (labels without their trailing remark: "(what-if: …)")
    labels = [re.sub(r"\s*\([^()]*\)$", "", s.label) for s in eng.settings_for(version)
              if s.name in eng.replayed_one_by_one]
    if labels:
        named = "; ".join(f"“{md(label)}”" for label in labels)
        st.caption(f":material/hourglass_top: A change to {named} replays the {sessions:,} "
                   f"sessions one by one (seconds); the other {title} settings re-run them "
                   "all at once.")


def page_runs_first() -> bool:
    """Whether this run may run the page before the sidebar's settings controls are drawn, so
    that the page's chart reaches the browser first: only when a setting was moved (the run a
    person watches the chart in) and every value the page reads is already in the session
    state — the shown guards, their versions and each of their controls. Otherwise the
    controls are drawn first: a control reads its value from the URL only when it is drawn,
    and a page that opens another page keeps the settings in the URL only for controls drawn
    by then (:func:`loopscope.ui.page_helpers.open_session`)."""
    moved = bool(st.session_state.pop(MOVED_KEY, False))
    return moved and _settings_known()


def _settings_known() -> bool:
    known = st.session_state
    if state.SHOWN_KEY not in known:
        return False
    for name in state.shown_engines():
        if len(get_engine(name).versions) > 1 and state.version_key(name) not in known:
            return False
        if any(f.key not in known for f in state.fields_of(name)):
            return False
    return True


def render_sidebar_settings() -> None:
    st.header("Settings", anchor=False)
    st.caption("Every change re-runs every loaded session. The URL holds the settings: copy it to "
               "share this view.")
    render_presets_and_files()
    st.toggle("Type exact values", key=TYPED_KEY, bind="query-params",
              help="Number boxes instead of sliders, for values beyond a slider's range. A value "
              "beyond the range always shows as a box.")
    render_engine_settings()
