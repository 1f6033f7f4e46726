"""What every engine returns: steps, the first refusal, and the lazy replay around them.

The engine contract itself (settings schema, prepare/run/reference, explanations) is in
:mod:`loopscope.engines.contract`.

An engine turns one normalized :class:`~loopscope.model.Session` plus a configuration into a
:class:`SessionReplay`: one :class:`Step` per guard decision, in transcript order, and the first
refusal (the point of divergence: what follows would not have happened as recorded).

Engines split their work in two so that a threshold change stays cheap:

* ``prepare(session)`` does everything that does not depend on thresholds (parsing arguments,
  canonicalising, hashing, joining results, classifying) once per session;
* ``run(prepared, config)`` replays only the cheap state machine.

``replay(session, config)`` is the plain, obviously-correct path that everything faster is
proven equal to (property tests).

A fast ``run`` returns a :class:`SessionReplay` that knows its first refusal and whether it
warned, and builds its steps only when someone reads them (:meth:`SessionReplay.lazy`). What a
corpus overview needs is cheaper still: :attr:`SessionReplay.markers` (every warn/refuse step in
brief, no :class:`Step` built), and cheapest :attr:`~SessionReplay.refusal_count` and
:attr:`~SessionReplay.warning_count` (counted, no marker built: sorting every session by them is
on every slider move's path); :attr:`SessionReplay.flagged` gives those steps in full.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import FrozenInstanceError, dataclass, field
from typing import Any, Generic, Literal, NamedTuple, Protocol, TypeVar

Verdict = Literal["pass", "warn", "refuse"]
_V = TypeVar("_V")


@dataclass(frozen=True, slots=True)
class Step:
    """One guard decision in shadow mode.

    The contract fields are common to both engines; ``extra`` holds the engine-specific
    fields (each engine's own, listed by its ``STEP_FIELDS``) in their output order, JSON-ready.
    """

    turn: int
    """0-based index among the session's assistant messages."""
    call: int | None
    """0-based index among all tool calls of the session; ``None`` for a prose step."""
    tools: tuple[str, ...]
    """Tool names exactly as recorded (``""`` for a missing or non-string name)."""
    signature: str | None
    """gglib: the batch signature. OpenClaw: the argsHash."""
    verdict: Verdict
    detector: str | None
    """Which detector decided; ``None`` on every ``pass`` step."""
    count: int | None
    after_divergence: bool
    """True strictly after the session's first refusal."""
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The step object of ``loopscope replay --json``."""
        out: dict[str, Any] = {
            "turn": self.turn,
            "call": self.call,
            "tools": list(self.tools),
            "signature": self.signature,
            "verdict": self.verdict,
            "detector": self.detector,
            "count": self.count,
            "after_divergence": self.after_divergence,
        }
        out.update(self.extra)
        return out


@dataclass(frozen=True, slots=True)
class FirstRefusal:
    """Where the guard would first have refused: the point of divergence."""

    turn: int
    call: int | None
    detector: str

    def to_json(self) -> dict[str, Any]:
        return {"turn": self.turn, "call": self.call, "detector": self.detector}


class FlaggedStep(NamedTuple):
    """A ``warn`` or ``refuse`` step, with where it sits (see :attr:`SessionReplay.flagged`)."""

    position: int
    """The step's index in :attr:`SessionReplay.steps`."""
    calls_before: int
    """Tool calls made before this step (equal to ``step.call`` for a step with calls)."""
    step: Step


class Marker(NamedTuple):
    """A ``warn`` or ``refuse`` step in brief: what a corpus overview draws for it.

    :attr:`SessionReplay.markers` gives these without building any :class:`Step` (no messages,
    no ``extra``); :attr:`SessionReplay.flagged` gives the full steps.
    """

    position: int
    """The step's index in :attr:`SessionReplay.steps`."""
    turn: int
    call: int | None
    calls_before: int
    """Tool calls made before this step (equal to ``call`` for a step with calls)."""
    verdict: Verdict
    detector: str
    count: int | None  # type: ignore[assignment]  # Step's name; shadows tuple.count on purpose

    @property
    def x(self) -> float:
        """Its place on a tool-call axis: the call index, or for a step without calls (a gglib
        prose reply) half-way before the next call."""
        return float(self.call) if self.call is not None else self.calls_before - 0.5


class ReplayDetail(Protocol):
    """What an engine's fast path hands a :class:`SessionReplay` to build its steps on demand.

    Both methods must give exactly what the engine's reference ``replay`` gives (property tests).
    """

    def steps(self) -> tuple[Step, ...]:
        """Every step, in order."""
        ...

    def flagged(self) -> tuple[FlaggedStep, ...]:
        """The ``warn``/``refuse`` steps only, in order (cheaper than :meth:`steps`)."""
        ...

    def markers(self) -> tuple[Marker, ...]:
        """The ``warn``/``refuse`` steps in brief, in order (cheaper than :meth:`flagged`)."""
        ...

    def step_json(self) -> list[dict[str, Any]]:
        """``[s.to_json() for s in self.steps()]``, possibly without building the steps."""
        ...

    def verdict_counts(self) -> tuple[int, int]:
        """``(refuse steps, warn steps)``, without building a marker."""
        ...


class SessionReplay:
    """The verdicts of one engine on one session under one configuration.

    Immutable. ``steps`` is either given (the reference paths) or built on first access from a
    :class:`ReplayDetail` (the fast ``run`` paths): a threshold sweep or the dashboard's overview
    then only pays for :attr:`first_refusal`, :attr:`warned` and :attr:`flagged`, never for
    a step object per call. Either way the public surface (fields, ``steps``, ``refused``,
    ``warned``, ``to_json()``, equality) is the same.
    """

    __slots__ = ("_counts", "_detail", "_flagged", "_markers", "_steps", "_warned", "engine",
                 "first_refusal", "format", "session", "source")

    session: str
    """The session id: the id the file records (an OpenClaw header ``id``, an OpenAI body's
    string ``id``), else the file stem."""
    source: str
    """The path as reached; ``path#n`` when a file holds several sessions."""
    format: str
    engine: str
    first_refusal: FirstRefusal | None
    _steps: tuple[Step, ...] | None
    _detail: ReplayDetail | None
    _warned: bool | None
    _flagged: tuple[FlaggedStep, ...] | None
    _markers: tuple[Marker, ...] | None
    _counts: tuple[int, int] | None

    def __init__(
        self,
        session: str,
        source: str,
        format: str,
        engine: str,
        steps: tuple[Step, ...],
        first_refusal: FirstRefusal | None,
    ) -> None:
        self._fill(session, source, format, engine, first_refusal, tuple(steps), None, None)

    @classmethod
    def lazy(
        cls,
        session: str,
        source: str,
        format: str,
        engine: str,
        first_refusal: FirstRefusal | None,
        warned: bool | None,
        detail: ReplayDetail,
    ) -> SessionReplay:
        """A replay whose steps are built by ``detail`` on first use.

        ``first_refusal`` and ``warned`` (``None``: work it out from the flagged steps when
        asked) must be what the steps say.
        """
        self = cls.__new__(cls)
        self._fill(session, source, format, engine, first_refusal, None, detail, warned)
        return self

    def _fill(self, session: str, source: str, format: str, engine: str,
              first_refusal: FirstRefusal | None, steps: tuple[Step, ...] | None,
              detail: ReplayDetail | None, warned: bool | None) -> None:
        """Set every slot once, for both constructors: the replay is frozen, so its fields are
        written past ``__setattr__``, and what is built on first use starts as ``None``."""
        _set = object.__setattr__
        _set(self, "session", session)
        _set(self, "source", source)
        _set(self, "format", format)
        _set(self, "engine", engine)
        _set(self, "first_refusal", first_refusal)
        _set(self, "_steps", steps)
        _set(self, "_detail", detail)
        _set(self, "_warned", warned)
        _set(self, "_flagged", None)
        _set(self, "_markers", None)
        _set(self, "_counts", None)

    def with_source(self, source: str) -> SessionReplay:
        """This replay with another :attr:`source` (the same file reached by another path)."""
        if source == self.source:
            return self
        copy = SessionReplay.__new__(SessionReplay)
        for name in SessionReplay.__slots__:
            object.__setattr__(copy, name, getattr(self, name))
        object.__setattr__(copy, "source", source)
        return copy

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def _once(self, slot: str, build: Callable[[], _V]) -> _V:
        """The value of the lazy ``slot``, built by ``build`` on first use and kept (written
        past ``__setattr__``: the replay is frozen, only its caches fill in)."""
        value = getattr(self, slot)
        if value is None:
            value = build()
            object.__setattr__(self, slot, value)
        return value

    @property
    def steps(self) -> tuple[Step, ...]:
        """One step per guard decision, in transcript order."""
        return self._once("_steps", self._built_steps)

    def _built_steps(self) -> tuple[Step, ...]:
        assert self._detail is not None
        return self._detail.steps()

    @property
    def flagged(self) -> tuple[FlaggedStep, ...]:
        """The ``warn`` and ``refuse`` steps, with their index and the calls made before them.

        On a fast-path replay this never builds the pass steps.
        """
        return self._once("_flagged", self._built_flagged)

    def _built_flagged(self) -> tuple[FlaggedStep, ...]:
        if self._steps is None and self._detail is not None:
            return self._detail.flagged()
        return _flagged_of(self.steps)

    @property
    def markers(self) -> tuple[Marker, ...]:
        """The ``warn`` and ``refuse`` steps in brief (what a corpus overview draws).

        On a fast-path replay this builds no step at all.
        """
        return self._once("_markers", self._built_markers)

    def _built_markers(self) -> tuple[Marker, ...]:
        if self._steps is None and self._flagged is None and self._detail is not None:
            return self._detail.markers()
        return tuple(Marker(f.position, f.step.turn, f.step.call, f.calls_before, f.step.verdict,
                            f.step.detector or "", f.step.count)
                     for f in self.flagged)

    @property
    def refused(self) -> bool:
        return self.first_refusal is not None

    @property
    def warned(self) -> bool:
        """At least one ``warn`` step."""
        return self._once("_warned", lambda: any(m.verdict == "warn" for m in self.markers))

    @property
    def refusal_count(self) -> int:
        """Number of ``refuse`` steps (the first refusal and every one after it)."""
        if self.first_refusal is None:  # known without walking the steps
            return 0
        return self._verdict_counts()[0]

    @property
    def warning_count(self) -> int:
        """Number of ``warn`` steps."""
        if not self.warned:  # the fast paths know this without walking the steps
            return 0
        return self._verdict_counts()[1]

    def _verdict_counts(self) -> tuple[int, int]:
        return self._once("_counts", self._built_verdict_counts)

    def _built_verdict_counts(self) -> tuple[int, int]:
        if self._markers is None and self._steps is None and self._detail is not None:
            return self._detail.verdict_counts()
        verdicts = [m.verdict for m in self.markers]
        return verdicts.count("refuse"), verdicts.count("warn")

    def to_json(self) -> dict[str, Any]:
        """One line of ``loopscope replay --json``."""
        if self._steps is None and self._detail is not None:
            steps = self._detail.step_json()
        else:
            steps = [s.to_json() for s in self.steps]
        return {
            "session": self.session,
            "source": self.source,
            "format": self.format,
            "engine": self.engine,
            "steps": steps,
            "first_refusal": None if self.first_refusal is None else self.first_refusal.to_json(),
        }

    def _key(self) -> tuple[Any, ...]:
        return (self.session, self.source, self.format, self.engine, self.steps,
                self.first_refusal)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, SessionReplay)
        return self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"SessionReplay(session={self.session!r}, source={self.source!r}, "
                f"format={self.format!r}, engine={self.engine!r}, steps={self.steps!r}, "
                f"first_refusal={self.first_refusal!r})")

    def __reduce__(self) -> tuple[Any, ...]:
        return (SessionReplay, (self.session, self.source, self.format, self.engine, self.steps,
                                self.first_refusal))


