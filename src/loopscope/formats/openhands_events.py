"""OpenHands event list (V0 trajectory JSON) — ``openhands_events``.

A JSON array of serialised events, one session; the mapping lives in ``_openhands``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from loopscope.formats._ext_common import CandidateReporter
from loopscope.formats._openhands import AGENT_NAME, map_history
from loopscope.formats.base import ImportContext
from loopscope.model import AgentInfo, Session

FORMAT_ID = "openhands_events"


def import_document(value: Any, ctx: ImportContext) -> Iterator[Session | None]:
    report = CandidateReporter(ctx, 0)
    if not isinstance(value, list):
        report("error", "session_failed", "an OpenHands event list is a JSON array")
        yield None
        return
    history = map_history(value, report, pointer_prefix="")
    metadata: dict[str, Any] = {}
    if history.skipped:
        metadata["skipped"] = history.skipped
    yield history.builder.build(
        id="", source=ctx.path, format=FORMAT_ID, agent=AgentInfo(AGENT_NAME, None),
        models=history.models, metadata=metadata, report=report,
    )
