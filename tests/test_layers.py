"""The package's import graph: no cycles, and no import from a lower layer to a higher one.

Every import counts -- at module level, inside functions (a function-level import is still a
dependency, and two modules that import each other inside functions still form a cycle), under
``if TYPE_CHECKING:`` (an import for annotations is still a dependency of the module's interface:
a lower layer's signatures naming a higher layer's types couple the two, and two modules that
name each other's types form a cycle a type checker has to untangle), and the module tables that
:func:`memgraph_tf.lazy.lazy_attributes` resolves on first access.

The layers, lowest first (a module may import its own layer and the layers below it)::

    0 foundation   memgraph_tf (the package), errors, lazy, layout, typed_sampling, blob, deploy,
                   feature_spec
    1 graph & ops  procedures, embedded, ops, datasets, typed_datasets, and the query module file
    2 client       memgraph_tf.client
    3 serving      memgraph_tf.serving (uses the client's graph sources; the client never uses it)
    4 batch        memgraph_tf.batch (batch inference over client and serving)
    5 beam         memgraph_tf.beam (batch inference on Apache Beam)
    6 entry points cli, demo, report, testing (test support)
"""

from __future__ import annotations

import ast
import pathlib

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = "memgraph_tf"

LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "memgraph_tf",
        "errors",
        "lazy",
        "layout",
        "typed_sampling",
        "blob",
        "deploy",
        "feature_spec",
    ),
    (
        "procedures",
        "embedded",
        "ops",
        "datasets",
        "typed_datasets",
        "property_datasets",
        "ledger_datasets",
        "query_modules",
    ),
    ("client",),
    ("serving",),
    ("batch",),
    ("beam",),
    ("cli", "demo", "report", "testing"),
)
LAYER_NAMES = ("foundation", "graph & ops", "client", "serving", "batch", "beam", "entry points")

# Lazy-attribute tables that point upwards on purpose, each with its reason. Nothing else may.
ALLOWED_UPWARD_TABLES = {
    # the error tree's root re-exports each package's base class by name, so that
    # ``from memgraph_tf.errors import ClientError`` works; resolved on first use only
    ("memgraph_tf.errors", "_PACKAGE_BASES"),
    # batch inference lives in memgraph_tf.batch, above the client: its
    # public names stay importable from memgraph_tf.client for one release, resolved on use
    ("memgraph_tf.client", "_MOVED_TO_BATCH"),
}


