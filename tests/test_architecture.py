"""The architecture, checked: engines are self-contained plug-ins, the core imports no UI.

* No module outside an engine's package spells one of that engine's setting names in code (a
  string literal that is not a docstring): every setting reaches the CLI, the dashboard and the
  exports through the engine's schema.
* The registry is the one place outside the engines that names the built-in engines.
* The core (everything but ``loopscope.ui``) imports no UI library.
* No engine imports another engine, and the importers (``loopscope.formats``) import no
  engine: rules both need (JSON and JavaScript value rules) live in ``loopscope.jsonrules``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

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
    """The engine package a module belongs to (``loopscope.engines.gglib.fast`` → gglib)."""
    parts = module.split(".")
    if len(parts) >= 3 and parts[:2] == ["loopscope", "engines"] \
            and (SRC / "engines" / parts[2]).is_dir():
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
    real, SRC = SRC, fake
    try:
        found = _import_violations(fake)
    finally:
        SRC = real
    assert len(found) == 3 and sum("the engine gglib imports the engine openclaw" in f
                                   for f in found) == 2, found


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
