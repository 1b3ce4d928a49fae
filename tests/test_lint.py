"""Lint and format, checked in seconds by the test command: ruff over the Python tree (rules and
their reasons in pyproject.toml, ``[tool.ruff]``) and Debian's clang-format over the C++ op
(``memgraph_tf/cc/.clang-format``). Fix a failure with ``.venv/bin/ruff format . &&
.venv/bin/ruff check --fix .`` and ``clang-format -i`` on the file named."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
PYTHON_TREES = ("memgraph_tf", "tests", "benchmarks", "scripts", "query_modules")
CC_ROOT = REPO_ROOT / "memgraph_tf" / "cc"
NOQA = "# " + "noqa"  # spelled in two parts so that this file does not match itself
TYPE_IGNORE = "# " + "type: ignore"


def _ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, *PYTHON_TREES],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_ruff_lint_is_clean() -> None:
    result = _ruff("check", "--no-cache", "--output-format", "concise")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean() -> None:
    result = _ruff("format", "--no-cache", "--check")
    assert result.returncode == 0, result.stdout + result.stderr


def _python_files() -> list[pathlib.Path]:
    """The project's Python files: in a git checkout, tracked or untracked but not ignored (as ruff
    sees them: a benchmark's own virtualenv under ``benchmarks/`` is ignored); else every file."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", *PYTHON_TREES],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if listed.returncode == 0:
        names = [n for n in listed.stdout.split("\0") if n.endswith(".py")]
        return sorted(REPO_ROOT / n for n in names if (REPO_ROOT / n).is_file())
    return sorted(p for tree in PYTHON_TREES for p in (REPO_ROOT / tree).rglob("*.py"))


def test_every_noqa_says_why() -> None:
    """A silenced rule carries its reason after ``--`` on the same line."""
    bare = []
    files = _python_files()
    assert any(p.name == "test_lint.py" for p in files), "the file listing found no test files"
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for marker in (NOQA, TYPE_IGNORE):
                if marker in line and " -- " not in line.partition(marker)[2]:
                    bare.append(f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()}")
    assert bare == []


def _cc_files() -> list[pathlib.Path]:
    return sorted(p for p in CC_ROOT.rglob("*") if p.suffix in (".cc", ".h"))


def test_cpp_is_clang_formatted() -> None:
    tool = shutil.which("clang-format")
    if tool is None:
        if os.environ.get("CI"):
            pytest.fail("clang-format is not installed (scripts/test.sh installs Debian's)")
        pytest.skip("clang-format is not installed (apt-get install clang-format)")
    assert (CC_ROOT / ".clang-format").is_file()
    files = _cc_files()
    assert files, f"no C++ files under {CC_ROOT}"
    result = subprocess.run(
        [tool, "--dry-run", "-Werror", *map(str, files)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
