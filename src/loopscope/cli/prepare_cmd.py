"""``loopscope prepare``: import and prepare a folder's sessions once, into the on-disk cache,
so that the dashboard (or the next ``prepare``) opening the same folder reads them in seconds;
with ``--dask``, the work runs on a Dask cluster."""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path
from typing import Any

import click

from loopscope import cache
from loopscope.words import plural


@click.command(name="prepare")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--workers", type=click.IntRange(min=1), default=None, metavar="N",
              help="Local processes to use (default: one per CPU); with --dask, the workers "
                   "of a LocalCluster.")
@click.option("--dask", "dask_address", metavar="ADDRESS", default=None,
              help="Import and prepare on a Dask cluster (tcp://scheduler:8786), or 'local' to "
                   "start a LocalCluster. The cluster's workers must see the files at the same "
                   "paths. Needs pip install 'loopscope[dask]'.")
def prepare(paths: tuple[str, ...], workers: int | None, dask_address: str | None) -> None:
    """Import every session file under each PATH (a folder, or one file) and prepare it for
    every guard, keeping the result in the on-disk cache (`loopscope cache info`).

    The dashboard opening the same folder afterwards reads the prepared sessions back instead
    of importing them, and a later `prepare` of a changed folder imports only the files
    added or changed since.

    \b
    Example:
      loopscope prepare team-sessions/ --dask tcp://scheduler:8786
    """
    if not cache.active():
        raise click.UsageError("the on-disk cache is off (LOOPSCOPE_CACHE=off): nothing would be "
                               "kept")
    with contextlib.ExitStack() as stack:
        ingest_with = None
        if dask_address is not None:
            from loopscope.experiments.dask_backend import (
                DaskUnavailable,
                dask_client,
                dask_ingest,
            )

            try:
                client = stack.enter_context(dask_client(dask_address, workers=workers))
            except DaskUnavailable as exc:
                raise click.UsageError(str(exc)) from exc
            ingest_with = dask_ingest(client)
        for path in paths:
            _prepare_one(path, workers, ingest_with)
    entries, size = cache.stats()
    click.echo(f"kept in {cache.cache_dir()} ({plural(entries, 'entry', 'entries')}, "
               f"{size / 1e6:.1f} MB)")


def _prepare_one(path: str, workers: int | None, ingest_with: Any) -> None:
    from tqdm import tqdm

    from loopscope.corpus import build_corpus, prepared_folder_files

    # The folder as the dashboard opens it (resolved): the same files, the same cache entry.
    target = Path(path).resolve()
    if not target.exists():
        raise click.UsageError(f"{path} does not exist")
    files, ignored, root = prepared_folder_files(target)
    started = time.perf_counter()
    with tqdm(total=1000, desc=f"prepare {path}", file=sys.stderr, disable=None, leave=False,
              bar_format="{desc}: {percentage:3.0f}% {postfix}") as bar:

        def progress(fraction: float, text: str) -> None:
            bar.n = int(min(max(fraction, 0.0), 1.0) * 1000)
            bar.set_postfix_str(text, refresh=True)

        corpus = build_corpus(files, fingerprint="prepare", origin="folder",
                              root=root,
                              ignored_files=ignored, progress=progress, workers=workers,
                              ingest_with=ingest_with)
    errors, warnings = corpus.import_problem_counts
    seconds = time.perf_counter() - started
    reused = (f"{corpus.cached_files:,} of them unchanged since the last time, "
              if corpus.cached_files else "")
    click.echo(f"{path}: {plural(len(files), 'file')}, {plural(len(corpus.sessions), 'session')}, "
               f"{plural(sum(corpus.call_counts), 'tool call')}; {reused}prepared in "
               f"{seconds:.1f} s; {plural(errors, 'import error')}, {plural(warnings, 'warning')} "
               "(loopscope replay shows them)")
    lost = corpus.import_totals.lost_text()
    if lost:  # (the calls the replays of this folder will not have)
        click.echo(f"{path}: {lost} (see the warnings of loopscope replay)")
