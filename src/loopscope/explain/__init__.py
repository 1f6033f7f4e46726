"""Plain-language explanations of replay steps, one module per engine (``gglib``, ``openclaw``).

Everything here is pure: no UI imports, no I/O. Each engine module offers the same entry points
(``explain_step``, ``explain_first_refusal``, the smallest setting changes and the session's
known limitations); :func:`explain_first_refusal` picks the module by engine name.
"""

from __future__ import annotations

import importlib
from typing import Any

from loopscope.engines.base import SessionReplay


def explain_first_refusal(engine: str, session: Any, result: SessionReplay, config: Any) -> str | None:
    """One or two plain sentences on why ``result`` was first refused; None if it was not."""
    module = importlib.import_module(f"loopscope.explain.{engine}")
    explanation: str | None = module.explain_first_refusal(session, result, config)
    return explanation


def smallest_change_to_pass(engine: str, session: Any, config: Any) -> str | None:
    """The smallest verified setting change that lets the first refusal through, in words.

    ``None`` when the session was not refused or no single change within range helps.
    """
    module = importlib.import_module(f"loopscope.explain.{engine}")
    changes = module.smallest_change_to_pass(session, config)
    if not changes:
        return None
    best = changes[0]
    return f"{best.description} (--set {' --set '.join(best.set_args())})"
