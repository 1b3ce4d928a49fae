"""Feature encoders: one Keras layer per label turns the raw property columns of a typed blob into
the model's float32 features, so the vocabularies, statistics and embedding tables live in the
model (and in every SavedModel exported from it).

A label with a :class:`~memgraph_tf.feature_spec.LabelSpec` is sampled with
``options.feature_spec`` and its slot tables carry *raw sections* instead of
``features_h{h}_{label}`` (per hop ``h``, only the groups its spec has):

========================  ==========  ================  =========================================
section                   dtype       shape             content
========================  ==========  ================  =========================================
``num_h{h}_{L}``          float32     ``[n, s, Wn]``    ``numeric``, ``boolean`` (0/1) and
                                                        ``required`` properties' numbers
``time_h{h}_{L}``         int64       ``[n, s, Wt]``    ``temporal`` values in the spec's unit
``cat_h{h}_{L}``          string      ``[n, s, Wc]``    ``categorical`` values' category texts
``bag_h{h}_{L}``          string      ragged            ``multi_categorical`` elements' texts,
(+ ``.row_splits``)                                     one row per ``[n, s, Wb]`` cell
``has_h{h}_{L}``          bool        ``[n, s, P]``     per spec property: present and not null
========================  ==========  ================  =========================================

Columns follow the spec's property order within each group. :class:`LabelEncoder` maps them to
``[n, s, output_width]``, one block per property in spec order (then its missing indicator):

* ``numeric``: ``default`` where missing, then ``(x - mean) / std`` with ``standardize``
  (``length`` columns for a list, else 1);
* ``boolean``: 0/1, ``default`` where missing;
* ``required``: the numbers as they are (``required_widths[name]`` columns, default 1);
* ``temporal``: ``default`` where missing, then ``(x - mean) / std`` computed in float64 (a
  microsecond count keeps its precision) and returned as float32;
* ``categorical``: ``keras.layers.StringLookup`` over the vocabulary's category texts
  (:func:`~memgraph_tf.feature_spec.category_text`) with ``oov_buckets`` OOV indices, or
  ``keras.layers.Hashing`` into ``hash_buckets``; then a ``keras.layers.Embedding`` of
  ``embedding_dim`` columns (default 8) with one more row for a missing value. An unseen category
  takes an OOV bucket (with ``oov_buckets`` 0: the missing row), never an error;
* ``multi_categorical``: the same lookup and embedding per element, averaged over the bag (zeros
  for an empty or missing bag);
* ``missing_indicator``: one more column, 1 where the property is missing.

An edge step with an edge feature spec (``options.edge_feature_spec``: the ``LabelSpec`` of its
relationship properties) carries the same groups per group of slots it fills,
``edge_{group}_h{h}_s{i}`` (:func:`memgraph_tf.layout.typed_edge_sections`); :func:`edge_encoders`
gives one :class:`LabelEncoder` per such step, read by :func:`edge_features`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import keras
import tensorflow as tf

from memgraph_tf import layout
from memgraph_tf.errors import ConfigurationError
from memgraph_tf.feature_spec import LabelSpec, PropertySpec, category_text
from memgraph_tf.typed_sampling import EdgeStep, TypedSamplingSpec

__all__ = [
    "GROUPS",
    "LabelEncoder",
    "as_label_specs",
    "bag_splits_name",
    "edge_encoders",
    "edge_features",
    "edge_raw_widths",
    "edge_section_names",
    "edge_spec_option",
    "encoders_config",
    "label_encoders",
    "label_features",
    "raw_section_names",
    "raw_widths",
    "required_names",
    "required_widths_of",
    "spec_option",
    "split_properties",
    "with_spec_option",
]

GROUPS = layout.RAW_GROUPS
"""The raw section groups, in blob order (:data:`memgraph_tf.layout.RAW_GROUPS`)."""
_GROUP_OF_KIND = layout.RAW_GROUP_OF_KIND


def bag_splits_name(hop: int, label: str) -> str:
    """The row-splits section of ``bag_h{hop}_{label}``."""
    return layout.row_splits_name(layout.typed_raw_name("bag", hop, label))


@dataclasses.dataclass(frozen=True)
class _Column:
    """Where one property's values sit: its group, first column, width and ``has`` column."""

    spec: PropertySpec
    group: str
    start: int
    width: int
    present: int
    layer: int = -1  # index into the lookup/embedding lists (categorical kinds)