def _flagged_of(steps: Sequence[Step]) -> tuple[FlaggedStep, ...]:
    out: list[FlaggedStep] = []
    calls = 0
    for i, s in enumerate(steps):
        if s.verdict != "pass":
            out.append(FlaggedStep(i, calls if s.call is None else s.call, s))
        if s.call is not None:
            calls = max(calls, s.call + max(len(s.tools), 1))
    return tuple(out)


def first_refusal_of(steps: Sequence[Step]) -> FirstRefusal | None:
    for s in steps:
        if s.verdict == "refuse":
            assert s.detector is not None
            return FirstRefusal(s.turn, s.call, s.detector)
    return None


def _step_factory() -> Any:
    """A ``Step`` constructor that skips the frozen dataclass ``__init__`` (which sets each
    field through ``object.__setattr__``): steps are built by the million.

    It writes the slots directly and is used only if it builds exactly what ``Step(...)`` builds
    (checked on a probe at import); otherwise it is the plain constructor.
    """
    import dataclasses

    names = [f.name for f in dataclasses.fields(Step)]
    expected = ["turn", "call", "tools", "signature", "verdict", "detector", "count",
                "after_divergence", "extra"]
    try:
        if names != expected:
            raise TypeError
        setters = [Step.__dict__[n].__set__ for n in names]
    except (KeyError, AttributeError, TypeError):
        return Step
    s0, s1, s2, s3, s4, s5, s6, s7, s8 = setters
    new = object.__new__

    def make(turn: int, call: Any, tools: Any, signature: Any, verdict: Any, detector: Any,
             count: Any, after_divergence: bool, extra: Any) -> Step:
        o = new(Step)
        s0(o, turn)
        s1(o, call)
        s2(o, tools)
        s3(o, signature)
        s4(o, verdict)
        s5(o, detector)
        s6(o, count)
        s7(o, after_divergence)
        s8(o, extra)
        return o

    probe: tuple[Any, ...] = (1, 2, ("t",), "t:x", "pass", None, 3, False, {"k": 1})
    try:
        built = make(*probe)
        ok = built == Step(*probe) and type(built) is Step
    except Exception:
        ok = False
    return make if ok else Step


