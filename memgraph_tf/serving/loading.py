"""Loading a model's SavedModel versions for ``memgraph-tf serve``: reading ``saved_model.pb``,
registering the ops a graph needs that this TensorFlow lacks (the ``MemgraphTf>UnpackBlob`` op:
from the bundle's own op library, ``assets.extra/memgraph_tf/``, when built for this TensorFlow,
else the project's build), and loading the signatures with the bundle config.

:func:`load_version` is the entry point; :class:`ModelVersion` what it returns. TensorFlow is
imported on first use.
"""

from __future__ import annotations

import logging
import pathlib
from dataclasses import dataclass, field
from typing import Any

from memgraph_tf.serving import bundle
from memgraph_tf.serving.bundle import BundleConfig

logger = logging.getLogger(__name__)


@dataclass
class ModelVersion:
    """One loaded SavedModel version. ``bundle_config`` is None for SavedModels that are not
    memgraph-tf bundles."""

    version: int
    path: pathlib.Path
    signature_defs: dict[str, Any]  # name -> tensorflow.core.protobuf.meta_graph_pb2.SignatureDef
    functions: dict[str, Any]  # name -> concrete function
    bundle_config: BundleConfig | None = None
    loaded: Any = field(default=None, repr=False)
    #: the served model this version belongs to (set by the server that loads it)
    model_name: str = ""
    #: how this version's ``node_id`` examples are sampled (set by the server; None: not a
    #: memgraph-tf bundle)
    sampling: Any = None


class VersionLoadError(ValueError):
    """A version that cannot be loaded, with the TensorFlow status code TF Serving reports for it
    (``code``: ``DATA_LOSS``, ``NOT_FOUND``, ...) and its message (``message``)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class IncompleteVersion(ValueError):
    """A version directory whose ``saved_model.pb`` names files that are not there yet
    (``missing``: their paths relative to the version directory): a version still being
    written."""

    def __init__(self, version_dir: pathlib.Path, missing: list[str]):
        super().__init__(f"{version_dir}: the version is incomplete: missing {', '.join(missing)}")
        self.missing = list(missing)


def read_saved_model_proto(path: pathlib.Path):
    """The ``SavedModel`` proto of ``path/saved_model.pb`` (or ``.pbtxt``). Raises
    :class:`VersionLoadError` with TensorFlow's own codes and messages
    (``tensorflow/cc/saved_model/reader.cc``): NOT_FOUND when neither file is there, DATA_LOSS
    when the file does not parse (a corrupt or truncated one)."""
    from google.protobuf import message, text_format
    from tensorflow.core.protobuf import saved_model_pb2

    sm = saved_model_pb2.SavedModel()
    pb, pbtxt = path / "saved_model.pb", path / "saved_model.pbtxt"
    try:
        if pb.exists():
            sm.ParseFromString(pb.read_bytes())
        else:
            text_format.Parse(pbtxt.read_text(), sm)
    except FileNotFoundError:
        raise VersionLoadError(
            "NOT_FOUND",
            f"Could not find SavedModel .pb or .pbtxt at supplied export directory path: {path}",
        ) from None
    except (message.DecodeError, text_format.ParseError, UnicodeDecodeError):
        name = pb if pb.exists() else pbtxt
        raise VersionLoadError("DATA_LOSS", f"Can't parse {name} as binary proto") from None
    return sm


def missing_files(version_dir: pathlib.Path, saved_model=None) -> list[str]:
    """The files ``version_dir``'s SavedModel needs that are not there yet, relative to it, in
    order (empty: the version is complete): ``variables/variables.index`` and every
    ``variables.data-NNNNN-of-MMMMM`` shard when the SavedModel holds variables; every asset
    its meta graph names (``asset_file_def``: a memgraph-tf bundle's config and labels are
    such assets); and, for a SavedModel with the bundle's config signature, the bundle's
    ``assets/`` files the bundle contract requires. ``saved_model`` is the parsed proto
    (read here when None; :class:`VersionLoadError` when it cannot be)."""
    sm = saved_model if saved_model is not None else read_saved_model_proto(version_dir)
    mg = _serving_meta_graph(sm)
    needed: list[str] = []
    has_variables = any(
        n.WhichOneof("kind") == "variable" for n in mg.object_graph_def.nodes
    ) or bool(mg.saver_def.filename_tensor_name)
    var_dir = version_dir / "variables"
    if has_variables:
        needed.append("variables/variables.index")
        shards = sorted(var_dir.glob("variables.data-*-of-*")) if var_dir.is_dir() else []
        total = _shard_count(shards)
        needed += [f"variables/variables.data-{i:05d}-of-{total:05d}" for i in range(total)]
    needed += [f"{bundle.ASSETS_DIR}/{a.filename}" for a in mg.asset_file_def]
    if bundle.CONFIG_SIGNATURE in mg.signature_def:
        needed += [f"{bundle.ASSETS_DIR}/{bundle.CONFIG_ASSET}"]
        needed += [f"{bundle.ASSETS_DIR}/{bundle.LABELS_ASSET}"]
    return [rel for rel in dict.fromkeys(needed) if not (version_dir / rel).is_file()]


def _shard_count(shards: list[pathlib.Path]) -> int:
    """How many data shards the variables have (the ``-of-MMMMM`` of the shards present; 1
    when none is there yet: the one shard TensorFlow writes for a single-host save)."""
    for p in shards:
        total = p.name.rsplit("-of-", 1)[1]
        if total.isdigit() and int(total) > 0:
            return int(total)
    return 1


def _serving_meta_graph(sm):
    for mg in sm.meta_graphs:
        if "serve" in mg.meta_info_def.tags:
            return mg
    if sm.meta_graphs:
        return sm.meta_graphs[0]
    raise ValueError("the SavedModel holds no meta graph")


def op_names(meta_graph) -> set[str]:
    """Every op a meta graph uses, in its graph and in its function library."""
    ops = {n.op for n in meta_graph.graph_def.node}
    for fn in meta_graph.graph_def.library.function:
        ops.update(n.op for n in fn.node_def)
    return ops


def _unregistered(names) -> list[str]:
    from tensorflow.python.framework import op_def_registry

    return sorted(op for op in names if op_def_registry.get(op) is None)


def _load_missing_ops(version_dir: pathlib.Path, missing: list[str]) -> None:
    """Register ops a SavedModel needs: the bundle's own op library when it was built for this
    TensorFlow version, else the project's (built and cached on demand)."""
    import tensorflow as tf

    try:
        info = bundle.read_op_library_info(version_dir)
    except ValueError as exc:  # a BundleError: fall back to the project's own build
        logger.warning("ignoring the bundle's op library: %s", exc)
        info = None
    if info is not None:
        so = bundle.op_library_dir(version_dir) / info.library
        if info.tf_version == tf.__version__ and so.is_file():
            logger.info("loading the bundle's op library %s for %s", so, missing)
            tf.load_op_library(str(so))
            if not _unregistered(missing):
                return
        else:
            logger.info(
                "the bundle's op library was built for TF %s, this is TF %s: using the "
                "project's own build",
                info.tf_version,
                tf.__version__,
            )
    if any(op.startswith("MemgraphTf") for op in missing):
        from memgraph_tf import ops as mgops

        mgops.load_library()


