"""``loopscope engines``: every engine, its versions and its settings schema.

The schema printed here is the one the dashboard's controls, ``--set``, ``sweep --vary`` and
the exports are made from; ``--json`` is for scripts (one object per engine).
"""

from __future__ import annotations

import shutil
from typing import Any

import click
import orjson

from loopscope.engines import Engine, SettingSpec, all_engines

__all__ = ["engine_json", "engines", "text_width"]

MAX_WIDTH = 100
"""Text output wraps at the terminal's width, and never past this: long lines are hard to
read even in a wide terminal."""


def text_width() -> int:
    """The width text output wraps at: the terminal's (``COLUMNS`` when set), at most
    :data:`MAX_WIDTH`, at least 40."""
    return max(40, min(MAX_WIDTH, shutil.get_terminal_size((MAX_WIDTH, 24)).columns))


def _echo(text: str, indent: str = "", hanging: str | None = None) -> None:
    """``text`` wrapped to :func:`text_width`, its first line at ``indent``, the others at
    ``hanging`` (default: ``indent``)."""
    click.echo(click.wrap_text(text, text_width(), initial_indent=indent,
                               subsequent_indent=indent if hanging is None else hanging,
                               preserve_paragraphs=False))


def engine_json(engine: Engine[Any, Any]) -> dict[str, Any]:
    """One engine as ``loopscope engines --json`` prints it."""
    return {
        "name": engine.name,
        "title": engine.title,
        "summary": engine.summary,
        "versions": list(engine.versions),
        "default_version": engine.default_version,
        "notes": list(engine.notes),
        "step": engine.step_unit,
        "detectors": [
            {"id": d.id, "label": d.label, "verdicts": list(d.verdicts),
             "versions": list(d.versions) or list(engine.versions)}
            for d in engine.detectors
        ],
        "settings": [s.to_json() for s in engine.settings_for(engine.default_version)],
        "settings_by_version": {
            v: {
                "settings": [s.to_json() for s in engine.settings_for(v)],
                "deployable": [s.name for s in engine.settings_for(v) if s.deployable],
            }
            for v in engine.versions
        },
    }


def settings_markdown() -> str:
    """Every engine's settings as Markdown tables (the README's settings section is this text;
    a test keeps them equal)."""
    lines: list[str] = []
    for engine in all_engines():
        lines.append(f"**{engine.title}** (`--engine {engine.name}`): {engine.summary}")
        lines.append("")
        # Versions with the same schema share one table.
        groups: dict[tuple[SettingSpec, ...], list[str]] = {}
        for version in engine.versions:
            groups.setdefault(engine.settings_for(version), []).append(version)
        for specs, versions in groups.items():
            if len(engine.versions) > 1:
                named = ", ".join(v + (" (default)" if v == engine.default_version else "")
                                  for v in versions)
                lines.append(f"*{engine.title} {named}*")
                lines.append("")
            lines.append("| setting | what it is | kind | default | settable upstream |")
            lines.append("|---|---|---|---|---|")
            for spec in specs:
                default = (", ".join(spec.default) if spec.kind == "str_list"
                           else spec.format(spec.default))
                if len(default) > 30:
                    default = default[:29] + "…"
                kind = spec.kind.replace("_", " ")
                if spec.min is not None or spec.max is not None:
                    lo = "" if spec.min is None else str(spec.min)
                    hi = "" if spec.max is None else str(spec.max)
                    kind += f" {lo}..{hi}"
                settable = "yes" if spec.deployable else "no: a what-if"
                lines.append(f"| `{spec.name}` | {spec.label} | {kind} | {default or '(none)'} "
                             f"| {settable} |")
            lines.append("")
        for note in engine.notes:
            lines.append(f"> {note}")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


@click.command("engines")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines: one object per engine.")
@click.option("--markdown", "as_markdown", is_flag=True,
              help="Every engine's settings as Markdown tables (the README's table).")
def engines(as_json: bool, as_markdown: bool) -> None:
    """List every loop guard loopscope can replay, with its versions and settings."""
    if as_markdown:
        click.echo(settings_markdown(), nl=False)
        return
    for engine in all_engines():
        if as_json:
            click.echo(orjson.dumps(engine_json(engine)))
            continue
        versions = ", ".join(
            f"{v} (default)" if v == engine.default_version else v for v in engine.versions)
        _echo(f"{engine.name} — {engine.title}")
        _echo(engine.summary, "  ")
        if len(engine.versions) > 1:
            _echo(f"versions: {versions}", "  ", "    ")
        for note in engine.notes:
            _echo(f"note: {note}", "  ", "    ")
        for version in engine.versions:
            if len(engine.versions) > 1:
                _echo(f"settings of {version}:", "  ")
            for spec in engine.settings_for(version):
                default = (", ".join(spec.default) if spec.kind == "str_list"
                           else spec.format(spec.default))
                if len(default) > 40:
                    default = default[:39] + "…"
                bounds = ""
                if spec.min is not None or spec.max is not None:
                    lo = "" if spec.min is None else str(spec.min)
                    hi = "" if spec.max is None else str(spec.max)
                    bounds = f", {lo}..{hi}"
                what_if = "" if spec.deployable else "  [what-if: not settable in the real guard]"
                _echo(f"{spec.name} ({spec.kind}{bounds}; default {default}) — "
                      f"{spec.label}{what_if}", "    ", "        ")
        click.echo("")
