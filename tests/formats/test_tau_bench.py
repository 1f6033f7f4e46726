"""tau_bench: traj mapped as openai_chat, ids, gold actions not calls."""

from __future__ import annotations

import pytest
from tests.formats._ext_formats_helpers import (
    assert_counts,
    codes,
    load_corpus,
    longest_identical_run,
    only,
    run_document,
    shape,
)

from loopscope.formats import tau_bench

SPEC = [{
    "task_id": 7, "trial": 0, "reward": 0.0,
    "info": {"task": {"user_id": "ana_1", "instruction": "Cancel reservation X1.\nThen stop.",
                      "actions": [{"name": "cancel_reservation",
                                   "kwargs": {"reservation_id": "X1"}}]},
             "source": "user"},
    "traj": [
        {"role": "system", "content": "Airline policy …"},
        {"role": "user", "content": "Please cancel X1."},
        {"content": None, "role": "assistant", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "cancel_reservation", "arguments": "{\"reservation_id\":\"X1\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "name": "cancel_reservation",
         "content": "Error: reservation not found"},
        {"role": "assistant", "content": "I could not find X1."},
    ],
}]


def test_spec_example():
    s = only(run_document(tau_bench, SPEC)[0])
    assert shape(s) == "S U A0[cancel_reservation] R0 A1"
    assert s.id == "task7-trial0"
    assert s.format == "tau_bench"
    assert s.title == "Cancel reservation X1."
    assert s.agent.name == "tau-bench"
    assert s.metadata["reward"] == 0.0 and s.metadata["task_id"] == 7
    assert s.metadata["trial"] == 0 and s.metadata["source"] == "user"
    assert s.metadata["gold_actions"] == ["cancel_reservation"]
    assert s.chat_messages == tuple(SPEC[0]["traj"])
    assert s.chat_view() == SPEC[0]["traj"]
    assert s.events[3].is_error is False  # "Error: …" strings are not flagged
    assert s.calls[0].arguments == {"reservation_id": "X1"}
    assert s.events[2].origin.pointer == "/0/traj/2"


def test_every_element_is_a_candidate_and_a_bad_one_keeps_its_number():
    doc = [SPEC[0], {"task_id": 8, "trial": 1, "traj": "nope"},
           {**SPEC[0], "task_id": 9, "trial": 2}]
    sessions, problems = run_document(tau_bench, doc)
    assert sessions[1] is None
    assert [s.id if s else None for s in sessions] == ["task7-trial0", None, "task9-trial2"]
    assert codes(problems, "error") == ["session_failed"]


# --------------------------------------------------------------------------- the real recordings (../shared/corpus)


@pytest.mark.parametrize(("name", "sid", "calls", "turns", "user", "run"), [
    ("gpt-4o-airline__task02_trial2.json", "task2-trial2", 13, 18, 6, 1),
    ("gpt-4o-airline__task09_trial2.json", "task9-trial2", 23, 30, 8, 1),
    ("gpt-4o-airline__task11_trial0.json", "task11-trial0", 10, 17, 8, 1),
    ("gpt-4o-airline__task13_trial0.json", "task13-trial0", 14, 28, 15, 2),
    ("gpt-4o-airline__task23_trial3.json", "task23-trial3", 13, 27, 15, 1),
])
@pytest.mark.corpus
def test_corpus(name, sid, calls, turns, user, run):
    imported = load_corpus(f"tau-bench/{name}")
    assert imported.detection.format == "tau_bench"
    s = only(imported.sessions)
    assert s.id == sid and s.source.endswith(name)
    assert_counts(s, calls=calls, turns=turns, user=user, results=calls, unanswered=0)
    assert longest_identical_run(s)[0] == run
    assert not [p for p in imported.problems if p.severity != "info"]


@pytest.mark.corpus
def test_corpus_spot_checks():
    s = only(load_corpus("tau-bench/gpt-4o-airline__task09_trial2.json").sessions)
    names = [c.name for c in s.calls[14:23]]
    assert names == ["book_reservation", "think"] * 4 + ["book_reservation"]
    s13 = only(load_corpus("tau-bench/gpt-4o-airline__task13_trial0.json").sessions)
    assert longest_identical_run(s13) == (2, 5, "update_reservation_flights")
