"""Prints the fuzz run's figures (inputs, unhandled exceptions, worst peak memory) at the end."""

from __future__ import annotations

import sys

import pytest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    module = sys.modules.get("tests.fuzz.test_importers_fuzz")
    if module is not None and module.STATS.inputs:
        terminalreporter.write_line(module.summary())
