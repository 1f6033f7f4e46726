"""When the cyclic garbage collector runs in the dashboard process.

A large corpus is millions of long-lived objects, and every slider move adds thousands more
(each configuration's replays stay cached so that moving a slider back is instant). Left to its
defaults, Python runs a full collection during a re-run every so often, a pause of the order
of a whole re-run inside most slider moves. So, once a large corpus is loaded:

- the corpus is frozen (``gc.freeze``): the collector never walks it again;
- the young-generation threshold is raised (a re-run allocates ~10^5 short-lived objects) and
  automatic full collections are switched off;
- full collections run while the user looks at the result instead: :func:`after_run` (called at
  the end of every script run) schedules one ``IDLE_SECONDS`` after the last run,
  :func:`before_run` calls it off when the user acts first, and one is forced after
  ``MAX_RUNS_WITHOUT_COLLECTION`` runs in a row without a pause, so memory stays bounded.

The same idle moments take other work that would otherwise land inside the user's next action
(:func:`when_idle`): what an engine derives from the whole corpus on its first re-run. That
work can take seconds on a large corpus, and a person may act before it ends: it then gives
way (:mod:`loopscope.background`) — between sessions, between jobs and before the collection
it waits while a script run is under way and until the app is idle again, so the runs of a
person moving a slider have the interpreter and the cores to themselves.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Callable, Hashable

from loopscope import background

IDLE_SECONDS = 2.0
MAX_RUNS_WITHOUT_COLLECTION = 20
YOUNG_THRESHOLD = 50_000
NO_AUTOMATIC_FULL_COLLECTION = 1_000_000
"""Far more young-generation collections than a session ever makes between two idle moments."""
GIVE_WAY_POLL_SECONDS = 0.02
GIVE_WAY_AT_MOST_SECONDS = 30.0
"""Idle work waits for runs at most this long at one place, then goes on: a run that never
reports its end (a thread that stays alive) must not stop the idle work for good."""


class IdleCollector:
    """Runs ``collect`` once the app has been idle for ``delay`` seconds (debounced)."""

    def __init__(self, delay: float = IDLE_SECONDS, max_runs: int = MAX_RUNS_WITHOUT_COLLECTION,
                 collect: Callable[[], object] = gc.collect) -> None:
        self.delay = delay
        self.max_runs = max_runs
        self._collect = collect
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._runs = 0
        self._jobs: dict[Hashable, Callable[[], object]] = {}
        self._running: set[threading.Thread] = set()
        """The threads of the script runs under way (before_run to after_run)."""
        self._idle_work = threading.local()
        self._last_run_ended = float("-inf")
        self.enabled = False

    def when_idle(self, key: Hashable, job: Callable[[], object]) -> None:
        """Run ``job`` in the next idle moment, before the collection (when enabled; a job
        that fails is dropped: it only ever saves time). Runs between two pauses queue one
        job per ``key``."""
        if self.enabled:
            with self._lock:
                self._jobs.setdefault(key, job)

    def before_run(self) -> None:
        """A script run starts: a collection still waiting must not land inside it, and idle
        work under way gives way to it (:meth:`give_way`)."""
        with self._lock:
            self._running.add(threading.current_thread())
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def run_under_way(self) -> bool:
        """Whether a script run has started and not ended (a run stopped by an exception
        ends with its thread)."""
        with self._lock:
            self._running = {t for t in self._running if t.is_alive()}
            return bool(self._running)

    def give_way(self) -> None:
        """In idle work (:meth:`collect_now` on its timer): wait while a script run is under
        way, and after it until the app is idle again (``delay`` seconds without a run: a
        person moving a slider makes runs a fraction of a second apart, and work resumed
        between them would take the cores the next run and the browser's drawing need), at
        most :data:`GIVE_WAY_AT_MOST_SECONDS`. Anywhere else: return at once (a run's own
        re-run calls the same loops)."""
        if not getattr(self._idle_work, "active", False):
            return
        deadline = time.monotonic() + GIVE_WAY_AT_MOST_SECONDS
        while self.run_under_way() or time.monotonic() - self._last_run_ended < self.delay:
            if time.monotonic() >= deadline:
                with self._lock:  # (runs that never said they ended: stop waiting for them)
                    self._running.clear()
                return
            time.sleep(GIVE_WAY_POLL_SECONDS)

    def after_run(self) -> None:
        """A script run has finished: collect soon, unless another run starts first."""
        with self._lock:
            self._running.discard(threading.current_thread())
            self._last_run_ended = time.monotonic()
        if not self.enabled:
            return
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._runs += 1
            if self._runs < self.max_runs:
                self._timer = threading.Timer(self.delay, self._collect_when_idle)
                self._timer.daemon = True
                self._timer.start()
                return
        self.collect_now()  # the user has not paused for a while: do not wait any longer

    def _collect_when_idle(self) -> None:
        """:meth:`collect_now` as idle work, which gives way to runs (the timer's thread)."""
        self.as_idle_work(self.collect_now)

    def as_idle_work(self, job: Callable[[], object]) -> None:
        """Run ``job`` in this (background) thread as idle work: from the next idle moment
        on, giving way to runs wherever it calls :meth:`give_way` (``background.give_way``)."""
        self._idle_work.active = True
        try:
            self.give_way()
            job()
        finally:
            self._idle_work.active = False

    def collect_now(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._runs = 0
            jobs, self._jobs = list(self._jobs.values()), {}
        for job in jobs:
            self.give_way()
            with contextlib.suppress(Exception):
                job()
        self.give_way()  # (a full collection holds the interpreter throughout)
        self._collect()


_collector = IdleCollector()
background.set_give_way(_collector.give_way)


def freeze_loaded() -> None:
    """Collect, then move every live object out of the collector's sight for good: for data
    that lives as long as the corpus is shown (the imported sessions before they are
    prepared, then the prepared data)."""
    gc.collect()
    gc.freeze()


def calm_for_large_corpus() -> None:
    """Freeze what is loaded and move full collections to idle time (see the module doc)."""
    freeze_loaded()
    threshold0, threshold1, _threshold2 = gc.get_threshold()
    gc.set_threshold(max(threshold0, YOUNG_THRESHOLD), max(threshold1, 20),
                     NO_AUTOMATIC_FULL_COLLECTION)
    _collector.enabled = True


def before_run() -> None:
    """Call at the start of every script run."""
    _collector.before_run()


def after_run() -> None:
    """Call at the end of every script run."""
    _collector.after_run()


def as_idle_work(job: Callable[[], object]) -> None:
    """Run ``job`` in the calling background thread once the app is idle, as idle work that
    gives way to runs (:mod:`loopscope.background`): work the next run can do without, such
    as rescanning a large folder, then never shares the interpreter with a slider move."""
    _collector.as_idle_work(job)


def when_idle(key: Hashable, job: Callable[[], object]) -> None:
    """Run ``job`` once the user pauses, once per ``key`` (a large corpus only: see the module
    doc)."""
    _collector.when_idle(key, job)
