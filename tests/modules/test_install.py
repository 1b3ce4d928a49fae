"""install-modules: the installed tree is self-contained (stdlib + mgp), and gives the same
bytes."""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys
import textwrap

import mgp as _mgp_module
import pytest

from memgraph_tf import deploy
from memgraph_tf.embedded import EmbeddedGraph, _runtime

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent.parent

# Runs in a fresh interpreter with -S (no site-packages: no numpy, no memgraph_tf checkout) and a
# PYTHONPATH of just the installed directory and a directory holding mgp.py plus the runtime as
# _mgp.
CHILD = textwrap.dedent(
    """
    import json, sys
    try:
        import numpy
        have_numpy = True
    except ImportError:
        have_numpy = False
    import _mgp
    rt = _mgp.Runtime()
    module = rt.load(sys.argv[1])
    import memgraph_tf, mgp
    s = rt.store
    for i in range(5):
        s.add_vertex(["P"], {"f": [float(i), i / 3.0], "y": i % 2, "name": f"n{i}"})
    for a, b in [(0, 1), (0, 2), (1, 2), (3, 0), (2, 4)]:
        s.add_edge(a, b, "E")
    out = {
        "have_numpy": have_numpy,
        "helper": memgraph_tf.__file__,
        "mgp": mgp.__file__,
        "procedures": sorted(module.procedures),
        "pack": rt.call("tf_features.pack", [3, 0, 4], ["f", "name"], {"label_property": "y"}),
        "sample": rt.call("tf_features.sample", [0, 4], [2, 2], ["f"], {"seed": 4}),
        "per_node": rt.call("tf_features.sample_per_node", [0, 4], [2, 2], ["f"], {"seed": 4}),
    }
    try:
        rt.call("tf_features.pack", [], ["f"])
    except _mgp.ProcedureError as exc:
        out["error"] = str(exc)
    print(json.dumps(out))
    """
)


def _same_graph_in_process():
    g = EmbeddedGraph()
    for i in range(5):
        g.add_node(["P"], {"f": [float(i), i / 3.0], "y": i % 2, "name": f"n{i}"})
    for a, b in [(0, 1), (0, 2), (1, 2), (3, 0), (2, 4)]:
        g.add_edge(a, b, "E")
    return g


def test_install_layout(tmp_path):
    written = deploy.install_modules(tmp_path / "qm")
    rel = sorted(str(pathlib.Path(p).relative_to(tmp_path / "qm")) for p in written)
    expected = [
        "memgraph_tf/__init__.py",
        "memgraph_tf/blob.py",
        "memgraph_tf/errors.py",
        "memgraph_tf/feature_spec.py",
        "memgraph_tf/layout.py",
        "memgraph_tf/lazy.py",
        "memgraph_tf/typed_sampling.py",
        "tf_features.py",
    ] + [
        f"memgraph_tf/procedures/{p.name}"
        for p in (REPO_ROOT / "memgraph_tf" / "procedures").glob("*.py")
    ]
    assert rel == sorted(expected)
    assert (tmp_path / "qm" / "tf_features.py").read_bytes() == (
        REPO_ROOT / "query_modules" / "tf_features.py"
    ).read_bytes()
    # nothing Memgraph does not need (no TensorFlow code, no embedded runtime)
    assert not (tmp_path / "qm" / "memgraph_tf" / "embedded").exists()
    assert not (tmp_path / "qm" / "memgraph_tf" / "ops").exists()
    # the deployment tooling stays outside the package it copies
    assert not (tmp_path / "qm" / "memgraph_tf" / "deploy.py").exists()
    assert not (REPO_ROOT / "memgraph_tf" / "procedures" / "install.py").exists()


def test_install_refuses_before_writing_when_a_helper_file_is_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(deploy, "HELPER_FILES", deploy.HELPER_FILES + ("no_such_helper.py",))
    with pytest.raises(
        FileNotFoundError,
        match=r"helper files: expected .*memgraph_tf/no_such_helper\.py in the package",
    ):
        deploy.install_modules(tmp_path / "qm")
    assert not (tmp_path / "qm").exists()


def test_install_no_overwrite_refuses_before_writing(tmp_path):
    deploy.install_modules(tmp_path)
    (tmp_path / "tf_features.py").write_text("# changed\n")
    with pytest.raises(
        FileExistsError,
        match=r"tf_features.py: expected no existing file \(overwrite=False\), got one",
    ):
        deploy.install_modules(tmp_path, overwrite=False)
    assert (tmp_path / "tf_features.py").read_text() == "# changed\n"
    deploy.install_modules(tmp_path, overwrite=True)
    assert (tmp_path / "tf_features.py").read_text() != "# changed\n"


