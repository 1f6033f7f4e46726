"""Plain-language explanations for the ``openclaw`` engine.

* :func:`explain_step` — one sentence for a non-engineer, plus the upstream message and facts;
* :class:`OpenClawExplainer` — the engine contract's explainer (its levers order the generic
  advice search of ``loopscope.advice``);
* :func:`session_limitations` — the known upstream limitations (and replay approximations) that
  apply to a session, as ``(id, plain text)``.

Pure: no UI imports, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from loopscope.engines.base import SessionReplay, Step
from loopscope.engines.openclaw.shared import explain as common
from loopscope.engines.openclaw.v2026_6.config import OpenClawConfig
from loopscope.engines.openclaw.v2026_6.fast import prepare
from loopscope.model import AssistantTurn, Session, ToolResult

__all__ = [
    "LIMITATIONS",
    "StepExplanation",
    "explain_first_refusal",
    "explain_step",
    "plain_sentence",
    "session_limitations",
]


# --------------------------------------------------------------------------- one step


@dataclass(frozen=True, slots=True)
class StepExplanation:
    headline: str
    """One plain sentence."""
    details: tuple[str, ...] = ()
    """Further facts, one sentence each."""
    upstream_message: str | None = None
    """OpenClaw's exact message (what the model would have received on a block)."""
    levers: tuple[str, ...] = ()
    """The settings that govern this verdict, in plain words (not yet verified)."""

    @property
    def text(self) -> str:
        return " ".join((self.headline, *self.details))


def _tool(name: str) -> str:
    return f"`{name}`" if name else "(an unnamed tool)"


def _unknown_name(step: Step) -> str:
    key = step.extra.get("warning_key") or ""
    name = key.rsplit(":", 1)[-1] if key.startswith("unknown-tool:") else ""
    return name if name and name != "unknown" else (step.tools[0] if step.tools else "")


def plain_sentence(step: Step) -> str | None:
    """The plain sentence for a warn or refuse step; ``None`` on a pass step."""
    if step.verdict == "pass" or step.detector is None:
        return None
    tool = _tool(step.tools[0] if step.tools else "")
    n = step.count
    critical = step.verdict == "refuse"
    detector = step.detector
    if detector == "generic_repeat":
        if critical:
            return (f"The agent called {tool} with exactly the same input {n} times in a row and "
                    "got exactly the same answer each time.")
        return (f"The agent has called {tool} with the same input {n} times in this run "
                "(OpenClaw only logs this).")
    if detector == "known_poll_no_progress":
        return f"The agent kept checking on {tool} and the status hasn't changed for {n} checks."
    if detector == "ping_pong":
        other = _tool(step.extra.get("paired_tool") or "")
        return (f"The agent is going back and forth between {tool} and {other} ({n} calls) "
                "without getting anywhere.")
    if detector == "unknown_tool_repeat":
        return (f"The agent tried to use a tool that doesn't exist ({_tool(_unknown_name(step))})"
                f" {n} times in a row.")
    if detector == "global_circuit_breaker":
        return (f"The agent repeated the same call with the same result {n} times; this hard "
                "safety limit cannot be switched off per detector.")
    if detector == "post_compaction_guard":
        return ("After the conversation was compacted, the agent repeated the same call with the "
                f"same result {n} times, so the run was stopped.")
    return None


_LEVERS: Final[dict[tuple[str, str], tuple[str, ...]]] = {
    ("generic_repeat", "refuse"): (
        "raise criticalThreshold above the count (this may also raise the breaker)",
        "turn off detectors.genericRepeat (the global circuit breaker still applies)"),
    ("generic_repeat", "warn"): ("raise warningThreshold",),
    ("known_poll_no_progress", "refuse"): ("raise criticalThreshold",
                                           "turn off detectors.knownPollNoProgress"),
    ("known_poll_no_progress", "warn"): ("raise warningThreshold",
                                         "turn off detectors.knownPollNoProgress"),
    ("ping_pong", "refuse"): ("raise criticalThreshold above the count",
                              "turn off detectors.pingPong"),
    ("ping_pong", "warn"): ("raise warningThreshold above the count",
                            "turn off detectors.pingPong"),
    ("unknown_tool_repeat", "refuse"): ("raise unknownToolThreshold (there is no toggle)",),
    ("global_circuit_breaker", "refuse"): ("raise globalCircuitBreakerThreshold",
                                           "set enabled to false"),
    ("post_compaction_guard", "refuse"): (
        "raise postCompactionGuard.windowSize",
        "set enabled to false (this also turns off every detector)"),
}


