"""Reading and writing loopscope configuration files (product spec §3 ``--config``, §4 Export).

A config file is JSON, JSON5 or TOML with an object at the top level. It may be:

* the loopscope document this module writes, holding both engines::

      {"gglib": {"max_repeated_batch_steps": 2, ...},
       "openclaw": {"tools": {"loopDetection": {"enabled": true, ...}}}}

* an OpenClaw config as users have it (``tools.loopDetection``, ``agents.list[]``), or a bare
  ``loopDetection`` block;
* a gglib settings object (the four snake_case keys at the top level).

:func:`engine_settings` picks the part of a document that one engine's ``resolve_config``
reads. The writers produce the exports of the dashboard: they take plain mappings (each
engine's effective settings in its native key names), so this module imports no engine and no
UI library.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import json5

__all__ = [
    "MAX_CONFIG_BYTES",
    "ConfigFileError",
    "engine_settings",
    "gglib_settings_json",
    "loopscope_config_document",
    "loopscope_config_json",
    "openclaw_loop_detection_json5",
    "parse_config_text",
    "read_config_file",
]

MAX_CONFIG_BYTES = 4 * 1024 * 1024
"""A configuration file is small; anything bigger is refused before parsing."""

OPENCLAW_ENABLED_COMMENT = "// OpenClaw's default is false; loopscope replays with true"


class ConfigFileError(ValueError):
    """A config file that cannot be read. The message names the file and the reason."""


# --------------------------------------------------------------------------- reading


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Parse ``path`` as JSON, JSON5 or TOML (chosen by extension, then by content).

    Raises :class:`ConfigFileError` naming the file when it cannot be read or parsed, or when
    its top level is not an object.
    """
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise ConfigFileError(
                f"{p}: the file is {size} bytes; a config file may be at most "
                f"{MAX_CONFIG_BYTES} bytes"
            )
        data = p.read_bytes()
    except OSError as exc:
        raise ConfigFileError(f"{p}: cannot read the file ({exc.strerror or exc})") from exc
    return parse_config_text(data, name=str(p))


def parse_config_text(data: bytes | str, name: str = "<config>") -> dict[str, Any]:
    """Parse config bytes or text; ``name`` (a file name) chooses the syntax by its extension.

    ``.json`` is read as JSON, falling back to JSON5 (people write comments in ``.json``
    files); ``.json5`` as JSON5; ``.toml`` as TOML. Any other name: JSON, then JSON5, then
    TOML, the first that parses.
    """
    if isinstance(data, bytes):
        if len(data) > MAX_CONFIG_BYTES:
            raise ConfigFileError(f"{name}: a config file may be at most {MAX_CONFIG_BYTES} bytes")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ConfigFileError(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    else:
        text = data
    suffix = Path(name).suffix.lower()
    if suffix == ".toml":
        parsers = [("TOML", _parse_toml)]
    elif suffix == ".json5":
        parsers = [("JSON5", _parse_json5)]
    elif suffix == ".json":
        parsers = [("JSON", _parse_json), ("JSON5", _parse_json5)]
    else:
        parsers = [("JSON", _parse_json), ("JSON5", _parse_json5), ("TOML", _parse_toml)]
    errors: list[str] = []
    for syntax, parse in parsers:
        try:
            value = parse(text)
        except (ValueError, TypeError, RecursionError, tomllib.TOMLDecodeError) as exc:
            errors.append(f"{syntax}: {_one_line(exc)}")
            continue
        if not isinstance(value, dict):
            raise ConfigFileError(
                f"{name}: the top level must be an object, got {type(value).__name__}"
            )
        return value
    raise ConfigFileError(f"{name}: cannot parse the file ({'; '.join(errors)})")


def _parse_json(text: str) -> Any:
    return json.loads(text)


def _parse_json5(text: str) -> Any:
    return json5.loads(text)


def _parse_toml(text: str) -> Any:
    return tomllib.loads(text)


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]


def engine_settings(document: Mapping[str, Any], engine: str) -> Mapping[str, Any] | None:
    """The part of a config document that ``engine``'s ``resolve_config`` reads.

    A loopscope document holds each engine under its name (``"gglib"``, ``"openclaw"``); any
    other document is handed over whole (a gglib settings object, or an OpenClaw config with
    ``tools.loopDetection``): each engine ignores the keys it does not know. ``None`` when the
    loopscope document's entry for ``engine`` is absent while the other engine's is present.
    """
    if engine not in ("gglib", "openclaw"):
        raise KeyError(engine)
    if "gglib" in document or "openclaw" in document:
        part = document.get(engine)
        if part is None:
            return None
        if not isinstance(part, Mapping):
            raise ConfigFileError(f'"{engine}" must be an object, got {type(part).__name__}')
        return part
    return document


