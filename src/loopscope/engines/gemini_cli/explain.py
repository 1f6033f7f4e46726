"""Plain-language explanations for the ``gemini-cli`` engine.

* :meth:`GeminiExplainer.explain_step` — why a step passed or was refused, what Gemini CLI would
  have done (the recovery message it sends after a first loop, or stopping the request after a
  second one), the limit that decided, and a structural hint: which 1–5-call cycle repeated and
  where it began, or which stretch of text kept coming back and how often it repeats;
* :meth:`GeminiExplainer.limitations` — the known limitations that apply to a session (always
  including that the LLM loop check is not replayed);
* :func:`guide_examples` — worked examples for the Guide.

Pure: no UI imports, no I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from loopscope.engines.base import SessionReplay, Step
from loopscope.engines.contract import GuideExample, Limitation, StepExplanation
from loopscope.engines.gemini_cli.config import (
    ALIAS,
    DEFAULTS,
    ENABLED,
    LLM_CHECK_AFTER_TURNS,
    LLM_NOTE,
    GeminiConfig,
)
from loopscope.engines.gemini_cli.events import split_pieces
from loopscope.engines.gemini_cli.upstream import CONTENT_LOOP, MAX_CYCLE, TOOL_CALL_LOOP
from loopscope.model import AssistantTurn, Session, UserMessage, escape_for_display, markdown_code
from loopscope.words import plural

__all__ = [
    "EXPLAINER",
    "HALT_MESSAGE",
    "LIMITATIONS",
    "ContentHint",
    "CycleHint",
    "GeminiExplainer",
    "content_hint",
    "cycle_hint",
    "feedback_text",
    "guide_examples",
]

HALT_MESSAGE: Final = "Loop detected, stopping execution"
"""What a non-interactive Gemini CLI run reports when it stops a prompt (error code
``LOOP_DETECTED``; ``dist/src/agent/event-translator.js``)."""


def feedback_text(detail: str | None) -> str:
    """The message Gemini CLI sends the model after the first loop in a prompt
    (``_recoverFromLoop`` in ``dist/src/core/client.js``)."""
    return (f"System: Potential loop detected. Details: "
            f"{detail or 'Repetitive patterns identified'}. Please take a step back and confirm "
            "you're making forward progress. If not, take a step back, analyze your previous "
            "actions and rethink how you're approaching the problem. Avoid repeating the same "
            "tool calls or responses without new results.")


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _code(text: str, limit: int) -> str:
    """Recorded text as a Markdown code span it cannot break out of (the dashboard renders
    explanations as Markdown); the plain form when nothing needs guarding."""
    shown = escape_for_display(text, limit)
    if shown and "`" not in shown and shown.strip(" ") == shown:
        return f"`{shown}`"
    return markdown_code(text, limit)


def _tool(name: str) -> str:
    return _code(name, 80)


def _quote(text: str, limit: int = 160) -> str:
    return _code(text, limit)


def _config(config: Any) -> GeminiConfig:
    return config if isinstance(config, GeminiConfig) else GeminiConfig()


# --------------------------------------------------------------------------- structural hints


@dataclass(frozen=True, slots=True)
class CycleHint:
    """The repeating pattern of tool calls that ends at a step."""

    length: int
    """Calls in the cycle (1 = the same call again and again)."""
    tools: tuple[str, ...]
    """The cycle's tool names, in order."""
    repeats: int
    """Back-to-back repetitions of the cycle, ending at the step."""
    start_position: int
    """The step where this run of repetitions began."""
    start_turn: int
    start_call: int


def cycle_hint(steps: Sequence[Step], position: int, threshold: int | None = None
               ) -> CycleHint | None:
    """The 1–5-call cycle repeated back to back up to tool-call step ``position`` (within its
    prompt). With ``threshold``: the shortest cycle that reaches it, as Gemini CLI checks them
    (1 first); without: the cycle with the most repetitions (``None`` when nothing repeats)."""
    step = steps[position]
    if step.call is None:
        return None
    prompt = step.extra.get("prompt")
    chain = [i for i in range(position + 1)
             if steps[i].call is not None and steps[i].extra.get("prompt") == prompt]
    keys = [steps[i].signature for i in chain]
    n = len(keys)
    best: CycleHint | None = None
    for k in range(1, MAX_CYCLE + 1):
        if n < k:
            break
        start = n - k  # extend the periodic stretch backwards as far as it goes
        while start > 0 and keys[start - 1] == keys[start - 1 + k]:
            start -= 1
        repeats = (n - start) // k
        if threshold is not None:
            if repeats < threshold:
                continue
        elif repeats < 2 or (best is not None and repeats <= best.repeats):
            continue
        first = chain[n - repeats * k]  # where the first whole repetition began
        hint = CycleHint(k, tuple(steps[i].tools[0] if steps[i].tools else ""
                                  for i in chain[n - k:]),
                         repeats, first, steps[first].turn, steps[first].call or 0)
        if threshold is not None:
            return hint
        best = hint
    return best


