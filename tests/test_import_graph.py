"""benchlab's modules import one another in one direction: down the layers, with no circle.

Read statically (ast), so a cycle is caught even where import order happens to hide it at run
time. Every import counts, at the top of a module or inside a function (a lazy CLI command, a
runtime's adapter loaded on first use), and so does ``importlib.import_module("a.literal")``:
an import deferred to a function is still a dependency. Only imports under ``TYPE_CHECKING``
(annotations, never run) are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

import benchlab

SRC = Path(benchlab.__file__).resolve().parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    """The ids of every node under an ``if TYPE_CHECKING:`` block."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(sub) for stmt in node.body for sub in ast.walk(stmt)}
    return skipped


def _imports(tree: ast.Module, name: str, is_package: bool) -> set[str]:
    """Every module ``tree`` imports, at any depth (``TYPE_CHECKING`` blocks aside)."""
    found: set[str] = set()
    skipped = _type_checking_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found |= {f"{module}.{alias.name}" for alias in node.names}
        elif (isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module")
              and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            found.add(node.args[0].value)
    return found


def import_graph() -> dict[str, set[str]]:
    """benchlab module -> the benchlab modules it imports (anywhere in it)."""
    files = {_module_name(p): p for p in SRC.rglob("*.py")}
    graph = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(), str(path))
        wanted = _imports(tree, name, path.name == "__init__.py")
        # A module's own packages are imported before it whatever it says: not an edge.
        graph[name] = {m for m in wanted
                       if m in files and m != name and not name.startswith(m + ".")}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle (its modules in order), or [] when there is none."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return []


def test_no_import_cycle_among_benchlab_modules() -> None:
    cycle = find_cycle(import_graph())
    assert not cycle, "import cycle: " + " -> ".join(cycle)


def test_no_circle_among_the_parts() -> None:
    # Parts (folders and top modules) import one another one way too: targets use energy's
    # meters, so energy reads the shapes of a command from the schema, not from targets.
    parts: dict[str, set[str]] = {}
    for name, targets in import_graph().items():
        parts.setdefault(part_of(name), set()).update(
            part_of(t) for t in targets if part_of(t) != part_of(name))
    cycle = find_cycle(parts)
    assert not cycle, "parts in a circle: " + " -> ".join(cycle)


def test_the_graph_sees_imports_inside_functions_and_by_name() -> None:
    tree = ast.parse("def f():\n    from benchlab.plugins import x\n"
                     "def g():\n    importlib.import_module('benchlab.lab')\n"
                     "if TYPE_CHECKING:\n    import benchlab.cli\n")
    found = _imports(tree, "benchlab.runner.loop", False)
    assert {"benchlab.plugins", "benchlab.lab"} <= found and "benchlab.cli" not in found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) == []


def test_the_core_store_knows_nothing_of_the_lab() -> None:
    graph = import_graph()
    store = {name for name in graph if name.startswith("benchlab.store")}
    assert store
    assert not {m for name in store for m in graph[name] if m.startswith("benchlab.lab")}


def private_imports() -> list[str]:
    """``module: from other import _name`` for every underscore name one benchlab module
    takes from another (at any level: inside functions too). A private name is its module's
    own; a module that needs another's is a sign the two were split at a line count."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        name = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith(
                    "benchlab") or node.module == name:
                continue
            found += [f"{name}: from {node.module} import {alias.name}" for alias in node.names
                      if alias.name.startswith("_") and not alias.name.startswith("__")]
    return found


def test_no_module_imports_another_modules_private_names() -> None:
    assert private_imports() == []


MAX_FUNCTION_LINES = 100


def test_no_function_is_longer_than_a_screenful_or_two() -> None:
    """A function over 100 lines hides its steps; split it where its steps part (the house
    rule, and issue 42's bound)."""
    long = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long.append(f"{_module_name(path)}.{node.name}: {length} lines")
    assert not long, long


# The parts of the house, bottom up (docs/architecture.md, "Layers"): a module may import its
# own layer's and lower layers' modules, never a higher layer's. A part is a folder or a
# top-level module of src/benchlab.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "lazy", "schema"),
    ("spec", "store", "protocol", "stats", "devicetools"),
    ("targets", "runner", "energy", "frameworks"),
    # The registry above what it loads: it checks frameworks' and targets' protocols and
    # answers with their declarations.
    ("plugins", "exporting", "usermodels", "zoo", "report"),
    ("harness", "ab", "tracking"),
    ("api", "lab"),
    ("cli", "__main__", "__init__"),
)


def part_of(module: str) -> str:
    """``benchlab.harness.planner`` → ``harness``; the package itself → ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_of(module: str) -> int:
    part = part_of(module)
    for level, members in enumerate(LAYERS):
        if part in members:
            return level
    raise AssertionError(f"{module}: its part {part!r} is on no layer of LAYERS; "
                         "place it there and in docs/architecture.md")


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{name} -> {target}" for name, targets in graph.items() for target in targets
                  if layer_of(target) > layer_of(name))


#: Upward imports the layers allow, each with why (none: the registry sits above what it
#: loads, the runner is told its runtime's names, doctor and device selection live in harness/).
ALLOWED_UPWARD: frozenset[str] = frozenset()


def test_imports_run_down_the_layers() -> None:
    assert [edge for edge in upward_imports(import_graph()) if edge not in ALLOWED_UPWARD] == []


def test_the_layer_check_sees_an_upward_import() -> None:
    graph = {"benchlab.schema.result": {"benchlab.harness.planner"}, "benchlab.harness.planner": set()}
    assert upward_imports(graph) == ["benchlab.schema.result -> benchlab.harness.planner"]


def test_the_top_of_the_package_is_folders_and_a_few_modules() -> None:
    """A new module goes into the folder of its part; the top keeps the face, the exception
    tree, the plugin registry and the lazy names (docs/architecture.md, "Where to add")."""
    modules = sorted(path.name for path in SRC.glob("*.py"))
    assert modules == ["__init__.py", "__main__.py", "api.py", "errors.py", "lazy.py",
                       "plugins.py"]
    folders = {path.name for path in SRC.iterdir() if (path / "__init__.py").is_file()}
    on_a_layer = {part for members in LAYERS for part in members}
    assert folders <= on_a_layer, folders - on_a_layer
