"""One error tree: ``except MemgraphTfError`` catches a real error from each package, the tree drawn
in ``memgraph_tf/errors.py`` is the classes' real hierarchy, and the module needs the stdlib
alone."""

from __future__ import annotations

import importlib
import inspect
import json
import pathlib
import re
import subprocess
import sys

import pytest

from memgraph_tf import errors
from memgraph_tf.errors import MemgraphTfError

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent

# The modules whose error classes the tree draws (every MemgraphTfError subclass in them must be
# drawn).
TREE_MODULES = (
    "memgraph_tf.errors",
    "memgraph_tf.blob",
    "memgraph_tf.ops",
    "memgraph_tf.procedures.errors",
    "memgraph_tf.embedded",
    "memgraph_tf.testing.arcadedb",
)


# -------------------------------------------------------------------------- one error per package
def test_blob_format_error():
    from memgraph_tf import blob

    with pytest.raises(
        MemgraphTfError, match=r"header: expected at least 32 bytes, got 17 at offset 0"
    ) as info:
        blob.unpack(b"not a blob at all")
    assert isinstance(info.value, (blob.BlobFormatError, ValueError))


def test_op_library_error_from_a_loader_failure(monkeypatch, tmp_path):
    from memgraph_tf import ops

    monkeypatch.setenv("MEMGRAPH_TF_CXX", "g++-that-does-not-exist")
    with pytest.raises(MemgraphTfError, match=r"cannot build the op library") as info:
        ops.build_library(cache_dir=tmp_path)
    assert isinstance(info.value, ops.OpLibraryError) and isinstance(info.value, RuntimeError)
    assert "compiler: 'g++-that-does-not-exist' not found on PATH" in str(info.value)


def test_procedure_option_error():
    from memgraph_tf import procedures

    with pytest.raises(
        MemgraphTfError,
        match=r"options\.dtype: expected one of 'float32', 'float64', got str 'float16'",
    ) as info:
        procedures.parse_options("pack", {"dtype": "float16"})
    assert isinstance(info.value, procedures.OptionError) and isinstance(info.value, ValueError)


def test_client_configuration_error():
    from memgraph_tf import client

    with pytest.raises(
        MemgraphTfError,
        match=r"uri: expected one of the schemes .*got ftp:// in 'ftp://localhost:7687'",
    ) as info:
        client.connect("ftp://localhost:7687")
    assert isinstance(info.value, client.ConfigurationError) and isinstance(info.value, ValueError)


def test_serving_client_against_a_closed_port():
    from memgraph_tf import errors as serving_errors
    from memgraph_tf.serving import ServingClient
    from memgraph_tf.testing.arcadedb import free_port

    port = free_port()
    with ServingClient(f"http://127.0.0.1:{port}", "m", retries=0) as c:
        with pytest.raises(
            MemgraphTfError, match=r"cannot reach the server after 0 retries"
        ) as info:
            c.status()
    assert isinstance(info.value, serving_errors.ServingConnectionError)
    assert info.value.status is None


def test_serving_error_for_status():
    from memgraph_tf import errors as serving_errors

    with pytest.raises(
        MemgraphTfError, match=r"^HTTP 404: Servable not found \(http://h/v1/models/m\)$"
    ) as info:
        raise serving_errors.error_for_status(404, "Servable not found", "http://h/v1/models/m")
    assert type(info.value) is serving_errors.NotFoundError


def test_embedded_procedure_not_found():
    from memgraph_tf.embedded import EmbeddedGraph, ProcedureNotFoundError

    g = EmbeddedGraph()
    with pytest.raises(
        MemgraphTfError, match=r"There is no procedure named 'tf_features\.nope'"
    ) as info:
        g.call("tf_features.nope")
    assert isinstance(info.value, ProcedureNotFoundError) and isinstance(info.value, LookupError)


def test_the_mgp_stand_in_errors_stay_outside_the_tree():
    """They mimic Memgraph's C extension errors, which mgp.py subclasses: plain Exceptions there."""
    import mgp

    from memgraph_tf.embedded import _runtime

    for name in (
        "UnknownError",
        "InvalidArgumentError",
        "ImmutableObjectError",
        "ValueConversionError",
    ):
        stand_in = getattr(_runtime, name)
        assert stand_in.__bases__ == (Exception,), name
        assert not issubclass(stand_in, MemgraphTfError), name
    _runtime.activate()
    assert issubclass(mgp.UnknownError, _runtime.UnknownError)


# ------------------------------------------------------------------------- the tree as drawn
_NODE = re.compile(r"^(?P<indent>[ |]*)\+-- (?P<name>\w+)(?: \((?P<extra>[\w, ]+)\))?")


