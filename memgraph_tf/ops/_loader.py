"""Builds and loads the ``_memgraph_tf_ops.so`` op library (the ``MemgraphTf>UnpackBlob`` op).

The library is compiled with ``g++`` from the C++ sources shipped in ``memgraph_tf/cc`` and the
flags of the installed TensorFlow (``tf.sysconfig``), on first use, and cached under
``$MEMGRAPH_TF_OP_CACHE_DIR`` (default ``~/.cache/memgraph-tf/ops``) in a folder keyed by the
TensorFlow version and a hash of the sources and flags. A build writes to a temporary file in the
cache folder and renames it into place, so concurrent builders (several processes or test workers)
never see a half-written library. ``memgraph-tf build-ops`` calls :func:`build_library`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pathlib
import shutil
import subprocess
import tempfile
import threading
import types
from typing import Any

from memgraph_tf.errors import MemgraphTfError

logger = logging.getLogger(__name__)

LIBRARY_NAME = "_memgraph_tf_ops.so"
TF_VERSION_NEEDED = "2.21"
ENV_CACHE_DIR = "MEMGRAPH_TF_OP_CACHE_DIR"
ENV_CXX = "MEMGRAPH_TF_CXX"
CC_DIR = pathlib.Path(__file__).resolve().parent.parent / "cc"
SOURCES = ("blob_reader.cc", "base64url.cc", "unpack_blob_ops.cc", "unpack_blob_kernels.cc")
HEADERS = ("blob_reader.h", "base64url.h")
BUILD_TIMEOUT_S = 600
OP_NAME = "MemgraphTf>UnpackBlob"
WRAPPER_NAME = "memgraph_tf_unpack_blob"

_lock = threading.Lock()


class _State:
    """The loaded module, kept on an object rather than a module global: when ``unpack_blob`` is
    first called inside ``tf.function``, autograph runs a converted copy of :func:`load_library`
    whose ``global`` statements would write to the copy's namespace, not this module's."""

    module: Any = None


_state = _State()


class OpLibraryError(MemgraphTfError, RuntimeError):
    """The op library could not be built or loaded; the message lists every step tried."""


def default_cache_dir() -> pathlib.Path:
    """``$MEMGRAPH_TF_OP_CACHE_DIR`` if set, else ``~/.cache/memgraph-tf/ops``."""
    env = os.environ.get(ENV_CACHE_DIR)
    if env:
        return pathlib.Path(env).expanduser()
    return pathlib.Path.home() / ".cache" / "memgraph-tf" / "ops"


def _tf() -> Any:
    import tensorflow as tf

    return tf


def _flags() -> tuple[list[str], list[str]]:
    tf = _tf()
    return list(tf.sysconfig.get_compile_flags()), list(tf.sysconfig.get_link_flags())


def library_path(cache_dir: str | os.PathLike[str] | None = None) -> pathlib.Path:
    """Where the library for the installed TensorFlow and the current sources is (or will be)
    cached."""
    tf = _tf()
    compile_flags, link_flags = _flags()
    digest = hashlib.sha256()
    digest.update(tf.__version__.encode())
    for flag in compile_flags + ["--"] + link_flags:
        digest.update(flag.encode() + b"\0")
    for name in SOURCES + HEADERS:
        digest.update(name.encode() + b"\0")
        digest.update((CC_DIR / name).read_bytes())
    base = pathlib.Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    return base / f"tf{tf.__version__}-{digest.hexdigest()[:16]}" / LIBRARY_NAME


def _version_note() -> str:
    tf = _tf()
    found = tf.__version__
    note = f"TensorFlow found: {found}; needed: {TF_VERSION_NEEDED}.*"
    if not found.startswith(TF_VERSION_NEEDED + "."):
        note += f" (MISMATCH: install tensorflow=={TF_VERSION_NEEDED}.*)"
    return note


def build_library(force: bool = False, cache_dir: str | os.PathLike[str] | None = None) -> str:
    """Compiles the op library unless a cached build for these sources and this TF exists.

    Guarantees: returns the path of a complete library file (renamed atomically into place), or
    raises :class:`OpLibraryError` naming the compiler command, its output, the TensorFlow version
    found and needed, and what to do.
    """
    target = library_path(cache_dir)
    if target.exists() and not force:
        logger.debug("op library cached at %s", target)
        return str(target)
    cxx = os.environ.get(ENV_CXX, "g++")
    tried = [
        f"cache: no library at {target}"
        if not target.exists()
        else f"cache: rebuild forced ({target})"
    ]
    if shutil.which(cxx) is None:
        tried.append(f"compiler: {cxx!r} not found on PATH (set {ENV_CXX} to choose another)")
        raise OpLibraryError(
            _failure("cannot build the op library", tried, "install g++ (apt-get install g++)")
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        tried.append(f"cache dir: cannot create {target.parent}: {exc}")
        raise OpLibraryError(
            _failure(
                "cannot build the op library", tried, f"set {ENV_CACHE_DIR} to a writable folder"
            )
        ) from exc
    compile_flags, link_flags = _flags()
    fd, tmp_name = tempfile.mkstemp(prefix=LIBRARY_NAME + ".", suffix=".tmp", dir=target.parent)
    os.close(fd)
    cmd = (
        [cxx, "-std=c++17", "-shared", "-fPIC", "-O2", "-DNDEBUG"]
        + [str(CC_DIR / s) for s in SOURCES]
        + ["-I", str(CC_DIR)]
        + compile_flags
        + link_flags
        + ["-o", tmp_name]
    )
    logger.info("building the op library: %s", " ".join(cmd))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        os.unlink(tmp_name)
        tried.append(f"compile: {' '.join(cmd)} timed out after {BUILD_TIMEOUT_S} s")
        raise OpLibraryError(
            _failure("cannot build the op library", tried, "retry on a less busy machine")
        ) from exc
    if proc.returncode != 0:
        os.unlink(tmp_name)
        output = (proc.stderr or proc.stdout or "").strip()
        tried.append(f"compile: {' '.join(cmd)} exited {proc.returncode}:\n{output[-4000:]}")
        raise OpLibraryError(
            _failure(
                "cannot build the op library",
                tried,
                "check that g++ (>= 9, C++17) and the TensorFlow headers match; "
                "install g++ with apt-get install g++",
            )
        )
    os.chmod(tmp_name, 0o755)
    os.replace(tmp_name, target)  # atomic: a concurrent builder's file is replaced whole
    logger.info("op library built: %s", target)
    return str(target)


def _failure(what: str, tried: list[str], todo: str) -> str:
    steps = "\n".join(f"  - {t}" for t in tried)
    return f"{what}.\nTried:\n{steps}\n{_version_note()}\nWhat to do: {todo}"


def _wrappers_for_registered_op(tf: Any, path: str) -> Any:
    """Python wrappers for the op when another copy of the library registered it first.

    When a copy of this library (for instance one bundled with a SavedModel) was loaded earlier in
    the process, the op and its kernel already exist: the wrappers are generated from the
    registered OpDef (tf.load_op_library would only wrap ops it newly registers).
    """
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.framework import _pywrap_python_op_gen, op_def_registry

    op_def = op_def_registry.get(OP_NAME)
    if op_def is None:
        raise OpLibraryError(
            _failure(
                "cannot load the op library",
                [f"tf.load_op_library({path!r}) registered no {OP_NAME}"],
                "rebuild it with `memgraph-tf build-ops --force` (or delete "
                f"{pathlib.Path(path).parent})",
            )
        )
    logger.warning(
        "%s was already registered by another copy of the op library; using that registration",
        OP_NAME,
    )
    op_list = op_def_pb2.OpList()
    op_list.op.add().CopyFrom(op_def)
    namespace: dict[str, Any] = {}
    exec(_pywrap_python_op_gen.GetPythonWrappers(op_list.SerializeToString()), namespace)
    return types.SimpleNamespace(**{WRAPPER_NAME: namespace[WRAPPER_NAME]})


def _register_no_gradient(tf: Any) -> None:
    try:
        tf.no_gradient(OP_NAME)
    except KeyError:  # already registered in this process
        pass


def load_library(cache_dir: str | os.PathLike[str] | None = None) -> Any:
    """Builds (if needed) and loads the op library once per process; returns the loaded module.

    Also registers ``MemgraphTf>UnpackBlob`` as not differentiable. Thread-safe. When another copy
    of the library already registered the op in this process, that registration is used (loading a
    second copy would register its kernel twice) and nothing is built.
    """
    if _state.module is not None:
        return _state.module
    with _lock:
        if _state.module is not None:
            return _state.module
        tf = _tf()
        from tensorflow.python.framework import op_def_registry

        if op_def_registry.get(OP_NAME) is not None:
            # Another copy of the library (e.g. one bundled with a SavedModel) is already loaded:
            # loading ours too would register the kernel twice and make the op unusable.
            _state.module = _wrappers_for_registered_op(tf, "<already loaded>")
            _register_no_gradient(tf)
            return _state.module
        path = build_library(cache_dir=cache_dir)
        try:
            module = tf.load_op_library(path)
        except (tf.errors.NotFoundError, tf.errors.InvalidArgumentError, OSError) as exc:
            tried = [f"build: {path}", f"tf.load_op_library({path!r}) failed: {exc}"]
            raise OpLibraryError(
                _failure(
                    "cannot load the op library",
                    tried,
                    "rebuild it with `memgraph-tf build-ops --force` (or delete "
                    f"{pathlib.Path(path).parent})",
                )
            ) from exc
        if not hasattr(module, WRAPPER_NAME):
            module = _wrappers_for_registered_op(tf, path)
        _register_no_gradient(tf)
        _state.module = module
        return module
