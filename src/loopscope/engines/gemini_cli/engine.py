"""The Gemini CLI engine object behind :class:`loopscope.engines.contract.Engine`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

from loopscope.bulk import CollectorPaused
from loopscope.engines.base import ConfigResolution, SessionReplay
from loopscope.engines.contract import BaseEngine, CounterSeries, DetectorInfo, ExportFile
from loopscope.engines.gemini_cli import fast
from loopscope.engines.gemini_cli.config import (
    ACCEPTED,
    ALIAS,
    DEFAULTS,
    ENABLED,
    LLM_NOTE,
    SETTINGS,
    VERSION,
    GeminiConfig,
    check_values,
    resolve,
)
from loopscope.engines.gemini_cli.explain import EXPLAINER
from loopscope.engines.gemini_cli.fast import PreparedSession, prepare, remember, run
from loopscope.engines.gemini_cli.reference import ENGINE_NAME, replay_session
from loopscope.engines.gemini_cli.upstream import CONTENT_LOOP, TOOL_CALL_LOOP
from loopscope.model import Session

if TYPE_CHECKING:
    from loopscope.engines.contract import FileSettings, GuideExample, Overrides, SettingSpec

__all__ = ["ENGINE", "GeminiCliEngine"]


class GeminiCliEngine(BaseEngine[GeminiConfig, PreparedSession]):
    """Gemini CLI's ``LoopDetectionService`` in shadow mode: a step per tool call and one per
    reply text."""

    name = ENGINE_NAME
    title = "Gemini CLI"
    summary = ("Gemini CLI watches each prompt's model replies: it stops a cycle of one to five "
               "identical tool calls repeated five times in a row, and text that keeps repeating "
               "the same 50 characters. The first loop in a prompt gets a warning message and a "
               "retry; a second one stops the request.")
    versions = (VERSION,)
    default_version = VERSION
    notes = (LLM_NOTE,)
    step_unit: Literal["call", "turn"] = "call"
    schema: tuple[SettingSpec, ...] = SETTINGS
    explainer = EXPLAINER
    config_type = GeminiConfig
    strict_bool = True
    columns_module = "loopscope.engines.gemini_cli.columns"
    detectors = (
        DetectorInfo(
            TOOL_CALL_LOOP, "tool-call loop (repeated call or cycle)",
            "Within one prompt, Gemini CLI remembers the keys (tool name and exact arguments) of "
            "the last calls. When the same call comes 5 times in a row, or a cycle of 2 to 5 "
            "calls (A, B, A, B, …) repeats 5 times in a row, the call that completes the "
            "pattern is not run. Results are never looked at.",
            ("refuse",)),
        DetectorInfo(
            CONTENT_LOOP, "content loop (repeated text)",
            "Gemini CLI slides a 50-character window over the model's reply text. When the same "
            "window comes back 10 times, on average no more than 250 characters apart and with "
            "at most 5 different gaps, the text is a loop. Code blocks are skipped, and lists, "
            "headings, tables, quotes and tool calls restart the check.",
            ("refuse",)),
    )

    # ------------------------------------------------------------------ configs

    def default_config(self, version: str | None = None) -> GeminiConfig:
        self.check_version(version)
        return GeminiConfig()

    def config(self, values: Mapping[str, Any], version: str | None = None
               ) -> ConfigResolution[GeminiConfig]:
        """Typed values by setting name (``model.disableLoopDetection`` accepted too)."""
        self.check_version(version)
        config = GeminiConfig.from_values(check_values(values))
        return ConfigResolution(config, config.notes)

    def version_of(self, config: GeminiConfig) -> str:
        return VERSION

    def resolve_config(self, file_settings: FileSettings, overrides: Overrides,
                       agent: str | None = None, version: str | None = None
                       ) -> ConfigResolution[GeminiConfig]:
        del agent
        self.check_version(version)
        config, notes = resolve(file_settings, overrides)
        return ConfigResolution(config, notes)

    def settings_from_document(self, document: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """A loopscope document's ``gemini-cli`` part, a Gemini CLI ``settings.json`` fragment
        (``{"model": {"disableLoopDetection": …}}``), or a flat object of this engine's keys."""
        part = document.get(self.name)
        if isinstance(part, Mapping):
            return part
        model = document.get("model")
        if isinstance(model, Mapping) and "disableLoopDetection" in model:
            return document
        if any(key in ACCEPTED for key in document):
            return document
        return None

    def settings_document(self, config: GeminiConfig) -> dict[str, Any]:
        """The ``gemini-cli`` part of a loopscope config document: ``enabled`` and any
        changed what-if."""
        return {ENABLED: config.enabled, **config.hypothetical()}

    def exports(self, config: GeminiConfig) -> tuple[ExportFile, ...]:
        caption = ("Merge into Gemini CLI's settings.json (~/.gemini/settings.json, or "
                   ".gemini/settings.json in a project). model.disableLoopDetection is Gemini "
                   "CLI's only loop-detection setting.")
        changed = config.hypothetical()
        if changed:
            caption += (f" Not exported: {', '.join(changed)}, hypothetical values that are not "
                        "Gemini CLI settings.")
        return (ExportFile(f"Gemini CLI {VERSION} settings.json ({ALIAS})",
                           "gemini-cli-settings.json", "application/json",
                           json.dumps(config.settings_json(), indent=2) + "\n", caption),)

    # ------------------------------------------------------------------ replay

    def prepare(self, session: Session, version: str | None = None) -> PreparedSession:
        self.check_version(version)
        with CollectorPaused():  # (the prepared data holds no reference cycles)
            prepared = prepare(session)
        remember(prepared)
        return prepared

    def run(self, prepared: PreparedSession, config: GeminiConfig) -> SessionReplay:
        return run(prepared, config)

    def encode_prepared(self, prepared: Any) -> dict[str, Any] | None:
        return fast.encode(prepared) if type(prepared) is PreparedSession else None

    def decode_prepared(self, data: Any) -> PreparedSession:
        prepared = fast.decode(data)
        remember(prepared)  # (as prepare does: explanations find the repeated text)
        return prepared

    def replay(self, session: Session, config: GeminiConfig) -> SessionReplay:
        return replay_session(session, config)

    def counters(self, prepared: PreparedSession, replay: SessionReplay, config: GeminiConfig
                 ) -> tuple[CounterSeries, ...]:
        """Per tool-call step, how many times in a row the best 1–5-call cycle has repeated;
        per text step, the most occurrences of one text window since the last reset; against
        the two thresholds."""
        n = prepared.n
        repeats = tuple(float(prepared.repeats[i]) if i in prepared.repeats else None
                        for i in range(n))
        occurrences = prepared.content_run(*config.content_constants).occurrences
        text = tuple(float(occurrences[i]) if i in occurrences else None for i in range(n))
        out = [CounterSeries("same call cycle, repeats in a row", repeats,
                             hover="repeats in a row")]
        if config.enabled and any(v is not None for v in repeats):
            limit = config.tool_call_loop_threshold
            out.append(CounterSeries(f"tool-call loop at {limit}", (float(limit),) * n,
                                     role="limit", hover="tool-call loop at"))
        if any(v is not None for v in text):
            out.append(CounterSeries("same text window, occurrences", text,
                                     hover="occurrences of one 50-character window"
                                     if config.content_chunk_size == DEFAULTS["CONTENT_CHUNK_SIZE"]
                                     else "occurrences of one text window"))
            if config.enabled:
                limit = config.content_loop_threshold
                out.append(CounterSeries(f"content loop at {limit} (if close together)",
                                         (float(limit),) * n, role="limit",
                                         hover="content loop at"))
        return tuple(out)

    def guide_examples(self) -> tuple[GuideExample, ...]:
        from loopscope.engines.gemini_cli.explain import guide_examples

        return guide_examples()


ENGINE: Final = GeminiCliEngine()

