"""Plain-language explanations for OpenClaw 2026.9.6 (recoveries, terminal stops, skipped
calls, argument churn, terminal exec failures), its known limitations and guide examples.

Pure: no UI imports, no I/O. Sentences are written for someone who supports the agent, not for
an engineer: what OpenClaw would have done, why, and the limit that decided.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from loopscope.engines.base import SessionReplay, Step
from loopscope.engines.contract import GuideExample, StepExplanation
from loopscope.engines.openclaw.shared import explain as common
from loopscope.engines.openclaw.shared.verdicts import verdict_message
from loopscope.engines.openclaw.v2026_9 import upstream as rules
from loopscope.engines.openclaw.v2026_9.config import (
    UPSTREAM,
    VERSION,
    Limits,
    OpenClaw9Config,
)
from loopscope.engines.openclaw.v2026_9.hashing import (
    TERMINAL_EXEC_FAILURE,
    TOOL_LOOP_VETO,
    normalize_tool_name,
)
from loopscope.model import Session, ToolResult

__all__ = ["EXPLAINER_2026_9", "LIMITATIONS_2026_9", "explain_step_2026_9",
           "guide_examples_2026_9", "limitations_2026_9", "loop_sentence"]

_LIMIT_OF: Final = {
    rules.GENERIC_REPEAT: ("critical", "CRITICAL_THRESHOLD"),
    rules.KNOWN_POLL_NO_PROGRESS: ("critical", "CRITICAL_THRESHOLD"),
    rules.PING_PONG: ("critical", "CRITICAL_THRESHOLD"),
    rules.UNKNOWN_TOOL_REPEAT: ("unknown_tool", "UNKNOWN_TOOL_THRESHOLD"),
    rules.GLOBAL_CIRCUIT_BREAKER: ("breaker", "GLOBAL_CIRCUIT_BREAKER_THRESHOLD"),
    rules.ARGUMENT_CHURN: ("argument_churn", "ARGUMENT_CHURN_THRESHOLD"),
    rules.POST_COMPACTION_GUARD: ("guard_window", "DEFAULT_WINDOW_SIZE"),
}
"""A detector's stopping limit: the :class:`Limits` field and the what-if named after it."""


def _tool(name: str) -> str:
    return f"`{name}`" if name else "(an unnamed tool)"


def _name_of(step: Step) -> str:
    """The tool name OpenClaw 2026.9 uses for the step (lowercase, ``bash`` → ``exec``)."""
    signature = step.signature or ""
    return signature[:-65] if len(signature) > 65 else (step.tools[0] if step.tools else "")


def _unknown_name(step: Step) -> str:
    key = step.extra.get("warning_key") or ""
    name = key.rsplit(":", 1)[-1] if key.startswith("unknown-tool:") else ""
    return name if name and name != "unknown" else _name_of(step)


def loop_sentence(detector: str, step: Step, count: int | None, *, critical: bool) -> str:
    """What the agent was doing, for a loop detector (any level)."""
    tool = _tool(_name_of(step))
    n = count
    if detector == rules.GENERIC_REPEAT:
        if critical and step.extra.get("outcome_kind") == TERMINAL_EXEC_FAILURE:
            return (f"The agent's {tool} commands failed the same way {n} times in a row "
                    "(OpenClaw counts a failure again even when the command changes, as long "
                    "as it reads the same once timestamps, retry numbers, durations and "
                    "process ids are ignored).")
        if critical:
            return (f"The agent called {tool} with exactly the same input {n} times in a row "
                    "and got exactly the same answer each time.")
        return f"The agent has called {tool} with the same input {n} times in this run."
    if detector == rules.KNOWN_POLL_NO_PROGRESS:
        return f"The agent kept checking on {tool} and the status hasn't changed for {n} checks."
    if detector == rules.PING_PONG:
        other = _tool(step.extra.get("paired_tool") or "")
        return (f"The agent is going back and forth between {tool} and {other} ({n} calls) "
                "without getting anywhere.")
    if detector == rules.UNKNOWN_TOOL_REPEAT:
        return (f"The agent tried to use a tool that doesn't exist ({_tool(_unknown_name(step))})"
                f" {n} times in a row.")
    if detector == rules.GLOBAL_CIRCUIT_BREAKER:
        return (f"The agent repeated the same call with the same result {n} times: OpenClaw's "
                "hard limit on identical results.")
    if detector == rules.ARGUMENT_CHURN:
        variants = _variants(step)
        return (f"The agent keeps calling {tool} with a few different inputs"
                f"{f' ({variants} variants)' if variants else ''}, {n} calls in all, and "
                "every one of them fails the same way (or changes nothing).")
    if detector == rules.POST_COMPACTION_GUARD:
        return ("After the conversation was compacted, the agent repeated the same call with "
                f"the same result {n} times.")
    return f"OpenClaw flagged {tool} ({detector}, count {n})."


