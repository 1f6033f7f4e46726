"""A loaded corpus and how it is loaded: files imported and prepared for each engine on every
core (:mod:`~loopscope.corpus.ingestion`), kept on disk and read back (:mod:`~loopscope.corpus.
snapshot`, and for the command line :mod:`~loopscope.corpus.readback`), sessions read again
from their files when asked (:mod:`~loopscope.corpus.sessions`), and the :class:`Corpus` the
dashboard and scripts hold (:mod:`~loopscope.corpus.loaded`).

Every function takes :class:`~loopscope.engines.contract.Engine` objects, never engine names.
"""

from __future__ import annotations

from loopscope.corpus.ingestion import (
    FileResult,
    Ingested,
    Progress,
    Wanted,
    every_engine,
    ingest,
    ingest_part,
    join_parts,
    reading_message,
    time_left,
)
from loopscope.corpus.loaded import LARGE_CORPUS, Corpus, build_corpus
from loopscope.corpus.readback import (
    PreparedFile,
    PreparedFolder,
    prepared_folder_files,
    read_prepared,
)
from loopscope.corpus.sessions import CorpusSessions, SessionsChanged, head_of

__all__ = ["LARGE_CORPUS", "Corpus", "CorpusSessions", "FileResult", "Ingested", "PreparedFile",
           "PreparedFolder", "Progress", "SessionsChanged", "Wanted", "build_corpus",
           "every_engine", "head_of", "ingest", "ingest_part", "join_parts",
           "prepared_folder_files", "read_prepared", "reading_message", "time_left"]
