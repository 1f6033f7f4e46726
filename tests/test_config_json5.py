"""Config parsing stays fast and bounded (issue #18): a compiled JSON5 parser, a size cap real
configs fit under with room to spare, and one parse per distinct upload."""

from __future__ import annotations

import time
from pathlib import Path

import json5
import pytest

from loopscope import config_io


def big_json5(target: int) -> str:
    """An OpenClaw config in JSON5 (comments, unquoted keys, single quotes, trailing commas)
    with as many agents as it takes to reach ``target`` bytes."""
    parts = ["// OpenClaw config\n{\n  tools: { loopDetection: { enabled: true, "
             "warningThreshold: 10, }, },\n  agents: {\n    list: [\n"]
    size, n = len(parts[0]), 0
    tail = "    ],\n  },\n}\n"
    while True:
        entry = (f"      {{ id: 'agent-{n}', // agent {n}\n        name: \"Agent number {n}\",\n"
                 f"        tools: {{ loopDetection: {{ historySize: {30 + n % 7}, "
                 "detectors: { pingPong: true, }, }, },\n      },\n")
        if size + len(entry) + len(tail) > target:
            break
        parts.append(entry)
        size += len(entry)
        n += 1
    parts.append(tail)
    return "".join(parts)


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    config_io._CACHE.clear()


def test_the_largest_allowed_config_parses_quickly() -> None:
    text = big_json5(config_io.MAX_CONFIG_BYTES)
    assert config_io.MAX_CONFIG_BYTES - 200 < len(text.encode()) <= config_io.MAX_CONFIG_BYTES
    started = time.perf_counter()
    doc = config_io.parse_config_text(text.encode(), "openclaw.json5")
    elapsed = time.perf_counter() - started
    assert len(doc["agents"]["list"]) > 1000
    assert elapsed < 0.5, f"{elapsed:.2f} s"  # the pure-Python parser took ~4 s


def test_the_compiled_parser_reads_what_the_pure_python_one_reads(
        monkeypatch: pytest.MonkeyPatch) -> None:
    text = big_json5(20_000) + "\n"
    text = text.replace("enabled: true", "enabled: true, hex: 0x1F, inf: Infinity, "
                        "neg: -.5, s: 'it\\'s', esc: \"a\\u00e9\\n\"")
    fast = config_io.parse_config_text(text, "a.json5")
    assert fast == json5.loads(text)
    if config_io._json5_fast is None:
        pytest.skip("pyjson5 is not installed here; json5 is in use")
    monkeypatch.setattr(config_io, "_json5_fast", None)  # a platform without the wheel
    config_io._CACHE.clear()
    assert config_io.parse_config_text(text, "a.json5") == fast


def test_configs_over_the_cap_are_refused_by_name(tmp_path: Path) -> None:
    text = big_json5(config_io.MAX_CONFIG_BYTES + 10_000)
    with pytest.raises(config_io.ConfigFileError, match="at most 262,144 bytes") as caught:
        config_io.parse_config_text(text.encode(), "huge.json5")
    assert "huge.json5" in str(caught.value)
    path = tmp_path / "huge.json5"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(config_io.ConfigFileError, match="256 KiB") as caught:
        config_io.read_config_file(path)
    assert str(path) in str(caught.value)


def test_an_upload_is_parsed_once_however_often_the_page_reruns(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = config_io._parse

    def counting(data: bytes | str, name: str) -> dict[str, object]:
        calls.append(name)
        return real(data, name)

    monkeypatch.setattr(config_io, "_parse", counting)
    data = big_json5(50_000).encode()
    first = config_io.parse_config_text(data, "up.json5")
    first["tools"]["loopDetection"]["enabled"] = False  # a caller changing its copy
    for _ in range(20):
        again = config_io.parse_config_text(data, "up.json5")
        assert again["tools"]["loopDetection"]["enabled"] is True
    assert calls == ["up.json5"]
    config_io.parse_config_text(data + b"\n", "up.json5")  # new content: parsed again
    assert len(calls) == 2


def test_failures_are_remembered_too_and_the_cache_is_bounded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = config_io._parse
    monkeypatch.setattr(config_io, "_parse", lambda d, n: (calls.append(n), real(d, n))[1])
    for _ in range(3):
        with pytest.raises(config_io.ConfigFileError, match=r"bad\.json5"):
            config_io.parse_config_text(b"{a: ,}", "bad.json5")
    assert calls == ["bad.json5"]
    for i in range(config_io.PARSE_CACHE_SIZE + 5):
        config_io.parse_config_text(f'{{"a": {i}}}', "x.json")
    assert len(config_io._CACHE) == config_io.PARSE_CACHE_SIZE


def test_json5_errors_read_as_one_line() -> None:
    with pytest.raises(config_io.ConfigFileError) as caught:
        config_io.parse_config_text("{a: 1,, }", "c.json5")
    message = str(caught.value)
    assert message.startswith("c.json5: cannot parse the file (JSON5: ")
    assert "\n" not in message and "('" not in message


@pytest.mark.parametrize("name", ["d.json", "d.json5", "d.toml"])
def test_nesting_is_bounded_the_same_for_every_syntax(name: str) -> None:
    if name.endswith(".toml"):
        text = "a = " + "[" * 70 + "1" + "]" * 70 + "\n"
    else:
        text = '{"a": ' * 70 + "1" + "}" * 70
    with pytest.raises(config_io.ConfigFileError, match=name):
        config_io.parse_config_text(text, name)
    shallow = text.replace("[" * 70, "[" * 5).replace("]" * 70, "]" * 5)
    if name.endswith(".toml"):
        assert config_io.parse_config_text(shallow, name) == {"a": [[[[[1]]]]]}
