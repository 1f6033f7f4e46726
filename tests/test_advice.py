"""The smallest verified setting change, for any engine (``loopscope.advice``), on the cases the
engines' own rules make clear; and the side effects of a change over a corpus."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopscope.advice import (
    advise,
    corpus_effect,
    corpus_effect_of_runs,
    describe_outcome,
    smallest_changes,
)
from loopscope.engines import FirstRefusal, get_engine
from loopscope.engines.base import RunColumns
from tests.engines.gglib._gglib_helpers import DEF, A, P, T, U
from tests.engines.openclaw.test_openclaw_replay import S

GGLIB = get_engine("gglib")
OPENCLAW = get_engine("openclaw")
WF = "write_file"


def looping(n: int) -> list[Any]:
    return [A(WF, '{"path":"src/main.rs"}', "c1"), T("c1", "1 file changed")] * n


def moving(n: int) -> list[Any]:
    out: list[Any] = []
    for i in range(n):
        out += [A(WF, id=f"w{i}"), T(f"w{i}", f"{i} changed")]
    return out


def gglib(messages: list[Any], goal: str = "pass", turn: int | None = None,
          **values: Any) -> list[Any]:
    prepared = GGLIB.prepare_messages(messages)
    config = GGLIB.config(values).config if values else DEF
    target = None
    if turn is not None:
        target = next(s for s in GGLIB.run(prepared, config).steps if s.turn == turn)
    return smallest_changes(GGLIB, prepared, config, target, goal)  # type: ignore[arg-type]


def by_setting(changes: list[Any]) -> dict[str, Any]:
    return {c.setting: c for c in changes if len(c.changes) == 1}


def test_a_strike_is_let_through_by_one_more_repeat() -> None:
    changes = gglib(looping(3))
    first = changes[0]
    assert first.changes == (("max_repeated_batch_steps", 2, 3),)
    assert first.first_refusal is None and first.effect == "the session is never refused"
    assert first.set_args(GGLIB.settings) == ["max_repeated_batch_steps=3"]
    assert "Repeats allowed for tools that change things" in first.description
    reclass = [c for c in changes if c.setting == "observation_tools"]
    assert reclass and WF in reclass[0].to_value  # the engine's own candidate, verified


def test_a_ceiling_trip_needs_the_ceiling_raised() -> None:
    changes = by_setting(gglib(moving(16)))
    assert changes["max_repeated_batch_steps"].to_value == 16
    assert changes["max_observation_steps"].to_value == 16


def test_stagnation() -> None:
    changes = gglib([P("a"), P("b")] * 6)
    assert changes[0].changes == (("max_stagnation_steps", 5, 6),)


def test_a_change_that_only_moves_the_refusal_says_so() -> None:
    changes = gglib([*looping(3), U("x"), *looping(4)])
    first = changes[0]
    assert first.changes == (("max_repeated_batch_steps", 2, 3),)
    assert first.first_refusal is not None and first.first_refusal.turn == 6
    assert first.effect.startswith("the session is first refused later")


def test_nothing_to_change_on_a_pass() -> None:
    assert gglib(looping(2)) == []


def test_catching_a_missed_loop_lowers_a_threshold() -> None:
    msgs = [A("read_file", '{"path":"a.rs"}', f"c{i}") for i in range(5)]
    changes = gglib(msgs, "refuse", turn=4)
    found = by_setting(changes)
    assert found["max_observation_steps"].to_value == 4
    assert found["max_observation_steps"].first_refusal.turn == 4
    assert "max_repeated_batch_steps" not in found  # an exempt read-only batch
    prose = gglib([P("x")] * 3, "refuse", turn=2)
    assert prose[0].changes == (("max_stagnation_steps", 5, 2),)


def test_every_change_is_verified_and_minimal_on_openclaw() -> None:
    s = S().user()
    for _ in range(25):
        s.call("read", {"path": "/a"}, "same")
    session = s.build()
    prepared = OPENCLAW.prepare(session)
    config = OPENCLAW.default_config()
    refused = next(st for st in OPENCLAW.run(prepared, config).steps if st.verdict == "refuse")
    changes = smallest_changes(OPENCLAW, prepared, config)
    found = by_setting(changes)
    assert found["criticalThreshold"].to_value == 21
    assert found["detectors.genericRepeat"].to_value is False
    for change in changes:  # each lets the step through; one value nearer does not
        rerun = OPENCLAW.replay(session, change.config)
        assert rerun.steps[refused.call].verdict != "refuse"
    below = OPENCLAW.config({**OPENCLAW.values(config), "criticalThreshold": 20}).config
    assert OPENCLAW.replay(session, below).steps[refused.call].verdict == "refuse"


def test_the_post_compaction_guard_has_two_levers() -> None:
    s = S().user().compaction()
    for _ in range(3):
        s.call("gateway", {"action": "lookup"}, "same")
    prepared = OPENCLAW.prepare(s.build())
    changes = smallest_changes(OPENCLAW, prepared, OPENCLAW.default_config())
    assert [c.changes for c in changes] == [(("postCompactionGuard.windowSize", 3, 4),),
                                            (("enabled", True, False),)]


def test_a_warning_is_silenced_by_raising_the_warning_level() -> None:
    s = S().user()
    for i in range(12):
        s.call("read", {"path": "/a"}, f"v{i}")
    prepared = OPENCLAW.prepare(s.build())
    config = OPENCLAW.default_config()
    warn = next(st for st in OPENCLAW.run(prepared, config).steps if st.verdict == "warn")
    changes = by_setting(smallest_changes(OPENCLAW, prepared, config, warn))
    assert {"warningThreshold", "detectors.genericRepeat"} <= set(changes)
    assert changes["warningThreshold"].to_value == (warn.count or 0) + 1


def test_outcomes_and_side_effects_in_words() -> None:
    a, b = FirstRefusal(2, 4, "loop"), FirstRefusal(3, 6, "loop")
    assert describe_outcome(None, a) == "the session is never refused"
    assert describe_outcome(b, a) == "the session is first refused later, at call 7 (turn 4)"
    assert describe_outcome(a, b).startswith("the session is first refused earlier")
    # A turn-level step (no call) after a call-level one is later when its turn is later.
    assert "later" in describe_outcome(FirstRefusal(7, None, "x"), FirstRefusal(6, 5, "x"))
    effect = corpus_effect([a, None, b, None], [None, a, b, FirstRefusal(0, 0, "x")],
                           ["loop", "ok", None, "loop"])
    assert effect.no_longer_refused == (0,) and effect.loops_no_longer_caught == (0,)
    assert effect.newly_refused == (1, 3) and effect.good_newly_refused == (1,)
    assert effect.loops_newly_caught == (3,)
    # Each session counted once, in its group; its label says what the change means for it.
    assert effect.summary() == ("2 newly refused — 1 of them a labelled loop, now caught; 1 of "
                                "them a session labelled good work, now falsely refused · 1 no "
                                "longer refused — a labelled loop, now missed")
    # A team's corpus: counts past a thousand with separators, as the rest of the page.
    many = corpus_effect([None] * 1234 + [a], [a] * 1234 + [None])
    assert many.summary() == "1,234 newly refused · 1 no longer refused"


def _run(firsts: list[FirstRefusal | None], detector_order: list[str]) -> RunColumns:
    """A batch run whose first refusals are ``firsts``, its detectors numbered in
    ``detector_order`` (two runs of a corpus number them each in its own order)."""
    refused = [f for f in firsts if f is not None]
    names = list(dict.fromkeys([*detector_order, *(f.detector for f in refused)]))
    at = iter(range(len(refused)))
    columns = {
        "refusals": np.array([int(f is not None) for f in firsts], dtype=np.int64),
        "warnings": np.zeros(len(firsts), dtype=np.int64),
        "first": np.array([-1 if f is None else next(at) for f in firsts], dtype=np.int64),
        "turn": np.array([f.turn for f in refused], dtype=np.int64),
        "call": np.array([-1 if f.call is None else f.call for f in refused], dtype=np.int64),
        "detector": np.array([names.index(f.detector) for f in refused], dtype=np.int64),
    }
    return RunColumns.from_compact(columns, names, lambda i: None)


_FIRSTS = st.one_of(st.none(), st.builds(FirstRefusal, st.integers(0, 3),
                                         st.one_of(st.none(), st.integers(0, 3)),
                                         st.sampled_from(["loop", "poll", "x"])))


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 12).flatmap(lambda n: st.tuples(
    st.lists(_FIRSTS, min_size=n, max_size=n), st.lists(_FIRSTS, min_size=n, max_size=n),
    st.lists(st.sampled_from(["loop", "ok", None]), max_size=n + 2))),
    st.permutations(["x", "poll", "loop"]))
def test_a_corpus_effect_read_from_two_runs_columns_is_the_reference_one(
        case: tuple[list[Any], list[Any], list[Any]], order: list[str]) -> None:
    before, after, labels = case
    a, b = _run(before, ["loop", "poll", "x"]), _run(after, order)
    assert a.first_refusals() == before and b.first_refusals() == after
    assert corpus_effect_of_runs(a, b, labels) == corpus_effect(before, after, labels)


def test_a_corpus_effect_of_runs_of_two_corpora_is_refused() -> None:
    with pytest.raises(ValueError, match="2 sessions before, 1 after"):
        corpus_effect_of_runs(_run([None, None], []), _run([None], []))


# --------------------------------------------------------------------------- honest advice


def _corpus(*sessions: list[Any]) -> tuple[list[Any], Any]:
    prepared = [GGLIB.prepare_messages(m) for m in sessions]

    def first_refusals(config: Any) -> list[Any]:
        return [GGLIB.run(p, config).first_refusal for p in prepared]

    return prepared, first_refusals


def edit_loop(n: int) -> list[Any]:
    return [A("edit", '{"path":"a.py"}', "e1"), T("e1", "ok")] * n


def test_clear_asks_for_a_session_that_is_never_refused() -> None:
    messages = [*looping(3), U("x"), *looping(4)]
    assert by_setting(gglib(messages))["max_repeated_batch_steps"].to_value == 3
    cleared = by_setting(gglib(messages, "clear"))["max_repeated_batch_steps"]
    assert cleared.to_value == 4 and cleared.effect == "the session is never refused"


def test_advice_puts_the_change_that_loses_no_labelled_loop_first() -> None:
    # Session 0 (good work) and session 1 (a real loop) both repeat a write three times: one
    # more repeat lets both through; calling write_file read-only frees session 0 alone.
    prepared, first_refusals = _corpus(looping(3), edit_loop(3))
    before = first_refusals(DEF)
    advice = advise(GGLIB, prepared[0], DEF, index=0, before=before,
                    first_refusals=first_refusals, labels=["ok", "loop"])
    assert advice.goal == "clear"
    settings = [a.change.setting for a in advice.changes]
    assert settings[0] == "observation_tools"  # the smaller change comes later: it does harm
    assert "max_repeated_batch_steps" in settings
    raise_it = next(a for a in advice.changes if a.change.setting == "max_repeated_batch_steps")
    assert raise_it.harmful and raise_it.others.loops_no_longer_caught == (1,)
    assert raise_it.effect.no_longer_refused == (0, 1)  # Apply would change both
    assert advice.recommended is advice.changes[0] and not advice.recommended.side_effects
    assert advice.verdict == ("The smallest change that lets this session through changes no "
                              "other session.")


def test_advice_says_when_every_change_does_harm() -> None:
    prepared, first_refusals = _corpus(looping(3), looping(3))
    advice = advise(GGLIB, prepared[0], DEF, index=0, before=first_refusals(DEF),
                    first_refusals=first_refusals, labels=["ok", "loop"])
    assert advice.changes and all(a.harmful for a in advice.changes)
    assert advice.recommended is None
    assert advice.verdict.startswith("No change lets this session through without side effects")


def test_advice_to_catch_a_missed_loop_counts_good_sessions_newly_refused() -> None:
    reads = [A("read_file", '{"path":"a.rs"}', f"c{i}") for i in range(5)]
    prepared, first_refusals = _corpus(reads, reads[:4])
    target = next(s for s in GGLIB.run(prepared[0], DEF).steps if s.turn == 4)
    advice = advise(GGLIB, prepared[0], DEF, index=0, before=first_refusals(DEF),
                    first_refusals=first_refusals, labels=["loop", "ok"], target=target,
                    goal="refuse")
    by_name = {a.change.setting: a for a in advice.changes}
    lowered = by_name["max_observation_steps"]
    assert lowered.change.to_value == 4 and not lowered.harmful  # the good session has 4 reads
    assert advice.recommended is not None


def test_a_corpus_effect_without_one_session() -> None:
    a = FirstRefusal(2, 4, "loop")
    effect = corpus_effect([a, a, None], [None, None, a], ["ok", "loop", "ok"])
    others = effect.without(0)
    assert others.no_longer_refused == (1,) and others.loops_no_longer_caught == (1,)
    assert others.good_newly_refused == (2,) and others.harmful
    assert effect.sessions == (0, 1, 2) and others.sessions == (1, 2)
    assert not effect.without(1).without(2).without(0).changed


# --------------------------------------------------------------------------- one session's advice


def _openclaw_corpus(*sessions: Any) -> tuple[list[Any], Any]:
    prepared = [OPENCLAW.prepare(s) for s in sessions]

    def first_refusals(config: Any) -> list[Any]:
        return [OPENCLAW.run(p, config).first_refusal for p in prepared]

    return prepared, first_refusals


def _reads(n: int) -> Any:
    s = S().user()
    for _ in range(n):
        s.call("read", {"path": "/a"}, "same")
    return s.build()


def test_the_label_decides_the_situation() -> None:
    from loopscope.advice import situation_of

    prepared = GGLIB.prepare_messages(looping(3))  # refused at turn 2
    refused = GGLIB.run(prepared, DEF)
    passed = GGLIB.run(GGLIB.prepare_messages(looping(2)), DEF)
    assert situation_of(refused, "loop", None) == "caught"
    assert situation_of(refused, "loop", 1) == "caught"
    assert situation_of(refused, "loop", 3) == "too_early"
    assert situation_of(refused, "ok", None) == "false_refusal"
    assert situation_of(refused, None, None) == "unlabelled"
    assert situation_of(passed, "loop", 0) == "missed"
    assert situation_of(passed, "ok", None) == situation_of(passed, None, None) == "nothing"


def test_a_caught_loop_gets_no_change_and_a_missed_one_is_tightened() -> None:
    from loopscope.advice import advice_words, session_advice

    reads = [A("read_file", '{"path":"a.rs"}', f"c{i}") for i in range(5)]
    prepared, first_refusals = _corpus(looping(3), reads)
    before = first_refusals(DEF)
    common = {"before": before, "first_refusals": first_refusals, "labels": ["loop", "loop"]}
    caught = session_advice(GGLIB, prepared[0], DEF, label="loop", from_turn=0, index=0,
                            **common)
    assert caught.situation == "caught" and caught.advice is None
    words = advice_words(caught, GGLIB.settings)
    assert words is not None and words.lines() == [
        "Nothing to change: this real loop is caught, as its label says it should be."]
    missed = session_advice(GGLIB, prepared[1], DEF, label="loop", from_turn=0, index=1,
                            **common)
    assert missed.situation == "missed" and missed.advice is not None
    assert missed.advice.goal == "refuse" and missed.target is not None
    first = missed.advice.changes[0].change
    assert first.changes == (("max_observation_steps", 15, 4),)
    words = advice_words(missed, GGLIB.settings)
    assert words is not None and words.heading == "What would catch it (at turn 5):"


def test_switching_a_detector_off_comes_last_marked_and_asks_first() -> None:
    from loopscope.advice import advice_words, session_advice

    prepared, first_refusals = _openclaw_corpus(_reads(25), _reads(25))
    config = OPENCLAW.default_config()
    advice = session_advice(OPENCLAW, prepared[0], config, label="ok", from_turn=None,
                            index=0, before=first_refusals(config),
                            first_refusals=first_refusals, labels=["ok", "ok"])
    assert advice.advice is not None
    changes = advice.advice.changes
    offs = [a for a in changes if a.switched_off]
    assert offs and changes[-len(offs):] == tuple(offs)  # last resorts, after every other
    assert advice.advice.recommended is not None and not advice.advice.recommended.switched_off
    words = advice_words(advice, OPENCLAW.settings)
    assert words is not None
    off = words.changes[-1]
    assert any(m.startswith("last resort: switches “") for m in off.marks)
    assert off.confirm is not None and off.confirm.startswith("This switches “")
    assert "in OpenClaw for all 2 loaded sessions: 2 refusals go away" in off.confirm
    assert "--set detectors." in off.typed or "--set enabled=false" in off.typed
    raised = next(w for a, w in zip(changes, words.changes, strict=True)
                  if a.change.setting == "criticalThreshold")
    # It lets both through (no label objects: both are good work) and newly refuses nothing.
    assert raised.confirm is None and "[smallest harmless change]" in raised.sentence()


def test_a_change_that_refuses_good_work_asks_first_naming_it() -> None:
    from loopscope.advice import advice_words, session_advice

    reads = [A("read_file", '{"path":"a.rs"}', f"c{i}") for i in range(5)]

    def lowered(*sessions: list[Any], labels: list[str]) -> Any:
        prepared, first_refusals = _corpus(*sessions)
        advice = session_advice(GGLIB, prepared[0], DEF, label="loop", from_turn=0, index=0,
                                before=first_refusals(DEF), first_refusals=first_refusals,
                                labels=labels)
        words = advice_words(advice, GGLIB.settings)
        assert words is not None and advice.advice is not None
        return next(w for a, w in zip(advice.advice.changes, words.changes, strict=True)
                    if a.change.setting == "max_observation_steps")

    # The good sessions read 4 times: catching the loop at 4 refuses none of them.
    assert lowered(reads, reads[:4], reads[:4], labels=["loop", "ok", "ok"]).confirm is None
    # A good session that reads 5 times too: the same change refuses it, and Apply says so.
    costly = lowered(reads, reads, labels=["loop", "ok"])
    assert "[goes against a label]" in costly.sentence()
    assert costly.confirm == ("This lowers “Repeats allowed for read-only tools” from 15 to 4 in "
                              "gglib for all 2 loaded sessions: 2 sessions are newly refused, "
                              "1 of them labelled good work. Apply it anyway?")


def test_side_effects_count_past_a_thousand_with_separators() -> None:
    from loopscope.advice import others_words

    a = FirstRefusal(2, 4, "loop")
    many = corpus_effect([None] * 1234 + [a, a], [a] * 1234 + [None, a],
                         ["ok"] * 1001 + [None] * 233 + ["loop", None])
    assert others_words(many.without(1235), 1236) == (
        "of the other 1,235 sessions, 1,234 are newly refused (1,001 of them labelled good "
        "work) and 1 is no longer refused (it is labelled a real loop)")
    assert others_words(corpus_effect([a], [a]), 2) == "no other session changes"


def test_the_search_builds_each_candidate_configuration_once_per_corpus(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every refused session of a corpus is searched with the same nearby values: the second
    session's search reuses the configurations the first one built (and finds the same)."""
    from loopscope import advice

    monkeypatch.setattr(advice, "_RESOLVED", {})
    built: list[Any] = []
    real = OPENCLAW.config

    def counting(values: Any, version: Any = None) -> Any:
        built.append(values)
        return real(values, version)

    monkeypatch.setattr(OPENCLAW, "config", counting)
    config = OPENCLAW.default_config()
    found = []
    for path in ("/a", "/b"):
        s = S().user()
        for _ in range(25):
            s.call("read", {"path": path}, "same")
        found.append(smallest_changes(OPENCLAW, OPENCLAW.prepare(s.build()), config))
        if path == "/a":
            first = len(built)
    assert first > 0 and len(built) == first  # (the second session built none)
    assert [c.changes for c in found[0]] == [c.changes for c in found[1]]
