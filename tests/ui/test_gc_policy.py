"""The dashboard's garbage-collection policy: full collections in idle time, debounced."""

from __future__ import annotations

import gc
import threading
import time

import pytest

from loopscope import background
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


def _run_in_thread(collector: gc_policy.IdleCollector, begun: threading.Event,
                   release: threading.Event, events: list[str], *, ends: bool = True
                   ) -> threading.Thread:
    """A script run on its own thread: starts once ``begun`` is set, ends when ``release`` is."""

    def run() -> None:
        collector.before_run()
        begun.set()
        release.wait(5)
        events.append("run ends")
        if ends:
            collector.after_run()
        else:
            release.wait(5)  # (the thread stays alive, and never says the run ended)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_idle_work_gives_way_to_a_run_that_starts_meanwhile() -> None:
    collector, calls = _collector(0.01)
    events: list[str] = []
    job_started, run_begun, release = threading.Event(), threading.Event(), threading.Event()

    def job() -> None:  # an engine's batch run: sessions one after the other
        job_started.set()
        run_begun.wait(5)
        for n in range(3):
            background.give_way()
            events.append(f"session {n}")

    collector.when_idle("warm", job)
    previous = background._hook
    background.set_give_way(collector.give_way)
    try:
        collector.after_run()
        assert job_started.wait(5)
        _run_in_thread(collector, run_begun, release, events)
        assert run_begun.wait(5)
        time.sleep(0.2)
        assert events == []  # the idle work waits while the run is under way
        release.set()
        deadline = time.monotonic() + 5
        while len(events) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert events == ["run ends", "session 0", "session 1", "session 2"]
        _wait_for(calls, 1)
        assert calls
    finally:
        background.set_give_way(previous)


def test_only_idle_work_gives_way() -> None:
    """A run's own re-run calls the same loops: there it must not wait (for itself)."""
    collector, _calls = _collector(60.0)
    collector.before_run()  # a run is under way on this thread
    started = time.monotonic()
    collector.give_way()
    assert time.monotonic() - started < 0.05 and collector.run_under_way()
    collector.after_run()
    assert not collector.run_under_way()


def test_idle_work_stops_waiting_for_a_run_that_never_says_it_ended(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gc_policy, "GIVE_WAY_AT_MOST_SECONDS", 0.2)
    collector, calls = _collector(0.01)
    events: list[str] = []
    begun, release = threading.Event(), threading.Event()
    thread = _run_in_thread(collector, begun, release, events, ends=False)
    assert begun.wait(5)
    collector.when_idle("warm", lambda: events.append("job"))
    collector.after_run()  # (from this thread: the other run is still under way)
    _wait_for(calls, 1, timeout=3)
    assert events == ["job"] and len(calls) == 1  # after at most the limit, not never
    assert not collector.run_under_way()
    release.set()
    thread.join(5)


def test_a_run_that_ends_in_an_exception_is_no_longer_under_way() -> None:
    collector, _calls = _collector(60.0)
    failed = threading.Thread(target=collector.before_run)  # its thread ends, no after_run
    failed.start()
    failed.join()
    assert not collector.run_under_way()


def test_idle_work_resumes_only_once_the_app_is_idle_again() -> None:
    """Slider moves are runs a fraction of a second apart: work resumed between two of them
    would take the cores the next one needs."""
    collector, _calls = _collector(0.3)
    resumed: list[float] = []
    run_begun, release = threading.Event(), threading.Event()
    events: list[str] = []

    def job() -> None:
        _run_in_thread(collector, run_begun, release, events)
        run_begun.wait(5)
        release.set()
        background.give_way()
        resumed.append(time.monotonic())

    collector.when_idle("warm", job)
    previous = background._hook
    background.set_give_way(collector.give_way)
    try:
        collector.after_run()
        deadline = time.monotonic() + 5
        while not resumed and time.monotonic() < deadline:
            time.sleep(0.01)
        assert resumed and events == ["run ends"]
        assert resumed[0] - collector._last_run_ended >= 0.3
    finally:
        background.set_give_way(previous)


def test_work_run_as_idle_work_starts_once_the_app_is_idle() -> None:
    """``as_idle_work`` (a folder's rescan): started during a run, the job waits for the run
    to end and the idle delay to pass, then runs as idle work (its loops give way)."""
    collector, _calls = _collector(0.2)
    events: list[str] = []
    begun, release = threading.Event(), threading.Event()
    _run_in_thread(collector, begun, release, events)
    assert begun.wait(5)
    started: list[float] = []

    def job() -> None:
        started.append(time.monotonic())
        events.append("job")
        assert collector._idle_work.active  # (its give_way calls wait for runs)

    worker = threading.Thread(target=collector.as_idle_work, args=(job,))
    worker.start()
    time.sleep(0.3)
    assert events == []
    release.set()
    worker.join(5)
    assert events == ["run ends", "job"]
    assert started[0] - collector._last_run_ended >= 0.2
    assert not getattr(collector._idle_work, "active", False)
