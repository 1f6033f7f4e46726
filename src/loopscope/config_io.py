"""Reading and writing loopscope configuration files (``--config FILE`` and the exports).

A config file is JSON, JSON5 or TOML with an object at the top level. It may be:

* the loopscope document this module writes, holding any engines under their names::

      {"gglib": {"max_repeated_batch_steps": 2, ...},
       "openclaw": {"version": "2026.6.11", "tools": {"loopDetection": {"enabled": true, ...}}}}

* a guard's own configuration as users have it (an OpenClaw ``openclaw.json`` with
  ``tools.loopDetection`` and ``agents.list[]``, a gglib settings object, …): each engine
  recognises its own (``Engine.settings_from_document``).

:func:`engine_settings` picks the part of a document one engine's ``resolve_config`` reads;
:func:`loopscope_config_document` writes the loopscope document from configurations. No engine
is named here and no UI library is imported.
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
    "engines_addressed",
    "loopscope_config_document",
    "loopscope_config_json",
    "parse_config_text",
    "read_config_file",
]

MAX_CONFIG_BYTES = 256 * 1024
"""A configuration file is small (an OpenClaw config with many agents is a few KiB); anything
bigger is refused before parsing."""
PARSE_CACHE_SIZE = 16
"""Parsed configs kept by content hash: the dashboard re-reads an uploaded config on every
rerun (each slider move), and parsing it again each time is wasted work."""

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


def _is_loopscope_document(document: Mapping[str, Any]) -> bool:
    from loopscope.engines import engine_names

    return any(isinstance(document.get(name), Mapping) for name in engine_names())


def engine_settings(document: Mapping[str, Any], engine: str) -> Mapping[str, Any] | None:
    """The part of a config document that ``engine``'s ``resolve_config`` reads, or ``None``
    when the document sets nothing for it.

    A loopscope document holds each engine under its name; any other document is offered to the
    engine, which recognises its own configuration format. Raises ``KeyError`` for an unknown
    engine and :class:`ConfigFileError` for a loopscope document whose entry is not an object.
    """
    from loopscope.engines import get_engine

    eng = get_engine(engine)
    if _is_loopscope_document(document):
        part = document.get(engine)
        if part is None:
            return None
        if not isinstance(part, Mapping):
            raise ConfigFileError(f'"{engine}" must be an object, got {type(part).__name__}')
        return part
    return eng.settings_from_document(document)


def engines_addressed(document: Mapping[str, Any]) -> list[str]:
    """The engines a config document sets something for, in registry order."""
    from loopscope.engines import engine_names

    out = []
    for name in engine_names():
        try:
            if engine_settings(document, name) is not None:
                out.append(name)
        except ConfigFileError:
            out.append(name)  # addressed, but unusable: resolving it will say why
    return out


# --------------------------------------------------------------------------- writing


def loopscope_config_document(configs: Mapping[str, Any]) -> dict[str, Any]:
    """The document ``loopscope replay --config`` reads: engine name → configuration, each
    written by its engine (``Engine.settings_document``)."""
    from loopscope.engines import get_engine

    return {name: get_engine(name).settings_document(cfg) for name, cfg in configs.items()}


def loopscope_config_json(configs: Mapping[str, Any]) -> str:
    """:func:`loopscope_config_document` as indented JSON text (with a final newline)."""
    return json.dumps(loopscope_config_document(configs), indent=2) + "\n"
