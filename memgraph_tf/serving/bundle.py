"""The bundle contract: what a memgraph-tf SavedModel bundle holds, what each part is called, and
the one place its config and op-library record are read and written.

Standard library only (plus :mod:`memgraph_tf.blob`'s dtype table), so the REST client imports it
without TensorFlow. The layout, each name defined here and nowhere else::

    BASE/NAME/VERSION/                     VERSION: any all-ASCII-digit name; the version is its
                                           integer value (``00000123`` is version 123)
      saved_model.pb, variables/
      assets/LABELS_ASSET                  one class label per line, in score order
      assets/CONFIG_ASSET                  :class:`BundleConfig` as JSON
      assets.extra/WARMUP_FILE             one :classify request TF Serving replays at load time
      assets.extra/memgraph_tf/            OP_LIBRARY_DIR, op bundles only:
        OP_LIBRARY_INFO                    :class:`OpLibraryInfo` as JSON
        <library>.so                       the op library it names

Signatures (names and tensor keys): ``CLASSIFY_SIGNATURE`` (TF Serving's classifier contract:
input ``CLASSIFY_INPUT``, outputs ``CLASSES_OUTPUT`` and ``SCORES_OUTPUT``; method name
``CLASSIFY_METHOD_NAME``), ``PREDICT_SIGNATURE`` (input ``PREDICT_INPUT``: raw blobs) and
``CONFIG_SIGNATURE`` (input ``CONFIG_INPUT``, output ``CONFIG_OUTPUT``: the config JSON text).
``PREDICT_SIGNATURE`` is TF Serving's ``DEFAULT_SIGNATURE`` (the signature a request without a
name runs); ``SIGNATURE_DEF_FIELD`` is the one metadata field TF Serving answers. A node bundle
whose model has an encoder (``encode``: the last hidden layer) also has ``EMBED_SIGNATURE``
(input ``EMBED_INPUT``: raw blobs, output ``EMBEDDINGS_OUTPUT``: DT_FLOAT [batch, D]).

Inference sampling (:func:`inference_sampling`): how every inference path -- ``memgraph-tf serve``'s
``node_id`` examples, ``classify_nodes``, batch inference -- samples a node's neighbourhood with a
bundle's settings; a bundle without ``options.seed`` samples with :data:`DEFAULT_SEED`, so a node
has one answer on every path; :data:`RANDOM_SAMPLING` asks for new draws on every call.

Typed bundles (a :class:`~memgraph_tf.client.typed_graphsage.TypedGraphSAGE` reading
``tf_features.sample_typed`` blobs) carry their sampling settings in the config's ``typed`` key
(:class:`TypedSampling`: seed label, ``num_neighbors`` as ``[edge pattern, [fanout per hop]]``
pairs in the model's step order, properties per label, plus the schema part the model was trained
on; :func:`read_steps` reads that list and format 1's sorted object alike); their ``fanouts``,
``feature_dim`` and ``properties`` are empty (0), and :attr:`SamplingSpec.typed` tells every
inference path to sample with ``sample_typed``. Every inference path samples the steps in that
order: the blob's slot groups and its edge sections ``edge_*_h{h}_s{i}`` (``i``: the step's index)
are the ones the model reads.

Link bundles (a :class:`~memgraph_tf.client.link_prediction.LinkPredictor` reading one
``tf_features.sample_pairs`` blob per pair, :mod:`memgraph_tf.serving.export_links`) carry their
pair sampling settings in the config's ``link`` key (:class:`LinkSampling`: the pair labels,
``num_neighbors`` per role, each role's steps as pairs in the model's order, ``properties`` per
label, plus ``schema``); their ``class_names`` are
:data:`LINK_CLASS_NAMES` and their signatures ``LINK_CLASSIFY_SIGNATURE`` (``serving_default``),
``REGRESS_SIGNATURE``, ``EMBED_SOURCE_SIGNATURE`` / ``EMBED_TARGET_SIGNATURE`` and
``SCORE_EMBEDDINGS_SIGNATURE``; :attr:`SamplingSpec.link` tells the serving paths to sample
pairs with ``sample_pairs`` (:meth:`SamplingSpec.pair_arguments`) and one endpoint with
``sample_typed`` (:meth:`SamplingSpec.role_arguments`). A link bundle with a timed step samples
every pair and node of a call at one time: ``options.at`` when the request names one, else
:data:`NOW_TIME` ("now": no upper time bound, every relationship whatever its time).

Every failure to meet the contract is a :class:`memgraph_tf.errors.BundleError` (also a
ValueError) whose ``key`` names the config key or parameter at fault. Credentials rule: a config
never holds a graph URI, user name or password -- option keys that look like one are refused.
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, field
from typing import Any

from memgraph_tf.blob import DTYPES
from memgraph_tf.errors import BundleError

logger = logging.getLogger(__name__)

# ----------------------------------------------------------------------------------------- names
BUNDLE_FORMAT = "memgraph-tf-bundle"
#: The newest config format this code reads. A config is written in the oldest format that holds
#: it (:attr:`BundleConfig.format_version`): this one for a typed or link config, 1 for a
#: homogeneous one (nothing in it differs between the two), so an older release reads it.
BUNDLE_FORMAT_VERSION = 2
#: The first config format whose ``num_neighbors`` (``typed``'s, and ``link``'s per role) is a
#: list of ``[edge pattern, [fanout per hop]]`` pairs in the model's step order. Format 1 has a
#: JSON object there, in pattern order (the config's JSON sorts keys); it is read too.
STEP_LIST_FORMAT_VERSION = 2

ASSETS_DIR = "assets"
ASSETS_EXTRA_DIR = "assets.extra"
CONFIG_ASSET = "memgraph_tf_bundle.json"
LABELS_ASSET = "class_labels.txt"
#: TF Serving's name for the warmup record file, under ``assets.extra/``.
WARMUP_FILE = "tf_serving_warmup_requests"
#: The op library folder, relative to a version directory.
OP_LIBRARY_DIR = (ASSETS_EXTRA_DIR, "memgraph_tf")
OP_LIBRARY_INFO = "op_library.json"
OP_NAMES = ("MemgraphTf>UnpackBlob",)

#: TF Serving's default signature name (a request that names none runs it): TensorFlow's
#: ``kDefaultServingSignatureDefKey`` (``tensorflow/cc/saved_model/signature_constants.h``).
DEFAULT_SIGNATURE = "serving_default"
#: The only ``GetModelMetadataRequest.metadata_field`` TF Serving supports, and the key of the
#: ``SignatureDefMap`` in its metadata answers (REST and gRPC).
SIGNATURE_DEF_FIELD = "signature_def"
CLASSIFY_SIGNATURE = "classify"
PREDICT_SIGNATURE = DEFAULT_SIGNATURE
CONFIG_SIGNATURE = "memgraph_tf_config"
CLASSIFY_METHOD_NAME = "tensorflow/serving/classify"
#: TF Serving's classifier tensor keys (servables/tensorflow/classifier.cc).
CLASSIFY_INPUT = "inputs"
CLASSES_OUTPUT = "classes"
SCORES_OUTPUT = "scores"
PREDICT_INPUT = "blobs"
CLASS_IDS_OUTPUT = "class_ids"
CONFIG_INPUT = "unused"
CONFIG_OUTPUT = "config_json"
#: The tf.Example feature that holds a node's blob (docs/blob-format.md, section 6).
DEFAULT_BLOB_FEATURE_KEY = "blob"

# Link bundles (memgraph_tf.serving.export_links): a LinkPredictor reading one
# tf_features.sample_pairs blob (n = 1) per tf.Example, in the blob feature above.
#: A link bundle's class labels in score order: ``scores[:, 0]`` = P(link), ``[:, 1]`` = 1 - P.
LINK_CLASS_NAMES = ("link", "no link")
#: A link bundle's classify signature is TF Serving's default one (a :classify request that
#: names no signature runs it, on stock TF Serving too): inputs ``CLASSIFY_INPUT``, outputs
#: ``CLASSES_OUTPUT`` / ``SCORES_OUTPUT`` [batch, 2] in ``LINK_CLASS_NAMES`` order.
LINK_CLASSIFY_SIGNATURE = DEFAULT_SIGNATURE
#: TF Serving's regression contract (servables/tensorflow/regressor.cc, GetRegressionSignatureDef
#: and PreProcessRegression: method name checked always, exactly one input ``inputs`` and one
#: output ``outputs``, DT_FLOAT [batch] or [batch, 1]): ``outputs`` = P(link) [batch].
REGRESS_SIGNATURE = "regress"
REGRESS_METHOD_NAME = "tensorflow/serving/regress"
REGRESS_INPUT = "inputs"
REGRESS_OUTPUT = "outputs"
#: Predict signatures for batch scoring: a node's typed blob (``tf_features.sample_typed`` of the
#: role's seed label, one node per blob) in ``EMBED_INPUT`` (DT_STRING [batch]) ->
#: ``EMBEDDINGS_OUTPUT`` (DT_FLOAT [batch, D]).
EMBED_SOURCE_SIGNATURE = "embed_source"
EMBED_TARGET_SIGNATURE = "embed_target"
EMBED_INPUT = "blobs"
EMBEDDINGS_OUTPUT = "embeddings"
#: The input a ``:predict`` request of an embed signature names nodes by in place of
#: ``EMBED_INPUT`` (``{"inputs": {"node_id": [...]}}``): the server samples their blobs.
EMBED_NODE_ID_INPUT = "node_id"
#: A node bundle's embeddings: the model's last hidden layer (the classifier's input) for one
#: per-node blob each, ``EMBED_INPUT`` (DT_STRING [batch]) -> ``EMBEDDINGS_OUTPUT`` (DT_FLOAT
#: [batch, D]); only for a model with ``encode``.
EMBED_SIGNATURE = "embed"
#: The signature that embeds each endpoint role of a link bundle (``source`` / ``target``).
EMBED_ROLE_SIGNATURES = {"source": EMBED_SOURCE_SIGNATURE, "target": EMBED_TARGET_SIGNATURE}
#: (``Z_SOURCE_INPUT``, ``Z_TARGET_INPUT``: DT_FLOAT [batch, D]) -> ``REGRESS_OUTPUT`` P(link)
#: and ``LOGITS_OUTPUT`` (DT_FLOAT [batch]).
SCORE_EMBEDDINGS_SIGNATURE = "score_embeddings"
Z_SOURCE_INPUT = "z_source"
Z_TARGET_INPUT = "z_target"
LOGITS_OUTPUT = "logits"

SCORES_KINDS = ("probabilities", "logits")
INT64_MAX = 2**63 - 1
#: The time a link bundle with a timed step samples at when no time is named ("now"): the
#: largest int64, no upper bound, so each timed step walks every relationship the graph holds,
#: whatever its time (``options.pair_times`` of ``sample_pairs``, ``options.at`` of
#: ``sample_typed``; the procedures' times are int64).
NOW_TIME = INT64_MAX
#: The sampling option that names one time for every pair or node of a call (``sample_typed``'s
#: ``options.at``; for ``sample_pairs``, :meth:`SamplingSpec.pair_arguments` turns it into
#: ``options.pair_times``).
AT_OPTION = "at"

_CREDENTIAL_KEY = re.compile(r"(uri|url|host|auth|user|passw|secret|token|credential|key)", re.I)
_MODEL_NAME = re.compile(r"[A-Za-z0-9_.\-]+")
_VERSION_DIR = re.compile(r"[0-9]+")


# ------------------------------------------------------------------------------------ validation
def _fail(key: str | None, expected: str, value: Any, where: str | None = None) -> BundleError:
    return BundleError(f"{where or key}: expected {expected}, got {_show(value)}", key=key)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "..."


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_plain_json(value: Any, where: str) -> None:
    """Raise :class:`BundleError` (``key`` = the top-level name in ``where``) unless ``value`` is
    plain JSON (str, int, float, bool, None, lists, string-keyed dicts) with no key that looks like
    a connection setting or credential (uri, host, user, password, token, ...). Guarantees that
    what passes can go into a bundle without carrying a graph URI, user name or password."""
    top = where.split(".", 1)[0].split("[", 1)[0]
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise BundleError(f"{where}: expected string keys, got {k!r}", key=top)
            if _CREDENTIAL_KEY.search(k):
                raise BundleError(
                    f"{where}: key {k!r} looks like a connection setting or credential; a bundle "
                    f"must never hold the graph URI, user name or password",
                    key=top,
                )
            check_plain_json(v, f"{where}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            check_plain_json(v, f"{where}[{i}]")
    elif not (value is None or isinstance(value, (str, int, float, bool))):
        raise BundleError(
            f"{where}: expected JSON values (str, int, float, bool, None, lists, "
            f"dicts), got {type(value).__name__}",
            key=top,
        )


def check_fanouts(value: Any, key: str = "fanouts") -> tuple[int, ...]:
    """``value`` as a tuple when it is a non-empty list of ints >= 1 (one per hop), else
    :class:`BundleError` naming ``key``."""
    return _int_list(key, value, 1, non_empty=True)


def _int_list(key: str, value: Any, minimum: int, *, non_empty: bool) -> tuple[int, ...]:
    if (
        not isinstance(value, (list, tuple))
        or (non_empty and not value)
        or not all(_is_int(v) and v >= minimum for v in value)
    ):
        raise _fail(key, f"a {'non-empty ' if non_empty else ''}list of ints >= {minimum}", value)
    return tuple(value)


def _str_list(key: str, value: Any, *, unique: bool = False) -> tuple[str, ...]:
    if (
        not isinstance(value, (list, tuple))
        or not value
        or not all(isinstance(v, str) and v for v in value)
    ):
        raise _fail(key, "a non-empty list of non-empty strings", value)
    if unique and len(set(value)) != len(value):
        raise _fail(key, "unique strings", value)
    return tuple(value)


def _label_properties(
    key: str, value: Any, labels: Sequence[str], sampled: str
) -> dict[str, tuple[str, ...]]:
    """``value`` as a config's ``KEY.properties`` (``typed`` or ``link``): an object of label ->
    a non-empty list of property names, each label one of ``labels`` (those with slots in the
    sampled ``sampled``, listed in that order in the message). A bad value raises BundleError
    naming ``KEY.properties`` (or the label's entry)."""
    if not isinstance(value, Mapping):
        raise _fail(f"{key}.properties", "an object {label: [property names]}", value)
    props = {}
    for label, names in value.items():
        if label not in labels:
            raise BundleError(
                f"{key}.properties: label {label!r} has no slots in the sampled "
                f"{sampled} (labels: {', '.join(labels)})",
                key=key,
            )
        props[label] = _str_list(f"{key}.properties.{label}", names)
    return props


def _sampling_settings(key: str, value: Any, kind: Any, allowed: Sequence[str]) -> dict[str, Any]:
    """A config's ``typed`` or ``link`` object (``key``) checked and normalised: an object of only
    the ``allowed`` keys (the first unknown one, in sorted order, is named; ``allowed`` listed in
    the given order), read by ``kind.from_mapping`` (:class:`TypedSampling` or
    :class:`LinkSampling`), plus its ``schema``, plain JSON, where given. A bad value raises
    BundleError naming ``KEY`` or ``KEY.<key>``."""
    if not isinstance(value, Mapping):
        raise _fail(key, "an object", value)
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise BundleError(
            f"{key}.{unknown[0]}: unknown key (expected {', '.join(allowed)})", key=key
        )
    settings = kind.from_mapping(value).to_dict()
    schema = value.get("schema")
    if schema is not None:
        check_plain_json(schema, f"{key}.schema")
        settings["schema"] = json.loads(json.dumps(schema))
    return settings


def _options(key: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(key, "a JSON object of sampling options", value)
    check_plain_json(value, key)
    return json.loads(json.dumps(dict(value)))  # a detached deep copy


def read_steps(where: str, value: Any, key: str) -> dict[str, Any]:
    """One neighbourhood's ``num_neighbors`` as a config holds it (``where`` names it in errors,
    ``key`` is the error's key): a list of ``[edge pattern, [fanout per hop]]`` pairs (what a
    bundle writes from format :data:`STEP_LIST_FORMAT_VERSION` on: the model's step order, the
    sorted order of the patterns), or an object ``{edge pattern: [fanout per hop]}`` (format 1;
    its JSON sorted it). Returns ``{pattern: fanouts}`` in that order, the order the bundle
    samples its steps in. A value of another shape, a malformed pair, a pattern listed twice or
    a list out of the patterns' sorted order is a :class:`BundleError` naming ``where`` (and the
    pair's index); patterns and fanouts themselves are checked by the
    :class:`~memgraph_tf.typed_sampling.TypedSamplingSpec` built from them."""
    if isinstance(value, Mapping):
        return dict(value)
    if not isinstance(value, (list, tuple)):
        raise BundleError(
            f"{where}: expected a list of [edge pattern, [fanout per hop]] pairs, got "
            f"{_show(value)}",
            key=key,
        )
    steps: dict[str, Any] = {}
    for i, pair in enumerate(value):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not isinstance(pair[0], str):
            raise BundleError(
                f"{where}[{i}]: expected an [edge pattern, [fanout per hop]] pair, got "
                f"{_show(pair)}",
                key=key,
            )
        if pair[0] in steps:
            raise BundleError(f"{where}[{i}]: edge pattern {pair[0]!r} is listed twice", key=key)
        steps[pair[0]] = pair[1]
    _check_step_order(where, list(steps), key)
    return steps


def _check_step_order(where: str, patterns: list[str], key: str) -> None:
    """A :class:`BundleError` naming ``where`` when a config's step list is not in the sorted
    order of its patterns, the order every model and sampler numbers its steps in
    (:class:`~memgraph_tf.typed_sampling.TypedSamplingSpec`): a model that numbered them in the
    list's order would read one step's slots as another's. Malformed patterns are left to the
    spec."""
    from memgraph_tf.typed_sampling import EdgeStep

    try:
        canonical = [str(EdgeStep.parse(p)) for p in patterns]
    except ValueError:
        return
    if canonical != sorted(canonical):
        raise BundleError(
            f"{where}: the steps {patterns} are not in the sorted order of their patterns, the "
            "order models number their steps in and the procedures sample them in; export the "
            "bundle again from a model built with the same num_neighbors",
            key=key,
        )


def step_pairs(num_neighbors: Mapping[str, Sequence[int]]) -> list[list[Any]]:
    """``{pattern: fanouts}`` as the list of ``[pattern, [fanout per hop]]`` pairs a config
    writes: the mapping's order kept (a JSON object's keys have no order, and the config's JSON
    sorts them)."""
    return [[str(k), list(v)] for k, v in num_neighbors.items()]


# -------------------------------------------------------------------------------------- sampling
@dataclass(frozen=True)
class TypedSampling:
    """The typed sampling settings of a typed bundle: ``tf_features.sample_typed``'s
    ``num_neighbors`` (edge pattern -> fanout per hop, in the model's step order; given as a
    mapping or as :func:`read_steps` reads a config's) from seeds of ``seed_label``, and
    ``properties`` (label -> feature property names; a label left out has no features).
    Validated on construction by :class:`memgraph_tf.typed_sampling.TypedSamplingSpec` (a bad
    pattern or fanout is a :class:`BundleError` naming it), properties plain names of labels with
    slots."""

    seed_label: str
    num_neighbors: Mapping[str, tuple[int, ...]]
    properties: Mapping[str, tuple[str, ...]]

    def __post_init__(self) -> None:
        from memgraph_tf.typed_sampling import TypedSamplingSpec

        nn = read_steps("typed.num_neighbors", self.num_neighbors, "typed")
        try:
            spec = TypedSamplingSpec.from_num_neighbors(self.seed_label, nn)
        except (ValueError, TypeError) as exc:
            raise BundleError(f"typed: {exc}", key="typed") from None
        props = _label_properties("typed", self.properties, spec.labels(), "neighbourhood")
        object.__setattr__(self, "num_neighbors", spec.num_neighbors())
        object.__setattr__(self, "properties", props)

    @classmethod
    def from_mapping(cls, value: Any) -> TypedSampling:
        """From a config's ``typed`` object (keys ``seed_label``, ``num_neighbors``,
        ``properties``; others, such as ``schema``, ignored)."""
        if not isinstance(value, Mapping):
            raise _fail("typed", "an object with seed_label, num_neighbors and properties", value)
        missing = [k for k in ("seed_label", "num_neighbors", "properties") if k not in value]
        if missing:
            raise BundleError(f"typed: missing keys {missing}", key="typed")
        return cls(value["seed_label"], value["num_neighbors"], value["properties"])

    def to_dict(self) -> dict[str, Any]:
        return {
            "seed_label": self.seed_label,
            "num_neighbors": {k: list(v) for k, v in self.num_neighbors.items()},
            "properties": {k: list(v) for k, v in self.properties.items()},
        }


#: The roles of a link bundle's pair, as ``num_neighbors`` keys (``tf_features.sample_pairs``).
LINK_ROLES = ("source", "target")


@dataclass(frozen=True)
class LinkSampling:
    """The pair sampling settings of a link bundle: ``tf_features.sample_pairs``'
    ``num_neighbors`` per role (``{"source": {pattern: fanouts}, "target": {...}}``, each role's
    steps in the model's order, given as a mapping or as :func:`read_steps` reads a config's; each
    validated by :class:`memgraph_tf.typed_sampling.TypedSamplingSpec` seeded at that role's
    label), the pair labels, and ``properties`` (label -> feature property names, labels with
    slots in either neighbourhood). A bad value is a :class:`BundleError` naming ``link.<key>``."""

    source_label: str
    target_label: str
    num_neighbors: Mapping[str, Mapping[str, tuple[int, ...]]]
    properties: Mapping[str, tuple[str, ...]]

    def __post_init__(self) -> None:
        from memgraph_tf.typed_sampling import TypedSamplingSpec

        nn = self.num_neighbors
        if not isinstance(nn, Mapping) or set(nn) != set(LINK_ROLES):
            raise _fail(
                "link.num_neighbors",
                "an object {source: [[edge pattern, [fanout per hop]], ...], target: [...]}",
                nn,
            )
        labels: set[str] = set()
        fixed = {}
        for role, label in zip(LINK_ROLES, (self.source_label, self.target_label)):
            if not isinstance(label, str) or not label:
                raise _fail(f"link.{role}_label", "a label name", label)
            steps = read_steps(f"link.num_neighbors.{role}", nn[role], "link")
            try:
                spec = TypedSamplingSpec.from_num_neighbors(label, steps)
            except (ValueError, TypeError) as exc:
                raise BundleError(f"link.num_neighbors.{role}: {exc}", key="link") from None
            fixed[role] = spec.num_neighbors()
            labels.update(spec.labels())
        props = _label_properties("link", self.properties, sorted(labels), "neighbourhoods")
        object.__setattr__(self, "num_neighbors", fixed)
        object.__setattr__(self, "properties", props)

    @classmethod
    def from_mapping(cls, value: Any) -> LinkSampling:
        """From a config's ``link`` object (keys ``source_label``, ``target_label``,
        ``num_neighbors``, ``properties``; others, such as ``schema``, ignored)."""
        keys = ("source_label", "target_label", "num_neighbors", "properties")
        if not isinstance(value, Mapping):
            raise _fail("link", f"an object with {', '.join(keys)}", value)
        missing = [k for k in keys if k not in value]
        if missing:
            raise BundleError(f"link: missing keys {missing}", key="link")
        return cls(*(value[k] for k in keys))

    def to_dict(self) -> dict[str, Any]:
        return {
            "source_label": self.source_label,
            "target_label": self.target_label,
            "num_neighbors": {
                role: {k: list(v) for k, v in self.num_neighbors[role].items()}
                for role in LINK_ROLES
            },
            "properties": {k: list(v) for k, v in self.properties.items()},
        }

    def role(self, role: str) -> tuple[str, dict[str, list[int]], dict[str, list[str]]]:
        """``(seed label, num_neighbors, properties)`` of one role's ``sample_typed`` call
        (``properties`` only the labels of that role's neighbourhood)."""
        from memgraph_tf.typed_sampling import TypedSamplingSpec

        if role not in LINK_ROLES:
            raise BundleError(f"role: expected one of {list(LINK_ROLES)}, got {role!r}", key="role")
        label = self.source_label if role == "source" else self.target_label
        data = self.to_dict()
        nn = data["num_neighbors"][role]
        labels = TypedSamplingSpec.from_num_neighbors(label, nn).labels()
        return label, nn, {k: v for k, v in data["properties"].items() if k in labels}

    def timed_roles(self) -> tuple[str, ...]:
        """The roles (of :data:`LINK_ROLES`) whose neighbourhood has a step with a time
        (``{time: ts}``): empty for a link bundle that samples no time."""
        return tuple(role for role in LINK_ROLES if has_timed_step(*self.role(role)[:2]))


def has_timed_step(label: str, num_neighbors: Mapping[str, Any]) -> bool:
    """Whether the typed spec ``num_neighbors`` seeded at ``label`` has a step with a time."""
    from memgraph_tf.typed_sampling import TypedSamplingSpec

    spec = TypedSamplingSpec.from_num_neighbors(
        label, {k: list(v) for k, v in num_neighbors.items()}
    )
    return any(step.time is not None for step in spec.steps)


def _untimed_at(at: Any) -> BundleError:
    return BundleError(
        f"options.at: expected none, the link bundle's neighbourhoods have no timed step (got "
        f"at {at!r})",
        key="at",
    )


def role_time_options(
    label: str,
    num_neighbors: Mapping[str, Any],
    options: Mapping[str, Any],
    at: Any = None,
    *,
    link_timed: bool,
) -> dict[str, Any]:
    """``options`` for one link role's ``sample_typed`` call (seed label ``label``, steps
    ``num_neighbors``) with the time settled: for a spec with a timed step ``options.at`` =
    ``at``, else the options' own ``at``, else :data:`NOW_TIME`; for a spec without one no
    ``at`` (the other role's time; ``sample_typed`` refuses ``at`` without a timed step).
    ``link_timed`` says whether either role of the link has a timed step: without one a time
    (``at`` or ``options.at``) is refused with a :class:`BundleError` naming ``options.at``,
    never dropped."""
    out = dict(options)
    given = out.pop(AT_OPTION, None)
    if not link_timed and (at is not None or given is not None):
        raise _untimed_at(at if at is not None else given)
    if has_timed_step(label, num_neighbors):
        out[AT_OPTION] = at if at is not None else given if given is not None else NOW_TIME
    return out


@dataclass(frozen=True)
class SamplingSpec:
    """How one node's neighbourhood blob is built: the arguments of
    ``sample_blobs_per_node(ids, fanouts, properties, options)``, or, with ``typed`` (a typed
    bundle), of ``sample_typed(ids, typed.num_neighbors, typed.properties, options +
    {label: typed.seed_label})`` (then ``fanouts`` and ``properties`` are empty). Validated on
    construction: ``fanouts`` a non-empty list of ints >= 1 and ``properties`` a non-empty list
    of names (both empty with ``typed``), ``options`` plain JSON without credential-like keys."""

    fanouts: tuple[int, ...]
    properties: tuple[str, ...]
    options: Mapping[str, Any] = field(default_factory=dict)
    typed: TypedSampling | None = None
    link: LinkSampling | None = None

    def __post_init__(self) -> None:
        if self.link is not None:
            if not isinstance(self.link, LinkSampling):
                object.__setattr__(self, "link", LinkSampling.from_mapping(self.link))
            if self.typed is not None:
                raise BundleError("typed: expected none in link sampling settings", key="typed")
            _typed_empty(self.fanouts, self.properties)
            object.__setattr__(self, "fanouts", ())
            object.__setattr__(self, "properties", ())
        elif self.typed is None:
            object.__setattr__(self, "fanouts", check_fanouts(self.fanouts))
            object.__setattr__(self, "properties", _str_list("properties", self.properties))
        else:
            if not isinstance(self.typed, TypedSampling):
                object.__setattr__(self, "typed", TypedSampling.from_mapping(self.typed))
            _typed_empty(self.fanouts, self.properties)
            object.__setattr__(self, "fanouts", ())
            object.__setattr__(self, "properties", ())
        object.__setattr__(self, "options", _options("options", self.options))

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any], where: str = "sampling") -> SamplingSpec:
        """The spec in ``mapping``'s keys ``fanouts``, ``properties`` (required) and ``options``
        (optional); other keys are ignored, so a whole bundle config dict works too. Raises
        :class:`BundleError` naming missing keys or the bad one."""
        if not isinstance(mapping, Mapping):
            raise BundleError(
                f"{where}: expected a mapping with keys fanouts and properties, got "
                f"{type(mapping).__name__}",
                key=where,
            )
        missing = [k for k in ("fanouts", "properties") if k not in mapping]
        if missing:
            raise BundleError(
                f"{where}: missing keys {missing}; expected fanouts and properties", key=missing[0]
            )
        return cls(
            mapping["fanouts"],
            mapping["properties"],
            mapping.get("options") or {},
            mapping.get("typed"),
            mapping.get("link"),
        )

    def arguments(self) -> tuple[list[int], list[str], dict[str, Any]]:
        """``(fanouts, properties, options)`` as fresh plain lists and dict, ready for a source."""
        return list(self.fanouts), list(self.properties), json.loads(json.dumps(self.options))

    def typed_arguments(self) -> tuple[dict[str, list[int]], dict[str, list[str]], dict[str, Any]]:
        """``(num_neighbors, properties, options)`` for ``sample_typed`` (``options.label`` the
        seed label), fresh plain values; :class:`BundleError` (key ``typed``) when not typed."""
        if self.typed is None:
            raise BundleError("typed: these sampling settings are not typed", key="typed")
        typed = self.typed.to_dict()
        options = json.loads(json.dumps(self.options))
        options["label"] = self.typed.seed_label
        return typed["num_neighbors"], typed["properties"], options

    def pair_arguments(
        self, count: int | None = None
    ) -> tuple[dict[str, dict[str, list[int]]], dict[str, list[str]], dict[str, Any]]:
        """``(num_neighbors, properties, options)`` for ``sample_pairs`` of ``count`` pairs
        (``options`` with the pair labels), fresh plain values. With a timed step
        (:meth:`LinkSampling.timed_roles`) every pair gets one time, ``options.pair_times`` =
        ``count`` times ``options.at`` (else :data:`NOW_TIME`). :class:`BundleError` (key
        ``link``) when these are not a link bundle's settings; (key ``at``) for ``options.at``
        without a timed step; (key ``count``) for a timed bundle without ``count``."""
        if self.link is None:
            raise BundleError("link: these sampling settings are not a link bundle's", key="link")
        link = self.link.to_dict()
        options = json.loads(json.dumps(self.options))
        options["source_label"] = self.link.source_label
        options["target_label"] = self.link.target_label
        at = options.pop(AT_OPTION, None)
        if self.link.timed_roles():
            if count is None:
                raise BundleError(
                    "count: a link bundle with a timed step gives each pair a time: pass the "
                    "number of pairs",
                    key="count",
                )
            options["pair_times"] = [NOW_TIME if at is None else at] * count
        elif at is not None:
            raise _untimed_at(at)
        return link["num_neighbors"], link["properties"], options

    def role_arguments(
        self, role: str
    ) -> tuple[dict[str, list[int]], dict[str, list[str]], dict[str, Any]]:
        """``(num_neighbors, properties, options)`` for ``sample_typed`` of one endpoint role
        (``source`` / ``target``) of a link bundle: the node's neighbourhood as the pair blob's
        half of that role holds it (the same keyed draws; ``options.label`` the role's label;
        a role with a timed step at ``options.at``, else :data:`NOW_TIME`:
        :func:`role_time_options`)."""
        from memgraph_tf import layout

        if self.link is None:
            raise BundleError("link: these sampling settings are not a link bundle's", key="link")
        label, nn, props = self.link.role(role)
        options = {
            k: v
            for k, v in json.loads(json.dumps(self.options)).items()
            if k in layout.SAMPLE_TYPED_OPTIONS
        }
        options = role_time_options(label, nn, options, link_timed=bool(self.link.timed_roles()))
        options["label"] = label
        if options.get("edge_feature_spec"):  # (sample_typed takes this role's steps only)
            from memgraph_tf.typed_sampling import EdgeStep, TypedSamplingSpec

            steps = TypedSamplingSpec.from_num_neighbors(label, nn).steps
            own = {
                p: s
                for p, s in options.pop("edge_feature_spec").items()
                if EdgeStep.parse(p) in steps
            }
            if own:
                options["edge_feature_spec"] = own
        return nn, props, options

    def role_sampling(self, role: str) -> SamplingSpec:
        """One endpoint role's nodes of a link bundle as typed sampling settings: one
        ``sample_typed`` blob per node with :meth:`role_arguments` (what the ``embed_source`` /
        ``embed_target`` signatures read), for the per-node fetch of the serving and batch
        paths."""
        nn, props, options = self.role_arguments(role)
        label = options.pop("label")
        return SamplingSpec((), (), options, TypedSampling(label, nn, props))


