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

import hashlib
import importlib
import json
import threading
import tomllib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
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

MAX_CONFIG_BYTES = 256 * 1024
"""A configuration file is small (an OpenClaw config with many agents is a few KiB); anything
bigger is refused before parsing."""
PARSE_CACHE_SIZE = 16
"""Parsed configs kept by content hash: the dashboard re-reads an uploaded config on every
rerun (each slider move), and parsing it again each time is wasted work."""

OPENCLAW_ENABLED_COMMENT = "// OpenClaw's default is false; loopscope replays with true"


def _compiled_json5() -> ModuleType | None:
    """``pyjson5`` (compiled with Cython: a 256 KiB file in milliseconds), or ``None`` on a
    platform without its wheel, where the pure-Python ``json5`` (~1,000× slower) is used."""
    try:
        return importlib.import_module("pyjson5")
    except ImportError:
        return None


_json5_fast = _compiled_json5()


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
            raise ConfigFileError(_too_large(str(p), size))
        with p.open("rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)  # a file that grew since the stat is refused too
    except OSError as exc:
        raise ConfigFileError(f"{p}: cannot read the file ({exc.strerror or exc})") from exc
    return parse_config_text(data, name=str(p))


def parse_config_text(data: bytes | str, name: str = "<config>") -> dict[str, Any]:
    """Parse config bytes or text; ``name`` (a file name) chooses the syntax by its extension.

    ``.json`` is read as JSON, falling back to JSON5 (people write comments in ``.json``
    files); ``.json5`` as JSON5; ``.toml`` as TOML. Any other name: JSON, then JSON5, then
    TOML, the first that parses.

    Results (and failures) are remembered by a hash of the content and the name, for the last
    :data:`PARSE_CACHE_SIZE` inputs; each call returns its own copy of the document.
    """
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigFileError(_too_large(name, len(data)))
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    key = (hashlib.sha256(raw).hexdigest(), isinstance(data, bytes), name)
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
        if cached is not None:
            _CACHE.move_to_end(key)
    if cached is None:
        try:
            cached = _parse(data, name)
        except ConfigFileError as exc:
            cached = exc
        with _CACHE_LOCK:
            _CACHE[key] = cached
            while len(_CACHE) > PARSE_CACHE_SIZE:
                _CACHE.popitem(last=False)
    if isinstance(cached, ConfigFileError):
        raise ConfigFileError(str(cached))
    return _copy_tree(cached)


def _copy_tree(value: Any) -> Any:
    """A copy of a parsed document's dicts and lists (its leaves are immutable): 20× faster
    than ``copy.deepcopy``, and safe to recurse into since :func:`_parse` bounds the depth."""
    if isinstance(value, dict):
        return {k: _copy_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_tree(v) for v in value]
    return value


MAX_CONFIG_DEPTH = 64
"""Nesting a config may have (real ones have under ten levels)."""


def _depth_over(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return False


_CACHE: OrderedDict[tuple[str, bool, str], dict[str, Any] | ConfigFileError] = OrderedDict()
_CACHE_LOCK = threading.Lock()  # the dashboard's sessions run in threads of one process


def _too_large(name: str, size: int) -> str:
    return (f"{name}: the file is {size:,} bytes; a config file may be at most "
            f"{MAX_CONFIG_BYTES:,} bytes ({MAX_CONFIG_BYTES // 1024} KiB; an OpenClaw config with "
            "many agents is a few KiB)")


def _parse(data: bytes | str, name: str) -> dict[str, Any]:
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ConfigFileError(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    else:
        text = data
    suffix = Path(name).suffix.lower()
    parsers: list[tuple[str, Callable[[str], Any]]]
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
        except _PARSE_ERRORS as exc:
            errors.append(f"{syntax}: {_one_line(exc)}")
            continue
        if not isinstance(value, dict):
            raise ConfigFileError(
                f"{name}: the top level must be an object, got {type(value).__name__}"
            )
        if _depth_over(value, MAX_CONFIG_DEPTH):
            raise ConfigFileError(f"{name}: nested deeper than {MAX_CONFIG_DEPTH} levels")
        return value
    raise ConfigFileError(f"{name}: cannot parse the file ({'; '.join(errors)})")


def _parse_json(text: str) -> Any:
    return json.loads(text)


def _parse_json5(text: str) -> Any:
    if _json5_fast is not None:
        return _json5_fast.loads(text)
    return json5.loads(text)


def _parse_toml(text: str) -> Any:
    return tomllib.loads(text)


_PARSE_ERRORS: tuple[type[BaseException], ...] = (
    ValueError, TypeError, RecursionError, tomllib.TOMLDecodeError,
    *((_json5_fast.Json5Exception,) if _json5_fast is not None else ()))


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    message = getattr(exc, "message", None)  # pyjson5 keeps the readable text here
    text = (message if isinstance(message, str) else str(exc)).strip().splitlines()
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
