"""Qwen Code's table path: one JSON text per session, and no columnar re-run.

The other engines lay a corpus out as numpy columns and re-run a configuration in vectorised
passes. Qwen Code has no such path: its run feeds every prepared event through the service
again (:mod:`.fast`), because nothing of its detectors' state is summarised ahead of a run.
What it does have is a table: the prepared data of :mod:`.fast` written as one JSON text per
session (:func:`~loopscope.engines.table.json_table_spec`), so worker processes hand a corpus
back as arrays, the on-disk cache keeps it in one file, and a session is decoded only when it
is read. :meth:`run_many` is then the contract's default, one session at a time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loopscope.engines.contract import BaseEngine
    from loopscope.engines.table import TableSpec

__all__ = ["table_spec"]


def table_spec(engine: BaseEngine[Any, Any], version: str | None = None) -> TableSpec:
    """The table of ``engine``'s prepared sessions: its JSON codec (``encode_prepared`` /
    ``decode_prepared``, :func:`.fast.encode` / :func:`.fast.decode`) per session, no columns."""
    from loopscope.engines.table import json_table_spec

    return json_table_spec(engine, version)
