"""Model backends for batch inference: what a run needs from a model, whatever serves it.

* :class:`ModelBackend`: the bundle config (sampling settings, class names), ``name``,
  ``version`` (written as ``P_version``) and ``classify(blobs) -> [(label, score), ...]``;
* :class:`BundleBackend`: a bundle run in-process (its ``serving_default`` signature on the raw
  blobs; loaded by :func:`memgraph_tf.serving.loading.load_version`, op or op-free bundle);
* :class:`ServingBackend`: any serving client with ``classify(blobs)`` and ``bundle_config()`` --
  :func:`rest_backend` (TF Serving's REST API, ``memgraph_tf.serving.client.ServingClient``) and
  :func:`grpc_backend` (its gRPC API, ``memgraph_tf.serving.grpc_client.GrpcServingClient``).

Also the two rules every batch path shares about a bundle: which version directory a path means
(:func:`resolve_version_dir`) and how batch inference samples with its config
(:func:`sampling_for`). ``memgraph-tf classify``
(:class:`~memgraph_tf.batch.classifier.BatchClassifier`) and the Beam pipeline
(:mod:`memgraph_tf.beam.models`) both go through them.
"""

from __future__ import annotations

import logging
import pathlib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memgraph_tf import errors as serving_errors
from memgraph_tf.errors import ConfigurationError, ModelError, ModelInputError
from memgraph_tf.serving.bundle import (
    CLASSIFY_INPUT,
    CLASSIFY_SIGNATURE,
    CONFIG_ASSET,
    DEFAULT_SEED,
    PREDICT_INPUT,
    PREDICT_SIGNATURE,
    SCORES_OUTPUT,
    BundleConfig,
    SamplingSpec,
    discover_versions,
    inference_sampling,
    parse_version_dir,
)
from memgraph_tf.serving.grpc_codec import serialize_blob_example

logger = logging.getLogger(__name__)


_REASON_CHARS = 500


def resolve_version_dir(path: Any) -> tuple[pathlib.Path, int | None]:
    """The version directory a bundle path means, and its number: ``path`` itself when it holds
    ``saved_model.pb`` (``BASE/NAME/VERSION``; the number TF Serving reads from its name, None
    when it is not a number), else its highest numbered version directory (``BASE/NAME``).
    Raises :class:`ConfigurationError` when ``path`` is no directory or holds neither. Reads
    only directory listings (no TensorFlow)."""
    path = pathlib.Path(path)
    if not path.is_dir():
        raise ConfigurationError(
            f"model: expected a bundle directory (BASE/NAME or "
            f"BASE/NAME/VERSION), got {str(path)!r}: no such directory"
        )
    if (path / "saved_model.pb").is_file() or (path / "saved_model.pbtxt").is_file():
        return path, parse_version_dir(path.name)
    found = discover_versions(path)
    if not found:
        raise ConfigurationError(
            f"model: expected saved_model.pb or numbered version "
            f"directories in {str(path)!r}, found neither"
        )
    number, version_dir = max(found.items())
    return version_dir, number


def sampling_for(config: BundleConfig, seed: int | None = None) -> SamplingSpec:
    """The sampling settings batch inference uses for a bundle: its fanouts, properties and
    options without ``label_property`` (no labels are needed to classify), with ``options.seed`` =
    ``seed``, else the bundle's seed, else :data:`DEFAULT_SEED`.

    Guarantees: ``memgraph-tf classify`` and the Beam pipeline sample with exactly these settings,
    and the query modules key a sample by ``(options.seed, node)``, so a node gets the same
    neighbourhood -- hence the same prediction -- on both paths, in any batch or shard."""
    return inference_sampling(config, seed)


class ModelBackend:
    """What batch inference needs from a model: ``config`` (the bundle config: sampling settings
    and class names), ``name``, ``version`` (written as ``P_version``) and :meth:`classify`.

    A new transport is one subclass implementing :meth:`classify` (or a client for
    :class:`ServingBackend`)."""

    config: BundleConfig
    version: int

    @property
    def name(self) -> str:
        return self.config.model_name

    def classify(self, blobs: Sequence[bytes]) -> list[tuple[str, float]]:
        """The top class label and its score for each per-node blob, in order. Raises
        :class:`ModelInputError` when the model rejects the input (a bad blob in the batch) and
        another error when the model or its server fails."""
        raise NotImplementedError

    def infer(self, blobs: Sequence[bytes]) -> list[tuple[Any, float | None]]:
        """What batch inference writes for each per-node blob, in order: ``(value, score)``,
        ``P`` and ``P_score`` (a score of None writes no ``P_score``); by default
        :meth:`classify`'s ``(label, score)``."""
        return list(self.classify(blobs))

    def sampling(self) -> SamplingSpec:
        """How a run samples each node's blob: :func:`sampling_for` the config."""
        return sampling_for(self.config)

    def selection_options(self) -> Mapping[str, Any]:
        """The sampling options the run selects its nodes by (``label``, ``id_property``:
        :func:`~memgraph_tf.client.node_tables.bundle_selection`): the config's."""
        return self.config.options

    def close(self) -> None:
        """Releases the backend's resources; idempotent."""

    def __enter__(self) -> ModelBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, version={self.version})"


