"""The application's modules import each other in one direction, at the top of the module.

An import inside a function hides a dependency, usually to get round a cycle; a cycle means two
modules that cannot be read (or changed) one without the other. Both are refused here (an import
inside a function counts for cycles too, so that the allowed exceptions hide none), for the
modules that run in the web and worker processes (the Django apps and ``gpuatlas``; not tests,
perf scripts or migrations). ``AppConfig.ready()`` is the one place Django wants project imports
inside a function (models are not loadable when ``apps.py`` is imported).

``python -m tests.test_import_graph`` prints the graph: each module and the project modules it imports.
"""

from __future__ import annotations

import ast
import graphlib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("accounts", "api", "benchmarks_app", "catalog", "dashboard", "fitcalc", "gpuatlas", "llm")

# Function-level imports of project modules allowed, each with its reason: none.
KNOWN_FUNCTION_IMPORTS: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class ProjectImport:
    importer: str
    imported: str
    line: int
    top_level: bool


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def project_modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            found[module_name(path, root)] = path
    return found


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The project module an import names: the longest known prefix of the dotted name."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(module: str, path: Path, modules: dict[str, Path]) -> list[ProjectImport]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[ProjectImport] = []

    def visit(node: ast.AST, top_level: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                continue  # read by type checkers only, never at run time
            if isinstance(child, ast.Import):
                names = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                # ``from a import b`` imports the module a.b when there is one, else a.
                names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in child.names]
            else:
                inner = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
                visit(child, top_level and not inner)
                continue
            for name in names:
                target = _resolve(name, modules)
                if target is not None and target != module:
                    found.append(ProjectImport(module, target, child.lineno, top_level))

    visit(tree, True)
    return found


def import_graph(
    root: Path = ROOT, packages: tuple[str, ...] = PACKAGES
) -> tuple[dict[str, set[str]], list[ProjectImport]]:
    """Module -> the project modules it imports (anywhere); and the imports inside a function."""
    modules = project_modules(root, packages)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    inner: list[ProjectImport] = []
    for module, path in modules.items():
        for found in _imports(module, path, modules):
            graph[module].add(found.imported)
            if not found.top_level and path.name != "apps.py":
                inner.append(found)
    return graph, inner


def test_no_import_cycle_between_project_modules():
    graph, _ = import_graph()
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as cycle:
        raise AssertionError(f"import cycle: {' -> '.join(cycle.args[1])}") from None


def test_no_project_module_is_imported_inside_a_function():
    _, inner = import_graph()
    unexpected = [
        f"{i.importer}:{i.line} imports {i.imported}"
        for i in inner
        if (i.importer, i.imported) not in KNOWN_FUNCTION_IMPORTS
    ]
    assert unexpected == []


def test_the_checker_sees_a_cycle_and_an_import_inside_a_function(tmp_path):
    package = tmp_path / "loop"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from loop.b import f\n")
    (package / "b.py").write_text("from . import c\n\ndef f():\n    from loop import a\n")
    (package / "c.py").write_text("import loop.a\n")
    graph, inner = import_graph(tmp_path, ("loop",))
    assert graph == {"loop": set(), "loop.a": {"loop.b"}, "loop.b": {"loop.a", "loop.c"}, "loop.c": {"loop.a"}}
    assert [(i.importer, i.imported, i.line) for i in inner] == [("loop.b", "loop.a", 4)]
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError:
        pass
    else:
        raise AssertionError("the cycles a -> b -> a and a -> b -> c -> a were not seen")


if __name__ == "__main__":
    graph, inner = import_graph()
    for module in sorted(graph):
        print(f"{module}: {', '.join(sorted(graph[module])) or '-'}")
    for found in inner:
        print(f"inside a function: {found.importer}:{found.line} imports {found.imported}")
