"""The two loop-guard engines behind one surface (:class:`loopscope.engines.base.Engine`).

``get_engine("gglib")`` / ``get_engine("openclaw")`` return the engine objects; engine modules
are imported lazily so that using one engine never pays for the other.
"""

from __future__ import annotations

from typing import Any

from loopscope.engines.base import (
    ConfigError,
    ConfigResolution,
    Engine,
    FirstRefusal,
    FlaggedStep,
    Marker,
    SessionReplay,
    Step,
)

ENGINE_NAMES: tuple[str, ...] = ("gglib", "openclaw")


def get_engine(name: str) -> Engine[Any, Any]:
    """The engine object for ``name``; raises ``KeyError`` for an unknown engine."""
    if name == "gglib":
        from loopscope.engines.gglib import ENGINE as gglib_engine

        return gglib_engine
    if name == "openclaw":
        from loopscope.engines.openclaw import ENGINE as openclaw_engine

        return openclaw_engine
    raise KeyError(name)


__all__ = [
    "ENGINE_NAMES",
    "ConfigError",
    "ConfigResolution",
    "Engine",
    "FirstRefusal",
    "FlaggedStep",
    "Marker",
    "SessionReplay",
    "Step",
    "get_engine",
]