def _tf_message(exc: Any) -> str:
    """A TensorFlow error's own message, without the eager wrapper's 'Detected at node' preamble."""
    message = getattr(exc, "message", None) or str(exc)
    marker = "<stack traces unavailable>"
    if marker in message:
        message = message.split(marker, 1)[1]
    message = re.sub(r"\s*\[\[\{\{.*?\}\}\]\]|\s*\[Op:[^\]]*\]", "", message)  # graph node names
    message = re.sub(
        r"^\s*StringToNumberOp could not correctly convert string: ", "", message
    )  # op-free carrier
    return " ".join(message.split())[:_REASON_CHARS]


def _blob_predict_function(loaded: Any) -> Any:
    """The bundle's ``serving_default`` function when it takes the raw blobs alone (input
    ``blobs``, a string vector) and answers ``scores``; else None."""
    function = loaded.functions.get(PREDICT_SIGNATURE)
    if function is None:
        return None
    try:
        args, kwargs = function.structured_input_signature
        outputs = function.structured_outputs
    except AttributeError:
        return None
    spec = kwargs.get(PREDICT_INPUT) if not args and set(kwargs) == {PREDICT_INPUT} else None
    if (
        spec is None
        or getattr(spec, "dtype", None) is None
        or spec.dtype.name != "string"
        or spec.shape.rank != 1
        or not isinstance(outputs, Mapping)
        or SCORES_OUTPUT not in outputs
    ):
        return None
    return function


class BundleBackend(ModelBackend):
    """A bundle run in-process, op or op-free bundle: its ``serving_default`` signature on the raw
    blobs (the same model and scores as its ``classify`` signature, without building and parsing a
    ``tf.Example`` per node), or, for a bundle whose ``serving_default`` does not take
    ``blobs`` alone, its ``classify`` signature on serialized ``tf.Example`` s carrying each node's
    blob (what TF Serving's ``:classify`` runs). The label is the class of the highest score (the
    first on a tie), from the bundle's ``class_names``.

    ``path`` is a version directory (``BASE/NAME/VERSION``, holding ``saved_model.pb``) or a model
    directory (``BASE/NAME``: its highest version is used): :func:`resolve_version_dir`. Loading is
    :func:`memgraph_tf.serving.loading.load_version` (which registers the bundle's op library
    when the graph needs it). Guarantees: ``version`` is the version directory's number (TF
    Serving's reading of it), else the config's; a directory that is no memgraph-tf bundle raises
    :class:`ConfigurationError`; a broken config :class:`memgraph_tf.errors.BundleError`.
    """

    def __init__(self, path: Any) -> None:
        from memgraph_tf.serving import loading

        version_dir, version = resolve_version_dir(path)
        try:
            loaded = loading.load_version(version_dir, version or 0)
        except serving_errors.BundleError:
            raise
        except ValueError as exc:
            raise ModelError(f"model: cannot load {version_dir}: {exc}") from exc
        if loaded.bundle_config is None:
            raise ConfigurationError(
                f"model: {str(version_dir)!r} is a SavedModel but not a "
                f"memgraph-tf bundle (no assets/{CONFIG_ASSET})"
            )
        if CLASSIFY_SIGNATURE not in loaded.functions:
            raise ConfigurationError(
                f"model: {str(version_dir)!r} has no {CLASSIFY_SIGNATURE!r} "
                f"signature (has {sorted(loaded.functions)})"
            )
        self.config = loaded.bundle_config
        self.version = version if version is not None else self.config.version
        if self.version != self.config.version:
            logger.warning(
                "%s: the directory says version %d, the bundle config %d: writing %d",
                version_dir,
                self.version,
                self.config.version,
                self.version,
            )
        self.path = version_dir
        self._loaded = loaded
        self._classify = loaded.functions[CLASSIFY_SIGNATURE]
        self._predict = _blob_predict_function(loaded)
        self._labels = list(self.config.class_names)
        logger.info(
            "loaded %s version %d from %s", self.config.model_name, self.version, version_dir
        )

    def classify(self, blobs: Sequence[bytes]) -> list[tuple[str, float]]:
        import tensorflow as tf

        if not blobs:
            return []
        try:
            if self._predict is not None:
                out = self._predict(**{PREDICT_INPUT: tf.constant(list(blobs), dtype=tf.string)})
            else:
                key = self.config.blob_feature_key
                examples = [serialize_blob_example(b, key) for b in blobs]
                out = self._classify(**{CLASSIFY_INPUT: tf.constant(examples, dtype=tf.string)})
        except tf.errors.InvalidArgumentError as exc:
            raise ModelInputError(f"the model rejected the blob: {_tf_message(exc)}") from None
        except tf.errors.OpError as exc:
            raise ModelError(f"{self.name} version {self.version}: {_tf_message(exc)}") from None
        scores = out[SCORES_OUTPUT].numpy()
        if scores.ndim != 2 or scores.shape != (len(blobs), len(self._labels)):
            raise ModelError(
                f"{self.name} version {self.version}: expected scores of shape "
                f"({len(blobs)}, {len(self._labels)}) (one per class name), got {scores.shape}"
            )
        top = scores.argmax(axis=1)
        labels = self._labels
        return list(zip([labels[t] for t in top.tolist()], scores[range(len(blobs)), top].tolist()))

    def close(self) -> None:
        self._classify = self._predict = None
        self._loaded = None