def _as_spec(spec: LabelSpec | Mapping[str, Any]) -> LabelSpec:
    if isinstance(spec, LabelSpec):
        spec.validate()
        return spec
    return LabelSpec.from_dict(spec)


@keras.saving.register_keras_serializable(package="memgraph_tf")
class LabelEncoder(keras.layers.Layer):
    """The encoder of one label's raw sections (module docstring): ``call(raw)`` takes
    ``{"num", "time", "cat", "bag", "has"}`` (only the groups :attr:`groups` lists; ``bag`` a
    ``tf.RaggedTensor`` ``[..., Wb, None]``) of any leading shape and returns float32
    ``[..., output_width]``.

    ``spec``: the label's :class:`~memgraph_tf.feature_spec.LabelSpec` (or its ``to_dict()``
    form); ``embedding_dim``: columns per categorical or multi-categorical property;
    ``required_widths``: columns of each ``required`` property (default 1).

    Guarantees: the config (the spec as plain JSON) rebuilds the same layer; its lookups and
    embeddings are Keras layers tracked by the model, so a SavedModel holds them; missing values
    and unseen categories never raise."""

    def __init__(
        self,
        spec: LabelSpec | Mapping[str, Any],
        *,
        embedding_dim: int = 8,
        required_widths: Mapping[str, int] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.spec = _as_spec(spec)
        if (
            isinstance(embedding_dim, bool)
            or not isinstance(embedding_dim, int)
            or embedding_dim < 1
        ):
            raise ConfigurationError(
                f"embedding_dim: expected an integer >= 1, got {embedding_dim!r}"
            )
        self.embedding_dim = embedding_dim
        self.required_widths = {str(k): int(v) for k, v in (required_widths or {}).items()}
        self.columns: list[_Column] = []
        self.lookups: list[Any] = []
        self.embeddings: list[Any] = []
        self.missing_ids: list[int] = []
        self.group_widths = dict.fromkeys(GROUPS, 0)
        self.group_widths["has"] = len(self.spec.properties)
        for i, prop in enumerate(self.spec.properties):
            self.columns.append(self._column(i, prop))
        self.groups = [g for g in GROUPS if self.group_widths[g]]
        self.output_width = sum(
            (self.embedding_dim if c.layer >= 0 else c.width)
            + int(getattr(c.spec, "missing_indicator", False))
            for c in self.columns
        )

    def _column(self, i: int, prop: PropertySpec) -> _Column:
        group = _GROUP_OF_KIND[prop.kind]
        if prop.kind == "numeric":
            width = prop.length or 1
        elif prop.kind == "required":
            width = self.required_widths.get(prop.name, 1)
        else:
            width = 1
        start = self.group_widths[group]
        self.group_widths[group] += width
        layer = -1
        if group in ("cat", "bag"):
            layer = len(self.lookups)
            self._add_lookup(prop)
        return _Column(prop, group, start, width, i, layer)

    def _add_lookup(self, prop: Any) -> None:
        key = "".join(c if c.isalnum() else "_" for c in prop.name)
        n = len(self.lookups)
        texts = list(dict.fromkeys(category_text(v) for v in prop.vocabulary))
        if prop.hash_buckets is not None or not texts:
            bins = prop.hash_buckets or prop.oov_buckets
            lookup = keras.layers.Hashing(num_bins=bins, name=f"hash_{n}_{key}")
            size = bins
        else:
            lookup = keras.layers.StringLookup(
                vocabulary=texts,
                num_oov_indices=max(1, prop.oov_buckets),
                mask_token=None,
                name=f"lookup_{n}_{key}",
            )
            size = len(texts) + max(1, prop.oov_buckets)
        self.lookups.append(lookup)
        self.missing_ids.append(size)  # one more row: a missing value
        self.embeddings.append(
            keras.layers.Embedding(size + 1, self.embedding_dim, name=f"embed_{n}_{key}")
        )

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            spec=self.spec.to_dict(),
            embedding_dim=self.embedding_dim,
            required_widths=dict(self.required_widths),
        )
        return config

    def build(self, input_shape: Any = None) -> None:
        """Creates the embedding tables (from the config alone)."""
        for emb in self.embeddings:
            if not emb.built:
                emb.build((None,))
        self.built = True

    def compute_output_shape(self, input_shape: Any) -> tuple[Any, ...]:
        return (*tuple(input_shape["has"])[:-1], self.output_width)

    def _ids(self, column: _Column, texts: Any) -> Any:
        """The embedding row of each category text (int64, the shape of ``texts``)."""
        prop = column.spec
        ids = tf.cast(self.lookups[column.layer](texts), tf.int64)
        if prop.hash_buckets is None and prop.vocabulary and prop.oov_buckets == 0:
            ids = tf.where(ids == 0, tf.constant(self.missing_ids[column.layer], tf.int64), ids)
        return ids

    def _bag(self, column: _Column, bag: Any, lead: Any) -> Any:
        """The mean element embedding of each bag of column ``column``, ``[..., dim]``."""
        rows = bag
        while isinstance(rows.values, tf.RaggedTensor):
            rows = rows.values  # innermost level: one row per [..., Wb] cell
        emb = self.embeddings[column.layer](self._ids(column, rows.values))
        row_ids = rows.value_rowids()
        nrows = rows.nrows()
        total = tf.math.unsorted_segment_sum(emb, row_ids, nrows)
        count = tf.math.unsorted_segment_sum(tf.ones_like(row_ids, tf.float32), row_ids, nrows)
        mean = total / tf.maximum(count, 1.0)[:, None]
        width = self.group_widths["bag"]
        mean = tf.reshape(mean, tf.concat([lead, [width, self.embedding_dim]], 0))
        return mean[..., column.start, :]

    def call(self, raw: Mapping[str, Any]) -> Any:
        missing = [g for g in self.groups if g not in raw]
        if missing:
            raise ConfigurationError(
                f"label {self.spec.label!r}: the encoder expected raw groups "
                f"{', '.join(self.groups)}, missing {', '.join(missing)}"
            )
        has = tf.convert_to_tensor(raw["has"], tf.bool)
        lead = tf.shape(has)[:-1]
        out = []
        for c in self.columns:
            prop = c.spec
            present = has[..., c.present : c.present + 1]
            if c.group == "num":
                x = tf.cast(raw["num"][..., c.start : c.start + c.width], tf.float32)
                if prop.kind != "required":
                    x = tf.where(present, x, float(prop.default))
                if getattr(prop, "standardize", False):
                    x = (x - prop.mean) / prop.std
            elif c.group == "time":
                x = tf.cast(raw["time"][..., c.start : c.start + 1], tf.float64)
                x = tf.where(present, x, float(prop.default))
                if prop.standardize:
                    x = (x - prop.mean) / prop.std
                x = tf.cast(x, tf.float32)
            elif c.group == "cat":
                ids = self._ids(c, raw["cat"][..., c.start])
                ids = tf.where(present[..., 0], ids, self.missing_ids[c.layer])
                x = self.embeddings[c.layer](ids)
            else:
                x = self._bag(c, raw["bag"], lead)
            out.append(x)
            if getattr(prop, "missing_indicator", False):
                out.append(1.0 - tf.cast(present, tf.float32))
        return tf.concat(out, axis=-1)

    def section_names(self, hop: int, label: str) -> list[str]:
        """The raw sections this label's table of hop ``hop`` has, in blob order."""
        names = []
        for group in self.groups:
            names.append(layout.typed_raw_name(group, hop, label))
            if group == "bag":
                names.append(bag_splits_name(hop, label))
        return names

    def section_shapes(
        self, hop: int, label: str, slots: int, batch: int | None = None
    ) -> dict[str, tuple[int | None, ...]]:
        """Shape per dense raw section (ragged ``bag`` sections are left out)."""
        return {
            layout.typed_raw_name(g, hop, label): (batch, slots, self.group_widths[g])
            for g in self.groups
            if g != "bag"
        }


