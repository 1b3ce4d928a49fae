"""Code conventions of the library, checked over its source: no module imports or reads another
module's private names (a private module may be used by its own package), every module logs to
``logger = logging.getLogger(__name__)``, and no function of the library is longer than
:data:`MAX_FUNCTION_LINES`."""

from __future__ import annotations

import ast
import pathlib
import re

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = sorted(
    [*(REPO_ROOT / "memgraph_tf").rglob("*.py"), *(REPO_ROOT / "query_modules").rglob("*.py")]
)

# The most lines a function or method of memgraph_tf/ may span: the whole ``def``, from its first
# line (decorators excluded) to its last, docstring included.
MAX_FUNCTION_LINES = 120

# Modules whose logger may keep another name (none).
LOGGER_RENAME_PENDING: set[str] = set()


MODULES = {
    ".".join(p.relative_to(REPO_ROOT).with_suffix("").parts).removesuffix(".__init__")
    for p in SOURCES
}


def _module_of(path: pathlib.Path) -> str:
    """``memgraph_tf/client/sources.py`` -> ``memgraph_tf.client.sources``."""
    return ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts).removesuffix(".__init__")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _absolute(own: str, is_package: bool, level: int, module: str | None) -> str:
    if level == 0:
        return module or ""
    base = own.split(".") if is_package else own.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _allowed(dotted: str, own: str, modules: set[str]) -> bool:
    """Whether module ``own`` may name ``dotted``: each private part of it must be a *module* of a
    package that holds ``own`` (``ops/_loader.py`` is for ``memgraph_tf.ops``'s modules); a private
    name inside a module is that module's alone."""
    parts = dotted.split(".")
    for i, part in enumerate(parts[1:], start=1):
        if not _private(part):
            continue
        prefix = ".".join(parts[: i + 1])
        package = ".".join(parts[:i])
        if prefix not in modules or not (own == package or own.startswith(package + ".")):
            return False
    return True


def private_uses(source: str, own: str, is_package: bool, modules: set[str]) -> list[str]:
    """Imports of another module's private name (``from m import _x``, absolute or relative, or
    ``import m._x``) and reads of ``m._x`` where ``m`` names one of our modules, in ``source`` (the
    module ``own``). A private module (``ops/_loader.py``) is allowed to its own package."""
    tree = ast.parse(source)
    bound: dict[str, str] = {}
    found = []
    for node in ast.walk(tree):
        names: list[tuple[str, str]] = []
        if isinstance(node, ast.ImportFrom):
            base = _absolute(own, is_package, node.level, node.module)
            if base.split(".")[0] in {"memgraph_tf", "query_modules"}:
                names = [(f"{base}.{a.name}", a.asname or a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            names = [
                (a.name, a.asname or a.name.split(".")[0])
                for a in node.names
                if a.name.split(".")[0] in {"memgraph_tf", "query_modules"}
            ]
        for dotted, local in names:
            bound[local] = dotted
            if not _allowed(dotted, own, modules):
                found.append(f"{node.lineno}: imports {dotted}")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in bound
            and _private(node.attr)
            and not _allowed(f"{bound[node.value.id]}.{node.attr}", own, modules)
        ):
            found.append(f"{node.lineno}: reads {bound[node.value.id]}.{node.attr}")
    return sorted(found, key=lambda line: int(line.split(":")[0]))


def test_the_checker_sees_private_names_of_other_modules():
    modules = {
        "memgraph_tf.ops",
        "memgraph_tf.ops._loader",
        "memgraph_tf.ops.portable",
        "memgraph_tf.client",
        "memgraph_tf.client.graphsage",
        "memgraph_tf.client.typed_graphsage",
        "memgraph_tf.embedded._runtime",
    }
    source = (
        "from memgraph_tf.ops import _loader\n"
        "from memgraph_tf import ops\n"
        "ops._loader.build_library()\n"
        "from memgraph_tf.embedded._runtime import Store\n"
        "from .graphsage import _positive_int, GraphSAGE\n"
        "from memgraph_tf.client import graphsage\n"
        "graphsage._csr_table(1)\n"
    )
    assert private_uses(source, "memgraph_tf.client.typed_graphsage", False, modules) == [
        "1: imports memgraph_tf.ops._loader",
        "3: reads memgraph_tf.ops._loader",
        "4: imports memgraph_tf.embedded._runtime.Store",
        "5: imports memgraph_tf.client.graphsage._positive_int",
        "7: reads memgraph_tf.client.graphsage._csr_table",
    ]
    # the package's own modules may use its private modules
    assert private_uses(source, "memgraph_tf.ops.portable", False, modules) == [
        "4: imports memgraph_tf.embedded._runtime.Store",
        "5: imports memgraph_tf.ops.graphsage._positive_int",
        "7: reads memgraph_tf.client.graphsage._csr_table",
    ]


def test_no_module_uses_another_module_s_private_names():
    found = {}
    for path in SOURCES:
        uses = private_uses(path.read_text(), _module_of(path), path.name == "__init__.py", MODULES)
        if uses:
            found[str(path.relative_to(REPO_ROOT))] = uses
    assert found == {}


def test_every_module_logs_to_logger_named_after_itself():
    found = {}
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Call)
                and ast.unparse(node.value.func) == "logging.getLogger"
            ):
                line = ast.unparse(node)
                if line != "logger = logging.getLogger(__name__)" and not line.startswith("self."):
                    found[str(path.relative_to(REPO_ROOT))] = line
    assert set(found) <= LOGGER_RENAME_PENDING, {
        k: v for k, v in found.items() if k not in LOGGER_RENAME_PENDING
    }