class ServingBackend(ModelBackend):
    """A model behind a serving endpoint. ``client`` is any object with ``classify(blobs) ->
    [[(label, score), ...], ...]`` (one list per blob) and ``bundle_config() -> BundleConfig``:
    :class:`memgraph_tf.serving.ServingClient` (REST) or ``GrpcServingClient`` (gRPC); it should
    be pinned to one version (see :func:`rest_backend`), which is ``version``.

    Guarantees: a 400 answer (:class:`memgraph_tf.errors.BadRequestError`: the server could
    not use a blob) becomes :class:`ModelInputError`; other serving errors propagate unchanged."""

    def __init__(
        self, client: Any, version: int | None = None, config: BundleConfig | None = None
    ) -> None:
        for method in ("classify", "bundle_config"):
            if not callable(getattr(client, method, None)):
                raise ConfigurationError(
                    f"client: expected an object with {method}(), got {type(client).__name__}"
                )
        self.client = client
        self.config = config if config is not None else client.bundle_config()
        self.version = version if version is not None else self.config.version

    def classify(self, blobs: Sequence[bytes]) -> list[tuple[str, float]]:
        if not blobs:
            return []
        try:
            results = self.client.classify(list(blobs))
        except serving_errors.BadRequestError as exc:
            raise ModelInputError(exc.message) from exc
        if len(results) != len(blobs):
            raise ModelError(
                f"{self.name}: the server answered {len(results)} results for {len(blobs)} examples"
            )
        out = []
        for i, pairs in enumerate(results):
            if not pairs:
                raise ModelError(f"{self.name}: the server answered no classes for example {i}")
            label, score = max(pairs, key=lambda p: p[1])
            out.append((str(label), float(score)))
        return out

    def close(self) -> None:
        close = getattr(self.client, "close", None)
        if callable(close):
            close()


def _newest_available(status: Mapping[str, Any], what: str) -> int:
    versions = [
        int(v["version"])
        for v in status.get("model_version_status", [])
        if str(v.get("state", "")).upper() == "AVAILABLE"
    ]
    if not versions:
        raise ModelError(f"{what}: no AVAILABLE version (status {status})")
    return max(versions)


def _pinned(make: Callable[[int | None], Any], version: int | None, what: str) -> ServingBackend:
    """A :class:`ServingBackend` whose client is pinned to ``version`` (default: the newest
    AVAILABLE version the endpoint reports, so a version loaded mid-run does not mix in)."""
    client = make(version)
    try:
        if version is None:
            version = _newest_available(client.status(), what)
            client.close()
            client = make(version)
        return ServingBackend(client, version)
    except BaseException:
        client.close()
        raise


def rest_backend(
    url: str, model_name: str, *, version: int | None = None, **client_options: Any
) -> ServingBackend:
    """A :class:`ServingBackend` over TF Serving's REST API (:class:`ServingClient`,
    ``client_options`` passed on), pinned to ``version`` or to the newest available one."""
    from memgraph_tf.serving.client import ServingClient

    return _pinned(
        lambda v: ServingClient(url, model_name, version=v, **client_options),
        version,
        f"{url} model {model_name!r}",
    )


def grpc_backend(
    target: str, model_name: str, *, version: int | None = None, **client_options: Any
) -> ServingBackend:
    """A :class:`ServingBackend` over TF Serving's gRPC API
    (``memgraph_tf.serving.grpc_client.GrpcServingClient(target, model_name, version=...)``),
    pinned like :func:`rest_backend`. Raises :class:`ConfigurationError` when that module is not
    available in this installation."""
    try:
        from memgraph_tf.serving.grpc_client import GrpcServingClient
    except ImportError as exc:
        raise ConfigurationError(
            f"serving-grpc: the gRPC client (memgraph_tf.serving.grpc_client) "
            f"is not available: {exc}"
        ) from exc
    return _pinned(
        lambda v: GrpcServingClient(target, model_name, version=v, **client_options),
        version,
        f"{target} model {model_name!r}",
    )


__all__ = [
    "DEFAULT_SEED",
    "BundleBackend",
    "ModelBackend",
    "ServingBackend",
    "grpc_backend",
    "resolve_version_dir",
    "rest_backend",
    "sampling_for",
]
