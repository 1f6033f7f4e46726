"""The architecture, checked: engines are self-contained plug-ins, the core imports no UI.

* No module outside an engine's package spells one of that engine's setting names in code (a
  string literal that is not a docstring): every setting reaches the CLI, the dashboard and the
  exports through the engine's schema.
* The registry is the one place outside the engines that names the built-in engines.
* The core (everything but ``loopscope.ui``) imports no UI library.
* No engine imports another engine, and the importers (``loopscope.formats``) import no
  engine: rules both need (JSON and JavaScript value rules) live in ``loopscope.jsonrules``,
  rules two engines port from one upstream family in ``loopscope.engines._shared``.
* Every built-in engine package has one shape (README, "An engine"): ``config``, ``upstream``,
  ``reference``, ``fast``, ``columns``, ``explain`` and ``engine``, or ``engine`` at the top and
  those six in each release subpackage (``v20*``); no helper with a name that does not say its
  role.
* No circle among loopscope's module-level imports.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from loopscope.engines import registry

SRC = Path(__file__).resolve().parents[1] / "src" / "loopscope"
UI_LIBRARIES = ("streamlit", "pandas", "plotly")


def _package_of(engine: str) -> str:
    """The engine's folder under ``engines/`` (from where the registry loads it)."""
    target = registry.BUILTIN_ENGINES[engine].partition(":")[0]
    return target.split(".")[2]


def _docstring_nodes(tree: ast.AST) -> set[int]:
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
        # attribute docstrings: a bare string right after an assignment
        if hasattr(node, "body") and isinstance(node.body, list):
            for prev, cur in zip(node.body, node.body[1:], strict=False):
                if (isinstance(prev, ast.Assign | ast.AnnAssign) and isinstance(cur, ast.Expr)
                        and isinstance(cur.value, ast.Constant)):
                    ids.add(id(cur.value))
    return ids


