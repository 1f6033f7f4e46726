"""Plain-language explanations for the gglib engine.

* :func:`explain_step`: what a step means, in sentences, with the governing setting, the text the
  user would have seen upstream (refuse and note wording) and the limitations that apply.
* :class:`GglibExplainer`: the engine contract's explainer; its ``extra_changes`` add the
  multi-setting candidates the generic advice search (``loopscope.advice``) verifies.
* :func:`session_limitations`: the known upstream limitations (``L1`` … ``L16``) that apply to
  one session.
* :func:`upstream_refusal_body` / :func:`upstream_note`: upstream's exact texts.

Everything is pure: no UI imports, no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from loopscope.engines.base import SessionReplay, Step
from loopscope.engines.gglib.config import CLAMP_MAX, GglibConfig
from loopscope.engines.gglib.upstream import (
    COSTLY_OBSERVATION_TOOLS,
    MAX_REPR_DEPTH,
    batch_signature,
    domain_calls,
    is_costly_name,
)
from loopscope.words import plural

__all__ = [
    "NOTE_MARKER",
    "NOTE_SIGNATURE_LIMIT",
    "StepExplanation",
    "explain_first_refusal",
    "explain_step",
    "session_limitations",
    "upstream_note",
    "upstream_refusal_body",
]

NOTE_MARKER = "[gglib loop guard]"
NOTE_SIGNATURE_LIMIT = 240
_ADVICE = (
    "Aborting before another identical turn. Start a new conversation or change approach; to "
    "warn the model instead of refusing, run `gglib config settings set --loop-guard-mode note`."
)
_NOTE_TAIL = (
    "Repeating it will not produce a different answer. Change approach, or tell the user what "
    "is blocking you."
)


# --------------------------------------------------------------------------------------------
# Upstream texts: what a person saw, reproduced exactly for explanations


def upstream_refusal_body(step: Step) -> str | None:
    """The HTTP 400 body of ``refuse`` mode for a refused step (field order message, type, code)."""
    if step.verdict != "refuse":
        return None
    if step.detector == "loop":
        message = (
            "Agentic loop detected: this conversation repeats the same tool-call batch with "
            f"nothing in between (signature: {step.signature}). {_ADVICE}"
        )
        code = "loop_detected"
    else:
        message = (
            "Stagnation detected: the assistant has produced the same response "
            f"{step.count} times (limit {step.extra.get('max_steps')}). {_ADVICE}"
        )
        code = "stagnation_detected"
    body = {"error": {"message": message, "type": code, "code": code}}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def _cut_signature(signature: str) -> str:
    if len(signature) > NOTE_SIGNATURE_LIMIT:
        return signature[:NOTE_SIGNATURE_LIMIT] + "…"
    return signature


def upstream_note(step: Step) -> str | None:
    """The text ``note`` mode (gglib's default) appends to the request; None on a pass."""
    if step.verdict != "refuse":
        return None
    if step.detector == "loop":
        return (
            f"{NOTE_MARKER} This conversation has repeated the tool-call batch "
            f"`{_cut_signature(step.signature or '')}` with nothing in between, and received the "
            f"same result each time. {_NOTE_TAIL}"
        )
    return (
        f"{NOTE_MARKER} This conversation has produced the same response {step.count} times, "
        f"against a limit of {step.extra.get('max_steps')}. {_NOTE_TAIL}"
    )


# --------------------------------------------------------------------------------------------
# Explaining one step


@dataclass(frozen=True, slots=True)
class StepExplanation:
    headline: str
    """One plain sentence."""
    details: tuple[str, ...] = ()
    """Further facts, one sentence each."""
    governing_keys: tuple[str, ...] = ()
    limitations: tuple[str, ...] = ()
    """Ids of the known limitations this step shows (``L4``, ``L5``, …; :data:`LIMITATION_TEXTS`)."""
    upstream_refusal: str | None = None
    upstream_note: str | None = None

    @property
    def text(self) -> str:
        return " ".join((self.headline, *self.details))


def _tools_phrase(tools: Sequence[str]) -> str:
    names = [t if t else "(unnamed)" for t in tools]
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " and " + names[-1]


def _times(n: int) -> str:
    return "once" if n == 1 else ("twice" if n == 2 else f"{n} times")


def _run_before(steps: Sequence[Step], index: int) -> list[Step]:
    """The earlier occurrences of the run that ``steps[index]`` belongs to, oldest first."""
    step = steps[index]
    total = step.extra.get("total")
    if not isinstance(total, int):
        return []
    out: list[Step] = []
    want = total - 1
    j = index - 1
    while want >= 1 and j >= 0:
        s = steps[j]
        j -= 1
        if s.extra.get("kind") != "batch":
            continue
        if s.signature != step.signature or s.extra.get("total") != want:
            break
        out.append(s)
        want -= 1
    out.reverse()
    return out


def _compared_strikes(history: list[Step], count: int) -> list[Step]:
    """The earlier strikes of a refused step whose outcome compared them with a predecessor.

    The refused step's ``count`` includes itself; the oldest of the earlier ``count - 1`` strikes
    started the count (first of the run, or its answer changed), so only the rest compared.
    """
    if count <= 2:
        return []
    return history[-(count - 1) :][1:]


def _find(steps: Sequence[Step], step: Step) -> int:
    for i, s in enumerate(steps):
        if s is step or (s.turn == step.turn and s == step):
            return i
    raise ValueError("step is not in steps")


def explain_step(
    step: Step, steps: Sequence[Step] | None = None, config: GglibConfig | None = None
) -> StepExplanation:
    """Explain ``step`` in plain words. ``steps`` (the whole replay) adds the run's history."""
    if step.verdict != "refuse":
        return _explain_pass(step, config)
    index = _find(steps, step) if steps is not None else None
    history = _run_before(steps, index) if steps is not None and index is not None else []
    details: list[str] = []
    limitations: list[str] = []
    keys: tuple[str, ...]
    x = step.extra
    if step.detector == "stagnation":
        headline = (
            f"The assistant wrote the exact same reply {step.count} times within its last "
            f"{x.get('window')} prose replies; the limit is {x.get('max_steps')}."
        )
        details.append(
            "Only replies without tool calls count: text sent alongside tool calls is never "
            "compared (L10)."
        )
        limitations.append("L10")
        keys = ("max_stagnation_steps",)
    else:
        tools = _tools_phrase(step.tools)
        total = x.get("total")
        count = step.count or 0
        cls = x.get("batch_class")
        tier_off = config is not None and config.max_observation_steps is None
        if x.get("rule") == "strike":
            compared = _compared_strikes(history, count)
            if not compared or any(
                s.extra.get("outcome") != "answer_repeated" or not s.extra.get("answers_joined")
                for s in compared
            ):
                compare = "gglib could not compare the results"
            else:
                compare = "it got the same result each time"
            headline = (
                f"The same set of tool calls ({tools}) ran {_times(total or 0)} in a row, and "
                f"gglib counted {count} of those runs without a new result ({compare})."
            )
            if cls == "mutating":
                details.append(
                    "Tool calls that change things may repeat without a new result at most "
                    f"{x.get('effective_max')} times."
                )
                keys = ("max_repeated_batch_steps",)
            else:
                details.append(
                    "These are read-only tools; they may repeat without a new result at most "
                    f"{x.get('effective_max')} times."
                )
                keys = ("max_repeated_batch_steps",) if tier_off else ("max_observation_steps",)
                if compared and all(s.extra.get("outcome") == "answer_repeated" for s in compared):
                    details.append(
                        "This is a quiet poll: the output did not change, so waiting longer "
                        "was refused as a loop (L2)."
                    )
                    limitations.append("L2")
            if x.get("answers_joined") and not x.get("identical") and not x.get("not_evaluated"):
                details.append(
                    "gglib decides before it sees the output, so it could not take into account "
                    "that this time the recorded answer differs (L4)."
                )
                limitations.append("L4")
        else:
            headline = (
                f"The results of {tools} kept changing, but the same calls ran {total} times in a "
                f"row, and calls of this kind may run at most {x.get('ceiling')} times in a row "
                "whatever the results."
            )
            if cls == "costly_observation":
                details.append("Navigating, clicking and fetching pages cost something elsewhere.")
            if tier_off:
                details.append("The read-only allowance is switched off.")
            details.append(
                "gglib's own message cannot tell this apart from a repeat with identical "
                "results: it still says \"received the same result each time\", which is not "
                "true here (L5)."
            )
            limitations.append("L5")
            keys = ("max_repeated_batch_steps", "max_observation_steps")
    if step.after_divergence:
        details.append(
            "This comes after the first refusal, so the recorded session would not have got "
            "this far: gglib would already have stopped (or flagged) every request from the "
            "first refusal on (L9)."
        )
        limitations.append("L9")
    details.append(
        "gglib's note may never reach the model: some chat templates drop it, and a request "
        "over the model's context budget is turned away instead (L16)."
    )
    limitations.append("L16")
    return StepExplanation(
        headline,
        tuple(details),
        keys,
        tuple(limitations),
        upstream_refusal_body(step),
        upstream_note(step),
    )


def _explain_pass(step: Step, config: GglibConfig | None) -> StepExplanation:
    x = step.extra
    details: list[str] = []
    limitations: list[str] = []
    if step.after_divergence:
        details.append("This comes after the first refusal, so it would not have happened as "
                       "recorded (L9).")
        limitations.append("L9")
    if x.get("kind") == "prose":
        if step.count is None:
            return StepExplanation(
                "An empty reply: the repeated-reply check ignores it.",
                tuple(details),
                limitations=tuple(limitations),
            )
        return StepExplanation(
            f"This reply appears {_times(step.count)} within the last {x.get('window')} "
            f"replies without tool calls; the limit is {x.get('max_steps')}.",
            tuple(details),
            ("max_stagnation_steps",),
            tuple(limitations),
        )
    headline = (
        f"Occurrence {x.get('total')} of these tool calls in a row; {step.count} of "
        f"{x.get('effective_max')} allowed without a new result."
    )
    if x.get("ceiling") is None:
        details.append("Read-only tools: no limit while the results keep changing.")
    else:
        details.append(f"At most {x.get('ceiling')} times in a row, whatever the results.")
    if x.get("rescued"):
        details.append(
            "Rescued: counting repeats alone would have refused it, but an earlier result in the "
            "run changed (L3)."
        )
        limitations.append("L3")
    if x.get("identical") and step.count == 1:
        details.append(
            "The same calls got the same results as their previous occurrence, with other work "
            "in between: a cycle, which gglib never refuses (L1)."
        )
        limitations.append("L1")
    return StepExplanation(
        headline, tuple(details), ("max_repeated_batch_steps", "max_observation_steps"),
        tuple(limitations),
    )


def explain_first_refusal(
    session: Any, result: SessionReplay, config: GglibConfig | None = None
) -> str | None:
    """One or two sentences on the first refusal of ``result``; None when it was not refused."""
    del session
    for step in result.steps:
        if step.verdict == "refuse":
            e = explain_step(step, result.steps, config)
            return " ".join((e.headline, *e.details[:1]))
    return None


# --------------------------------------------------------------------------------------------
# Known limitations on a session: upstream behaviours loopscope reproduces faithfully, shown
# where they affect a session

_CAMEL_COSTLY = re.compile(r"(?:[a-z0-9](?:Navigate|Click|Fetch))|(?:^(?:navigate|click|fetch)[A-Z])")
_READISH = {"get", "count", "report", "definition", "query", "house", "list", "read", "search", "to"}


def _max_depth(value: Any) -> int:
    stack = [(value, 0)]
    best = 0
    while stack:
        v, d = stack.pop()
        best = max(best, d)
        if best > MAX_REPR_DEPTH:
            return best
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v)
    return best