def long_functions(source: str, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """``"{qualified name}: {lines} lines"`` for each function or method (nested ones too, async
    ones too) in ``source`` whose whole ``def`` spans more than ``limit`` lines."""
    found = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    lines = child.end_lineno - child.lineno + 1
                    if lines > limit:
                        found.append(f"{name}: {lines} lines")
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def test_the_checker_sees_long_functions():
    source = (
        "def short():\n"  # 1
        "    return 1\n"
        "\n"
        "\n"
        "def long():\n"  # 5: 6 lines, 4 of them without the docstring
        '    """Doc\n'
        '    over two lines."""\n'
        "    a = 1\n"
        "    b = 2\n"
        "    return a + b\n"  # 10
        "\n"
        "\n"
        "class Model:\n"
        "    @property\n"
        "    async def method(self):\n"  # 15: 6 lines, the decorator not counted
        "        def inner():\n"  # 16: 3 lines
        "            a = 1\n"
        "            return a\n"
        "\n"
        "        return inner\n"  # 20
    )
    assert long_functions(source, limit=5) == ["long: 6 lines", "Model.method: 6 lines"]
    assert long_functions(source, limit=2) == [
        "long: 6 lines",
        "Model.method: 6 lines",
        "Model.method.inner: 3 lines",
    ]
    assert long_functions(source, limit=6) == []


def test_no_function_of_the_library_is_too_long():
    found = {}
    for path in SOURCES:
        if path.relative_to(REPO_ROOT).parts[0] != "memgraph_tf":
            continue
        long = long_functions(path.read_text())
        if long:
            found[str(path.relative_to(REPO_ROOT))] = long
    assert found == {}, f"functions over {MAX_FUNCTION_LINES} lines (split them): {found}"


def _readme_table_paths() -> set[str]:
    """Every backticked path in the README's "Where things are" table."""
    text = (REPO_ROOT / "README.md").read_text()
    table = text.split("## Where things are", 1)[1].split("\n## ", 1)[0]
    return {p.rstrip("/") for p in re.findall(r"`([\w./-]+)`", table) if "/" in p}


def test_readme_where_things_are_table_matches_the_tree():
    """Each path the table names exists, and each package and top-level module of the library is
    named (directly, or through a file inside it)."""
    named = _readme_table_paths()
    assert named, "no paths found in the README's 'Where things are' table"
    missing = sorted(p for p in named if not (REPO_ROOT / p).exists())
    assert not missing, f"the README table names paths that do not exist: {missing}"
    parts = [
        f"memgraph_tf/{c.name}"
        for c in (REPO_ROOT / "memgraph_tf").iterdir()
        if (c.is_dir() and (c / "__init__.py").exists())
        or (c.suffix == ".py" and c.name != "__init__.py")
    ]
    unnamed = sorted(p for p in parts if not any(n == p or n.startswith(p + "/") for n in named))
    assert not unnamed, (
        f"library parts missing from the README's 'Where things are' table: {unnamed}"
    )
