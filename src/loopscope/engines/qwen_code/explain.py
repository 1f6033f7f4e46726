"""Plain-language explanations of Qwen Code's verdicts, and the Guide's worked examples."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from loopscope.engines.base import SessionReplay, Step
from loopscope.engines.contract import GuideExample, Limitation, StepExplanation
from loopscope.engines.qwen_code.config import (
    CAP,
    CAP_MODE,
    EXPLICIT,
    NOT_REPLAYED_NOTE,
    SKIP,
    QwenConfig,
)
from loopscope.engines.qwen_code.upstream import (
    ALTERNATING,
    CHANTING,
    CONSECUTIVE,
    GLOBAL_DUPLICATE,
    HEURISTIC_TYPES,
    READ_FILE,
    SHELL_STAGNATION,
    STAGNATION,
    THOUGHTS,
)
from loopscope.engines.qwen_code.upstream import CAP as CAP_LOOP
from loopscope.model import Session

__all__ = ["CONSEQUENCE", "EXPLAINER", "LABELS", "QwenExplainer", "guide_examples", "reason"]

LABELS: Final[Mapping[str, str]] = {
    CONSECUTIVE: "the same tool call several times in a row",
    SHELL_STAGNATION: "git status/diff checks over and over",
    CAP_LOOP: "too many tool calls for one prompt",
    GLOBAL_DUPLICATE: "the same tool call too often in one prompt",
    ALTERNATING: "ping-pong between two calls",
    READ_FILE: "mostly file reads",
    STAGNATION: "the same tool again and again",
    CHANTING: "repeated text",
    THOUGHTS: "repeated thoughts",
}


def _config(config: Any) -> QwenConfig:
    return config if isinstance(config, QwenConfig) else QwenConfig()


_OPT_IN_RULES: Final[Mapping[str, tuple[str, str]]] = {
    GLOBAL_DUPLICATE: ("global_duplicate_threshold",
                       "the same tool call {n} times anywhere in one prompt stops it."),
    ALTERNATING: ("alternating_pattern_cycles",
                  "two calls alternating {n} times (A B A B A B) stop the prompt."),
    READ_FILE: ("file_read_threshold",
                "{n} reads or listings among the last 15 calls stop the prompt (once it has made "
                "any other kind of call)."),
    STAGNATION: ("stagnation_threshold",
                 "the same tool {n} times in a row, whatever its arguments, stops the prompt."),
    CHANTING: ("content_loop_threshold",
               "text whose 50-character stretch comes back {n} times close together (or a long "
               "block repeated exactly) stops the prompt."),
    THOUGHTS: ("thought_repeat_threshold", "{n} identical thoughts in a row stop the prompt."),
}
"""The opt-in checks' rules (they run only with ``skipLoopDetection`` false): the constant
of :class:`.upstream.Constants` each one reads, and the rule with that number as ``{n}``."""


def reason(detector: str, config: QwenConfig) -> str:
    """The rule that fired, in plain words, with this configuration's numbers."""
    c = config.constants
    cap = config.max_tool_calls_per_turn
    if detector == CONSECUTIVE:
        return (f"Qwen Code stops a prompt when the model makes exactly the same tool call "
                f"{c.tool_call_loop_threshold} times in a row. This check is always on.")
    if detector == SHELL_STAGNATION:
        return (f"Qwen Code stops a prompt after {c.stagnation_threshold} shell calls in a row "
                "that only run git status, git ls-files or git diff. This check is always on.")
    if detector == CAP_LOOP:
        if config.explicit:
            return (f"{CAP} is set to {cap}: the tool call after the {cap}th in one prompt is "
                    "stopped.")
        return (f"The adaptive cap (model.maxToolCallsPerTurn left unset): past {cap} tool "
                f"calls in one prompt, Qwen Code stops when one call has come "
                f"{c.global_duplicate_threshold} times, and always past "
                f"{cap * c.adaptive_cap_hard_multiplier} calls.")
    if detector in _OPT_IN_RULES:
        constant, rule = _OPT_IN_RULES[detector]
        return f"With {SKIP}=false, " + rule.format(n=getattr(c, constant))
    return "Qwen Code detected a loop."


CONSEQUENCE: Final = (
    "This refusal stops the agent: Qwen Code ends the prompt here (loop detected), and the "
    "agent waits for the user's next message; the interactive app then offers to turn loop "
    "detection off for the session.")
"""Whether a Qwen Code refusal stops the agent: it does. Every detection halts the prompt
(a ``LoopDetected`` event ends its stream; the call that fired is not run) with no recovery
retry, and only a new user message starts the next prompt."""


