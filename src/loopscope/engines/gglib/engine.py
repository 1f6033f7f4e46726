"""The gglib engine object: gglib's batch loop guard and prose stagnation detector, in shadow
mode, behind :class:`loopscope.engines.contract.Engine`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from loopscope.bulk import CollectorPaused
from loopscope.engines.base import ConfigResolution, SessionReplay
from loopscope.engines.contract import BaseEngine, CounterSeries, DetectorInfo, ExportFile
from loopscope.engines.gglib import fast
from loopscope.engines.gglib.config import SETTINGS, GglibConfig, pattern_notes, resolve_config
from loopscope.engines.gglib.explain import EXPLAINER
from loopscope.engines.gglib.fast import PreparedSession, prepare_events, prepare_messages, run_lazy
from loopscope.engines.gglib.reference import replay_messages
from loopscope.model import Session

if TYPE_CHECKING:
    from loopscope.engines.contract import FileSettings, GuideExample, Overrides, SettingSpec

# ``columns`` (and numpy with it) is imported where a table is first used, so that listing or
# configuring engines does not load numpy; it imports nothing of this module.

__all__ = ["ENGINE", "GglibEngine", "PreparedSession"]

VERSION = "latest"
"""gglib has no releases loopscope tells apart: the engine models its newest guard."""


class GglibEngine(BaseEngine[GglibConfig, PreparedSession]):
    """gglib's batch loop guard and prose stagnation detector in shadow mode."""

    name = "gglib"
    title = "gglib"
    summary = ("gglib compares each assistant turn's set of tool calls (a batch) and their answers "
               "with the turns before it, and refuses a batch that keeps coming back without a "
               "new answer; it also refuses the same prose reply written again and again.")
    versions = (VERSION,)
    default_version = VERSION
    step_unit: Literal["call", "turn"] = "turn"
    schema: tuple[SettingSpec, ...] = SETTINGS
    explainer = EXPLAINER
    columns_module = "loopscope.engines.gglib.columns"
    detectors = (
        DetectorInfo(
            "loop", "the same set of tool calls again and again",
            "gglib remembers the last batch of tool calls. Each time the exact same batch comes "
            "back with the same answers, a count goes up; past the allowance (2 for tools that "
            "change things, 15 for read-only tools) the batch is refused. A changing answer "
            "keeps the run alive, up to a hard ceiling.",
            ("refuse",)),
        DetectorInfo(
            "stagnation", "the same reply written again and again",
            "gglib also watches replies written without tool calls: the same reply more than "
            "5 times among the last 20 such replies is refused.",
            ("refuse",)),
    )

    # ------------------------------------------------------------------ configs

    def config(self, values: Mapping[str, Any], version: str | None = None
               ) -> ConfigResolution[GglibConfig]:
        """gglib clamps its integers to 1..100 (with a note) instead of refusing them."""
        self.check_version(version)
        settings: dict[str, Any] = {}
        for key, value in values.items():
            spec = self.spec(key)
            if spec.kind == "str_list":
                settings[key] = list(spec.check(value))
            else:
                if ((spec.kind != "int_or_off" or value is not None)
                        and (isinstance(value, bool) or not isinstance(value, int))):
                    spec.check(value)  # raises, naming the key
                settings[key] = value
        res = resolve_config(settings, [], None)
        return ConfigResolution(res.config, res.warnings,
                                pattern_notes(res.config.observation_tools))

    def config_values(self, config: GglibConfig) -> dict[str, Any]:
        return {
            "max_repeated_batch_steps": config.max_repeated_batch_steps,
            "max_observation_steps": config.max_observation_steps,
            "max_stagnation_steps": config.max_stagnation_steps,
            "observation_tools": tuple(config.observation_tools),
        }

    def version_of(self, config: GglibConfig) -> str:
        return VERSION

    def default_config(self, version: str | None = None) -> GglibConfig:
        self.check_version(version)
        return GglibConfig()

    def resolve_config(self, file_settings: FileSettings, overrides: Overrides,
                       agent: str | None = None, version: str | None = None
                       ) -> ConfigResolution[GglibConfig]:
        self.check_version(version)
        return resolve_config(file_settings, overrides, agent)

    def settings_document(self, config: GglibConfig) -> dict[str, Any]:
        return config.to_json()

    def exports(self, config: GglibConfig) -> tuple[ExportFile, ...]:
        import json

        return (ExportFile(
            "gglib settings", "gglib-settings.json", "application/json",
            json.dumps(config.to_json(), indent=2) + "\n",
            "gglib's agent settings under their own names."),)

    # ------------------------------------------------------------------ replay

    def prepare(self, session: Session, version: str | None = None) -> PreparedSession:
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

    def encode_prepared(self, prepared: Any) -> dict[str, Any] | None:
        if type(prepared) is not PreparedSession:
            return None
        return {"session": prepared.session, "source": prepared.source,
                "format": prepared.format, "messages": fast.encode(prepared.messages)}

    def decode_prepared(self, data: Any) -> PreparedSession:
        if type(data) is not dict or not all(type(data.get(k)) is str
                                             for k in ("session", "source", "format")):
            raise fast.CodecError("expected a prepared gglib session")
        return PreparedSession(data["session"], data["source"], data["format"],
                               fast.decode(data.get("messages")))

    def replay(self, session: Session, config: GglibConfig) -> SessionReplay:
        steps, first = replay_messages(session.chat_view(), config)
        return SessionReplay(session.id, session.source, session.format, self.name, steps, first)

    def counters(self, prepared: PreparedSession, replay: SessionReplay, config: GglibConfig
                 ) -> tuple[CounterSeries, ...]:
        """The run count against its allowance and ceiling (batch steps), and the prose count
        against its limit (reply steps). The limits depend on each batch's class, so they are
        drawn per step."""
        del prepared, config
        steps = replay.steps

        def batch(get: Any) -> tuple[Any, ...]:
            return tuple(get(s) if s.call is not None else None for s in steps)

        def prose(get: Any) -> tuple[Any, ...]:
            return tuple(get(s) if s.call is None and s.count is not None else None
                         for s in steps)

        out = [
            CounterSeries("same answer in a row", batch(lambda s: s.count),
                          hover="repeats without a new answer"),
            CounterSeries("same batch in a row (any answers)", batch(lambda s: s.extra.get("total")),
                          hover="occurrences in a row"),
            CounterSeries("allowed repeats", batch(lambda s: s.extra.get("effective_max")),
                          role="limit", hover="allowance"),
            CounterSeries("ceiling (any answers)", batch(lambda s: s.extra.get("ceiling")),
                          role="limit", hover="ceiling"),
            CounterSeries("rescued: an answer changed",
                          batch(lambda s: s.count if s.extra.get("rescued") else None),
                          role="event", hover="rescued"),
            CounterSeries("same answer again after other work (a cycle)",
                          batch(lambda s: 1 if s.extra.get("identical") and s.count == 1
                                else None),
                          role="event", hover="a cycle, never refused"),
        ]
        if any(s.call is None and (s.count or 0) >= 2 for s in steps):
            out.append(CounterSeries("identical replies", prose(lambda s: s.count),
                                     role="event", hover="reply seen"))
            out.append(CounterSeries("identical replies allowed",
                                     prose(lambda s: s.extra.get("max_steps")),
                                     role="limit", hover="limit"))
        return tuple(out)

    def guide_examples(self) -> tuple[GuideExample, ...]:
        from loopscope.engines.gglib.explain import guide_examples

        return guide_examples()

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

