"""``loopscope replay`` end to end: the published parity sets through the real command.

These run exactly the commands the parity READMEs give (from the parity folder, both with
``--set`` pairs and with ``--config configs/<name>.json``) and compare with the matching rules
stated there: same sessions in sorted order, same ``session``/``source``, equal
``first_refusal``, same step count, and every expected step key equal with strict types.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from tests.conftest import REFERENCE, SAMPLES

from loopscope.cli import main

PARITY = REFERENCE / "parity"


def _configs(engine: str) -> list[dict[str, Any]]:
    path = PARITY / engine / "configs.json"
    if not path.is_file():
        return []
    return json.loads(path.read_text())["configs"]


def run_cli(args: list[str], cwd: Path | None = None) -> tuple[int, str, str]:
    """Invoke ``loopscope`` in-process, optionally from ``cwd`` (sources are relative)."""
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, args, catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout, result.stderr


def strict_equal(a: Any, b: Any) -> bool:
    """JSON equality where 1, 1.0 and true differ (the parity README's rule)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def assert_matches_expected(engine: str, name: str, stdout: str) -> int:
    expected_lines = (PARITY / engine / "expected" / f"{name}.jsonl").read_text().splitlines()
    expected = [orjson.loads(line) for line in expected_lines if line.strip()]
    actual = [orjson.loads(line) for line in stdout.splitlines() if line.strip()]
    assert [a["source"] for a in actual] == [e["source"] for e in expected]
    compared_steps = 0
    for exp, act in zip(expected, actual, strict=True):
        where = f"{name}: {exp['source']}"
        assert act["session"] == exp["session"], where
        assert act["engine"] == engine, where
        assert strict_equal(act["first_refusal"], exp["first_refusal"]), where
        assert len(act["steps"]) == len(exp["steps"]), where
        for i, (es, as_) in enumerate(zip(exp["steps"], act["steps"], strict=True)):
            for key, value in es.items():
                assert key in as_, f"{where} step {i}: missing {key}"
                assert strict_equal(as_[key], value), (
                    f"{where} step {i} {key}: expected {value!r}, got {as_[key]!r}")
            compared_steps += 1
    return compared_steps


@pytest.mark.parametrize("engine", ["gglib", "openclaw"])
@pytest.mark.parametrize("via", ["set", "config"])
def test_parity_sets_through_the_cli(engine: str, via: str) -> None:
    configs = _configs(engine)
    if not configs:
        pytest.skip("parity set not found beside the repository")
    folder = PARITY / engine
    total_steps = 0
    for config in configs:
        args = ["replay", "sessions", "--engine", engine, "--json"]
        if via == "set":
            for pair in config["set"]:
                args += ["--set", pair]
        else:
            args += ["--config", f"configs/{config['name']}.json"]
        code, stdout, stderr = run_cli(args, cwd=folder)
        assert code == 0, f"{config['name']}: exit {code}\n{stderr}"
        total_steps += assert_matches_expected(engine, config["name"], stdout)
    assert total_steps > 0


def test_json_output_contract_on_samples() -> None:
    if not SAMPLES.is_dir() or not any(SAMPLES.iterdir()):
        pytest.skip("no samples yet")
    for engine in ("gglib", "openclaw"):
        code, stdout, stderr = run_cli(["replay", str(SAMPLES), "--engine", engine, "--json"])
        assert code == 0, stderr
        lines = [orjson.loads(line) for line in stdout.splitlines()]
        assert lines, "every session is printed"
        sources = [line["source"] for line in lines]
        assert sources == sorted(sources, key=lambda s: (s.split("#")[0], s)), "sorted path order"
        for line in lines:
            assert set(line) == {"session", "source", "format", "engine", "steps", "first_refusal"}
            seen_refusal = False
            for step in line["steps"]:
                assert step["verdict"] in ("pass", "warn", "refuse")
                assert (step["detector"] is None) == (step["verdict"] == "pass")
                assert step["after_divergence"] == seen_refusal
                seen_refusal = seen_refusal or step["verdict"] == "refuse"
            first = next((s for s in line["steps"] if s["verdict"] == "refuse"), None)
            if first is None:
                assert line["first_refusal"] is None
            else:
                assert line["first_refusal"] == {
                    "turn": first["turn"], "call": first["call"], "detector": first["detector"]}


def test_fail_on_refusal_exit_code(tmp_path: Path) -> None:
    session = {"messages": [
        {"role": "user", "content": "fix a.rs"},
        *[m for i in range(3) for m in (
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{i}", "type": "function",
                 "function": {"name": "write_file", "arguments": "{\"path\": \"a.rs\"}"}}]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "1 file changed"},
        )],
    ]}
    path = tmp_path / "loop.json"
    path.write_text(json.dumps(session))
    code, stdout, _ = run_cli(["replay", str(path), "--engine", "gglib", "--json"])
    assert code == 0
    assert orjson.loads(stdout)["first_refusal"] == {"turn": 2, "call": 2, "detector": "loop"}
    code, _, _ = run_cli(["replay", str(path), "--engine", "gglib", "--fail-on-refusal"])
    assert code == 1
    code, _, _ = run_cli(["replay", str(path), "--engine", "gglib", "--fail-on-refusal",
                          "--set", "max_repeated_batch_steps=3"])
    assert code == 0