def raw_inputs(
    encoder: LabelEncoder,
    inputs: Mapping[str, Any],
    hop: int,
    label: str,
    name_of: Callable[[str], str] | None = None,
) -> dict:
    """``encoder``'s raw dict from the model inputs of table ``(hop, label)``: the dense sections
    as they are; ``bag`` either given as a ``tf.RaggedTensor`` ``[n, s, Wb, None]`` or rebuilt
    from its flat values and ``.row_splits`` (one row per ``[n, s, Wb]`` cell, row-major).
    ``name_of(group)`` names the sections (default :func:`memgraph_tf.layout.typed_raw_name` of
    the table; the edge columns' :func:`memgraph_tf.layout.typed_edge_name`).
    :class:`ConfigurationError` naming the missing sections."""
    if name_of is None:
        name_of = functools.partial(_raw_name, hop=hop, label=label)
    names = _section_names(encoder, name_of)
    missing = [n for n in names if n not in inputs and not n.endswith(".row_splits")]
    if missing:
        raise ConfigurationError(f"inputs: missing {', '.join(missing)}")
    raw = {g: inputs[name_of(g)] for g in encoder.groups}
    if "bag" in raw and not isinstance(raw["bag"], tf.RaggedTensor):
        splits_name = layout.row_splits_name(name_of("bag"))
        if splits_name not in inputs:
            raise ConfigurationError(f"inputs: missing {splits_name}")
        flat = tf.RaggedTensor.from_row_splits(
            tf.convert_to_tensor(raw["bag"], tf.string),
            tf.cast(inputs[splits_name], tf.int64),
            validate=False,
        )
        shape = tf.shape(raw["has"], out_type=tf.int64)
        cells = tf.RaggedTensor.from_uniform_row_length(flat, encoder.group_widths["bag"])
        raw["bag"] = tf.RaggedTensor.from_uniform_row_length(cells, shape[1])
    return raw