def _typed_empty(fanouts: Any, properties: Any, feature_dim: Any = 0) -> None:
    """A typed config's homogeneous fields must be empty: the ``typed`` key holds the settings."""
    for key, value, empty in (
        ("fanouts", fanouts, ()),
        ("properties", properties, ()),
        ("feature_dim", feature_dim, 0),
    ):
        if (tuple(value) if isinstance(value, (list, tuple)) else value) != empty:
            raise _fail(
                key,
                f"{list(empty) if empty == () else empty} in a typed bundle (its "
                "sampling settings are under 'typed')",
                value,
            )


#: ``options.seed`` a node's neighbourhood is sampled with for inference (``memgraph-tf serve``'s
#: ``node_id`` examples, :func:`~memgraph_tf.serving.client.classify_nodes`, ``memgraph-tf
#: classify``) when the bundle's sampling options hold none. The query modules key each sample by
#: ``(options.seed, node)``, so with a fixed seed a node has one neighbourhood -- one answer --
#: on every path and in every request.
DEFAULT_SEED = 0
#: The seed setting that samples afresh on every request instead (``memgraph-tf serve
#: --sampling-seed random``; the query modules draw a random seed when ``options.seed`` is absent).
RANDOM_SAMPLING = "random"


def inference_sampling(config: BundleConfig, seed: int | str | None = None) -> SamplingSpec:
    """The sampling settings inference uses for a bundle: its fanouts, properties and options
    without ``label_property`` (no labels are needed to classify), with ``options.seed`` =
    ``seed`` (an int), else the bundle's own seed, else :data:`DEFAULT_SEED`; with ``seed`` =
    :data:`RANDOM_SAMPLING`, no seed at all (new neighbourhoods on every call). Raises
    :class:`BundleError` (key ``seed``) for any other ``seed``.

    Guarantees: the serving paths (``memgraph-tf serve --graph``, ``classify_nodes``) and batch
    inference use these settings, so by default a node gets the same neighbourhood -- hence the
    same prediction -- over REST, gRPC and in ``memgraph-tf classify``."""
    if seed is not None and seed != RANDOM_SAMPLING and not _is_int(seed):
        raise _fail("seed", f"an int, None or {RANDOM_SAMPLING!r}", seed)
    options = {k: v for k, v in config.options.items() if k != "label_property"}
    if seed == RANDOM_SAMPLING:
        options.pop("seed", None)
    elif seed is not None:
        options["seed"] = seed
    elif options.get("seed") is None:
        options["seed"] = DEFAULT_SEED
    return SamplingSpec(
        config.fanouts, config.properties, options, config.typed_sampling, config.link_sampling
    )


