"""The dashboard's state: settings ↔ URL, the loaded corpus, configurations and replays.

How the pieces fit (read this before adding a page)
===================================================

* **Every setting lives in the URL.** Each settings control is a widget whose ``key`` is its
  query parameter (``gglib.max_repeated_batch_steps``, ``openclaw.warningThreshold``, …) and is
  bound with ``bind="query-params"``: moving it rewrites the URL, opening a URL sets it, and a
  value equal to the default is left out of the URL. The fields are declared once in
  :data:`FIELDS`; the sidebar (:mod:`loopscope.ui.settings`) draws them, and
  :func:`current_configs` turns their values into engine configurations through each engine's
  own ``resolve_config`` (so clamping and ordering warnings are the engine's, word for word).
  To change a setting from code (a preset, a sweep cell), call :func:`apply_settings` from a
  button's ``on_click`` callback; it writes ``st.session_state`` (bound widgets cannot be set
  through ``st.query_params``).

* **The corpus** is loaded by the app script before any page runs and is available as
  :func:`corpus` → :class:`loopscope.ui.data.Corpus` (``.sessions``, ``.report`` with per-file
  problems, ``.prepared[engine]`` aligned with ``.sessions``, ``.fingerprint``). It is cached
  across reruns and browser sessions with ``st.cache_resource`` by a cheap fingerprint (paths,
  sizes, mtimes; upload digests), so a page never re-reads or re-prepares files.

* **Replays**: :func:`replays` ``(engine)`` → one ``SessionReplay`` per session of the corpus
  under the current configuration (cached per corpus × configuration); :func:`replays_for`
  ``(engine, config)`` for any other configuration (compare/sweep). Both only run
  ``engine.run(prepared, config)``.

* **Links between pages**: use :func:`loopscope.ui.views.session_link` (an ``st.page_link``
  with ``query_params``). Do not call ``st.switch_page`` from a page: in Streamlit 1.67 it
  replaces the query string, which raises when a bound setting is non-default (it cannot clear
  a bound parameter) or drops the settings from the URL when ``query_params`` is given.

* **Pages** are declared in :data:`loopscope.ui.pages.PAGES`: adding one is one line there,
  ``PageSpec("loopscope.ui.pages.sweep", "Sweep", "sweep", ":material/grid_on:")``, pointing
  at a module with a ``render()`` function. Pages read the functions of this module and draw in
  the main area; the sidebar is the app's.

Example (a page)::

    from loopscope.ui import state

    def render() -> None:
        corpus = state.corpus()
        cfgs = state.current_configs()          # {"gglib": ConfigResolution, "openclaw": …}
        for replay in state.replays("gglib"):   # aligned with corpus.sessions
            ...
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import streamlit as st

from loopscope.engines import ConfigError, get_engine
from loopscope.engines.base import ConfigResolution, SessionReplay
from loopscope.engines.gglib.config import DEFAULT_OBSERVATION_TOOLS

if TYPE_CHECKING:
    from loopscope.ui.data import Corpus

ENGINES: tuple[str, ...] = ("gglib", "openclaw")
ENGINE_TITLES = {"gglib": "gglib", "openclaw": "OpenClaw"}

FieldKind = Literal["int", "int_or_off", "bool", "patterns"]
OFF = "off"


@dataclass(frozen=True, slots=True)
class Field:
    """One engine setting as a control: its URL key, native name, plain label and range."""

    engine: str
    native: str
    """The engine's own key name (``--set`` name)."""
    label: str
    help: str
    kind: FieldKind
    default: Any
    min: int = 1
    max: int = 100
    group: str = ""

    @property
    def key(self) -> str:
        """The widget key, which is also the URL query parameter."""
        return f"{self.engine}.{self.native}"


def _h(native: str, text: str) -> str:
    return f"{text}\n\nUpstream name: `{native}`."


DEFAULT_PATTERNS_TEXT = "\n".join(DEFAULT_OBSERVATION_TOOLS)

