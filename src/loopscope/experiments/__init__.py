"""Threshold experiments: labels-based metrics, A/B comparison and parameter sweeps.

Pure core (no UI imports). The Dask backend (:mod:`loopscope.experiments.dask_backend`) is
imported only when a sweep asks for it, so ``distributed`` stays an optional dependency.
"""

from loopscope.experiments.compare import (
    CompareResult,
    SessionChange,
    classify,
    compare,
    compare_replays,
)
from loopscope.experiments.metrics import METRIC_NAMES, Metrics, Outcome, compute_metrics
from loopscope.experiments.sweep import (
    Axis,
    GridError,
    SweepCell,
    SweepResult,
    build_cells,
    parse_axis,
    run_sweep,
    sweep_prepared,
)

__all__ = [
    "METRIC_NAMES",
    "Axis",
    "CompareResult",
    "GridError",
    "Metrics",
    "Outcome",
    "SessionChange",
    "SweepCell",
    "SweepResult",
    "build_cells",
    "classify",
    "compare",
    "compare_replays",
    "compute_metrics",
    "parse_axis",
    "run_sweep",
    "sweep_prepared",
]
