"""The one place that lists engines: the built-in ones, plus every installed plug-in.

A plug-in is any installed distribution that declares an entry point in the group
``loopscope.engines`` whose value is an :class:`~loopscope.engines.contract.Engine` object (or
a callable returning one), for example in its ``pyproject.toml``::

    [project.entry-points."loopscope.engines"]
    mycorp = "mycorp_guard.loopscope_engine:ENGINE"

The built-ins are named here the same way ("module:attribute") and imported only when first
used, so replaying with one engine never pays for the others.
"""

from __future__ import annotations

import importlib
from functools import cache
from importlib.metadata import entry_points
from typing import Any, cast

from loopscope.engines.contract import Engine

ENTRY_POINT_GROUP = "loopscope.engines"

BUILTIN_ENGINES: dict[str, str] = {
    "gglib": "loopscope.engines.gglib.engine:ENGINE",
    "openclaw": "loopscope.engines.openclaw.engine:ENGINE",
    "openhands": "loopscope.engines.openhands.engine:ENGINE",
    "gemini-cli": "loopscope.engines.gemini_cli.engine:ENGINE",
    "qwen-code": "loopscope.engines.qwen_code.engine:ENGINE",
}
"""Engine name → where its engine object lives. Plug-ins cannot replace these names."""


class UnknownEngine(KeyError):
    """No built-in engine and no installed plug-in has this name."""

    def __str__(self) -> str:
        return (f"unknown engine {self.args[0]!r}; known engines: {', '.join(engine_names())}")


def _load(target: str) -> Any:
    module, _, attribute = target.partition(":")
    value = getattr(importlib.import_module(module), attribute)
    return value() if callable(value) and not hasattr(value, "run") else value


@cache
def _plugin_targets() -> dict[str, Any]:
    found: dict[str, Any] = {}
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        if ep.name not in BUILTIN_ENGINES:
            found.setdefault(ep.name, ep)
    return found


def engine_names() -> tuple[str, ...]:
    """Every engine: the built-ins in their fixed order, then plug-ins by name."""
    return _names()


@cache
def _names() -> tuple[str, ...]:
    # (kept as one tuple: pages ask for it for every session of a corpus)
    return (*BUILTIN_ENGINES, *_plugin_targets())


@cache
def get_engine(name: str) -> Engine[Any, Any]:
    """The engine called ``name``; raises :class:`UnknownEngine`."""
    target = BUILTIN_ENGINES.get(name)
    if target is not None:
        engine = _load(target)
    else:
        ep = _plugin_targets().get(name)
        if ep is None:
            raise UnknownEngine(name)
        value = ep.load()
        engine = value() if callable(value) and not hasattr(value, "run") else value
    return checked(name, engine)


def contract_members() -> tuple[str, ...]:
    """Every attribute and method the :class:`~loopscope.engines.contract.Engine` protocol
    states (what callers use without asking whether it is there)."""
    stated = set(Engine.__annotations__)
    stated.update(key for key, value in vars(Engine).items()
                  if not key.startswith("_") and (callable(value) or isinstance(value, property)))
    return tuple(sorted(stated))


def checked(name: str, found: object) -> Engine[Any, Any]:
    """``found`` if it is a whole engine called ``name``; else ``TypeError`` naming what is
    wrong. Checked once, where an engine is loaded, so that a plug-in written against an older
    contract fails here, naming what it lacks, not halfway through a replay or a page."""
    if getattr(found, "name", None) != name:
        raise TypeError(f"the engine registered as {name!r} calls itself "
                        f"{getattr(found, 'name', None)!r}")
    missing = [m for m in contract_members() if not hasattr(found, m)]
    if missing:
        raise TypeError(f"the engine registered as {name!r} lacks {', '.join(missing)} of the "
                        "engine contract (loopscope.engines.contract.BaseEngine gives defaults "
                        "for all but the engine's own rules)")
    return cast("Engine[Any, Any]", found)


def all_engines() -> tuple[Engine[Any, Any], ...]:
    return tuple(get_engine(n) for n in engine_names())


def refresh() -> None:
    """Forget what was found (tests that install a plug-in at run time call this)."""
    _plugin_targets.cache_clear()
    _names.cache_clear()
    get_engine.cache_clear()
