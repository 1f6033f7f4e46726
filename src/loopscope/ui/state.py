"""The dashboard's state: settings ↔ URL, the loaded corpus, configurations and replays.

How the pieces fit (read this before adding a page)
===================================================

* **Every setting lives in the URL.** Each settings control is a widget whose ``key`` is its
  query parameter, ``<engine>.<setting name>`` (the engine's version: ``<engine>.version``), and
  is bound with ``bind="query-params"``: moving it rewrites the URL, opening a URL sets it, and
  a value equal to the default is left out of the URL. The controls are made from each engine's
  settings schema (:func:`all_fields`, :func:`fields_of`); the sidebar (:mod:`loopscope.ui.settings`)
  draws them, and :func:`resolve` turns their values into an engine configuration through the
  engine's own ``config`` (so clamping and ordering notes are the engine's, word for word).
  To change a setting from code (a preset, a sweep cell), call :func:`apply_settings` from a
  button's ``on_click`` callback; it writes ``st.session_state`` (bound widgets cannot be set
  through ``st.query_params``).

* **The corpus** is loaded by the app script before any page runs and is available as
  :func:`corpus` → :class:`loopscope.corpus.Corpus` (``.sessions``, ``.report`` with per-file
  problems, ``.fingerprint``); :func:`prepared` gives an engine's prepared sessions, aligned
  with ``.sessions`` (made on first use). It is cached
  across reruns and browser sessions with ``st.cache_resource`` by a cheap fingerprint (paths,
  sizes, mtimes; upload digests), so a page never re-reads or re-prepares files.

* **Replays**: :func:`replays` ``(engine)`` → one ``SessionReplay`` per session of the corpus
  under the current configuration (cached per corpus × configuration); :func:`replays_for`
  ``(engine, config)`` for any other configuration (compare/sweep). Both only run
  ``engine.run(prepared, config)``.

* **Links between pages**: use :func:`loopscope.ui.page_helpers.session_link` (an ``st.page_link``
  with ``query_params``). Do not call ``st.switch_page`` from a page: in Streamlit 1.67 it
  replaces the query string, which raises when a bound setting is non-default (it cannot clear
  a bound parameter) or drops the settings from the URL when ``query_params`` is given.

* **Pages** are declared in :data:`loopscope.ui.pages.registry.PAGES`: adding one is one line
  there, ``PageSpec("loopscope.ui.pages.sweep", "Sweep", "sweep", ":material/grid_on:")``,
  pointing at a module with a ``render()`` function. Pages read the functions of this module and draw in
  the main area; the sidebar is the app's.

Example (a page)::

    from loopscope.ui import state

    def render() -> None:
        corpus = state.corpus()
        cfgs = state.current_configs()          # {engine name: ConfigResolution, …}
        for name in state.shown_engines():      # the guards the user chose to see
            for replay in state.replays(name):  # aligned with corpus.sessions
            ...
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import streamlit as st

from loopscope.engines import ConfigError, SessionReplay, SettingSpec, engine_names, get_engine
from loopscope.engines.base import ConfigResolution, RunColumns

if TYPE_CHECKING:
    from loopscope.corpus import Corpus

OFF = "off"
"""How "off" of an ``int_or_off`` setting is shown by its control and written in the URL."""

FieldKind = Literal["int", "int_or_off", "bool", "patterns", "choice"]
_CONTROL_KINDS: dict[str, FieldKind] = {
    "int": "int", "int_or_off": "int_or_off", "bool": "bool", "str_list": "patterns",
    "choice": "choice",
}


SLIDER_AT_LEAST = 30
"""A slider reaches at least this far (when the engine allows it)."""


@dataclass(frozen=True, slots=True)
class Field:
    """One engine setting as a dashboard control, made from the engine's :class:`SettingSpec`."""

    engine: str
    spec: SettingSpec

    @property
    def key(self) -> str:
        """The widget key, which is also the URL query parameter: ``<engine>.<setting>``."""
        return f"{self.engine}.{self.spec.name}"

    @property
    def native(self) -> str:
        """The upstream key (``--set`` name)."""
        return self.spec.name

    @property
    def label(self) -> str:
        label = self.spec.label
        # (a label that already says so, "… (what-if: not a … setting)", is not told twice)
        return label if self.spec.deployable or "what-if" in label else f"{label} (what-if)"

    @property
    def help(self) -> str:
        text = self.spec.help
        if not self.spec.deployable:
            text += ("\n\nA what-if: this value is fixed in the real guard and cannot be "
                     "set there.")
        return f"{text}\n\n*In the guard's own config:* `{self.spec.name}`."

    @property
    def kind(self) -> FieldKind:
        return _CONTROL_KINDS[self.spec.kind]

    @property
    def min(self) -> int:
        """The slider's lowest value."""
        return self.spec.range[0]

    @property
    def max(self) -> int:
        """The slider's highest value: fitted to where values live (twice the default, at
        least 30), within the engine's own slider range; larger values are typed."""
        lo, hi = self.spec.range
        default = self.spec.default
        if isinstance(default, int) and not isinstance(default, bool):
            hi = min(hi, max(SLIDER_AT_LEAST, 2 * default, lo + 1))
        return hi

    @property
    def lowest(self) -> int | None:
        """The smallest value the engine accepts (a typed value's bound)."""
        return self.spec.min

    @property
    def highest(self) -> int | None:
        return self.spec.max

    @property
    def group(self) -> str:
        return self.spec.group

    @property
    def default(self) -> Any:
        """The control's value for the setting's default."""
        return to_control(self, self.spec.default)


