"""The upgrade impact and its release-note paragraph (``loopscope.experiments.upgrade``)."""

from __future__ import annotations

import pytest

from loopscope.engines import FirstRefusal
from loopscope.experiments.compare import compare_replays
from loopscope.experiments.upgrade import impact_of_compare, summary_text, upgrade_impact

R = FirstRefusal


def test_every_session_lands_in_one_class() -> None:
    a = [None, R(2, 4, "loop"), R(2, 4, "loop"), R(2, 4, "loop"), R(2, 4, "loop"), None, R(1, None, "x")]
    b = [R(3, 5, "loop"), None, R(1, 2, "loop"), R(4, 9, "loop"), R(2, 4, "other"), None, R(1, None, "x")]
    impact = upgrade_impact(a, b, ["loop", "ok", None, None, None, "ok", None])
    assert impact.newly_refused == (0,) and impact.loops_newly_caught == (0,)
    assert impact.no_longer_refused == (1,) and impact.good_no_longer_refused == (1,)
    assert impact.earlier == (2,) and impact.later == (3,) and impact.other_detector == (4,)
    assert impact.changed == (0, 1, 2, 3, 4) and impact.unchanged == 2
    assert not impact.good_newly_refused and not impact.loops_no_longer_caught


def test_a_prose_refusal_without_a_call_sits_before_the_next_call() -> None:
    impact = upgrade_impact([R(3, 5, "loop")], [R(2, None, "stagnation")])
    assert impact.earlier == (0,)


def test_the_paragraph_names_every_class_and_the_labels() -> None:
    a = [None, None, R(2, 4, "loop"), R(2, 4, "loop"), None]
    b = [R(3, 5, "loop"), R(3, 5, "loop"), None, R(1, 2, "loop"), None]
    text = summary_text(upgrade_impact(a, b, ["loop", "ok", "loop", None, None]),
                        "OpenClaw", "2026.6.11", "2026.9.6")
    assert text == (
        "Moving OpenClaw from 2026.6.11 to 2026.9.6 with the same settings changes 4 of 5 "
        "sessions: 2 sessions are newly refused (1 labelled a real loop, now caught; 1 "
        "labelled good work, now wrongly refused), 1 is no longer refused (1 labelled a real "
        "loop, now missed) and 1 is refused earlier. The other session behaves as before.")


def test_no_change_says_so() -> None:
    same = [None, R(2, 4, "loop")]
    text = summary_text(upgrade_impact(same, same), "OpenClaw", "2026.6.11", "2026.7.35")
    assert text == ("Moving OpenClaw from 2026.6.11 to 2026.7.35 with the same settings changes "
                    "nothing for these 2 sessions: every session is refused, or let through, "
                    "exactly where it was before.")
    many = [None] * 20_000
    assert "nothing for these 20,000 sessions:" in summary_text(
        upgrade_impact(many, many), "OpenClaw", "2026.6.11", "2026.9.6")


def test_sessions_must_match() -> None:
    with pytest.raises(ValueError, match="not the same sessions"):
        upgrade_impact([None], [None, None])


class _Replay:
    def __init__(self, source: str, first: FirstRefusal | None) -> None:
        self.source, self.session, self.first_refusal = source, source, first


def test_from_a_compare_result() -> None:
    pairs = [(_Replay("a", None), _Replay("a", R(1, 1, "x"))),
             (_Replay("b", None), _Replay("b", None)),
             (_Replay("c", R(1, 1, "x")), _Replay("c", None))]
    result = compare_replays(pairs)  # type: ignore[arg-type]
    impact = impact_of_compare(result, {"a": "ok", "c": "loop"})
    assert impact.sessions == 3 and impact.unchanged == 1
    assert impact.good_newly_refused == (0,) and impact.loops_no_longer_caught == (1,)


# --------------------------------------------------------------------------- the cause, first


def test_the_paragraph_starts_with_why_the_new_release_differs() -> None:
    """OpenClaw 2026.9 fixes the thresholds 2026.6 let a team set: the paragraph says so before
    what changes, from the two schemas (``replaces`` of the fixed values, the settings B lacks)."""
    from loopscope.engines import get_engine
    from loopscope.experiments.upgrade import cause_text, release_note, settings_move

    engine = get_engine("openclaw")
    tuned = engine.values(engine.config({"warningThreshold": 3, "historySize": 50},
                                        "2026.6.11").config)
    move = settings_move(engine.settings_for("2026.6.11"), tuned,
                         engine.settings_for("2026.9.6"))
    assert move.read == ("enabled",) and len(move.ignored) == 9 and move.fixed
    assert cause_text(move, "OpenClaw", "2026.6.11", "2026.9.6") == (
        "OpenClaw 2026.9.6 ignores warningThreshold = 3 and historySize = 50 and uses fixed "
        "values instead (WARNING_THRESHOLD = 10 and TOOL_CALL_HISTORY_SIZE = 30); of the 10 "
        "settings of 2026.6.11 only enabled still applies.")
    impact = upgrade_impact([R(2, 4, "loop"), None], [None, None], ["loop", None])
    text = release_note(impact, "OpenClaw", "2026.6.11", "2026.9.6", move)
    assert text == (
        "OpenClaw 2026.9.6 ignores warningThreshold = 3 and historySize = 50 and uses fixed "
        "values instead (WARNING_THRESHOLD = 10 and TOOL_CALL_HISTORY_SIZE = 30); of the 10 "
        "settings of 2026.6.11 only enabled still applies. Moving OpenClaw from 2026.6.11 to "
        "2026.9.6 changes 1 of 2 sessions: 1 is no longer refused (1 labelled a real loop, now "
        "missed). The other session behaves as before.")
    # at the defaults, the ignored settings are named, with what that means for these values
    at_defaults = settings_move(engine.settings_for("2026.6.11"), {},
                                engine.settings_for("2026.9.6"))
    assert cause_text(at_defaults, "OpenClaw", "2026.6.11", "2026.9.6") == (
        "OpenClaw 2026.9.6 ignores 9 of the 10 settings of 2026.6.11 (warningThreshold, "
        "criticalThreshold, globalCircuitBreakerThreshold, unknownToolThreshold and 5 more) and "
        "uses fixed values instead; here each is at the value it uses anyway.")
    # a release with the same settings: no cause, "with the same settings"
    same = settings_move(engine.settings_for("2026.6.11"), tuned,
                         engine.settings_for("2026.7.35"), tuned)
    assert same.same and release_note(impact, "OpenClaw", "2026.6.11", "2026.7.35", same) \
        .startswith("Moving OpenClaw from 2026.6.11 to 2026.7.35 with the same settings changes")