def load_version(version_dir: pathlib.Path, version: int) -> ModelVersion:
    """Load one ``BASE/<version>`` SavedModel, registering any custom op it needs first, with its
    bundle config when it is a memgraph-tf bundle. Raises :class:`VersionLoadError` when
    ``saved_model.pb`` is missing or does not parse, :class:`IncompleteVersion` when files it
    names are missing (:func:`missing_files`), :class:`VersionLoadError` (NOT_FOUND, as
    TensorFlow's "Op type not registered") naming the directory and the ops when some op cannot
    be found, and :class:`~memgraph_tf.serving.errors.BundleError` when its
    bundle config breaks the contract."""
    import tensorflow as tf

    sm = read_saved_model_proto(version_dir)
    missing_parts = missing_files(version_dir, sm)
    if missing_parts:
        raise IncompleteVersion(version_dir, missing_parts)
    mg = _serving_meta_graph(sm)
    missing = _unregistered(op_names(mg))
    if missing:
        _load_missing_ops(version_dir, missing)
        still = _unregistered(missing)
        if still:
            raise VersionLoadError(
                "NOT_FOUND",
                f"{version_dir}: the SavedModel uses ops {still} that this TensorFlow "
                f"{tf.__version__} does not register, and no matching op library was found",
            )
    cfg = bundle.read_bundle_config(version_dir)
    loaded = tf.saved_model.load(str(version_dir))
    functions = {name: loaded.signatures[name] for name in loaded.signatures}
    sigdefs = {name: mg.signature_def[name] for name in mg.signature_def if name in functions}
    return ModelVersion(version, version_dir, sigdefs, functions, cfg, loaded)


__all__ = [
    "IncompleteVersion",
    "ModelVersion",
    "VersionLoadError",
    "load_version",
    "missing_files",
    "op_names",
    "read_saved_model_proto",
]
