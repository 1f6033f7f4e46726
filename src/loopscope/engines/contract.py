"""The one contract every loop-guard engine follows.

An engine is a self-contained package (``engines/<name>/``) that the rest of loopscope knows
only through :class:`Engine`: the CLI, the dashboard, the experiments, the exports and the docs
derive everything engine-specific from it — above all from its settings schema, a tuple of
:class:`SettingSpec`. Nothing outside the engine's package spells one of its setting names.

The pieces:

* :class:`SettingSpec` — one setting: its upstream key, plain label, kind, default, bounds, the
  sensible slider range, help text, whether it can really be set in the upstream guard
  (``deployable``) or only explored as a what-if, and its group. The dashboard's controls and
  URL keys, ``--set`` parsing and errors, ``sweep --vary``, ``compare --a/--b``, config
  exports, ``loopscope engines`` and the README's settings tables are all made from it.
* :class:`Engine` — ``settings_for(version)``, ``config(values)``, ``resolve_config`` (config
  files and ``--set``), ``prepare`` once per session, ``run`` (the fast path), ``run_many``
  (the same over a whole corpus at once), ``replay`` (the plain reference path the fast paths
  are proven equal to), the prepared-data codec and table (``encode_prepared``,
  ``decode_prepared``, ``table_spec``: what the on-disk cache and worker processes carry),
  ``counters`` (what the session chart draws against the thresholds) and an
  :class:`Explainer`. Callers call every member directly: nothing is probed for.
* :class:`StepExplanation`, :class:`Limitation`, :class:`DetectorInfo`,
  :class:`CounterSeries`, :class:`ExportFile` — the small values an engine hands out.
* :class:`BaseEngine` — sensible defaults for everything a schema can answer alone, and for
  the batch run and the codec (one session at a time; no prepared data written), so a new
  engine writes only its rules: ``build_config``, ``config_values``, ``prepare``, ``run``
  and ``replay``. An engine with a vectorised corpus pass names the module that holds it
  (``columns_module``) instead of overriding ``run_many`` and ``table_spec``.

Settings travel as a *values* mapping: setting name → typed value (``int``; ``None`` for "off"
of an ``int_or_off``; ``bool``; a tuple of strings; a choice string). ``engine.values(config)``
gives the mapping of a configuration back.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from typing import (
    TYPE_CHECKING,
    Any,
    Generic,
    Literal,
    Protocol,
    TypeAlias,
    TypeVar,
    runtime_checkable,
)

from loopscope.engines.base import (
    ConfigError,
    ConfigResolution,
    RunColumns,
    SessionReplay,
    Step,
)

if TYPE_CHECKING:
    from loopscope.engines.table import TableSpec
    from loopscope.model import Session

__all__ = [
    "OFF",
    "BaseEngine",
    "ConfigT",
    "CounterSeries",
    "DetectorInfo",
    "Engine",
    "Explainer",
    "ExportFile",
    "FileSettings",
    "GuideExample",
    "Limitation",
    "Overrides",
    "PreparedT",
    "SettingKind",
    "SettingSpec",
    "StepExplanation",
    "consequence_of",
    "default_consequence",
    "parse_bool",
]

SettingKind = Literal["int", "int_or_off", "bool", "str_list", "choice"]

FileSettings: TypeAlias = Mapping[str, Any] | None
"""A config file's part for one engine, as read (``None``: no file, or no part for it)."""
Overrides: TypeAlias = Sequence[tuple[str, str]]
"""``--set KEY=VALUE`` pairs as typed, in order (a later pair wins)."""

OFF = "off"
"""How "off" of an ``int_or_off`` setting is written in text (``--set``, URLs, tables)."""

_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_TRUE_WORDS = frozenset({"true", "1", "yes", "on"})
_FALSE_WORDS = frozenset({"false", "0", "no", "off"})
_OFF_WORDS = frozenset({OFF, "none", "null"})


def parse_bool(key: str, text: str, *, strict: bool = False) -> bool:
    """``true``/``false`` (and, unless ``strict``, ``1/0``, ``yes/no``, ``on/off``, any case)."""
    word = text.strip().lower()
    if word == "true" or (not strict and word in _TRUE_WORDS):
        return True
    if word == "false" or (not strict and word in _FALSE_WORDS):
        return False
    raise ConfigError(f"{key}: expected true or false, got {text!r}")


