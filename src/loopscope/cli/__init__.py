"""The ``loopscope`` command line: the same core as the dashboard, for CI gating.

Commands live in their own modules (``replay``, ``experiments``) and are registered here.
"""

from __future__ import annotations

import click

from loopscope import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="loopscope")
def main() -> None:
    """Replay recorded agent sessions through the loop guards of real agents."""


def _register() -> None:
    from loopscope.cli.cache_cmd import cache_group
    from loopscope.cli.engines import engines
    from loopscope.cli.experiments import compare, sweep
    from loopscope.cli.labels import register as register_labels
    from loopscope.cli.prepare_cmd import prepare
    from loopscope.cli.replay import replay

    main.add_command(replay)
    main.add_command(sweep)
    main.add_command(compare)
    main.add_command(engines)
    register_labels(main)
    main.add_command(prepare)
    main.add_command(cache_group)


_register()
