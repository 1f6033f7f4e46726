"""``SessionReplay``'s counts: exact, and free when the replay neither refused nor warned."""

from __future__ import annotations

from typing import Any

from loopscope.engines.base import FirstRefusal, Marker, SessionReplay


class _Detail:
    """A fast-path detail that records whether anyone walked its markers or counted them."""

    def __init__(self, markers: tuple[Marker, ...]) -> None:
        self._markers = markers
        self.walked = 0
        self.counted = 0

    def markers(self) -> tuple[Marker, ...]:
        self.walked += 1
        return self._markers

    def verdict_counts(self) -> tuple[int, int]:
        self.counted += 1
        verdicts = [m.verdict for m in self._markers]
        return verdicts.count("refuse"), verdicts.count("warn")

    def steps(self) -> Any:  # pragma: no cover - not used here
        raise AssertionError("no step should be built")

    flagged = step_json = steps


def _lazy(markers: tuple[Marker, ...], first: FirstRefusal | None, warned: bool) -> tuple[SessionReplay, _Detail]:
    detail = _Detail(markers)
    return SessionReplay.lazy("s", "/s", "openai_chat", "openclaw", first, warned, detail), detail


_MARKERS = (Marker(0, 0, 0, 0, "warn", "generic_repeat", 10),
            Marker(1, 1, 1, 1, "warn", "generic_repeat", 11),
            Marker(2, 1, 2, 2, "refuse", "generic_repeat", 20))


def test_a_clean_replay_is_counted_without_asking_its_detail() -> None:
    replay, detail = _lazy((), None, False)
    assert (replay.refusal_count, replay.warning_count) == (0, 0)
    assert (detail.walked, detail.counted) == (0, 0)


def test_counts_of_a_refused_and_warned_replay_are_counted_by_its_detail() -> None:
    replay, detail = _lazy(_MARKERS, FirstRefusal(1, 2, "generic_repeat"), True)
    assert (replay.refusal_count, replay.warning_count) == (1, 2)
    assert (detail.walked, detail.counted) == (0, 1)  # counted once, then kept, no marker built


def test_counts_come_from_the_markers_once_they_are_built() -> None:
    replay, detail = _lazy(_MARKERS, FirstRefusal(1, 2, "generic_repeat"), True)
    assert len(replay.markers) == 3
    assert (replay.refusal_count, replay.warning_count) == (1, 2)
    assert (detail.walked, detail.counted) == (1, 0)


def test_a_warned_replay_without_refusal_counts_only_warnings() -> None:
    markers = (Marker(3, 2, 3, 3, "warn", "ping_pong", 10),)
    replay, _detail = _lazy(markers, None, True)
    assert (replay.refusal_count, replay.warning_count) == (0, 1)