# ---------------------------------------------------------------------------------------- config
Section = tuple[str, tuple[int, ...]]


def _sections(key: str, value: Any) -> dict[str, Section]:
    if not isinstance(value, Mapping) or not value:
        raise _fail(key, "a non-empty object {name: {dtype, shape}}", value)
    out: dict[str, Section] = {}
    for name, spec in value.items():
        where = f"{key}.{name}"
        if not isinstance(name, str) or not name:
            raise BundleError(f"{key}: expected non-empty section names, got {name!r}", key=key)
        if isinstance(spec, Mapping):
            if set(spec) != {"dtype", "shape"}:
                raise _fail(key, "an object with exactly the keys dtype and shape", spec, where)
            dtype, shape = spec["dtype"], spec["shape"]
        elif isinstance(spec, (list, tuple)) and len(spec) == 2:
            dtype, shape = spec
        else:
            raise _fail(key, "{dtype, shape}", spec, where)
        if dtype not in DTYPES:  # string: a typed blob's raw category sections
            raise BundleError(
                f"{where}.dtype: expected one of {sorted(DTYPES)}, got {_show(dtype)}", key=key
            )
        if not isinstance(shape, (list, tuple)) or not all(_is_int(d) and d >= -1 for d in shape):
            raise BundleError(
                f"{where}.shape: expected a list of ints >= 0, or -1 for a length that "
                f"varies from blob to blob, got {_show(shape)}",
                key=key,
            )
        out[name] = (dtype, tuple(shape))
    return out


