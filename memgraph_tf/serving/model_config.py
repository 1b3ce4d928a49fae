"""TF Serving's ``--model_config_file`` for ``memgraph-tf serve``: a ``ModelServerConfig`` text
proto (``tensorflow_serving/config/model_server_config.proto``), read with protobuf's own
``text_format`` into the generated ``model_server_config_pb2`` message -- the file
:func:`~memgraph_tf.serving.export.export_bundle` writes (``BASE/models.config``)::

    model_config_list {
      config {
        name: "GraphSage"
        base_path: "/models/GraphSage"
        model_platform: "tensorflow"
        model_version_policy { specific { versions: 1 versions: 2 } }
        version_labels { key: "stable" value: 1 }
      }
    }

What is checked, as TF Serving's ServerCore checks it (``server_core.cc``,
``ValidateModelConfigList``): a ``model_config_list`` (a ``custom_model_config`` is refused); no
name twice ("Illegal to list model NAME multiple times in config list"); absolute base paths
("Expected model NAME to have an absolute path or URI; got base_path()=..."; TF Serving takes
relative ones only with ``model_config_list_root_dir``, which ``memgraph-tf serve`` does not
have); ``model_platform`` ``tensorflow`` (or empty). :class:`VersionPolicy` is the
``model_version_policy`` (``file_system_storage_path_source.proto``): ``latest { num_versions }``
(the default, one version), ``all {}``, ``specific { versions }``.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Mapping
from dataclasses import dataclass, field

#: TF Serving's platform name for SavedModels (``model_platform``).
TENSORFLOW_PLATFORM = "tensorflow"


@dataclass(frozen=True)
class VersionPolicy:
    """Which of the versions found under a base path are served: ``kind`` ``"latest"`` (the
    ``num_versions`` highest), ``"all"`` or ``"specific"`` (those in ``versions`` that exist)."""

    kind: str = "latest"
    num_versions: int = 1
    versions: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
        if self.kind not in ("latest", "all", "specific"):
            raise ValueError(
                f"model_version_policy: expected latest, all or specific, got {self.kind!r}"
            )
        if self.kind == "latest" and self.num_versions < 1:
            raise ValueError(
                f"model_version_policy.latest.num_versions: expected >= 1, got {self.num_versions}"
            )

    def select(self, found: Mapping[int, pathlib.Path]) -> dict[int, pathlib.Path]:
        """The subset of ``found`` (version -> directory) this policy serves."""
        if self.kind == "all":
            return dict(found)
        if self.kind == "specific":
            return {v: p for v, p in found.items() if v in self.versions}
        keep = sorted(found, reverse=True)[: self.num_versions]
        return {v: found[v] for v in keep}

    def describe(self) -> str:
        """The policy as the text proto writes it, for logs."""
        if self.kind == "all":
            return "all {}"
        if self.kind == "specific":
            return f"specific {{ versions: {sorted(self.versions)} }}"
        return f"latest {{ num_versions: {self.num_versions} }}"


@dataclass(frozen=True)
class ModelEntry:
    """One ``config { ... }`` of a ``model_config_list``."""

    name: str
    base_path: pathlib.Path
    policy: VersionPolicy = field(default_factory=VersionPolicy)
    labels: dict[str, int] = field(default_factory=dict)


def _policy(proto) -> VersionPolicy:
    which = proto.WhichOneof("policy_choice")
    if which == "all":
        return VersionPolicy("all")
    if which == "specific":
        versions = list(proto.specific.versions)
        if not versions:
            raise ValueError("model_version_policy.specific: expected at least one version")
        return VersionPolicy("specific", versions=frozenset(int(v) for v in versions))
    if which == "latest":
        return VersionPolicy("latest", num_versions=int(proto.latest.num_versions) or 1)
    return VersionPolicy()  # TF Serving's default: latest { num_versions: 1 }


def parse_model_config(text: str, where: str = "model_config_file") -> list[ModelEntry]:
    """The models of a ``ModelServerConfig`` text proto, checked as TF Serving checks them (see
    the module docstring). Raises ValueError naming ``where`` and the entry at fault."""
    from google.protobuf import text_format
    from tensorflow_serving.config import model_server_config_pb2

    cfg = model_server_config_pb2.ModelServerConfig()
    try:
        text_format.Parse(text, cfg)
    except text_format.ParseError as exc:
        raise ValueError(f"{where}: not a ModelServerConfig text proto: {exc}") from None
    which = cfg.WhichOneof("config")
    if which != "model_config_list":
        raise ValueError(f"{where}: expected a model_config_list, got {which or 'an empty config'}")
    entries: list[ModelEntry] = []
    names: set[str] = set()
    for i, c in enumerate(cfg.model_config_list.config):
        at = f"{where}: config[{i}]"
        if not c.name:
            raise ValueError(f"{at}: the model has no name")
        if c.name in names:
            raise ValueError(f"{at}: Illegal to list model {c.name} multiple times in config list")
        names.add(c.name)
        if not c.base_path or not os.path.isabs(c.base_path):
            raise ValueError(
                f"{at}: Expected model {c.name} to have an absolute path or URI; got "
                f"base_path()={c.base_path}"
            )
        if c.model_platform not in ("", TENSORFLOW_PLATFORM):
            raise ValueError(
                f"{at}: model {c.name}: memgraph-tf serve serves model_platform "
                f"{TENSORFLOW_PLATFORM!r} only, got {c.model_platform!r}"
            )
        policy = _policy(c.model_version_policy)
        labels = {str(k): int(v) for k, v in c.version_labels.items()}
        entries.append(ModelEntry(c.name, pathlib.Path(c.base_path), policy, labels))
    if not entries:
        raise ValueError(f"{where}: the model_config_list holds no model")
    return entries


def read_model_config(path: str | os.PathLike) -> list[ModelEntry]:
    """:func:`parse_model_config` of the file at ``path`` (ValueError naming it when it cannot
    be read or parsed)."""
    try:
        text = pathlib.Path(path).read_text()
    except OSError as exc:
        raise ValueError(f"--model_config_file {path}: {exc.strerror or exc}") from None
    return parse_model_config(text, where=f"--model_config_file {path}")


__all__ = [
    "TENSORFLOW_PLATFORM",
    "ModelEntry",
    "VersionPolicy",
    "parse_model_config",
    "read_model_config",
]