def part_of(module: str) -> str:
    """``memgraph_tf.client.sources`` -> ``client``; ``memgraph_tf`` -> ``memgraph_tf``;
    ``query_modules.tf_features`` -> ``query_modules``."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return parts[0]
    return parts[1] if len(parts) > 1 else PACKAGE


def layer_of(module: str) -> int:
    part = part_of(module)
    for index, names in enumerate(LAYERS):
        if part in names:
            return index
    raise LookupError(f"{module}: {part!r} is in no layer of tests/test_layers.py (add it)")


def module_name(path: pathlib.Path, root: pathlib.Path = REPO_ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(target: str, modules: set[str]) -> str | None:
    """The module ``target`` names, or its nearest enclosing module among ``modules``
    (``memgraph_tf.client.batch.classify_graph`` -> ``memgraph_tf.client.batch``)."""
    while target:
        if target in modules:
            return target
        target = target.rpartition(".")[0]
    return None


def _absolute(module: str, is_package: bool, level: int, name: str) -> str:
    if level == 0:
        return name
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def imports_of(
    module: str, source: str, is_package: bool, modules: set[str]
) -> list[tuple[str, int, str | None]]:
    """``(imported module, line, lazy table or None)`` for every package-internal import in
    ``source``: import statements anywhere (``if TYPE_CHECKING:`` blocks included), and the values
    of module-level dict literals of a module that calls ``lazy_attributes`` (its lazy tables;
    a value is an absolute module, ``.relative``, or a bare submodule name)."""
    tree = ast.parse(source)
    found: list[tuple[str, int, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(alias.name, modules)
                if target is not None:
                    found.append((target, node.lineno, None))
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, is_package, node.level, node.module or "")
            for alias in node.names:
                target = _resolve(f"{base}.{alias.name}", modules)
                if target is not None:
                    found.append((target, node.lineno, None))
    if "lazy_attributes" not in source:
        return found
    package = module if is_package else module.rpartition(".")[0]
    for node in tree.body:
        if not (
            isinstance(node, ast.Assign | ast.AnnAssign)
            and isinstance(node.value, ast.Dict)
            and isinstance(
                node.targets[0] if isinstance(node, ast.Assign) else node.target, ast.Name
            )
        ):
            continue
        table = (node.targets[0] if isinstance(node, ast.Assign) else node.target).id
        for value in node.value.values:
            if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
                continue
            text = value.value
            if text.startswith("."):
                candidate = package + text
            elif text.startswith(PACKAGE):
                candidate = text
            else:
                candidate = f"{package}.{text}"
            if candidate in modules:
                found.append((candidate, value.lineno, table))
    return found


def import_graph(
    files: dict[str, tuple[str, bool]],
) -> dict[str, list[tuple[str, int, str | None]]]:
    """``{module: (source, is_package)}`` -> ``{module: [(imported, line, table), ...]}``."""
    modules = set(files)
    return {
        name: list(dict.fromkeys(e for e in imports_of(name, src, pkg, modules) if e[0] != name))
        for name, (src, pkg) in files.items()
    }


def upward_imports(graph: dict[str, list[tuple[str, int, str | None]]]) -> list[str]:
    """One line per import from a lower layer to a higher one, naming both modules and layers."""
    bad = []
    for module, edges in sorted(graph.items()):
        for target, line, table in edges:
            low, high = layer_of(module), layer_of(target)
            if high > low and (module, table) not in ALLOWED_UPWARD_TABLES:
                via = f" (lazy table {table})" if table else ""
                bad.append(
                    f"{module} (layer {low}, {LAYER_NAMES[low]}) imports {target} "
                    f"(layer {high}, {LAYER_NAMES[high]}) at line {line}{via}"
                )
    return bad


def cycles(graph: dict[str, list[tuple[str, int, str | None]]]) -> list[list[str]]:
    """Each import cycle once, as the list of modules around it (Tarjan's strongly connected
    components; a component of two or more modules holds at least one cycle)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target, _, _ in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _describe_cycle(graph, component: list[str]) -> str:
    members = set(component)
    edges = [
        f"{module} -> {target} (line {line})"
        for module in component
        for target, line, _ in graph[module]
        if target in members
    ]
    return "; ".join(edges)


def repo_files() -> dict[str, tuple[str, bool]]:
    paths = [*(REPO_ROOT / PACKAGE).rglob("*.py"), *(REPO_ROOT / "query_modules").glob("*.py")]
    return {
        module_name(p): (p.read_text(encoding="utf-8"), p.name == "__init__.py")
        for p in sorted(paths)
        if "__pycache__" not in p.parts
    }


# -- the checker sees what it must see --------------------------------------------------------


def test_the_checker_names_an_upward_import_and_both_layers() -> None:
    graph = import_graph(
        {
            "memgraph_tf.client": ("", True),
            "memgraph_tf.client.sources": (
                "def f():\n    from memgraph_tf.serving import bundle\n",
                False,
            ),
            "memgraph_tf.serving": ("", True),
            "memgraph_tf.serving.bundle": ("from memgraph_tf.client.sources import f\n", False),
        }
    )
    assert upward_imports(graph) == [
        "memgraph_tf.client.sources (layer 2, client) imports memgraph_tf.serving.bundle "
        "(layer 3, serving) at line 2"
    ]


def test_the_checker_finds_a_cycle_through_function_level_imports() -> None:
    graph = import_graph(
        {
            "memgraph_tf.batch": ("", True),
            "memgraph_tf.batch.a": ("def f():\n    from memgraph_tf.batch.b import g\n", False),
            "memgraph_tf.batch.b": ("from . import a\n", False),
            "memgraph_tf.batch.c": ("from .a import f\n", False),
        }
    )
    assert cycles(graph) == [["memgraph_tf.batch.a", "memgraph_tf.batch.b"]]