new_step: Any = _step_factory()
"""``new_step(turn, call, tools, signature, verdict, detector, count, after_divergence, extra)``:
the same :class:`Step` as the constructor, built faster (positional arguments only)."""


class ConfigError(ValueError):
    """A configuration key or value that cannot be used. The message names the key."""


ConfigT = TypeVar("ConfigT")
PreparedT = TypeVar("PreparedT")


@dataclass(frozen=True, slots=True)
class ConfigResolution(Generic[ConfigT]):
    """A resolved configuration plus the warnings a user should see (clamps, misordering)."""

    config: ConfigT
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    """Information that is not a problem (printed as ``note:``), e.g. a default loopscope
    chose differently from upstream's."""


class KeepsDerived:
    """A sequence of prepared sessions that keeps what an engine derives from all of them
    together (:attr:`derived`: e.g. the arrays of a vectorised
    :meth:`~loopscope.engines.contract.Engine.run_many`), as long as the sequence lives:
    :class:`PreparedSessions` and :class:`~loopscope.engines.table.PreparedTable`. Any other
    sequence (a plain list) has the derived data made afresh for each use."""

    __slots__ = ()

    derived: dict[Any, Any]


class PreparedSessions(list, KeepsDerived):
    """An engine's prepared sessions of a corpus, aligned with its sessions, plus what the
    engine derives from all of them together (:class:`KeepsDerived`)."""

    __slots__ = ("derived",)

    def __init__(self, items: Any = ()) -> None:
        super().__init__(items)
        self.derived: dict[Any, Any] = {}


