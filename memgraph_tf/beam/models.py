"""Which model a pipeline runs: a picklable :class:`ModelSpec`, resolved once by the launcher (version
pinned, bundle config read) and opened on each worker as a
:class:`memgraph_tf.client.batch.ModelBackend` (no Beam import here).

Resolving on the launcher means every worker runs the same version and samples with the same
settings, even if a newer version appears while the job runs.
"""

from __future__ import annotations

import dataclasses
import logging
import pathlib
import threading
from typing import Any

from memgraph_tf.client.batch import DEFAULT_SEED, ModelBackend
from memgraph_tf.client.errors import ConfigurationError, ModelError
from memgraph_tf.serving.bundle import BundleConfig, SamplingSpec

logger = logging.getLogger(__name__)

KINDS = ("bundle", "rest", "grpc")

_SHARED_LOCK = threading.Lock()
_SHARED: dict[ModelSpec, ModelBackend] = {}


def sampling_for(config: BundleConfig, seed: int | None = None) -> SamplingSpec:
    """The sampling settings batch inference uses for a bundle: its fanouts, properties and
    options without ``label_property`` (no labels are needed to classify), with ``options.seed`` =
    ``seed``, else the bundle's seed, else :data:`memgraph_tf.client.batch.DEFAULT_SEED`.

    Guarantees: the same settings as ``memgraph_tf.client.batch.BatchClassifier`` (a test compares
    their predictions), so a node gets the same neighbourhood -- hence the same prediction -- in
    a Beam pipeline as in ``memgraph-tf classify``."""
    options = {k: v for k, v in config.options.items() if k != "label_property"}
    if seed is not None:
        options["seed"] = seed
    elif options.get("seed") is None:
        options["seed"] = DEFAULT_SEED
    return SamplingSpec(config.fanouts, config.properties, options)


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """A model by location: ``kind`` ``bundle`` (``target`` a version directory
    ``BASE/NAME/VERSION`` readable on every worker), ``rest`` (``target`` TF Serving's REST URL) or
    ``grpc`` (``target`` HOST:PORT), with ``model_name`` and the pinned ``version``, and the
    bundle ``config`` read when it was resolved. Build one with :meth:`resolve`."""

    kind: str
    target: str
    model_name: str
    version: int
    config_json: str

    @property
    def config(self) -> BundleConfig:
        """The bundle config (sampling settings, class names)."""
        return BundleConfig.from_json(self.config_json)

    @classmethod
    def resolve(
        cls,
        *,
        bundle: Any = None,
        rest: str | None = None,
        grpc: str | None = None,
        model_name: str | None = None,
        version: int | None = None,
    ) -> ModelSpec:
        """Exactly one of ``bundle`` (``BASE/NAME`` -- its highest version -- or
        ``BASE/NAME/VERSION``), ``rest`` or ``grpc`` (with ``model_name``, and ``version``:
        default the newest AVAILABLE one, asked once here). Reads the bundle config (from the
        bundle's assets without TensorFlow, or from the server). Raises
        :class:`ConfigurationError` for a bad combination or a directory that is no bundle."""
        given = [
            k for k, v in (("bundle", bundle), ("rest", rest), ("grpc", grpc)) if v is not None
        ]
        if len(given) != 1:
            raise ConfigurationError(
                f"model: expected exactly one of bundle, rest, grpc, got {given or 'none'}"
            )
        if bundle is not None:
            if model_name is not None or version is not None:
                raise ConfigurationError(
                    "model_name / version: only for a served model (a bundle "
                    "directory names its version itself)"
                )
            version_dir, number = _version_dir(pathlib.Path(bundle))
            from memgraph_tf.serving.bundle import read_bundle_config

            config = read_bundle_config(version_dir)
            if config is None:
                raise ConfigurationError(
                    f"model: {str(version_dir)!r} is not a memgraph-tf bundle "
                    f"(no bundle config in its assets)"
                )
            return cls(
                "bundle",
                str(version_dir.resolve()),
                config.model_name,
                number if number is not None else config.version,
                config.to_json(),
            )
        if not model_name:
            raise ConfigurationError("model_name: required for a served model (rest, grpc)")
        kind, target = ("rest", rest) if rest is not None else ("grpc", grpc)
        spec = cls(kind, str(target), model_name, version if version is not None else 0, "")
        with spec._connect(version) as backend:
            return cls(kind, str(target), model_name, backend.version, backend.config.to_json())

    def _connect(self, version: int | None) -> ModelBackend:
        from memgraph_tf.client import batch

        if self.kind == "rest":
            return batch.rest_backend(self.target, self.model_name, version=version)
        return batch.grpc_backend(self.target, self.model_name, version=version)

    def open(self, *, shared: bool = False) -> ModelBackend:
        """A backend for this spec on this worker (loads the bundle, or connects to the server
        pinned to :attr:`version`). Raises :class:`ModelError` when what it finds is another
        model or version than the launcher resolved.

        ``shared``: a bundle is loaded once per process and the same backend returned to every
        caller for the life of the process (a version directory never changes; workers that run
        several pipelines or steps load it once); the caller must not close it. Served models
        always get a new client."""
        if shared and self.kind == "bundle":
            with _SHARED_LOCK:
                backend = _SHARED.get(self)
                if backend is None:
                    backend = _SHARED[self] = self.open()
                return backend
        if self.kind == "bundle":
            from memgraph_tf.client.batch import BundleBackend

            backend: ModelBackend = BundleBackend(self.target)
        else:
            backend = self._connect(self.version)
        if backend.version != self.version or backend.name != self.model_name:
            backend.close()
            raise ModelError(
                f"model: expected {self.model_name} version {self.version} at {self.target}, "
                f"found {backend.name} version {backend.version}"
            )
        return backend

    def __str__(self) -> str:
        return f"{self.model_name} version {self.version} ({self.kind} {self.target})"


def _version_dir(path: pathlib.Path) -> tuple[pathlib.Path, int | None]:
    """What ``BundleBackend`` loads for ``path``: the version directory and its number."""
    from memgraph_tf.serving.bundle import discover_versions, parse_version_dir

    if not path.is_dir():
        raise ConfigurationError(
            f"model: expected a bundle directory (BASE/NAME or BASE/NAME/VERSION), "
            f"got {str(path)!r}: no such directory"
        )
    if (path / "saved_model.pb").is_file() or (path / "saved_model.pbtxt").is_file():
        return path, parse_version_dir(path.name)
    found = discover_versions(path)
    if not found:
        raise ConfigurationError(
            f"model: expected saved_model.pb or numbered version directories in "
            f"{str(path)!r}, found neither"
        )
    number, version_dir = max(found.items())
    return version_dir, number


__all__ = ["KINDS", "ModelSpec", "sampling_for"]
