"""The same advice everywhere (issue #33): for every sample session and every guard, the
session page's advice and ``loopscope replay``'s text advice are the same sentences — both
rendered from :func:`loopscope.advice.session_advice` and :func:`loopscope.advice.advice_words`
on the same sessions, labels and settings. The page adds only markup (bold, badges, a code
span); read as text, each line equals the CLI's.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from click.testing import CliRunner
from streamlit.testing.v1 import AppTest

from loopscope.cli import main
from loopscope.engines import engine_names, get_engine
from loopscope.formats import load_paths

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
SAMPLES = ROOT / "sample_transcripts"
PAGES = ROOT / "src" / "loopscope" / "ui" / "pages"


def _name(source: str) -> str:
    return Path(source).name


def cli_advice(engine: str, version: str) -> dict[str, list[str]]:
    """Session (file name) → its advice lines in ``loopscope replay``'s text output."""
    result = CliRunner().invoke(main, ["replay", str(SAMPLES), "--engine", engine,
                                       "--engine-version", version], catch_exceptions=False)
    out: dict[str, list[str]] = {}
    current = ""
    for line in result.stdout.splitlines():
        if not line.startswith(" ") and "  [" in line:
            current = _name(line.split("  [", 1)[0])
            out[current] = []
        elif line.startswith("  advice: "):
            out[current].append(line.removeprefix("  advice: "))
        elif line.startswith("    - "):
            out[current].append(line.removeprefix("    - "))
    return out


def as_text(markdown: str) -> str:
    """Rendered Markdown read as text: badges as ``[text]``, code spans and bold as their
    text, backslash escapes removed."""
    text = re.sub(r":[a-z]+-badge\[(?::material/\w+: )?((?:\\.|[^\]\\])*)\]", r"[\1]", markdown)
    text = re.sub(r"(`+) ?(.*?) ?\1", r"\2", text)
    text = text.replace("**", "")
    return re.sub(r"\\(.)", r"\1", text)


def page_advice(at: AppTest, engine: str) -> list[str]:
    """The advice lines the session page shows for ``engine`` (its advice container)."""
    try:
        block = at.get_by_key(f"advice-{engine}")
    except KeyError:
        return []
    return [as_text(m.value) for m in block.markdown]


def _versions() -> list[dict[str, str]]:
    """Every engine's default version, then each other version (one page run per row)."""
    rows = [{n: get_engine(n).default_version for n in engine_names()}]
    for n in engine_names():
        for v in get_engine(n).versions:
            if v != get_engine(n).default_version:
                rows.append({**rows[0], n: v})
    return rows


@pytest.mark.parametrize("versions", _versions(),
                         ids=lambda v: "+".join(f"{n}-{x}" for n, x in v.items()))
def test_the_cli_and_the_session_page_give_the_same_advice_on_every_sample(
        versions: dict[str, str]) -> None:
    from loopscope.ui.state import version_key

    sources = [s.source for s in load_paths([str(SAMPLES)]).sessions]
    engines = list(engine_names())
    cli = {e: cli_advice(e, versions[e]) for e in engines}
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params["session"] = _name(sources[0])
    for engine, version in versions.items():
        at.query_params[version_key(engine)] = version
    at.run()
    at.switch_page(str((PAGES / "session.py").relative_to(ROOT)))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    titles = [as_text(m.value) for m in at.markdown if m.value.startswith("#### ")]
    for engine, version in versions.items():  # (the page replays the version asked for)
        if len(get_engine(engine).versions) > 1:
            assert f"#### {get_engine(engine).title} {version}" in titles, titles
    options = at.selectbox(key="session").options
    compared = advised = 0
    for source in sources:
        name = _name(source)
        at.selectbox(key="session").set_value(next(o for o in options if o == name))
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert _name(at.selectbox(key="session").value) == name
        for engine in engines:
            shown = page_advice(at, engine)
            assert shown == cli[engine][name], (engine, name)
            compared += 1
            advised += bool(shown)
    assert compared == len(sources) * len(engines)
    assert advised >= len(sources)  # (most labelled samples get advice under some guard)
    # Every situation appears somewhere: caught, missed, and good work refused.
    every = "\n".join(line for e in engines for lines in cli[e].values() for line in lines)
    for heading in ("Nothing to change:", "What would catch it", "What would let it through:"):
        assert heading in every