_VARIANTS = re.compile(r"cycled through (\d+) repeated argument patterns")


def _variants(step: Step) -> int | None:
    found = _VARIANTS.search(step.extra.get("message") or "")
    return int(found.group(1)) if found else None


def _limits(config: Any) -> Limits:
    return config.limits if isinstance(config, OpenClaw9Config) else UPSTREAM


def _which_limit(detector: str, config: Any, level: str) -> str | None:
    limits = _limits(config)
    if level == "warning":
        attr, name = (("argument_churn", "ARGUMENT_CHURN_THRESHOLD")
                      if detector == rules.ARGUMENT_CHURN else ("warning", "WARNING_THRESHOLD"))
    elif detector in _LIMIT_OF:
        attr, name = _LIMIT_OF[detector]
    else:
        return None
    value = getattr(limits, attr)
    upstream = getattr(UPSTREAM, attr)
    what = {
        ("critical", "critical"): f"the same loop {value} times stops a call",
        ("unknown_tool", "critical"): f"{value} calls in a row to a missing tool stop it",
        ("breaker", "critical"): f"{value} identical results in a row always stop a call",
        ("argument_churn", "warning"): f"{value} failing calls cycling through a few inputs "
                                        "earn a warning",
        ("warning", "warning"): f"the same pattern {value} times earns a warning",
        ("guard_window", "critical"): f"after a compaction, {value} identical calls with "
                                      "identical results stop the run",
    }[(attr, "warning" if level == "warning" else "critical")]
    fixed = (f"fixed in OpenClaw {VERSION} ({name})" if value == upstream else
             f"a what-if: OpenClaw {VERSION} uses {upstream} ({name})")
    return f"The limit: {what} — {fixed}."


def _trigger_of(step: Step, replay: SessionReplay) -> Step | None:
    """The call of the same message whose loop stopped it (for a skipped call)."""
    for other in replay.steps:
        if (other.turn == step.turn and other.extra.get("run_id") == step.extra.get("run_id")
                and other.verdict == "refuse" and other.detector != rules.TOOL_LOOP_BATCH_SKIPPED
                and other.extra.get("intervention") == step.extra.get("intervention")):
            return other
    return None


def _levers(detector: str | None, loop_detector: str | None, verdict: str) -> tuple[str, ...]:
    if verdict == "pass" or detector is None:
        return ()
    behind = loop_detector or detector
    if verdict == "warn":
        first = ("ARGUMENT_CHURN_THRESHOLD" if detector == rules.ARGUMENT_CHURN
                 else "WARNING_THRESHOLD")
        return (first, "LOOP_WARNING_BUCKET_SIZE", "enabled")
    names = [_LIMIT_OF[behind][1]] if behind in _LIMIT_OF else []
    if behind in (rules.GENERIC_REPEAT, rules.KNOWN_POLL_NO_PROGRESS):
        names.append("GLOBAL_CIRCUIT_BREAKER_THRESHOLD")
    if behind != rules.POST_COMPACTION_GUARD:
        names.append("TOOL_CALL_HISTORY_SIZE")
    names.append("enabled")
    return tuple(names)


def _outcome_facts(step: Step) -> list[str]:
    kind = step.extra.get("outcome_kind")
    facts = []
    if kind == TERMINAL_EXEC_FAILURE:
        facts.append("This command failed (a non-zero exit code with output). OpenClaw 2026.9 "
                     "counts repeated failures of a command as no progress even when the "
                     "command line changes, as long as the failure reads the same once "
                     "timestamps, retry numbers, durations and process ids are ignored.")
    elif kind == TOOL_LOOP_VETO:
        facts.append("The recorded result is OpenClaw's own loop stop; OpenClaw 2026.9 counts "
                     "it towards the streak of this call.")
    raw = step.tools[0] if step.tools else ""
    if raw and normalize_tool_name(raw) != raw:
        facts.append(f"OpenClaw 2026.9 knows {_tool(raw)} as {_tool(normalize_tool_name(raw))}.")
    return facts