def explain_step(step: Step, config: OpenClawConfig | None = None) -> StepExplanation:
    """The explanation of one step (any verdict)."""
    sentence = plain_sentence(step)
    extra = step.extra
    if sentence is None:
        details: list[str] = []
        if config is not None and not config.resolved.detection_on:
            details.append("Loop detection is switched off.")
        return StepExplanation(f"OpenClaw would have let this call of "
                               f"{_tool(step.tools[0] if step.tools else '')} through.",
                               tuple(details))
    facts: list[str] = []
    if step.verdict == "refuse":
        facts.append("OpenClaw would have blocked this call: the tool would not have run, and the "
                     "model would have received OpenClaw's message instead of the result.")
        if extra.get("guard_abort") and step.detector != "post_compaction_guard":
            facts.append("The post-compaction guard would also have stopped the run after this "
                         "call.")
    else:
        facts.append("OpenClaw only writes warnings to its log; the agent is not told to stop.")
        emitted = extra.get("warning_emitted")
        if emitted is False:
            facts.append("OpenClaw's log de-duplication would not have shown this warning "
                         "(it logs once per 10 repetitions, and never below 10).")
    if step.after_divergence:
        facts.append("This happened after the first refusal, so the recorded session would not "
                     "have reached this point under this setting.")
    if extra.get("recorded_block"):
        facts.append("The recorded session shows that OpenClaw actually blocked this call.")
    return StepExplanation(sentence, tuple(facts), extra.get("message"),
                           _LEVERS.get((step.detector or "", step.verdict), ()))


def explain_first_refusal(session: Any, result: SessionReplay,
                          config: OpenClawConfig | None = None) -> str | None:
    """One or two sentences about the session's first refusal, or ``None``.

    ``session`` is unused; the signature matches the other engines' (``loopscope.explain``)."""
    del session
    for step in result.steps:
        if step.verdict == "refuse":
            e = explain_step(step, config)
            return " ".join((e.headline, *e.details[:1]))
    return None


# --------------------------------------------------------------------------- levers
# The settings that can avoid each detector's refusal; ``loopscope.advice`` verifies a change by
# re-running the session.


_INT_LEVERS: Final[dict[str, tuple[str, ...]]] = {
    "generic_repeat": ("criticalThreshold",),
    "known_poll_no_progress": ("criticalThreshold",),
    "ping_pong": ("criticalThreshold",),
    "unknown_tool_repeat": ("unknownToolThreshold",),
    "global_circuit_breaker": ("globalCircuitBreakerThreshold",),
    "post_compaction_guard": ("postCompactionGuard.windowSize",),
}
_BOOL_LEVERS: Final[dict[str, tuple[str, ...]]] = {
    "generic_repeat": ("detectors.genericRepeat",),
    "known_poll_no_progress": ("detectors.knownPollNoProgress",),
    "ping_pong": ("detectors.pingPong",),
    "global_circuit_breaker": ("enabled",),
    "post_compaction_guard": ("enabled",),
}


# --------------------------------------------------------------------------- limitations
# Upstream behaviours modelled faithfully, and where the replay approximates, shown where they
# apply to a session.