def to_control(f: Field, value: Any) -> Any:
    """A typed setting value as its control holds it."""
    if f.spec.kind == "str_list":
        return patterns_to_text(list(value))
    if f.spec.kind == "int_or_off" and value is None:
        return OFF
    return value


def from_control(f: Field, value: Any) -> Any:
    """A control's value as the typed setting value."""
    if f.spec.kind == "str_list":
        return patterns_from_text(str(value))
    if f.spec.kind == "int_or_off":
        return None if value in (OFF, None) else int(value)
    if f.spec.kind == "int":
        return int(value)
    if f.spec.kind == "bool":
        return bool(value)
    return value


def engines() -> tuple[str, ...]:
    """Every engine (the registry's order, plug-ins included)."""
    return engine_names()


def engine_titles() -> dict[str, str]:
    """Engine name → its title, for every engine in the registry (read when called, so a
    plug-in installed while the server runs shows up)."""
    return _titles_for(engine_names())


@functools.cache
def _titles_for(names: tuple[str, ...]) -> dict[str, str]:
    return {name: get_engine(name).title for name in names}


SHOWN_KEY = "engines"
"""The control (and URL key) listing the guards shown on the pages."""


def shown_engines() -> list[str]:
    """The guards the user chose to see (every engine by default), in registry order."""
    chosen = st.session_state.get(SHOWN_KEY)
    if not chosen:
        return list(engines())
    return [e for e in engines() if e in chosen] or list(engines())


def version_key(engine: str) -> str:
    """The control (and URL key) choosing ``engine``'s version."""
    return f"{engine}.version"


def current_version(engine: str) -> str:
    """The version chosen in the sidebar (the engine's default before it is drawn)."""
    eng = get_engine(engine)
    value = st.session_state.get(version_key(engine), eng.default_version)
    return value if value in eng.versions else eng.default_version


def fields_of(engine: str, version: str | None = None) -> tuple[Field, ...]:
    """The controls of ``engine`` at ``version`` (default: the version chosen)."""
    eng = get_engine(engine)
    version = version or current_version(engine)
    return tuple(Field(engine, spec) for spec in eng.settings_for(version))


def all_fields() -> tuple[Field, ...]:
    """Every control of every engine and version."""
    return _fields_for(engine_names())


def fields_by_key() -> dict[str, Field]:
    return _fields_by_key_for(engine_names())


@functools.cache
def _fields_by_key_for(names: tuple[str, ...]) -> dict[str, Field]:
    return {f.key: f for f in _fields_for(names)}


@functools.cache
def _fields_for(names: tuple[str, ...]) -> tuple[Field, ...]:
    seen: dict[str, Field] = {}
    for name in names:
        eng = get_engine(name)
        for version in eng.versions:
            for spec in eng.settings_for(version):
                seen.setdefault(f"{name}.{spec.name}", Field(name, spec))
    return tuple(seen.values())




# --------------------------------------------------------------------------- values


def widget_value(field: Field) -> Any:
    """The control's current value (its default before the sidebar has drawn it)."""
    return st.session_state.get(field.key, field.default)


def patterns_from_text(text: str) -> tuple[str, ...]:
    """One entry per line, trimmed; blank lines dropped; a line ``""`` is the empty entry."""
    out: list[str] = []
    for line in (text or "").splitlines():
        item = line.strip()
        if not item:
            continue
        out.append("" if item in ('""', "''") else item)
    return tuple(out)


def patterns_to_text(patterns: Sequence[str]) -> str:
    return "\n".join('""' if p == "" else p for p in patterns)