def explain_step_2026_9(step: Step, replay: SessionReplay, config: Any) -> StepExplanation:
    """Why ``step`` got its verdict under OpenClaw 2026.9.6."""
    extra = step.extra
    detector = step.detector
    loop = extra.get("loop_detector")
    intervention = extra.get("intervention")
    facts: list[str] = []
    upstream: list[tuple[str, str]] = []
    which: str | None = None
    action: str | None = None
    if step.verdict == "pass" or detector is None:
        headline = f"OpenClaw {VERSION} would have let this call of {_tool(_name_of(step))} through."
        if isinstance(config, OpenClaw9Config) and not config.detection_on:
            facts.append("Loop detection is switched off (enabled is false); the "
                         "post-compaction guard is off too.")
        facts.extend(_outcome_facts(step))
        return StepExplanation(headline, tuple(facts))
    if detector == rules.TOOL_LOOP_BATCH_SKIPPED:
        trigger = _trigger_of(step, replay)
        terminal = intervention == rules.TERMINAL
        headline = ("Not run because another call in the same message triggered the loop stop"
                    + (" that ended the run." if terminal else "."))
        facts.append(f"OpenClaw {VERSION} checks all the calls of one message together: when "
                     "one of them is stopped for a loop, none of the others run either.")
        if trigger is not None:
            where = f"call {trigger.call + 1}" if trigger.call is not None else "another call"
            facts.append(f"The stop came from {where} ({_tool(_name_of(trigger))}): "
                         + loop_sentence(loop or "", trigger, trigger.count, critical=True))
        action = ("OpenClaw would not have run this call and would have told the agent so."
                  + (" Then it would have ended the run." if terminal else
                     " The agent could then try something else."))
        upstream.append(("OpenClaw's result for this call",
                         rules.intervention_result_text("", False, terminal)))
        which = _which_limit(loop or "", config, "critical")
    elif detector == rules.TOOL_LOOP_RECOVERY_TERMINATED:
        headline = ("OpenClaw let the agent try once more after warning it; the second loop in "
                    "the same run ended the run.")
        facts.append(loop_sentence(loop or "", step, step.count, critical=True))
        facts.append(f"In OpenClaw {VERSION} the first loop stop of a run is a second chance "
                     "(the agent is told not to repeat the action); any further loop stop in "
                     "the same run ends the run.")
        action = "OpenClaw would not have run this call and would have stopped the run here."
        upstream.append(("OpenClaw's result for this call",
                         rules.intervention_result_text(_loop_message(step), True, True)))
        upstream.append(("OpenClaw's final message", rules.TOOL_LOOP_RECOVERY_TERMINATED_MESSAGE))
        which = _which_limit(loop or "", config, "critical")
    elif step.verdict == "refuse" and detector == rules.POST_COMPACTION_GUARD:
        headline = loop_sentence(detector, step, step.count, critical=True)
        action = "OpenClaw would have stopped the run after this call."
        if extra.get("message"):
            upstream.append(("OpenClaw's message", extra["message"]))
        which = _which_limit(detector, config, "critical")
    elif step.verdict == "refuse":
        headline = loop_sentence(detector, step, step.count, critical=True)
        action = ("OpenClaw would not have run this call. It would have told the agent why and "
                  "let it try once more (its one-shot recovery); the run goes on, but another "
                  "loop stop in the same run would end it.")
        if intervention == rules.RECOVERY and extra.get("message"):
            upstream.append(("OpenClaw's result for this call",
                             rules.intervention_result_text(extra["message"], True, False)))
        which = _which_limit(detector, config, "critical")
    else:
        headline = loop_sentence(detector, step, step.count, critical=False)
        emitted = extra.get("warning_emitted")
        bucket = _limits(config).bucket_size
        if emitted is False:
            action = (f"OpenClaw would not show this warning this time: it shows each warning "
                      f"to the agent once per {bucket} repetitions, and never below {bucket}.")
        else:
            action = ("OpenClaw adds this warning to the call's result, so the agent reads it; "
                      "the call still runs.")
        if extra.get("message"):
            upstream.append(("OpenClaw's warning", extra["message"]))
        which = _which_limit(detector, config, "warning")
    if extra.get("guard_abort") and detector != rules.POST_COMPACTION_GUARD:
        facts.append("The post-compaction guard would also have stopped the run after this call.")
    if step.after_divergence:
        facts.append("This happened after the first refusal, so the recorded session would not "
                     "have reached this point this way.")
    if extra.get("recorded_block"):
        facts.append("The recorded session shows that OpenClaw actually stopped this call.")
    facts.extend(_outcome_facts(step))
    return StepExplanation(headline, tuple(facts), which, action, (), tuple(upstream),
                           _levers(detector, loop, step.verdict), _consequence(step))