@dataclass(frozen=True, slots=True)
class SettingSpec:
    """One setting of an engine, as every part of loopscope sees it."""

    name: str
    """The upstream key, exactly as upstream spells it (``warningThreshold``,
    ``detectors.pingPong``, ``max_repeated_batch_steps``). A what-if of a value that is a
    constant upstream is named after the constant."""
    label: str
    """Plain words for the dashboard ("Warn after this many repeats")."""
    kind: SettingKind
    default: Any
    help: str
    """One or two sentences for a non-engineer: what it does, what raising it changes."""
    min: int | None = None
    """The smallest value the engine accepts (``None``: no lower bound)."""
    max: int | None = None
    """The largest value the engine accepts (``None``: no upper bound)."""
    slider_min: int | None = None
    """The sensible range shown by a slider (defaults to ``min``/``max``)."""
    slider_max: int | None = None
    choices: tuple[str, ...] = ()
    """For ``choice``: the accepted values."""
    deployable: bool = True
    """False for values that are constants in the real guard: they can only be explored as
    what-ifs, and are never exported into the guard's own configuration."""
    group: str = ""
    """Controls are grouped under this heading ("Thresholds", "Switches", …)."""
    replaces: str = ""
    """For a value fixed in this release that an earlier release let the team set: the name
    of that earlier setting. The upgrade impact then says which configured value the release
    ignores and which fixed value it uses instead, from the schemas alone."""

    # ------------------------------------------------------------------ derived

    @property
    def range(self) -> tuple[int, int]:
        """The slider range: ``(slider_min, slider_max)`` with the bounds as fallback."""
        lo = self.slider_min if self.slider_min is not None else (self.min if self.min is not None else 0)
        hi = self.slider_max if self.slider_max is not None else (self.max if self.max is not None else max(lo, 100))
        return lo, hi

    def parse(self, text: str, *, strict_bool: bool = False) -> Any:
        """The typed value of ``--set NAME=TEXT`` (syntax only; the engine checks ranges).

        Raises :class:`ConfigError` naming the setting.
        """
        value = text.strip()
        if self.kind == "bool":
            return parse_bool(self.name, text, strict=strict_bool)
        if self.kind == "str_list":
            return tuple(p.strip() for p in text.split(",") if p.strip())
        if self.kind == "choice":
            if value not in self.choices:
                raise ConfigError(f"{self.name}: expected one of {', '.join(self.choices)}, "
                                  f"got {text!r}")
            return value
        if self.kind == "int_or_off" and value.lower() in _OFF_WORDS:
            return None
        if not _INT_TEXT.fullmatch(value):
            expected = "a whole number" + (" or off" if self.kind == "int_or_off" else "")
            raise ConfigError(f"{self.name}: expected {expected}, got {text!r}")
        return int(value)

    def format(self, value: Any) -> str:
        """The text form of a typed value (inverse of :meth:`parse`)."""
        if self.kind == "bool":
            return "true" if value else "false"
        if self.kind == "int_or_off" and value is None:
            return OFF
        if self.kind == "str_list":
            return ",".join(value)
        return str(value)

    def check(self, value: Any) -> Any:
        """``value`` if it has this setting's type and lies within its bounds; else
        :class:`ConfigError` naming the setting. (Engines that clamp instead call this after
        clamping.)"""
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise ConfigError(f"{self.name}: expected true or false, got {value!r}")
            return value
        if self.kind == "str_list":
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{self.name}: expected a list of strings, got {value!r}")
            return tuple(value)
        if self.kind == "choice":
            if value not in self.choices:
                raise ConfigError(f"{self.name}: expected one of {', '.join(self.choices)}, "
                                  f"got {value!r}")
            return value
        if value is None and self.kind == "int_or_off":
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{self.name}: expected a whole number, got {value!r}")
        if self.min is not None and value < self.min:
            raise ConfigError(f"{self.name}: must be at least {self.min}, got {value}")
        if self.max is not None and value > self.max:
            raise ConfigError(f"{self.name}: must be at most {self.max}, got {value}")
        return value

    def to_json(self) -> dict[str, Any]:
        """The schema entry of ``loopscope engines --json``."""
        default = list(self.default) if isinstance(self.default, tuple) else self.default
        out: dict[str, Any] = {
            "name": self.name, "label": self.label, "kind": self.kind, "default": default,
            "min": self.min, "max": self.max, "slider": list(self.range), "help": self.help,
            "deployable": self.deployable, "group": self.group,
        }
        if self.choices:
            out["choices"] = list(self.choices)
        return out