@dataclass(frozen=True, slots=True)
class ContentHint:
    """The text window that fired a content loop."""

    window: str
    """The repeated window (``CONTENT_CHUNK_SIZE`` code units)."""
    occurrences: int
    """How many of its occurrences were compared (``CONTENT_LOOP_THRESHOLD``)."""
    average_distance: float
    periods: tuple[tuple[str, int], ...]
    """The distinct stretches between consecutive occurrences, most frequent first, with how
    often each occurred."""


def content_hint(replay: SessionReplay, position: int, config: GeminiConfig
                 ) -> ContentHint | None:
    """Where the text loop of content step ``position`` came from, if the prepared session
    behind ``replay`` is still at hand."""
    from loopscope.engines.gemini_cli.fast import recall
    from loopscope.jsonrules.node_json import from_units

    prepared = recall(replay)
    if prepared is None:
        return None
    hit = next((h for h in prepared.content_run(*config.content_constants).detections
                if h.position == position), None)
    if hit is None:
        return None
    text = prepared.stretches[hit.stretch].text
    recent = hit.recent
    start = recent[-1]
    window = from_units(text[start:start + config.content_chunk_size])
    gaps = Counter(from_units(text[recent[i]:recent[i + 1]]) for i in range(len(recent) - 1))
    average = (recent[-1] - recent[0]) / max(1, len(recent) - 1)
    return ContentHint(window, len(recent), average, tuple(gaps.most_common()))


# --------------------------------------------------------------------------- one step


def _limit_sentence(config: GeminiConfig, detector: str) -> str:
    if detector == TOOL_CALL_LOOP:
        r = config.tool_call_loop_threshold
        text = (f"Gemini CLI treats the same call {r} times in a row, or a cycle of 2 to 5 "
                f"calls repeated {r} times in a row, within one prompt, as a loop.")
        if r != DEFAULTS["TOOL_CALL_LOOP_THRESHOLD"]:
            return text + (f" TOOL_CALL_LOOP_THRESHOLD={r} is hypothetical: Gemini CLI always "
                           "uses 5.")
        return text + (" This number is fixed in Gemini CLI (TOOL_CALL_LOOP_THRESHOLD); only "
                       "turning loop detection off avoids it.")
    t, c = config.content_loop_threshold, config.content_chunk_size
    text = (f"Gemini CLI treats the same {c}-character stretch of text seen {t} times, on "
            f"average at most {5 * c} characters apart and with at most {t // 2} different "
            "gaps between them, as a loop.")
    changed = [k for k in ("CONTENT_LOOP_THRESHOLD", "CONTENT_CHUNK_SIZE", "MAX_HISTORY_LENGTH")
               if config.hypothetical().get(k) is not None]
    if changed:
        return text + (f" {', '.join(changed)} changed here is hypothetical: Gemini CLI always "
                       "uses 10 repeats of 50 characters.")
    return text + (" These numbers are fixed in Gemini CLI (CONTENT_LOOP_THRESHOLD, "
                   "CONTENT_CHUNK_SIZE); only turning loop detection off avoids them.")


def _cycle_sentence(hint: CycleHint) -> str:
    if hint.length == 1:
        return (f"It was the {_ordinal(hint.repeats)} identical call of {_tool(hint.tools[0])} "
                "in a row (same tool, exactly the same arguments)")
    names = ", ".join(_tool(t) for t in hint.tools)
    return (f"It completed the {_ordinal(hint.repeats)} repetition in a row of a "
            f"{hint.length}-call cycle ({names})")