def _consequence(step: Step) -> str | None:
    """Whether a refusal stops the agent under 2026.9's one-shot recovery (None unless
    refused): the first loop stop of a run is a second chance, a further one ends the run."""
    if step.verdict != "refuse":
        return None
    if step.detector == rules.POST_COMPACTION_GUARD:
        return ("This refusal stops the agent: OpenClaw's post-compaction guard ends the run "
                "after this call.")
    if step.extra.get("intervention") == rules.TERMINAL:
        return ("This refusal stops the agent: it is the second loop stop in the same run, "
                "and OpenClaw ends the run.")
    if step.extra.get("guard_abort"):
        return ("This refusal stops the agent: OpenClaw does not run this call, and its "
                "post-compaction guard then ends the run.")
    return (f"In OpenClaw {VERSION} a first refusal in a run is a second chance, not a stop: "
            "the call does not run, the agent is told not to repeat it and goes on, and a "
            "second loop stop in the same run would end the run.")


def _loop_message(step: Step) -> str:
    """The loop detector's own message behind a terminal stop (as OpenClaw wrote it)."""

    tool, n = _name_of(step), step.count or 0
    loop: str = step.extra.get("loop_detector") or ""
    if loop == rules.ARGUMENT_CHURN:
        return rules.argument_churn_message(tool, _variants(step) or 0, n)
    return verdict_message(loop, True, tool, n, _unknown_name(step),
                           breaker=rules.breaker_message,
                           generic_critical=rules.generic_critical_message)


# --------------------------------------------------------------------------- limitations

LIMITATIONS_2026_9: Final[dict[str, str]] = {
    "fixed_thresholds": f"OpenClaw {VERSION} has one loop setting, enabled; every threshold "
    "is fixed. Values other than OpenClaw's here are what-ifs (proposals to take upstream), "
    "not settings you can deploy.",
    "legacy_keys_ignored": f"The configuration sets keys of older OpenClaw releases; OpenClaw "
    f"{VERSION} has no use for them (it refuses to load such a file, and `openclaw doctor` "
    "removes them), so loopscope ignores them.",
    "one_shot_recovery": "After the first loop stop in a run, OpenClaw lets the agent try "
    "once more; a second loop stop in the same run ends the run. A new user message gives a "
    "new chance.",
    "shadow_after_stop": "In OpenClaw, a stopped call never runs and only a veto is remembered; "
    "loopscope keeps the recorded calls and results after a stop (those steps are shaded as "
    "after the point of divergence), so later counts describe the recorded session.",
    "batch_stops_together": "The calls of one message are checked together: one loop stop "
    "skips every call of that message, including ones that were fine.",
    "warnings_in_buckets": "Warnings reach the agent (added to the call's result) only once "
    "per 10 repetitions of the same pattern, and never below 10.",
    "breaker_per_pattern": "The hard limit on identical results counts one exact call (tool "
    "and arguments) at a time: an agent alternating two calls never reaches it.",
    "exact_arguments": "Calls are compared by their exact arguments (except failing commands): "
    "near-identical retries count as different calls.",
    "changing_outputs": "A call whose answer changes every time only ever warns: stopping "
    "needs identical outcomes.",
    "strict_alternation": "Back-and-forth needs a strict two-call alternation: cycles of three "
    "or more calls are never caught.",
    "needs_outcomes": "Calls without a recorded result count only towards warnings: every "
    "stop needs recorded outcomes.",
    "runs_reset_counts": "Each user message starts a new run: counts start again at 0 and the "
    "one-shot recovery is available again.",
    "window_bounds_counts": "Every count is bounded by the 30 calls OpenClaw remembers, shared "
    "by every run of the session.",
    "names_normalised": "OpenClaw 2026.9 compares tool names in lowercase and treats bash as "
    "exec, apply-patch as apply_patch and cron as automations.",
    "blank_tool_name": "A call whose tool name is only spaces is remembered under an empty "
    "name but checked as `tool`, so it never matches its own earlier calls.",
    "recorded_stop_as_error": "OpenClaw 2026.9 records its own loop stops as errors; "
    "replaying them, loopscope counts them as failed calls (no progress), as OpenClaw would.",
    "unregistered_tools_checked": "Replay approximation: OpenClaw does not loop-check a call "
    "to a tool it does not have (it answers 'Tool … not found' at once); loopscope checks "
    "every recorded call.",
    **common.SHARED_LIMITATIONS,
    "threshold_above_window": "A what-if threshold above the calls remembered can never be "
    "reached.",
}