def _raw_name(group: str, hop: int, label: str) -> str:
    return layout.typed_raw_name(group, hop, label)


def _section_names(encoder: LabelEncoder, name_of: Callable[[str], str]) -> list[str]:
    names = []
    for group in encoder.groups:
        names.append(name_of(group))
        if group == "bag":
            names.append(layout.row_splits_name(name_of(group)))
    return names


def edge_step(pattern: Any, steps: Sequence[EdgeStep], whose: str = "") -> EdgeStep:
    """The step of ``steps`` that ``pattern`` (an edge pattern or
    :class:`~memgraph_tf.typed_sampling.EdgeStep`, a key of an ``edge_feature_spec``) names.
    :class:`ConfigurationError` naming the pattern for a malformed one or one not among
    ``steps`` (``whose``: what the message adds to "the steps", e.g. ``" of either endpoint"``)."""
    try:
        step = pattern if isinstance(pattern, EdgeStep) else EdgeStep.parse(pattern)
    except ValueError as exc:
        raise ConfigurationError(f"edge_feature_spec: {exc}") from None
    if step not in steps:
        raise ConfigurationError(
            f"edge_feature_spec[{str(pattern)!r}]: expected one of the steps{whose} "
            f"({', '.join(map(str, steps))}), got {step}"
        )
    return step


def edge_encoders(
    edge_feature_spec: Mapping[Any, Any] | None, spec: TypedSamplingSpec, embedding_dim: int = 8
) -> dict[str, LabelEncoder]:
    """A :class:`LabelEncoder` per edge step of ``edge_feature_spec`` (edge pattern or
    :class:`~memgraph_tf.typed_sampling.EdgeStep` -> the ``LabelSpec`` of its relationship
    properties, or its ``to_dict()`` form, labelled with the relationship type), keyed by the
    step's pattern (``str(step)``: string keys, as a model's tracked dicts need), named
    ``edge_encoder_{i}`` (``i``: the step's index in ``spec``). :class:`ConfigurationError` naming
    the pattern for a pattern that is not a step of ``spec``, a spec of another relationship type
    or one with a ``required`` property; the spec's own error for a malformed one."""
    out: dict[str, LabelEncoder] = {}
    steps = list(spec.steps)
    for pattern, raw in (edge_feature_spec or {}).items():
        step = edge_step(pattern, steps)
        label_spec = _as_spec(raw)
        if label_spec.label != step.rel_type:
            raise ConfigurationError(
                f"edge_feature_spec[{str(pattern)!r}]: expected the spec of relationship type "
                f"{step.rel_type!r}, got label {label_spec.label!r}"
            )
        if any(p.kind == "required" for p in label_spec.properties):
            raise ConfigurationError(
                f"edge_feature_spec[{str(pattern)!r}]: expected no 'required' property (a "
                "relationship property may be missing: use 'numeric')"
            )
        out[str(step)] = LabelEncoder(
            label_spec, embedding_dim=embedding_dim, name=f"edge_encoder_{steps.index(step)}"
        )
    return out


