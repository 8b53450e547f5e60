"""The application's modules import each other in one direction, at the top of the module.

An import inside a function hides a dependency, usually to get round a cycle; a cycle means two
modules that cannot be read (or changed) one without the other. Both are refused here (an import
inside a function counts for cycles too, so that the allowed exceptions hide none), for the
modules that run in the web and worker processes (the Django apps and ``gpuatlas``; not tests,
perf scripts or migrations). ``AppConfig.ready()`` is the one place Django wants project imports
inside a function (models are not loadable when ``apps.py`` is imported).

The apps (the top-level packages) are layered too: no cycle between apps either, so that each
app can be read with only the apps below it in mind. A lower app that needs work of a higher one
names it by its Celery task (``gpuatlas.followups``) instead of importing it.

No custom signal: a write says what follows it by calling it, not by sending a signal the
project defines for a receiver elsewhere to pick up. Refused here: a ``Signal()`` (or
``ModelSignal()``) made in a project module, and a ``@receiver`` or ``.connect`` on a signal
defined in a project module. The frameworks' own signals are not custom and stay allowed: Celery's
(``celery.signals.task_prerun``, ``worker_ready``... connected in ``gpuatlas/celery*.py``) and
Django's (``request_started``, ``post_save``...) are the frameworks' hooks into their own
lifecycle, a point the project's code cannot call itself.

``python -m tests.test_import_graph`` prints the graph: each module and the project modules it
imports, then each app and the apps it imports.
"""

from __future__ import annotations

import ast
import graphlib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("accounts", "api", "benchmarks_app", "catalog", "dashboard", "fitcalc", "gpuatlas", "llm", "watches")

# Function-level imports of project modules allowed, each with its reason: none.
KNOWN_FUNCTION_IMPORTS: set[tuple[str, str]] = set()
# Imports from an app into one above it, each with its reason: none.
KNOWN_APP_CYCLES: set[tuple[str, str]] = set()
# Custom signals allowed (module, line), each with its reason: none.
KNOWN_CUSTOM_SIGNALS: set[tuple[str, int]] = set()
SIGNAL_CLASSES = {"Signal", "ModelSignal"}


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


def app_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """App (top-level package) -> the other apps its modules import."""
    apps: dict[str, set[str]] = {}
    for module, imported in graph.items():
        app = module.split(".")[0]
        apps.setdefault(app, set()).update(name.split(".")[0] for name in imported if name.split(".")[0] != app)
    return apps


def app_cycles(apps: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle of the app graph, as its apps in order (each once, from its smallest name)."""
    found: set[tuple[str, ...]] = set()

    def walk(path: list[str]) -> None:
        for following in sorted(apps.get(path[-1], ())):
            if following == path[0]:
                found.add(tuple(path))
            elif following not in path and following > path[0]:
                walk([*path, following])

    for start in sorted(apps):
        walk([start])
    return [list(cycle) for cycle in sorted(found)]


@dataclass(frozen=True)
class SignalUse:
    module: str
    line: int
    what: str


def _names_bound(tree: ast.Module, module: str, package: str) -> dict[str, str]:
    """Local name -> the dotted name it stands for: the module's imports and its own top-level names."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{base}.{alias.name}"
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    bound[target.id] = f"{module}.{target.id}"
    return bound


def _dotted(node: ast.expr, bound: dict[str, str]) -> str | None:
    """The dotted name an expression such as ``signals.post_save`` stands for, or None."""
    if isinstance(node, ast.Name):
        return bound.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, bound)
        return f"{base}.{node.attr}" if base else None
    return None


def _signal_made(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id in SIGNAL_CLASSES) or (
        isinstance(func, ast.Attribute) and func.attr in SIGNAL_CLASSES
    )


def custom_signals(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> list[SignalUse]:
    """Signals the project defines, and every receiver connected to one of them."""
    modules = project_modules(root, packages)
    trees = {
        module: ast.parse(path.read_text(encoding="utf-8"), filename=str(path)) for module, path in modules.items()
    }
    uses: list[SignalUse] = []
    defined: set[str] = set()
    for module, tree in trees.items():
        for node in ast.walk(tree):
            if _signal_made(node):
                uses.append(SignalUse(module, node.lineno, "defines a signal"))
        for node in tree.body:
            if isinstance(node, ast.Assign | ast.AnnAssign) and _signal_made(node.value):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                defined.update(f"{module}.{t.id}" for t in targets if isinstance(t, ast.Name))
    for module, tree in trees.items():
        package = module if modules[module].name == "__init__.py" else module.rpartition(".")[0]
        bound = _names_bound(tree, module, package)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "connect":
                signal = _dotted(func.value, bound)
            elif _dotted(func, bound) in {"receiver", "django.dispatch.receiver"} and node.args:
                signal = _dotted(node.args[0], bound)
            else:
                continue
            if signal in defined:
                uses.append(SignalUse(module, node.lineno, f"connects a receiver to {signal}"))
    return sorted(uses, key=lambda use: (use.module, use.line))


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


def test_no_import_cycle_between_apps():
    graph, _ = import_graph()
    unexpected = [
        " -> ".join([*cycle, cycle[0]])
        for cycle in app_cycles(app_graph(graph))
        if not all((cycle[i], cycle[(i + 1) % len(cycle)]) in KNOWN_APP_CYCLES for i in range(len(cycle)))
    ]
    assert unexpected == []


def test_no_custom_signal():
    unexpected = [
        f"{use.module}:{use.line} {use.what}"
        for use in custom_signals()
        if (use.module, use.line) not in KNOWN_CUSTOM_SIGNALS
    ]
    assert unexpected == []


def test_the_checker_sees_a_cycle_between_apps_and_a_custom_signal(tmp_path):
    for app in ("low", "high"):
        (tmp_path / app).mkdir()
        (tmp_path / app / "__init__.py").write_text("")
    (tmp_path / "low" / "events.py").write_text("from django.dispatch import Signal\n\nchanged = Signal()\n")
    (tmp_path / "low" / "write.py").write_text("from high.page import render\n")  # upward: the cycle
    (tmp_path / "low" / "hooks.py").write_text(
        "from celery import signals\nfrom django.core.signals import request_finished\n\n"
        "signals.task_prerun.connect(print)\nrequest_finished.connect(print)\n"
    )  # the frameworks' own signals: allowed
    (tmp_path / "high" / "page.py").write_text(
        "from django.dispatch import receiver\n\nfrom low import events\nfrom low.events import changed as c\n\n"
        "def render():\n    pass\n\n@receiver(c)\ndef warm(**kwargs):\n    pass\n\n"
        "events.changed.connect(render)\n"
    )
    graph, _ = import_graph(tmp_path, ("low", "high"))
    assert app_graph(graph) == {"low": {"high"}, "high": {"low"}}
    assert app_cycles(app_graph(graph)) == [["high", "low"]]
    assert app_cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert [(u.module, u.line, u.what) for u in custom_signals(tmp_path, ("low", "high"))] == [
        ("high.page", 9, "connects a receiver to low.events.changed"),
        ("high.page", 13, "connects a receiver to low.events.changed"),
        ("low.events", 3, "defines a signal"),
    ]


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
    print()
    apps = app_graph(graph)
    for app in sorted(apps):
        print(f"{app}: {', '.join(sorted(apps[app])) or '-'}")
    for use in custom_signals():
        print(f"custom signal: {use.module}:{use.line} {use.what}")