def test_bad_input_is_reported_and_the_rest_still_replays(tmp_path: Path) -> None:
    good = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    (tmp_path / "a_good.json").write_text(json.dumps(good))
    (tmp_path / "b_broken.json").write_text('{"messages": [')
    (tmp_path / "c_junk.json").write_bytes(b"\x00\x01\x02binary")
    code, stdout, stderr = run_cli(["replay", str(tmp_path), "--engine", "gglib", "--json"])
    assert code == 2
    sources = [orjson.loads(line)["source"] for line in stdout.splitlines()]
    assert any(s.endswith("a_good.json") for s in sources)
    assert "b_broken.json" in stderr and "c_junk.json" in stderr


@pytest.mark.parametrize(("pair", "needle"), [
    ("no_such_key=1", "no_such_key"),
    ("max_repeated_batch_steps=lots", "max_repeated_batch_steps"),
    ("novalue", "KEY=VALUE"),
])
def test_bad_set_exits_2_naming_the_key(tmp_path: Path, pair: str, needle: str) -> None:
    (tmp_path / "s.json").write_text(json.dumps({"messages": []}))
    code, _, stderr = run_cli(["replay", str(tmp_path), "--engine", "gglib", "--set", pair])
    assert code == 2
    assert needle in stderr


def test_missing_path_exits_2_but_replays_the_others(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text(json.dumps({"messages": [{"role": "assistant", "content": "x"}]}))
    code, stdout, stderr = run_cli(["replay", str(tmp_path / "nope.json"), str(tmp_path / "s.json"),
                                    "--engine", "openclaw", "--json"])
    assert code == 2
    assert "nope.json" in stderr
    assert len(stdout.splitlines()) == 1


def test_fail_on_false_refusal_uses_the_labels_next_to_the_sessions(tmp_path: Path) -> None:
    loop = {"messages": [
        {"role": "user", "content": "fix a.rs"},
        *[m for i in range(3) for m in (
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{i}", "type": "function",
                 "function": {"name": "write_file", "arguments": "{\"path\": \"a.rs\"}"}}]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "1 file changed"},
        )],
    ]}
    (tmp_path / "s.json").write_text(json.dumps(loop))
    (tmp_path / "labels.csv").write_text("source,label,from_turn\ns.json,loop,1\n")
    code, stdout, _ = run_cli(["replay", str(tmp_path), "--engine", "gglib", "--fail-on-false-refusal"])
    assert code == 0, "a refused session labelled loop is a catch, not a false refusal"
    assert "labelled loop from turn 2" in stdout  # 1-based in readable output
    assert "0 labelled ok but refused" in stdout
    (tmp_path / "labels.csv").write_text("source,label,from_turn\ns.json,ok,\n")
    code, stdout, _ = run_cli(["replay", str(tmp_path), "--engine", "gglib", "--fail-on-false-refusal"])
    assert code == 1
    assert "1 labelled ok but refused" in stdout
    assert ("advice: What would let it through: The smallest change that lets this session "
            "through changes no other session.") in stdout
    assert ("Raise “Repeats allowed for tools that change things” from 2 to 3 (--set "
            "max_repeated_batch_steps=3) [smallest harmless change]: this session is never "
            "refused; no other session changes.") in stdout


