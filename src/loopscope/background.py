"""Background work that gives way to a person's request.

A host may run long work in a background thread while it serves people in others: the
dashboard derives each guard's first re-run of a large corpus while the user looks at the
first chart. Python runs one thread's bytecode at a time, so a background loop written in
Python takes half the interpreter from the request running beside it (the slider move the
user is waiting for). Loops that can run for seconds call :func:`give_way` between sessions;
a host that knows when requests run installs a hook (:func:`set_give_way`) that makes the
background thread wait there until none does. Without a hook (the command line, tests),
:func:`give_way` does nothing.

The hook is called from whatever thread runs the loop: it must return at once in a thread
that is not background work (a request's own re-run calls the same loops).
"""

from __future__ import annotations

from collections.abc import Callable

_hook: Callable[[], None] | None = None

GIVE_WAY_EVERY = 1_000
"""How many items (files of a folder scan, files stat-ed) a loop over many cheap items handles
between two calls of :func:`give_way`: often enough that a request never waits long, rarely
enough that the calls cost nothing."""


def give_way() -> None:
    """Wait here while a request runs, when this thread is background work (see the module
    doc); return at once otherwise."""
    hook = _hook
    if hook is not None:
        hook()


def set_give_way(hook: Callable[[], None] | None) -> None:
    """Install the host's hook (None: none)."""
    global _hook
    _hook = hook