LIMITATIONS: Final[dict[str, str]] = {
    "breaker_per_pattern": "The global circuit breaker counts one exact call (tool and "
    "arguments) at a time, not the session: an agent alternating two calls never reaches it; "
    "only ping-pong can stop it.",
    "sticky_block": "In OpenClaw, a blocked call is retried against the same history, so it is "
    "blocked again at the same count and the breaker is never reached; loopscope keeps counting "
    "after the first refusal (those steps are shaded as after the point of divergence).",
    "warnings_only_logged": "Warnings are only written to OpenClaw's log: the agent is never "
    "told to stop until the call is blocked.",
    "warnings_below_10": "Warnings with a count below 10 are computed but never logged "
    "(OpenClaw logs a warning once per 10 repetitions).",
    "warning_masks_critical": "A ping-pong or polling warning is checked before the repeat "
    "detector's block, so it hid a block that would otherwise have happened.",
    "exact_arguments": "Calls are compared by their exact arguments: near-identical retries "
    "(a changed flag, './a' versus 'a') count as different calls.",
    "changing_outputs": "A call whose answer changes every time only ever warns: blocking "
    "needs identical outcomes.",
    "volatile_output": "Outputs with timestamps or counters defeat the no-progress check; only "
    "exec metadata and message-send ids are ignored.",
    "changing_poll_silent": "A polling call whose output keeps changing is never reported.",
    "strict_alternation": "Ping-pong needs a strict two-call alternation: cycles of three or "
    "more calls are never caught.",
    "ping_pong_without_evidence": "A ping-pong warning needs no evidence of no progress: the "
    "answers changed, yet it warned.",
    "needs_outcomes": "Calls without a recorded result count only towards warnings: every "
    "block needs recorded outcomes.",
    "runs_reset_counts": "Each user message starts a new run, and counts start again at 0.",
    "window_bounds_counts": "Every count is bounded by the history window (historySize), "
    "shared by every run of the session.",
    "threshold_above_window": "A threshold above the history window can never fire.",
    "clamping": "OpenClaw moved some thresholds so that warning < critical < breaker.",
    "merge_misorder": "The global and agent blocks are each valid, but merged they are "
    "misordered; OpenClaw clamps them at run time.",
    **common.SHARED_LIMITATIONS,
    "parallel_calls": "Replay approximation: calls made in one message are evaluated one after "
    "another.",
    "names_not_normalised": "Replay approximation: tool names are used as recorded; OpenClaw "
    "lowercases them and maps bash to exec.",
    "stream_guard_not_modelled": "Not modelled: OpenClaw's unknown-tool stream guard, which "
    "rewrites the assistant message after repeated calls of a missing tool.",
    "recorded_generation": "This session was recorded by a different OpenClaw generation; "
    "loopscope explains it with the configurable generation (2026.6.11).",
}

_STREAM_GUARD = "because it isn't available. I need to stop retrying it"
_GENERATION_MARKERS: Final = (
    ("stuck no-progress loop", "v0 (early 2026)"),
    ("OpenClaw stopped this run because", "v3 (later 2026)"),
    ("identical no-progress outcomes", None),
)


def session_limitations(
    result: SessionReplay,
    config: OpenClawConfig,
    session: Session | None = None,
    warnings: Sequence[str] = (),
) -> list[tuple[str, str]]:
    """The limitations that apply to this replay, as ``(id, plain text)``, in :data:`LIMITATIONS` order.

    ``session`` enables the checks that need the transcript; ``warnings`` (from
    ``resolve_config``) enables the merge check.
    """
    steps = result.steps
    found: set[str] = set()
    r = config.resolved
    by_run: dict[str, list[Step]] = {}
    for step in steps:
        by_run.setdefault(step.extra.get("run_id", ""), []).append(step)
    warned = [s for s in steps if s.verdict == "warn"]
    refused = [s for s in steps if s.verdict == "refuse"]

    if any(s.detector == "ping_pong" for s in steps):
        found.add("breaker_per_pattern")
    if refused:
        first = refused[0]
        if any(s.after_divergence and s.signature == first.signature for s in steps):
            found.add("sticky_block")
    if warned:
        found.add("warnings_only_logged")
    if any(s.extra.get("warning_emitted") is False and (s.count or 0) < 10 for s in warned):
        found.add("warnings_below_10")
    for s in warned:
        if s.detector == "generic_repeat" and (s.count or 0) >= r.critical_threshold:
            found.add("changing_outputs")
    if any(s.detector == "known_poll_no_progress" for s in warned) or any(
            s.detector == "ping_pong" for s in warned):
        prepared = prepare(session) if session is not None else None
        if prepared is not None:
            counters = prepared.counters(r.history_size)
            for n, s in enumerate(steps):
                if s.verdict != "warn":
                    continue
                if (s.detector == "ping_pong" and not prepared.poll[n] and r.generic_repeat_on
                        and counters.no_progress[n] >= r.critical_threshold):
                    found.add("warning_masks_critical")
                if s.detector == "ping_pong" and not counters.ping_pong_evidence[n]:
                    found.add("ping_pong_without_evidence")
    for run_steps in by_run.values():
        by_tool: dict[str, list[Step]] = {}
        for s in run_steps:
            by_tool.setdefault(s.tools[0] if s.tools else "", []).append(s)
        for tool_steps in by_tool.values():
            signatures = {s.signature for s in tool_steps}
            if len(tool_steps) >= 5 and len(signatures) >= 3 and all(
                    s.verdict == "pass" for s in tool_steps) and len(signatures) < len(tool_steps):
                found.add("exact_arguments")
        by_signature: dict[str | None, list[Step]] = {}
        for s in run_steps:
            by_signature.setdefault(s.signature, []).append(s)
        for same in by_signature.values():
            hashes = [s.extra.get("result_hash") for s in same if s.extra.get("result_hash")]
            if len(same) >= r.warning_threshold and len(hashes) == len(same) and len(
                    set(hashes)) == len(hashes) and len(hashes) > 2:
                found.add("volatile_output")
            tool = same[0].tools[0] if same[0].tools else ""
            if (tool in ("process", "command_status") and len(same) >= r.warning_threshold
                    and len(set(hashes)) > 1 and all(s.verdict == "pass" for s in same)):
                found.add("changing_poll_silent")
        if common.has_strict_alternation([s.signature for s in run_steps]):
            found.add("strict_alternation")
    if any(s.extra.get("result_hash") is None and not s.extra.get("recorded_block")
           for s in steps) and len(steps) >= r.warning_threshold:
        found.add("needs_outcomes")
    if common.calls_span_runs(steps):
        found.add("runs_reset_counts")
    if any(s.count is not None and s.count >= r.history_size for s in warned + refused) or any(
            len(run_steps) > r.history_size for run_steps in by_run.values()):
        found.add("window_bounds_counts")
    if (r.warning_threshold > r.history_size or r.critical_threshold > r.history_size + 1
            or r.unknown_tool_threshold > r.history_size):
        found.add("threshold_above_window")
    if any("raised to" in note for note in config.notes):
        found.add("clamping")
    if any("raised to" in w for w in warnings) and not any("would refuse" in w for w in warnings):
        found.add("merge_misorder")
    if session is not None:
        _transcript_limitations(session, found)
    return [(key, LIMITATIONS[key]) for key in LIMITATIONS if key in found]


