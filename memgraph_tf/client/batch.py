"""Batch inference: classify the nodes of a graph with an exported model and write the answers back.

``memgraph-tf classify`` is a thin layer over this module (see docs/batch-inference.md)::

    from memgraph_tf.client import connect
    from memgraph_tf.client.batch import BundleBackend, classify_graph

    with connect("bolt://memgraph:7687") as source, BundleBackend("models/GraphSage") as model:
        summary = classify_graph(source, model, write_property="predicted_class")

Parts, each replaceable:

* a **model backend** (:class:`ModelBackend`): the bundle config (sampling settings, class names) and
  ``classify(blobs) -> [(label, score), ...]``. :class:`BundleBackend` runs a bundle's model
  in-process (its ``serving_default`` signature on the raw blobs; loaded by
  :func:`memgraph_tf.serving.model_server.load_version`, op or op-free bundle);
  :class:`ServingBackend` wraps any serving client with ``classify(blobs)`` and
  ``bundle_config()`` -- :func:`rest_backend` (TF Serving's REST API, :class:`ServingClient`) and
  :func:`grpc_backend` (its gRPC API, ``memgraph_tf.serving.grpc_client.GrpcServingClient``);
* a **graph target** over the source: keyset-paged node ids, and one write per batch (Bolt: any
  Bolt server, Memgraph with the query modules or another server through the client-side fallback;
  or an in-process :class:`EmbeddedSource`);
* the **pipeline** (:class:`BatchClassifier`): three threads joined by bounded queues -- ids and
  neighbourhood blobs (the next batch), the model (the current batch), writes (the previous batch);
  on an embedded graph, ``fetch_workers`` > 1 samples in that many forked processes.

Guarantees of a run:

* **Sampling** uses the bundle's fanouts, properties and options, with ``options.seed`` = the
  bundle's seed, or :data:`DEFAULT_SEED` when the bundle has none. The query modules key each
  seed's sample by ``(options.seed, node key)``, so a node's prediction does not depend on which
  other nodes share its batch: any subset, order, batch size or shard gives the same prediction as
  a full run.
* **Written properties**, for write property ``P`` (default ``predicted_class``): ``P`` the top
  class label (a string, one of the bundle's class names), ``P_score`` its score (a float: the
  model's probability) and ``P_version`` the model version (an int: the bundle's version
  directory number, or the version the serving endpoint answered with). All three are set in one
  statement; each batch is one managed write transaction (retried on transient errors by the
  driver), so no node is ever half-written and no batch is partly written.
* **Ids** stream in ascending order by keyset pagination (``WHERE key > $after ORDER BY key LIMIT
  batch_size``, never SKIP): the key is ``options.id_property`` when the bundle has one, else the
  internal id. ``label`` restricts the nodes (default: the bundle's ``options.label``); ``where``
  is a parameterised openCypher predicate over ``n`` (Bolt only; see :func:`check_where`).
* **Resume**: unless ``overwrite``, nodes whose ``P_version`` already equals this model version
  are left out by the id query itself, so rerunning an interrupted run (SIGKILL, Ctrl-C, a lost
  connection) classifies exactly the nodes that are missing.
* **Shards**: ``Shard(i, N)`` takes the nodes whose key modulo N (the non-negative remainder) is
  i, so shards 0..N-1 partition the nodes and can run in parallel processes.
* **Invalid nodes** -- an unknown id, features that cannot be packed (the node's own or a sampled
  neighbour's), or a blob the model rejects: the run stops with :class:`InvalidNodeError` naming
  the first such node of the batch (in batch order) and the reason, and nothing of that batch is
  written (earlier batches are); with ``skip_invalid`` such nodes are reported, left unwritten and
  the rest of their batch is written. A failing batch is split in halves until the bad nodes are
  isolated (the sample of a node does not depend on its batch, so the split changes nothing else).
"""

from __future__ import annotations

import bisect
import collections
import concurrent.futures
import dataclasses
import gc
import logging
import pathlib
import queue
import re
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from memgraph_tf.client.errors import (
    ClientError,
    ConfigurationError,
    GraphDataError,
    InvalidNodeError,
    ModelError,
    ModelInputError,
    ProcedureUnavailable,
    QueryError,
)
from memgraph_tf.client.sources import BoltSource, EmbeddedSource, GraphSource, _quote_name
from memgraph_tf.client.summary import RunSummary
from memgraph_tf.serving import errors as serving_errors
from memgraph_tf.serving.bundle import (
    CLASSIFY_INPUT,
    CLASSIFY_SIGNATURE,
    CONFIG_ASSET,
    PREDICT_INPUT,
    PREDICT_SIGNATURE,
    SCORES_OUTPUT,
    BundleConfig,
    SamplingSpec,
)
from memgraph_tf.serving.grpc_codec import serialize_blob_example
from memgraph_tf.serving.neighbourhoods import NeighbourhoodFetcher

logger = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 1024
DEFAULT_WRITE_PROPERTY = "predicted_class"
#: ``options.seed`` for sampling when the bundle's options have none.
DEFAULT_SEED = 0
SCORE_SUFFIX = "_score"
VERSION_SUFFIX = "_version"
#: The prefix of the query parameters batch inference adds; ``where`` parameters may not use it.
PARAM_PREFIX = "mgtf_"
#: How many invalid nodes a summary lists (all are counted).
MAX_LISTED_INVALID = 1000

