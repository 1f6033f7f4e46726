"""Explanations every OpenClaw release gives alike.

Some limits of a replay do not depend on the release: recognising a missing tool by its error's
wording, channel tools whose sends carry fresh ids without their plugin, and the guard armed on
every compaction. Their wording and the patterns that find them live here once, so that both
releases say the same thing the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from loopscope.engines.base import SessionReplay, Step
from loopscope.engines.contract import Limitation

SHARED_LIMITATIONS: Final[dict[str, str]] = {
    "unknown_tool_wording": "Unknown-tool detection depends on the error's wording: some "
    "missing-tool errors here are not recognised.",
    "channel_sends": "Sends through channel tools (telegram, slack, …) are not recognised as "
    "sends without their plugin, so fresh message ids make every result look new.",
    "guard_arms_on_every_compaction": "Replay approximation: every compaction arms the "
    "post-compaction guard; OpenClaw arms it only after a compaction retry.",
}
"""Limitation key → text, for the limits every release's replay has (in display order)."""

CHANNEL_TOOLS: Final = frozenset({"telegram", "slack", "discord", "whatsapp", "signal",
                                  "imessage", "feishu", "line", "matrix", "msteams",
                                  "googlechat", "mattermost", "zalo"})
"""Channel tools: message sends upstream recognises only with the channel's plugin loaded."""

MISSING_TOOL: Final = re.compile(r"tool.*(not found|not available|unavailable|no such|unknown)|"
                                 r"(no such|unknown|unavailable).*tool", re.IGNORECASE)
"""Error wording that says a tool is missing (whether or not upstream recognises it)."""


def has_strict_alternation(signatures: Sequence[str | None]) -> bool:
    """Whether three different calls repeat in the same order (A B C A B C) within one run's
    signatures: the ping-pong detector only sees two-call alternations, so such a cycle goes
    unnoticed by it."""
    for n in range(5, len(signatures)):
        window = signatures[n - 5:n + 1]
        if window[:3] == window[3:] and len(set(window[:3])) == 3:
            return True
    return False


def calls_span_runs(steps: Sequence[Step]) -> bool:
    """Whether the same call appears in more than one run: each user message starts a new run
    whose counts start again at 0, so repeats across runs are never added up."""
    runs_of: dict[str | None, set[str]] = {}
    runs: set[str] = set()
    for s in steps:
        run = s.extra.get("run_id", "")
        runs.add(run)
        runs_of.setdefault(s.signature, set()).add(run)
    return len(runs) > 1 and any(len(found) > 1 for found in runs_of.values())


class ReleaseExplainer:
    """A release's explainer behind :class:`loopscope.engines.contract.Explainer`: the release
    gives its step explanations and the limitations it found (key and text); OpenClaw has no
    extra changes to propose beside its settings."""

    def found_limitations(self, session: Any, replay: SessionReplay, config: Any,
                          warnings: Sequence[str]) -> list[tuple[str, str]]:
        raise NotImplementedError

    def limitations(self, session: Any, replay: SessionReplay, config: Any,
                    warnings: Sequence[str] = ()) -> tuple[Limitation, ...]:
        return tuple(Limitation(key, text) for key, text in
                     self.found_limitations(session, replay, config, warnings))

    def extra_changes(self, step: Step, replay: SessionReplay, config: Any,
                      goal: Any) -> Sequence[Mapping[str, Any]]:
        del step, replay, config, goal
        return ()
