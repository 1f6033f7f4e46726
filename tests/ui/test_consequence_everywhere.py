"""Whether a refusal stops the agent, for every guard (issue #33): on a sample session each
guard refuses, the top of the session page (the "Why did it stop?" block) and
``loopscope replay``'s text say, in that guard's own sentence, what the refusal does in the
guard's own deployment — never the neutral "loopscope does not know" a plug-in gets, and the
same sentence on both.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from click.testing import CliRunner
from streamlit.testing.v1 import AppTest
from tests.ui.test_advice_everywhere import APP, PAGES, ROOT, SAMPLES, as_text

from loopscope.cli import main
from loopscope.engines import engine_names, get_engine
from loopscope.engines.contract import consequence_of, default_consequence
from loopscope.formats import load_paths

BUILT_IN = ("gglib", "openclaw", "openhands", "gemini-cli", "qwen-code")


def _refused_sample(name: str) -> tuple[str, str]:
    """The first sample file (a file of one session) ``name`` refuses at its defaults, and the
    sentence its first refusal's explanation gives for the agent."""
    engine = get_engine(name)
    config = engine.default_config()
    sessions = load_paths([str(SAMPLES)]).sessions
    counts: dict[str, int] = {}
    for s in sessions:
        counts[Path(s.source).name] = counts.get(Path(s.source).name, 0) + 1
    for s in sessions:
        replay = engine.replay(s, config)
        if replay.first_refusal is None or counts[Path(s.source).name] > 1:
            continue
        step = next(x for x in replay.steps if x.verdict == "refuse")
        return Path(s.source).name, consequence_of(engine, engine.explainer.explain_step(
            step, replay, config))
    raise AssertionError(f"no sample session is refused by {name}")


def test_every_built_in_guard_is_in_the_registry() -> None:
    assert set(BUILT_IN) <= set(engine_names())


@pytest.mark.parametrize("name", BUILT_IN)
def test_the_top_of_the_session_says_whether_the_refusal_stops_the_agent(name: str) -> None:
    engine = get_engine(name)
    source, sentence = _refused_sample(name)
    assert sentence != default_consequence(engine.title), (
        f"{engine.title} does not say whether its refusal stops the agent")
    assert engine.title in sentence

    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params["session"] = source
    at.query_params["engines"] = name
    at.run()
    at.switch_page(str((PAGES / "session.py").relative_to(ROOT)))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    why = [as_text(m.value) for m in at.get_by_key("why").markdown]
    title = next(i for i, t in enumerate(why) if t.startswith(f"#### {engine.title}"))
    # Right under the verdict of this guard's panel (its title, then the sentence).
    assert why[title + 1] == f":material/pan_tool: {sentence}", why[title:title + 3]

    out = CliRunner().invoke(main, ["replay", str(SAMPLES / source), "--engine", name],
                             catch_exceptions=False).stdout
    assert f"  for the agent: {sentence}" in out.splitlines(), out