def setting_values(engine: str, values: Mapping[str, Any] | None = None,
                   version: str | None = None) -> dict[str, Any]:
    """Typed setting values (setting name → value) of ``engine`` from control values.

    ``values`` maps widget keys to control values (default: the current controls)."""
    out: dict[str, Any] = {}
    for f in fields_of(engine, version):
        v = values.get(f.key, f.default) if values is not None else widget_value(f)
        try:
            out[f.native] = from_control(f, v)
        except (TypeError, ValueError):
            out[f.native] = f.spec.default
    return out


def resolve(engine: str, values: Mapping[str, Any] | None = None,
            version: str | None = None) -> ConfigResolution[Any]:
    """The engine's configuration from control values (the current controls by default)."""
    eng = get_engine(engine)
    if version is None:
        version = (values or {}).get(version_key(engine)) or current_version(engine)
    try:
        return eng.config(setting_values(engine, values, version), version)
    except ConfigError as exc:  # a control value the engine refuses: say so, use defaults
        return ConfigResolution(eng.default_config(version), (f"{exc}; using the defaults",))


def current_configs() -> dict[str, ConfigResolution[Any]]:
    """Engine name → the configuration of the current controls."""
    return {name: resolve(name) for name in engines()}


def current_values() -> dict[str, Any]:
    """Every control's value by widget key, versions included (what a link carries)."""
    values = {f.key: widget_value(f) for f in all_fields()}
    for name in engines():
        values[version_key(name)] = current_version(name)
    return values


def default_values() -> dict[str, Any]:
    values = {f.key: f.default for f in all_fields()}
    for name in engines():
        values[version_key(name)] = get_engine(name).default_version
    return values


