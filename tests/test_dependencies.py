"""Dependencies (issue #18): every range in pyproject.toml has an upper bound, and the CI lock
pins a version inside each range, so a fresh install resolves to versions that were tested."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

packaging = pytest.importorskip("packaging.requirements")
from packaging.requirements import Requirement  # noqa: E402
from packaging.utils import canonicalize_name  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
REQUIREMENTS = [Requirement(r) for r in PROJECT["dependencies"]] + [
    Requirement(r) for extra in PROJECT["optional-dependencies"].values() for r in extra]


def _lock() -> dict[str, list[tuple[str, str]]]:
    """name → [(version, marker)] from requirements/ci.lock."""
    pins: dict[str, list[tuple[str, str]]] = {}
    for line in (ROOT / "requirements" / "ci.lock").read_text(encoding="utf-8").splitlines():
        match = re.match(r"^([A-Za-z0-9_.\-\[\]]+)==([^\s;]+)\s*(?:;\s*(.*))?$", line)
        if match:
            name = canonicalize_name(match.group(1).split("[")[0])
            pins.setdefault(name, []).append((match.group(2), match.group(3) or ""))
    return pins


@pytest.mark.parametrize("requirement", REQUIREMENTS, ids=str)
def test_every_range_has_an_upper_bound(requirement: Requirement) -> None:
    assert any(s.operator in ("<", "<=", "==", "~=") for s in requirement.specifier), (
        f"{requirement} has no upper bound")


@pytest.mark.parametrize("requirement", REQUIREMENTS, ids=str)
def test_the_ci_lock_pins_a_version_in_range(requirement: Requirement) -> None:
    pins = _lock().get(canonicalize_name(requirement.name))
    assert pins, f"{requirement.name} is not in requirements/ci.lock"
    for version, _marker in pins:
        assert requirement.specifier.contains(version, prereleases=True), (
            f"ci.lock pins {requirement.name}=={version}, outside {requirement.specifier}")


def test_ci_installs_with_the_lock() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "-c requirements/ci.lock -e '.[app,test,dask]'" in script
