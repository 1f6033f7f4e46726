"""Config files: reading JSON / JSON5 / TOML, picking each engine's part, and the exports."""

from __future__ import annotations

import json
from pathlib import Path

import json5
import pytest

from loopscope import config_io
from loopscope.engines import get_engine
from loopscope.engines.openclaw.v2026_6.config import validate_block


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_reads_json_json5_and_toml(tmp_path: Path) -> None:
    assert config_io.read_config_file(write(tmp_path, "a.json", '{"max_observation_steps": 30}')) == {
        "max_observation_steps": 30}
    doc = config_io.read_config_file(write(tmp_path, "b.json5", "{tools: {loopDetection: {enabled: true,}}, // c\n}"))
    assert doc == {"tools": {"loopDetection": {"enabled": True}}}
    doc = config_io.read_config_file(write(tmp_path, "c.toml", "[gglib]\nmax_repeated_batch_steps = 3\n"))
    assert doc == {"gglib": {"max_repeated_batch_steps": 3}}


def test_a_json_file_with_comments_is_read_as_json5(tmp_path: Path) -> None:
    doc = config_io.read_config_file(write(tmp_path, "openclaw.json", "// mine\n{tools: {}}"))
    assert doc == {"tools": {}}


def test_unknown_extension_is_chosen_by_content(tmp_path: Path) -> None:
    assert config_io.read_config_file(write(tmp_path, "cfg", '{"a": 1}')) == {"a": 1}
    assert config_io.read_config_file(write(tmp_path, "cfg2", "a = 1\n")) == {"a": 1}


@pytest.mark.parametrize(
    ("name", "text", "fragment"),
    [
        ("bad.json", "{not json", "cannot parse"),
        ("list.json", "[1, 2]", "top level must be an object"),
        ("bad.toml", "a = = 1", "cannot parse"),
        ("deep.json", "[" * 100_000 + "]" * 100_000, ""),
    ],
)
def test_bad_files_give_a_message_naming_the_file(tmp_path: Path, name: str, text: str, fragment: str) -> None:
    p = write(tmp_path, name, text)
    with pytest.raises(config_io.ConfigFileError) as exc:
        config_io.read_config_file(p)
    assert str(p) in str(exc.value)
    assert fragment in str(exc.value)


def test_missing_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(config_io.ConfigFileError, match="cannot read"):
        config_io.read_config_file(tmp_path / "nope.json")
    p = tmp_path / "bin.json"
    p.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(config_io.ConfigFileError, match="not UTF-8"):
        config_io.read_config_file(p)


def test_engine_settings_picks_each_engines_part() -> None:
    both = {"gglib": {"max_repeated_batch_steps": 3}, "openclaw": {"tools": {"loopDetection": {}}}}
    assert config_io.engine_settings(both, "gglib") == {"max_repeated_batch_steps": 3}
    assert config_io.engine_settings(both, "openclaw") == {"tools": {"loopDetection": {}}}
    only_oc = {"openclaw": {}}
    assert config_io.engine_settings(only_oc, "gglib") is None
    plain = {"tools": {"loopDetection": {"enabled": True}}}
    assert config_io.engine_settings(plain, "openclaw") is plain
    with pytest.raises(KeyError):
        config_io.engine_settings(plain, "other")


def _configs() -> tuple[object, object]:
    gg = get_engine("gglib").resolve_config(None, [("max_observation_steps", "none"),
                                                   ("observation_tools", "read_file,list_dir")]).config
    oc = get_engine("openclaw").resolve_config(None, [("warningThreshold", "25"),
                                                      ("detectors.pingPong", "false")]).config
    return gg, oc


def _export(engine: str, config: object) -> str:
    (item,) = get_engine(engine).exports(config)
    return item.text


def test_openclaw_export_is_json5_with_enabled_stated_and_effective_values() -> None:
    from loopscope.engines.openclaw.shared.config import JSON5_EXPORT_COMMENT

    _, oc = _configs()
    text = _export("openclaw", oc)
    assert JSON5_EXPORT_COMMENT in text
    block = json5.loads(text)["tools"]["loopDetection"]
    assert block["enabled"] is True
    assert (block["warningThreshold"], block["criticalThreshold"]) == (25, 26)
    assert block["detectors"]["pingPong"] is False
    assert validate_block(block, "tools.loopDetection") == []  # OpenClaw's schema accepts it


def test_exports_round_trip_through_the_engines() -> None:
    gg, oc = _configs()
    doc = json.loads(config_io.loopscope_config_json({"gglib": gg, "openclaw": oc}))
    assert doc == config_io.loopscope_config_document({"gglib": gg, "openclaw": oc})
    g2 = get_engine("gglib").resolve_config(config_io.engine_settings(doc, "gglib"), []).config
    o2 = get_engine("openclaw").resolve_config(config_io.engine_settings(doc, "openclaw"), []).config
    assert g2 == gg
    assert o2.settings() == oc.settings()  # type: ignore[attr-defined]
    g3 = get_engine("gglib").resolve_config(json.loads(_export("gglib", gg)), []).config
    assert g3 == gg
    o3 = get_engine("openclaw").resolve_config(json5.loads(_export("openclaw", oc)), []).config
    assert o3.settings() == oc.settings()  # type: ignore[attr-defined]


def test_a_written_file_is_read_back(tmp_path: Path) -> None:
    gg, oc = _configs()
    configs = {"gglib": gg, "openclaw": oc}
    p = write(tmp_path, "loopscope.json", config_io.loopscope_config_json(configs))
    assert config_io.read_config_file(p) == config_io.loopscope_config_document(configs)
