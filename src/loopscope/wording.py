"""Plain words shared by every surface (the CLI's text, the dashboard, the HTML report).

Pure: no UI library. The dashboard's Markdown helpers (:mod:`loopscope.ui.plain_words`) build on
these; the command line and the report use them directly, so one engine sentence reads the
same everywhere.

* :func:`plain` — an engine's sentence with its setting names replaced by the schema's plain
  labels and limitation codes (``(L10)``) taken out.
* :func:`detector_words` — a detector id (``generic_repeat``) as the engine's plain title
  ("the same call again and again").
* :func:`code_spans` / :func:`without_code_marks` — a sentence that quotes names in backticks,
  split into text and code, or with the backticks dropped (plain text output).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loopscope.engines import Engine, SettingSpec

__all__ = [
    "code_spans",
    "detector_words",
    "is_identifier",
    "plain",
    "setting_words",
    "without_code_marks",
]


def is_identifier(name: str) -> bool:
    """A setting name that reads as code (``snake_case``, ``camelCase``, ``dotted.name``)
    rather than an English word (``enabled``)."""
    return "_" in name or "." in name or any(c.isupper() for c in name[1:])


def setting_words(specs: Iterable[SettingSpec]) -> list[tuple[re.Pattern[str], str]]:
    """``(pattern, “label”)`` for every setting name that reads as code, longest first (so
    ``detectors.pingPong`` is replaced before a shorter name inside it)."""
    named = sorted({s.name: s.label for s in specs if is_identifier(s.name)}.items(),
                   key=lambda kv: -len(kv[0]))
    # A name may come with the path of the block it sits in (tools.loopDetection.<name>).
    return [(re.compile(rf"(?<![\w.`])(?:[A-Za-z_]\w*\.)*{re.escape(name)}(?![\w`])"),
             f"“{label}”") for name, label in named]


def plain(text: str, specs: Iterable[SettingSpec] = (),
          limitation_ids: Iterable[str] = ()) -> str:
    """An engine's sentence in the schema's words: setting names → their labels, limitation
    codes (``(L10)``, `` (L4).``) removed — the limitation itself is shown in words."""
    out = text
    for pattern, label in setting_words(specs):
        out = pattern.sub(label, out)
    for lid in sorted(set(limitation_ids), key=len, reverse=True):
        out = re.sub(rf"\s*\({re.escape(lid)}\)", "", out)
    return re.sub(r"\s+([.,;:])", r"\1", out).strip()


def detector_words(engine: Engine[Any, Any], detector: str | None) -> str:
    """The engine's plain title of ``detector`` (its :class:`~loopscope.engines.contract.
    DetectorInfo` label); an id the engine does not list reads with spaces for underscores,
    so no surface ever prints an internal id."""
    for info in engine.detectors:
        if info.id == detector:
            return str(info.label)
    return (detector or "a loop check").replace("_", " ")


_CODE = re.compile(r"`([^`\n]+)`")


def code_spans(text: str) -> list[tuple[bool, str]]:
    """``text`` as ``(is_code, piece)`` pieces: each backticked span is one code piece (the
    backticks dropped); a lone backtick stays text."""
    out: list[tuple[bool, str]] = []
    at = 0
    for m in _CODE.finditer(text):
        if m.start() > at:
            out.append((False, text[at:m.start()]))
        out.append((True, m.group(1)))
        at = m.end()
    if at < len(text):
        out.append((False, text[at:]))
    return out


def without_code_marks(text: str) -> str:
    """``text`` for plain-text output: code spans keep their content, not their backticks."""
    return "".join(piece for _, piece in code_spans(text))