_REASON_CHARS = 500
_POLL_S = 0.1


def property_names(write_property: str) -> tuple[str, str, str]:
    """``(class, score, version)`` property names for ``write_property`` P: ``P``, ``P_score``,
    ``P_version``."""
    return write_property, write_property + SCORE_SUFFIX, write_property + VERSION_SUFFIX


# ------------------------------------------------------------------------------------------ shards
@dataclasses.dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count``: the nodes whose key modulo ``count`` (the non-negative
    remainder, also for negative keys) is ``index``. Guarantees: for a given ``count`` every
    integer key is in exactly one shard, the same in Python (:meth:`contains`) and in Cypher
    (:meth:`cypher`)."""

    index: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        for name in ("index", "count"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigurationError(f"shard: expected integers i/N, got {name} {value!r}")
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ConfigurationError(
                f"shard: expected i/N with N >= 1 and 0 <= i < N, got {self.index}/{self.count}"
            )

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"i/N"`` -> ``Shard(i, N)``; anything else raises :class:`ConfigurationError`."""
        match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
        if match is None:
            raise ConfigurationError(f"shard: expected i/N such as 0/3, got {text!r}")
        return cls(int(match[1]), int(match[2]))

    def contains(self, key: int) -> bool:
        return key % self.count == self.index  # Python's % is the non-negative remainder here

    def cypher(self, key: str) -> str:
        """The Cypher condition for ``key`` (an expression), with parameters ``$mgtf_shards`` (N)
        and ``$mgtf_shard`` (i). Cypher's ``%`` keeps the dividend's sign, hence the ``+ N``."""
        n, i = f"${PARAM_PREFIX}shards", f"${PARAM_PREFIX}shard"
        return f"(({key} % {n}) + {n}) % {n} = {i}"

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


# ---------------------------------------------------------------------------------------- --where
_CLAUSE_WORDS = frozenset(
    {
        "MATCH",
        "OPTIONAL",
        "CREATE",
        "MERGE",
        "DELETE",
        "DETACH",
        "SET",
        "REMOVE",
        "CALL",
        "RETURN",
        "WITH",
        "UNWIND",
        "FOREACH",
        "LOAD",
        "UNION",
        "ORDER",
        "SKIP",
        "LIMIT",
        "YIELD",
        "DROP",
        "USING",
        "PROFILE",
        "EXPLAIN",
        "FINISH",
        "START",
        "COMMIT",
        "ROLLBACK",
        "BEGIN",
    }
)
_PAIRS = {")": "(", "]": "[", "}": "{"}