def _chat(*batches: tuple[str, str]) -> dict[str, Any]:
    """An OpenAI-chat session: one user turn, then one tool call per batch and its result."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "fix a.rs"}]
    for i, (tool, result) in enumerate(batches):
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function",
             "function": {"name": tool, "arguments": "{\"path\": \"a.rs\"}"}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": result})
    return {"messages": messages}


def _advice_lines(stdout: str, name: str) -> list[str]:
    """The advice lines of one session's block in the text output."""
    block = stdout.split(name, 1)[1].split("\n/", 1)[0]
    return [line.strip() for line in block.splitlines() if line.startswith(("  advice:", "    - "))]


def test_a_labelled_loop_that_was_caught_gets_no_advice_to_loosen(tmp_path: Path) -> None:
    """A refusal the label agrees with is the guard doing its job: no change is advised (the
    old text offered the change that would let the loop through)."""
    (tmp_path / "loop.json").write_text(json.dumps(_chat(*[("write_file", "1 file changed")] * 3)))
    (tmp_path / "good.json").write_text(json.dumps(_chat(("write_file", "1 file changed"))))
    (tmp_path / "labels.csv").write_text("source,label,from_turn\nloop.json,loop,1\n"
                                         "good.json,ok,\n")
    code, stdout, _ = run_cli(["replay", str(tmp_path), "--engine", "gglib"])
    assert code == 0
    lines = _advice_lines(stdout, "loop.json")
    assert lines == ["advice: Nothing to change: this real loop is caught, as its label says "
                     "it should be."]
    assert "--set" not in stdout and "lets it through" not in stdout
    # The detector is named in plain words, and whether the refusal stops the agent is said.
    assert "by loop" not in stdout and "the same set of tool calls again and again" in stdout
    assert "for the agent: In gglib's default mode this refusal is a note" in stdout


def test_a_missed_loop_gets_the_smallest_change_that_catches_it(tmp_path: Path) -> None:
    """A labelled loop the guard never refused: the advice tightens (the old text said
    nothing), with what the change does to the other session."""
    reads = [("read_file", "fn main() {}")] * 5
    (tmp_path / "missed.json").write_text(json.dumps(_chat(*reads)))
    (tmp_path / "good.json").write_text(json.dumps(_chat(*reads[:4])))
    (tmp_path / "labels.csv").write_text("source,label,from_turn\nmissed.json,loop,1\n"
                                         "good.json,ok,\n")
    code, stdout, _ = run_cli(["replay", str(tmp_path), "--engine", "gglib"])
    assert code == 0
    lines = _advice_lines(stdout, "missed.json")
    assert lines[0].startswith("advice: What would catch it (at turn 5): The smallest change "
                               "that catches this loop changes no other session.")
    assert ("- Lower “Repeats allowed for read-only tools” from 15 to 4 (--set "
            "max_observation_steps=4) [smallest harmless change]: this session is first refused "
            "at call 5 (turn 5); no other session changes.") in lines
    assert _advice_lines(stdout, "good.json") == []


def test_unreadable_config_file_exits_2_naming_it(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text(json.dumps({"messages": []}))
    bad = tmp_path / "cfg.json"
    bad.write_text("{not: valid, json5 either")
    for engine in ("gglib", "openclaw"):
        code, _, stderr = run_cli(["replay", str(tmp_path / "s.json"), "--engine", engine,
                                   "--config", str(bad)])
        assert code == 2
        assert "cfg.json" in stderr


def test_openclaw_enabled_default_is_stated() -> None:
    if not SAMPLES.is_dir():
        pytest.skip("no samples")
    _, _, stderr = run_cli(["replay", str(SAMPLES), "--engine", "openclaw", "--json"])
    assert "replays with enabled: true" in stderr
    _, _, stderr = run_cli(["replay", str(SAMPLES), "--engine", "openclaw", "--json",
                            "--set", "enabled=false"])
    assert "replays with enabled: true" not in stderr


def _commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for name, command in getattr(group, "commands", {}).items():
        found += _commands(command, (*path, name))
    return found


@pytest.mark.parametrize("command", _commands(main), ids=lambda c: " ".join(c) or "loopscope")
def test_every_help_text_is_plain_text(command: tuple[str, ...]) -> None:
    """Help is read in a terminal: docstring markup (``code``, :func:`x`) must not leak into it."""
    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0, result.output
    for markup in ("``", ":func:", ":class:", ":meth:"):
        assert markup not in result.output, f"{' '.join(command)} --help shows {markup!r}"
