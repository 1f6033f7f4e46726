"""Plain-language explanations for the ``openhands`` engine.

* :class:`OpenHandsExplainer` — the contract's explainer: one sentence per verdict a support
  person can read, what OpenHands would have done, the limit that decided (with the 20-event
  window in plain words), OpenHands' exact nudge text, and the known limitations that apply;
* :func:`session_limitations` — those limitations for a whole session;
* :func:`guide_examples` — one tiny worked example per detector (the Guide).

Pure: no UI imports, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from loopscope.engines.base import SessionReplay, Step
from loopscope.engines.contract import GuideExample, Limitation, StepExplanation
from loopscope.engines.openhands.config import (
    ACTION_ERROR,
    ACTION_OBSERVATION,
    ALTERNATING_PATTERN,
    DEFAULT_SCAN,
    ENABLED,
    MONOLOGUE,
    OpenHandsConfig,
)
from loopscope.engines.openhands.events import (
    ActionEvent,
    AgentErrorEvent,
    argument_text,
    turn_events,
)
from loopscope.model import AssistantTurn, Session, UserMessage

__all__ = [
    "EXPLAINER",
    "GUIDE",
    "LIMITATIONS",
    "OpenHandsExplainer",
    "explain_step",
    "guide_examples",
    "session_limitations",
]

LIMITATIONS: Final[dict[str, str]] = {
    "window": "OpenHands only reads the newest 20 events after the latest user message "
    "(a call and its result are two events): a loop spread over more than that, or "
    "interrupted by a user message, is not seen.",
    "user_resets": "A user message starts the detector afresh: only what the agent did after "
    "the latest user message counts.",
    "prose_checks": "Replay difference: OpenHands finishes the run when the agent replies with "
    "text and no tool call, and checks again only if the run goes on; loopscope checks after "
    "every reply, to show where a continued run would stop.",
    "shadow_mode": "Replay difference: OpenHands would have stopped the run at the first "
    "refusal; loopscope keeps replaying the recording and marks what follows as after the "
    "divergence.",
    "mcp_tools": "Replay difference: recordings carry no tool schemas, so every call is "
    "replayed as an MCP tool whose arguments are taken as parsed; OpenHands' own tools "
    "validate arguments against their schema and map some tool names (such as terminal "
    "fallbacks).",
    "reasoning_counts": "The agent's reply text is part of its first call: the same call made "
    "with different reasoning text counts as a different call.",
    "errors_by_text": "Errors are compared by their text only: two different tools failing "
    "with the same message count as the same result.",
    "unpaired": "Calls and results are collected separately, not matched by call id: a call "
    "without a recorded result shifts which result is compared with which call.",
    "malformed": "A call whose arguments are not valid JSON is not run: OpenHands records it "
    "as a failed call with an error, and the same broken call repeated counts as the same "
    "failing call.",
    "same_error_stops_as_repeat": "Identical calls failing with the same error text also "
    "count as identical call + result pairs, which OpenHands checks first: they stop at the "
    "action_observation limit (4 by default), one after the nudge.",
    "unreachable": "A threshold above what fits in the 20 events OpenHands reads can never "
    "fire (action_observation or alternating_pattern above 10, action_error above 10, "
    "monologue above 20).",
    "hypothetical": "This run uses a hypothetical event window (not an OpenHands setting).",
}


def _tool(name: str) -> str:
    return f"`{name}`" if name else "(an unnamed tool)"


def _tools(step: Step) -> str:
    names = list(dict.fromkeys(step.tools))
    if not names:
        return "a reply without tool calls"
    return ", ".join(_tool(n) for n in names)


def _window_words(config: OpenHandsConfig) -> str:
    return f"the last {config.max_events} events after the latest user message"


def _previous_tools(step: Step, replay: SessionReplay) -> tuple[str, ...]:
    """The tools of the step before ``step`` that made calls (for an alternation)."""
    steps = replay.steps
    position = next((k for k, s in enumerate(steps) if s is step or s == step), None)
    if position is None:
        return ()
    for earlier in reversed(steps[:position]):
        if earlier.tools:
            return earlier.tools
    return ()


def explain_step(step: Step, replay: SessionReplay, config: OpenHandsConfig) -> StepExplanation:
    """Why ``step`` got its verdict (any verdict)."""
    facts: list[str] = []
    limitations: list[Limitation] = []
    window = _window_words(config)
    if step.after_divergence:
        facts.append("OpenHands would already have stopped the run before this point, so the "
                     "recorded session would not have reached it under these settings.")
        limitations.append(Limitation("shadow_mode", LIMITATIONS["shadow_mode"]))
    if config.hypothetical:
        limitations.append(Limitation("hypothetical", config.notes[0]))
    if step.verdict == "pass":
        if not config.enabled:
            return StepExplanation(
                "OpenHands would not have checked anything here: stuck detection is off.",
                tuple(facts), None, None, tuple(limitations), (), (ENABLED,))
        return StepExplanation(
            "OpenHands would have let the agent go on after this turn: none of its four "
            f"stuck patterns holds in {window}.",
            tuple(facts), None, None, tuple(limitations), (),
            (ACTION_OBSERVATION, ACTION_ERROR, MONOLOGUE, ALTERNATING_PATTERN))

    count = step.count or 0
    stop = ("OpenHands would have stopped the run here (its status becomes STUCK): the agent "
            "would not have taken another step until someone ran the conversation again.")
    upstream: tuple[tuple[str, str], ...] = ()
    which: str
    headline: str
    levers: tuple[str, ...]
    if step.detector == ACTION_ERROR and step.verdict == "warn":
        message = step.extra.get("message") or ""
        headline = (f"The agent called {_tools(step)} with the same arguments "
                    f"{config.action_error} times in a row and got an error each time.")
        action = f"OpenHands would have told the agent: “{message}”"
        which = (f"OpenHands nudges the agent once when the same call has failed exactly "
                 f"{config.action_error} times in a row (action_error = {config.action_error}) "
                 f"in {window}, and stops the run if it fails once more. The run goes on.")
        upstream = (("OpenHands' message to the agent", message),)
        levers = (ACTION_ERROR, ENABLED)
        return StepExplanation(headline, tuple(facts), which, action, tuple(limitations),
                               upstream, levers)
    if step.detector == ACTION_OBSERVATION:
        headline = (f"The agent made the same call ({_tools(step)}, same arguments and "
                    f"reasoning) {count} times in a row and got the same result each time.")
        which = (f"OpenHands stops a run after {config.action_observation} identical call + "
                 f"result pairs in a row (action_observation = {config.action_observation}), "
                 f"counted in {window}.")
        levers = (ACTION_OBSERVATION, ENABLED)
    elif step.detector == ACTION_ERROR:
        headline = (f"The agent called {_tools(step)} with the same arguments {count} times "
                    "in a row and it failed each time, even after being told to change "
                    "approach.")
        which = (f"OpenHands nudges the agent when the same call has failed "
                 f"{config.action_error} times in a row and stops the run when it fails more "
                 f"often than that (action_error = {config.action_error}), counted in "
                 f"{window}.")
        levers = (ACTION_ERROR, ACTION_OBSERVATION, ENABLED)
    elif step.detector == MONOLOGUE:
        headline = (f"The agent replied {count} times in a row without calling a tool or "
                    "hearing from the user.")
        which = (f"OpenHands stops a run after {config.monologue} agent messages in a row "
                 f"(monologue = {config.monologue}), counted in {window}; the messages need "
                 "not be the same.")
        limitations.append(Limitation("prose_checks", LIMITATIONS["prose_checks"]))
        levers = (MONOLOGUE, ENABLED)
    else:
        other = [t for t in _previous_tools(step, replay) if t not in step.tools]
        between = (f"between {_tools(step)} and {', '.join(_tool(t) for t in dict.fromkeys(other))}"
                   if other else f"with {_tools(step)}")
        headline = (f"The agent went back and forth {between}: its last {count} calls and "
                    f"their {count} results repeat every second step.")
        which = (f"OpenHands stops a run when the last {config.alternating_pattern} calls and "
                 f"the last {config.alternating_pattern} results repeat with period 2 "
                 f"(alternating_pattern = {config.alternating_pattern}), counted in {window}.")
        levers = (ALTERNATING_PATTERN, ENABLED)
    if step.call is None and step.detector != MONOLOGUE:
        limitations.append(Limitation("prose_checks", LIMITATIONS["prose_checks"]))
        facts.append("This reply made no call: the stuck pattern still holds in the events "
                     "OpenHands reads.")
    return StepExplanation(headline, tuple(facts), which, stop, tuple(limitations), upstream,
                           levers, CONSEQUENCE)


CONSEQUENCE = ("This refusal stops the agent: OpenHands ends the run (its status becomes "
               "STUCK) until someone runs the conversation again; only a call that keeps "
               "failing gets one nudge first.")
"""Whether an OpenHands refusal stops the agent: it does (``STUCK``); the action-error nudge
before it is a warning."""


# --------------------------------------------------------------------------- limitations


def session_limitations(replay: SessionReplay, config: OpenHandsConfig,
                        session: Session | None = None) -> list[tuple[str, str]]:
    """The known limitations that apply to this replay, as ``(id, text)``, in table order."""
    found: set[str] = set()
    steps = replay.steps
    flagged = [s for s in steps if s.verdict != "pass"]
    if config.enabled and any(s.extra.get("scan", 0) >= config.max_events for s in steps):
        found.add("window")
    if flagged:
        found.add("mcp_tools")
    if any(s.verdict != "pass" and s.call is None for s in steps):
        found.add("prose_checks")
    if replay.first_refusal is not None and any(s.after_divergence for s in steps):
        found.add("shadow_mode")
    warned = any(s.verdict == "warn" for s in steps)
    if warned and any(s.detector == ACTION_OBSERVATION and s.verdict == "refuse"
                      for s in steps):
        found.add("same_error_stops_as_repeat")
    if (config.action_observation > config.max_events // 2
            or config.alternating_pattern > config.max_events // 2
            or config.action_error > config.max_events // 2
            or config.monologue > config.max_events):
        found.add("unreachable")
    if config.hypothetical:
        found.add("hypothetical")
    if session is not None:
        _transcript_limitations(session, found)
    texts = dict(LIMITATIONS)
    if config.hypothetical:
        texts["hypothetical"] = config.notes[0]
    if config.max_events != DEFAULT_SCAN:
        texts["window"] = texts["window"].replace("newest 20", f"newest {config.max_events}")
        texts["unreachable"] = (f"A threshold above what fits in the {config.max_events} events "
                                "read can never fire.")
    return [(key, texts[key]) for key in LIMITATIONS if key in found]


def _transcript_limitations(session: Session, found: set[str]) -> None:
    events = session.events
    turns_after_user = False
    previous: tuple[str, str, str] | None = None
    error_tools: dict[str, set[str]] = {}
    for event in events:
        if isinstance(event, UserMessage):
            if turns_after_user:
                found.add("user_resets")
        elif isinstance(event, AssistantTurn):
            turns_after_user = True
            written = turn_events(session, event)
            for e in written:
                if isinstance(e, AgentErrorEvent):
                    error_tools.setdefault(e.error, set()).add(e.tool_name)
            # A call writes an action; a call that did not parse also an error; then results.
            malformed = sum(1 for e in written if isinstance(e, ActionEvent) and e.action is None)
            results = len(written) - len(event.tool_calls) - malformed
            if malformed:
                found.add("malformed")
            if event.tool_calls and results < len(event.tool_calls) - malformed:
                found.add("unpaired")
            for position, call in enumerate(event.tool_calls):
                text = argument_text(call)
                if position == 0:
                    key = (call.name, text, event.text)
                    if (previous is not None and previous[:2] == key[:2]
                            and previous[2] != key[2]):
                        found.add("reasoning_counts")
                    previous = key
    if any(len(tools) > 1 for tools in error_tools.values()):
        found.add("errors_by_text")


# --------------------------------------------------------------------------- the contract


class OpenHandsExplainer:
    """OpenHands' explanations behind :class:`loopscope.engines.contract.Explainer`."""

    def explain_step(self, step: Step, replay: SessionReplay, config: Any) -> StepExplanation:
        return explain_step(step, replay, config)

    def limitations(self, session: Session | None, replay: SessionReplay, config: Any,
                    warnings: Sequence[str] = ()) -> tuple[Limitation, ...]:
        del warnings
        return tuple(Limitation(i, t) for i, t in session_limitations(replay, config, session))

    def extra_changes(self, step: Step, replay: SessionReplay, config: Any,
                      goal: Literal["pass", "refuse"]) -> Sequence[Mapping[str, Any]]:
        del step, replay, config, goal
        return ()