def _transcript_limitations(session: Session, found: set[str]) -> None:
    from loopscope.engines.openclaw.shared.hashing import extract_unknown_tool_name

    for event in session.events:
        if isinstance(event, ToolResult):
            text = event.text
            if (event.is_error and extract_unknown_tool_name(text) is None
                    and common.MISSING_TOOL.search(text)):
                found.add("unknown_tool_wording")
            details = event.details
            if (not event.is_error and details.get("status") == "error"
                    and isinstance(details.get("error"), str)
                    and common.MISSING_TOOL.search(details["error"])):
                found.add("unknown_tool_wording")
            if any(marker in text for marker, _ in _GENERATION_MARKERS[:2]):
                found.add("recorded_generation")
        elif isinstance(event, AssistantTurn):
            if len(event.tool_calls) > 1:
                found.add("parallel_calls")
            if _STREAM_GUARD in event.text:
                found.add("stream_guard_not_modelled")
            for call in event.tool_calls:
                name = call.name
                if name.lower() in common.CHANNEL_TOOLS:
                    found.add("channel_sends")
                if name != name.strip().lower() or name in ("bash", "apply-patch"):
                    found.add("names_not_normalised")
        elif event.kind == "compaction":
            found.add("guard_arms_on_every_compaction")


# --------------------------------------------------------------------------- the contract


def refusal_consequence(step: Step) -> str | None:
    """Whether a refusal stops the agent (None for a pass or a warning): a refused call is
    blocked and the run goes on, unless the post-compaction guard ends the run."""
    if step.verdict != "refuse":
        return None
    if step.detector == "post_compaction_guard":
        return ("This refusal stops the agent: OpenClaw's post-compaction guard ends the run "
                "after this call.")
    if step.extra.get("guard_abort"):
        return ("This refusal stops the agent: OpenClaw blocks this call, and its "
                "post-compaction guard then ends the run.")
    return ("In OpenClaw a refusal blocks this one call, not the agent: the tool does not "
            "run, the model reads OpenClaw's message instead of its result, and the run goes "
            "on (a warning only goes to OpenClaw's log).")


