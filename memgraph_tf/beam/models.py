"""Which model a pipeline runs: a picklable :class:`ModelSpec`, resolved once by the launcher
(version pinned, bundle config read) and opened on each worker as a
:class:`memgraph_tf.batch.ModelBackend` (no Beam import here). Which version directory a bundle
path means and how batch inference samples with a bundle are the batch package's
(:func:`memgraph_tf.batch.backends.resolve_version_dir`, :func:`~memgraph_tf.batch.sampling_for`),
the same rules as ``memgraph-tf classify``'s.

Resolving on the launcher means every worker runs the same version and samples with the same
settings, even if a newer version appears while the job runs.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from typing import Any

from memgraph_tf.batch.backends import (
    BundleBackend,
    ModelBackend,
    grpc_backend,
    resolve_version_dir,
    rest_backend,
    sampling_for,
)
from memgraph_tf.errors import ConfigurationError, ModelError
from memgraph_tf.serving.bundle import BundleConfig, read_bundle_config

logger = logging.getLogger(__name__)

KINDS = ("bundle", "rest", "grpc")

_SHARED_LOCK = threading.Lock()
_SHARED: dict[ModelSpec, ModelBackend] = {}


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
    #: None: the model classifies; ``node`` / ``source`` / ``target``: a bundle's encoder embeds
    #: (a node bundle's ``embed``, a link bundle's role: :class:`~memgraph_tf.batch.EmbedBackend`)
    embed: str | None = None

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
        embed: str | None = None,
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
            version_dir, number = resolve_version_dir(bundle)
            config = read_bundle_config(version_dir)
            if config is None:
                raise ConfigurationError(
                    f"model: {str(version_dir)!r} is not a memgraph-tf bundle "
                    f"(no bundle config in its assets)"
                )
            if embed not in (None, "node", "source", "target"):
                raise ConfigurationError(
                    f"embed: expected None, node, source or target, got {embed!r}"
                )
            if embed is not None and (embed == "node") != (config.link is None):
                raise ConfigurationError(
                    f"embed: {embed!r} does not fit {config.model_name!r} (a "
                    f"{'link' if config.link is not None else 'node'} bundle: "
                    f"{'source or target' if config.link is not None else 'node'})"
                )
            return cls(
                "bundle",
                str(version_dir.resolve()),
                config.model_name,
                number if number is not None else config.version,
                config.to_json(),
                embed,
            )
        if embed is not None:
            raise ConfigurationError("embed: only for a bundle run in-process (bundle=)")
        if not model_name:
            raise ConfigurationError("model_name: required for a served model (rest, grpc)")
        kind, target = ("rest", rest) if rest is not None else ("grpc", grpc)
        spec = cls(kind, str(target), model_name, version if version is not None else 0, "")
        with spec._connect(version) as backend:
            return cls(kind, str(target), model_name, backend.version, backend.config.to_json())

    def sampling(self) -> Any:
        """How each node is sampled: :func:`sampling_for` the config, or for a link bundle's
        encoder that role's ``sample_typed`` settings (as :class:`~memgraph_tf.batch.EmbedBackend`
        samples)."""
        config = self.config
        if self.embed in ("source", "target"):
            from memgraph_tf.serving.bundle import inference_sampling

            return inference_sampling(config).role_sampling(self.embed)
        return sampling_for(config)

    def selection_options(self) -> Any:
        """The options nodes are selected by (``label``, ``id_property``): the config's, or a
        link role's label and key."""
        if self.embed in ("source", "target"):
            spec = self.sampling()
            return {"label": spec.typed.seed_label, "id_property": spec.options.get("id_property")}
        return self.config.options

    def _connect(self, version: int | None) -> ModelBackend:
        if self.kind == "rest":
            return rest_backend(self.target, self.model_name, version=version)
        return grpc_backend(self.target, self.model_name, version=version)

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
        if self.kind == "bundle" and self.embed is not None:
            from memgraph_tf.batch.embedder import EmbedBackend

            backend: ModelBackend = EmbedBackend(
                self.target, role=None if self.embed == "node" else self.embed
            )
        elif self.kind == "bundle":
            backend = BundleBackend(self.target)
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


__all__ = ["KINDS", "ModelSpec", "sampling_for"]
