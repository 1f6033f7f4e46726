"""Fast construction of frozen ``slots`` dataclasses for the importers' hot loops.

A frozen dataclass's ``__init__`` stores each field through ``object.__setattr__`` (the class's
own ``__setattr__`` refuses): about 1,300 CPU instructions per field on CPython 3.11, against
about 100 for a plain attribute store. A tool call, its turn and its result carry 40 fields
between them, and building them was the largest single cost of ingest.

:func:`positional_constructor` returns a function that builds the same object another way: it
fills an instance of a plain twin class (the same ``__slots__``, in the same order, so the same
memory layout) with ordinary attribute stores, then switches the instance's class to the
dataclass. The result is an ordinary instance of the dataclass, equal to ``cls(*values)``; no
``__init__`` or ``__post_init__`` runs, so it is only for dataclasses without
``__post_init__``, with every field passed positionally in declaration order (defaults and
``default_factory`` are not applied). CPython checks the layouts on the class switch (a
mismatch raises ``TypeError``); the check runs once here, and when it fails the dataclass
itself is returned, so callers are correct either way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["positional_constructor"]

T = TypeVar("T")


def positional_constructor(cls: type[T]) -> Callable[..., T]:
    """``make(*values)`` equal to ``cls(*values)``, for every field of ``cls`` in order."""
    names = tuple(field.name for field in dataclasses.fields(cls))  # type: ignore[arg-type]
    if (getattr(cls, "__slots__", None) != names or hasattr(cls, "__post_init__")
            or not names):
        return cls
    parameters = ", ".join(f"v{i}" for i in range(len(names)))
    stores = "".join(f"    o.{name} = v{i}\n" for i, name in enumerate(names))
    if not cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        # A mutable dataclass takes the stores itself. Still faster than calling the class:
        # ``cls(...)`` runs its ``__init__`` from C, in a new interpreter frame of its own;
        # ``make`` is an ordinary Python call.
        twin: type = cls
        switch = ""
    else:
        twin = type(f"_{cls.__name__}Twin", (), {"__slots__": names})
        switch = "    o.__class__ = cls\n"
    source = (f"def make({parameters}):\n"
              f"    o = new(twin)\n{stores}{switch}"
              f"    return o\n")
    namespace: dict[str, Any] = {"new": object.__new__, "twin": twin, "cls": cls}
    exec(source, namespace)  # generated from the dataclass's own field names
    make: Callable[..., T] = namespace["make"]
    make.__qualname__ = f"positional_constructor({cls.__name__})"
    try:
        sample = make(*range(len(names)))
    except TypeError:  # pragma: no cover - layouts differ (another Python implementation)
        return cls
    if type(sample) is not cls or [getattr(sample, n) for n in names] != list(range(len(names))):
        return cls  # pragma: no cover
    return make
