"""Code comments and docstrings do not point at documents outside the repository.

The specifications loopscope was built from live beside the repository, not in it, so a
comment such as "(engine spec §2.6)" or "see sessions-and-formats.md" sends a reader to a
document they may not have. A comment states the rule where it is applied, and why; where a
rule comes from upstream code, it names the upstream package file instead. This test scans
every file under ``src/`` for the section sign and for the specification file names.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

REFERENCE = re.compile(
    r"§|engine-gglib|engine-openclaw|sessions-and-formats|product\.md|engine-gemini-cli"
    r"|engine-openhands"
)
"""The section sign, and the names of the specification files (``engine-openclaw`` also
covers ``engine-openclaw-versions.md``)."""

# Temporary allow-list: these files were being edited on other branches while the rest of
# the tree was cleaned, so their references are left for the lead to rewrite after merging.
# Remove an entry as soon as its file is fixed; a path ending in "/" covers a whole folder.
ALLOWED: tuple[str, ...] = ()


def _allowed(rel: str) -> bool:
    return any(rel.startswith(entry) if entry.endswith("/") else rel == entry
               for entry in ALLOWED)


def references(root: Path) -> Iterator[str]:
    """``path:line: text`` of every reference in the text files under ``root``."""
    for path in sorted(root.rglob("*")):
        if not path.is_file() or any(p == "__pycache__" or p.endswith(".egg-info")
                                     for p in path.parts):
            continue  # build artefacts, not sources
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        rel = path.relative_to(root).as_posix()
        for lineno, line in enumerate(text.splitlines(), 1):
            if REFERENCE.search(line):
                yield f"{rel}:{lineno}: {line.strip()}"


def test_no_comment_points_at_a_specification_outside_the_repository() -> None:
    found = [ref for ref in references(SRC) if not _allowed(ref.partition(":")[0])]
    found += [f"benchmarks/{ref}" for ref in references(BENCHMARKS)]
    assert not found, (
        "state the rule (and why) where it is applied, or name the upstream package file:\n"
        + "\n".join(found))


def test_the_scan_finds_every_kind_of_reference(tmp_path: Path) -> None:
    """The scan is not vacuous: each spelling is found, plain prose is not."""
    pkg = tmp_path / "loopscope"
    pkg.mkdir()
    (pkg / "a.py").write_text(
        '"""Clean: states the rule, names dist/tool-loop-detection-*.js."""\n'
        "X = 1  # engine spec §2.6\n"
        "# see sessions-and-formats.md\n"
        "# product.md says so\n"
        "# engine-openclaw-versions, engine-gglib, engine-gemini-cli, engine-openhands\n",
        encoding="utf-8")
    assert [r.split(":")[1] for r in references(tmp_path)] == ["2", "3", "4", "5"]
    assert not _allowed("loopscope/ui/pages/x.py") and not _allowed("loopscope/model.py")