@dataclass(frozen=True, slots=True)
class DetectorInfo:
    """One detector (the ``detector`` values of an engine's steps), for legends and the Guide."""

    id: str
    """As in the replay output (``generic_repeat``, ``loop``, …)."""
    label: str
    """Plain words ("the same call again and again")."""
    description: str = ""
    """What it catches and how, in two or three plain sentences (the Guide)."""
    verdicts: tuple[str, ...] = ("refuse",)
    """Which verdicts it gives (``warn``, ``refuse``)."""
    versions: tuple[str, ...] = ()
    """The versions that have it (empty: all)."""


@dataclass(frozen=True, slots=True)
class Limitation:
    """A known limitation of the real guard (or of replaying it) that applies to a session."""

    id: str
    """A stable id (for tests and links); never shown as the explanation itself."""
    text: str
    """What it means, in plain words."""


@dataclass(frozen=True, slots=True)
class StepExplanation:
    """Why one step got its verdict, for someone who is not an engineer."""

    headline: str
    """The verdict in one plain sentence."""
    what_happened: tuple[str, ...] = ()
    """Further facts, one sentence each."""
    which_limit: str | None = None
    """The limit that decided, in plain words ("Tools that change things may repeat twice")."""
    guard_action: str | None = None
    """What the real guard would have done at this point."""
    limitations: tuple[Limitation, ...] = ()
    """Known limitations this particular step shows."""
    upstream: tuple[tuple[str, str], ...] = ()
    """``(title, exact text)``: what the guard itself would have said (its message)."""
    levers: tuple[str, ...] = ()
    """Setting names that govern this verdict, most relevant first (the advice search tries
    these first)."""
    consequence: str | None = None
    """For a refusal: whether it stops the agent, in one sentence, as the guard is deployed by
    default ("In gglib's default mode this refusal is a note the model reads, not a stop").
    Every surface shows it next to the verdict, so "refused" never reads as "stopped" where
    the guard only warns. ``None``: :func:`consequence_of` gives the engine-neutral default."""

    @property
    def text(self) -> str:
        """Everything in one paragraph."""
        parts = [self.headline, *self.what_happened]
        if self.which_limit:
            parts.append(self.which_limit)
        if self.guard_action:
            parts.append(self.guard_action)
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class CounterSeries:
    """One line of a session chart's count panel: a value per step (``None``: nothing drawn)."""

    label: str
    values: tuple[float | None, ...]
    role: Literal["count", "limit", "event"] = "count"
    """``count``: a climbing count; ``limit``: a threshold the count is measured against;
    ``event``: single marked points."""
    hover: str = ""
    """What hovering a point says, before its value."""


@dataclass(frozen=True, slots=True)
class ExportFile:
    """A configuration written in the real guard's own format (or loopscope's)."""

    title: str
    file_name: str
    mime: str
    text: str
    caption: str = ""


@dataclass(frozen=True, slots=True)
class GuideExample:
    """A tiny worked example for the Guide: a session built in code and the settings to use."""

    detector: str
    title: str
    text: str
    """The detector in plain words."""
    story: str
    """What the example session does."""
    session: Session
    values: Mapping[str, Any] = field(default_factory=dict)
    """Setting values to replay it with (defaults for the rest)."""
    version: str | None = None


ConfigT = TypeVar("ConfigT")
PreparedT = TypeVar("PreparedT")


@runtime_checkable
class Explainer(Protocol):
    """What an engine says about its verdicts (all engine-specific wording lives here)."""

    def explain_step(self, step: Step, replay: SessionReplay, config: Any) -> StepExplanation:
        """Why ``step`` (any verdict) of ``replay`` under ``config``."""
        ...

    def limitations(self, session: Session | None, replay: SessionReplay, config: Any,
                    warnings: Sequence[str] = ()) -> tuple[Limitation, ...]:
        """The known limitations that apply to this session's replay."""
        ...

    def extra_changes(self, step: Step, replay: SessionReplay, config: Any,
                      goal: Literal["pass", "refuse"]) -> Sequence[Mapping[str, Any]]:
        """Candidate changes beyond "one setting moved" (several settings at once, a list
        entry added), as values mappings; the advice search verifies each by a re-run."""
        ...


