"""The files an import reads besides the file named: their versions are part of its version.

Most importers read one file. A few read others beside it: a Cline ``ui_messages.json`` looks
for the ``api_conversation_history.json`` of its task folder (which then holds the task), an
opencode storage session file reads its message and part files, and SQLite reads the
``-wal`` file of ``opencode.db``. A cache that keyed such a file on its own bytes would keep a
stale import when only the others change, so :func:`related_files` names them (by the file's
name and place alone: it runs for every file of every start and reads nothing) and the cache
adds their stamps to the file's.
"""

from __future__ import annotations

import os

from loopscope.formats.cline_task import API_HISTORY, UI_NAMES
from loopscope.formats.opencode_session import storage_files

__all__ = ["related_files"]


def related_files(path: str) -> list[str]:
    """The other files the import of ``path`` may read (present or not)."""
    name = os.path.basename(path)
    if name in UI_NAMES:
        return [os.path.join(os.path.dirname(path), API_HISTORY)]
    if name.endswith(".db"):
        return [path + "-wal"]
    if name.startswith("ses_") and name.endswith(".json"):
        return storage_files(path)
    return []