FIELDS: tuple[Field, ...] = (
    # ---------------------------------------------------------------- gglib
    Field("gglib", "max_repeated_batch_steps", "Repeats allowed for tools that change things",
          _h("max_repeated_batch_steps",
             "How many times in a row the same batch of tool calls may get the same answer "
             "before gglib refuses. Upstream fixes it at 2; the third identical repeat is "
             "refused. It is also the floor of the ceiling."),
          "int", 2, 1, 100, "Repeats"),
    Field("gglib", "max_observation_steps", "Repeats allowed for read-only tools",
          _h("max_observation_steps",
             "The allowance for batches whose every tool matches a read-only pattern, and the "
             "ceiling for everything else. 'off' switches the read-only tier off: every batch is "
             "then refused at its 3rd occurrence whatever the answers."),
          "int_or_off", 15, 1, 100, "Repeats"),
    Field("gglib", "max_stagnation_steps", "Identical prose replies allowed",
          _h("max_stagnation_steps",
             "How many times the assistant may write the exact same reply (without tool calls) "
             "within its last 4 × this many replies."),
          "int", 5, 1, 100, "Repeats"),
    Field("gglib", "observation_tools", "Read-only tool patterns (one per line)",
          _h("observation_tools",
             "A batch is read-only when every tool name contains one of these patterns "
             "(case-insensitive). The list replaces the defaults. Write \"\" on a line for the "
             "empty pattern (it matches every tool)."),
          "patterns", DEFAULT_PATTERNS_TEXT, group="Read-only tools"),
    # ---------------------------------------------------------------- OpenClaw
    Field("openclaw", "enabled", "Loop detection on",
          _h("enabled",
             "OpenClaw's own default is off; loopscope turns it on so you can see what it would "
             "do. Off also turns off the post-compaction guard."),
          "bool", True, group="Switches"),
    Field("openclaw", "warningThreshold", "Warn after this many repeats",
          _h("warningThreshold",
             "The warning level of the repeat, polling and ping-pong detectors. OpenClaw only "
             "logs warnings; the agent is not told."),
          "int", 10, 1, 200, "Thresholds"),
    Field("openclaw", "criticalThreshold", "Block after this many repeats",
          _h("criticalThreshold",
             "The blocking level of the repeat, polling and ping-pong detectors. Must exceed the "
             "warning level; OpenClaw raises it otherwise."),
          "int", 20, 1, 200, "Thresholds"),
    Field("openclaw", "globalCircuitBreakerThreshold", "Hard stop after this many identical results",
          _h("globalCircuitBreakerThreshold",
             "The global circuit breaker: the same call with the same result this many times in "
             "a row is blocked, whatever the detector switches say. Must exceed the blocking "
             "level."),
          "int", 30, 1, 300, "Thresholds"),
    Field("openclaw", "unknownToolThreshold", "Block calls to a missing tool after",
          _h("unknownToolThreshold",
             "How many calls in a row to a tool that does not exist are blocked. It has no "
             "switch."),
          "int", 10, 1, 200, "Thresholds"),
    Field("openclaw", "historySize", "Calls remembered",
          _h("historySize",
             "How many recent calls OpenClaw keeps to look for repeats. A threshold above this "
             "can never be reached."),
          "int", 30, 1, 500, "Thresholds"),
    Field("openclaw", "detectors.genericRepeat", "Detect repeated calls",
          _h("detectors.genericRepeat", "The same call made over and over (genericRepeat)."),
          "bool", True, group="Switches"),
    Field("openclaw", "detectors.knownPollNoProgress", "Detect polling without progress",
          _h("detectors.knownPollNoProgress",
             "A status poll (command_status, process poll/log) whose answer stops changing."),
          "bool", True, group="Switches"),
    Field("openclaw", "detectors.pingPong", "Detect back-and-forth between two calls",
          _h("detectors.pingPong", "An A, B, A, B … alternation between two calls."),
          "bool", True, group="Switches"),
    Field("openclaw", "postCompactionGuard.windowSize", "After a compaction, stop after",
          _h("postCompactionGuard.windowSize",
             "After the conversation is compacted, the same call with the same result this many "
             "times stops the run."),
          "int", 3, 1, 100, "Thresholds"),
)

FIELDS_BY_KEY: dict[str, Field] = {f.key: f for f in FIELDS}


def fields_of(engine: str) -> tuple[Field, ...]:
    return tuple(f for f in FIELDS if f.engine == engine)


# --------------------------------------------------------------------------- values


def widget_value(field: Field) -> Any:
    """The control's current value (its default before the sidebar has drawn it)."""
    return st.session_state.get(field.key, field.default)


def patterns_from_text(text: str) -> tuple[str, ...]:
    """One pattern per line, trimmed; blank lines dropped; a line ``""`` is the empty pattern."""
    out: list[str] = []
    for line in (text or "").splitlines():
        item = line.strip()
        if not item:
            continue
        out.append("" if item in ('""', "''") else item)
    return tuple(out)


def patterns_to_text(patterns: Sequence[str]) -> str:
    return "\n".join('""' if p == "" else p for p in patterns)


