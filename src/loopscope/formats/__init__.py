"""Importers: recorded-session files → normalized sessions.

Public API::

    detect_format(path, limits=None) -> Detection
    load_file(path, limits=None, format=None, *, scanned=False) -> FileImport
    load_paths(paths, limits=None, format=None) -> ImportReport
    iter_file_imports(paths, limits=None, format=None) -> Iterator[FileImport]   # streamed
    parse_import_limits([("NAME", "VALUE") | "NAME=VALUE", ...], base=None) -> ImportLimits
    ImportLimits(...)                       # resource limits, every one configurable
    parse_size("1GiB") -> int               # B, KiB, MiB, GiB, TiB
    parse_limit("max_document_bytes=1GiB") -> ("max_document_bytes", 1073741824)
    limits_from_specs(["NAME=VALUE", ...], base=None) -> ImportLimits

One module per format, ``loopscope.formats.<format_id>``, exposing ``FORMAT_ID`` and one or more
of ``import_records(records, ctx)``, ``import_document(value, ctx)``, ``import_text(text, ctx)``
(and optionally ``import_zip(path, ctx)`` or ``import_parquet(path, ctx)``), each yielding one
``Session | None`` per session candidate in file order. The loader counts every file's tool
calls apart from its importer (``loopscope.formats.tally``): ``FileImport.calls_seen``,
``calls_imported``, ``calls_set_aside``, and a ``calls_not_imported`` warning for any call lost.
"""

from loopscope.formats.base import (
    Detection,
    FileImport,
    ImportContext,
    ImportLimits,
    ImportReport,
    Record,
)
from loopscope.formats.loader import (
    FORMAT_IDS,
    SCAN_EXTENSIONS,
    detect_format,
    expand_paths,
    iter_file_imports,
    limits_from_specs,
    load_file,
    load_paths,
    parse_import_limits,
    parse_limit,
    parse_size,
)

__all__ = [
    "FORMAT_IDS",
    "SCAN_EXTENSIONS",
    "Detection",
    "FileImport",
    "ImportContext",
    "ImportLimits",
    "ImportReport",
    "Record",
    "detect_format",
    "expand_paths",
    "iter_file_imports",
    "limits_from_specs",
    "load_file",
    "load_paths",
    "parse_import_limits",
    "parse_limit",
    "parse_size",
]
