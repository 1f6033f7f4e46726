"""Run a sweep's chunks, or the import and prepare step, on a Dask cluster (``loopscope sweep
--dask ADDRESS``, ``loopscope prepare --dask ADDRESS``).

Imported only when a command asks for Dask, so ``distributed`` is needed only then
(``pip install 'loopscope[dask]'``). The work is the same function the local backends run —
:func:`~loopscope.experiments.sweep.run_chunk` for a sweep, :func:`loopscope.corpus.ingestion.ingest_part`
for preparing — and the results are put together in chunk order, so Dask gives exactly the
local answer.

The cluster's workers need the same loopscope installed. A sweep's sessions travel to them with
the tasks (scattered once per chunk), so its workers do not need to see the session files. The
prepare step sends file paths instead (the workers read the files: they must see them at the
same paths, e.g. on a shared filesystem) and gets back each part's prepared sessions as
arrays, so this machine never holds the sessions themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from loopscope.experiments.metrics import Metrics
from loopscope.experiments.sweep import ChunkRunner, ChunkTask, Progress, run_chunk

if TYPE_CHECKING:
    from loopscope.corpus.ingestion import Ingested, Wanted
    from loopscope.corpus.ingestion import Progress as IngestProgress

__all__ = ["DaskUnavailable", "cluster_workers", "dask_client", "dask_ingest", "dask_runner"]

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


def dask_ingest(client: Any, chunk: int | None = None) -> Callable[..., Ingested]:
    """A function with :func:`loopscope.corpus.ingestion.ingest`'s signature that imports and prepares
    the files on ``client``'s cluster, for ``build_corpus(..., ingest_with=...)``.

    A task is one part of the files, cut as the local import cuts them for as many processes
    as the cluster has workers (:func:`~loopscope.corpus.ingestion.ingest_part_size`;
    ``chunk`` files per task instead, where given): a part's string pools are its own, joined
    one after the other, so the same cut gives the same snapshot, byte for byte, as
    ``loopscope prepare --workers N`` here (and from 512 files a worker on, any number of
    workers cuts the same parts)."""
    distributed = _distributed()
    from loopscope.corpus.ingestion import (
        Ingested,
        ingest_part,
        ingest_part_size,
        join_parts,
        reading_message,
    )

    def run(files: Sequence[tuple[str, bool]], wanted: Wanted, *,
            workers: int | None = None, progress: IngestProgress | None = None,
            into: Callable[[Any], object] | None = None) -> Ingested:
        del workers  # (the cluster's)
        files, wanted = list(files), list(wanted)
        n = len(files)
        size = chunk or ingest_part_size(n, cluster_workers(client))
        parts = [files[i:i + size] for i in range(0, n, size)]
        futures = [client.submit(ingest_part, part, wanted, pure=False) for part in parts]
        index = {f.key: i for i, f in enumerate(futures)}
        results: list[Any] = [None] * len(futures)
        handed = 0  # (with ``into``: the parts before this one were handed to it, in order)
        done = 0
        message = reading_message(n, "the Dask cluster")
        try:
            for future in distributed.as_completed(futures):
                i = index[future.key]
                results[i] = future.result()
                done += len(parts[i])
                while into is not None and handed < len(results) \
                        and results[handed] is not None:
                    into(results[handed])
                    results[handed] = None
                    handed += 1
                if progress is not None:
                    progress(done / max(n, 1), message(done))
        except BaseException:
            client.cancel(futures)
            raise
        if into is not None:
            return Ingested([], {}, {})
        return join_parts(results, wanted)

    return run