# --------------------------------------------------------------------------- writing


def loopscope_config_document(
    gglib_cfg: Mapping[str, Any] | Any, openclaw_cfg: Mapping[str, Any] | Any
) -> dict[str, Any]:
    """The document ``loopscope replay --config`` reads, holding both engines' settings.

    ``gglib_cfg``: the four gglib keys (or a config object with ``to_json()``).
    ``openclaw_cfg``: the effective ``loopDetection`` block in OpenClaw's camelCase keys (or an
    ``OpenClawConfig``, whose ``export_block()`` is used). ``enabled`` is always written.
    """
    return {
        "gglib": _plain(gglib_cfg),
        "openclaw": {"tools": {"loopDetection": _loop_detection_block(openclaw_cfg)}},
    }


def loopscope_config_json(gglib_cfg: Any, openclaw_cfg: Any) -> str:
    """:func:`loopscope_config_document` as indented JSON text (with a final newline)."""
    return json.dumps(loopscope_config_document(gglib_cfg, openclaw_cfg), indent=2) + "\n"


def gglib_settings_json(gglib_cfg: Mapping[str, Any] | Any) -> str:
    """The gglib settings object as indented JSON (engine-gglib §3.3)."""
    return json.dumps(_plain(gglib_cfg), indent=2) + "\n"


def openclaw_loop_detection_json5(openclaw_cfg: Mapping[str, Any] | Any) -> str:
    """``{tools: {loopDetection: {...}}}`` as JSON5 text, ready to paste into ``openclaw.json``.

    ``enabled`` is written explicitly, with the comment the OpenClaw spec (§5.5) asks for.
    """
    block = _loop_detection_block(openclaw_cfg)
    lines = [
        "// OpenClaw tool-loop detection settings, exported by loopscope.",
        "// Paste into your OpenClaw config (openclaw.json).",
        "{",
        "  tools: {",
        "    loopDetection: {",
    ]
    for key, value in block.items():
        if key == "enabled":
            lines.append(f"      {OPENCLAW_ENABLED_COMMENT}")
        lines.append(f"      {_json5_key(key)}: {_json5_value(value, indent=6)},")
    lines += ["    },", "  },", "}"]
    return "\n".join(lines) + "\n"


def _json5_key(key: str) -> str:
    if key.isidentifier():
        return key
    return json.dumps(key)


def _json5_value(value: Any, indent: int) -> str:
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        pad = " " * (indent + 2)
        inner = [f"{pad}{_json5_key(str(k))}: {_json5_value(v, indent + 2)}," for k, v in value.items()]
        return "{\n" + "\n".join(inner) + "\n" + " " * indent + "}"
    return json.dumps(value)


def _plain(cfg: Any) -> dict[str, Any]:
    if isinstance(cfg, Mapping):
        out = dict(cfg)
    elif hasattr(cfg, "to_json"):
        out = dict(cfg.to_json())
    else:
        raise TypeError(f"cannot export a {type(cfg).__name__} as settings")
    if "observation_tools" in out and isinstance(out["observation_tools"], tuple):
        out["observation_tools"] = list(out["observation_tools"])
    return out


def _loop_detection_block(cfg: Any) -> dict[str, Any]:
    if isinstance(cfg, Mapping):
        block = dict(cfg)
    elif hasattr(cfg, "export_block"):
        block = dict(cfg.export_block())
    elif hasattr(cfg, "to_loop_detection"):
        block = dict(cfg.to_loop_detection())
    elif hasattr(cfg, "to_json"):
        block = dict(cfg.to_json())
    else:
        raise TypeError(f"cannot export a {type(cfg).__name__} as a loopDetection block")
    # A bare document ({"tools": {"loopDetection": …}}) is unwrapped.
    tools = block.get("tools")
    if isinstance(tools, Mapping) and isinstance(tools.get("loopDetection"), Mapping):
        block = dict(tools["loopDetection"])
    # ``enabled`` first and always present: OpenClaw's own default is false (spec §5.5).
    enabled = block.pop("enabled", True)
    return {"enabled": True if enabled is None else bool(enabled), **block}
