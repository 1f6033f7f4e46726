"""``prepare_events`` (the engine's path for sessions that are not OpenAI-chat) gives exactly what
``prepare_messages`` gives on the session's chat view, field by field."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import pytest
from tests.engines.openclaw._openclaw_gen import random_session

from loopscope.engines.gglib import ENGINE, GglibConfig, prepare_events, prepare_messages
from loopscope.formats import load_paths
from loopscope.formats.builder import SessionBuilder
from loopscope.model import Session

SAMPLES = Path(__file__).resolve().parents[3] / "sample_transcripts"


def _fields(prepared: Any) -> dict[str, Any]:
    return {f.name: getattr(prepared, f.name) for f in dataclasses.fields(prepared)
            if not f.name.startswith("_")}


def assert_same_preparation(session: Session) -> None:
    assert _fields(prepare_events(session.events)) == _fields(prepare_messages(session.chat_view()))


def _sample_sessions() -> list[Session]:
    if not SAMPLES.is_dir():
        pytest.skip("sample_transcripts not found")
    return [s for s in load_paths([str(SAMPLES)]).sessions if s.chat_messages is None]


def test_samples_of_every_format() -> None:
    sessions = _sample_sessions()
    assert len({s.format for s in sessions}) >= 3
    for session in sessions:
        assert_same_preparation(session)


def test_generated_sessions() -> None:
    rng = random.Random(8)
    for _ in range(120):
        session = random_session(rng, openclaw=True)
        assert_same_preparation(session)


def test_compactions_free_text_and_odd_results() -> None:
    """A compaction between a batch and its results, free-text arguments, results without ids,
    duplicate result ids, structured contents, prose with and without text, breaks."""
    b = SessionBuilder()
    b.system("sys")
    t = b.assistant("")
    b.call(t, "exec", "ls -la", "free_text", id="a")
    b.compaction("summary")
    b.result("a", [{"type": "text", "text": "out"}], "out")
    t = b.assistant("")
    b.call(t, "exec", "ls -la", "free_text", id="a")
    b.result("a", {"k": [1, 2.0, None]}, "x")
    b.result(None, "orphan", "orphan")
    t = b.assistant("thinking")
    b.call(t, "read", {"path": "a"}, "value", id="b")
    b.call(t, "read", '{"path":"a"}', "json_text", id="c")
    b.result("b", "same", "same")
    b.result("b", "dup", "dup")
    b.assistant("same reply")
    b.assistant("same reply")
    b.assistant("")
    b.user("again")
    b.assistant("same reply")
    t = b.assistant("")
    b.call(t, "", None, "value", id=None)
    b.other("narrator", "aside")
    session = b.build(id="odd", source="odd", format="anthropic_messages")
    assert_same_preparation(session)
    for cfg in (GglibConfig(), GglibConfig(1, None, (), 1)):
        assert ENGINE.run(ENGINE.prepare(session), cfg) == ENGINE.replay(session, cfg)