def _segments(name: str) -> list[str]:
    return [s for s in re.split(r"[_.\-]", name.lower()) if s]


def session_limitations(
    steps: Sequence[Step],
    config: GglibConfig,
    messages: Sequence[Any] | None = None,
    warnings: Sequence[str] = (),
) -> list[tuple[str, str]]:
    """The known limitations that apply to this session, as ``(id, plain text)``.

    ``messages`` (the chat view) enables the checks that need the raw input (L8, L11, L15);
    ``warnings`` (from ``resolve_config``) enables L14.
    """
    out: list[tuple[str, str]] = []
    batches = [s for s in steps if s.extra.get("kind") == "batch"]
    first = next((s for s in steps if s.verdict == "refuse"), None)

    cycles = [s for s in batches if s.extra.get("identical") and s.count == 1]
    if cycles:
        sigs = {s.signature for s in cycles}
        out.append((
            "L1",
            f"{plural(len(cycles), 'time')} the agent repeated an earlier set of tool calls with "
            f"the same results after other work in between ({plural(len(sigs), 'different set')}"
            "). gglib never "
            "refuses such cycles: the count starts again whenever different calls run.",
        ))
    for i, s in enumerate(steps):
        if s.detector == "loop" and s.extra.get("rule") == "strike" and s.extra.get("batch_class") != "mutating":
            compared = _compared_strikes(_run_before(steps, i), s.count or 0)
            if compared and all(h.extra.get("outcome") == "answer_repeated" for h in compared):
                out.append((
                    "L2",
                    f"Turn {s.turn + 1}: a quiet poll of read-only tools was refused; the output "
                    "did not change, which may just mean nothing happened yet.",
                ))
                break
    rescued = [s for s in batches if s.extra.get("rescued")]
    if rescued:
        out.append((
            "L3",
            f"{plural(len(rescued), 'step')} passed only because a result changed (rescued). Any "
            "clock, "
            "timing or counter in the output counts as a change, so calls that change things "
            "may repeat up to the ceiling and read-only ones without limit.",
        ))
    for s in steps:
        x = s.extra
        if s.detector == "loop" and x.get("rule") == "strike" and x.get("answers_joined") and not x.get("identical") and not x.get("not_evaluated"):
            out.append((
                "L4",
                f"Turn {s.turn + 1}: gglib decided before it saw the output, so the refused "
                "turn's own recorded answer, which differs, did not count.",
            ))
            break
    ceiling = [s for s in steps if s.extra.get("rule") == "ceiling"]
    if ceiling:
        out.append((
            "L5",
            f"{plural(len(ceiling), 'ceiling refusal')}: gglib reports them exactly like repeats with "
            "identical results, and its message wrongly says \"received the same result each "
            "time\".",
        ))
    names = list(dict.fromkeys(t for s in batches for t in s.tools))
    camel = [n for n in names if _CAMEL_COSTLY.search(n) and not is_costly_name(n)]
    readish = [
        n for n in names
        if is_costly_name(n) and _READISH & set(_segments(n))
    ]
    if camel or readish:
        parts = []
        if camel:
            parts.append(f"camelCase names escape the costly check: {', '.join(camel)}")
        if readish:
            parts.append(f"read-only names are treated as costly: {', '.join(readish)}")
        out.append(("L6", "; ".join(parts) + f" (costly words: {', '.join(COSTLY_OBSERVATION_TOOLS)})."))
    short = [p for p in config.observation_tools if len(p) < 4]
    if short:
        shown = ", ".join(repr(p) for p in short)
        out.append((
            "L7",
            f"The read-only tool patterns include empty or short patterns ({shown}): an empty "
            "pattern makes every tool read-only, a short one captures unrelated tools.",
        ))
    if first is not None and steps and steps[-1] is not first:
        later = sum(1 for s in steps if s.after_divergence)
        out.append((
            "L9",
            f"After the first refusal (turn {first.turn + 1}) gglib would stop (or flag) every "
            f"later request of this session; the {plural(later, 'later step')} show what it would have "
            "said, had the session gone on as recorded.",
        ))
    if any(s.detector == "stagnation" for s in steps):
        out.append((
            "L10",
            "Stagnation only compares replies without tool calls; narration sent with tool calls "
            "is invisible to it.",
        ))
    unjoined = [s for s in batches if not s.extra.get("answers_joined")]
    if unjoined:
        out.append((
            "L12",
            f"{len(unjoined)} of the {plural(len(batches), 'step')} could not be matched with their "
            "results; those repeats are only counted and can never be rescued.",
        ))
    odd_names = [n for n in names if "|" in n or ":" in n]
    if odd_names:
        out.append((
            "L13",
            f"Tool names containing '|' or ':' can be mistaken for other sets of calls: "
            f"{', '.join(odd_names)}.",
        ))
    clamp = [w for w in warnings if "outside" in w]
    if clamp:
        out.append((
            "L14",
            "A setting was clamped to 1..100 as gglib's agent settings do; gglib itself "
            "would have used the raw stored value.",
        ))
    if messages is not None:
        out.extend(_message_limitations(messages))
    order = {f"L{i}": i for i in range(1, 17)}
    out.sort(key=lambda item: order.get(item[0], 99))
    return out