def _explain_tool_call(step: Step, replay: SessionReplay, config: GeminiConfig,
                       position: int) -> StepExplanation:
    name = step.tools[0] if step.tools else ""
    threshold = config.tool_call_loop_threshold
    if step.verdict == "pass":
        facts: list[str] = []
        if not config.enabled:
            facts.append(f"Loop detection is off ({ALIAS}: true), so Gemini CLI checks "
                         "nothing.")
        else:
            hint = cycle_hint(replay.steps, position)
            if hint is not None:
                if hint.length == 1:
                    facts.append(f"It is the {_ordinal(hint.repeats)} identical call in a row; "
                                 f"Gemini CLI stops the {_ordinal(threshold)}.")
                else:
                    facts.append(f"It continues a {hint.length}-call cycle repeated "
                                 f"{hint.repeats} times in a row so far; Gemini CLI stops at "
                                 f"{threshold}.")
        return _passed(f"Gemini CLI would have let this call of {_tool(name)} through.", facts,
                       replay.steps, position, config)
    hint = cycle_hint(replay.steps, position, threshold)
    facts = []
    if hint is not None:
        sentence = _cycle_sentence(hint)
        facts.append(f"{sentence}, a pattern that began at call {hint.start_call + 1} "
                     f"(turn {hint.start_turn + 1}).")  # counted from 1, as people count
    facts.append("Gemini CLI compares calls by tool name and exact arguments only; it never "
                 "looks at their results.")
    return _refusal(step, config, TOOL_CALL_LOOP, f"would not have run this call of {_tool(name)}",
                    "the agent was repeating the same tool calls", facts)


def _explain_content(step: Step, replay: SessionReplay, config: GeminiConfig,
                     position: int) -> StepExplanation:
    pieces = step.extra.get("pieces", 0)
    if step.verdict == "pass":
        if not pieces:
            return StepExplanation("This reply has no text, so Gemini CLI's text check had "
                                   "nothing to look at.")
        facts: list[str] = []
        if not config.enabled:
            facts.append(f"Loop detection is off ({ALIAS}: true), so Gemini CLI checks nothing.")
        return _passed("Gemini CLI would have shown this reply: its text did not keep "
                       "repeating.", facts, replay.steps, position, config)
    found: list[str] = []
    hint = content_hint(replay, position, config)
    if hint is not None:
        found.append(f"The same {config.content_chunk_size}-character stretch "
                     f"{_quote(hint.window)} came back {hint.occurrences} times, on average "
                     f"{hint.average_distance:.0f} characters apart.")
        period, times = hint.periods[0]
        if len(hint.periods) == 1:
            found.append(f"The text repeats every {len(period)} characters: {_quote(period)}.")
        else:
            lengths = ", ".join(str(len(p)) for p, _ in hint.periods)
            found.append(f"The text repeats with {len(hint.periods)} different gaps ({lengths} "
                         f"characters); the most common one ({times} times) is "
                         f"{_quote(period)}.")
    elif step.extra.get("detail"):
        found.append("Gemini CLI quoted the text around the repeat: "
                     f"{_quote(step.extra['detail'], 240)}")
    detections = step.extra.get("detections") or 0
    if detections > 1:
        found.append(f"The rest of this reply fired {plural(detections - 1, 'more time')}; Gemini CLI "
                     "would never have streamed it.")
    return _refusal(step, config, CONTENT_LOOP, "would not have shown this text",
                    "the model kept writing the same thing over and over", found)


def _refusal(step: Step, config: GeminiConfig, detector: str, what: str, reason: str,
             facts: list[str]) -> StepExplanation:
    count = step.count or 1
    upstream: tuple[tuple[str, str], ...]
    detail = step.extra.get("detail")
    if count == 1:
        headline = f"Gemini CLI {what}: {reason}."
        action = ("Gemini CLI would have abandoned the model's reply at this point and told the "
                  "model the message below, then asked it again in the same prompt.")
        upstream = (("Gemini CLI's message to the model", feedback_text(detail)),)
    else:
        headline = ("Gemini CLI would have stopped this request (second loop in the same "
                    f"prompt): {reason}.")
        action = ("The first loop in this prompt was answered with a warning and a retry; this "
                  "second one stops the request. A non-interactive run reports "
                  f"“{HALT_MESSAGE}” (error code LOOP_DETECTED); the interactive app lets the "
                  "user keep detection on (the request stays stopped) or turn it off for the "
                  "session.")
        upstream = (("What a non-interactive Gemini CLI run reports", HALT_MESSAGE),)
        if count > 2:
            facts = [*facts, f"This is loop number {count} in the prompt: Gemini CLI would "
                     "already have stopped at the second."]
    if step.after_divergence:
        facts = [*facts, "This comes after the session's first loop, so the recorded session "
                 "would not have reached this point unchanged under Gemini CLI."]
    consequence = (
        "Gemini CLI's first loop in a prompt is a second chance, not a stop: it drops the "
        "reply, tells the model it was looping and asks again, and only a second loop in the "
        "same prompt stops the request." if count == 1 else
        "This refusal stops the agent: it is the second loop in the same prompt, and Gemini CLI "
        "stops the request.")
    return StepExplanation(headline, tuple(facts), _limit_sentence(config, detector), action,
                           (Limitation("llm_check", LLM_NOTE),), upstream, (ENABLED,),
                           consequence)