def _string_literals(path: Path) -> Iterator[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstring_nodes(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.lineno, node.value


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def _settings_by_engine() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for name in registry.BUILTIN_ENGINES:
        engine = registry.get_engine(name)
        out[name] = {s.name for v in engine.versions for s in engine.settings_for(v)}
    return out


def test_no_module_outside_an_engine_spells_its_setting_names() -> None:
    settings = _settings_by_engine()
    found: list[str] = []
    for path in _modules():
        rel = path.relative_to(SRC)
        own = {name for name in settings
               if rel.parts[:2] == ("engines", _package_of(name))}
        allowed = set().union(*(settings[e] for e in own)) if own else set()
        for engine, names in settings.items():
            if engine in own:
                continue
            for lineno, text in _string_literals(path):
                for setting in names - allowed:
                    if re.search(rf"(?<![\w.]){re.escape(setting)}(?![\w])", text):
                        found.append(f"{rel}:{lineno} spells {engine}'s {setting!r}")
    assert not found, "\n".join(found)


def test_only_the_registry_names_the_built_in_engines() -> None:
    names = set(registry.BUILTIN_ENGINES)
    found: list[str] = []
    for path in _modules():
        rel = path.relative_to(SRC)
        if rel.parts[0] == "engines" and (len(rel.parts) > 2 or rel.name == "registry.py"):
            continue
        for lineno, text in _string_literals(path):
            if text in names:
                found.append(f"{rel}:{lineno} names the engine {text!r}")
    assert not found, "\n".join(found)


def test_the_core_imports_no_ui_library() -> None:
    found: list[str] = []
    for path in _modules():
        rel = path.relative_to(SRC)
        if rel.parts[0] == "ui":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            modules: list[str] = []
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                modules = [node.module]
            for module in modules:
                if module.split(".")[0] in UI_LIBRARIES or module.startswith("loopscope.ui"):
                    found.append(f"{rel}:{node.lineno} imports {module}")
    assert not found, "\n".join(found)


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """Every module ``path`` imports, absolute (``from . import x`` resolved against it)."""
    rel = path.relative_to(SRC.parent).with_suffix("")
    package = list(rel.parts if rel.name == "__init__" else rel.parts[:-1])
    if rel.name == "__init__":
        package = package[:-1]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            yield node.lineno, module
            for alias in node.names:  # ``from loopscope.engines import gglib`` names a package
                yield node.lineno, f"{module}.{alias.name}"


def _engine_of(module: str) -> str | None:
    """The engine package a module belongs to (``loopscope.engines.gglib.fast`` → gglib).
    A package whose name starts with ``_`` (``_shared``) is no engine: engines may import it."""
    parts = module.split(".")
    if len(parts) >= 3 and parts[:2] == ["loopscope", "engines"] \
            and not parts[2].startswith("_") and (SRC / "engines" / parts[2]).is_dir():
        return parts[2]
    return None


def _import_violations(root: Path) -> list[str]:
    found: dict[str, None] = {}  # (one line per offending import statement)
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        own = rel.parts[1] if rel.parts[0] == "engines" and len(rel.parts) > 2 else None
        for lineno, module in _imports(path):
            other = _engine_of(module)
            if other is None or other == own:
                continue
            if rel.parts[0] == "formats":
                found[f"{rel}:{lineno}: an importer imports the engine {other}"] = None
            elif own is not None and own.startswith("_"):
                found[f"{rel}:{lineno}: the shared package {own} imports the engine {other}"] = None
            elif own is not None:
                found[f"{rel}:{lineno}: the engine {own} imports the engine {other}"] = None
    return list(found)


def test_no_engine_imports_another_and_formats_import_no_engine() -> None:
    found = _import_violations(SRC)
    assert not found, "\n".join(found)


def test_the_import_check_can_fail(tmp_path: Path) -> None:
    """A relative or absolute import of another engine, or of an engine from an importer,
    is found (the check reads a copy of the tree with the offending lines added)."""
    global SRC
    fake = tmp_path / "loopscope"
    for sub in ("engines/gglib", "engines/openclaw", "formats"):
        (fake / sub).mkdir(parents=True)
        (fake / sub / "__init__.py").write_text("")
    (fake / "engines" / "gglib" / "fast.py").write_text(
        "from loopscope.engines.openclaw import jsvalue\nfrom ..openclaw.hashing import h\n")
    (fake / "formats" / "builder.py").write_text("from loopscope.engines.gglib.fast import x\n")
    (fake / "engines" / "_shared").mkdir()
    (fake / "engines" / "_shared" / "rules.py").write_text(
        "from loopscope.engines.gglib.fast import x\n")
    (fake / "engines" / "openclaw" / "fast.py").write_text(
        "from loopscope.engines._shared.rules import x\n")  # (allowed)
    real, SRC = SRC, fake
    try:
        found = _import_violations(fake)
    finally:
        SRC = real
    assert len(found) == 4 and sum("the engine gglib imports the engine openclaw" in f
                                   for f in found) == 2, found
    assert any("the shared package _shared imports the engine gglib" in f for f in found), found


def test_the_checks_can_fail(tmp_path: Path) -> None:
    """The literal scan finds a setting name in code but not in a docstring."""
    module = tmp_path / "m.py"
    module.write_text('"""max_repeated_batch_steps in a docstring is fine."""\n'
                      'KEY = "max_repeated_batch_steps"\n')
    assert [t for _, t in _string_literals(module)] == ["max_repeated_batch_steps"]


# --------------------------------------------------------------------------- the dashboard's modules
# No module of ``loopscope.ui`` computes a name on access (a module-level ``__getattr__``):
# what a module offers is what a reader sees in it (constants, or functions to call), and
# tools (mypy, an editor's "go to definition") find every name.


def _module_getattrs(root: Path) -> list[str]:
    """Every module-level ``__getattr__`` under ``root`` (also one inside a module-level
    ``if``/``try``), as ``path:line``."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        statements = list(ast.parse(path.read_text(encoding="utf-8")).body)
        while statements:
            node = statements.pop()
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) \
                    and node.name == "__getattr__":
                found.append(f"{path.relative_to(root)}:{node.lineno}")
            elif isinstance(node, ast.If | ast.Try):
                statements += [*node.body, *node.orelse,
                               *getattr(node, "finalbody", []),
                               *(s for h in getattr(node, "handlers", []) for s in h.body)]
    return found


def test_no_ui_module_defines_a_module_getattr() -> None:
    found = _module_getattrs(SRC / "ui")
    assert not found, "\n".join(found)


def test_the_module_getattr_check_can_fail(tmp_path: Path) -> None:
    """A module-level ``__getattr__`` is found, plain or under an ``if``; a class's is not."""
    (tmp_path / "pages").mkdir()
    (tmp_path / "state.py").write_text(
        "def __getattr__(name):\n    raise AttributeError(name)\n")
    (tmp_path / "pages" / "p.py").write_text(
        "import sys\nif sys:\n    def __getattr__(name):\n        return 1\n")
    (tmp_path / "fine.py").write_text(
        "class C:\n    def __getattr__(self, name):\n        return 1\n")
    assert _module_getattrs(tmp_path) == ["pages/p.py:3", "state.py:1"]


def test_the_core_ui_check_can_fail(tmp_path: Path) -> None:
    """The core check finds a UI library imported by a core module (``import``, ``from``, or
    inside a function), and not one imported under ``ui/``."""
    import pytest

    global SRC
    fake = tmp_path / "loopscope"
    (fake / "ui").mkdir(parents=True)
    (fake / "ui" / "app.py").write_text("import streamlit\n")
    (fake / "report.py").write_text("def f():\n    import plotly.graph_objects\n")
    (fake / "corpus.py").write_text("from pandas import DataFrame\n")
    real, SRC = SRC, fake
    try:
        with pytest.raises(AssertionError) as failed:
            test_the_core_imports_no_ui_library()
    finally:
        SRC = real
    lines = [line.strip() for line in str(failed.value).splitlines()]
    assert "corpus.py:1 imports pandas" in lines and "report.py:2 imports plotly.graph_objects" \
        in lines and not any(line.startswith("ui") for line in lines), lines


# --------------------------------------------------------------------------- the Engine contract
# (Issue #35, the protocol and corpus part.) Callers use an engine only through what the
# ``Engine`` protocol states (``BaseEngine`` gives the defaults): nothing outside ``engines/``
# probes an engine (or prepared data) with ``getattr``/``hasattr``, no engine parameter is typed
# ``Any``, and ``loopscope.corpus`` takes engine objects, never names.

_PROBED = ("engine", "eng", "e", "prepared")
"""Variable names that hold an engine (or its prepared sessions) by the project's habit."""
_ENGINE_PARAMS = ("engine", "eng")
_CORPUS_ENGINE_PARAMS = (*_ENGINE_PARAMS, "wanted", "prepare")


def _probed_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _engine_probes(root: Path) -> list[str]:
    """``getattr``/``hasattr`` calls on an engine or prepared data outside ``engines/``."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] == "engines":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("getattr", "hasattr") and node.args):
                name = _probed_name(node.args[0])
                if name is not None and (name in _PROBED or name.endswith("engine")):
                    found.append(f"{rel}:{node.lineno}: {node.func.id}({name}, ...)")
    return found


def _engine_annotations(root: Path) -> list[str]:
    """Engine parameters typed ``Any`` (anywhere), and parameters of ``corpus/`` that take an
    engine (or a list of them) not typed with ``Engine`` (or ``Wanted``)."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        in_corpus = rel.parts[0].removesuffix(".py") == "corpus"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            for arg in args:
                text = ast.unparse(arg.annotation) if arg.annotation is not None else ""
                if arg.arg in _ENGINE_PARAMS and text in ("", "Any", "object"):
                    found.append(f"{rel}:{node.lineno}: {node.name}({arg.arg}: {text or '?'})")
                elif (in_corpus and arg.arg in _CORPUS_ENGINE_PARAMS
                        and "Engine" not in text and "Wanted" not in text):
                    found.append(f"{rel}:{node.lineno}: {node.name}({arg.arg}: {text})")
    return found


def test_no_module_outside_the_engines_probes_an_engine() -> None:
    found = _engine_probes(SRC)
    assert not found, "\n".join(found)


def test_engine_parameters_are_typed_and_the_corpus_takes_engines() -> None:
    found = _engine_annotations(SRC)
    assert not found, "\n".join(found)


def test_the_contract_checks_can_fail(tmp_path: Path) -> None:
    """A probe of an engine, an engine parameter typed ``Any`` and a corpus function taking an
    engine name are each found; a probe inside an engine's package is allowed."""
    fake = tmp_path / "loopscope"
    for sub in ("engines/gglib", "corpus", "ui"):
        (fake / sub).mkdir(parents=True)
    (fake / "engines" / "gglib" / "engine.py").write_text(
        "def f(x):\n    return getattr(x.engine, 'table_spec', None)\n")
    (fake / "ui" / "page.py").write_text(
        "from typing import Any\n\n"
        "def f(engine: Any, prepared):\n"
        "    return getattr(engine, 'run_many', None), hasattr(prepared, 'derived')\n")
    (fake / "corpus" / "loaded.py").write_text(
        "def prepared(self, engine: str, version: str | None = None): ...\n"
        "def fine(engine: 'Engine[Any, Any]', wanted: 'Wanted'): ...\n")
    assert _engine_probes(fake) == ["ui/page.py:4: getattr(engine, ...)",
                                    "ui/page.py:4: hasattr(prepared, ...)"]
    assert _engine_annotations(fake) == ["corpus/loaded.py:1: prepared(engine: str)",
                                         "ui/page.py:3: f(engine: Any)"]


def test_a_plug_in_with_the_documented_minimum_is_a_whole_engine() -> None:
    """``BaseEngine`` gives every member of the ``Engine`` protocol that a plug-in need not
    write (the batch run, the codec, the table spec, …): a subclass that writes only its rules
    is an ``Engine``, and its batch run and table spec work; one missing a member is not, and
    the registry refuses it by name."""
    from typing import Any

    from loopscope.engines import Engine
    from loopscope.engines.base import SessionReplay
    from loopscope.engines.contract import BaseEngine

    class Minimal(BaseEngine[int, int]):
        name = "minimal"

        def build_config(self, values: Any, version: str) -> tuple[int, tuple[str, ...]]:
            return 0, ()

        def config_values(self, config: int) -> dict[str, Any]:
            return {}

        def prepare(self, session: Any, version: str | None = None) -> int:
            return 0

        def run(self, prepared: int, config: int) -> SessionReplay:
            return SessionReplay(str(prepared), "s", "f", self.name, (), None)

        def replay(self, session: Any, config: int) -> SessionReplay:
            return self.run(self.prepare(session), config)

    minimal = Minimal()
    assert isinstance(minimal, Engine)
    assert all(isinstance(registry.get_engine(n), Engine) for n in registry.BUILTIN_ENGINES)
    columns = minimal.run_many([0, 1], minimal.default_config())
    assert len(columns) == 2 and columns[1].session == "1" and not columns.refused.any()
    assert minimal.table_spec() is None and minimal.replayed_one_by_one == ()

    class Partial:  # the old, unstated shape: no batch run, no codec
        name = "partial"

        def run(self, prepared: Any, config: Any) -> Any: ...

    assert not isinstance(Partial(), Engine)
    # The registry refuses such a plug-in where it is loaded, naming what it lacks.
    assert registry.checked("minimal", minimal) is minimal
    try:
        registry.checked("partial", Partial())
    except TypeError as exc:
        assert "run_many" in str(exc) and "table_spec" in str(exc) and "run," not in str(exc)
    else:
        raise AssertionError("a plug-in without run_many was accepted")


# ------------------------------------------------------------------------------ engine shape

ENGINE_MODULES = ("config", "upstream", "reference", "fast", "columns", "explain", "engine")
"""The modules of every engine package (README, "An engine")."""
RELEASE_MODULES = tuple(m for m in ENGINE_MODULES if m != "engine")
"""What each release subpackage holds when an engine models releases as sibling packages."""
VAGUE_NAMES = ("core", "canon", "detector", "detection", "common", "misc", "util", "utils",
               "helpers")
"""Helper module names that do not say their role (a helper is named for what it holds:
``fnv.py``, ``events.py``, ``python_equality.py``)."""


def _modules_in(folder: Path) -> set[str]:
    return {p.stem for p in folder.glob("*.py")}


def _shape_problems(package: Path) -> list[str]:
    """How ``package`` departs from the engine package shape (empty: it has the shape).

    Either the seven modules at its top, or ``engine.py`` at its top and the six others in each
    release subpackage (a subpackage named ``v20*``); nowhere a module named in
    :data:`VAGUE_NAMES`."""
    found: list[str] = []
    releases = sorted(p for p in package.iterdir()
                      if p.is_dir() and p.name.startswith("v20") and (p / "__init__.py").exists())
    top = _modules_in(package)
    wanted = ("engine",) if releases else ENGINE_MODULES
    found += [f"{package.name}/{m}.py is missing" for m in wanted if m not in top]
    for release in releases:
        have = _modules_in(release)
        found += [f"{package.name}/{release.name}/{m}.py is missing"
                  for m in RELEASE_MODULES if m not in have]
    for path in sorted(package.rglob("*.py")):
        if path.stem in VAGUE_NAMES:
            found.append(f"{path.relative_to(package.parent)}: a name that does not say its role")
    return found


def _engine_package(engine: str) -> Path:
    return SRC / "engines" / _package_of(engine)


@pytest.mark.parametrize("engine", list(registry.BUILTIN_ENGINES))
def test_every_engine_package_has_the_shape(engine: str) -> None:
    problems = _shape_problems(_engine_package(engine))
    assert not problems, "\n".join(problems)


def _readme_engine_modules(readme: str) -> tuple[str, ...]:
    """The modules the README's "An engine" section lists, in its order."""
    section = readme[readme.index("### An engine"):readme.index("### Adding a guard")]
    return tuple(re.findall(r"^- `(\w+)\.py` —", section, re.M))


def test_the_readme_states_the_shape_this_test_checks() -> None:
    readme = (SRC.parents[1] / "README.md").read_text(encoding="utf-8")
    assert _readme_engine_modules(readme) == ENGINE_MODULES
    assert _readme_engine_modules(
        "### An engine\n- `config.py` — a\n- `fast.py` — b\n### Adding a guard\n") == (
        "config", "fast")


def test_the_shape_check_can_fail(tmp_path: Path) -> None:
    """A package missing a module, a release missing one, a vaguely named helper, and a release
    layout without ``engine.py`` at its top are each found; the two good layouts pass."""
    def package(name: str, modules: tuple[str, ...], releases: Mapping[str, tuple[str, ...]] = {}
                ) -> Path:
        root = tmp_path / name
        root.mkdir()
        for m in ("__init__", *modules):
            (root / f"{m}.py").write_text("")
        for release, inside in releases.items():
            (root / release).mkdir()
            for m in ("__init__", *inside):
                (root / release / f"{m}.py").write_text("")
        return root

    assert _shape_problems(package("flat", (*ENGINE_MODULES, "fnv", "events"))) == []
    assert _shape_problems(package("released", ("engine", "hashing"), {
        "v2026_3": RELEASE_MODULES, "v2026_9": RELEASE_MODULES})) == []
    assert _shape_problems(package("no_upstream", tuple(
        m for m in ENGINE_MODULES if m != "upstream"))) == ["no_upstream/upstream.py is missing"]
    assert _shape_problems(package("vague", (*ENGINE_MODULES, "core"))) == [
        "vague/core.py: a name that does not say its role"]
    half = tuple(m for m in RELEASE_MODULES if m != "columns")
    assert _shape_problems(package("half", ("engine",), {
        "v2026_3": RELEASE_MODULES, "v2026_9": half})) == ["half/v2026_9/columns.py is missing"]
    assert _shape_problems(package("no_engine", (), {"v2026_3": RELEASE_MODULES})) == [
        "no_engine/engine.py is missing"]


# ------------------------------------------------------------------------------ import circles

ALLOWED_CYCLES: tuple[frozenset[str], ...] = ()
"""Circles among module-level imports that are known and accepted, each with the reason.
None today: the importers' circle (``formats.base`` and ``formats.builder`` and the format
modules) and every engine's ``engine.py`` → ``columns.py`` go through imports inside
functions, which this check leaves out on purpose (they run after every module is loaded)."""


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_imports(tree: ast.AST, *, deferred: bool = False
                     ) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports that run when the module is loaded: at its top level, also inside ``if``,
    ``try``, ``with`` and class bodies; with ``deferred``, also those inside functions (they run
    when called). Never those under ``if TYPE_CHECKING``, which never run."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not deferred:
            continue
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for branch in node.orelse:
                yield from _runtime_imports(ast.Module([branch], []), deferred=deferred)
        elif isinstance(node, ast.stmt | ast.excepthandler):
            yield from _runtime_imports(node, deferred=deferred)


def _import_graph(root: Path, *, deferred: bool = False) -> dict[str, set[str]]:
    """Module → the loopscope modules it imports at module level (with ``deferred``, also those
    imported inside functions), from the source under ``root`` (a package folder named
    ``loopscope``). ``from package import name`` points at the submodule ``package.name`` when
    there is one, else at the package. A submodule's implicit import of its parent package is
    not an edge: Python runs the parent's ``__init__`` first, so a package re-exporting its
    submodules is no circle."""
    modules: dict[str, Path] = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        edges: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _runtime_imports(tree, deferred=deferred):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names if a.name in modules)
                continue
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            for alias in node.names:
                if f"{module}.{alias.name}" in modules:
                    edges.add(f"{module}.{alias.name}")
                elif module in modules:
                    edges.add(module)
        edges.discard(name)
        graph[name] = edges
    return graph


def _cycles(graph: Mapping[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, with an
    explicit stack): every circle lies inside one of them."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            child = next((e for e in edges if e in graph), None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_no_import_circles() -> None:
    cycles = [c for c in _cycles(_import_graph(SRC)) if c not in ALLOWED_CYCLES]
    assert not cycles, "\n".join(" <-> ".join(sorted(c)) for c in cycles)


def test_no_circle_inside_an_engine_even_through_deferred_imports() -> None:
    """Inside one engine package the modules form layers (``engine`` over ``columns`` over
    ``fast`` over ``reference`` over ``upstream``), so not even an import inside a function
    closes a circle: ``columns`` gets the prepared type from ``fast``, never from ``engine``."""
    def engine_of(module: str) -> str | None:
        parts = module.split(".")
        return parts[2] if len(parts) > 3 and parts[:2] == ["loopscope", "engines"] else None

    cycles = [c for c in _cycles(_import_graph(SRC, deferred=True))
              if len({engine_of(m) for m in c}) == 1 and engine_of(next(iter(c)))]
    assert not cycles, "\n".join(" <-> ".join(sorted(c)) for c in cycles)


def test_the_circle_check_can_fail(tmp_path: Path) -> None:
    """A circle of module-level imports (absolute, relative, through ``from package import
    module``) is found; the same imports inside a function or under ``if TYPE_CHECKING`` are
    not circles, nor is a package importing its own submodules."""
    fake = tmp_path / "loopscope"
    (fake / "engines" / "toy").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "engines/__init__.py": "",
        "engines/toy/__init__.py": "from loopscope.engines.toy.engine import ENGINE\n",
        "engines/toy/engine.py": "from loopscope.engines.toy import columns\nENGINE = 1\n",
        "engines/toy/columns.py": "from .fast import P\n",
        "engines/toy/fast.py": ("try:\n    from loopscope.engines.toy.engine import ENGINE\n"
                                "except ImportError:\n    pass\nP = 1\n"),
        "engines/toy/explain.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                   "    from loopscope.engines.toy.config import C\n"),
        "engines/toy/config.py": ("from loopscope.engines.toy.explain import E\n"
                                  "def later():\n    from loopscope.engines.toy import engine\n"),
    }
    for rel, text in files.items():
        (fake / rel).write_text(text)
    graph = _import_graph(fake)
    assert graph["loopscope.engines.toy.columns"] == {"loopscope.engines.toy.fast"}
    assert _cycles(graph) == [frozenset({"loopscope.engines.toy.engine",
                                         "loopscope.engines.toy.columns",
                                         "loopscope.engines.toy.fast"})]
    # With the imports inside functions, config -> engine is an edge too (explain -> config,
    # under TYPE_CHECKING, still is not).
    deferred = _import_graph(fake, deferred=True)
    assert "loopscope.engines.toy.engine" in deferred["loopscope.engines.toy.config"]
    assert "loopscope.engines.toy.config" not in deferred["loopscope.engines.toy.explain"]
    (fake / "engines/toy/explain.py").write_text(
        "def later():\n    from loopscope.engines.toy.config import C\n")
    assert frozenset({"loopscope.engines.toy.config", "loopscope.engines.toy.explain"}) in \
        _cycles(_import_graph(fake, deferred=True))
    assert len(_cycles(_import_graph(fake))) == 1
