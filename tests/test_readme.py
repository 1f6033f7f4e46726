"""The README's parts that could drift are checked against the code: the settings tables are
what ``loopscope engines --markdown`` prints, every option of ``replay --help`` is documented,
and the "Adding a guard" example is a working engine."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

from click.testing import CliRunner

from loopscope.cli import main
from loopscope.cli.engines import settings_markdown

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SAMPLES = ROOT / "sample_transcripts"


def test_the_settings_tables_are_generated_from_the_schemas() -> None:
    block = re.search(r"<!-- settings:begin -->\n(.*?)<!-- settings:end -->", README, re.S)
    assert block, "the README has no settings block"
    assert block.group(1) == settings_markdown(), (
        "README.md's settings tables are out of date: run `python docs/update_readme.py`")


def test_every_replay_option_is_documented() -> None:
    help_text = CliRunner().invoke(main, ["replay", "--help"]).output
    options = set(re.findall(r"(--[a-z][a-z-]+)", help_text)) - {"--help"}
    table = README[README.index("## Command line"):README.index("## Session formats")]
    missing = sorted(o for o in options if o not in table)
    assert not missing, f"options of `loopscope replay --help` missing in README: {missing}"


def test_the_plug_in_example_is_a_working_engine(tmp_path: Path) -> None:
    section = README[README.index("### Adding a guard"):]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code
    module = tmp_path / "readme_guard.py"
    module.write_text(code.group(1), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("readme_guard", module)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["readme_guard"] = mod
    try:
        spec.loader.exec_module(mod)
        engine = mod.ENGINE
        from loopscope.formats import load_file

        session = load_file(SAMPLES / "write_loop_refused_at_third_batch.json").sessions[0]
        replay = engine.run(engine.prepare(session), engine.config({}).config)
        assert replay.first_refusal is not None and replay.first_refusal.detector == "same_call"
        relaxed = engine.run(engine.prepare(session), engine.config({"max_repeats": 5}).config)
        assert relaxed.first_refusal is None
    finally:
        sys.modules.pop("readme_guard", None)


def test_every_local_link_and_image_exists() -> None:
    """A moved file or a screenshot never committed shows as a broken picture on the front page."""
    targets = re.findall(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", README)
    local = [t for t in targets if not re.match(r"[a-z]+:", t)]
    assert "docs/overview.png" in local
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"