class OpenClawExplainer(common.ReleaseExplainer):
    """OpenClaw's explanations behind :class:`loopscope.engines.contract.Explainer`."""

    def explain_step(self, step: Step, replay: SessionReplay, config: Any) -> Any:
        from loopscope.engines.contract import StepExplanation as Explained

        e = explain_step(step, config)
        upstream: tuple[tuple[str, str], ...] = ()
        if e.upstream_message:
            title = ("OpenClaw's message to the model" if step.verdict == "refuse"
                     else "OpenClaw's log line")
            upstream = ((title, e.upstream_message),)
        action = e.details[0] if e.details and step.verdict != "pass" else None
        facts = e.details[1:] if action is not None else e.details
        levers = tuple(key for key in (*_INT_LEVERS.get(step.detector or "", ()),
                                       *_BOOL_LEVERS.get(step.detector or "", ())))
        if step.verdict == "warn":
            levers = ("warningThreshold", *levers)
        return Explained(e.headline, facts, None, action, (), upstream, levers,
                         refusal_consequence(step))

    def found_limitations(self, session: Any, replay: SessionReplay, config: Any,
                          warnings: Sequence[str]) -> list[tuple[str, str]]:
        return session_limitations(replay, config, session, warnings)


EXPLAINER = OpenClawExplainer()


def guide_examples() -> tuple[Any, ...]:
    """One worked example per detector (the Guide page)."""
    from loopscope.engines.contract import GuideExample
    from loopscope.engines.examples import tiny_session

    short = {"warningThreshold": 3, "criticalThreshold": 5, "globalCircuitBreakerThreshold": 7}
    specs: list[tuple[str, str, str, str, str, list[Any], dict[str, Any]]] = [
        ("oc-generic", "generic_repeat", "Repeated call",
         "OpenClaw warns when the same call (same tool, same input) keeps appearing in its "
         "recent history, and blocks it when it also returns the same result many times in a "
         "row. Here the levels are warn 3 / block 5 so the example stays short (defaults "
         "10 / 20).",
         "The agent reads the same file six times and gets the same content.",
         [[("read", {"path": "config.toml"}, "timeout = 30")] for _ in range(6)], short),
        ("oc-poll", "known_poll_no_progress", "Polling without progress",
         "A known status poll (process poll/log, command_status) whose answer does not change "
         "is counted on its own: it warns and then blocks at the same levels.",
         "The agent polls a background process that prints nothing new.",
         [[("process", {"action": "poll", "sessionId": "s1"}, "still running")] for _ in range(6)],
         short),
        ("oc-pingpong", "ping_pong", "Back and forth",
         "An exact A, B, A, B … alternation between two calls is counted as one pattern. It "
         "warns on the alternation alone and blocks when both sides keep returning the same "
         "results.",
         "The agent alternates between reading a file and listing a folder, getting the same "
         "answers each time.",
         [[("read", {"path": "a.txt"}, "alpha")] if i % 2 == 0 else [("ls", {"path": "."}, "a.txt b.txt")]
          for i in range(6)], short),
        ("oc-unknown", "unknown_tool_repeat", "Calling a tool that does not exist",
         "When the same tool keeps failing with 'unknown tool' / 'not found', OpenClaw blocks it "
         "after a number of tries (10 by default; 3 here). There is no switch for this detector.",
         "The agent keeps calling a tool that is not installed.",
         [[("himalaya", {"folder": "INBOX"}, "ERROR: Tool himalaya not found")] for _ in range(4)],
         {"unknownToolThreshold": 3}),
        ("oc-breaker", "global_circuit_breaker", "The circuit breaker",
         "A hard limit on the same call returning the same result, which applies even when the "
         "detector switches are off. Here the repeated-call detector is off and the hard stop "
         "is 4.",
         "The agent runs the same command five times with the same output.",
         [[("exec", {"command": "make"}, "make: *** [all] Error 1")] for _ in range(5)],
         {"detectors.genericRepeat": False, "warningThreshold": 2, "criticalThreshold": 3,
          "globalCircuitBreakerThreshold": 4}),
        ("oc-compaction", "post_compaction_guard", "Looping on after a compaction",
         "After the conversation is compacted, OpenClaw watches the next few calls (3 by "
         "default). If they are all the same call with the same result, the run is stopped.",
         "The conversation is compacted; then the agent repeats one command three times.",
         [[("exec", {"command": "cat status"}, "pending")], ("compaction", "Earlier work summarised."),
          [("exec", {"command": "cat status"}, "pending")],
          [("exec", {"command": "cat status"}, "pending")],
          [("exec", {"command": "cat status"}, "pending")]], {}),
    ]
    return tuple(GuideExample(detector, title, text, story, tiny_session(key, turns), values)
                 for key, detector, title, text, story, turns, values in specs)