def edge_section_names(encoder: LabelEncoder, hop: int, index: int) -> list[str]:
    """The edge sections of step ``index``'s group at hop ``hop``, in blob order."""
    return _section_names(encoder, functools.partial(layout.typed_edge_name, hop=hop, step=index))


def edge_features(encoder: LabelEncoder, inputs: Mapping[str, Any], hop: int, index: int) -> Any:
    """The float32 edge features ``[n, g, output_width]`` of step ``index``'s group at hop
    ``hop`` from its edge sections in ``inputs`` (:func:`raw_inputs`)."""
    name_of = functools.partial(layout.typed_edge_name, hop=hop, step=index)
    return encoder(raw_inputs(encoder, inputs, hop, "", name_of=name_of))


def edge_spec_option(encoders: Mapping[str, LabelEncoder]) -> dict[str, Any]:
    """``options.edge_feature_spec`` of edge encoders (:func:`edge_encoders`): edge pattern ->
    ``LabelSpec.to_dict()``."""
    return {pattern: enc.spec.to_dict() for pattern, enc in encoders.items()}


def edge_raw_widths(encoders: Mapping[str, LabelEncoder]) -> dict[EdgeStep, Any]:
    """Per step of the edge encoders (:func:`edge_encoders`), the
    :class:`memgraph_tf.layout.RawWidths` of its spec (what
    :func:`memgraph_tf.layout.typed_sample_sections` takes as ``edges``)."""
    return {EdgeStep.parse(p): layout.raw_widths(enc.spec) for p, enc in encoders.items()}


def label_features(encoder: LabelEncoder, inputs: Mapping[str, Any], hop: int, label: str) -> Any:
    """The float32 features ``[n, s, output_width]`` of table ``(hop, label)`` from its raw
    sections in ``inputs`` (:func:`raw_inputs`)."""
    return encoder(raw_inputs(encoder, inputs, hop, label))


def raw_section_names(encoders: Mapping[str, LabelEncoder], hop: int, label: str) -> list[str]:
    """The raw sections of table ``(hop, label)`` (none for a label without an encoder)."""
    enc = encoders.get(label)
    return [] if enc is None else enc.section_names(hop, label)


def label_encoders(
    feature_spec: Mapping[str, Any] | None,
    labels: Sequence[str],
    embedding_dim: int = 8,
    required_widths: Mapping[str, Mapping[str, int]] | None = None,
) -> dict[str, LabelEncoder]:
    """A :class:`LabelEncoder` per label of ``feature_spec`` (label -> ``LabelSpec`` or its
    ``to_dict()`` form). :class:`ConfigurationError` naming the label for a label outside
    ``labels`` or a spec whose label differs from its key; the spec's own
    :class:`~memgraph_tf.feature_spec.FeatureSpecError` for a malformed one."""
    out: dict[str, LabelEncoder] = {}
    for label, spec in as_label_specs(feature_spec).items():
        if label not in labels:
            raise ConfigurationError(
                f"feature_spec: label {label!r} has no slots in the sampled neighbourhood "
                f"(labels: {', '.join(labels)})"
            )
        key = "".join(c if c.isalnum() else "_" for c in label)
        out[label] = LabelEncoder(
            spec,
            embedding_dim=embedding_dim,
            required_widths=(required_widths or {}).get(label),
            name=f"encoder_{key}",
        )
    return out


def encoders_config(
    encoders: Mapping[str, LabelEncoder],
    embedding_dim: int,
    edge_encoders: Mapping[str, LabelEncoder] | None = None,
) -> dict[str, Any]:
    """The model-config entries :func:`label_encoders` rebuilds ``encoders`` from (plain JSON):
    ``feature_spec``, ``embedding_dim``, ``required_widths``; with ``edge_encoders``
    (:func:`edge_encoders`) also ``edge_feature_spec`` (:func:`edge_spec_option`)."""
    config = {
        "feature_spec": {label: enc.spec.to_dict() for label, enc in encoders.items()} or None,
        "embedding_dim": embedding_dim,
        "required_widths": {label: dict(enc.required_widths) for label, enc in encoders.items()}
        or None,
    }
    if edge_encoders:
        config["edge_feature_spec"] = edge_spec_option(edge_encoders)
    return config


