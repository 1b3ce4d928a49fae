"""Code conventions of the library, checked over its source: no module uses another package's
private names, and every module logs to ``logger = logging.getLogger(__name__)``."""

from __future__ import annotations

import ast
import pathlib
import re

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = sorted(
    [*(REPO_ROOT / "memgraph_tf").rglob("*.py"), *(REPO_ROOT / "query_modules").rglob("*.py")]
)

# Modules whose logger is still named ``log`` (none left: the serving modules were renamed in issue
# 9).
LOGGER_RENAME_PENDING: set[str] = set()


def _package(dotted: str) -> str:
    """``memgraph_tf.ops._loader.build_library`` -> ``memgraph_tf.ops``."""
    return ".".join(dotted.split(".")[:2])


def _is_private(dotted: str) -> bool:
    return any(p.startswith("_") and not p.startswith("__") for p in dotted.split(".")[1:])


def _own_package(path: pathlib.Path) -> str:
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:2]) if parts[0] == "memgraph_tf" and len(parts) > 1 else parts[0]


def cross_package_private_uses(source: str, own: str) -> list[str]:
    """Imports of ``memgraph_tf.<pkg>..._x`` and reads of ``module._x`` in ``source``, a module of
    package ``own`` (``memgraph_tf.<pkg>``; a top-level module is its own package), from another
    package."""
    tree = ast.parse(source)
    bound: dict[str, str] = {}
    found = []
    for node in ast.walk(tree):
        names = []
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").startswith("memgraph_tf")
        ):
            names = [(f"{node.module}.{a.name}", a.asname or a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            names = [
                (a.name, a.asname or a.name.split(".")[0])
                for a in node.names
                if a.name.startswith("memgraph_tf")
            ]
        for dotted, local in names:
            bound[local] = dotted
            if _is_private(dotted) and _package(dotted) != own:
                found.append(f"{node.lineno}: imports {dotted}")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in bound
        ):
            dotted = f"{bound[node.value.id]}.{node.attr}"
            if _is_private(dotted) and _package(dotted) != own:
                found.append(f"{node.lineno}: reads {dotted}")
    return found


def test_the_checker_sees_cross_package_private_uses():
    source = (
        "from memgraph_tf.ops import _loader\n"
        "from memgraph_tf import ops\n"
        "ops._loader.build_library()\n"
        "from memgraph_tf.embedded._runtime import Store\n"
        "from memgraph_tf.ops._args import DTYPES\n"
    )
    assert cross_package_private_uses(source, "memgraph_tf.cli") == [
        "1: imports memgraph_tf.ops._loader",
        "4: imports memgraph_tf.embedded._runtime.Store",
        "5: imports memgraph_tf.ops._args.DTYPES",
        "3: reads memgraph_tf.ops._loader",
    ]
    assert cross_package_private_uses(source, "memgraph_tf.ops") == [
        "4: imports memgraph_tf.embedded._runtime.Store",
    ]


def test_no_module_uses_another_package_s_private_names():
    found = {}
    for path in SOURCES:
        uses = cross_package_private_uses(path.read_text(), _own_package(path))
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
