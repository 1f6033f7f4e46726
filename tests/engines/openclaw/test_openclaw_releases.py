"""OpenClaw's releases are sibling packages behind one engine that picks a release once.

* A release package (``v2026_6``, ``v2026_9``) never imports its sibling, and ``shared`` imports
  no release: what both run lives in ``shared``, so a difference between releases is always a
  difference between two packages.
* ``engine.py`` holds no per-method version branching: no ``is_fixed``, and no ``if`` in the
  engine class that tests a release's own types, versions or constants; every method hands the
  call to the release object of the version or configuration.
* Every version the engine lists reaches the release that lists it, and a configuration of each
  release finds its release again.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from loopscope.engines.openclaw import engine as engine_module
from loopscope.engines.openclaw.engine import ENGINE, RELEASES, release_of

PACKAGE = Path(engine_module.__file__).resolve().parent
PREFIX = "loopscope.engines.openclaw."
RELEASE_PACKAGES = sorted(p.name for p in PACKAGE.iterdir()
                          if p.is_dir() and p.name.startswith("v20"))
ROLES = ("config", "upstream", "reference", "fast", "columns", "explain")


def _imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports (at the top or inside a function), relative ones
    resolved against its package."""
    package = ("loopscope." + ".".join(path.relative_to(PACKAGE.parents[2]).parts[:-1]))
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[:len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _subpackage(module: str) -> str | None:
    if not module.startswith(PREFIX):
        return None
    return module[len(PREFIX):].split(".")[0]


def test_there_are_sibling_release_packages_with_every_role() -> None:
    assert len(RELEASE_PACKAGES) >= 2, RELEASE_PACKAGES
    for name in RELEASE_PACKAGES:
        missing = [role for role in ROLES if not (PACKAGE / name / f"{role}.py").is_file()]
        assert not missing, f"{name} lacks {missing}"


@pytest.mark.parametrize("package", [*RELEASE_PACKAGES, "shared"])
def test_a_release_package_never_imports_its_sibling(package: str) -> None:
    others = set(RELEASE_PACKAGES) - {package}
    bad = []
    for path in sorted((PACKAGE / package).rglob("*.py")):
        for module in _imported_modules(path):
            sub = _subpackage(module)
            if sub in others or sub in ("engine", "__init__"):
                bad.append(f"{path.relative_to(PACKAGE)} imports {module}")
    assert not bad, "\n".join(bad)


def test_engine_has_no_per_method_version_branching() -> None:
    assert not hasattr(ENGINE, "is_fixed")
    source = Path(engine_module.__file__).read_text(encoding="utf-8")
    tree = ast.parse(source)
    release_names = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and _subpackage(node.module or "") in RELEASE_PACKAGES:
            release_names.update(alias.asname or alias.name for alias in node.names)
    engine_class = next(n for n in tree.body
                        if isinstance(n, ast.ClassDef) and n.name == "OpenClawEngine")
    branches = []
    for node in ast.walk(engine_class):
        if not isinstance(node, ast.If | ast.IfExp):
            continue
        names = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
        texts = {n.value for n in ast.walk(node.test)
                 if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        if names & release_names or any(t in ENGINE.versions for t in texts):
            branches.append(f"line {node.lineno}: {ast.unparse(node.test)}")
    assert "is_fixed" not in source
    assert not branches, "\n".join(branches)


@pytest.mark.parametrize("version", ENGINE.versions)
def test_every_version_reaches_its_release_once(version: str) -> None:
    release = ENGINE.release(version)
    assert version in release.versions
    assert [r for r in RELEASES if version in r.versions] == [release]
    config = ENGINE.default_config(version)
    assert release_of(config) is release
    assert ENGINE.settings_for(version) == release.settings
    assert ENGINE.prepare_key(version) == release.prepare_key
