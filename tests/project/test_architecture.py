"""The runtime's structure, as declared once here and kept by the test command.

Each module of ``mcpbind`` stands on one layer; a module imports only modules of its own
layer or below, never one above it, and no two modules import each other, directly or
through others (late imports inside functions count: they hide a cycle, they do not remove
it). No module of the three packages imports another module's underscore names, and no
module or class grows past the size a reader takes in at one sitting.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE_ROOTS = {
    "mcpbind": ROOT / "runtime",
    "mcpbind_codegen": ROOT / "codegen",
    "mcpbind_protocol": ROOT / "generated",
}

# Top to bottom: a module may import from its own layer and the layers below it. A module
# is placed by the longest prefix listed here (a wing by its package, a module by its name).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("cli",),
    ("app", "bindings"),
    ("host",),
    ("http", "_transports.http", "auth", "serving", "_transports"),
    (
        "_server.server",
        "_server.stateless_answers",
        "_client.client",
        "_client.renewal",
        "_extensions.tasks.serving",
        "_extensions.tasks.shared",
        "_server",
        "_client",
        "_extensions",
    ),
    ("middleware",),
    (
        "_core.session",
        "_transports.stdio",
        "stores",
        "_server.running",
        "_core.outgoing",
        "_server.answering",
        "telemetry",
    ),
    (
        "_core.lifecycle",
        "_core.capabilities",
        "_core.extensions",
        "methods",
        "_core.request_state",
        "_core.limits",
        "_transports.http.disconnect",
        "_core.queues",
        "_core.stepping",
        "_core.ownership",
        "_transports.memory",
        "auth._principal",
        "_core.wire",
        "_core",
    ),
    ("_core.jsonrpc", "codec", "_core.logsafe", "_core.extras", "_transports.http.asgi"),
)

# What the runtime still does against the rules above, each to be removed, never added to:
# the test fails when one is fixed and still listed, so the list only shrinks.
KNOWN_UPWARD: set[tuple[str, str]] = set()
KNOWN_CYCLES: set[frozenset[str]] = set()
KNOWN_PRIVATE: set[tuple[str, str]] = set()

# Past these a module or class is named in a warning (a hint, not a rule).
MAX_MODULE_LINES = 700
MAX_CLASS_LINES = 400


@dataclass(frozen=True)
class Import:
    module: str
    target: str
    names: tuple[str, ...]


def modules(package: str) -> dict[str, Path]:
    root = SOURCE_ROOTS[package]
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(package: str) -> Iterator[Import]:
    known = modules(package)
    for module, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        here = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[: len(here) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] not in SOURCE_ROOTS:
                    continue
                names = tuple(alias.name for alias in node.names)
                submodules = [f"{target}.{name}" for name in names if f"{target}.{name}" in known]
                for submodule in submodules:
                    yield Import(module, submodule, ())
                rest = tuple(name for name in names if f"{target}.{name}" not in known)
                if rest or not submodules:
                    yield Import(module, target, rest)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in SOURCE_ROOTS:
                        yield Import(module, alias.name, ())


def layer_of(module: str) -> int:
    inside = module.removeprefix("mcpbind").removeprefix(".")
    best, depth = len(LAYERS), -1
    for index, names in enumerate(LAYERS):
        for name in names:
            if (inside == name or inside.startswith(name + ".")) and name.count(".") > depth:
                best, depth = index, name.count(".")
    return best


def runtime_graph() -> dict[str, set[str]]:
    known = modules("mcpbind")
    graph: dict[str, set[str]] = {module: set() for module in known}
    for found in imports("mcpbind"):
        target = found.target
        while target not in known and "." in target:
            target = target.rsplit(".", 1)[0]
        # A package's face (__init__) hands names on; the module that defines them is
        # what is depended on, and faces are checked as the front door they are.
        if target in known and target != found.module and not known[target].name == "__init__.py":
            graph[found.module].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in graph[node]:
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.add(frozenset(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles_in_the_runtime() -> None:
    found = cycles(runtime_graph())
    assert found - KNOWN_CYCLES == set(), "import cycles: " + "; ".join(
        " <-> ".join(sorted(c)) for c in found - KNOWN_CYCLES
    )
    assert KNOWN_CYCLES - found == set(), "fixed: remove from KNOWN_CYCLES"


def test_no_upward_imports_in_the_runtime() -> None:
    graph = runtime_graph()
    upward = {
        (module, target)
        for module, targets in graph.items()
        for target in targets
        if module != "mcpbind" and layer_of(target) < layer_of(module)
    }
    assert upward - KNOWN_UPWARD == set(), "upward imports: " + ", ".join(
        f"{a} -> {b}" for a, b in sorted(upward - KNOWN_UPWARD)
    )
    assert KNOWN_UPWARD - upward == set(), "fixed: remove from KNOWN_UPWARD"


def test_every_runtime_module_has_a_layer() -> None:
    unplaced = [m for m in modules("mcpbind") if m != "mcpbind" and layer_of(m) == len(LAYERS)]
    assert unplaced == [], f"place these in LAYERS: {unplaced}"


def private_scope(target: str) -> str:
    """The package whose modules may import ``target``: its top package, if any part is private."""
    parts = target.split(".")
    for index, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return parts[0]
    return ""


@pytest.mark.parametrize("package", sorted(SOURCE_ROOTS))
def test_no_module_imports_another_modules_underscore_names(package: str) -> None:
    private = {
        (found.module, f"{found.target}.{name}")
        for found in imports(package)
        for name in found.names
        if name.startswith("_") and not name.startswith("__")
    }
    # Private modules are the runtime's own: its modules reach them, nothing outside does
    # (generated code and the generator stand on the public modules only).
    private |= {
        (found.module, found.target)
        for found in imports(package)
        if not found.module.startswith(private_scope(found.target))
    }
    assert private - KNOWN_PRIVATE == set(), "private imports: " + ", ".join(
        f"{a} imports {b}" for a, b in sorted(private - KNOWN_PRIVATE)
    )
    mine = {entry for entry in KNOWN_PRIVATE if entry[0].startswith(package)}
    assert mine - private == set(), "fixed: remove from KNOWN_PRIVATE"


def test_modules_and_classes_past_one_sitting_are_named() -> None:
    """A module or class past one sitting's read is worth a look (which second
    concern moved in?), never a reason to split by itself: it is reported as a
    warning, not a failure."""
    large = []
    for package in ("mcpbind", "mcpbind_codegen"):
        for module, path in modules(package).items():
            text = path.read_text()
            if text.count("\n") > MAX_MODULE_LINES:
                large.append(module)
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                    if node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES:
                        large.append(f"{module}.{node.name}")
    if large:
        warnings.warn(
            f"over {MAX_MODULE_LINES} lines a module or {MAX_CLASS_LINES} a class: "
            + ", ".join(sorted(large)),
            stacklevel=1,
        )
