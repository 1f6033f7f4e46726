"""The dashboard's garbage-collection policy: full collections in idle time, debounced."""

from __future__ import annotations

import gc
import time

import pytest

from loopscope.ui import gc_policy


def _collector(delay: float, max_runs: int = 20) -> tuple[gc_policy.IdleCollector, list[float]]:
    calls: list[float] = []
    collector = gc_policy.IdleCollector(delay, max_runs, collect=lambda: calls.append(time.monotonic()))
    collector.enabled = True
    return collector, calls


def _wait_for(calls: list[float], n: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while len(calls) < n and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_collection_runs_once_the_app_is_idle() -> None:
    collector, calls = _collector(0.05)
    ended = time.monotonic()
    collector.after_run()
    assert calls == []  # not during the run's response
    _wait_for(calls, 1)
    assert len(calls) == 1 and calls[0] - ended >= 0.05


def test_runs_in_quick_succession_share_one_collection() -> None:
    collector, calls = _collector(0.2)
    for _ in range(5):
        collector.after_run()
        time.sleep(0.01)
    _wait_for(calls, 1)
    time.sleep(0.3)
    assert len(calls) == 1


def test_a_user_who_never_pauses_still_gets_a_collection_every_few_runs() -> None:
    collector, calls = _collector(60.0, max_runs=3)
    for _ in range(7):
        collector.after_run()
    assert len(calls) == 2  # runs 3 and 6, right away
    collector.collect_now()  # and the pending timer is cancelled with it
    assert len(calls) == 3


def test_a_run_that_starts_calls_off_the_waiting_collection() -> None:
    collector, calls = _collector(0.1)
    collector.after_run()
    collector.before_run()  # the user moved a slider again before the app was idle
    time.sleep(0.3)
    assert calls == []
    collector.after_run()
    _wait_for(calls, 1)
    assert len(calls) == 1


def test_nothing_happens_until_a_large_corpus_turns_it_on() -> None:
    collector, calls = _collector(0.01)
    collector.enabled = False
    collector.after_run()
    time.sleep(0.1)
    assert calls == []


def test_a_large_corpus_is_frozen_and_full_collections_wait_for_idle_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = gc.get_threshold()
    monkeypatch.setattr(gc_policy, "_collector", gc_policy.IdleCollector())
    try:
        gc_policy.calm_for_large_corpus()
        threshold0, _t1, threshold2 = gc.get_threshold()
        assert threshold0 >= gc_policy.YOUNG_THRESHOLD
        assert threshold2 == gc_policy.NO_AUTOMATIC_FULL_COLLECTION
        assert gc.get_freeze_count() > 0
        assert gc_policy._collector.enabled
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_idle_work_runs_in_the_idle_moment_before_the_collection() -> None:
    collector, calls = _collector(0.05)
    done: list[str] = []
    collector.when_idle("a", lambda: done.append("a"))
    collector.when_idle("a", lambda: done.append("a again"))  # one job per key between pauses
    collector.when_idle("fails", lambda: 1 / 0)  # a failing job is dropped, the rest still run
    collector.when_idle("b", lambda: done.append(f"b after {len(calls)} collections"))
    collector.after_run()
    collector.before_run()  # the user acted first: the work waits for the next pause
    time.sleep(0.15)
    assert done == [] and calls == []
    collector.after_run()
    _wait_for(calls, 1)
    assert done == ["a", "b after 0 collections"] and len(calls) == 1
    collector.collect_now()
    assert done == ["a", "b after 0 collections"]  # each job once


def test_idle_work_is_not_kept_while_it_is_off() -> None:
    collector, _calls = _collector(0.01)
    collector.enabled = False
    done: list[int] = []
    collector.when_idle("a", lambda: done.append(1))
    collector.enabled = True
    collector.collect_now()
    assert done == []
