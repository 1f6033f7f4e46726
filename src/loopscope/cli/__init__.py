"""The ``loopscope`` command line: the same core as the dashboard, for CI gating.

Commands live in their own modules (``replay``, ``experiments``, …), listed in ``COMMANDS``.
"""

from __future__ import annotations

import importlib

import click

from loopscope import __version__

# Each command's module, imported only when the command runs (or ``--help`` lists it): a
# ``loopscope replay`` starts without the code of ``sweep``, ``label`` or ``cache`` — in a cold
# replay of a folder the start-up is paid once, before any file can be read.
COMMANDS: dict[str, tuple[str, str]] = {
    "replay": ("loopscope.cli.replay", "replay"),
    "sweep": ("loopscope.cli.experiments", "sweep"),
    "compare": ("loopscope.cli.experiments", "compare"),
    "engines": ("loopscope.cli.engines", "engines"),
    "label": ("loopscope.cli.labels", "label"),
    "labels": ("loopscope.cli.labels", "labels"),
    "prepare": ("loopscope.cli.prepare_cmd", "prepare"),
    "cache": ("loopscope.cli.cache_cmd", "cache_group"),
}


class _LazyGroup(click.Group):
    """A group whose commands are imported by name when asked for (click's lazy-loading
    pattern)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, attribute = target
        command: click.Command = getattr(importlib.import_module(module), attribute)
        return command


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="loopscope")
def main() -> None:
    """Replay recorded agent sessions through the loop guards of real agents."""
