"""The prefix property on every session of ``sample_transcripts/``, any format: each step up to
the first refusal agrees with upstream's ``scan_history`` on the transcript up to it.

Sessions are read through the importers (``loopscope.formats.load_paths``) and walked through
their OpenAI-chat view; the fast path must equal the reference on each, for several configs.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.engines.gglib._gglib_helpers import SAMPLES, prefix_property

from loopscope.engines.gglib import ENGINE, GglibConfig

CONFIGS = [
    GglibConfig(),
    GglibConfig(1, None, max_stagnation_steps=1),
    GglibConfig(3, 3, max_stagnation_steps=2),
    GglibConfig(2, 15, ()),
]


def _sessions() -> list[Any]:
    if not SAMPLES.is_dir():
        pytest.skip(f"no sample_transcripts at {SAMPLES}")
    formats = pytest.importorskip("loopscope.formats")
    if not hasattr(formats, "load_paths"):
        pytest.skip("loopscope.formats.load_paths is not available yet")
    sessions = formats.load_paths([SAMPLES]).sessions
    if not sessions:
        pytest.skip("sample_transcripts holds no sessions yet")
    return sessions


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: repr(c.to_json())[:60])
def test_prefix_property_on_sample_transcripts(config: GglibConfig) -> None:
    failures = {}
    for session in _sessions():
        view = session.chat_view()
        assert ENGINE.run(ENGINE.prepare(session), config) == ENGINE.replay(session, config)
        problems = prefix_property(view, config)
        if problems:
            failures[session.source] = problems[:3]
    assert not failures, failures
