"""Run a sweep's chunks on a Dask cluster (``loopscope sweep --dask ADDRESS``).

Imported only when a sweep asks for Dask, so ``distributed`` is needed only then
(``pip install 'loopscope[dask]'``). The work is the same :func:`~loopscope.experiments.sweep.run_chunk`
the local backends run, and partial results are summed in chunk order, so a Dask sweep gives
exactly the local answer.

The cluster's workers need the same loopscope installed. Sessions travel to them with the tasks
(scattered once per chunk), so the workers do not need to see the session files.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from loopscope.experiments.metrics import Metrics
from loopscope.experiments.sweep import ChunkRunner, ChunkTask, Progress, run_chunk

__all__ = ["DaskUnavailable", "cluster_workers", "dask_client", "dask_runner"]

LOCAL = "local"
"""The address that means: start a ``distributed.LocalCluster`` on this machine."""


class DaskUnavailable(RuntimeError):
    """``distributed`` is not installed, or the scheduler cannot be reached."""


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:  # pragma: no cover - exercised only without the extra installed
        raise DaskUnavailable(
            "Dask sweeps need the dask extra: pip install 'loopscope[dask]'"
        ) from None
    return distributed


@contextmanager
def dask_client(
    address: str, *, workers: int | None = None, processes: bool = True, timeout: str = "10s"
) -> Iterator[Any]:
    """A ``distributed.Client`` for ``address``; ``"local"`` starts (and stops) a LocalCluster.

    ``workers`` and ``processes`` apply to a LocalCluster only (``processes=False`` runs its
    workers as threads of this process, which tests use). ``timeout``: how long to wait for a
    remote scheduler.
    """
    distributed = _distributed()
    if address == LOCAL:
        cluster = distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=processes,
            dashboard_address=None,
        )
        try:
            with distributed.Client(cluster) as client:
                yield client
        finally:
            cluster.close()
        return
    try:
        client = distributed.Client(address, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise DaskUnavailable(f"cannot reach the Dask scheduler at {address}: {exc}") from exc
    try:
        yield client
    finally:
        client.close()


def cluster_workers(client: Any) -> int:
    """How many workers the cluster has now (at least 1): the sweep splits work by it."""
    try:
        return max(1, len(client.scheduler_info().get("workers", {})))
    except Exception:  # an old or unusual scheduler: fall back to a modest split
        return 1


def dask_runner(client: Any) -> ChunkRunner:
    """A chunk runner that submits each chunk to ``client``'s cluster."""
    distributed = _distributed()

    def run(tasks: Sequence[ChunkTask], progress: Progress) -> list[list[Metrics]]:
        if not tasks:
            return []
        scattered = client.scatter([list(t.sessions) for t in tasks])
        futures = [
            client.submit(run_chunk, t.engine, data, t.configs, t.labels, pure=False)
            for t, data in zip(tasks, scattered, strict=True)
        ]
        index = {f.key: i for i, f in enumerate(futures)}
        results: list[list[Metrics] | None] = [None] * len(tasks)
        try:
            for future in distributed.as_completed(futures):
                i = index[future.key]
                results[i] = future.result()
                progress(len(tasks[i].sessions))
        except BaseException:
            client.cancel(futures)
            raise
        return [r for r in results if r is not None]

    return run
