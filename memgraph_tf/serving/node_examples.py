"""The ``node_id`` rule and the example limit of ``memgraph-tf serve``, for REST and gRPC alike.

The ``node_id`` rule: on a memgraph-tf bundle (a version with a bundle config), an example that
holds the feature ``node_id`` names a node instead of carrying its blob; the server asks its graph
source for that node's neighbourhood blob, with the sampling settings stored in the bundle, and
the model sees the example with the blob as its blob feature (``blob_feature_key``) and without
``node_id`` (other features are kept). The sampling settings are
:func:`.bundle.inference_sampling`'s: the bundle's seed, else :data:`.bundle.DEFAULT_SEED`, so a
node gets one neighbourhood -- one answer -- in every request, as in ``memgraph-tf classify``
(the server's ``sampling_seed`` can name another seed, or ``"random"``). Other SavedModels see
``node_id`` as a plain feature.
Refused, with INVALID_ARGUMENT (400): an example holding both ``node_id`` and the blob feature,
or neither (naming the missing feature); a ``node_id`` example on a server started without
``--graph``; a ``node_id`` that is not one int64 value. A failure of the graph source is
answered with its error class's ``grpc_code`` (:mod:`.errors`: a missing node 400, an
unreachable graph 503, anything else 500), its ``seeds[i]`` renamed ``examples[j].node_id``.

The ``source_id`` / ``target_id`` rule: on a link bundle (a bundle config with
``link``), an example holding ``source_id`` and ``target_id`` names a pair instead of carrying
its pair blob; the server asks the graph source for that pair's blob
(:meth:`.neighbourhoods.NeighbourhoodFetcher.fetch_pairs`: ``sample_pairs`` with the bundle's
settings, the pair's own relationships removed, keyed by the same seed as ``node_id``), and the
model sees the example with the blob as its blob feature, without the two ids. Refused, with
INVALID_ARGUMENT (400), each naming ``examples[i]`` and the key: one id without the other; both
ids and the blob feature; an example with neither the ids nor the blob; an id that is not one
int64 value; ``node_id`` on a link bundle and ``source_id`` / ``target_id`` on a node bundle (the
message says what the bundle expects); an id the graph lacks or a node without the pair's label
(the source's refusal, its ``sources[i]`` renamed ``examples[j].source_id``). A link bundle
with a timed step samples every pair of a request as of the context's ``at`` (else "now",
:data:`.bundle.NOW_TIME`: no upper time bound); ``at`` on a link bundle without one is refused
naming ``context.at`` (:func:`sampling_with_at`).

- REST (``{"node_id": N}`` in a JSON example): :func:`json_examples`;
- gRPC (an int64 feature ``node_id`` of one value in a ``tf.Example``): :func:`proto_examples`;
- both share :func:`check_node_ids` (the refusals, in this order: both features given, no
  graph, a bad id) and :func:`fetch_node_blobs` (the graph source's failures).

The example limit: more than ``max_examples`` examples / instances in one request is refused by
:func:`check_example_count` (413 over REST, RESOURCE_EXHAUSTED over gRPC). TensorFlow is imported
on first use (to build tf.Example protos).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from memgraph_tf.errors import NeighbourhoodError, ServingFailure
from memgraph_tf.serving import bundle as bundle_mod
from memgraph_tf.serving import json_examples as json_examples_mod
from memgraph_tf.serving import json_values
from memgraph_tf.serving.bundle import BundleConfig, SamplingSpec, inference_sampling
from memgraph_tf.serving.json_examples import json_to_example
from memgraph_tf.serving.json_values import bad_request
from memgraph_tf.serving.link_pairs import PairExamples
from memgraph_tf.serving.neighbourhoods import PairBlobList
from memgraph_tf.serving.node_rows import NodeExamples

#: The example feature that names a node instead of carrying its blob.
NODE_ID_FEATURE = "node_id"
#: The example features that name a pair's endpoints on a link bundle.
SOURCE_ID_FEATURE = "source_id"
TARGET_ID_FEATURE = "target_id"
PAIR_ID_FEATURES = (SOURCE_ID_FEATURE, TARGET_ID_FEATURE)
#: The context feature that samples every ``node_id`` of a request at one time (typed bundles), or
#: every ``source_id`` / ``target_id`` pair (link bundles with a timed step).
AT_FEATURE = "at"
#: Default cap on the examples / instances of one request (``--max-examples``).
DEFAULT_MAX_EXAMPLES = 1024


def check_example_count(count: int, limit: int, noun: str = "examples") -> None:
    """Refuse a request holding more than ``limit`` examples (``noun`` names what it counts):
    :meth:`ServingFailure.too_large <memgraph_tf.errors.ServingFailure.too_large>` (413 /
    RESOURCE_EXHAUSTED) naming the count, the limit and the option that sets it."""
    if count > limit:
        raise ServingFailure.too_large(
            f"Request holds {count} {noun}, above this server's limit of {limit} per request "
            f"(max_examples, memgraph-tf serve --max-examples)"
        )


def check_node_ids(
    positions: Sequence[int],
    blob_key: str,
    has_blob: Callable[[int], bool],
    fetcher: Any,
    blob_hint: str,
    read_id: Callable[[int], int],
) -> list[int]:
    """The node ids of the ``node_id`` examples at ``positions`` (``read_id(i)`` reads one and
    raises its transport's 400 for a bad one), after the refusals every transport shares, in
    this order: an example that also holds the blob feature (``has_blob(i)``); no graph source
    (``fetcher`` None; the message says to send the blob as ``blob_hint`` instead)."""
    for i in positions:
        if has_blob(i):
            raise bad_request(
                f"examples[{i}]: '{NODE_ID_FEATURE}' and '{blob_key}' are both given; "
                f"send one of them"
            )
    if fetcher is None:
        raise bad_request(
            f"examples[{positions[0]}]: '{NODE_ID_FEATURE}' needs a server started with "
            f"--graph; without one, send the node's blob as {blob_hint}"
        )
    return [read_id(i) for i in positions]


def fetch_node_blobs(
    fetcher: Any,
    config: BundleConfig,
    node_ids: list[int],
    positions: Sequence[int],
    sampling: SamplingSpec | None = None,
) -> list[bytes]:
    """The neighbourhood blob of each node id, sampled with ``sampling`` (default: the bundle's
    inference settings, :func:`.bundle.inference_sampling`: its seed, else the fixed
    :data:`.bundle.DEFAULT_SEED`); a :class:`~memgraph_tf.errors.NeighbourhoodError`
    becomes the ServingFailure of its class's ``grpc_code``, with its message (which names
    ``examples[i].node_id``)."""
    return read_node_blobs(fetcher, config, node_ids, node_id_names(positions), sampling)


def node_id_names(positions: Sequence[int]) -> list[str]:
    """How errors name the ``node_id`` of the examples at ``positions``."""
    return [f"examples[{i}].{NODE_ID_FEATURE}" for i in positions]


def read_node_blobs(
    fetcher: Any,
    config: BundleConfig,
    node_ids: list[int],
    names: list[str] | None,
    sampling: SamplingSpec | None = None,
) -> list[bytes]:
    """:func:`fetch_node_blobs` of ids named ``names`` (None: the source's own names, for a
    read merged from several requests)."""
    spec = sampling if sampling is not None else inference_sampling(config)
    try:
        return fetcher.fetch(node_ids, spec, names=names)
    except NeighbourhoodError as exc:
        raise ServingFailure.for_code(exc.grpc_code or "INTERNAL", exc.message) from None


def deferred_node_examples(
    base: Sequence[bytes],
    positions: Sequence[int],
    node_ids: list[int],
    config: BundleConfig,
    later: Any,
    sampling: SamplingSpec | None,
) -> NodeExamples:
    """The examples ``base`` (serialized; those at ``positions`` without ``node_id``) whose
    blobs ``later`` (a fetcher) reads when the model's batch runs (:mod:`.node_rows`), with the
    messages and codes of :func:`fetch_node_blobs`."""
    spec = sampling if sampling is not None else inference_sampling(config)

    def fetch(ids: list[int], names: list[str] | None) -> list[bytes]:
        return read_node_blobs(later, config, ids, names, spec)

    names = node_id_names(positions)
    return NodeExamples(base, positions, node_ids, names, config.blob_feature_key, spec, fetch)


def sampling_at(
    config: BundleConfig | None, sampling: SamplingSpec | None, context: Any
) -> SamplingSpec | None:
    """``sampling`` (default: the bundle's inference settings) for a ``:classify`` /
    ``:regress`` request whose context (a ``tf.train.Example``, or
    :data:`.json_examples.NO_CONTEXT`) holds ``at``: one int64 time, passed as ``options.at`` so
    that every ``node_id`` seed of the request is sampled at that time instead of its own
    ``seed_time`` property, or on a link bundle with a timed step every ``source_id`` /
    ``target_id`` pair as of that time (without ``at``: "now", :data:`.bundle.NOW_TIME`).
    Without ``at``, ``sampling`` unchanged. 400 (INVALID_ARGUMENT) naming ``context.at`` for
    anything but one int64 value, or a bundle that takes no time (:func:`sampling_with_at`)."""
    if config is None or context is json_examples_mod.NO_CONTEXT or context is None:
        return sampling
    if AT_FEATURE not in context.features.feature:
        return sampling
    feature = context.features.feature[AT_FEATURE]
    values = feature.int64_list.value if feature.WhichOneof("kind") == "int64_list" else None
    if values is None or len(values) != 1:
        raise bad_request(
            f"context.{AT_FEATURE}: expected one integer time (int64), got "
            f"{_describe_feature(feature)}"
        )
    return sampling_with_at(config, sampling, int(values[0]), f"context.{AT_FEATURE}")


def sampling_with_at(
    config: BundleConfig, sampling: SamplingSpec | None, at: int, where: str
) -> SamplingSpec:
    """``sampling`` (default: the bundle's inference settings) with ``options.at = at``: every
    seed of a typed node bundle, every pair (and every node an ``embed_*`` signature embeds) of
    a link bundle with a timed step sampled at ``at``. 400 naming ``where`` for a homogeneous
    node bundle and for a link bundle without a timed step (on a typed node bundle without one,
    the procedure refuses ``options.at``)."""
    link = config.link_sampling
    if link is not None and not link.timed_roles():
        raise bad_request(
            f"{where}: model {config.model_name!r} is a link bundle without a timed step (no "
            f"{{time: ...}} in its num_neighbors): it samples every pair with every "
            f"relationship, at no time; send no '{AT_FEATURE}'"
        )
    if config.typed is None and link is None:
        raise bad_request(
            f"{where}: only a typed node bundle or a link bundle with a timed step samples at a "
            f"request's time"
        )
    spec = sampling if sampling is not None else inference_sampling(config)
    return dataclasses.replace(spec, options={**spec.options, bundle_mod.AT_OPTION: at})


def read_at(value: Any, where: str) -> int:
    """A predict request's ``at`` input (a JSON value or an array): one integer in the int64
    range, else 400 (INVALID_ARGUMENT) naming ``where`` (an integer outside the range, e.g. a
    uint64 ``2**64 - 1``, shown with its value)."""
    import numpy as np

    arr = np.asarray(value)
    one = arr.reshape(-1)[0] if arr.size == 1 and arr.ndim <= 1 else None
    if isinstance(one, json_values.JsonBigNumber):  # a JSON integer token outside int64
        text = one.text if len(one.text) <= 40 else one.text[:40] + "..."
        raise bad_request(f"{where}: expected one integer time (int64), got {text}: out of range")
    if one is None or arr.dtype.kind not in "iu":
        raise bad_request(
            f"{where}: expected one integer time (int64), got {arr.dtype} of shape "
            f"{list(arr.shape)}"
        )
    at = int(one)
    if not json_values.INT64_MIN <= at <= json_values.INT64_MAX:
        raise bad_request(
            f"{where}: expected one integer time (int64), got {arr.dtype} {at}: out of range"
        )
    return at


def embed_role(config: BundleConfig | None, signature: str) -> str | None:
    """Whether signature ``signature`` of a bundle with ``config`` embeds nodes a predict request
    may name by ``node_id``: ``"node"`` for a node bundle's ``embed``, ``"source"`` /
    ``"target"`` for a link bundle's ``embed_source`` / ``embed_target``; None otherwise (other
    signatures, other SavedModels)."""
    if config is None:
        return None
    if config.link is None:
        return "node" if signature == bundle_mod.EMBED_SIGNATURE else None
    for role, name in bundle_mod.EMBED_ROLE_SIGNATURES.items():
        if signature == name:
            return role
    return None


def embed_feeds(
    config: BundleConfig,
    sampling: SamplingSpec | None,
    role: str,
    fetcher: Any,
    node_ids: Any,
) -> dict[str, list[bytes]]:
    """The ``embed`` signature's feeds for a predict request that names nodes (``node_id``, a
    vector of int64 ids) instead of sending their blobs: ``{blobs: [blob per id]}``, sampled as
    ``:classify`` samples a ``node_id`` example (a node bundle; ``sampling`` the version's) or as
    link scoring samples ``role``'s nodes (a link bundle). Refused with 400: ids that are not a
    vector of integers, a server without ``--graph``; the graph's failures as
    :func:`fetch_node_blobs` reports them (a missing node names ``node_id[i]``)."""
    import numpy as np

    ids = np.asarray(node_ids)
    if ids.ndim != 1 or ids.dtype.kind not in "iu":
        raise bad_request(
            f"{NODE_ID_FEATURE}: expected a vector of int64 node ids, got {ids.dtype} of shape "
            f"{list(ids.shape)}"
        )
    if fetcher is None:
        raise bad_request(
            f"{NODE_ID_FEATURE}: needs a server started with --graph; without one, send the "
            f"nodes' blobs as '{bundle_mod.EMBED_INPUT}'"
        )
    spec = sampling if sampling is not None else inference_sampling(config)
    if role != "node":
        spec = spec.role_sampling(role)
    try:
        blobs = fetcher.fetch(
            ids.tolist(), spec, names=[f"{NODE_ID_FEATURE}[{i}]" for i in range(len(ids))]
        )
    except NeighbourhoodError as exc:
        raise ServingFailure.for_code(exc.grpc_code or "INTERNAL", exc.message) from None
    return {bundle_mod.EMBED_INPUT: blobs}


def _link_description(config: BundleConfig) -> str:
    link = config.link
    return f"(:{link['source_label']})-(:{link['target_label']}) pairs"


def check_example_kinds(
    count: int, config: BundleConfig | None, has: Callable[[int, str], bool]
) -> None:
    """Refuse the examples meant for the other kind of bundle (400 naming the example, the key
    and what this bundle expects): ``node_id`` on a link bundle, ``source_id`` / ``target_id``
    on a node bundle; and on a node bundle an example with neither ``node_id`` nor the blob
    feature (400 naming the example and the missing feature, where TensorFlow's ParseExample
    would name neither). ``has(i, key)``: whether example ``i`` holds feature ``key``. Other
    SavedModels (``config`` None) see these keys as plain features."""
    if config is None:
        return
    link = config.link is not None
    for i in range(count):
        if link and has(i, NODE_ID_FEATURE):
            raise bad_request(
                f"examples[{i}].{NODE_ID_FEATURE}: model {config.model_name!r} is a link bundle "
                f"scoring {_link_description(config)}: send '{SOURCE_ID_FEATURE}' and "
                f"'{TARGET_ID_FEATURE}' per example"
            )
        if not link:
            for key in PAIR_ID_FEATURES:
                if has(i, key):
                    raise bad_request(
                        f"examples[{i}].{key}: model {config.model_name!r} classifies nodes: "
                        f"send '{NODE_ID_FEATURE}' per example ('{SOURCE_ID_FEATURE}' and "
                        f"'{TARGET_ID_FEATURE}' need a link bundle)"
                    )
            blob = config.blob_feature_key
            if not has(i, NODE_ID_FEATURE) and not has(i, blob):
                raise bad_request(
                    f"examples[{i}]: the feature '{blob}' (the node's neighbourhood blob) is "
                    f"missing; send it, or '{NODE_ID_FEATURE}' to name the node (model "
                    f"{config.model_name!r} classifies nodes)"
                )


def pair_positions(
    count: int,
    config: BundleConfig,
    has: Callable[[int, str], bool],
    fetcher: Any,
    blob_hint: str,
) -> list[int]:
    """The positions of the examples that name a pair on a link bundle, after the refusals
    every transport shares, in this order per example: one id without the other, both ids and
    the blob feature, neither; then no graph source (``fetcher`` None)."""
    key = config.blob_feature_key
    positions = []
    for i in range(count):
        given = [k for k in PAIR_ID_FEATURES if has(i, k)]
        if given and len(given) == 1:
            other = TARGET_ID_FEATURE if given[0] == SOURCE_ID_FEATURE else SOURCE_ID_FEATURE
            raise bad_request(
                f"examples[{i}].{other}: missing; a link bundle scores a pair: send both "
                f"'{SOURCE_ID_FEATURE}' and '{TARGET_ID_FEATURE}'"
            )
        if given and has(i, key):
            raise bad_request(
                f"examples[{i}]: '{SOURCE_ID_FEATURE}'/'{TARGET_ID_FEATURE}' and '{key}' are "
                f"both given; send one of them"
            )
        if not given and not has(i, key):
            raise bad_request(
                f"examples[{i}]: expected '{SOURCE_ID_FEATURE}' and '{TARGET_ID_FEATURE}' (model "
                f"{config.model_name!r} scores {_link_description(config)}), or the pair's blob "
                f"as {blob_hint}"
            )
        if given:
            positions.append(i)
    if positions and fetcher is None:
        raise bad_request(
            f"examples[{positions[0]}]: '{SOURCE_ID_FEATURE}' and '{TARGET_ID_FEATURE}' need a "
            f"server started with --graph; without one, send the pair's blob as {blob_hint}"
        )
    return positions


def fetch_pair_sample(
    fetcher: Any,
    config: BundleConfig,
    sources: list[Any],
    targets: list[Any],
    positions: Sequence[int],
    sampling: SamplingSpec | None = None,
) -> Any:
    """The pairs ``(sources[j], targets[j])`` (example ``positions[j]``) sampled with
    ``sampling`` (default the bundle's inference settings), as
    :meth:`.neighbourhoods.NeighbourhoodFetcher.fetch_pair_sample` returns them (the dense pair
    blobs built on demand); a NeighbourhoodError becomes the ServingFailure of its class's
    ``grpc_code``, its message naming ``examples[i].source_id`` / ``examples[i].target_id``."""
    spec = sampling if sampling is not None else inference_sampling(config)
    names = {
        "source_names": [f"examples[{i}].{SOURCE_ID_FEATURE}" for i in positions],
        "target_names": [f"examples[{i}].{TARGET_ID_FEATURE}" for i in positions],
    }
    try:
        if not callable(getattr(fetcher, "fetch_pair_sample", None)):  # a fetcher of blobs only
            return PairBlobList(fetcher.fetch_pairs(sources, targets, spec, **names))
        return fetcher.fetch_pair_sample(sources, targets, spec, **names)
    except NeighbourhoodError as exc:
        raise ServingFailure.for_code(exc.grpc_code or "INTERNAL", exc.message) from None


def examples_with_context(examples: Any, context: Any = json_examples_mod.NO_CONTEXT) -> Any:
    """:func:`.json_examples.serialize_examples` of ``examples`` (as :func:`json_examples` returns
    them) with ``context``; a :class:`.link_pairs.PairExamples` or
    :class:`.node_rows.NodeExamples` stays one, the serialized context put before each
    example."""
    if isinstance(examples, (PairExamples, NodeExamples)):
        from tensorflow.core.example import example_pb2

        [prefix] = json_examples_mod.serialize_examples([example_pb2.Example()], context)
        return examples.with_prefix(prefix)
    return json_examples_mod.serialize_examples(examples, context)


def _json_id(examples: list, i: int, key: str) -> Any:
    value = examples[i][key]
    if isinstance(value, json_values.JsonBigNumber):
        shown = value.text if len(value.text) <= 40 else value.text[:40] + "..."
        raise bad_request(
            f"examples[{i}].{key}: expected an integer in the int64 range, got {shown}"
        )
    return value


def _json_pair_examples(
    examples: list, config: BundleConfig, fetcher: Any, sampling: SamplingSpec | None
) -> list:
    key = config.blob_feature_key

    def has(i: int, name: str) -> bool:
        return isinstance(examples[i], dict) and name in examples[i]

    positions = pair_positions(len(examples), config, has, fetcher, f'{{"{key}": {{"b64": ...}}}}')
    if not positions:
        return [json_to_example(e) for e in examples]
    sources = [_json_id(examples, i, SOURCE_ID_FEATURE) for i in positions]
    targets = [_json_id(examples, i, TARGET_ID_FEATURE) for i in positions]
    chosen = set(positions)
    base = [
        json_to_example(
            {k: v for k, v in e.items() if k not in PAIR_ID_FEATURES} if i in chosen else e
        ).SerializeToString()
        for i, e in enumerate(examples)
    ]
    pairs = fetch_pair_sample(fetcher, config, sources, targets, positions, sampling)
    return PairExamples(base, positions, pairs, key)


def json_examples(
    examples: list,
    config: BundleConfig | None,
    fetcher: Any,
    sampling: SamplingSpec | None = None,
    later: Any = None,
) -> Sequence:
    """REST: JSON examples -> ``tf.train.Example`` s (:func:`.json_to_example`), the
    ``node_id`` rule applied (see the module docstring; blobs sampled with ``sampling``, as
    :func:`fetch_node_blobs`), or on a link bundle the ``source_id`` / ``target_id`` rule. An
    id beyond int64 is refused naming it; the other examples are converted before the graph is
    asked. With ``later`` (a fetcher), examples naming nodes come back serialized, as a
    :class:`.node_rows.NodeExamples` whose blobs ``later`` reads when the model runs."""
    check_example_kinds(
        len(examples), config, lambda i, k: isinstance(examples[i], dict) and k in examples[i]
    )
    if config is not None and config.link is not None:
        return _json_pair_examples(examples, config, fetcher, sampling)
    positions = (
        [i for i, e in enumerate(examples) if isinstance(e, dict) and NODE_ID_FEATURE in e]
        if config is not None
        else []
    )
    if not positions:
        return [json_to_example(e) for e in examples]
    key = config.blob_feature_key

    def read_id(i: int) -> int:
        return _json_id(examples, i, NODE_ID_FEATURE)

    node_ids = check_node_ids(
        positions,
        key,
        lambda i: key in examples[i],
        fetcher,
        f'{{"{key}": {{"b64": ...}}}}',
        read_id,
    )
    chosen = set(positions)
    protos = [
        json_to_example({k: v for k, v in e.items() if k != NODE_ID_FEATURE} if i in chosen else e)
        for i, e in enumerate(examples)
    ]
    if later is not None:
        base = [ex.SerializeToString() for ex in protos]
        return deferred_node_examples(base, positions, node_ids, config, later, sampling)
    for i, blob in zip(positions, fetch_node_blobs(fetcher, config, node_ids, positions, sampling)):
        protos[i].features.feature[key].bytes_list.value.append(blob)
    return protos


def _describe_feature(feature: Any) -> str:
    kind = feature.WhichOneof("kind")
    if kind is None:
        return "an empty feature"
    values = list(getattr(feature, kind).value)
    shown = values[:5] + (["..."] if len(values) > 5 else [])
    return f"{kind} {shown}"


def _proto_id(examples: Any, i: int, key: str) -> int:
    feature = examples[i].features.feature[key]
    if feature.WhichOneof("kind") != "int64_list" or len(feature.int64_list.value) != 1:
        raise bad_request(
            f"examples[{i}].{key}: expected one int64 value, got {_describe_feature(feature)}"
        )
    return int(feature.int64_list.value[0])


def _with_blobs(examples: Any, positions: Sequence[int], blobs, drop, key) -> list[bytes]:
    """Each example serialized; those at ``positions`` without the ``drop`` features and with
    their blob as the bytes feature ``key`` (``blobs`` None: without a blob)."""
    from tensorflow.core.example import example_pb2

    out = [ex.SerializeToString() for ex in examples]
    for j, i in enumerate(positions):
        ex = example_pb2.Example()
        ex.CopyFrom(examples[i])
        for name in drop:
            del ex.features.feature[name]
        if blobs is not None:
            ex.features.feature[key].bytes_list.value.append(blobs[j])
        out[i] = ex.SerializeToString()
    return out


def _proto_pair_examples(
    examples: Any, config: BundleConfig, fetcher: Any, sampling: SamplingSpec | None
) -> list[bytes]:
    key = config.blob_feature_key
    positions = pair_positions(
        len(examples),
        config,
        lambda i, k: k in examples[i].features.feature,
        fetcher,
        f"the bytes feature '{key}'",
    )
    if not positions:
        return [ex.SerializeToString() for ex in examples]
    sources = [_proto_id(examples, i, SOURCE_ID_FEATURE) for i in positions]
    targets = [_proto_id(examples, i, TARGET_ID_FEATURE) for i in positions]
    pairs = fetch_pair_sample(fetcher, config, sources, targets, positions, sampling)
    base = _with_blobs(examples, positions, None, PAIR_ID_FEATURES, key)
    return PairExamples(base, positions, pairs, key)


def proto_examples(
    examples: Any,
    config: BundleConfig | None,
    fetcher: Any,
    sampling: SamplingSpec | None = None,
    later: Any = None,
) -> Sequence[bytes]:
    """gRPC: ``tf.Example`` protos -> their serialized bytes, the ``node_id`` rule applied (an
    int64 feature ``node_id`` of exactly one value; see the module docstring; blobs sampled with
    ``sampling``, as :func:`fetch_node_blobs`), or on a link bundle the ``source_id`` /
    ``target_id`` rule (each an int64 feature of one value). With ``later``, as
    :func:`json_examples`."""
    check_example_kinds(len(examples), config, lambda i, k: k in examples[i].features.feature)
    if config is not None and config.link is not None:
        return _proto_pair_examples(examples, config, fetcher, sampling)
    positions = (
        [i for i, ex in enumerate(examples) if NODE_ID_FEATURE in ex.features.feature]
        if config is not None
        else []
    )
    if not positions:
        return [ex.SerializeToString() for ex in examples]
    key = config.blob_feature_key

    def read_id(i: int) -> int:
        return _proto_id(examples, i, NODE_ID_FEATURE)

    node_ids = check_node_ids(
        positions,
        key,
        lambda i: key in examples[i].features.feature,
        fetcher,
        f"the bytes feature '{key}'",
        read_id,
    )
    if later is not None:
        base = _with_blobs(examples, positions, None, (NODE_ID_FEATURE,), key)
        return deferred_node_examples(base, positions, node_ids, config, later, sampling)
    blobs = fetch_node_blobs(fetcher, config, node_ids, positions, sampling)
    return _with_blobs(examples, positions, blobs, (NODE_ID_FEATURE,), key)


__all__ = [
    "AT_FEATURE",
    "DEFAULT_MAX_EXAMPLES",
    "NODE_ID_FEATURE",
    "PAIR_ID_FEATURES",
    "SOURCE_ID_FEATURE",
    "TARGET_ID_FEATURE",
    "check_example_count",
    "check_example_kinds",
    "check_node_ids",
    "deferred_node_examples",
    "embed_feeds",
    "embed_role",
    "examples_with_context",
    "fetch_node_blobs",
    "fetch_pair_sample",
    "json_examples",
    "node_id_names",
    "pair_positions",
    "proto_examples",
    "read_at",
    "read_node_blobs",
    "sampling_at",
    "sampling_with_at",
]