@dataclass(frozen=True, kw_only=True)
class BundleConfig:
    """The bundle config (``assets/CONFIG_ASSET`` and the ``CONFIG_SIGNATURE`` output): what a
    client needs to build the model's input, and how the bundle was made. ``options`` are the
    sampling options (``options.layout`` the sample layout the bundle reads); ``sections`` the blob
    sections the model reads, a shape's ``-1`` a length that varies from blob to blob. The JSON
    keys are the field names plus ``format`` (always ``BUNDLE_FORMAT``). ``format_version``
    defaults to the oldest format that holds the config: :data:`STEP_LIST_FORMAT_VERSION` with
    ``typed`` or ``link`` (their step lists), else 1.

    Guarantees: an instance is valid -- every field is checked on construction and a bad one
    raises :class:`BundleError` naming its key; ``from_dict(to_dict())`` gives an equal config;
    ``to_json`` is deterministic (sorted keys) and holds no credential-like option key.
    """

    model_name: str
    version: int
    use_op: bool
    blob_feature_key: str
    class_names: tuple[str, ...]
    fanouts: tuple[int, ...]
    feature_dim: int
    properties: tuple[str, ...]
    options: Mapping[str, Any]
    sections: Mapping[str, Section]
    scores: str
    tensorflow_version: str
    format_version: int | None = None
    typed: Mapping[str, Any] | None = None
    link: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        def put(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        if not isinstance(self.model_name, str) or not _MODEL_NAME.fullmatch(self.model_name):
            raise _fail("model_name", "letters, digits, '_', '.', '-'", self.model_name)
        if not _is_int(self.version) or not 1 <= self.version <= INT64_MAX:
            raise _fail("version", "an int >= 1", self.version)
        if not isinstance(self.use_op, bool):
            raise _fail("use_op", "true or false", self.use_op)
        if not isinstance(self.blob_feature_key, str) or not self.blob_feature_key:
            raise _fail("blob_feature_key", "a non-empty string", self.blob_feature_key)
        put("class_names", _str_list("class_names", self.class_names, unique=True))
        if self.format_version is None:  # the oldest format that holds this config
            stepped = self.typed is not None or self.link is not None
            put("format_version", STEP_LIST_FORMAT_VERSION if stepped else 1)
        if any("\n" in c for c in self.class_names):
            raise _fail("class_names", "labels without newlines", list(self.class_names))
        if self.link is not None:
            self._check_link(put)
        elif self.typed is None:
            put("fanouts", check_fanouts(self.fanouts))
            if not _is_int(self.feature_dim) or self.feature_dim < 1:
                raise _fail("feature_dim", "an int >= 1", self.feature_dim)
            put("properties", _str_list("properties", self.properties))
        else:
            _typed_empty(self.fanouts, self.properties, self.feature_dim)
            put("fanouts", ())
            put("properties", ())
            put(
                "typed",
                _sampling_settings(
                    "typed",
                    self.typed,
                    TypedSampling,
                    ("seed_label", "num_neighbors", "properties", "schema"),
                ),
            )
        put("options", _options("options", self.options))
        put("sections", _sections("sections", self.sections))
        if self.scores not in SCORES_KINDS:
            raise _fail("scores", f"one of {list(SCORES_KINDS)}", self.scores)
        if not isinstance(self.tensorflow_version, str) or not self.tensorflow_version:
            raise _fail("tensorflow_version", "a non-empty string", self.tensorflow_version)
        if (
            not _is_int(self.format_version)
            or not 1 <= self.format_version <= BUNDLE_FORMAT_VERSION
        ):
            raise _fail("format_version", _FORMAT_VERSIONS, self.format_version)

    def _check_link(self, put: Any) -> None:
        """A link bundle's config: ``link`` holds the pair settings (plus ``schema``), the
        homogeneous fields are empty, ``typed`` none, ``class_names`` :data:`LINK_CLASS_NAMES`."""
        _typed_empty(self.fanouts, self.properties, self.feature_dim)
        put("fanouts", ())
        put("properties", ())
        if self.typed is not None:
            raise _fail(
                "typed", "none in a link bundle (its settings are under 'link')", self.typed
            )
        if self.class_names != LINK_CLASS_NAMES:
            raise _fail(
                "class_names", f"{list(LINK_CLASS_NAMES)} in a link bundle", self.class_names
            )
        allowed = ("num_neighbors", "properties", "schema", "source_label", "target_label")
        put("link", _sampling_settings("link", self.link, LinkSampling, allowed))

    @property
    def link_sampling(self) -> LinkSampling | None:
        """A link bundle's :class:`LinkSampling`; None for a node bundle."""
        return None if self.link is None else LinkSampling.from_mapping(self.link)

    @property
    def typed_sampling(self) -> TypedSampling | None:
        """A typed bundle's :class:`TypedSampling`; None for a homogeneous one."""
        return None if self.typed is None else TypedSampling.from_mapping(self.typed)

    @property
    def sampling(self) -> SamplingSpec:
        """The sampling settings the model was trained with."""
        return SamplingSpec(
            self.fanouts, self.properties, self.options, self.typed_sampling, self.link_sampling
        )

    # -- JSON
    def to_dict(self) -> dict[str, Any]:
        """The config as plain JSON values (lists, not tuples); ``typed`` only in a typed
        bundle's, ``link`` only in a link bundle's. Their ``num_neighbors`` (``link``'s per role)
        is the list of ``[edge pattern, [fanout per hop]]`` pairs of :func:`step_pairs`, in the
        model's step order (a config of format 1, read back, keeps the object it had)."""
        out = {
            "format": BUNDLE_FORMAT,
            "format_version": self.format_version,
            "model_name": self.model_name,
            "version": self.version,
            "use_op": self.use_op,
            "blob_feature_key": self.blob_feature_key,
            "class_names": list(self.class_names),
            "fanouts": list(self.fanouts),
            "feature_dim": self.feature_dim,
            "properties": list(self.properties),
            "options": json.loads(json.dumps(self.options)),
            "sections": {
                k: {"dtype": dt, "shape": list(shape)} for k, (dt, shape) in self.sections.items()
            },
            "scores": self.scores,
            "tensorflow_version": self.tensorflow_version,
        }
        if self.typed is not None:
            out["typed"] = json.loads(json.dumps(self.typed))
        if self.link is not None:
            out["link"] = json.loads(json.dumps(self.link))
        if self.format_version >= STEP_LIST_FORMAT_VERSION:  # (format 1: objects, as it wrote)
            if self.typed is not None:
                out["typed"]["num_neighbors"] = step_pairs(self.typed["num_neighbors"])
            if self.link is not None:
                nn = self.link["num_neighbors"]
                out["link"]["num_neighbors"] = {role: step_pairs(nn[role]) for role in LINK_ROLES}
        return out

    def to_json(self) -> str:
        """Deterministic JSON text (indented, sorted keys): what goes into the bundle."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: Any) -> BundleConfig:
        """A validated config from parsed JSON. Raises :class:`BundleError` naming the key for an
        unknown key, a missing one, a wrong ``format``, a newer ``format_version`` or a value of
        the wrong type."""
        if not isinstance(data, Mapping):
            raise BundleError(f"bundle config: expected a JSON object, got {type(data).__name__}")
        keys = _CONFIG_KEYS
        unknown = sorted(k for k in data if k not in keys)
        if unknown:
            raise BundleError(
                f"{unknown[0]}: unknown bundle config key (expected only {sorted(keys)})",
                key=unknown[0],
            )
        if data.get("format") != BUNDLE_FORMAT:
            raise _fail("format", repr(BUNDLE_FORMAT), data.get("format"))
        missing = sorted(k for k in keys if k not in data and k not in ("format", "typed", "link"))
        if missing:
            raise BundleError(
                f"{missing[0]}: missing from the bundle config (missing: {missing})", key=missing[0]
            )
        values = {k: v for k, v in data.items() if k != "format"}
        if values["format_version"] is None:  # (None is the constructor's "choose one")
            raise _fail("format_version", _FORMAT_VERSIONS, None)
        return cls(**values)

    @classmethod
    def from_json(cls, text: str | bytes) -> BundleConfig:
        """:meth:`from_dict` of JSON text; text that is not JSON is a :class:`BundleError`."""
        try:
            data = json.loads(text)
        except (ValueError, TypeError) as exc:
            raise BundleError(
                f"bundle config: expected JSON text, got {_show(text)} ({exc})"
            ) from None
        return cls.from_dict(data)


_CONFIG_KEYS = frozenset(BundleConfig.__dataclass_fields__) | {"format"}
_FORMAT_VERSIONS = (
    f"an int from 1 to {BUNDLE_FORMAT_VERSION} (this memgraph-tf reads bundle formats up to "
    f"{BUNDLE_FORMAT_VERSION})"
)


def write_assets(
    directory: str | os.PathLike, config: BundleConfig
) -> tuple[pathlib.Path, pathlib.Path]:
    """Write ``LABELS_ASSET`` (``config.class_names``, one per line) and ``CONFIG_ASSET``
    (``config.to_json()``) into ``directory``; returns their paths (labels, config)."""
    directory = pathlib.Path(directory)
    labels = directory / LABELS_ASSET
    labels.write_text("\n".join(config.class_names) + "\n")
    cfg = directory / CONFIG_ASSET
    cfg.write_text(config.to_json())
    return labels, cfg


def read_bundle_config(version_dir: str | os.PathLike) -> BundleConfig | None:
    """The config of the bundle at ``version_dir``; ``None`` when it has no ``CONFIG_ASSET`` (a
    SavedModel that is not ours). Raises :class:`BundleError` naming the file and the key when
    the asset exists but breaks the contract."""
    return _read_record(pathlib.Path(version_dir, ASSETS_DIR, CONFIG_ASSET), BundleConfig.from_json)


def _read_record(path: pathlib.Path, parse: Any) -> Any:
    """``parse(bytes of path)``, None when there is no such file; a BundleError names the file."""
    if not path.is_file():
        return None
    try:
        return parse(path.read_bytes())
    except BundleError as exc:
        raise BundleError(f"{path}: {exc}", key=exc.key) from None


# ------------------------------------------------------------------------------------ op library
@dataclass(frozen=True, kw_only=True)
class OpLibraryInfo:
    """``OP_LIBRARY_DIR/OP_LIBRARY_INFO``: the op library shipped in an op bundle and the
    TensorFlow build it is valid for. ``library`` is a bare file name in the same folder."""

    library: str
    ops: tuple[str, ...]
    tf_version: str
    tf_git_version: str
    cxx11_abi_flag: tuple[str, ...]
    sha256: str
    note: str = (
        "load with tf.load_op_library before tf.saved_model.load; only valid for this "
        "TensorFlow version. TF Serving needs the op linked into tensorflow_model_server "
        "(docker/tf-serving-custom-op)."
    )

    def __post_init__(self) -> None:
        lib = self.library
        if (
            not isinstance(lib, str)
            or not lib
            or lib in (".", "..")
            or "/" in lib
            or "\\" in lib
            or "\0" in lib
        ):
            raise _fail("library", "a bare file name", lib)
        object.__setattr__(self, "ops", _str_list("ops", self.ops))
        for key in ("tf_version", "tf_git_version", "sha256", "note"):
            if not isinstance(getattr(self, key), str):
                raise _fail(key, "a string", getattr(self, key))
        flags = self.cxx11_abi_flag
        if not isinstance(flags, (list, tuple)) or not all(isinstance(f, str) for f in flags):
            raise _fail("cxx11_abi_flag", "a list of strings", flags)
        object.__setattr__(self, "cxx11_abi_flag", tuple(flags))

    def to_json(self) -> str:
        data = {k: list(v) if isinstance(v, tuple) else v for k, v in self.__dict__.items()}
        return json.dumps(data, indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> OpLibraryInfo:
        """A validated record; raises :class:`BundleError` naming the key at fault."""
        try:
            data = json.loads(text)
        except (ValueError, TypeError) as exc:
            raise BundleError(f"op library info: expected JSON text ({exc})") from None
        if not isinstance(data, Mapping):
            raise BundleError(f"op library info: expected a JSON object, got {type(data).__name__}")
        fields = cls.__dataclass_fields__
        unknown = sorted(k for k in data if k not in fields)
        if unknown:
            raise BundleError(f"{unknown[0]}: unknown op library info key", key=unknown[0])
        missing = sorted(k for k, f in fields.items() if k not in data and f.default is MISSING)
        if missing:
            raise BundleError(f"{missing[0]}: missing from the op library info", key=missing[0])
        return cls(**data)


def op_library_dir(version_dir: str | os.PathLike) -> pathlib.Path:
    """``version_dir/assets.extra/memgraph_tf``."""
    return pathlib.Path(version_dir).joinpath(*OP_LIBRARY_DIR)


def write_op_library_info(version_dir: str | os.PathLike, info: OpLibraryInfo) -> pathlib.Path:
    """Write ``info`` to ``op_library_dir(version_dir)/OP_LIBRARY_INFO`` (creating the folder)."""
    dest = op_library_dir(version_dir)
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / OP_LIBRARY_INFO
    path.write_text(info.to_json())
    return path


def read_op_library_info(version_dir: str | os.PathLike) -> OpLibraryInfo | None:
    """The op library record of the bundle at ``version_dir``, ``None`` when it has none; raises
    :class:`BundleError` naming the file when the record breaks the contract."""
    return _read_record(op_library_dir(version_dir) / OP_LIBRARY_INFO, OpLibraryInfo.from_json)


def warmup_path(version_dir: str | os.PathLike) -> pathlib.Path:
    """``version_dir/assets.extra/tf_serving_warmup_requests``."""
    return pathlib.Path(version_dir, ASSETS_EXTRA_DIR, WARMUP_FILE)


# -------------------------------------------------------------------------------------- versions
def parse_version_dir(name: str) -> int | None:
    """The version a directory name stands for: any all-ASCII-digit name, read as its integer
    value (``"00000123"`` -> 123), as TF Serving reads it; ``None`` for any other name and for a
    value above int64 (TF Serving's ``safe_strto64`` fails on those, so it skips them too)."""
    if not _VERSION_DIR.fullmatch(name):
        return None
    value = int(name)
    return value if value <= INT64_MAX else None


def version_dir_name(version: int) -> str:
    """The directory name :func:`memgraph_tf.serving.export.export_bundle` writes for
    ``version``."""
    return str(version)


def discover_versions(base_path: str | os.PathLike) -> dict[int, pathlib.Path]:
    """``{version: directory}`` for every child of ``base_path`` whose name is a version
    (:func:`parse_version_dir`) and that holds ``saved_model.pb`` or ``saved_model.pbtxt``, in
    ascending version order. Other children are ignored. When two names give one version
    (``1`` and ``001``), the one sorting last by name wins with a warning, as in TF Serving's
    ``file_system_storage_path_source.cc``."""
    found: dict[int, pathlib.Path] = {}
    for child in sorted(pathlib.Path(base_path).iterdir(), key=lambda p: p.name):
        version = parse_version_dir(child.name)
        if version is None or not child.is_dir():
            continue
        if not ((child / "saved_model.pb").exists() or (child / "saved_model.pbtxt").exists()):
            continue
        if version in found:
            logger.warning(
                "duplicate version directories: version %d will be loaded from %s, %s "
                "will be ignored",
                version,
                child,
                found[version],
            )
        found[version] = child
    return dict(sorted(found.items()))


__all__ = [
    "AT_OPTION",
    "DEFAULT_SEED",
    "LINK_ROLES",
    "NOW_TIME",
    "RANDOM_SAMPLING",
    "BundleConfig",
    "LinkSampling",
    "OpLibraryInfo",
    "SamplingSpec",
    "TypedSampling",
    "check_fanouts",
    "check_plain_json",
    "discover_versions",
    "has_timed_step",
    "inference_sampling",
    "op_library_dir",
    "parse_version_dir",
    "read_bundle_config",
    "read_op_library_info",
    "role_time_options",
    "version_dir_name",
    "warmup_path",
    "write_assets",
    "write_op_library_info",
]
