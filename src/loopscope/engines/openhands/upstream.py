"""OpenHands' ``StuckDetector``, ported literally: the upstream rules and nothing of loopscope's
replay.

:class:`StuckDetector` follows ``openhands/sdk/conversation/stuck_detector.py`` line by line
(the window, the collection, the four patterns in order, the action-error nudge and its "already
nudged" memory), over a log of :mod:`.events` values (OpenHands' event model; ``event_eq`` there
is ``StuckDetector._event_eq``). :func:`check_stuck_or_nudge` is
``LocalConversation._check_stuck_or_nudge``
(``openhands/sdk/conversation/impl/local_conversation.py``): a nudge is appended to the log and
the step goes on; otherwise ``is_stuck()`` decides. It is kept literal so that it can be read
side by side with the SDK; the shadow replay built on it is :mod:`.reference`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# Each pattern is named after its threshold (the fields of ``StuckDetectionThresholds``).
from loopscope.engines.openhands.config import (
    ACTION_ERROR,
    ACTION_OBSERVATION,
    ALTERNATING_PATTERN,
    MONOLOGUE,
    OpenHandsConfig,
)
from loopscope.engines.openhands.events import (
    ActionEvent,
    AgentErrorEvent,
    Event,
    MessageEvent,
    ObservationEvent,
    event_eq,
)

__all__ = [
    "ACTION_ERROR",
    "ACTION_OBSERVATION",
    "ALTERNATING_PATTERN",
    "MONOLOGUE",
    "PASS",
    "CheckOutcome",
    "StuckDetector",
    "check_stuck_or_nudge",
    "nudge_text",
]



def nudge_text(tool_name: str, threshold: int, error: str) -> str:
    """OpenHands' action-error nudge (``StuckDetector.get_action_error_nudge``)."""
    return (f"You've called `{tool_name}` with the same arguments {threshold} times in a row "
            f"and gotten the same error each time: {error}. Repeating the exact same call again "
            "will not work — review the error message and either correct the arguments or try "
            "a different approach.")


def _is_user_message(event: Event) -> bool:
    return isinstance(event, MessageEvent) and event.source == "user"


def _is_observation(event: Event) -> bool:
    """``ObservationBaseEvent``: an ``ObservationEvent`` or an ``AgentErrorEvent``."""
    return isinstance(event, ObservationEvent | AgentErrorEvent)