_NOT_FOUND: Final = re.compile(r"tool\s+\S+\s+not found|unknown tool", re.IGNORECASE)


def limitations_2026_9(session: Session | None, replay: SessionReplay, config: Any,
                       warnings: Sequence[str] = ()) -> list[tuple[str, str]]:
    """The known limitations that apply to this replay under OpenClaw 2026.9.6, as
    ``(id, plain text)``, in table order."""
    steps = replay.steps
    found: set[str] = set()
    limits = _limits(config)
    refused = [s for s in steps if s.verdict == "refuse"]
    warned = [s for s in steps if s.verdict == "warn"]
    if isinstance(config, OpenClaw9Config) and config.hypothetical:
        found.add("fixed_thresholds")
    if any("no effect in OpenClaw" in w for w in warnings) or (
            isinstance(config, OpenClaw9Config) and config.ignored_keys):
        found.add("legacy_keys_ignored")
    if any(s.extra.get("intervention") for s in refused):
        found.add("one_shot_recovery")
    if refused and any(s.after_divergence for s in steps):
        found.add("shadow_after_stop")
    if any(s.detector == rules.TOOL_LOOP_BATCH_SKIPPED for s in refused):
        found.add("batch_stops_together")
    if any(s.extra.get("warning_emitted") is False for s in warned):
        found.add("warnings_in_buckets")
    if any((s.extra.get("loop_detector") or s.detector) == rules.PING_PONG for s in steps
           if s.detector):
        found.add("breaker_per_pattern")
    if any(s.detector == rules.GENERIC_REPEAT and (s.count or 0) >= limits.critical
           for s in warned):
        found.add("changing_outputs")
    by_run: dict[str, list[Step]] = {}
    for s in steps:
        by_run.setdefault(s.extra.get("run_id", ""), []).append(s)
    for run_steps in by_run.values():
        if common.has_strict_alternation([s.signature for s in run_steps]):
            found.add("strict_alternation")
        by_tool: dict[str, set[str | None]] = {}
        counts: dict[str, int] = {}
        for s in run_steps:
            tool = _name_of(s)
            by_tool.setdefault(tool, set()).add(s.signature)
            counts[tool] = counts.get(tool, 0) + 1
        if any(len(sigs) >= 3 and counts[t] >= 5 and len(sigs) < counts[t]
               and t != "exec" for t, sigs in by_tool.items()):
            found.add("exact_arguments")
    if len(steps) >= limits.warning and any(
            s.extra.get("result_hash") is None and s.extra.get("outcome_kind") is None
            for s in steps):
        found.add("needs_outcomes")
    if common.calls_span_runs(steps):
        found.add("runs_reset_counts")
    if any(len(run_steps) > limits.history_size for run_steps in by_run.values()):
        found.add("window_bounds_counts")
    for s in steps:
        raw = s.tools[0] if s.tools else ""
        if raw and normalize_tool_name(raw) != raw:
            found.add("blank_tool_name" if not normalize_tool_name(raw) else "names_normalised")
        if s.extra.get("recorded_block") and str(s.extra.get("result_hash", "")).startswith(
                "error:"):
            found.add("recorded_stop_as_error")
        if raw.lower() in common.CHANNEL_TOOLS:
            found.add("channel_sends")
        if s.extra.get("unknown_tool"):
            found.add("unregistered_tools_checked")
    if max(limits.warning, limits.critical, limits.unknown_tool,
           limits.argument_churn) > limits.history_size + 1:
        found.add("threshold_above_window")
    if session is not None:
        for event in session.events:
            if isinstance(event, ToolResult) and event.is_error:
                if _NOT_FOUND.search(event.text):
                    found.add("unregistered_tools_checked")
                if common.MISSING_TOOL.search(event.text) and not _NOT_FOUND.search(event.text):
                    found.add("unknown_tool_wording")
            elif event.kind == "compaction":
                found.add("guard_arms_on_every_compaction")
    return [(key, LIMITATIONS_2026_9[key]) for key in LIMITATIONS_2026_9 if key in found]