def _turn_in_prompt(steps: Sequence[Step], position: int) -> int:
    """Which model turn of its prompt step ``position`` belongs to (1-based)."""
    prompt = steps[position].extra.get("prompt")
    turn = steps[position].turn
    return len({s.turn for s in steps[:position + 1]
                if s.extra.get("prompt") == prompt and s.turn <= turn})


def _passed(headline: str, facts: list[str], steps: Sequence[Step], position: int,
            config: GeminiConfig) -> StepExplanation:
    """A pass step's explanation; from the 30th model turn of a prompt it says that the LLM
    check (not replayed) could have stopped it."""
    limitations: tuple[Limitation, ...] = ()
    if config.enabled:
        n = _turn_in_prompt(steps, position)
        if n >= LLM_CHECK_AFTER_TURNS:
            limitations = (Limitation("llm_check_due_here", LIMITATIONS["llm_check_due_here"]
                                      .format(turn=_ordinal(n))),)
    return StepExplanation(headline, tuple(facts), limitations=limitations)


# --------------------------------------------------------------------------- limitations

LIMITATIONS: Final[Mapping[str, str]] = {
    "llm_check_due_here": "This is the {turn} model turn of its prompt: from the 30th, Gemini CLI "
    "also asks a model whether the conversation is looping. That check is not replayed, so a "
    "real run could have stopped here.",
    "llm_check_due": "A prompt in this session runs to {turns} model turns: a real Gemini CLI "
    "run would have started its LLM loop check at the 30th, and it might have stopped the "
    "request earlier.",
    "disabled": "Loop detection is off (model.disableLoopDetection: true): Gemini CLI checks "
    "nothing, so every step passes.",
    "hypothetical": "This run uses hypothetical values ({names}) that are not Gemini CLI "
    "settings: it shows what a modified Gemini CLI would do.",
    "shadow_after_stop": "After the first loop Gemini CLI would have asked the model again (or "
    "stopped); loopscope keeps replaying the recorded session to show what it would have said "
    "next (those steps are marked after divergence).",
    "recovery_then_halt": "The first loop in a prompt gets a warning message and a retry; any "
    "further loop in the same prompt stops the request.",
    "results_ignored": "Calls are compared by tool name and exact arguments only: results are "
    "never looked at, so a status check whose answer keeps changing still counts as a loop, "
    "and a near-identical retry (one argument changed) does not.",
    "content_fires_again": "After a text loop the check stays on the repeated text: the next "
    "text in the same prompt usually fires again (and stops the request) unless a tool call, "
    "a list, heading, table, quote or code block comes first.",
    "stream_cut": "Gemini CLI's stream boundaries are not recorded: loopscope sends each reply "
    "line by line, which is how lists, headings and code blocks reach the check in a real "
    "stream.",
    "dash_lists": "Lines starting with '- ' are not recognised as list items by Gemini CLI's "
    "pattern (only '*', '+' and '1.' are), so they do not restart the text check.",
    "open_code_block": "An unclosed code block (an odd number of ``` fences) switches the text "
    "check off until another fence, even across prompts.",
    "own_messages_as_prompts": "This session records messages Gemini CLI sends by itself within "
    "a prompt (its loop-recovery message or \"Please continue.\"). Gemini CLI keeps counting "
    "across them; loopscope cannot see prompt ids and starts a new prompt at every user "
    "message, so its counts restart there.",
}

_OWN_MESSAGES: Final = ("System: Potential loop detected.", "Please continue.")


def _limitation(key: str, **values: Any) -> Limitation:
    return Limitation(key, LIMITATIONS[key].format(**values) if values else LIMITATIONS[key])