class RunColumns(Sequence[SessionReplay]):
    """One configuration's replays of a whole corpus (``engine.run_many``): per-session
    columns — refused, refusal and warning counts, the first refusal — computed in one pass,
    and each session's :class:`SessionReplay` built only when read (``replay_of(i)``, which
    must equal ``engine.run(prepared[i], config)``; columns and replays agree, a property test).

    A sequence of the replays, so code written for ``[engine.run(p, c) for p in prepared]``
    keeps working; what reads every session (the overview's sort and table, the summary
    counts) should read the columns instead.
    """

    __slots__ = (
        "_call",
        "_detector",
        "_first",
        "_firsts",
        "_replay_of",
        "_replays",
        "_turn",
        "detectors",
        "refusal_counts",
        "warning_counts",
    )

    def __init__(self, replay_of: Any, refusal_counts: Any, warning_counts: Any, first: Any,
                 turn: Any, call: Any, detector: Any, detectors: Sequence[str]) -> None:
        """``first[i]``: the position (in the flat ``turn``/``call``/``detector`` arrays) of
        session ``i``'s first refusal, or -1; ``call`` -1 for none; ``detector`` a code into
        ``detectors``."""
        self._replay_of = replay_of
        self.refusal_counts = refusal_counts
        self.warning_counts = warning_counts
        self._first = first
        self._turn = turn
        self._call = call
        self._detector = detector
        self.detectors = tuple(detectors)
        self._replays: dict[int, SessionReplay] = {}
        self._firsts: list[FirstRefusal | None] | None = None

    @classmethod
    def from_replays(cls, replays: Sequence[SessionReplay]) -> RunColumns:
        """The columns of replays already made (the generic path of ``run_many``)."""
        import numpy as np

        names: dict[str, int] = {}
        turn: list[int] = []
        call: list[int] = []
        detector: list[int] = []
        first: list[int] = []
        for r in replays:
            f = r.first_refusal
            if f is None:
                first.append(-1)
                continue
            first.append(len(turn))
            turn.append(f.turn)
            call.append(-1 if f.call is None else f.call)
            detector.append(names.setdefault(f.detector, len(names)))
        made = list(replays)
        out = cls(made.__getitem__,
                  np.array([r.refusal_count for r in made], dtype=np.int64),
                  np.array([r.warning_count for r in made], dtype=np.int64),
                  np.array(first, dtype=np.int64), np.array(turn, dtype=np.int64),
                  np.array(call, dtype=np.int64), np.array(detector, dtype=np.int64),
                  list(names))
        out._replays.update(enumerate(made))
        return out

    def __len__(self) -> int:
        return len(self._first)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        i = int(index)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(index)
        found = self._replays.get(i)
        if found is None:
            found = self._replays[i] = self._replay_of(i)
        return found

    def __iter__(self) -> Any:
        return (self[i] for i in range(len(self)))

    # ------------------------------------------------------------------ columns

    @property
    def refused(self) -> Any:
        """Per session: refused at least once (a boolean array)."""
        return self._first >= 0

    @property
    def warned(self) -> Any:
        """Per session: at least one warn step (a boolean array)."""
        return self.warning_counts > 0

    def first_refusal(self, i: int) -> FirstRefusal | None:
        """Session ``i``'s first refusal, from the columns (no replay built)."""
        at = int(self._first[i])
        if at < 0:
            return None
        call = int(self._call[at])
        return FirstRefusal(int(self._turn[at]), None if call < 0 else call,
                            self.detectors[int(self._detector[at])])

    def first_refusals(self) -> list[FirstRefusal | None]:
        """:meth:`first_refusal` of every session (made once; a new list each call)."""
        found = self._firsts
        if found is None:
            import numpy as np

            found = [None] * len(self)
            at = np.flatnonzero(self._first >= 0)
            where = self._first[at]
            names = self.detectors
            for i, turn, call, code in zip(at.tolist(), self._turn[where].tolist(),
                                           self._call[where].tolist(),
                                           self._detector[where].tolist(), strict=True):
                found[i] = FirstRefusal(turn, None if call < 0 else call, names[code])
            self._firsts = found
        return list(found)

    def first_refusal_columns(self) -> tuple[Any, Any, Any, tuple[str, ...]]:
        """Every session's first refusal as arrays, without an object per session: ``(turn,
        call, detector, names)`` — turn and call -1 when not refused (call -1 too for a
        refusal of a step without a call), detector an index into ``names`` or -1. (For pages
        that show every session: format text from these, vectorised, or only for the rows
        shown.)"""
        import numpy as np

        at = np.asarray(self._first, dtype=np.int64)
        refused = at >= 0
        where = at[refused]
        turn = np.full(len(at), -1, dtype=np.int64)
        call = np.full(len(at), -1, dtype=np.int64)
        detector = np.full(len(at), -1, dtype=np.int64)
        turn[refused] = np.asarray(self._turn)[where]
        call[refused] = np.asarray(self._call)[where]
        detector[refused] = np.asarray(self._detector)[where]
        return turn, call, detector, self.detectors

    # ------------------------------------------------------------------ kept

    def compact(self) -> dict[str, Any]:
        """The columns alone, small (what a cache keeps): per session ``refusals``,
        ``warnings`` and ``first`` (an index into the per-refused-session ``turn``, ``call``
        and ``detector`` arrays, or -1); :meth:`from_compact` reads them back."""
        import numpy as np

        first = np.asarray(self._first, dtype=np.int64)
        at = first[first >= 0]
        index = np.full(len(first), -1, dtype=np.int64)
        index[first >= 0] = np.arange(at.size, dtype=np.int64)
        return {"refusals": np.asarray(self.refusal_counts, dtype=np.int64),
                "warnings": np.asarray(self.warning_counts, dtype=np.int64),
                "first": index,
                "turn": np.asarray(self._turn, dtype=np.int64)[at],
                "call": np.asarray(self._call, dtype=np.int64)[at],
                "detector": np.asarray(self._detector, dtype=np.int64)[at]}

    @classmethod
    def from_compact(cls, columns: Mapping[str, Any], detectors: Sequence[str],
                     replay_of: Any) -> RunColumns:
        """Columns :meth:`compact` wrote, each replay made by ``replay_of(i)`` when read."""
        return cls(replay_of, columns["refusals"], columns["warnings"], columns["first"],
                   columns["turn"], columns["call"], columns["detector"], detectors)

    @staticmethod
    def join_compact(parts: Sequence[tuple[Mapping[str, Any], Sequence[str]]]
                     ) -> tuple[dict[str, Any], tuple[str, ...]]:
        """Compact columns of consecutive parts of a corpus (each with its detector names) as
        one."""
        import numpy as np

        names: dict[str, int] = {}
        out: dict[str, list[Any]] = {k: [] for k in ("refusals", "warnings", "first", "turn",
                                                     "call", "detector")}
        shift = 0
        for columns, detectors in parts:
            remap = np.array([names.setdefault(d, len(names)) for d in detectors] or [0],
                             dtype=np.int64)
            first = np.asarray(columns["first"], dtype=np.int64)
            out["first"].append(np.where(first >= 0, first + shift, -1))
            out["detector"].append(remap[np.asarray(columns["detector"], dtype=np.int64)])
            for key in ("refusals", "warnings", "turn", "call"):
                out[key].append(np.asarray(columns[key], dtype=np.int64))
            shift += len(columns["turn"])
        joined = {k: np.concatenate(v) if v else np.zeros(0, dtype=np.int64)
                  for k, v in out.items()}
        return joined, tuple(names)


