"""A third-party guard plugs in through the ``loopscope.engines`` entry point, with no change
anywhere in loopscope: the CLI lists it, replays and sweeps with it; the dashboard draws its
controls, its overview column and its session chart.

The plug-in is a real installed distribution (a ``.dist-info`` with ``entry_points.txt`` on the
import path), exactly what ``pip install`` of a team's package would leave behind.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopscope.engines import registry

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_transcripts"

TOY_MODULE = '''
"""A toy guard: refuses a call repeated (same tool, same arguments) more than N times in a
row. One step per call."""

from loopscope.engines.base import FirstRefusal, SessionReplay, Step
from loopscope.engines.contract import BaseEngine, DetectorInfo, SettingSpec


class ToyConfig:
    def __init__(self, max_repeats):
        self.max_repeats = max_repeats

    def __repr__(self):
        return f"ToyConfig({self.max_repeats})"


class ToyEngine(BaseEngine):
    name = "toy"
    title = "Toy guard"
    summary = "Refuses a call repeated more than N times in a row."
    versions = ("1.0",)
    default_version = "1.0"
    step_unit = "call"
    detectors = (DetectorInfo("toy_repeat", "the same call too many times", "", ("refuse",)),)
    schema = (SettingSpec("max_repeats", "Repeats allowed", "int", 2,
                          "How many identical calls in a row pass.", min=1, slider_max=10),)

    def build_config(self, values, version):
        return ToyConfig(values["max_repeats"]), ()

    def config_values(self, config):
        return {"max_repeats": config.max_repeats}

    def prepare(self, session, version=None):
        calls = [(c.turn, c.index, c.name, repr(c.arguments)) for c in session.calls]
        return (session.id, session.source, session.format, calls)

    def run(self, prepared, config):
        sid, source, fmt, calls = prepared
        steps, first, run, last = [], None, 0, None
        for turn, index, name, args in calls:
            run = run + 1 if (name, args) == last else 1
            last = (name, args)
            refused = run > config.max_repeats
            after = first is not None
            step = Step(turn, index, (name,), f"{name}:{args}", "refuse" if refused else "pass",
                        "toy_repeat" if refused else None, run if refused else None, after, {})
            if refused and first is None:
                first = FirstRefusal(turn, index, "toy_repeat")
            steps.append(step)
        return SessionReplay(sid, source, fmt, self.name, tuple(steps), first)

    def replay(self, session, config):
        return self.run(self.prepare(session), config)


ENGINE = ToyEngine()
'''


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An installed ``toyguard`` distribution on ``sys.path`` for this module's tests."""
    folder = tmp_path_factory.mktemp("plugin")
    (folder / "toyguard.py").write_text(textwrap.dedent(TOY_MODULE))
    info = folder / "toyguard-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toyguard\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[loopscope.engines]\ntoy = toyguard:ENGINE\n")
    sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    registry.refresh()
    yield folder
    sys.path.remove(str(folder))
    sys.modules.pop("toyguard", None)
    importlib.invalidate_caches()
    registry.refresh()


def cli(plugin: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "loopscope", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)


def test_the_plugin_is_in_the_registry(plugin_dir: Path) -> None:
    assert "toy" in registry.engine_names()
    assert registry.engine_names()[:2] == ("gglib", "openclaw")  # built-ins keep their order
    assert registry.get_engine("toy").title == "Toy guard"


def test_loopscope_engines_lists_the_plugin_with_its_schema(plugin_dir: Path) -> None:
    out = cli(plugin_dir, "engines", "--json")
    assert out.returncode == 0, out.stderr
    engines = {e["name"]: e for e in map(json.loads, out.stdout.splitlines())}
    assert {"gglib", "openclaw", "toy"} <= set(engines)
    (setting,) = engines["toy"]["settings"]
    assert setting["name"] == "max_repeats" and setting["default"] == 2
    assert setting["deployable"] is True


def test_replay_and_sweep_run_the_plugin(plugin_dir: Path) -> None:
    out = cli(plugin_dir, "replay", str(SAMPLES), "--engine", "toy", "--json")
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert lines and all(r["engine"] == "toy" for r in lines)
    refused = {r["source"] for r in lines if r["first_refusal"]}
    assert any(s.endswith("write_loop_refused_at_third_batch.json") for s in refused)

    relaxed = cli(plugin_dir, "replay", str(SAMPLES), "--engine", "toy", "--set",
                  "max_repeats=100", "--json")
    assert relaxed.returncode == 0, relaxed.stderr
    assert not any(json.loads(line)["first_refusal"] for line in relaxed.stdout.splitlines())

    bad = cli(plugin_dir, "replay", str(SAMPLES), "--engine", "toy", "--set", "nope=1")
    assert bad.returncode == 2 and "max_repeats" in bad.stderr  # the schema names the keys

    sweep = cli(plugin_dir, "sweep", str(SAMPLES), "--engine", "toy", "--vary",
                "max_repeats=1:3", "--json")
    assert sweep.returncode == 0, sweep.stderr
    cells = [json.loads(line) for line in sweep.stdout.splitlines()]
    assert [c["config"]["max_repeats"] for c in cells] == [1, 2, 3]
    refused = [c["metrics"]["refused"] for c in cells]
    assert refused == sorted(refused, reverse=True) and refused[0] > refused[-1]


def test_the_dashboard_shows_the_plugin(plugin_dir: Path) -> None:
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    slider = next(s for s in at.slider if s.key == "toy.max_repeats")  # from the schema
    assert slider.label == "Repeats allowed" and slider.value == 2
    # The overview: a column of the timeline and of the table for the plug-in.
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]  # the legend, the chart
    titles = [a.get("text") for spec in specs for a in spec["layout"].get("annotations", [])]
    assert "Toy guard" in titles
    frame = next(d.value for d in at.dataframe if "session" in getattr(d.value, "columns", []))
    column = frame.set_index("session")["Toy guard first refusal"]
    assert column["write_loop_refused_at_third_batch.json"]
    # Moving its slider re-runs it.
    slider.set_value(10)
    at.run()
    frame = next(d.value for d in at.dataframe if "session" in getattr(d.value, "columns", []))
    assert not frame.set_index("session")["Toy guard first refusal"][
        "write_loop_refused_at_third_batch.json"]
    # The session page draws its chart and explains it.
    at.switch_page("src/loopscope/ui/pages/session.py")
    at.query_params["session"] = "write_loop_refused_at_third_batch.json"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    titles = {json.loads(c.proto.spec)["layout"].get("title", {}).get("text")
              for c in at.get("plotly_chart")}
    assert "Toy guard" in titles
