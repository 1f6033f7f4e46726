"""The loop-guard engines, behind one contract (:mod:`loopscope.engines.contract`).

``get_engine(name)`` returns an engine object and ``engine_names()`` lists every engine: the
built-ins and any plug-in installed under the ``loopscope.engines`` entry point group
(:mod:`loopscope.engines.registry` is the one place that lists them). Engine packages are
imported lazily, so using one engine never pays for the others.
"""

from __future__ import annotations

from loopscope.engines.base import (
    ConfigError,
    ConfigResolution,
    FirstRefusal,
    FlaggedStep,
    Marker,
    SessionReplay,
    Step,
)
from loopscope.engines.contract import (
    CounterSeries,
    DetectorInfo,
    Engine,
    ExportFile,
    GuideExample,
    Limitation,
    SettingSpec,
    StepExplanation,
)
from loopscope.engines.registry import UnknownEngine, all_engines, engine_names, get_engine

__all__ = [
    "ConfigError",
    "ConfigResolution",
    "CounterSeries",
    "DetectorInfo",
    "Engine",
    "ExportFile",
    "FirstRefusal",
    "FlaggedStep",
    "GuideExample",
    "Limitation",
    "Marker",
    "SessionReplay",
    "SettingSpec",
    "Step",
    "StepExplanation",
    "UnknownEngine",
    "all_engines",
    "engine_names",
    "get_engine",
]
