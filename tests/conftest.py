"""Fixtures shared by every test folder.

The reference data and the real-session corpus live beside the repository in ``../shared``
(CI clones the repository elsewhere with ``shared`` next to it), never inside it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("LOOPSCOPE_SHARED", REPO_ROOT.parent / "shared"))
REFERENCE = SHARED / "reference"
CORPUS = Path(os.environ.get("LOOPSCOPE_CORPUS", SHARED / "corpus"))
SAMPLES = REPO_ROOT / "sample_transcripts"


def require_dir(path: Path, what: str) -> Path:
    if not path.is_dir():
        pytest.skip(f"{what} not found at {path}")
    return path


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    return require_dir(REFERENCE, "../shared/reference")


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    return require_dir(CORPUS, "../shared/corpus")


# The on-disk cache of prepared sessions: one fresh folder per test run, never the user's,
# removed when the run ends (a run leaves nothing behind in the temporary folder).
if "LOOPSCOPE_CACHE_DIR" not in os.environ:
    import atexit as _atexit
    import shutil as _shutil
    import tempfile as _tempfile

    os.environ["LOOPSCOPE_CACHE_DIR"] = _tempfile.mkdtemp(prefix="loopscope-test-cache-")
    _atexit.register(_shutil.rmtree, os.environ["LOOPSCOPE_CACHE_DIR"], ignore_errors=True)
