"""The sidebar: where the sessions come from, and every setting of both engines.

Each control is declared in :data:`loopscope.ui.state.FIELDS` and bound to the URL. Notices
under each engine come from the engine's own ``resolve_config`` (clamps, ordering), so what the
sidebar says is exactly what the replay uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from loopscope import config_io
from loopscope.engines import ConfigError, get_engine
from loopscope.model import escape_for_display
from loopscope.ui import data, state
from loopscope.ui.state import OFF, Field

PRESETS: dict[str, tuple[str, dict[str, Any]]] = {
    "defaults": ("Upstream defaults", {}),
    "tight": (
        "Tight (OpenClaw 3 / 5 / 7, gglib read-only 5)",
        {
            "openclaw.warningThreshold": 3,
            "openclaw.criticalThreshold": 5,
            "openclaw.globalCircuitBreakerThreshold": 7,
            "openclaw.unknownToolThreshold": 5,
            "gglib.max_observation_steps": 5,
        },
    ),
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
        options=list(data.SOURCE_LABELS),
        captions=list(data.SOURCE_LABELS.values()),
        key=data.SOURCE_KEY,
        bind="query-params",
        help="Uploaded files are kept only in a private temporary folder on the server. "
        "A folder must lie inside the allowed roots (LOOPSCOPE_ALLOWED_ROOTS).",
    )
    if source == data.SOURCE_UPLOAD:
        files = st.file_uploader(
            "Session files",
            accept_multiple_files=True,
            type=[e.lstrip(".") for e in data.UPLOAD_EXTENSIONS],
            key="_loopscope_uploader",
            help="JSON, JSONL, Markdown, SWE-agent .traj, inspect_ai .eval, or a zip archive.",
        )
        _store_uploads(files or [])
    elif source == data.SOURCE_FOLDER:
        st.text_input(
            "Folder path",
            key=data.FOLDER_KEY,
            bind="query-params",
            placeholder="e.g. sample_transcripts",
            help="Relative paths start at the server's working directory. Allowed roots: "
            + ", ".join(f"`{escape_for_display(str(r))}`" for r in data.allowed_roots()),
        )


def _store_uploads(files: list[Any]) -> None:
    """Copy uploads into the temporary folder under generated names (once per file id)."""
    known: dict[str, data.StoredUpload] = st.session_state.setdefault("_loopscope_upload_ids", {})
    stored: list[data.StoredUpload] = []
    for f in files:
        fid = getattr(f, "file_id", None) or f"{f.name}:{f.size}"
        item = known.get(fid)
        if item is None:
            item = data.store_upload(f.getvalue(), f.name)
            known[fid] = item
        stored.append(item)
    st.session_state[data.UPLOADS_KEY] = stored


def render_corpus_status(corpus: data.Corpus) -> None:
    note = st.session_state.get(data.DATA_ERROR_KEY)
    if note:
        st.warning(note, icon=":material/info:")
    report = corpus.report
    n_err, n_warn = corpus.import_problem_counts
    parts = [f"**{len(corpus.sessions)}** sessions from **{len(report.files)}** files"]
    if n_err or n_warn:
        parts.append(f"{n_err} file errors, {n_warn} warnings (see *Import report*)")
    st.caption(" · ".join(parts))


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
                st.error(error)
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
            st.error(err)
        for note in st.session_state.get(LOAD_NOTES_KEY, []) or []:
            st.info(note, icon=":material/info:")


def _parse_upload(upload: Any) -> tuple[dict[str, Any] | None, str | None]:
    try:
        return config_io.parse_config_text(upload.getvalue(), name=upload.name), None
    except config_io.ConfigFileError as exc:
        return None, escape_for_display(str(exc), 400)


def _agent_ids(document: Mapping[str, Any]) -> list[str]:
    oc = config_io.engine_settings(document, "openclaw") or {}
    agents = oc.get("agents") if isinstance(oc, Mapping) else None
    entries = agents.get("list") if isinstance(agents, Mapping) else None
    if not isinstance(entries, list):
        return []
    ids = [e.get("id") for e in entries if isinstance(e, Mapping) and isinstance(e.get("id"), str)]
    return [i for i in ids if i]


GGLIB_KEYS = ("max_repeated_batch_steps", "max_observation_steps", "observation_tools",
              "max_stagnation_steps")
OPENCLAW_TOP = ("tools", "agents", "loopDetection", "enabled", "historySize", "warningThreshold",
                "criticalThreshold", "globalCircuitBreakerThreshold", "unknownToolThreshold",
                "detectors", "postCompactionGuard")


def engines_addressed(document: Mapping[str, Any]) -> list[str]:
    """Which engines a config document sets (a loopscope document may set both)."""
    if "gglib" in document or "openclaw" in document:
        return [e for e in state.ENGINES if isinstance(document.get(e), Mapping)]
    out = []
    if any(k in document for k in GGLIB_KEYS):
        out.append("gglib")
    if any(k in document for k in OPENCLAW_TOP):
        out.append("openclaw")
    return out


def document_values(
    document: Mapping[str, Any], agent: str | None = None
) -> tuple[dict[str, Any], list[str]]:
    """Control values and notices for a loaded config document (raises ``ConfigError``)."""
    values: dict[str, Any] = {}
    notes: list[str] = []
    addressed = engines_addressed(document)
    if not addressed:
        raise ConfigError(
            "this file holds no gglib or OpenClaw settings (expected tools.loopDetection, a "
            "loopDetection block, gglib keys, or a loopscope config)"
        )
    for name in addressed:
        settings = config_io.engine_settings(document, name)
        resolution = get_engine(name).resolve_config(settings, [], agent if name == "openclaw" else None)
        cfg = resolution.config
        notes.extend(f"{state.ENGINE_TITLES[name]}: {w}" for w in resolution.warnings)
        if name == "gglib":
            plain = cfg.to_json()
            raw = {f"gglib.{k}": v for k, v in plain.items()}
            raw["gglib.max_observation_steps"] = (
                OFF if plain["max_observation_steps"] is None else plain["max_observation_steps"]
            )
            raw["gglib.observation_tools"] = state.patterns_to_text(plain["observation_tools"])
        else:
            raw = {f"openclaw.{k}": v for k, v in cfg.settings().items()}
            if getattr(cfg, "enabled_defaulted", False):
                from loopscope.engines.openclaw.config import ENABLED_UNSET_BANNER

                notes.append(f"OpenClaw: {ENABLED_UNSET_BANNER}")
        for key, value in raw.items():
            f = state.FIELDS_BY_KEY.get(key)
            if f is None:
                continue
            shown = state.coerce_for_control(f, value)
            if f.kind == "int" and shown != value:
                notes.append(f"{f.label}: the file's {value} is beyond this control's range; "
                             f"set to {shown}")
            values[key] = shown
    return values, notes


def _apply_document(document: Mapping[str, Any], agent: str | None) -> None:
    try:
        values, notes = document_values(document, agent)
    except (ConfigError, config_io.ConfigFileError) as exc:
        st.session_state[LOAD_ERROR_KEY] = escape_for_display(str(exc), 400)
        st.session_state[LOAD_NOTES_KEY] = []
        return
    state.apply_settings(values)
    st.session_state[LOAD_ERROR_KEY] = None
    st.session_state[LOAD_NOTES_KEY] = notes or ["Config applied."]


# --------------------------------------------------------------------------- engine controls


def _restore_patterns() -> None:
    st.session_state["gglib.observation_tools"] = state.DEFAULT_PATTERNS_TEXT


def _control(f: Field) -> None:
    if f.kind == "int":
        st.slider(f.label, min_value=f.min, max_value=f.max, value=f.default, step=1, key=f.key,
                  help=f.help, bind="query-params")
    elif f.kind == "int_or_off":
        st.select_slider(f.label, options=[OFF, *range(f.min, f.max + 1)], value=f.default,
                         key=f.key, help=f.help, bind="query-params")
    elif f.kind == "bool":
        st.toggle(f.label, value=f.default, key=f.key, help=f.help, bind="query-params")
    elif f.kind == "patterns":
        st.text_area(f.label, value=f.default, key=f.key, help=f.help, height=160,
                     bind="query-params")
        st.button("Restore default patterns", key="_restore_patterns", on_click=_restore_patterns,
                  icon=":material/restart_alt:")


def pattern_notices(patterns: tuple[str, ...]) -> list[str]:
    """Engine-gglib §6 L7: an empty pattern matches every tool; short ones over-capture."""
    notes = []
    if "" in patterns:
        notes.append("The empty pattern \"\" matches every tool: every batch counts as read-only.")
    short = [p for p in patterns if 0 < len(p) < 4]
    if short:
        notes.append(
            "Short patterns catch more than you may expect ("
            + ", ".join(f"`{escape_for_display(p)}`" for p in short)
            + "; `read` would also match `thread_create`)."
        )
    if not patterns:
        notes.append("No read-only patterns: every batch is treated as changing things.")
    return notes


def render_engine_settings() -> dict[str, Any]:
    """Both engines' controls with their notices; returns the current resolutions."""
    resolutions: dict[str, Any] = {}
    with st.expander("gglib settings", expanded=True, icon=":material/repeat:"):
        for f in state.fields_of("gglib"):
            _control(f)
        res = state.resolve("gglib")
        resolutions["gglib"] = res
        for w in res.warnings:
            st.warning(w, icon=":material/warning:")
        for note in pattern_notices(res.config.observation_tools):
            st.warning(note, icon=":material/warning:")
    with st.expander("OpenClaw settings", expanded=True, icon=":material/sync_problem:"):
        st.caption("OpenClaw's own default is off; loopscope turns it on so you can see what it "
                   "would do.")
        for f in state.fields_of("openclaw"):
            _control(f)
        res = state.resolve("openclaw")
        resolutions["openclaw"] = res
        for w in res.warnings:
            st.warning(w, icon=":material/warning:")
        cfg = res.config
        window = cfg.history_size
        over = [
            (name, value)
            for name, value in (("warning", cfg.warning_threshold), ("block", cfg.critical_threshold),
                                ("hard stop", cfg.global_circuit_breaker_threshold))
            if value > window + 1
        ]
        if over:
            st.info(
                "Counts never exceed the calls remembered (" + str(window) + "), so "
                + ", ".join(f"the {n} level ({v})" for n, v in over)
                + " can never be reached.",
                icon=":material/info:",
            )
    return resolutions


def render_sidebar_settings() -> None:
    st.header("Settings", anchor=False)
    st.caption("Every change re-runs every loaded session. The URL holds the settings: copy it to "
               "share this view.")
    render_presets_and_files()
    render_engine_settings()