def _message_limitations(messages: Sequence[Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    deep = 0
    runs_broken = 0
    last_sig: str | None = None
    broke = False
    non_object = 0
    for m in messages:
        if not isinstance(m, dict):
            non_object += 1
            broke = True
            continue
        role = m.get("role")
        if role == "tool":
            continue
        if role != "assistant":
            broke = True
            continue
        calls = domain_calls(m.get("tool_calls"))
        if not calls:
            continue
        if any(_max_depth(c.arguments) >= MAX_REPR_DEPTH for c in calls):
            deep += 1
        sig = batch_signature(calls)
        if broke and sig == last_sig:
            runs_broken += 1
        last_sig = sig
        broke = False
    if deep:
        out.append((
            "L8",
            f"{plural(deep, 'turn has', 'turns have')} arguments nested 16 or more levels deep; "
            "everything from "
            "that depth on is ignored, so different calls may count as repeats.",
        ))
    if runs_broken:
        out.append((
            "L11",
            f"{plural(runs_broken, 'time')} a user (or other) turn broke a run of the same tool "
            "calls; "
            "each such turn resets both detectors.",
        ))
    if non_object:
        out.append((
            "L15",
            f"{plural(non_object, 'message entry', 'message entries')} "
            f"{'is' if non_object == 1 else 'are'} not objects; gglib's own guard would let "
            "the rest of such a session through, loopscope still evaluates it.",
        ))
    return out


# --------------------------------------------------------------------------------------------
# The engine contract's explainer


class GglibExplainer:
    """gglib's explanations behind :class:`loopscope.engines.contract.Explainer`."""

    def explain_step(self, step: Step, replay: SessionReplay, config: Any) -> Any:
        from loopscope.engines.contract import Limitation
        from loopscope.engines.contract import StepExplanation as Explained

        e = explain_step(step, replay.steps, config)
        upstream: list[tuple[str, str]] = []
        if e.upstream_refusal:
            upstream.append(("gglib's error, when it is set to refuse (HTTP 400)",
                             e.upstream_refusal))
        if e.upstream_note:
            upstream.append(("The note gglib adds by default", e.upstream_note))
        return Explained(
            e.headline, e.details, None, None,
            tuple(Limitation(i, LIMITATION_TEXTS.get(i, i)) for i in e.limitations),
            tuple(upstream), e.governing_keys,
            CONSEQUENCE if step.verdict == "refuse" else None)

    def limitations(self, session: Any, replay: SessionReplay, config: Any,
                    warnings: Sequence[str] = ()) -> tuple[Any, ...]:
        from loopscope.engines.contract import Limitation

        messages = session.chat_view() if session is not None else None
        return tuple(Limitation(i, t) for i, t in
                     session_limitations(replay.steps, config, messages, warnings))

    def extra_changes(self, step: Step, replay: SessionReplay, config: Any,
                      goal: str) -> Sequence[dict[str, Any]]:
        """Two keys at once (the strike allowance and the ceiling), and treating the batch's
        tools as read-only."""
        if step.detector != "loop" or goal != "pass":
            return ()
        out: list[dict[str, Any]] = []
        if config.max_observation_steps is not None:
            count, total = step.count or 0, step.extra.get("total") or 0
            out.append({"max_repeated_batch_steps": min(max(config.max_repeated_batch_steps + 1, count), CLAMP_MAX),
                        "max_observation_steps": min(max(config.max_observation_steps, total), CLAMP_MAX)})
        if step.extra.get("batch_class") == "mutating":
            missing = [t for t in dict.fromkeys(step.tools) if t]
            if missing and len(missing) == len(set(step.tools)):
                out.append({"observation_tools": (*config.observation_tools, *missing)})
        return out


CONSEQUENCE = (
    "In gglib's default mode this refusal is a note the model reads, not a stop: the request "
    "goes on with a note asking the model to change approach (only gglib's refuse mode would "
    "stop it with an error)."
)
"""What a refusal does to the agent as gglib is deployed by default (``note`` mode): the
request is forwarded with the note appended, because gglib's default is to advise the
model rather than fail its request; ``refuse`` mode answers HTTP 400 instead."""

LIMITATION_TEXTS: dict[str, str] = {
    "L1": "Cycles escape: different calls in between start the count again, so A, B, A, B … "
          "is never refused.",
    "L2": "A quiet poll (waiting for output that does not change) is refused like a loop.",
    "L3": "A single changed answer earlier in the run rescues later repeats, up to the ceiling.",
    "L4": "gglib decides before it sees a turn's output, so a turn whose output was new can "
          "still be refused.",
    "L5": "A run of changing answers refused at the ceiling gets the same note as a true "
          "repeat (\"received the same result each time\"), which is inaccurate.",
    "L9": "After the first refusal, the rest of the session would not have happened as "
          "recorded; loopscope keeps replaying to show what the guard would have said.",
    "L10": "Only replies without tool calls are compared for stagnation.",
    "L16": "By default gglib passes the request on with a note; the model may ignore it.",
}
"""Plain words for the limitation ids :func:`explain_step` reports."""


EXPLAINER = GglibExplainer()


def guide_examples() -> tuple[Any, ...]:
    """One worked example per behaviour a user should know (the Guide page)."""
    from loopscope.engines.contract import GuideExample
    from loopscope.engines.examples import tiny_session

    write = ("write_file", {"path": "src/app.py", "content": "print('hi')"},
             "Wrote 11 bytes to src/app.py")
    specs: list[tuple[str, str, str, str, str, list[Any], dict[str, Any]]] = [
        ("gglib-loop", "loop", "The same set of tool calls with the same answer",
         "gglib remembers the last batch of tool calls. Each time the exact same batch comes "
         "back and gets the exact same answers, it counts a repeat. Batches that change things "
         "may repeat twice; the third identical repeat is refused.",
         "The agent writes the same file with the same content three times.",
         [[write], [write], [write]], {}),
        ("gglib-rescue", "loop", "A changing answer keeps a run alive (up to the ceiling)",
         "If the answer changes, the repeat is not counted: the agent may be making progress. "
         "Such a run is still capped by the ceiling (15 by default). Anything that drifts in the "
         "output, such as a timing, counts as a change.",
         "The agent reruns the tests; only the timing in the output changes.",
         [[("run_in_terminal", {"cmd": "pytest"}, f"1 failed in 0.{30 + i}s")] for i in range(5)],
         {}),
        ("gglib-observation", "loop", "Read-only tools get a larger allowance",
         "Batches whose every tool looks read-only (read_file, list_dir, get_terminal_output, …: "
         "the read-only tool patterns) may repeat with the same answer up to the read-only "
         "allowance, 15 by default. Here it is set to 3 so the example stays short.",
         "The agent polls a terminal whose output never changes.",
         [[("get_terminal_output", {"id": "t1"}, "Compiling… (no new output)")] for _ in range(5)],
         {"max_observation_steps": 3}),
        ("gglib-cycle", "loop", "Cycles escape",
         "A run is broken as soon as a different batch comes in, so A, B, A, B … never builds "
         "up repeats, even when every answer is the same. This is a known limitation.",
         "The agent alternates between running the tests and reading the same file.",
         [[("run_tests", {}, "1 failed")] if i % 2 == 0 else [("read_file", {"path": "a.py"}, "x = 1")]
          for i in range(8)], {}),
        ("gglib-stagnation", "stagnation", "The same reply, again and again",
         "Replies without tool calls are compared exactly. More than 5 identical replies among "
         "the last 20 is stagnation.",
         "The assistant keeps answering with the same sentence.",
         ["I cannot proceed further."] * 6, {}),
    ]
    return tuple(GuideExample(detector, title, text, story, tiny_session(key, turns), values)
                 for key, detector, title, text, story, turns, values in specs)
