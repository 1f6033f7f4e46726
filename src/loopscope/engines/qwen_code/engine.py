"""The Qwen Code engine object behind :class:`loopscope.engines.contract.Engine`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, Literal

from loopscope.engines.base import ConfigError, SessionReplay
from loopscope.engines.contract import (
    BaseEngine,
    CounterSeries,
    DetectorInfo,
    ExportFile,
    GuideExample,
    SettingSpec,
)
from loopscope.engines.qwen_code import fast
from loopscope.engines.qwen_code.config import (
    ADAPTIVE,
    CAP,
    CAP_MODE,
    EXPLICIT,
    NOT_REPLAYED_NOTE,
    SETTINGS,
    SKIP,
    VERSION,
    QwenConfig,
)
from loopscope.engines.qwen_code.explain import EXPLAINER, LABELS
from loopscope.engines.qwen_code.fast import PreparedSession, prepare, run
from loopscope.engines.qwen_code.reference import ENGINE_NAME, replay_session
from loopscope.engines.qwen_code.upstream import (
    ALTERNATING,
    CHANTING,
    CONSECUTIVE,
    GLOBAL_DUPLICATE,
    READ_FILE,
    SHELL_STAGNATION,
    STAGNATION,
    THOUGHTS,
)
from loopscope.engines.qwen_code.upstream import CAP as CAP_LOOP
from loopscope.model import Session

__all__ = ["ENGINE", "QwenCodeEngine"]

_DESCRIPTIONS: Final = {
    CONSECUTIVE: "Always on. The same tool call (same tool, same arguments) 5 times in a row "
                 "within one prompt stops the prompt; the 5th call is not run.",
    SHELL_STAGNATION: "Always on. 8 shell calls in a row that only run git status, git ls-files "
                      "or git diff (without file paths) stop the prompt.",
    CAP_LOOP: "Always on. Every tool call answering one user message counts. Left unset, the "
              "cap is adaptive: past 100 calls the prompt stops only if one call has come 6 "
              "times, and always past 1000. Set explicitly, it is a hard cap.",
    GLOBAL_DUPLICATE: "Opt-in (skipLoopDetection false). The same call 6 times anywhere in one "
                      "prompt.",
    ALTERNATING: "Opt-in. The last 6 calls alternate between two different calls (A B A B A B).",
    READ_FILE: "Opt-in. 8 of the last 15 calls read or list files, once the prompt has made "
               "another kind of call.",
    STAGNATION: "Opt-in. The same tool 8 times in a row, whatever its arguments.",
    CHANTING: "Opt-in. The reply text (or thinking) keeps repeating the same 50 characters, or "
              "a long block repeats exactly. Code blocks are skipped; lists, tables and headings "
              "restart the check.",
    THOUGHTS: "Opt-in. The same thought 3 times in a row.",
}


class QwenCodeEngine(BaseEngine[QwenConfig, PreparedSession]):
    """Qwen Code's ``LoopDetectionService`` in shadow mode: a step per tool call and one per
    reply."""

    name = ENGINE_NAME
    title = "Qwen Code"
    summary = ("Qwen Code always stops a prompt on 5 identical tool calls in a row, on 8 git "
               "status/diff checks in a row, and on a per-prompt tool-call cap (adaptive by "
               "default: past 100 calls only when stuck, always past 1000). With "
               "model.skipLoopDetection set to false it also stops repeated calls, ping-pong, "
               "read loops, repeated text and repeated thoughts. Every detection stops the "
               "prompt.")
    versions = (VERSION,)
    default_version = VERSION
    notes = (NOT_REPLAYED_NOTE,)
    step_unit: Literal["call", "turn"] = "call"
    schema: tuple[SettingSpec, ...] = SETTINGS
    explainer = EXPLAINER
    config_type = QwenConfig
    strict_bool = True
    columns_module = "loopscope.engines.qwen_code.columns"
    replayed_one_by_one: tuple[str, ...] = ("CONTENT_LOOP_THRESHOLD", "THOUGHT_REPEAT_THRESHOLD")
    """With the opt-in checks on, a change of these what-ifs replays every session with reply
    text (thoughts) one by one: the text walk is not kept in columns for other constants."""
    detectors = tuple(DetectorInfo(key, LABELS[key], text, ("refuse",))
                      for key, text in _DESCRIPTIONS.items())

    # ------------------------------------------------------------------ configs

    def version_of(self, config: QwenConfig) -> str:
        return VERSION

    def file_values(self, file_settings: Mapping[str, Any], version: str) -> dict[str, Any]:
        """A loopscope part (flat setting names) or Qwen Code's own ``settings.json``
        (``{"model": {"skipLoopDetection": …, "maxToolCallsPerTurn": …}}``: a present
        ``maxToolCallsPerTurn`` is explicit, an absent one adaptive). Other keys of a Qwen Code
        settings file are not about loops and are ignored."""
        model = file_settings.get("model")
        if not isinstance(model, Mapping):
            return super().file_values(file_settings, version)
        values: dict[str, Any] = {CAP_MODE: ADAPTIVE}
        if "skipLoopDetection" in model:
            values[SKIP] = self.spec(SKIP).check(model["skipLoopDetection"])
        if "maxToolCallsPerTurn" in model:
            cap = model["maxToolCallsPerTurn"]
            if isinstance(cap, bool) or not isinstance(cap, int):
                raise ConfigError(f"model.maxToolCallsPerTurn: expected an integer, got {cap!r} "
                                  "(Qwen Code refuses it too)")
            values[CAP] = max(cap, 0)  # (Qwen Code: 0 or a negative value disables the cap)
            values[CAP_MODE] = EXPLICIT
        return values

    def settings_from_document(self, document: Mapping[str, Any]) -> Mapping[str, Any] | None:
        part = document.get(self.name)
        if isinstance(part, Mapping):
            return part
        model = document.get("model")
        if isinstance(model, Mapping) and ("skipLoopDetection" in model
                                           or "maxToolCallsPerTurn" in model):
            return document
        return super().settings_from_document(document)

    def exports(self, config: QwenConfig) -> tuple[ExportFile, ...]:
        caption = ("Merge into Qwen Code's settings.json (~/.qwen/settings.json, or "
                   ".qwen/settings.json in a project).")
        if not config.explicit:
            caption += (" model.maxToolCallsPerTurn is left out: unset, the cap is adaptive "
                        "(writing any value makes it a hard cap).")
        changed = list(config.hypothetical())
        if config.adaptive_off_default:
            changed.append(f"adaptive cap {config.max_tool_calls_per_turn}")
        if changed:
            caption += (f" Not exported: {', '.join(changed)}, hypothetical values that are "
                        "not Qwen Code settings.")
        return (ExportFile(f"Qwen Code {VERSION} settings.json", "qwen-code-settings.json",
                           "application/json",
                           json.dumps(config.settings_json(), indent=2) + "\n", caption),)

    # ------------------------------------------------------------------ replay

    def prepare(self, session: Session, version: str | None = None) -> PreparedSession:
        self.check_version(version)
        return prepare(session)

    def run(self, prepared: PreparedSession, config: QwenConfig) -> SessionReplay:
        return run(prepared, config)

    def encode_prepared(self, prepared: PreparedSession) -> dict[str, Any] | None:
        return fast.encode(prepared) if type(prepared) is PreparedSession else None

    def decode_prepared(self, data: Any) -> PreparedSession:
        return fast.decode(data)

    def replay(self, session: Session, config: QwenConfig) -> SessionReplay:
        return replay_session(session, config)

    def counters(self, prepared: PreparedSession, replay: SessionReplay, config: QwenConfig
                 ) -> tuple[CounterSeries, ...]:
        """Per tool-call step, the tool calls so far in the prompt, against the cap."""
        del prepared
        calls = tuple(float(s.extra["turn_calls"]) if s.call is not None else None
                      for s in replay.steps)
        out = [CounterSeries("tool calls in this prompt", calls, hover="tool calls so far")]
        cap = config.max_tool_calls_per_turn
        if cap > 0 and any(v is not None for v in calls):
            out.append(CounterSeries(f"cap at {cap}", (float(cap),) * len(calls), role="limit",
                                     hover="cap"))
        return tuple(out)

    def guide_examples(self) -> tuple[GuideExample, ...]:
        from loopscope.engines.qwen_code.explain import guide_examples

        return guide_examples()


ENGINE: Final = QwenCodeEngine()

