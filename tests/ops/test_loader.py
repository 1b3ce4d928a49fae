"""Building, caching and loading the op library (memgraph_tf/ops/_loader.py), with real g++."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest
import tensorflow as tf

from memgraph_tf.ops import _loader


def test_library_path_is_keyed_by_tf_version_and_source_hash(tmp_path):
    path = _loader.library_path(tmp_path)
    assert path.name == "_memgraph_tf_ops.so"
    assert path.parent.parent == tmp_path
    assert path.parent.name.startswith(f"tf{tf.__version__}-")
    assert _loader.library_path(tmp_path) == path  # stable


def test_cache_dir_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("MEMGRAPH_TF_OP_CACHE_DIR", str(tmp_path / "c"))
    assert _loader.default_cache_dir() == tmp_path / "c"
    assert _loader.library_path().parent.parent == tmp_path / "c"
    monkeypatch.delenv("MEMGRAPH_TF_OP_CACHE_DIR")
    assert _loader.default_cache_dir() == pathlib.Path.home() / ".cache" / "memgraph-tf" / "ops"


def test_missing_compiler_error_says_what_was_tried_and_what_to_do(monkeypatch, tmp_path):
    monkeypatch.setenv("MEMGRAPH_TF_CXX", "g++-that-does-not-exist")
    with pytest.raises(_loader.OpLibraryError, match=r"cannot build the op library") as info:
        _loader.build_library(cache_dir=tmp_path)
    message = str(info.value)
    assert f"cache: no library at {_loader.library_path(tmp_path)}" in message
    assert "compiler: 'g++-that-does-not-exist' not found on PATH" in message
    assert f"TensorFlow found: {tf.__version__}; needed: 2.21.*" in message
    assert "install g++ (apt-get install g++)" in message
    assert not list(tmp_path.rglob("*.so*")), "no partial library may be left behind"


def test_compile_failure_reports_the_command_and_compiler_output(monkeypatch, tmp_path):
    fake = tmp_path / "bin" / "fake-cxx"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\necho 'fatal error: tensorflow/core/framework/op.h: No such file' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("MEMGRAPH_TF_CXX", str(fake))
    with pytest.raises(
        _loader.OpLibraryError, match=r"exited 1:\nfatal error: tensorflow/core/framework/op.h"
    ) as info:
        _loader.build_library(cache_dir=tmp_path / "cache")
    assert "-shared -fPIC" in str(info.value)
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()], (
        "temporary file left behind"
    )


@pytest.mark.slow
def test_concurrent_builds_into_one_cache_all_load(tmp_path, ops):
    """Two processes build into the same empty cache at once; both get a complete, loadable library
    because each writes its own temporary file and renames it into place.

    One builder runs the real g++. The other's compiler (``MEMGRAPH_TF_CXX``) is a stand-in that
    waits until the real build's temporary file is in the cache folder, then writes the library the
    session built (same sources and flags) in two halves and exits 0: the two builds overlap
    whenever both reach the compiler (two real compiles overlapped only by chance), at the CPU
    cost of one compile."""
    cache = tmp_path / "cache"
    built = _loader.build_library()  # the session's library (the ops fixture built or found it)
    stand_in = tmp_path / "stand-in-cxx"
    stand_in.write_text(
        textwrap.dedent(
            f"""\
            #!{sys.executable}
            import pathlib, sys, time
            out = pathlib.Path(sys.argv[sys.argv.index("-o") + 1])
            deadline = time.monotonic() + 300
            # the real build's temporary file beside ours (or, if it already finished, its library)
            while len(list(out.parent.glob("*.tmp"))) < 2:
                if (out.parent / {_loader.LIBRARY_NAME!r}).exists():
                    break
                if time.monotonic() > deadline:
                    sys.exit("the real build never started")
                time.sleep(0.05)
            data = pathlib.Path({str(built)!r}).read_bytes()
            with open(out, "wb") as f:
                f.write(data[: len(data) // 2])
                f.flush()
                time.sleep(0.5)
                f.write(data[len(data) // 2 :])
            """
        )
    )
    stand_in.chmod(0o755)
    script = textwrap.dedent(
        """
        import sys
        import tensorflow as tf
        from memgraph_tf.ops import _loader
        path = _loader.build_library(cache_dir=sys.argv[1])
        lib = tf.load_op_library(path)
        print(path, hasattr(lib, "memgraph_tf_unpack_blob"))
        """
    )
    real_env = {k: v for k, v in os.environ.items() if k != _loader.ENV_CXX}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(cache)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for env in (real_env, {**real_env, _loader.ENV_CXX: str(stand_in)})
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
        assert out.strip().endswith(" True")
    paths = {out.split()[0] for out, _ in outs}
    assert len(paths) == 1
    (lib_dir,) = {pathlib.Path(p).parent for p in paths}
    assert sorted(f.name for f in lib_dir.iterdir()) == ["_memgraph_tf_ops.so"]


def test_cached_build_is_reused_and_force_rebuilds(tmp_path, ops, monkeypatch):
    # Seed the cache with the library the session already built (no second compile needed).
    built = pathlib.Path(_loader.build_library())
    target = _loader.library_path(tmp_path)
    target.parent.mkdir(parents=True)
    shutil.copy2(built, target)
    before = target.stat().st_mtime_ns
    assert _loader.build_library(cache_dir=tmp_path) == str(target)
    assert target.stat().st_mtime_ns == before
    # force=True compiles again even though the cache holds a library: with a compiler that fails,
    # the error shows the forced rebuild and the cached library stays whole.
    fake = tmp_path / "fake-cxx"
    fake.write_text("#!/bin/sh\necho 'error: forced' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("MEMGRAPH_TF_CXX", str(fake))
    with pytest.raises(_loader.OpLibraryError, match=r"cache: rebuild forced") as info:
        _loader.build_library(force=True, cache_dir=tmp_path)
    assert "exited 3:\nerror: forced" in str(info.value)
    assert target.read_bytes() == built.read_bytes()
    assert sorted(f.name for f in target.parent.iterdir()) == ["_memgraph_tf_ops.so"]


def test_cli_build_ops_prints_the_cached_library(capsys):
    """``memgraph-tf build-ops`` through the CLI's own entry (``cli.main``) in this process: a
    fresh process would add only TensorFlow's import (seconds), and the test command runs the
    installed ``memgraph-tf build-ops`` script itself before the suite."""
    from memgraph_tf import cli

    assert cli.main(["build-ops"]) == 0
    out = capsys.readouterr().out
    path = pathlib.Path(out.strip().splitlines()[-1])
    assert path.name == "_memgraph_tf_ops.so" and path.is_file()
    assert path == pathlib.Path(_loader.build_library())  # the cached library, not a new build


def test_a_copy_of_the_library_loaded_first_still_gives_a_working_op(tmp_path):
    """A SavedModel bundle may ship a copy of the library that gets loaded first: load_library then
    uses that registration (loading ours as well would register the kernel twice, which makes TF
    reject every call) and unpack_blob works."""
    script = textwrap.dedent(
        """
        import shutil, sys
        import numpy as np
        import tensorflow as tf
        from memgraph_tf import blob
        from memgraph_tf.ops import _loader, unpack_blob
        copy = shutil.copy(_loader.build_library(), sys.argv[1])
        tf.load_op_library(copy)
        (x,) = unpack_blob(blob.pack({"x": np.array([1.5, -2.0], np.float32)}), ["x"], ["float32"])
        print(x.numpy().tolist())
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "bundled_ops.so")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "[1.5, -2.0]"
    assert "already registered by another copy of the op library" in proc.stderr


def test_first_use_inside_tf_function_loads_the_library_once(tmp_path):
    """When the op is first used inside tf.function, autograph runs a converted copy of
    load_library; the loaded module must still be remembered, so a later eager call neither loads
    again nor takes the "another copy registered the op" path."""
    script = textwrap.dedent(
        """
        import logging
        import numpy as np
        import tensorflow as tf
        from memgraph_tf import blob
        from memgraph_tf.ops import _loader, unpack_blob
        logging.basicConfig(level=logging.INFO)
        data = tf.constant(blob.pack({"x": np.array([1.5, -2.0], np.float32)}))
        traced = tf.function(lambda b: unpack_blob(b, ["x"], ["float32"])[0])
        print(traced(data).numpy().tolist(), _loader._state.module is not None)
        print(unpack_blob(data, ["x"], ["float32"])[0].numpy().tolist())
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-2:] == ["[1.5, -2.0] True", "[1.5, -2.0]"]
    assert "already registered by another copy" not in proc.stderr


def test_library_path_changes_with_the_sources(tmp_path, monkeypatch):
    """The cache key covers the C++ sources: an edited source gets a fresh folder (a stale build is
    never loaded for new sources)."""
    before = _loader.library_path(tmp_path)
    cc = tmp_path / "cc"
    shutil.copytree(_loader.CC_DIR, cc)
    monkeypatch.setattr(_loader, "CC_DIR", cc)
    assert _loader.library_path(tmp_path) == before  # same bytes, same key
    (cc / "blob_reader.h").write_text((cc / "blob_reader.h").read_text() + "\n// edited\n")
    after = _loader.library_path(tmp_path)
    assert after.parent != before.parent and after.parent.name.startswith(f"tf{tf.__version__}-")


def test_load_failure_says_what_was_tried_and_what_to_do(tmp_path):
    """A cached library that TensorFlow cannot load (here: not an ELF file) gives an OpLibraryError
    listing the build used, tf.load_op_library's error, the TF version found and needed, and the
    remedy; never a bare NotFoundError."""
    script = textwrap.dedent(
        """
        from memgraph_tf.ops import _loader
        target = _loader.library_path()
        target.parent.mkdir(parents=True)
        target.write_bytes(b"not a shared library")
        try:
            _loader.load_library()
        except _loader.OpLibraryError as exc:
            print("ERROR<<" + str(exc) + ">>")
        """
    )
    env = {**os.environ, "MEMGRAPH_TF_OP_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ERROR<<" in proc.stdout, f"no OpLibraryError: {proc.stdout[-2000:]}"
    message = proc.stdout.split("ERROR<<", 1)[1].rsplit(">>", 1)[0]
    target = next(tmp_path.rglob("_memgraph_tf_ops.so"))
    assert message.startswith("cannot load the op library.\nTried:\n")
    assert f"  - build: {target}" in message
    assert f"tf.load_op_library('{target}') failed: " in message
    assert f"TensorFlow found: {tf.__version__}; needed: 2.21.*" in message
    assert (
        f"What to do: rebuild it with `memgraph-tf build-ops --force` (or delete {target.parent})"
        in message
    )
