"""``loopscope cache``: where the on-disk cache of prepared sessions is, how big, and clearing
it (always safe: it is rebuilt on the next load)."""

from __future__ import annotations

import click

from loopscope import cache
from loopscope.words import plural


@click.group(name="cache")
def cache_group() -> None:
    """The on-disk cache of prepared sessions (safe to delete at any time)."""


@cache_group.command(name="info")
def cache_info() -> None:
    """Where the cache is and how much it holds."""
    entries, size = cache.stats()
    state = "on" if cache.active() else "off (LOOPSCOPE_CACHE=off)"
    click.echo(f"{cache.cache_dir()}: {_entries(entries)}, {size / 1e6:.1f} MB; cache {state}")


@cache_group.command(name="clear")
def cache_clear() -> None:
    """Delete every cached entry (the next load prepares the sessions again)."""
    entries, size = cache.clear()
    click.echo(f"removed {_entries(entries)} ({size / 1e6:.1f} MB) from {cache.cache_dir()}")


def _entries(count: int) -> str:
    return plural(count, "entry", "entries")
