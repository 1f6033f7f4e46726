"""Plain-language explanations of replay steps, one module per engine (``gglib``, ``openclaw``).

Everything here is pure: no UI imports, no I/O.
"""