def test_cli_install_modules(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "memgraph_tf.cli", "install-modules", str(tmp_path / "d")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert str(tmp_path / "d" / "tf_features.py") in proc.stdout.splitlines()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "memgraph_tf.cli",
            "install-modules",
            "--no-overwrite",
            str(tmp_path / "d"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
    )
    assert proc.returncode != 0
    assert "FileExistsError" in proc.stderr and "expected no existing file" in proc.stderr


def test_installed_module_runs_alone_and_gives_the_same_bytes(tmp_path):
    installed = tmp_path / "query_modules"
    deploy.install_modules(installed)
    mgp_dir = tmp_path / "mgp"
    mgp_dir.mkdir()
    shutil.copyfile(_mgp_module.__file__, mgp_dir / "mgp.py")
    shutil.copyfile(_runtime.__file__, mgp_dir / "_mgp.py")
    proc = subprocess.run(
        [sys.executable, "-S", "-c", CHILD, str(installed / "tf_features.py")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={"PYTHONPATH": f"{installed}:{mgp_dir}", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    child = json.loads(proc.stdout)
    assert child["have_numpy"] is False  # the stdlib-only path really ran
    assert child["helper"] == str(installed / "memgraph_tf" / "__init__.py")
    assert child["mgp"] == str(mgp_dir / "mgp.py")
    assert child["procedures"] == [
        "build_reservoirs",
        "describe",
        "pack",
        "profile",
        "sample",
        "sample_pairs",
        "sample_per_node",
        "sample_typed",
        "schema",
        "split_edges",
        "structural",
        "structural_write",
        "update_reservoirs",
    ]
    assert child["error"].startswith("tf_features.pack: Traceback (most recent call last):\n")
    assert child["error"].endswith(
        "\nmemgraph_tf.procedures.errors.ProcedureInputError: nodes: expected at least one node "
        "or id, got an empty list\n"
    )
    g = _same_graph_in_process()  # numpy present here: must not change a byte
    assert (
        g.call("tf_features.pack", [3, 0, 4], ["f", "name"], {"label_property": "y"})
        == child["pack"]
    )
    assert g.call("tf_features.sample", [0, 4], [2, 2], ["f"], {"seed": 4}) == child["sample"]
    assert (
        g.call("tf_features.sample_per_node", [0, 4], [2, 2], ["f"], {"seed": 4})
        == child["per_node"]
    )


def test_module_file_search(tmp_path, monkeypatch):
    monkeypatch.setenv(deploy.ENV_MODULES_DIR, str(tmp_path))
    assert (
        deploy.find_module_file() == REPO_ROOT / "query_modules" / "tf_features.py"
    )  # falls through
    (tmp_path / "tf_features.py").write_text("# override\n")
    assert deploy.find_module_file() == tmp_path / "tf_features.py"
    dirs = deploy.module_search_path()
    assert dirs[0] == tmp_path and dirs[1] == REPO_ROOT / "query_modules"
    assert any(str(d).endswith("share/memgraph-tf/query_modules") for d in dirs)


def test_install_modules_warns_when_the_servers_python_shadows_the_helper(tmp_path):
    # Memgraph appends the query-modules directory to sys.path (src/py/py.hpp AppendToSysPath:
    # PyList_Append, called by src/query/procedure/module.cpp PythonModule::Load), so a memgraph_tf
    # installed in the server's Python (here: on its PYTHONPATH, as site-packages would be) is
    # imported instead of the copied helper files
    site = tmp_path / "site"
    (site / "memgraph_tf").mkdir(parents=True)
    (site / "memgraph_tf" / "__init__.py").write_text("")
    pythons = {}
    for name, env in (("shadowed", f"PYTHONPATH={site} "), ("clean", "")):
        pythons[name] = tmp_path / f"python-{name}"  # this Python without site-packages
        pythons[name].write_text(f'#!/bin/sh\n{env}exec {sys.executable} -S "$@"\n')
        pythons[name].chmod(0o755)
    target = tmp_path / "d"
    proc = subprocess.run(
        [sys.executable, "-m", "memgraph_tf.cli", "install-modules", str(target)]
        + [arg for p in pythons.values() for arg in ("--server-python", str(p))],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert str(target / "tf_features.py") in proc.stdout.splitlines()
    warnings = [line for line in proc.stderr.splitlines() if ": warning: " in line]
    assert len(warnings) == 1, proc.stderr
    assert warnings[0].startswith(
        f"memgraph-tf install-modules: warning: {pythons['shadowed']} imports memgraph_tf from "
        f"{site / 'memgraph_tf' / '__init__.py'}, not from the files copied into "
        f"{target / 'memgraph_tf'}: Memgraph appends its query-modules directory to sys.path"
    )
    assert deploy.shadowing_package(target, str(pythons["clean"])) is None
    assert deploy.shadowing_package(target, str(tmp_path / "no-such-python")) is None