def settings_inputs(engine: str, values: Mapping[str, Any] | None = None) -> tuple[
    dict[str, Any] | None, list[tuple[str, str]]
]:
    """``(file_settings, overrides)`` for ``engine.resolve_config`` from control values.

    ``values`` maps widget keys to values (default: the current controls). Everything is passed
    as ``--set`` pairs except the gglib pattern list, which goes as a settings array so that
    patterns are kept verbatim (a comma or an empty pattern survives).
    """
    file_settings: dict[str, Any] | None = None
    overrides: list[tuple[str, str]] = []
    for f in fields_of(engine):
        v = values.get(f.key, f.default) if values is not None else widget_value(f)
        if f.kind == "patterns":
            file_settings = {f.native: list(patterns_from_text(str(v)))}
        elif f.kind == "bool":
            overrides.append((f.native, "true" if v else "false"))
        elif f.kind == "int_or_off":
            overrides.append((f.native, "none" if v in (OFF, None) else str(int(v))))
        else:
            overrides.append((f.native, str(int(v))))
    return file_settings, overrides


def resolve(engine: str, values: Mapping[str, Any] | None = None) -> ConfigResolution[Any]:
    """The engine's configuration from control values (the current controls by default)."""
    file_settings, overrides = settings_inputs(engine, values)
    eng = get_engine(engine)
    try:
        return eng.resolve_config(file_settings, overrides, None)
    except ConfigError as exc:  # a control value the engine refuses: say so, use defaults
        return ConfigResolution(eng.default_config(), (f"{exc}; using the defaults",))


def current_configs() -> dict[str, ConfigResolution[Any]]:
    """``{"gglib": ConfigResolution, "openclaw": ConfigResolution}`` for the current controls."""
    return {name: resolve(name) for name in ENGINES}


def current_values() -> dict[str, Any]:
    """Every control's value by widget key (what a link carries)."""
    return {f.key: widget_value(f) for f in FIELDS}


def default_values() -> dict[str, Any]:
    return {f.key: f.default for f in FIELDS}


def apply_settings(values: Mapping[str, Any]) -> None:
    """Set controls from code; call only from a widget callback (before widgets are drawn).

    Unknown keys are ignored; integers are kept within the control's range.
    """
    for key, value in values.items():
        f = FIELDS_BY_KEY.get(key)
        if f is None:
            continue
        st.session_state[key] = coerce_for_control(f, value)


def coerce_for_control(f: Field, value: Any) -> Any:
    if f.kind == "bool":
        return bool(value)
    if f.kind == "patterns":
        return value if isinstance(value, str) else patterns_to_text(list(value))
    if f.kind == "int_or_off" and value in (None, OFF):
        return OFF
    return min(max(int(value), f.min), f.max)


# --------------------------------------------------------------------------- corpus & replays


CORPUS_KEY = "_loopscope_corpus"


def set_corpus(corpus: Corpus) -> None:
    """Called by the app script once per run, before the page runs."""
    st.session_state[CORPUS_KEY] = corpus


def corpus() -> Corpus:
    """The corpus loaded for the current data source (see the module docstring)."""
    value = st.session_state.get(CORPUS_KEY)
    if value is None:
        from loopscope.ui import data

        value = data.load_current_corpus(show_progress=False)
        set_corpus(value)
    return value


def config_key(config: Any) -> str:
    """A stable text key of a configuration (frozen dataclasses have a complete repr)."""
    return repr(config)


def replays(engine: str) -> list[SessionReplay]:
    """One replay per session of :func:`corpus` under the current configuration of ``engine``."""
    return replays_for(engine, current_configs()[engine].config)


def replays_for(engine: str, config: Any) -> list[SessionReplay]:
    """One replay per session of :func:`corpus` under ``config`` (cached per corpus × config)."""
    c = corpus()
    return _cached_replays(c.fingerprint, engine, config_key(config), c, config)


@st.cache_resource(max_entries=64, show_spinner=False)
def _cached_replays(
    fingerprint: str, engine: str, config_text: str, _corpus: Corpus, _config: Any
) -> list[SessionReplay]:
    del fingerprint, config_text  # cache keys only
    return run_all(engine, _corpus, _config)


def run_all(engine: str, c: Corpus, config: Any) -> list[SessionReplay]:
    """The cheap part of every replay: the state machine over prepared sessions."""
    eng = get_engine(engine)
    run: Callable[[Any, Any], SessionReplay] = eng.run
    return [run(p, config) for p in c.prepared[engine]]


def session_index() -> dict[str, int]:
    """Session source → position in :func:`corpus` ``.sessions``."""
    return {s.source: i for i, s in enumerate(corpus().sessions)}