def _drawn_tree() -> list[tuple[str, str, set[str]]]:
    """(class, parent, extra base names) for every line of the tree in errors.py's docstring."""
    lines = (
        errors.__doc__.split("The whole tree", 1)[1]
        .split("::\n\n", 1)[1]
        .split("\n\n", 1)[0]
        .splitlines()
    )
    assert lines[0].strip() == "MemgraphTfError"
    stack = ["MemgraphTfError"]
    out = []
    for line in lines[1:]:
        m = _NODE.match(line[4:])
        assert m, f"cannot read tree line {line!r}"
        depth = len(m["indent"]) // 4 + 1
        del stack[depth:]
        extra = {b.strip() for b in m["extra"].split(",")} if m["extra"] else set()
        out.append((m["name"], stack[-1], extra))
        stack.append(m["name"])
    return out


def _classes() -> dict[str, type]:
    found: dict[str, type] = {}
    for module_name in TREE_MODULES:
        module = importlib.import_module(module_name)
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, MemgraphTfError):
                assert found.setdefault(name, value) is value, f"two classes named {name}"
    return found


def test_the_drawn_tree_is_the_real_hierarchy():
    classes = _classes()
    drawn = _drawn_tree()
    assert len(drawn) >= 40
    for name, parent, extra in drawn:
        cls = classes[name]
        bases = [b.__name__ for b in cls.__bases__]
        assert bases[0] == parent, f"{name}: drawn under {parent}, derives from {bases}"
        assert set(bases[1:]) == extra, f"{name}: drawn with extra bases {extra}, has {bases[1:]}"
    assert sorted(n for n, _, _ in drawn) == sorted(set(classes) - {"MemgraphTfError"}), (
        "every MemgraphTfError subclass of the tree's modules is drawn once"
    )


def test_package_bases_are_exported_by_name():
    from memgraph_tf.blob import BlobFormatError
    from memgraph_tf.embedded import EmbeddedError
    from memgraph_tf.errors import ClientError, ServingError
    from memgraph_tf.ops import OpLibraryError
    from memgraph_tf.procedures.errors import ProcedureInputError
    from memgraph_tf.testing.arcadedb import ArcadeDBStartError

    for cls in (
        BlobFormatError,
        ClientError,
        EmbeddedError,
        OpLibraryError,
        ProcedureInputError,
        ServingError,
        ArcadeDBStartError,
    ):
        assert getattr(errors, cls.__name__) is cls
        assert cls.__name__ in errors.__all__ and issubclass(cls, MemgraphTfError)
    with pytest.raises(
        AttributeError, match=r"module 'memgraph_tf\.errors' has no attribute 'NoSuchError'"
    ):
        errors.NoSuchError  # noqa: B018 -- the attribute access alone is what must raise


def test_errors_module_imports_with_the_standard_library_alone():
    # -S: no site-packages, so TensorFlow, numpy and neo4j cannot even be found.
    code = (
        "import sys, json; sys.path.insert(0, sys.argv[1]); "
        "import memgraph_tf.errors as e; "
        "from memgraph_tf.errors import BlobFormatError, ProcedureInputError; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('memgraph_tf'))))"
    )
    proc = subprocess.run(
        [sys.executable, "-S", "-c", code, str(REPO_ROOT)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout)
    assert "memgraph_tf.errors" in loaded and "memgraph_tf.blob" in loaded
    assert not [
        m
        for m in loaded
        if m.startswith(("memgraph_tf.client", "memgraph_tf.serving", "memgraph_tf.ops"))
    ]


def test_errors_with_fields_survive_pickling():
    # distributed runners (Beam on Dask, Flink, Dataflow) pickle a worker's exception to report it
    import pickle

    from memgraph_tf.errors import InvalidNodeError

    err = InvalidNodeError(42, "unknown node id 42", "batch 3: node 42: unknown node id 42")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is InvalidNodeError
    assert (back.node_id, back.reason, str(back)) == (42, "unknown node id 42", str(err))


def test_command_failure_is_one_line_and_the_exit_code_of_the_table(caplog):
    # the one wording of classify's and score-links' failures (the CLI tests pin each command's)
    import logging

    from memgraph_tf.errors import ConfigurationError, ServerUnavailable

    log = logging.getLogger("memgraph_tf.test_errors")
    words = dict(interrupted="scoring 3 node(s)", written="3 node(s) written", log=log)
    assert errors.command_failure(KeyboardInterrupt(), **words) == (
        errors.EXIT_INTERRUPTED,
        "interrupted after scoring 3 node(s); run the same command again to resume",
    )
    assert errors.command_failure(ConfigurationError("shard: expected i/N"), **words) == (
        errors.EXIT_USAGE,
        "error: shard: expected i/N",
    )
    assert errors.command_failure(ServerUnavailable("no answer"), **words) == (
        errors.EXIT_FAILED,
        "failed: no answer (3 node(s) written before; run the same command again to resume)",
    )
    with caplog.at_level(logging.DEBUG, logger=log.name):
        try:
            {}["key"]
        except KeyError as exc:
            code, line = errors.command_failure(exc, **words)
    assert (code, line) == (
        errors.EXIT_FAILED,
        "internal error: KeyError: 'key' (run with -v for the traceback)",
    )
    assert [r.exc_info[0] for r in caplog.records if r.name == log.name] == [KeyError]
