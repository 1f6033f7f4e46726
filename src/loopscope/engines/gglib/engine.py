"""The gglib engine object behind :class:`loopscope.engines.base.Engine`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from loopscope.engines.base import ConfigResolution, EngineName, SessionReplay
from loopscope.engines.gglib.config import GglibConfig, resolve_config
from loopscope.engines.gglib.replay import (
    PreparedMessages,
    prepare_messages,
    replay_messages,
    run_prepared,
)

if TYPE_CHECKING:
    from loopscope.model import Session

__all__ = ["ENGINE", "GglibEngine", "PreparedSession"]


@dataclass(slots=True)
class PreparedSession:
    """A session's identity plus its threshold-independent data."""

    session: str
    source: str
    format: str
    messages: PreparedMessages


class GglibEngine:
    """gglib's batch loop guard and prose stagnation detector in shadow mode (spec §5)."""

    name: EngineName = "gglib"

    def default_config(self) -> GglibConfig:
        return GglibConfig()

    def resolve_config(
        self,
        file_settings: Mapping[str, Any] | None,
        overrides: Sequence[tuple[str, str]],
        agent: str | None = None,
    ) -> ConfigResolution[GglibConfig]:
        return resolve_config(file_settings, overrides, agent)

    def prepare(self, session: Session) -> PreparedSession:
        return PreparedSession(
            session.id, session.source, session.format, prepare_messages(session.chat_view())
        )

    def run(self, prepared: PreparedSession, config: GglibConfig) -> SessionReplay:
        steps, first = run_prepared(prepared.messages, config)
        return SessionReplay(
            prepared.session, prepared.source, prepared.format, self.name, steps, first
        )

    def replay(self, session: Session, config: GglibConfig) -> SessionReplay:
        steps, first = replay_messages(session.chat_view(), config)
        return SessionReplay(session.id, session.source, session.format, self.name, steps, first)

    # Message-level conveniences (sessions that are plain OpenAI-chat message lists).

    def prepare_messages(
        self, messages: Sequence[Any], *, session: str = "", source: str = "", format: str = "openai_chat"
    ) -> PreparedSession:
        return PreparedSession(session, source, format, prepare_messages(messages))

    def replay_messages(
        self,
        messages: Sequence[Any],
        config: GglibConfig,
        *,
        session: str = "",
        source: str = "",
        format: str = "openai_chat",
    ) -> SessionReplay:
        steps, first = replay_messages(messages, config)
        return SessionReplay(session, source, format, self.name, steps, first)


ENGINE = GglibEngine()