class StuckDetector:
    """``StuckDetector`` over ``log`` (the conversation's events, oldest first).

    ``is_stuck`` returns the pattern that held (loopscope's detector name) and its count, or
    ``None``; upstream returns ``True``/``False``.
    """

    def __init__(self, log: list[Event], config: OpenHandsConfig) -> None:
        self.log = log
        self.action_observation_threshold = config.action_observation
        self.action_error_threshold = config.action_error
        self.monologue_threshold = config.monologue
        self.alternating_pattern_threshold = config.alternating_pattern
        self.max_events = config.max_events
        self._last_nudged_error_event: Event | None = None

    def events_since_last_user_message(self) -> list[Event]:
        events = self.log[-self.max_events:]
        last_user = next((i for i in reversed(range(len(events)))
                          if _is_user_message(events[i])), -1)
        if last_user != -1:
            events = events[last_user + 1:]
        return events

    @staticmethod
    def collect(events: list[Event], max_needed: int) -> tuple[list[Event], list[Event]]:
        last_actions: list[Event] = []
        last_observations: list[Event] = []
        for event in reversed(events):
            if isinstance(event, ActionEvent) and len(last_actions) < max_needed:
                last_actions.append(event)
            elif _is_observation(event) and len(last_observations) < max_needed:
                last_observations.append(event)
            if len(last_actions) >= max_needed and len(last_observations) >= max_needed:
                break
        return last_actions, last_observations

    def is_stuck(self) -> tuple[str, int] | None:
        events = self.events_since_last_user_message()
        min_threshold = min(self.action_observation_threshold, self.action_error_threshold,
                            self.monologue_threshold)
        if len(events) < min_threshold:
            return None
        max_needed = max(self.action_observation_threshold, self.action_error_threshold + 1)
        last_actions, last_observations = self.collect(events, max_needed)
        if self._repeating_action_observation(last_actions, last_observations):
            return ACTION_OBSERVATION, self.action_observation_threshold
        streak = self.action_error_streak(last_actions, last_observations)
        if streak > self.action_error_threshold:
            return ACTION_ERROR, streak
        monologue = self._monologue_count(events)
        if monologue is not None and monologue >= self.monologue_threshold:
            return MONOLOGUE, monologue
        if (len(events) >= self.alternating_pattern_threshold
                and self._alternating(events)):
            return ALTERNATING_PATTERN, self.alternating_pattern_threshold
        # The context-window pattern is present upstream but always false in this version.
        return None

    def _repeating_action_observation(self, last_actions: list[Event],
                                      last_observations: list[Event]) -> bool:
        threshold = self.action_observation_threshold
        if len(last_actions) >= threshold and len(last_observations) >= threshold:
            return (all(event_eq(last_actions[0], a) for a in last_actions[:threshold])
                    and all(event_eq(last_observations[0], o)
                            for o in last_observations[:threshold]))
        return False

    @staticmethod
    def action_error_streak(last_actions: list[Event], last_observations: list[Event]) -> int:
        if not last_actions or not last_observations:
            return 0
        reference = last_actions[0]
        streak = 0
        for action, observation in zip(last_actions, last_observations, strict=False):
            if not event_eq(reference, action):
                break
            if not isinstance(observation, AgentErrorEvent):
                break
            streak += 1
        return streak

    def get_action_error_nudge(self) -> str | None:
        events = self.events_since_last_user_message()
        threshold = self.action_error_threshold
        last_actions, last_observations = self.collect(events, threshold + 1)
        if self.action_error_streak(last_actions, last_observations) != threshold:
            return None
        action = last_actions[0]
        error = last_observations[0]
        assert isinstance(action, ActionEvent) and isinstance(error, AgentErrorEvent)
        if error is self._last_nudged_error_event:
            return None
        self._last_nudged_error_event = error
        return nudge_text(action.tool_name, threshold, error.error)

    def _monologue_count(self, events: list[Event]) -> int | None:
        """The agent messages counted by ``_is_stuck_monologue`` (``None``: the window is
        shorter than the threshold and the walk is not made)."""
        if len(events) < self.monologue_threshold:
            return None
        count = 0
        for event in reversed(events):
            if isinstance(event, MessageEvent):
                if event.source == "agent":
                    count += 1
                elif event.source == "user":
                    break
                # An environment message is skipped. (A CondensationSummaryEvent would be
                # skipped too; the log never holds one.)
            else:
                break
        return count

    def _alternating(self, events: list[Event]) -> bool:
        threshold = self.alternating_pattern_threshold
        last_actions: list[Event] = []
        last_observations: list[Event] = []
        for event in reversed(events):
            if isinstance(event, ActionEvent) and len(last_actions) < threshold:
                last_actions.append(event)
            elif _is_observation(event) and len(last_observations) < threshold:
                last_observations.append(event)
            if len(last_actions) == threshold and len(last_observations) == threshold:
                break
        if len(last_actions) == threshold and len(last_observations) == threshold:
            return (all(event_eq(last_actions[i], last_actions[i + 2])
                        for i in range(threshold - 2))
                    and all(event_eq(last_observations[i], last_observations[i + 2])
                            for i in range(threshold - 2)))
        return False


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    verdict: str
    detector: str | None = None
    count: int | None = None
    message: str | None = None


PASS: Final = CheckOutcome("pass")
"""The outcome of a check that finds nothing (and of every check with stuck detection off)."""


def check_stuck_or_nudge(detector: StuckDetector) -> CheckOutcome:
    """``LocalConversation._check_stuck_or_nudge``: a nudge is appended to the log as an
    environment message (``is_stuck`` is not asked); otherwise ``is_stuck`` decides."""
    nudge = detector.get_action_error_nudge()
    if nudge is not None:
        detector.log.append(MessageEvent("environment", nudge))
        return CheckOutcome("warn", ACTION_ERROR, detector.action_error_threshold, nudge)
    stuck = detector.is_stuck()
    if stuck is not None:
        return CheckOutcome("refuse", stuck[0], stuck[1])
    return PASS
