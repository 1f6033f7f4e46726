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
    "engines_addressed",
    "loopscope_config_document",
    "loopscope_config_json",
    "parse_config_text",
    "read_config_file",
]

MAX_CONFIG_BYTES = 4 * 1024 * 1024
"""A configuration file is small; anything bigger is refused before parsing."""

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
