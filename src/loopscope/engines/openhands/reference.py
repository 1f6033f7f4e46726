"""The plain reference replay: OpenHands' ``StuckDetector`` (:mod:`.upstream`) run in shadow
mode over the log a session becomes (:mod:`.events`), and nothing else.

:func:`replay_session` writes the session's events into the log and makes OpenHands' check
(``check_stuck_or_nudge``) after every assistant turn, because OpenHands makes it before its
next step. A stop does not end the replay (shadow mode): nothing is added to the log for it and
every later step is ``after_divergence``, so what the guard would have said afterwards is still
seen.
"""

from __future__ import annotations

from typing import Any, Final

from loopscope.engines.base import SessionReplay, Step, first_refusal_of
from loopscope.engines.openhands.config import OpenHandsConfig
from loopscope.engines.openhands.events import Check, Event, build_items
from loopscope.engines.openhands.upstream import PASS, StuckDetector, check_stuck_or_nudge
from loopscope.model import Session

__all__ = ["ENGINE_NAME", "replay_session", "step_extra"]

ENGINE_NAME: Final = "openhands"


def step_extra(enabled: bool, scan: int, message: str | None) -> dict[str, Any]:
    """The engine's step fields: ``scan`` (events in the window after the check), and
    ``message`` on a warn step; nothing when stuck detection is off."""
    if not enabled:
        return {}
    if message is None:
        return {"scan": scan}
    return {"scan": scan, "message": message}


def replay_session(session: Session, config: OpenHandsConfig) -> SessionReplay:
    """The plain shadow-mode replay: one step per assistant turn."""
    log: list[Event] = []
    detector = StuckDetector(log, config)
    steps: list[Step] = []
    diverged = False
    for item in build_items(session):
        if not isinstance(item, Check):
            log.append(item)
            continue
        outcome = check_stuck_or_nudge(detector) if config.enabled else PASS
        scan = len(detector.events_since_last_user_message())
        steps.append(Step(item.turn, item.call, item.tools, None,
                          outcome.verdict,  # type: ignore[arg-type]
                          outcome.detector, outcome.count, diverged,
                          step_extra(config.enabled, scan, outcome.message)))
        diverged = diverged or outcome.verdict == "refuse"
    return SessionReplay(session.id, session.source, session.format, ENGINE_NAME, tuple(steps),
                         first_refusal_of(steps))