def _outside_literals(text: str) -> str:
    """``text`` with string literals and backquoted names blanked out (kept as ``''``); raises
    :class:`ConfigurationError` for an unterminated one."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "'\"`":
            j = i + 1
            while j < n:
                if c != "`" and text[j] == "\\":
                    j += 2
                    continue
                if text[j] == c:
                    if c == "`" and j + 1 < n and text[j + 1] == "`":  # `` inside a backquoted name
                        j += 2
                        continue
                    break
                j += 1
            if j >= n:
                raise ConfigurationError(
                    f"where: expected a closed {c}...{c} starting at character "
                    f"{i}, got an unterminated one in {text!r}"
                )
            out.append(" '' ")
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def check_where(where: str, parameters: Mapping[str, Any] | None = None) -> str:
    """The predicate, stripped, when ``where`` is a single openCypher expression over ``n`` that
    can be placed in ``WHERE ... AND (<where>)``; raises :class:`ConfigurationError` naming the
    problem otherwise.

    Guarantees (checked outside string literals and backquoted names): no ``;`` and no comment,
    balanced brackets (so it cannot close the surrounding parenthesis), no clause keyword (MATCH,
    CREATE, SET, DELETE, CALL, RETURN, WITH, UNWIND, ...: subqueries are not allowed), and every
    ``$name`` it uses is in ``parameters`` and does not start with :data:`PARAM_PREFIX`. Values are
    only ever passed as parameters, never written into the query text."""
    if not isinstance(where, str) or not where.strip():
        raise ConfigurationError(
            f"where: expected a non-empty Cypher predicate over n, got {where!r}"
        )
    where = where.strip()
    bare = _outside_literals(where)
    for token in (";", "//", "/*"):
        if token in bare:
            raise ConfigurationError(
                f"where: expected one predicate expression, got {token!r} in {where!r}"
            )
    stack: list[str] = []
    for c in bare:
        if c in "([{":
            stack.append(c)
        elif c in _PAIRS:
            if not stack or stack.pop() != _PAIRS[c]:
                raise ConfigurationError(
                    f"where: expected balanced brackets, got an unmatched {c!r} in {where!r}"
                )
    if stack:
        raise ConfigurationError(
            f"where: expected balanced brackets, got an unclosed {stack[-1]!r} in {where!r}"
        )
    for word in re.findall(
        r"[A-Za-z_][A-Za-z0-9_]*", re.sub(r"\$[A-Za-z_][A-Za-z0-9_]*", " ", bare)
    ):
        if word.upper() in _CLAUSE_WORDS:
            raise ConfigurationError(
                f"where: expected a predicate expression over n, got the clause "
                f"keyword {word.upper()} in {where!r}"
            )
    params = dict(parameters or {})
    for name in params:
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ConfigurationError(f"where parameters: expected identifier names, got {name!r}")
        if name.startswith(PARAM_PREFIX):
            raise ConfigurationError(
                f"where parameters: names starting with {PARAM_PREFIX!r} are "
                f"reserved for batch inference, got {name!r}"
            )
    for name in re.findall(r"\$([A-Za-z_][A-Za-z0-9_]*)", bare):
        if name not in params:
            raise ConfigurationError(
                f"where: ${name} is used but not given (parameters: "
                f"{sorted(params) or 'none'}; CLI: --param {name}=VALUE)"
            )
    return where


# -------------------------------------------------------------------------------- model backends
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
    directory (``BASE/NAME``: its highest version is used). Loading is
    :func:`memgraph_tf.serving.model_server.load_version` (which registers the bundle's op library
    when the graph needs it). Guarantees: ``version`` is the version directory's number (TF
    Serving's reading of it), else the config's; a directory that is no memgraph-tf bundle raises
    :class:`ConfigurationError`; a broken config :class:`memgraph_tf.serving.errors.BundleError`.
    """

    def __init__(self, path: Any) -> None:
        from memgraph_tf.serving import bundle, model_server

        path = pathlib.Path(path)
        if not path.is_dir():
            raise ConfigurationError(
                f"model: expected a bundle directory (BASE/NAME or "
                f"BASE/NAME/VERSION), got {str(path)!r}: no such directory"
            )
        if (path / "saved_model.pb").is_file() or (path / "saved_model.pbtxt").is_file():
            version_dir, version = path, bundle.parse_version_dir(path.name)
        else:
            found = bundle.discover_versions(path)
            if not found:
                raise ConfigurationError(
                    f"model: expected saved_model.pb or numbered version "
                    f"directories in {str(path)!r}, found neither"
                )
            version, version_dir = max(found.items())
        try:
            loaded = model_server.load_version(version_dir, version or 0)
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

    Guarantees: a 400 answer (:class:`memgraph_tf.serving.errors.BadRequestError`: the server could
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


# ---------------------------------------------------------------------------------- graph targets
Prediction = tuple[int, str, float]  # (node id, class label, score)


def check_key_ids(ids: list[Any], key: str) -> list[int]:
    """``ids``, node keys a query returned for ``key`` (e.g. ``n.paper_id``), if each is an
    integer; raises GraphDataError naming ``key`` and the value otherwise."""
    for value in ids:
        if not isinstance(value, int) or isinstance(value, bool):
            raise GraphDataError(
                f"node key {key}: expected integer ids, got {type(value).__name__} {value!r}"
            )
    return ids


class _BoltTarget:
    """Ids, counts and writes over Cypher (any Bolt server)."""

    def __init__(
        self,
        source: BoltSource,
        *,
        id_property: str | None,
        label: str | None,
        where: str | None,
        where_params: Mapping[str, Any],
        shard: Shard,
        write_property: str,
        version: int,
    ) -> None:
        self._source = source
        self._node = f"(n:{_quote_name(label, 'label')})" if label else "(n)"
        self._key = f"n.{_quote_name(id_property, 'id_property')}" if id_property else "id(n)"
        cls, score, ver = (_quote_name(p, "write_property") for p in property_names(write_property))
        self._ver = ver
        self._set = f"n.{cls} = r.c, n.{score} = r.s, n.{ver} = ${PARAM_PREFIX}version"
        self._conditions = [f"{self._key} IS NOT NULL"]
        if shard.count > 1:
            self._conditions.append(shard.cypher(self._key))
        if where is not None:
            self._conditions.append(f"({where})")
        self._params = {
            **where_params,
            f"{PARAM_PREFIX}version": version,
            f"{PARAM_PREFIX}shards": shard.count,
            f"{PARAM_PREFIX}shard": shard.index,
        }

    def _where(self, todo: bool, after: bool = False) -> str:
        conditions = list(self._conditions)
        if todo:
            conditions.append(f"(n.{self._ver} IS NULL OR n.{self._ver} <> ${PARAM_PREFIX}version)")
        if after:
            conditions.append(f"{self._key} > ${PARAM_PREFIX}after")
        return " AND ".join(conditions)

    def count(self, todo: bool) -> int:
        rows = self._source.read(
            f"MATCH {self._node} WHERE {self._where(todo)} RETURN count(n) AS c", self._params
        )
        return int(rows[0]["c"]) if rows else 0

    def page(self, after: int | None, limit: int, todo: bool) -> list[int]:
        query = (
            f"MATCH {self._node} WHERE {self._where(todo, after is not None)} "
            f"RETURN {self._key} AS id ORDER BY id LIMIT {int(limit)}"
        )
        rows = self._source.read(query, {**self._params, f"{PARAM_PREFIX}after": after})
        return check_key_ids([row["id"] for row in rows], self._key)

    def write(self, predictions: Sequence[Prediction]) -> int:
        rows = [{"id": nid, "c": label, "s": score} for nid, label, score in predictions]
        query = (
            f"UNWIND $rows AS r MATCH {self._node} WHERE {self._key} = r.id "
            f"SET {self._set} RETURN count(n) AS written"
        )
        result = self._source.write(
            query, {"rows": rows, f"{PARAM_PREFIX}version": self._params[f"{PARAM_PREFIX}version"]}
        )
        return int(result[0]["written"]) if result else 0


class _EmbeddedTarget:
    """Ids, counts and writes over an in-process :class:`EmbeddedSource`. The node set (keys with
    ``label``, in ``shard``) is read once when the run starts; ``where`` is a callable ``key ->
    bool`` and the version filter is evaluated page by page."""

    def __init__(
        self,
        source: EmbeddedSource,
        *,
        id_property: str | None,
        label: str | None,
        where: Callable[[int], bool] | None,
        shard: Shard,
        write_property: str,
        version: int,
    ) -> None:
        self._source = source
        self._graph = source.graph
        self._props = property_names(write_property)
        for p in self._props:
            _quote_name(p, "write_property")
        self._where = where
        self._version = version
        # the source's lock: procedure calls from the fetch thread and writes take turns
        self._lock = source._lock
        internal_of: dict[int, int] = {}
        with self._lock:
            for internal in self._graph.nodes(label):
                key = (
                    internal
                    if id_property is None
                    else self._graph.get_property(internal, id_property)
                )
                if key is None or isinstance(key, bool) or not isinstance(key, int):
                    continue  # the procedures cannot sample such a node by id either
                if not shard.contains(key):
                    continue
                if internal_of.setdefault(key, internal) != internal:
                    raise GraphDataError(
                        f"{id_property}: expected unique ids, got {key} on the nodes "
                        f"with internal ids {internal_of[key]} and {internal}"
                    )
        self._keys = sorted(internal_of)
        self._internal = internal_of

    def _wanted(self, key: int, todo: bool) -> bool:
        if self._where is not None and not self._where(key):
            return False
        if todo:
            return self._graph.get_property(self._internal[key], self._props[2]) != self._version
        return True

    def count(self, todo: bool) -> int:
        with self._lock:
            return sum(1 for key in self._keys if self._wanted(key, todo))

    def page(self, after: int | None, limit: int, todo: bool) -> list[int]:
        start = 0 if after is None else bisect.bisect_right(self._keys, after)
        out: list[int] = []
        with self._lock:
            for key in self._keys[start:]:  # a copy, fine: at most the remaining keys
                if self._wanted(key, todo):
                    out.append(key)
                    if len(out) == limit:
                        break
        return out

    def write(self, predictions: Sequence[Prediction]) -> int:
        cls, score, ver = self._props
        written = 0
        with self._lock:
            for nid, label, value in predictions:
                internal = self._internal.get(nid)
                if internal is None:
                    continue
                self._graph.set_property(internal, cls, label)
                self._graph.set_property(internal, score, value)
                self._graph.set_property(internal, ver, self._version)
                written += 1
        return written


# ------------------------------------------------------------------------------------------ summary
@dataclasses.dataclass
class BatchSummary(RunSummary):
    """What a run did (:class:`~memgraph_tf.client.summary.RunSummary`: the model, the property
    written, ``elapsed_s``, :attr:`nodes_per_s` of the classified nodes). ``classified``: nodes written; ``skipped``: invalid nodes left unwritten
    (``skip_invalid``); ``failed``: nodes of the batch a run stopped at, plus predictions that
    matched no node when written (deleted meanwhile); ``up_to_date``: nodes left out because they
    already carried this version's prediction; ``total``: nodes the run set out to classify;
    ``invalid``: ``(node id, reason)`` of the first :data:`MAX_LISTED_INVALID` invalid nodes."""

    shard: str = "0/1"
    total: int = 0
    classified: int = 0
    skipped: int = 0
    failed: int = 0
    up_to_date: int = 0
    batches: int = 0
    invalid: list[tuple[int, str]] = dataclasses.field(default_factory=list)
    interrupted: bool = False

    def counts_text(self) -> str:
        return (
            f"classified {self.classified} nodes, skipped {self.skipped} invalid, failed "
            f"{self.failed}, already up to date {self.up_to_date} (shard {self.shard})"
        )


# ------------------------------------------------------------------------------------------- pipeline
@dataclasses.dataclass
class _Batch:
    ids: list[int]
    pairs: list[tuple[int, bytes]] = dataclasses.field(
        default_factory=list
    )  # (id, blob) of valid ids
    predictions: list[Prediction] = dataclasses.field(default_factory=list)
    invalid: list[tuple[int, str]] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _Failure:
    error: BaseException
    ids: list[int] = dataclasses.field(default_factory=list)  # the batch it stopped at


_END = object()


def fetch_error_is_node_specific(exc: BaseException) -> bool:
    """Whether a fetch failure can be pinned on nodes of the batch (worth splitting it)."""
    if isinstance(exc, (serving_errors.NeighbourhoodDataError, serving_errors.NodeIdError)):
        return True
    if isinstance(exc, serving_errors.GraphSourceError):
        cause = exc.__cause__
        return isinstance(cause, QueryError) and not isinstance(cause, ProcedureUnavailable)
    return False


def failure_reason(exc: BaseException) -> str:
    """The one-line reason (at most 500 characters) reported for a node a fetch failed on."""
    cause = (
        exc.__cause__
        if isinstance(exc, serving_errors.NeighbourhoodError) and exc.__cause__
        else exc
    )
    text = " ".join(str(cause).split())
    text = re.sub(r"^(seeds|node_ids)\[\d+\]: ", "", text)
    return text[:_REASON_CHARS]


def isolate(
    items: Sequence[Any],
    call: Callable[[Sequence[Any]], list[Any]],
    node_specific: Callable[[BaseException], bool],
    *,
    node_of: Callable[[Any], int] | None = None,
    skip_invalid: bool = True,
) -> tuple[list[tuple[Any, Any]], list[tuple[int, str]]]:
    """``call`` over ``items`` -> ``(good, bad)``: ``(item, result)`` for the items it succeeds on,
    in order, and ``(node id, reason)`` for the others (``node_of(item)`` is an item's node id; the
    item itself without it). A failing batch whose error is ``node_specific`` is halved until the
    failing items are alone (sound because a node's result does not depend on its batch); another
    error propagates. Without ``skip_invalid`` the first bad node (in order) raises
    :class:`InvalidNodeError`, the call's error as its cause."""
    try:
        results = call(items)
    except Exception as exc:
        if not node_specific(exc):
            raise
        if len(items) == 1:
            node, reason = items[0] if node_of is None else node_of(items[0]), failure_reason(exc)
            if not skip_invalid:
                raise InvalidNodeError(node, reason) from exc
            return [], [(node, reason)]
        mid = len(items) // 2
        options = {"node_of": node_of, "skip_invalid": skip_invalid}
        good_a, bad_a = isolate(items[:mid], call, node_specific, **options)
        good_b, bad_b = isolate(items[mid:], call, node_specific, **options)
        return good_a + good_b, bad_a + bad_b
    return list(zip(items, results)), []


def _first(item: tuple[int, Any]) -> int:
    return item[0]


def _fetch_worker(fetch: Callable[[list[int]], Any], conn: Any, inherited: Sequence[Any]) -> None:
    """A forked fetch worker: ``fetch(ids)`` for each id list received on ``conn``, the batch (or
    None when it failed: the parent then fetches that batch itself and raises its error) sent back;
    returns at end of input (the parent closed its end, or died)."""
    for other in inherited:  # the parent's ends of the pipes, so that only the parent holds them
        other.close()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    while True:
        try:
            ids = conn.recv()
        except (EOFError, OSError):
            return
        try:
            result = fetch(ids)
        except BaseException:  # noqa: BLE001 -- re-raised by the parent's own fetch of the batch
            result = None
        try:
            conn.send(result)
        except (BrokenPipeError, OSError):
            return


class _Fetchers:
    """Fetches whole batches with ``fetch``, up to ``count`` at a time: in this thread (``count``
    1) or in a pool of ``count`` threads (``threads``); results are taken back in the order the
    batches were handed out."""

    def __init__(
        self, fetch: Callable[[list[int]], Any], count: int, *, threads: bool = True
    ) -> None:
        self._fetch = fetch
        self._count = count
        self._busy: collections.deque = (
            collections.deque()
        )  # (worker or future, ids), in hand-out order
        self._pool = (
            concurrent.futures.ThreadPoolExecutor(count, thread_name_prefix="mgtf-fetch")
            if count > 1 and threads
            else None
        )

    @property
    def idle(self) -> bool:
        """Whether another batch can be handed out (:meth:`submit`)."""
        return len(self._busy) < self._count

    def pending(self) -> int:
        return len(self._busy)

    def oldest(self) -> list[int]:
        """The ids of the oldest handed-out batch (the one :meth:`result` answers next)."""
        return self._busy[0][1]

    def submit(self, ids: list[int]) -> None:
        self._busy.append(
            (None if self._pool is None else self._pool.submit(self._fetch, ids), ids)
        )

    def result(self) -> Any:
        future, ids = self._busy.popleft()
        return self._fetch(ids) if future is None else future.result()

    def close(self) -> None:
        if self._pool is not None:
            for future, _ in self._busy:
                future.cancel()
            self._pool.shutdown(wait=False)
        self._busy.clear()


class _ForkedFetchers(_Fetchers):
    """``count`` processes forked from this one, each sampling whole batches with ``fetch`` from
    the graph as it was at the fork (an :class:`EmbeddedSource`'s in-memory graph: sampling is
    Python, so threads would take turns on the GIL). Batches are handed out round robin, at most
    one per worker at a time, and their results taken back in the order they were handed out.
    Guarantees: a worker's batch equals ``fetch(ids)`` in this process (keyed sampling over the
    same graph); a batch a worker failed on is fetched again here, so its error is raised exactly
    as without workers; a worker that dies raises :class:`ClientError` naming it; workers leave
    when this process closes their pipe, or dies (they see the end of their input)."""

    def __init__(self, fetch: Callable[[list[int]], Any], count: int, lock: Any) -> None:
        import multiprocessing

        try:
            context = multiprocessing.get_context("fork")
        except ValueError as exc:
            raise ConfigurationError(
                f"fetch_workers: > 1 on an embedded graph forks sampling "
                f"processes, which this platform cannot: {exc}"
            ) from exc
        super().__init__(fetch, count, threads=False)
        self._conns: list[Any] = []
        self._procs: list[Any] = []
        self._next = 0
        try:
            with lock:  # no thread of this process is inside the graph while it forks
                for i in range(count):
                    mine, theirs = context.Pipe(duplex=True)
                    proc = context.Process(
                        target=_fetch_worker,
                        args=(fetch, theirs, self._conns + [mine]),
                        name=f"mgtf-fetch-{i}",
                        daemon=True,
                    )
                    proc.start()
                    theirs.close()
                    self._conns.append(mine)
                    self._procs.append(proc)
        except BaseException:
            self.close()
            raise
        logger.info(
            "sampling with %d forked fetch processes (pids %s)",
            count,
            ", ".join(str(p.pid) for p in self._procs),
        )

    def submit(self, ids: list[int]) -> None:
        """Hands ``ids`` to the next worker; call only while :attr:`idle`."""
        worker = self._next
        self._next = (self._next + 1) % len(self._conns)
        self._conns[worker].send(ids)
        self._busy.append((worker, ids))

    def result(self) -> Any:
        """The oldest handed-out batch's result."""
        worker, ids = self._busy.popleft()
        try:
            result = self._conns[worker].recv()
        except (EOFError, OSError) as exc:
            proc = self._procs[worker]
            proc.join(1.0)
            raise ClientError(
                f"fetch worker {worker} (pid {proc.pid}) exited with code {proc.exitcode} "
                f"while sampling nodes {ids[0]}..{ids[-1]}; nothing of that batch was "
                f"written (rerun to resume)"
            ) from exc
        return self._fetch(ids) if result is None else result

    def close(self) -> None:
        for conn in self._conns:
            conn.close()
        for proc in self._procs:
            proc.join(2.0)
            if proc.exitcode is None:
                proc.terminate()
                proc.join(2.0)
        self._conns, self._procs = [], []
        self._busy.clear()


class BatchClassifier:
    """Classifies the nodes of ``source`` with ``model`` and writes the predictions back (see the
    module docstring for what a run guarantees).

    ``node_ids`` (optional) classifies exactly these ids, in this order (shard filter applied,
    no resume filter); otherwise ids stream from the graph (``label``, ``where``, ``shard``, and,
    unless ``overwrite``, only nodes without this version's prediction). ``where``: a Cypher
    predicate over ``n`` with ``where_params`` (Bolt sources), or a callable ``key -> bool``
    (embedded sources). ``fetch_workers`` > 1 fetches that many batches concurrently: over Bolt in
    threads (the server does the sampling); on an embedded graph in that many processes forked
    when :meth:`run` starts (sampling there is Python, bound to one core per process), which sample
    the graph as it was then -- sampling is keyed, so the predictions are the same for any number
    of workers (Linux/macOS: needs ``fork``; each worker's memory grows towards the graph's size as
    it touches the graph's objects). ``queue_batches`` bounds each queue between stages.
    :attr:`summary` is updated as batches are written, also when :meth:`run` raises.
    """

    def __init__(
        self,
        source: GraphSource,
        model: ModelBackend,
        *,
        write_property: str = DEFAULT_WRITE_PROPERTY,
        label: str | None = None,
        where: str | Callable[[int], bool] | None = None,
        where_params: Mapping[str, Any] | None = None,
        shard: Shard | str | None = None,
        node_ids: Iterable[int] | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        skip_invalid: bool = False,
        overwrite: bool = False,
        progress: bool = True,
        fetch_workers: int = 1,
        queue_batches: int = 2,
    ) -> None:
        for name, value in (
            ("batch_size", batch_size),
            ("fetch_workers", fetch_workers),
            ("queue_batches", queue_batches),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigurationError(f"{name}: expected an integer >= 1, got {value!r}")
        for p in property_names(write_property):
            _quote_name(p, "write_property")
        if not isinstance(model, ModelBackend):
            raise ConfigurationError(f"model: expected a ModelBackend, got {type(model).__name__}")
        self.source = source
        self.model = model
        self.shard = Shard.parse(shard) if isinstance(shard, str) else (shard or Shard())
        self.batch_size = batch_size
        self.skip_invalid = bool(skip_invalid)
        self.overwrite = bool(overwrite)
        self.progress = progress
        self.fetch_workers = fetch_workers
        self.queue_batches = queue_batches
        self.write_property = write_property

        cfg = model.config
        options = {
            k: v for k, v in cfg.options.items() if k != "label_property"
        }  # no labels needed
        if options.get("seed") is None:
            options["seed"] = DEFAULT_SEED
        self.sampling = SamplingSpec(cfg.fanouts, cfg.properties, options)
        id_property = options.get("id_property")
        bundle_label = options.get("label")
        if label is not None and bundle_label is not None and label != bundle_label:
            raise ConfigurationError(
                f"label: the model samples :{bundle_label} nodes (its options.label), got {label!r}; "
                f"leave label out or give {bundle_label!r}"
            )
        label = label if label is not None else bundle_label
        self.label = label
        self.id_property = id_property
        self._fetcher = NeighbourhoodFetcher(source, serialize=False)

        if isinstance(source, BoltSource):
            if where is not None and not isinstance(where, str):
                raise ConfigurationError(
                    "where: expected a Cypher predicate string over n for a Bolt "
                    f"source, got {type(where).__name__}"
                )
            checked = check_where(where, where_params) if where is not None else None
            if where is None and where_params:
                raise ConfigurationError("where parameters: given without a where predicate")
            self._target: Any = _BoltTarget(
                source,
                id_property=id_property,
                label=label,
                where=checked,
                where_params=dict(where_params or {}),
                shard=self.shard,
                write_property=write_property,
                version=model.version,
            )
        elif isinstance(source, EmbeddedSource):
            if where is not None and not callable(where):
                raise ConfigurationError(
                    "where: the embedded graph runs no Cypher; expected a callable node id -> bool, "
                    f"got {type(where).__name__} (a Cypher predicate needs a Bolt graph)"
                )
            if where_params:
                raise ConfigurationError(
                    "where parameters: only for a Cypher predicate over a Bolt graph"
                )
            written = set(property_names(write_property)) & set(cfg.properties)
            if fetch_workers > 1 and written:
                raise ConfigurationError(
                    f"fetch_workers: the forked sampling processes read the graph as it was when the "
                    f"run started, but the model samples {sorted(written)}, which this run writes; use "
                    f"another write_property or fetch_workers=1"
                )
            self._target = _EmbeddedTarget(
                source,
                id_property=id_property,
                label=label,
                where=where,
                shard=self.shard,
                write_property=write_property,
                version=model.version,
            )
        else:
            raise ConfigurationError(
                f"source: expected a BoltSource or an EmbeddedSource, got {type(source).__name__}"
            )
        self._node_ids = None if node_ids is None else self._explicit_ids(node_ids)
        self.summary = BatchSummary(
            model.name, model.version, write_property, shard=str(self.shard)
        )
        self._stop = threading.Event()
        self._error: BaseException | None = None

    def _explicit_ids(self, node_ids: Iterable[int]) -> list[int]:
        ids = []
        for i, nid in enumerate(node_ids):
            if hasattr(nid, "item") and not isinstance(nid, int):
                nid = nid.item()  # numpy integers
            if not isinstance(nid, int) or isinstance(nid, bool):
                raise ConfigurationError(f"node_ids[{i}]: expected an integer id, got {nid!r}")
            if self.shard.contains(nid):
                ids.append(nid)
        return ids

    # -- stages ---------------------------------------------------------------------------------
    def _id_batches(self) -> Iterator[list[int]]:
        if self._node_ids is not None:
            for start in range(0, len(self._node_ids), self.batch_size):
                yield self._node_ids[start : start + self.batch_size]
            return
        after = None
        while not self._stop.is_set():
            ids = self._target.page(after, self.batch_size, not self.overwrite)
            if not ids:
                return
            yield ids
            after = ids[-1]

    def _fetch(self, ids: list[int]) -> _Batch:
        batch = _Batch(ids)
        good, batch.invalid = isolate(
            [(nid, None) for nid in ids],
            lambda items: self._fetcher.fetch([nid for nid, _ in items], self.sampling),
            fetch_error_is_node_specific,
            node_of=_first,
            skip_invalid=self.skip_invalid,
        )
        batch.pairs = [(nid, blob) for (nid, _), blob in good]
        return batch

    def _infer(self, batch: _Batch) -> _Batch:
        good, bad = isolate(
            batch.pairs,
            lambda items: self.model.classify([b for _, b in items]),
            lambda exc: isinstance(exc, ModelInputError),
            node_of=_first,
            skip_invalid=self.skip_invalid,
        )
        batch.predictions = [(nid, label, score) for (nid, _), (label, score) in good]
        batch.invalid += bad
        batch.pairs = []
        return batch

    def _write(self, batch: _Batch, bar: Any) -> None:
        written = self._target.write(batch.predictions) if batch.predictions else 0
        s = self.summary
        s.batches += 1
        s.classified += written
        if written < len(batch.predictions):
            logger.warning(
                "%d prediction(s) of this batch matched no node when written (deleted meanwhile?)",
                len(batch.predictions) - written,
            )
            s.failed += len(batch.predictions) - written
        for nid, reason in batch.invalid:
            logger.warning("skipped node %d: %s", nid, reason)
            s.skipped += 1
            if len(s.invalid) < MAX_LISTED_INVALID:
                s.invalid.append((nid, reason))
        bar.update(len(batch.ids))

    # -- threads --------------------------------------------------------------------------------
    def _put(self, q: queue.Queue, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                q.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def _get(self, q: queue.Queue) -> Any:
        while True:
            try:
                return q.get(timeout=_POLL_S)
            except queue.Empty:
                if self._stop.is_set():
                    return _END

    def _producer(self, out: queue.Queue, fetchers: _Fetchers) -> None:
        ids: list[int] = []
        try:
            for ids in self._id_batches():
                fetchers.submit(ids)
                if fetchers.idle:
                    continue
                ids = fetchers.oldest()
                if not self._put(out, fetchers.result()):
                    return
            while fetchers.pending():
                ids = fetchers.oldest()
                if not self._put(out, fetchers.result()):
                    return
            self._put(out, _END)
        except BaseException as exc:  # handed to the writer, in order after the good batches
            self._put(out, _Failure(exc, ids))
        finally:
            fetchers.close()

    def _inferencer(self, inq: queue.Queue, out: queue.Queue) -> None:
        while True:
            item = self._get(inq)
            if item is _END or isinstance(item, _Failure):
                self._put(out, item)
                return
            try:
                batch = self._infer(item)
            except BaseException as exc:
                self._put(out, _Failure(exc, item.ids))
                return
            if not self._put(out, batch):
                return

    def _writer(self, inq: queue.Queue, bar: Any) -> None:
        try:
            while True:
                item = self._get(inq)
                if item is _END:
                    return
                if isinstance(item, _Failure):
                    self.summary.failed += len(item.ids)
                    self._error = item.error
                    return
                self._write(item, bar)
                if self._stop.is_set():
                    return
        except BaseException as exc:
            self._error = exc
        finally:
            self._stop.set()

    def stop(self) -> None:
        """Asks a running :meth:`run` to stop after the batch being written (which completes)."""
        self._stop.set()

    def run(self) -> BatchSummary:
        """Runs the pipeline to the end; returns :attr:`summary`. Raises :class:`InvalidNodeError`
        (without ``skip_invalid``), the source's or model's error, or ``KeyboardInterrupt`` after
        the batch being written has been written; :attr:`summary` then tells what was done."""
        from tqdm.auto import tqdm

        t0 = time.perf_counter()
        s = self.summary
        if self._node_ids is not None:
            s.total = len(self._node_ids)
        else:
            s.total = self._target.count(not self.overwrite)
            if not self.overwrite:
                s.up_to_date = self._target.count(False) - s.total
        logger.info(
            "classifying %d node(s) with %s version %d (shard %s, batches of %d; %d already "
            "up to date)",
            s.total,
            self.model.name,
            self.model.version,
            self.shard,
            self.batch_size,
            s.up_to_date,
        )
        fetched: queue.Queue = queue.Queue(self.queue_batches)
        inferred: queue.Queue = queue.Queue(self.queue_batches)
        # the objects that exist now (an embedded graph's above all) are left out of the garbage
        # collector's passes during the run: sampling makes many short-lived objects, and each
        # full pass would walk the whole graph (~25% of sampling's CPU time at 100k nodes); in
        # forked fetch workers it also keeps the graph's pages shared. Not when the process has
        # frozen objects itself (gc.unfreeze would release those too).
        frozen = isinstance(self.source, EmbeddedSource) and gc.get_freeze_count() == 0
        if frozen:
            gc.collect()
            gc.freeze()
        try:  # forked before any thread of the run starts (a fork copies only the forking thread)
            fetchers = (
                _ForkedFetchers(self._fetch, self.fetch_workers, self.source._lock)
                if self.fetch_workers > 1 and isinstance(self.source, EmbeddedSource)
                else _Fetchers(self._fetch, self.fetch_workers)
            )
        except BaseException:
            if frozen:
                gc.unfreeze()
            raise
        bar = tqdm(
            total=s.total,
            unit="node",
            desc=f"classify {self.shard}",
            disable=not self.progress,
            smoothing=0.1,
            dynamic_ncols=True,
        )
        threads = [
            threading.Thread(
                target=self._producer, args=(fetched, fetchers), name="mgtf-ids-fetch", daemon=True
            ),
            threading.Thread(
                target=self._inferencer, args=(fetched, inferred), name="mgtf-model", daemon=True
            ),
        ]
        writer = threading.Thread(
            target=self._writer, args=(inferred, bar), name="mgtf-write", daemon=True
        )
        for t in threads + [writer]:
            t.start()
        try:
            while writer.is_alive():
                writer.join(_POLL_S)
        except KeyboardInterrupt:
            s.interrupted = True
            self._stop.set()
            writer.join()  # the batch being written is finished: no batch is half-written
            raise
        finally:
            self._stop.set()
            for t in threads:
                t.join(timeout=5.0)
            fetchers.close()
            if frozen:
                gc.unfreeze()
            bar.close()
            s.elapsed_s = time.perf_counter() - t0
        if self._error is not None:
            raise self._error
        logger.info("%s", s.text())
        return s


def classify_graph(source: GraphSource, model: ModelBackend, **options: Any) -> BatchSummary:
    """``BatchClassifier(source, model, **options).run()``: see :class:`BatchClassifier`."""
    return BatchClassifier(source, model, **options).run()


__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_SEED",
    "DEFAULT_WRITE_PROPERTY",
    "BatchClassifier",
    "BatchSummary",
    "BundleBackend",
    "ModelBackend",
    "ServingBackend",
    "Shard",
    "check_where",
    "classify_graph",
    "grpc_backend",
    "property_names",
    "rest_backend",
    "serialize_blob_example",
]