def test_the_checker_reads_lazy_tables_and_counts_type_checking_imports() -> None:
    graph = import_graph(
        {
            "memgraph_tf.ops": (
                "from memgraph_tf.lazy import lazy_attributes\n"
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from memgraph_tf.beam import runner\n"
                "_TABLE = {'x': 'memgraph_tf.client.sources', 'y': '.portable'}\n"
                "__getattr__, __dir__ = lazy_attributes(__name__, _TABLE, globals())\n",
                True,
            ),
            "memgraph_tf.ops.portable": ("", False),
            "memgraph_tf.lazy": ("", False),
            "memgraph_tf.client.sources": ("", False),
            "memgraph_tf.beam.runner": ("", False),
        }
    )
    assert sorted((t, table) for t, _, table in graph["memgraph_tf.ops"]) == [
        ("memgraph_tf.beam.runner", None),
        ("memgraph_tf.client.sources", "_TABLE"),
        ("memgraph_tf.lazy", None),
        ("memgraph_tf.ops.portable", "_TABLE"),
    ]
    assert upward_imports(graph) == [
        "memgraph_tf.ops (layer 1, graph & ops) imports memgraph_tf.beam.runner "
        "(layer 5, beam) at line 4",
        "memgraph_tf.ops (layer 1, graph & ops) imports memgraph_tf.client.sources "
        "(layer 2, client) at line 5 (lazy table _TABLE)",
    ]


def test_the_checker_finds_a_cycle_through_type_checking_imports() -> None:
    """A module imports another at run time, which names the first one's type for its
    annotations only: a cycle, and (here) an upward import."""
    graph = import_graph(
        {
            "memgraph_tf.client": ("", True),
            "memgraph_tf.client.sources": ("from memgraph_tf.datasets import load\n", False),
            "memgraph_tf.datasets": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from memgraph_tf.client.sources import GraphSource\n",
                False,
            ),
        }
    )
    assert cycles(graph) == [["memgraph_tf.client.sources", "memgraph_tf.datasets"]]
    assert upward_imports(graph) == [
        "memgraph_tf.datasets (layer 1, graph & ops) imports memgraph_tf.client.sources "
        "(layer 2, client) at line 3"
    ]


def test_a_module_outside_every_layer_is_named() -> None:
    with pytest.raises(LookupError, match=r"memgraph_tf\.newpart\.x: 'newpart' is in no layer"):
        layer_of("memgraph_tf.newpart.x")


# -- the package itself -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def graph():
    return import_graph(repo_files())


def test_every_module_is_in_a_layer(graph) -> None:
    unplaced = []
    for module in graph:
        try:
            layer_of(module)
        except LookupError as exc:
            unplaced.append(str(exc))
    assert unplaced == []


def test_no_import_goes_from_a_lower_layer_to_a_higher_one(graph) -> None:
    assert upward_imports(graph) == []


def test_the_package_has_no_import_cycle(graph) -> None:
    """The allowed upward tables are left out: each points from a package's root to what is
    defined above it on purpose, resolved on first use, never at import."""
    graph = {
        module: [edge for edge in edges if (module, edge[2]) not in ALLOWED_UPWARD_TABLES]
        for module, edges in graph.items()
    }
    assert [_describe_cycle(graph, c) for c in cycles(graph)] == []


def test_no_module_imports_the_command_line(graph) -> None:
    importers = [m for m, edges in graph.items() for t, _, _ in edges if t == "memgraph_tf.cli"]
    assert importers == []


def test_the_allowed_upward_tables_exist(graph) -> None:
    """Each entry of ALLOWED_UPWARD_TABLES still names a lazy table of its module (a stale entry
    would silently allow a later upward table of the same name)."""
    present = {(m, table) for m, edges in graph.items() for _, _, table in edges if table}
    assert sorted(ALLOWED_UPWARD_TABLES - present) == []
