"""Plain words and safe Markdown for what the dashboard shows a non-engineer.

Pure (no Streamlit), so the rules can be tested on every sample and every detector:

* :func:`md` / :func:`md_code` — a string from a recording (a tool name, a file name, an error
  text) made safe to put in Markdown: it shows as itself and can never become a link, an
  image, HTML or formatting. Every recorded string that reaches ``st.markdown``, a caption, an
  alert, a label or a help text goes through one of these.
* :func:`plain` — an engine's sentence with its setting names replaced by the sidebar's labels
  and limitation codes (``(L10)``) taken out (the limitation is shown in words beside it).
* :func:`to_markdown` — an engine's sentence (which quotes tool names in backticks) as safe
  Markdown: the tool names of the session become code spans they cannot break out of, and
  everything else is escaped.
* :func:`where`, :func:`label_meaning` — where a verdict sits and what a label makes of it,
  counted from 1 as people do.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from loopscope import numbering
from loopscope.model import escape_markdown, markdown_code
from loopscope.wording import is_identifier, plain, setting_words

if TYPE_CHECKING:
    from loopscope.engines import FirstRefusal, SettingSpec, StepExplanation

__all__ = [
    "PlainExplanation",
    "contradictions",
    "label_meaning",
    "md",
    "md_code",
    "plain",
    "plain_explanation",
    "setting_words",
    "to_markdown",
    "where",
]

def md(text: str, limit: int | None = None) -> str:
    """``text`` from a recording, safe inside Markdown: shown as itself, never a link, an
    image, HTML or formatting (:func:`loopscope.model.escape_markdown`). Not for the inside of
    a code span: use :func:`md_code`."""
    return escape_markdown(text, limit)


def md_code(text: str, limit: int | None = None) -> str:
    """``text`` as a Markdown code span it cannot break out of
    (:func:`loopscope.model.markdown_code`)."""
    return markdown_code(text, limit)


# --------------------------------------------------------------------------- engine wording


_is_identifier = is_identifier
"""(The name the dashboard's tests know it by.)"""


_OPEN, _CLOSE = "\ue000", "\ue001"
"""Private-use marks around a placeholder's number: escaping leaves them alone."""


def to_markdown(text: str, tools: Iterable[str] = ()) -> str:
    """``text`` (plain words that may quote recorded tool names in backticks) as safe
    Markdown: each backticked known tool name becomes a code span it cannot break out of;
    everything else — including any other backtick — is shown literally."""
    names = sorted({t for t in tools if t}, key=len, reverse=True)
    spans: list[str] = []

    def hold(match: re.Match[str]) -> str:
        spans.append(match.group(1))
        return f"{_OPEN}{len(spans) - 1}{_CLOSE}"

    held = text
    if names:
        pattern = re.compile("`(" + "|".join(re.escape(n) for n in names) + ")`")
        held = pattern.sub(hold, text)
    out = md(held)
    return re.sub(f"{_OPEN}(\\d+){_CLOSE}", lambda m: md_code(spans[int(m.group(1))], 80), out)


@dataclass(frozen=True, slots=True)
class PlainExplanation:
    """An engine's explanation of one step as the dashboard shows it."""

    headline: str
    facts: tuple[str, ...] = ()
    limit: str | None = None
    action: str | None = None
    """What the real guard would have done."""
    limitations: tuple[str, ...] = ()
    """The known limitations this step shows, in words."""
    upstream: tuple[tuple[str, str], ...] = ()
    """``(title, exact text)`` the guard itself would have written: quoted as is, in an
    aside (it is the guard's wording, not ours)."""
    consequence: str | None = None
    """For a refusal: whether it stops the agent, as the guard is deployed by default
    (surfaces fall back to :func:`loopscope.engines.contract.default_consequence`)."""

    def sentences(self) -> list[str]:
        """Everything a reader gets in plain words, in order (the asides left out)."""
        return [self.headline, *([self.consequence] if self.consequence else []), *self.facts,
                *([self.limit] if self.limit else []), *([self.action] if self.action else []),
                *self.limitations]


def plain_explanation(e: StepExplanation, specs: Sequence[SettingSpec]) -> PlainExplanation:
    """``e`` in the sidebar's words (:func:`plain` on every sentence); a limitation whose
    sentence is already among the facts is not repeated."""
    ids = [lim.id for lim in e.limitations]

    def p(text: str) -> str:
        return plain(text, specs, ids)

    facts = tuple(p(t) for t in e.what_happened)
    limitations = tuple(dict.fromkeys(
        t for t in (p(lim.text) for lim in e.limitations) if t not in facts))
    return PlainExplanation(p(e.headline), facts, p(e.which_limit) if e.which_limit else None,
                            p(e.guard_action) if e.guard_action else None, limitations,
                            tuple(e.upstream),
                            _consequence(e, p))


def _consequence(e: StepExplanation, p: Callable[[str], str]) -> str | None:
    """``e``'s consequence sentence in the sidebar's words."""
    return p(e.consequence) if e.consequence else None


# --------------------------------------------------------------------------- positions, labels


def where(first: FirstRefusal | None) -> str:
    """``call 4 (turn 3)`` — counted from 1 (the JSON output counts from 0)."""
    if first is None:
        return ""
    return numbering.call_then_turn(first.turn, first.call)


def label_meaning(label: str | None, refused_turn: int | None, from_turn: int | None,
                  guard: str) -> str:
    """What a session's label makes of ``guard``'s verdict, in one sentence (turns 0-based in,
    1-based out)."""
    if label == "ok":
        if refused_turn is not None:
            return (f"This session is labelled good work, so this is a false refusal: {guard} "
                    "would have stopped work that was going fine.")
        return f"This session is labelled good work, and {guard} lets it through: as it should."
    if label == "loop":
        start = f" from turn {numbering.number(from_turn)}" if from_turn is not None else ""
        if refused_turn is None:
            return (f"This session is labelled a real loop{start}, but {guard} never stops it: "
                    "this is a missed loop.")
        if from_turn is not None and refused_turn < from_turn:
            return (f"This session is labelled a real loop{start}, but {guard} stops it "
                    f"earlier, at turn {numbering.number(refused_turn)}, before the loop began: "
                    "too early.")
        return (f"This session is labelled a real loop{start}, and {guard} stops it: the "
                "refusal is right.")
    return ("This session is not labelled yet: label it as a real loop or good work so the "
            "advice below can tell right from wrong.")


def contradictions(sentences: Sequence[str]) -> list[tuple[str, str]]:
    """Pairs of sentences that contradict each other (one says a result was new, another that
    there was no new result; one that the guard would have refused or stopped, another that it
    does not block): what a reader must never see side by side."""
    found = []
    says_new = [s for s in sentences if re.search(r"\b(was|were|is|came out) (all )?new\b", s)]
    says_none = [s for s in sentences if re.search(r"\bno new (result|answer|output)", s)]
    for a in says_none:
        for b in says_new:
            if a != b:
                found.append((a, b))
    # A guard "would have refused / stopped" next to "does not block": was the agent stopped?
    says_stopped = [s for s in sentences
                    if re.search(r"\bwould have (refused|stopped|blocked)\b", s, re.I)]
    says_never = [s for s in sentences
                  if re.search(r"\b(does not|doesn't|never) (block|stop)s?\b", s, re.I)]
    for a in says_never:
        for b in says_stopped:
            if a != b:
                found.append((a, b))
    return found