def session_limitations(session: Session | None, replay: SessionReplay, config: GeminiConfig
                        ) -> tuple[Limitation, ...]:
    steps = replay.steps
    # (That the LLM check is never replayed is among the engine's notes and in every refusal's
    # explanation; here only when a prompt is long enough for it to have run.)
    out: list[Limitation] = []
    turns_per_prompt = Counter(prompt for prompt, _ in {(s.extra.get("prompt"), s.turn)
                                                        for s in steps})
    longest = max(turns_per_prompt.values(), default=0)
    if longest >= LLM_CHECK_AFTER_TURNS:
        out.append(_limitation("llm_check_due", turns=longest))
    if not config.enabled:
        out.append(_limitation("disabled"))
    if config.hypothetical():
        out.append(_limitation("hypothetical", names=", ".join(
            f"{k}={v}" for k, v in config.hypothetical().items())))
    refused = [s for s in steps if s.verdict == "refuse"]
    if refused and any(s.after_divergence for s in steps):
        out.append(_limitation("shadow_after_stop"))
    if any((s.count or 0) >= 2 for s in refused):
        out.append(_limitation("recovery_then_halt"))
    if any(s.detector == TOOL_CALL_LOOP for s in refused):
        out.append(_limitation("results_ignored"))
    content = [s for s in refused if s.detector == CONTENT_LOOP]
    if content:
        out.append(_limitation("stream_cut"))
        if any((s.count or 0) >= 2 or (s.extra.get("detections") or 0) > 1 for s in content):
            out.append(_limitation("content_fires_again"))
    if session is not None and config.enabled:
        dash, open_block, own = _transcript_facts(session)
        if dash and content:
            out.append(_limitation("dash_lists"))
        if open_block:
            out.append(_limitation("open_code_block"))
        if own:
            out.append(_limitation("own_messages_as_prompts"))
    return tuple(out)


def _transcript_facts(session: Session) -> tuple[bool, bool, bool]:
    """(a reply has '- ' list lines, a code block stays open past its prompt or to the end,
    a user message is one Gemini CLI sends by itself)."""
    dash = False
    open_block = False
    in_block = False
    own = False
    for event in session.events:
        if isinstance(event, UserMessage):
            open_block = open_block or in_block
            own = own or event.text.strip().startswith(_OWN_MESSAGES)
        elif isinstance(event, AssistantTurn) and event.text:
            for piece in split_pieces(event.text):
                if piece.lstrip(" \t").startswith("- "):
                    dash = True
                if piece.count("```") % 2 == 1:
                    in_block = not in_block
    return dash, open_block or in_block, own


# --------------------------------------------------------------------------- the contract


class GeminiExplainer:
    """Gemini CLI's explanations behind :class:`loopscope.engines.contract.Explainer`."""

    def explain_step(self, step: Step, replay: SessionReplay, config: Any) -> StepExplanation:
        cfg = _config(config)
        position = next((i for i, s in enumerate(replay.steps) if s is step), None)
        if position is None:
            position = replay.steps.index(step)
        if step.call is not None:
            return _explain_tool_call(step, replay, cfg, position)
        return _explain_content(step, replay, cfg, position)

    def limitations(self, session: Session | None, replay: SessionReplay, config: Any,
                    warnings: Sequence[str] = ()) -> tuple[Limitation, ...]:
        del warnings
        return session_limitations(session, replay, _config(config))

    def extra_changes(self, step: Step, replay: SessionReplay, config: Any,
                      goal: str) -> Sequence[Mapping[str, Any]]:
        del step, replay, config, goal
        return ()  # Gemini CLI has one switch: nothing beyond "one setting moved"


EXPLAINER: Final = GeminiExplainer()


# --------------------------------------------------------------------------- guide


def guide_examples() -> tuple[GuideExample, ...]:
    """One worked example per detector, plus a recovery followed by a stop."""
    from loopscope.engines.examples import tiny_session

    read = ("read_file", {"absolute_path": "/repo/src/build.py"}, "def build():\n    ...")
    chant = "I will now fix the failing build step. " * 12
    return (
        GuideExample(
            TOOL_CALL_LOOP, "The same tool call again and again",
            "Within one prompt, Gemini CLI stops the 5th identical call in a row (same tool, "
            "exactly the same arguments), or the call that completes the 5th repetition of a "
            "cycle of 2 to 5 calls. The call is not run; Gemini CLI tells the model it seems to "
            "be looping and asks again.",
            "The agent reads the same file five times; the 5th read (call 4, turn 4) is "
            "stopped.",
            tiny_session("gemini-tool-loop", [[read] for _ in range(5)])),
        GuideExample(
            CONTENT_LOOP, "Text that keeps repeating",
            "Gemini CLI slides a 50-character window over the reply text of a prompt. When the "
            "same window comes back 10 times, close together, the reply is a loop: Gemini CLI "
            "stops showing it and asks the model to rethink.",
            "The agent's reply repeats one sentence twelve times; the reply (turn 0) is "
            "stopped.",
            tiny_session("gemini-content-loop", [chant])),
        GuideExample(
            TOOL_CALL_LOOP, "A warning first, then a stop",
            "The first loop in a prompt is answered with a warning message and a retry; if the "
            "agent loops again in the same prompt, Gemini CLI stops the request.",
            "The agent reads the same file six times: the 5th read (call 4) gets the warning, "
            "the 6th (call 5) stops the request.",
            tiny_session("gemini-recovery-halt", [[read] for _ in range(6)])),
    )