class QwenExplainer:
    """What Qwen Code would have done at each step."""

    def explain_step(self, step: Step, replay: SessionReplay, config: Any) -> StepExplanation:
        cfg = _config(config)
        what = ", ".join(step.tools) if step.tools else "this reply"
        prompt = step.extra.get("prompt", 0)
        calls = step.extra.get("turn_calls", 0)
        if step.verdict == "pass" or step.detector is None:
            facts = (f"Tool calls so far in this prompt: {calls}.",) if step.call is not None else ()
            return StepExplanation(f"Qwen Code would have let {what} through.", facts)
        label = LABELS.get(step.detector, step.detector)
        if step.extra.get("intervention") == "halt":
            action = ("Qwen Code would have stopped this prompt here (loop detected): "
                      + ("the call would not have run." if step.call is not None
                         else "the reply would have been cut off."))
        else:
            action = ("Qwen Code would already have stopped this prompt at an earlier loop; "
                      "this one is seen only because the replay goes on.")
        levers: tuple[str, ...]
        if step.detector == CAP_LOOP:
            levers = (CAP, CAP_MODE)
        elif step.detector in HEURISTIC_TYPES:
            levers = (SKIP,)
        else:
            levers = ("TOOL_CALL_LOOP_THRESHOLD",) if step.detector == CONSECUTIVE else (
                "STAGNATION_THRESHOLD",)
        return StepExplanation(
            f"Qwen Code would have stopped {what}: {label}.",
            (f"Prompt {prompt}, detection {step.count} in this prompt.",),
            which_limit=reason(step.detector, cfg), guard_action=action, levers=levers,
            consequence=CONSEQUENCE if step.verdict == "refuse" else None)

    def limitations(self, session: Session | None, replay: SessionReplay, config: Any,
                    warnings: Sequence[str] = ()) -> tuple[Limitation, ...]:
        del session, config, warnings
        out = [Limitation("qwen-core-client-only", NOT_REPLAYED_NOTE)]
        if any("task_list" in s.tools for s in replay.steps):
            out.append(Limitation(
                "qwen-task-list-results",
                "Qwen Code looks at the answers of its task-list tool (a list that keeps "
                "changing is not a loop); the replay does not, so repeated task-list checks "
                "count like any other call."))
        return tuple(out)

    def extra_changes(self, step: Step, replay: SessionReplay, config: Any,
                      goal: Literal["pass", "refuse"]) -> Sequence[Mapping[str, Any]]:
        del replay
        cfg = _config(config)
        if goal == "pass" and step.detector == CAP_LOOP:
            return ({CAP: 0, CAP_MODE: EXPLICIT},)
        if goal == "refuse" and step.call is not None and cfg.skip_loop_detection:
            return ({SKIP: False},)
        return ()


EXPLAINER: Final = QwenExplainer()


def guide_examples() -> tuple[GuideExample, ...]:
    """One worked example per kind of guard."""
    from loopscope.engines.examples import tiny_session

    read = ("read_file", {"absolute_path": "/repo/src/build.py"}, "def build():\n    ...")
    a = ("read_file", {"absolute_path": "/repo/a.py"}, "a")
    b = ("run_shell_command", {"command": "pytest -x"}, "1 failed")
    many = [[("read_file", {"absolute_path": f"/repo/f{i}.py"}, "...")] for i in range(12)]
    return (
        GuideExample(
            CONSECUTIVE, "The same tool call five times in a row",
            "Always on, even with Qwen Code's defaults: the 5th identical call in a row (same "
            "tool, same arguments) stops the prompt.",
            "The agent reads the same file five times; the 5th read (call 5) is stopped.",
            tiny_session("qwen-consecutive", [[read] for _ in range(5)])),
        GuideExample(
            ALTERNATING, "Ping-pong between two calls (opt-in)",
            "With model.skipLoopDetection set to false, A B A B A B stops the prompt.",
            "The agent alternates a read and a test run; the 6th call is stopped.",
            tiny_session("qwen-alternating", [[a], [b]] * 3), {SKIP: False}),
        GuideExample(
            CAP_LOOP, "A hard per-prompt cap",
            "With model.maxToolCallsPerTurn written into settings.json, the call after that "
            "many in one prompt is stopped.",
            "The agent reads twelve different files with the cap set to 10; the 11th read is "
            "stopped.",
            tiny_session("qwen-cap", many), {CAP: 10, CAP_MODE: EXPLICIT}),
    )