# --------------------------------------------------------------------------- the contract


class OpenClaw9Explainer(common.ReleaseExplainer):
    """OpenClaw 2026.9.6's explanations behind :class:`~loopscope.engines.contract.Explainer`."""

    def explain_step(self, step: Step, replay: SessionReplay, config: Any) -> StepExplanation:
        return explain_step_2026_9(step, replay, config)

    def found_limitations(self, session: Any, replay: SessionReplay, config: Any,
                          warnings: Sequence[str]) -> list[tuple[str, str]]:
        return limitations_2026_9(session, replay, config, warnings)


EXPLAINER_2026_9: Final = OpenClaw9Explainer()


# --------------------------------------------------------------------------- guide examples


def guide_examples_2026_9() -> tuple[GuideExample, ...]:
    """Worked examples of what OpenClaw 2026.9 added (the Guide page), at OpenClaw's own
    fixed values."""
    from loopscope.engines.examples import tiny_session

    same = ("read", {"path": "config.toml"}, "timeout = 30")
    failing = [("exec", {"command": f"pytest tests/ --seed {1000 + i}"}, "FAILED: 3 tests",
                {"status": "failed", "exitCode": 1, "aggregated":
                 f"2026-09-0{1 + i % 9}T10:00:0{i % 10}Z attempt {i + 1}: FAILED: 3 tests "
                 f"in {100 + 7 * i}ms (pid {4000 + i})"}) for i in range(21)]
    churn = [("read", {"path": f"notes/{('todo', 'plan', 'draft')[i % 3]}.md"},
              "ERROR:ENOENT: no such file or directory") for i in range(11)]
    specs: list[tuple[str, str, str, str, str, list[Any]]] = [
        ("oc9-recovery", rules.TOOL_LOOP_RECOVERY_TERMINATED,
         "A second chance, then the end of the run",
         f"OpenClaw {VERSION} stops a call that returned the same result 20 times in a row, "
         "tells the agent not to repeat it and lets it try something else: a one-shot "
         "recovery. If the agent loops again in the same run, OpenClaw ends the run "
         "(tool_loop_recovery_terminated).",
         "The agent reads the same file 22 times and gets the same content: the 21st read is "
         "stopped with a second chance, the 22nd ends the run.",
         [[same] for _ in range(22)]),
        ("oc9-skipped", rules.TOOL_LOOP_BATCH_SKIPPED, "Calls skipped with their message",
         f"OpenClaw {VERSION} checks all the calls of one message together. When one of them "
         "is stopped for a loop, none of the others run either (tool_loop_batch_skipped), "
         "even a call that was fine on its own.",
         "After 20 identical reads the agent sends a message with a fresh `ls` and the same "
         "read again: the read is stopped, and the `ls` is skipped with it.",
         [*[[same] for _ in range(20)], [("ls", {"path": "."}, "a.txt b.txt"), same]]),
        ("oc9-churn", rules.ARGUMENT_CHURN, "Argument churn",
         f"New in {VERSION}: a tool that keeps failing the same way while the agent cycles "
         "through a few argument variants (each tried at least 3 times) earns a warning after "
         "10 such calls. The call still runs.",
         "The agent looks for three notes files that do not exist, over and over.",
         [[call] for call in churn]),
        ("oc9-exec-failure", rules.GENERIC_REPEAT, "A command that keeps failing",
         f"OpenClaw {VERSION} recognises a command that fails the same way again and again "
         "even when its arguments change: timestamps, retry numbers, durations and process "
         "ids in the output are ignored. Twenty such failures in a row stop the next call "
         "(with a second chance).",
         "The agent reruns a failing test suite 21 times, each time with a new random seed; "
         "only the timestamps, attempt numbers, timings and pids in the output change.",
         [[call] for call in failing]),
    ]
    return tuple(GuideExample(detector, title, text, story, tiny_session(key, turns), {},
                              VERSION)
                 for key, detector, title, text, story, turns in specs)