@runtime_checkable
class Engine(Protocol[ConfigT, PreparedT]):
    """The surface the CLI, the experiments and the dashboard use.

    The descriptive members are read-only properties here so that an engine may declare
    them as plain class attributes of narrower types (a tuple of two detectors, its own
    explainer class) and still be an ``Engine``."""

    @property
    def name(self) -> str:
        """The engine id (``--engine NAME``, URL keys, JSON ``engine``)."""
        ...

    @property
    def title(self) -> str:
        """How the guard is called in prose ("OpenClaw")."""
        ...

    @property
    def summary(self) -> str:
        """One sentence: which guard this is and how it works."""
        ...

    @property
    def versions(self) -> tuple[str, ...]:
        """The upstream versions it models, oldest first (at least one)."""
        ...

    @property
    def default_version(self) -> str: ...

    @property
    def notes(self) -> tuple[str, ...]:
        """Sentences to show wherever the engine is shown (e.g. what cannot be replayed)."""
        ...

    @property
    def detectors(self) -> tuple[DetectorInfo, ...]: ...

    @property
    def step_unit(self) -> Literal["call", "turn"]:
        """One step per tool call, or per assistant turn."""
        ...

    @property
    def explainer(self) -> Explainer: ...

    @property
    def settings(self) -> tuple[SettingSpec, ...]:
        """The schema of :attr:`default_version`."""
        ...

    def settings_for(self, version: str | None = None) -> tuple[SettingSpec, ...]:
        """The settings schema of ``version`` (default: :attr:`default_version`)."""
        ...

    def default_config(self, version: str | None = None) -> ConfigT:
        """loopscope's default configuration for this engine (and version)."""
        ...

    def config(self, values: Mapping[str, Any], version: str | None = None
               ) -> ConfigResolution[ConfigT]:
        """A configuration from typed setting values (missing ones take their default).

        Raises :class:`ConfigError` naming the setting for an unusable value; clamps and other
        notes go into ``warnings``.
        """
        ...

    def values(self, config: ConfigT) -> dict[str, Any]:
        """The typed value of every setting of ``config``'s version (what it runs with)."""
        ...

    def version_of(self, config: ConfigT) -> str:
        ...

    def resolve_config(self, file_settings: FileSettings, overrides: Overrides,
                       agent: str | None = None, version: str | None = None
                       ) -> ConfigResolution[ConfigT]:
        """A configuration from a config file's part for this engine and ``--set`` pairs
        (``overrides`` win). Raises :class:`ConfigError` naming the key or value."""
        ...

    def settings_from_document(self, document: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The part of a config document this engine reads, or ``None`` if it sets nothing
        for this engine."""
        ...

    def exports(self, config: ConfigT) -> tuple[ExportFile, ...]:
        """``config`` in the real guard's own configuration format(s): deployable settings
        only."""
        ...

    def settings_document(self, config: ConfigT) -> dict[str, Any]:
        """This engine's part of a loopscope config document (``{"<name>": ...}``), which
        :meth:`resolve_config` reads back to the same configuration."""
        ...

    def prepare_key(self, version: str | None = None) -> str:
        """Versions with the same key share prepared sessions."""
        ...

    def prepare(self, session: Session, version: str | None = None) -> PreparedT:
        """The threshold-independent work, done once per session (and prepare key)."""
        ...

    def run(self, prepared: PreparedT, config: ConfigT) -> SessionReplay:
        """The fast path over prepared data; equal to :meth:`replay` (property tests)."""
        ...

    def replay(self, session: Session, config: ConfigT) -> SessionReplay:
        """The plain reference path."""
        ...

    def run_many(self, prepared: Sequence[PreparedT], config: ConfigT) -> RunColumns:
        """Every prepared session of a corpus under ``config``, as columns (refused, counts,
        first refusal) plus each replay when read; equal to :meth:`run` of each (property
        tests)."""
        ...

    replayed_one_by_one: tuple[str, ...]
    """Settings whose change re-runs every session one by one even though :meth:`run_many`
    is vectorised (the dashboard says such a change takes seconds on a large corpus)."""

    def caches_prepared(self, version: str | None = None) -> bool:
        """Whether :meth:`encode_prepared` writes this version's prepared data."""
        ...

    def encode_prepared(self, prepared: PreparedT) -> dict[str, Any] | None:
        """``prepared`` as JSON-ready data, or ``None`` when it cannot be written."""
        ...

    def decode_prepared(self, data: Any) -> PreparedT:
        """The inverse of :meth:`encode_prepared`; ``ValueError`` for data it did not write."""
        ...

    def table_spec(self, version: str | None = None) -> TableSpec | None:
        """How this version's prepared data is written as one table of columns for a whole
        corpus, or ``None`` (a corpus then keeps a list of prepared objects)."""
        ...

    def counters(self, prepared: PreparedT, replay: SessionReplay, config: ConfigT
                 ) -> tuple[CounterSeries, ...]:
        """The counts a session chart draws against the thresholds, one value per step."""
        ...

    def guide_examples(self) -> tuple[GuideExample, ...]:
        """One tiny worked example per detector, for the Guide."""
        ...


def default_consequence(title: str) -> str:
    """What a refusal means for the agent when the engine does not say: an honest unknown."""
    return (f"loopscope does not know whether a refusal by {title} stops the agent: that "
            f"depends on how {title} is deployed.")


def consequence_of(engine: Engine[Any, Any], explanation: StepExplanation) -> str:
    """The one sentence on whether ``explanation``'s refusal stops the agent: the engine's own
    (:attr:`StepExplanation.consequence`), else :func:`default_consequence` — so a plug-in
    guard that says nothing is never presented as stopping (or not stopping) the agent."""
    return explanation.consequence or default_consequence(engine.title)


class NoExplainer:
    """An explainer that says only what the steps say (engines may start with this)."""

    def explain_step(self, step: Step, replay: SessionReplay, config: Any) -> StepExplanation:
        del replay, config
        where = ", ".join(step.tools) or "this step"
        if step.verdict == "pass":
            return StepExplanation(f"The guard would have let {where} through.")
        word = "refused" if step.verdict == "refuse" else "warned about"
        count = f" (count {step.count})" if step.count is not None else ""
        return StepExplanation(f"The guard {word} {where}: {step.detector}{count}.")

    def limitations(self, session: Session | None, replay: SessionReplay, config: Any,
                    warnings: Sequence[str] = ()) -> tuple[Limitation, ...]:
        del session, replay, config, warnings
        return ()

    def extra_changes(self, step: Step, replay: SessionReplay, config: Any,
                      goal: Literal["pass", "refuse"]) -> Sequence[Mapping[str, Any]]:
        del step, replay, config, goal
        return ()


class BaseEngine(Generic[ConfigT, PreparedT]):
    """Defaults an engine gets from its schema alone; subclass and fill in the rules.

    A subclass sets the class attributes (``name``, ``title``, ``summary``, ``detectors``,
    ``step_unit``, ``schema``) and implements :meth:`build_config` (typed values → config and
    notes) and :meth:`config_values` (or names a :attr:`config_type` that keeps the values
    convention), :meth:`prepare`, :meth:`run` and :meth:`replay`. Config files
    are then flat objects keyed by setting name (or ``{"<engine name>": {...}}`` inside a
    loopscope config document), ``--set`` takes any setting name, and the export is a JSON object
    of the deployable settings.
    """

    name: str = ""
    title: str = ""
    summary: str = ""
    versions: tuple[str, ...] = ("",)
    default_version: str = ""
    notes: tuple[str, ...] = ()
    detectors: tuple[DetectorInfo, ...] = ()
    step_unit: Literal["call", "turn"] = "call"
    schema: tuple[SettingSpec, ...] = ()
    explainer: Explainer = NoExplainer()
    strict_bool: bool = False
    """``--set`` booleans: only ``true``/``false`` when set."""
    replayed_one_by_one: tuple[str, ...] = ()
    """Settings whose change re-runs every session one by one even though :meth:`run_many` is
    vectorised (none by default)."""
    config_type: Any = None
    """The configuration class, for an engine whose configuration keeps the values
    convention: ``config_type.from_values(values)`` builds one from complete, type-checked
    setting values, its ``notes`` say what in them is hypothetical, and ``config.values()``
    gives the values back. :meth:`build_config` and :meth:`config_values` then need not be
    written (``None``: the engine writes them)."""
    columns_module: str = ""
    """The engine's corpus columns, a module by dotted name (``""``: none). Its
    ``table_spec(engine, version)`` writes a corpus as one table and its ``run_many(engine,
    prepared, config)`` runs one in a vectorised pass (None for anything it cannot lay out: a
    plain list is run session by session). It is imported when a corpus is run or written,
    never for one session, because it needs numpy."""

    # ------------------------------------------------------------------ schema

    @property
    def settings(self) -> tuple[SettingSpec, ...]:
        return self.settings_for(None)

    def settings_for(self, version: str | None = None) -> tuple[SettingSpec, ...]:
        self.check_version(version)
        return self.schema

    def check_version(self, version: str | None) -> str:
        """``version`` (or the default) if this engine models it; else :class:`ConfigError`."""
        if version is None or version == "":
            return self.default_version
        if version not in self.versions:
            raise ConfigError(f"unknown {self.title} version {version!r}; accepted: "
                              f"{', '.join(self.versions)}")
        return version

    def spec(self, name: str, version: str | None = None) -> SettingSpec:
        """The setting called ``name``; :class:`ConfigError` listing the known ones."""
        for spec in self.settings_for(version):
            if spec.name == name:
                return spec
        known = ", ".join(s.name for s in self.settings_for(version))
        raise ConfigError(f"unknown setting {name!r} for the {self.name} engine (known: {known})")

    def default_values(self, version: str | None = None) -> dict[str, Any]:
        return {s.name: s.default for s in self.settings_for(version)}

    # ------------------------------------------------------------------ configs

    def build_config(self, values: Mapping[str, Any], version: str
                     ) -> tuple[ConfigT, tuple[str, ...]]:
        """The configuration for complete, type-checked ``values`` plus plain notes (by
        default through :attr:`config_type`)."""
        if self.config_type is None:
            raise NotImplementedError
        config = self.config_type.from_values(values)
        return config, config.notes

    def config_values(self, config: ConfigT) -> dict[str, Any]:
        if self.config_type is None:
            raise NotImplementedError
        return config.values()  # type: ignore[attr-defined]

    def default_config(self, version: str | None = None) -> ConfigT:
        return self.config({}, version).config

    def config(self, values: Mapping[str, Any], version: str | None = None
               ) -> ConfigResolution[ConfigT]:
        version = self.check_version(version)
        merged = self.default_values(version)
        for key, value in values.items():
            merged[key] = self.spec(key, version).check(value)
        config, notes = self.build_config(merged, version)
        return ConfigResolution(config, tuple(notes))

    def values(self, config: ConfigT) -> dict[str, Any]:
        return self.config_values(config)

    def version_of(self, config: ConfigT) -> str:
        return str(getattr(config, "version", self.default_version))

    def file_values(self, file_settings: Mapping[str, Any], version: str) -> dict[str, Any]:
        """Typed values from a config file's part for this engine (flat, keyed by name)."""
        names = {s.name for s in self.settings_for(version)}
        out: dict[str, Any] = {}
        for key, value in file_settings.items():
            if key not in names:
                continue
            spec = self.spec(key, version)
            if isinstance(value, str) and spec.kind != "choice":
                out[key] = spec.parse(value, strict_bool=self.strict_bool)
            elif spec.kind == "str_list" and isinstance(value, list | tuple):
                out[key] = tuple(value)
            else:
                out[key] = value
        return out

    def resolve_config(self, file_settings: FileSettings, overrides: Overrides,
                       agent: str | None = None, version: str | None = None
                       ) -> ConfigResolution[ConfigT]:
        del agent
        version = self.check_version(version)
        values: dict[str, Any] = {}
        if file_settings is not None:
            if not isinstance(file_settings, Mapping):
                raise ConfigError(f"the {self.name} settings must be an object")
            values.update(self.file_values(file_settings, version))
        for key, text in overrides:
            values[key] = self.spec(key, version).parse(text, strict_bool=self.strict_bool)
        return self.config(values, version)

    def settings_from_document(self, document: Mapping[str, Any]) -> Mapping[str, Any] | None:
        part = document.get(self.name)
        if isinstance(part, Mapping):
            return part
        names = {s.name for v in self.versions for s in self.settings_for(v)}
        if any(key in names for key in document):
            return document
        return None

    def settings_document(self, config: ConfigT) -> dict[str, Any]:
        version = self.version_of(config)
        values = self.values(config)
        doc = {s.name: _plain(values[s.name]) for s in self.settings_for(version)
               if s.name in values}
        if len(self.versions) > 1:
            doc = {"version": version, **doc}
        return doc

    def exports(self, config: ConfigT) -> tuple[ExportFile, ...]:
        import json

        version = self.version_of(config)
        values = self.values(config)
        deployable = {s.name: _plain(values[s.name]) for s in self.settings_for(version)
                      if s.deployable and s.name in values}
        return (ExportFile(f"{self.title} settings", f"{self.name}-settings.json",
                           "application/json", json.dumps(deployable, indent=2) + "\n"),)

    # ------------------------------------------------------------------ replay

    def prepare_key(self, version: str | None = None) -> str:
        return self.check_version(version)

    def prepare(self, session: Session, version: str | None = None) -> PreparedT:
        raise NotImplementedError

    def run(self, prepared: PreparedT, config: ConfigT) -> SessionReplay:
        raise NotImplementedError

    def replay(self, session: Session, config: ConfigT) -> SessionReplay:
        raise NotImplementedError

    def run_many(self, prepared: Sequence[PreparedT], config: ConfigT) -> RunColumns:
        """The batch form of :meth:`run`: the vectorised pass of :attr:`columns_module` where
        it lays ``prepared`` out (equal to the rest, a property test), else every session
        through :meth:`run`."""
        if self.columns_module:
            found = import_module(self.columns_module).run_many(self, prepared, config)
            if found is not None:
                return found
        return RunColumns.from_replays([self.run(p, config) for p in prepared])

    def caches_prepared(self, version: str | None = None) -> bool:
        """Whether :meth:`encode_prepared` writes this version's prepared data (then the
        on-disk cache and worker processes carry it; else it is prepared where it is used).
        By default: when the engine overrides :meth:`encode_prepared`."""
        del version
        return type(self).encode_prepared is not BaseEngine.encode_prepared

    def encode_prepared(self, prepared: PreparedT) -> dict[str, Any] | None:
        """``prepared`` as JSON-ready data (the on-disk cache and worker processes
        carry it), or ``None`` when this engine's prepared data cannot be written (the
        default: it is then prepared again in each process that needs it)."""
        del prepared
        return None

    def decode_prepared(self, data: Any) -> PreparedT:
        """The inverse of :meth:`encode_prepared`; raises ``ValueError`` for data it did not
        write (a damaged cache entry is rebuilt, never trusted)."""
        raise ValueError(f"the {self.name} engine writes no prepared data")

    def table_spec(self, version: str | None = None) -> TableSpec | None:
        """How this version's prepared data is written as one table of columns for a whole
        corpus (:mod:`loopscope.engines.table`: worker processes hand it back as
        arrays, the on-disk cache keeps a corpus in one file, and sessions are decoded only
        when read), or ``None`` (a corpus keeps a list of prepared objects, prepared where it
        is used). By default: one JSON text per session when :meth:`encode_prepared` writes
        this version's data, else ``None``; engines with a vectorised :meth:`run_many`
        write real columns (:attr:`columns_module`)."""
        if self.columns_module:
            return import_module(self.columns_module).table_spec(self, version)
        if not self.caches_prepared(version):
            return None
        from loopscope.engines.table import json_table_spec

        return json_table_spec(self, version)

    def counters(self, prepared: PreparedT, replay: SessionReplay, config: ConfigT
                 ) -> tuple[CounterSeries, ...]:
        del prepared, config
        return (CounterSeries("count", tuple(s.count for s in replay.steps)),)

    def guide_examples(self) -> tuple[GuideExample, ...]:
        return ()


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value