EXPLAINER: Final = OpenHandsExplainer()


# --------------------------------------------------------------------------- the Guide

GUIDE: Final[tuple[tuple[str, str, str, str, str, tuple[Any, ...], dict[str, Any],
                         tuple[tuple[int, str, str], ...]], ...]] = (
    ("oh-repeat", ACTION_OBSERVATION, "The same call with the same result",
     "OpenHands compares the newest calls (tool, arguments and the reasoning text) and their "
     "results. Four identical call + result pairs in a row stop the run.",
     "The agent reads the same file four times and gets the same content: turns 1-3 pass, "
     "turn 4 stops the run.",
     tuple([("read", {"path": "a"}, "same")] for _ in range(4)), {},
     ((3, "refuse", ACTION_OBSERVATION),)),
    ("oh-errors", ACTION_ERROR, "The same call failing again and again",
     "When the same call has failed three times in a row, OpenHands tells the agent once that "
     "repeating it will not work. A fourth failure stops the run.",
     "The agent runs the same command five times and it fails with a different message "
     "each time: turn 3 gets the nudge, turn 4 stops the run.",
     tuple([("exec", {"cmd": "x"}, f"ERROR: err {k}")] for k in range(5)), {},
     ((2, "warn", ACTION_ERROR), (3, "refuse", ACTION_ERROR))),
    ("oh-monologue", MONOLOGUE, "Talking without acting",
     "Replies without a tool call are agent messages. Three in a row, with no user message "
     "in between, stop the run; they need not be the same.",
     "The agent answers five times in a row without calling a tool: turn 3 stops the run.",
     ("Let me think about this.", "I will look at the build next.",
      "The build seems to fail.", "I am still thinking.", "Maybe the test is wrong."), {},
     ((2, "refuse", MONOLOGUE),)),
    ("oh-alternating", ALTERNATING_PATTERN, "Back and forth between two calls",
     "OpenHands also looks at the last six calls and six results: if they repeat every "
     "second step (A, B, A, B, …) the run stops.",
     "The agent alternates between reading a file and listing a folder, getting the same "
     "answers each time: the sixth call stops the run.",
     tuple([("read", {"path": "a.txt"}, "alpha")] if k % 2 == 0
           else [("ls", {"path": "."}, "a.txt b.txt")] for k in range(6)), {},
     ((5, "refuse", ALTERNATING_PATTERN),)),
)
"""``(key, detector, title, text, story, turns, values, expected)``; ``expected`` lists
``(turn, verdict, detector)`` of the first flagged steps (the tests replay every example)."""


def guide_examples() -> tuple[GuideExample, ...]:
    """One worked example per detector (the Guide page)."""
    from loopscope.engines.examples import tiny_session

    return tuple(GuideExample(detector, title, text, story, tiny_session(key, list(turns)),
                              values)
                 for key, detector, title, text, story, turns, values, _ in GUIDE)

