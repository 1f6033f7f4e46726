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
(:func:`when_idle`): what an engine derives from the whole corpus on its first re-run.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Callable, Hashable

IDLE_SECONDS = 2.0
MAX_RUNS_WITHOUT_COLLECTION = 20
YOUNG_THRESHOLD = 50_000
NO_AUTOMATIC_FULL_COLLECTION = 1_000_000
"""Far more young-generation collections than a session ever makes between two idle moments."""


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
        self.enabled = False

    def when_idle(self, key: Hashable, job: Callable[[], object]) -> None:
        """Run ``job`` in the next idle moment, before the collection (when enabled; a job
        that fails is dropped: it only ever saves time). Runs between two pauses queue one
        job per ``key``."""
        if self.enabled:
            with self._lock:
                self._jobs.setdefault(key, job)

    def before_run(self) -> None:
        """A script run starts: a collection still waiting must not land inside it."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def after_run(self) -> None:
        """A script run has finished: collect soon, unless another run starts first."""
        if not self.enabled:
            return
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._runs += 1
            if self._runs < self.max_runs:
                self._timer = threading.Timer(self.delay, self.collect_now)
                self._timer.daemon = True
                self._timer.start()
                return
        self.collect_now()  # the user has not paused for a while: do not wait any longer

    def collect_now(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._runs = 0
            jobs, self._jobs = list(self._jobs.values()), {}
        for job in jobs:
            with contextlib.suppress(Exception):
                job()
        self._collect()


_collector = IdleCollector()


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


def when_idle(key: Hashable, job: Callable[[], object]) -> None:
    """Run ``job`` once the user pauses, once per ``key`` (a large corpus only: see the module
    doc)."""
    _collector.when_idle(key, job)