def packed(prepared: Sequence[Any], key: Any, build: Any) -> Any:
    """``build(prepared)``, kept with ``prepared`` under ``key`` when it keeps derived data
    (:class:`KeepsDerived`); made afresh for any other sequence."""
    if isinstance(prepared, KeepsDerived):
        derived = prepared.derived
        if key not in derived:
            derived[key] = build(prepared)
        return derived[key]
    return build(prepared)


def decoded_all(prepared: Sequence[Any]) -> Sequence[Any]:
    """``prepared`` with every session decoded once and kept with it, when it is a table (a
    table keeps only the last sessions it decoded, and a re-run that reads every session one
    by one would decode them all again each time); any other sequence as it is."""
    from loopscope.engines.table import PreparedTable

    if isinstance(prepared, PreparedTable):
        return packed(prepared, "every session decoded", list)
    return prepared


def columns_of(out: Mapping[str, Any], replay_of: Any, detectors: Sequence[str]) -> RunColumns:
    """A :class:`RunColumns` from an engine's vectorised pass (``refusals``, ``warnings``,
    ``first``, ``turn``, ``call``, ``detector`` arrays)."""
    return RunColumns(replay_of, out["refusals"], out["warnings"], out["first"], out["turn"],
                      out["call"], out["detector"], detectors)
