"""What every engine returns, and the shape every engine has.

An engine turns one normalized :class:`~loopscope.model.Session` plus a configuration into a
:class:`SessionReplay`: one :class:`Step` per guard decision, in transcript order, and the first
refusal (the point of divergence, product spec §3).

Engines split their work in two so that a threshold change stays cheap:

* ``prepare(session)`` does everything that does not depend on thresholds (parsing arguments,
  canonicalising, hashing, joining results, classifying) once per session;
* ``run(prepared, config)`` replays only the cheap state machine.

``replay(session, config)`` is the plain, obviously-correct path that everything faster is
proven equal to (property tests).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

if TYPE_CHECKING:
    from loopscope.model import Session

Verdict = Literal["pass", "warn", "refuse"]
EngineName = Literal["gglib", "openclaw"]


@dataclass(frozen=True, slots=True)
class Step:
    """One guard decision in shadow mode.

    The contract fields are common to both engines; ``extra`` holds the engine-specific
    fields (engine specs: gglib §5.3, OpenClaw §7.5) in their output order, JSON-ready.
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
        """The step object of the ``--json`` output (product spec §3)."""
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


@dataclass(frozen=True, slots=True)
class SessionReplay:
    """The verdicts of one engine on one session under one configuration."""

    session: str
    """The session id (sessions-and-formats §1.1)."""
    source: str
    """The path as reached; ``path#n`` when a file holds several sessions."""
    format: str
    engine: str
    steps: tuple[Step, ...]
    first_refusal: FirstRefusal | None

    @property
    def refused(self) -> bool:
        return self.first_refusal is not None

    @property
    def warned(self) -> bool:
        return any(s.verdict == "warn" for s in self.steps)

    def to_json(self) -> dict[str, Any]:
        """One line of ``loopscope replay --json``."""
        return {
            "session": self.session,
            "source": self.source,
            "format": self.format,
            "engine": self.engine,
            "steps": [s.to_json() for s in self.steps],
            "first_refusal": None if self.first_refusal is None else self.first_refusal.to_json(),
        }


def first_refusal_of(steps: Sequence[Step]) -> FirstRefusal | None:
    for s in steps:
        if s.verdict == "refuse":
            assert s.detector is not None
            return FirstRefusal(s.turn, s.call, s.detector)
    return None


class ConfigError(ValueError):
    """A configuration key or value that cannot be used. The message names the key."""


ConfigT = TypeVar("ConfigT")
PreparedT = TypeVar("PreparedT")


@dataclass(frozen=True, slots=True)
class ConfigResolution(Generic[ConfigT]):
    """A resolved configuration plus the warnings a user should see (clamps, misordering)."""

    config: ConfigT
    warnings: tuple[str, ...] = ()


class Engine(Protocol[ConfigT, PreparedT]):
    """The surface the CLI, the experiments and the dashboard use."""

    name: EngineName

    def default_config(self) -> ConfigT:
        """loopscope's default configuration for this engine."""
        ...

    def resolve_config(
        self,
        file_settings: Mapping[str, Any] | None,
        overrides: Sequence[tuple[str, str]],
        agent: str | None = None,
    ) -> ConfigResolution[ConfigT]:
        """Build a configuration from a parsed config file and ``--set KEY=VALUE`` pairs.

        ``overrides`` win over ``file_settings``. Raises :class:`ConfigError` for an unknown
        key or an unusable value; clamps and other non-fatal notes go into ``warnings``.
        """
        ...

    def prepare(self, session: Session) -> PreparedT:
        """The threshold-independent work, done once per session."""
        ...

    def run(self, prepared: PreparedT, config: ConfigT) -> SessionReplay:
        """The cheap state machine over prepared data; equal to :meth:`replay`."""
        ...

    def replay(self, session: Session, config: ConfigT) -> SessionReplay:
        """The plain reference path."""
        ...