def control_values(engine: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """Widget key → control value for typed setting values of ``engine``."""
    out: dict[str, Any] = {}
    for name, value in settings.items():
        f = fields_by_key().get(f"{engine}.{name}")
        if f is not None:
            out[f.key] = to_control(f, value)
    return out


def apply_settings(values: Mapping[str, Any]) -> None:
    """Set controls from code; call only from a widget callback (before widgets are drawn).

    Unknown keys are ignored; integers are kept within the control's range.
    """
    for key, value in values.items():
        engine, _, name = key.partition(".")
        if name == "version" and engine in engines():
            if value in get_engine(engine).versions:
                st.session_state[key] = value
            continue
        f = fields_by_key().get(key)
        if f is None:
            continue
        st.session_state[key] = coerce_for_control(f, value)


def coerce_for_control(f: Field, value: Any) -> Any:
    if f.kind == "bool":
        return bool(value)
    if f.kind == "patterns":
        return value if isinstance(value, str) else patterns_to_text(list(value))
    if f.kind == "choice":
        return value
    if f.kind == "int_or_off" and value in (None, OFF):
        return OFF
    # Values beyond the slider are typed (the control becomes a number box): keep them
    # within the engine's own bounds only.
    number = int(value)
    if f.lowest is not None:
        number = max(number, f.lowest)
    if f.highest is not None:
        number = min(number, f.highest)
    return number


# --------------------------------------------------------------------------- corpus & replays


CORPUS_KEY = "_loopscope_corpus"


def set_corpus(corpus: Corpus) -> None:
    """Called by the app script once per run, before the page runs."""
    st.session_state[CORPUS_KEY] = corpus


def corpus() -> Corpus:
    """The corpus loaded for the current data source (see the module docstring)."""
    value = st.session_state.get(CORPUS_KEY)
    if value is None:
        from loopscope.ui import data_source

        value = data_source.load_current_corpus(show_progress=False)
        set_corpus(value)
    return value


def config_key(config: Any) -> str:
    """A stable text key of a configuration (frozen dataclasses have a complete repr)."""
    return repr(config)


def replays(engine: str) -> RunColumns:
    """One replay per session of :func:`corpus` under the current configuration of ``engine``."""
    return replays_for(engine, resolve(engine).config)


def prepared(engine: str, config: Any = None) -> Sequence[Any]:
    """The corpus's prepared sessions for ``engine`` at ``config``'s version (the chosen
    version by default); prepared on first use, then kept with the corpus."""
    eng = get_engine(engine)
    version = eng.version_of(config) if config is not None else current_version(engine)
    return prepared_version(corpus(), engine, version)


def prepared_version(c: Corpus, engine: str, version: str, *,
                     bar_in_run_slot: bool = False) -> Sequence[Any]:
    """``c``'s sessions prepared for ``engine`` at ``version``, prepared (with a progress
    bar) on first use. ``bar_in_run_slot``: the bar goes in the run's progress slot
    (:func:`loopscope.ui.progress.run_slot`), which keeps the page's elements in their places;
    only outside a cached function, which may not draw into a block made outside it (there
    the bar is drawn in place)."""
    eng = get_engine(engine)
    if c.is_prepared(eng, version):
        return c.prepared(eng, version)
    from loopscope.corpus import LARGE_CORPUS
    from loopscope.ui import gc_policy
    from loopscope.ui.progress import bar_progress, new_bar

    text = f"Preparing sessions for {eng.title}"
    bar = new_bar(text) if bar_in_run_slot else st.progress(0.0, text=text)
    try:
        out = c.prepared(eng, version, progress=bar_progress(bar))
    finally:
        bar.empty()
    if len(c.sessions) >= LARGE_CORPUS:
        gc_policy.freeze_loaded()  # the prepared data lives as long as the corpus
    return out


def warm_when_idle(engines: Sequence[str]) -> None:
    """Once the user pauses, derive what each engine's first re-run of the corpus would (see
    :meth:`Corpus.warm`) at the version shown: the first slider move is then as quick as the
    next ones (a large corpus only)."""
    from loopscope.ui import gc_policy

    c = corpus()
    for engine in engines:
        version = current_version(engine)
        gc_policy.when_idle(("warm", c.fingerprint, engine, version),
                            functools.partial(c.warm, get_engine(engine), version))


def replays_for(engine: str, config: Any) -> RunColumns:
    """One replay per session of :func:`corpus` under ``config`` (cached per corpus × config).
    A version not prepared yet is prepared first, outside the cached function, so that its
    progress bar can go in the run's progress slot."""
    c = corpus()
    eng = get_engine(engine)
    version = eng.version_of(config)
    if not c.is_prepared(eng, version):
        prepared_version(c, engine, version, bar_in_run_slot=True)
    return _cached_replays(c.fingerprint, engine, config_key(config), c, config)


# A re-run costs a few vectorised passes, so few configurations are kept: each holds a few
# integers per session plus the replays read so far (the rows drawn, a session opened).
@st.cache_resource(max_entries=16, show_spinner=False)
def _cached_replays(
    fingerprint: str, engine: str, config_text: str, _corpus: Corpus, _config: Any
) -> RunColumns:
    del fingerprint, config_text  # cache keys only
    return run_all(engine, _corpus, _config)


def run_all(engine: str, c: Corpus, config: Any) -> RunColumns:
    """Every session under ``config``: one batch pass (``run_many``) giving the per-session
    columns (refused, counts, first refusal), each replay built when read."""
    eng = get_engine(engine)
    version = eng.version_of(config)
    if not c.is_prepared(eng, version):
        prepared_version(c, engine, version)  # (with progress)
    return c.run_many(eng, config)


def refused_warned(replays: Sequence[SessionReplay]) -> tuple[int, int]:
    """``(sessions refused, sessions with warnings)``: read off the columns of a batch run
    (no replay built), else counted."""
    if isinstance(replays, RunColumns):
        return int(replays.refused.sum()), int(replays.warned.sum())
    return sum(1 for r in replays if r.refused), sum(1 for r in replays if r.warned)


def first_refusals(replays: Sequence[SessionReplay]) -> list[Any]:
    """Every session's first refusal (``None``: never refused), from the columns of a batch
    run when it is one (no replay built)."""
    if isinstance(replays, RunColumns):
        return replays.first_refusals()
    return [r.first_refusal for r in replays]


def first_refusals_and_warnings(replays: Sequence[SessionReplay]
                                ) -> tuple[list[Any], list[int]]:
    """Every session's first refusal and number of warn steps (the session table's columns),
    from the columns of a batch run when it is one."""
    if isinstance(replays, RunColumns):
        return replays.first_refusals(), replays.warning_counts.tolist()
    return [r.first_refusal for r in replays], [r.warning_count for r in replays]


def window_refusals_and_warnings(replays: Sequence[SessionReplay], window: Sequence[int]
                                 ) -> tuple[list[Any], list[int]]:
    """:func:`first_refusals_and_warnings` of the sessions at ``window`` only (the page of
    rows a table shows): read off a batch run's columns, so a slider move makes a first
    refusal for each row shown, not for each of the thousands of refused sessions."""
    if isinstance(replays, RunColumns):
        counts = replays.warning_counts
        return [replays.first_refusal(i) for i in window], [int(counts[i]) for i in window]
    return ([replays[i].first_refusal for i in window],
            [replays[i].warning_count for i in window])


def session_index() -> dict[str, int]:
    """Session source → position in :func:`corpus` ``.sessions``."""
    return {source: i for i, source in enumerate(corpus().sources)}
