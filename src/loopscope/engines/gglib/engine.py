"""The gglib engine object behind :class:`loopscope.engines.base.Engine`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loopscope.bulk import CollectorPaused
from loopscope.engines.base import ConfigResolution, EngineName, SessionReplay
from loopscope.engines.gglib.config import GglibConfig, resolve_config
from loopscope.engines.gglib.replay import (
    PreparedMessages,
    prepare_events,
    prepare_messages,
    replay_messages,
    run_lazy,
)
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
        with CollectorPaused():  # (the prepared data holds no reference cycles)
            return self._prepare(session)

    def _prepare(self, session: Session) -> PreparedSession:
        if not isinstance(session, Session):
            messages = prepare_messages(session.chat_view())
        elif session.chat_messages is not None:
            messages = prepare_messages(session.chat_messages)  # what chat_view() gives
        else:
            # Straight from the events: the same as preparing the chat view, without building
            # (and caching on the session) a dict per message.
            messages = prepare_events(session.events)
        return PreparedSession(session.id, session.source, session.format, messages)

    def run(self, prepared: PreparedSession, config: GglibConfig) -> SessionReplay:
        return run_lazy(prepared.messages, config, session=prepared.session,
                        source=prepared.source, format=prepared.format, engine=self.name)

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