def as_label_specs(feature_spec: Mapping[str, Any] | None) -> dict[str, LabelSpec]:
    """``feature_spec`` (label -> ``LabelSpec`` or its ``to_dict()`` form) as validated specs;
    :class:`ConfigurationError` naming the label whose spec names another."""
    out: dict[str, LabelSpec] = {}
    for label, spec in (feature_spec or {}).items():
        spec = _as_spec(spec)
        if spec.label != label:
            raise ConfigurationError(
                f"feature_spec[{label!r}]: expected the spec of label {label!r}, got label "
                f"{spec.label!r}"
            )
        out[str(label)] = spec
    return out


def split_properties(
    specs: Mapping[str, LabelSpec],
    properties: Mapping[str, Sequence[str]],
    *,
    explicit: bool,
) -> tuple[dict[str, LabelSpec], dict[str, list[str]]]:
    """The specs that need an encoder and the ``properties`` the blobs carry as
    ``features_*``: a spec of ``required`` properties alone is ``properties[label] = names`` (the
    same blob); the other spec labels leave ``properties``. With ``explicit`` (``properties``
    given per label) a label in both raises :class:`ConfigurationError` naming it and both
    arguments; otherwise (one list for every label) the spec wins."""
    props = {label: list(names) for label, names in properties.items()}
    encoded: dict[str, LabelSpec] = {}
    for label, spec in specs.items():
        if label in props and explicit and props[label]:
            raise ConfigurationError(
                f"label {label!r} is in both properties and feature_spec: give its columns once"
            )
        props.pop(label, None)
        if all(p.kind == "required" for p in spec.properties):
            props[label] = [p.name for p in spec.properties]
        else:
            encoded[label] = spec
    return encoded, props


def required_names(specs: Mapping[str, LabelSpec]) -> dict[str, list[str]]:
    """Per encoded label, its ``required`` properties (whose widths ``tf_features.schema``
    reports)."""
    return {
        label: [p.name for p in spec.properties if p.kind == "required"]
        for label, spec in specs.items()
    }


def required_widths_of(schema: Mapping[str, Any], specs: Mapping[str, LabelSpec]) -> dict:
    """label -> required property -> width, from a ``tf_features.schema`` answer."""
    wanted = required_names(specs)
    out: dict[str, dict[str, int]] = {}
    for entry in schema.get("labels", []):
        names = wanted.get(entry["label"])
        if names:
            out[entry["label"]] = {
                p["name"]: int(p["width"]) for p in entry["properties"] if p["name"] in names
            }
    return out


def spec_option(encoders: Mapping[str, LabelEncoder]) -> dict[str, Any]:
    """``options.feature_spec`` of the encoders' labels: label -> ``LabelSpec.to_dict()``."""
    return {label: enc.spec.to_dict() for label, enc in encoders.items()}


def with_spec_option(
    options: Mapping[str, Any] | None, encoders: Mapping[str, LabelEncoder]
) -> dict[str, Any]:
    """``options`` with ``feature_spec`` set to the encoders' specs (unchanged without
    encoders); :class:`ConfigurationError` when ``options`` holds another one."""
    opts = dict(options or {})
    if not encoders:
        return opts
    want = spec_option(encoders)
    given = opts.get("feature_spec")
    if given is not None and given != want:
        raise ConfigurationError(
            "options.feature_spec: expected the model's feature specs (or none), got "
            f"labels {sorted(given)}"
        )
    opts["feature_spec"] = want
    return opts


def raw_widths(encoders: Mapping[str, LabelEncoder]) -> dict[str, Any]:
    """Per encoded label, its :class:`memgraph_tf.layout.RawWidths` (columns per raw group), as
    :func:`memgraph_tf.layout.raw_widths` gives them for its spec and required widths.
    :class:`ConfigurationError` naming the label if the encoder reads other widths."""
    out = {}
    for label, enc in encoders.items():
        required = {
            p.name: enc.required_widths.get(p.name, 1)
            for p in enc.spec.properties
            if p.kind == "required"
        }
        widths = layout.raw_widths(enc.spec, required)
        if widths != layout.RawWidths(**enc.group_widths):
            raise ConfigurationError(
                f"label {label!r}: the encoder reads raw widths {enc.group_widths}, the blob "
                f"carries {widths._asdict()}"
            )
        out[label] = widths
    return out
