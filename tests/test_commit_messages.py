"""Commit subjects stay at 72 characters or fewer (CONTRIBUTING.md): the hook that enforces it
refuses a longer one, and the history since the hook was added keeps to it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HOOK = REPO / ".githooks" / "commit-msg"
SINCE = "1adb8f8"
"""The last commit before the hook: the history from here on keeps to the limit."""


def _hook(tmp_path: Path, message: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "COMMIT_EDITMSG"
    path.write_text(message, encoding="utf-8")
    return subprocess.run(["sh", str(HOOK), str(path)], capture_output=True, text=True,
                          check=False)


def test_the_hook_refuses_a_subject_over_72_characters(tmp_path: Path) -> None:
    assert _hook(tmp_path, "x" * 72 + "\n\nA body line may be as long as it needs to be, "
                 "longer than the subject's limit.\n").returncode == 0
    refused = _hook(tmp_path, "x" * 73 + "\n")
    assert refused.returncode == 1
    assert "73 characters" in refused.stderr


def test_commits_since_the_hook_keep_their_subjects_short() -> None:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    known = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{SINCE}^{{commit}}"],
                           capture_output=True, check=False)
    if known.returncode != 0:
        pytest.skip(f"history before {SINCE} not in this clone (shallow)")
    subjects = subprocess.run(["git", "-C", str(REPO), "log", "--format=%s", f"{SINCE}..HEAD"],
                              capture_output=True, text=True, check=True).stdout.splitlines()
    assert [s for s in subjects if len(s) > 72] == []
