"""Configuration rules every OpenClaw release shares.

OpenClaw normalises agent ids and reads ``asPositiveInt`` values the same way in every release;
the ``--set`` keys of the configurable block (2026.6.11, 2026.7.35) are parsed here because
2026.9.6 still rejects a malformed value of a retired key before ignoring it; the JSON5 export
has one shape for every release.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from typing import Any, Final

from loopscope.engines.base import ConfigError
from loopscope.jsonrules.javascript import js_trim

DEFAULT_GUARD_WINDOW_SIZE: Final = 3
"""The post-compaction guard's ``windowSize`` when none is set (``DEFAULT_WINDOW_SIZE`` of
the guard, the same in every release)."""

JSON5_EXPORT_COMMENT: Final = "// OpenClaw's default is false; loopscope replays with true"
"""The comment every JSON5 export carries next to ``enabled``."""

SET_KEYS: Final = (
    "enabled", "historySize", "warningThreshold", "criticalThreshold",
    "globalCircuitBreakerThreshold", "unknownToolThreshold", "detectors.genericRepeat",
    "detectors.knownPollNoProgress", "detectors.pingPong", "postCompactionGuard.windowSize",
)
"""The ``--set`` keys (camelCase, dots for nested fields)."""

_BOOL_SET_KEYS: Final = frozenset({"enabled", "detectors.genericRepeat",
                                   "detectors.knownPollNoProgress", "detectors.pingPong"})


def as_positive_int(value: Any, fallback: int) -> int:
    """OpenClaw's ``asPositiveInt``: an integral number above 0 (``5.0`` counts), else ``fallback``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return fallback
    if isinstance(value, float):
        if not value.is_integer() or value <= 0:
            return fallback
        return int(value)
    if value <= 0 or value >= 2**1024:  # JS reads a huge integer literal as Infinity
        return fallback
    return value


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__

_VALID_AGENT_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$", re.IGNORECASE)

_INVALID_AGENT_CHARS = re.compile(r"[^a-z0-9_-]+")


def normalize_agent_id(agent_id: Any) -> str:
    """OpenClaw's agent id normalisation: trimmed, lower-cased, invalid runs replaced by ``-``,
    at most 64 characters, ``main`` when nothing is left."""
    text = js_trim(agent_id) if isinstance(agent_id, str) else ""
    if not text:
        return "main"
    if _VALID_AGENT_ID.match(text):
        return text.lower()
    text = _INVALID_AGENT_CHARS.sub("-", text.lower()).strip("-")[:64]
    return text or "main"


def parse_set_value(key: str, text: str) -> Any:
    """The value of one ``--set KEY=VALUE`` pair; :class:`ConfigError` names the key."""
    if key not in SET_KEYS:
        raise ConfigError(f"unknown setting {key!r} for the openclaw engine (known: "
                          f"{', '.join(SET_KEYS)})")
    value = text.strip()
    if key in _BOOL_SET_KEYS:
        if value == "true":
            return True
        if value == "false":
            return False
        raise ConfigError(f"{key}: expected true or false, got {text!r}")
    if not re.fullmatch(r"[+-]?[0-9]+", value):
        raise ConfigError(f"{key}: expected a positive whole number, got {text!r}")
    number = int(value)
    if number <= 0:
        raise ConfigError(f"{key}: expected a positive whole number, got {text!r}")
    return number


def loop_detection_json5(block: Mapping[str, Any], version: str) -> str:
    """``{tools: {loopDetection: {...}}}`` as JSON5 text, ready to paste into ``openclaw.json``.

    ``enabled`` comes first and is always written, with a comment: OpenClaw's own default is
    false and loopscope replays with true.
    """
    data = copy.deepcopy(dict(block))
    enabled = data.pop("enabled", True)
    data = {"enabled": True if enabled is None else bool(enabled), **data}
    lines = [
        f"// OpenClaw {version} tool-loop detection settings, exported by loopscope.",
        "// Paste into your OpenClaw config (openclaw.json).",
        "{",
        "  tools: {",
        "    loopDetection: {",
    ]
    for key, value in data.items():
        if key == "enabled":
            lines.append(f"      {JSON5_EXPORT_COMMENT}")
        lines.append(f"      {_json5_key(key)}: {_json5_value(value, indent=6)},")
    lines += ["    },", "  },", "}"]
    return "\n".join(lines) + "\n"


def _json5_key(key: str) -> str:
    return key if key.isidentifier() else json.dumps(key)


def _json5_value(value: Any, indent: int) -> str:
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        pad = " " * (indent + 2)
        inner = [f"{pad}{_json5_key(str(k))}: {_json5_value(v, indent + 2)},"
                 for k, v in value.items()]
        return "{\n" + "\n".join(inner) + "\n" + " " * indent + "}"
    return json.dumps(value)
