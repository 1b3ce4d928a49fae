"""``memgraph-tf install-modules DIR``: copy what Memgraph needs into its query-modules directory.

Deployment tooling: it runs on the machine that installs, and is itself not copied into Memgraph
(it lives outside ``memgraph_tf/procedures/``, which is copied whole).

The query-module file ``tf_features.py`` lives in the repository at ``query_modules/`` and is
installed by the wheel as data under ``<prefix>/share/memgraph-tf/query_modules/`` (see
``[tool.setuptools.data-files]`` in pyproject.toml); :func:`find_module_file` looks in
``$MEMGRAPH_TF_QUERY_MODULES_DIR``, the checkout and that data directory, in that order.
"""

from __future__ import annotations

import logging
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig

logger = logging.getLogger(__name__)

MODULE_FILE = "tf_features.py"
ENV_MODULES_DIR = "MEMGRAPH_TF_QUERY_MODULES_DIR"
HELPER_FILES = (
    "__init__.py",
    "blob.py",
    "errors.py",
    "feature_spec.py",
    "layout.py",
    "lazy.py",
    "typed_sampling.py",
)
"""Files of the ``memgraph_tf`` package Memgraph needs, besides the ``procedures`` subpackage: what
``procedures/*.py`` imports from the package, every one stdlib-only. All of them must exist."""


def module_search_path() -> list[pathlib.Path]:
    """Directories searched for ``tf_features.py``, in order."""
    here = pathlib.Path(__file__).resolve().parent.parent  # the checkout root (or site-packages)
    dirs = []
    if os.environ.get(ENV_MODULES_DIR):
        dirs.append(pathlib.Path(os.environ[ENV_MODULES_DIR]))
    dirs.append(here / "query_modules")
    # a wheel's data: <prefix>/share/...; the package itself is
    # <prefix>/lib/pythonX.Y/site-packages/memgraph_tf
    prefixes = [sysconfig.get_path("data"), sys.prefix, sys.base_prefix]
    parents = (
        pathlib.Path(__file__).resolve().parents
    )  # memgraph_tf, site-packages, pythonX.Y, lib, <prefix>
    if len(parents) > 4:
        prefixes.append(str(parents[4]))
    for prefix in dict.fromkeys(prefixes):
        dirs.append(pathlib.Path(prefix) / "share" / "memgraph-tf" / "query_modules")
    return dirs


def find_module_file() -> pathlib.Path:
    """The ``tf_features.py`` to deploy; raises FileNotFoundError listing the places searched."""
    dirs = module_search_path()
    for d in dirs:
        candidate = d / MODULE_FILE
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        f"{MODULE_FILE}: expected in one of {', '.join(map(str, dirs))} (set {ENV_MODULES_DIR}), "
        "got none"
    )


def install_modules(directory: str | os.PathLike[str], overwrite: bool = True) -> list[str]:
    """Copies ``tf_features.py`` and the helper package into ``directory`` (created if needed).

    The helper package is a ``memgraph_tf/`` tree with only :data:`HELPER_FILES` and
    ``procedures/*.py``: everything Memgraph imports, stdlib-only. Guarantees: returns the written
    paths; with ``overwrite=False`` raises FileExistsError (naming the file) before writing
    anything if any target exists; a helper file missing from the package raises
    FileNotFoundError (naming it) before writing anything.
    """
    target = pathlib.Path(directory)
    package = pathlib.Path(__file__).resolve().parent
    sources = [(find_module_file(), target / MODULE_FILE)]
    sources += [(package / name, target / "memgraph_tf" / name) for name in HELPER_FILES]
    missing = [str(src) for src, _ in sources if not src.is_file()]
    if missing:
        raise FileNotFoundError(
            f"helper files: expected {', '.join(missing)} in the package, got none"
        )
    for src in sorted((package / "procedures").glob("*.py")):
        sources.append((src, target / "memgraph_tf" / "procedures" / src.name))
    if not overwrite:
        for _, dst in sources:
            if dst.exists():
                raise FileExistsError(
                    f"{dst}: expected no existing file (overwrite=False), got one"
                )
    written = []
    for src, dst in sources:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        written.append(str(dst))
        logger.debug("installed %s -> %s", src, dst)
    logger.info(
        "installed %d files into %s; run CALL mg.load_all(); to (re)load them", len(written), target
    )
    return written


# What a Python that Memgraph embeds imports as ``memgraph_tf`` once the query-modules directory is
# on its sys.path: Memgraph appends that directory (src/py/py.hpp AppendToSysPath, called by
# src/query/procedure/module.cpp PythonModule::Load), so any memgraph_tf the interpreter finds
# earlier on sys.path (site-packages, PYTHONPATH) is the one imported.
_RESOLVE = """
import importlib.util, sys
if sys.path and sys.path[0] in ('', '.'):
    del sys.path[0]  # -c puts the working directory first; Memgraph's interpreter has no script
sys.path.append(sys.argv[1])
spec = importlib.util.find_spec('memgraph_tf')
print(spec.origin if spec is not None and spec.origin else '')
"""


def server_python_candidates() -> list[str]:
    """Interpreters that may be the one a Memgraph on this machine embeds: this Python when it is
    not a virtual environment's, and ``/usr/bin/python3`` (Memgraph's packages link the system
    Python) when it exists."""
    found = []
    if sys.prefix == sys.base_prefix and sys.executable:
        found.append(sys.executable)
    if os.path.exists("/usr/bin/python3"):
        found.append("/usr/bin/python3")
    return list(dict.fromkeys(os.path.realpath(p) for p in found))


def shadowing_package(
    directory: str | os.PathLike[str], python: str, timeout_s: float = 30.0
) -> str | None:
    """Where ``python`` imports ``memgraph_tf`` from when ``directory`` is appended to its
    ``sys.path`` as Memgraph appends its query-modules directory -- when that is not the helper
    package installed in ``directory`` (a ``memgraph_tf`` installed in that Python shadows the
    copied files), else None. None too when ``python`` cannot be run (logged at DEBUG)."""
    target = pathlib.Path(directory).resolve() / "memgraph_tf"
    try:
        proc = subprocess.run(
            [python, "-c", _RESOLVE, str(pathlib.Path(directory).resolve())],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        logger.debug("%s: cannot check which memgraph_tf it imports: %s", python, exc)
        return None
    origin = proc.stdout.strip()
    if proc.returncode != 0 or not origin:
        logger.debug("%s: no memgraph_tf found (rc %s): %s", python, proc.returncode, proc.stderr)
        return None
    if pathlib.Path(origin).resolve().parent == target.resolve():
        return None
    return origin


def shadowing_warning(directory: str | os.PathLike[str], python: str, origin: str) -> str:
    """The one-line warning for a shadowed helper package."""
    return (
        f"{python} imports memgraph_tf from {origin}, not from the files copied into "
        f"{pathlib.Path(directory) / 'memgraph_tf'}: Memgraph appends its query-modules directory "
        "to sys.path, so a memgraph_tf installed in the Python Memgraph runs wins. If that is "
        "Memgraph's Python, uninstall it there (python -m pip uninstall memgraph-tf) or install "
        "the same version there"
    )
