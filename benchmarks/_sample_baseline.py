"""The pre-issue-11 sampler ("the sampler at commit 93e52a3"), materialised from git history at run
time.

``benchmarks/query_modules.py`` times today's ``tf_features.sample`` against it in the same run, and
tests/modules/test_compact_layouts.py checks that both write the same bytes. Nothing of that code is
kept in the tree: :func:`materialise` reads the stdlib-only helper files and the query module of
that commit with ``git show``, renames the package in the copy (``memgraph_tf`` -> :data:`PACKAGE`)
so it sits beside today's without clashing, registers the renamed package in ``sys.modules`` and
writes the query module as ``_sample_baseline.py`` (so its procedures are ``_sample_baseline.*``),
ready for ``EmbeddedGraph.load_module``.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import shutil
import subprocess
import sys

COMMIT = "93e52a3"
PACKAGE = f"_memgraph_tf_{COMMIT}"
#: the query module file written for the older sampler; named apart from this helper module, since
#: the embedded runtime, like Memgraph, imports a module file by its stem
MODULE_NAME = f"tf_features_{COMMIT}"
REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent

# The query module and the helper files it imports at that commit (all stdlib-only).
_PACKAGE_FILES = ("__init__.py", "errors.py", "blob.py", "layout.py") + tuple(
    f"procedures/{name}.py" for name in ("__init__", "access", "core", "errors", "options")
)
_QUERY_MODULE = "query_modules/tf_features.py"
_NAME = re.compile(r"\bmemgraph_tf\b")


class BaselineUnavailable(RuntimeError):
    """git, or the commit in this checkout's history, is missing (e.g. a shallow clone)."""


def _git_show(path: str, repo: pathlib.Path) -> str:
    git = shutil.which("git")
    if git is None:
        raise BaselineUnavailable(
            f"the baseline sampler (commit {COMMIT}) is read from git history, "
            "but git is not on PATH"
        )
    proc = subprocess.run(
        [git, "-C", str(repo), "show", f"{COMMIT}:{path}"], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise BaselineUnavailable(
            f"the baseline sampler: cannot read {path} at commit {COMMIT} from the git history of "
            f"{repo} (a shallow clone or an export without .git? fetch the full history): "
            f"{proc.stderr.strip()}"
        )
    return proc.stdout


def materialise(
    dest: str | os.PathLike[str], repo: str | os.PathLike[str] = REPO_ROOT
) -> pathlib.Path:
    """Writes the commit's sampler under ``dest`` and returns the query-module file to load.

    Guarantees: the package is importable as :data:`PACKAGE` (registered in ``sys.modules``, no
    ``sys.path`` change) before the module file is loaded; raises :class:`BaselineUnavailable`
    naming the missing piece when git or the commit is not there."""
    dest = pathlib.Path(dest)
    repo = pathlib.Path(repo)
    root = dest / PACKAGE
    for rel in _PACKAGE_FILES:
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_NAME.sub(PACKAGE, _git_show(f"memgraph_tf/{rel}", repo)))
    module_file = dest / f"{MODULE_NAME}.py"
    module_file.write_text(_NAME.sub(PACKAGE, _git_show(_QUERY_MODULE, repo)))
    if (
        PACKAGE in sys.modules
    ):  # materialised before (the same files): look in the new copy from now on
        sys.modules[PACKAGE].__path__[:] = [str(root)]
    else:
        spec = importlib.util.spec_from_file_location(
            PACKAGE, root / "__init__.py", submodule_search_locations=[str(root)]
        )
        assert spec is not None and spec.loader is not None
        package = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = package
        spec.loader.exec_module(package)
    return module_file
