"""A client for TensorFlow Serving's REST API (and the local server in :mod:`.server`).

:class:`ServingClient` speaks ``:classify``, ``:regress``, ``:predict``, model status and metadata.
It encodes values by TF Serving's JSON rules (``util/json_tensor.cc``): bytes as ``{"b64": ...}``
(standard base64), floats always with a decimal point or exponent (so a float feature never turns
into an int64 one), ints as ints. It keeps ONE pooled :class:`requests.Session`, puts a timeout on
every request, retries with exponential backoff on connection errors and on the statuses the
status table marks retryable (503 / 504 only: :data:`.errors.STATUS_TABLE`; urllib3's ``Retry``),
and splits requests whose JSON body would exceed ``max_request_bytes`` into parts whose results
are concatenated in order.

:func:`classify_nodes` turns node ids into neighbourhood blobs with
:mod:`memgraph_tf.serving.neighbourhoods` (the component the local server's ``node_id`` examples
use too) and classifies them. Signature names, the blob feature key and the bundle config come
from :mod:`memgraph_tf.serving.bundle`.

This module needs only ``requests`` (no TensorFlow) so that a thin client can import it.
"""

from __future__ import annotations

import base64
import json
import logging
import math
import numbers
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from memgraph_tf import errors
from memgraph_tf.serving.bundle import (
    CLASSIFY_SIGNATURE,
    CONFIG_INPUT,
    CONFIG_OUTPUT,
    CONFIG_SIGNATURE,
    DEFAULT_BLOB_FEATURE_KEY,
    EMBED_NODE_ID_INPUT,
    EMBED_SIGNATURE,
    BundleConfig,
    SamplingSpec,
    inference_sampling,
)
from memgraph_tf.serving.neighbourhoods import check_node_ids, fetch_blobs

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_RETRIES = 3
DEFAULT_BACKOFF_S = 0.2
DEFAULT_MAX_REQUEST_BYTES = 32 * 1024 * 1024

#: The HTTP statuses retried: the retryable rows of the status table (503, 504).
_RETRY_STATUSES = errors.RETRYABLE_HTTP_STATUSES


def check_version_and_label(version: Any, label: Any) -> None:
    """The version selection both clients share: at most one of ``version`` / ``label``, and a
    version is a non-negative int (not a bool). Each client checks ``label`` by its own rules."""
    if version is not None and label is not None:
        raise ValueError(f"version={version!r} and label={label!r}: expected at most one of them")
    if version is not None and (
        isinstance(version, bool) or not isinstance(version, int) or version < 0
    ):
        raise ValueError(f"version: expected a non-negative int or None, got {version!r}")


def check_timeout_s(value: Any, name: str = "timeout_s") -> float:
    """``value`` as a float if it is a number > 0 (not a bool); raises ValueError naming
    ``name``."""
    if (
        value is None
        or isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not value > 0
    ):
        raise ValueError(f"{name}: expected a number > 0, got {value!r}")
    return float(value)


def check_byte_limit(name: str, value: Any) -> int:
    """``value`` if it is an int >= 64 (not a bool); raises ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 64:
        raise ValueError(f"{name}: expected an int >= 64, got {value!r}")
    return value


class ServingClientBase:
    """What :class:`ServingClient` and :class:`~memgraph_tf.serving.grpc_client.GrpcServingClient`
    share: the checks and attributes of their common arguments (``model``, ``version`` /
    ``label``, ``timeout_s``, ``retries``, ``backoff_s``, ``max_request_bytes``,
    ``classify_signature``, ``blob_feature_key``) and the context manager that closes them.
    Each client checks ``model`` and ``label`` by its own protocol's rules first."""

    def _set_common(
        self,
        model: str,
        version: int | None,
        label: str | None,
        timeout_s: Any,
        retries: Any,
        backoff_s: Any,
        max_request_bytes: Any,
        classify_signature: str | None,
        blob_feature_key: str,
    ) -> None:
        check_version_and_label(version, label)
        timeout_s = check_timeout_s(timeout_s)
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError(f"retries: expected an int >= 0, got {retries!r}")
        if backoff_s is None or isinstance(backoff_s, bool) or not backoff_s >= 0:
            raise ValueError(f"backoff_s: expected a number >= 0, got {backoff_s!r}")
        self.model = model
        self.version = version
        self.label = label
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = float(backoff_s)
        self.max_request_bytes = check_byte_limit("max_request_bytes", max_request_bytes)
        self.classify_signature = classify_signature
        self.blob_feature_key = blob_feature_key

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_instances_or_inputs(instances: Any, inputs: Any) -> None:
    """``predict``'s rule in both clients: exactly one of ``instances`` / ``inputs``."""
    if (instances is None) == (inputs is None):
        raise ValueError(
            "instances / inputs: expected exactly one of them, got "
            f"{'both' if instances is not None else 'neither'}"
        )


def config_from_predict(out: Any) -> BundleConfig:
    """The bundle config from what the ``memgraph_tf_config`` predict signature answered (a
    ``{CONFIG_OUTPUT: text}`` mapping, or the bare value; a list holds it first), validated."""
    text = out[CONFIG_OUTPUT] if isinstance(out, dict) else out
    if isinstance(text, list):
        text = text[0]
    return BundleConfig.from_json(text)


class _Retry(Retry):
    """urllib3's Retry with the backoff this client promises: ``backoff_s`` before the first
    retry, then doubling (urllib3 itself retries the first time without waiting)."""

    def get_backoff_time(self) -> float:
        failed = 0
        for attempt in reversed(self.history):
            if attempt.redirect_location is not None:
                break
            failed += 1
        if failed == 0 or self.backoff_factor <= 0:
            return 0.0
        return float(min(self.backoff_max, self.backoff_factor * 2 ** (failed - 1)))


# ------------------------------------------------------------------------------------------ JSON
def _float_text(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return repr(float(x))  # repr of a Python float always has '.' or 'e'


def encode_value(value: Any) -> str:
    """Encode one feature or tensor value as TF Serving REST JSON text.

    Guarantees: bytes-like -> ``{"b64": "<standard base64>"}``; ``str`` -> a JSON string;
    ``bool`` -> ``true``/``false``; integers -> JSON integers; floats (Python or numpy) -> numbers
    that always carry a decimal point or exponent (``1.0``, not ``1``), ``NaN``/``Infinity`` as
    TF Serving writes them; a list holding any float writes all its numbers as floats; numpy
    arrays and nested sequences -> nested JSON lists. Raises TypeError naming the bad type.
    """
    if isinstance(value, (bytes, bytearray, memoryview)):
        return '{"b64":"' + base64.b64encode(bytes(value)).decode("ascii") + '"}'
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (bool,)) or type(value).__name__ == "bool_":
        return "true" if bool(value) else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return _float_text(float(value))
    if hasattr(value, "tolist") and hasattr(value, "dtype"):  # numpy array or scalar
        kind = value.dtype.kind
        if kind == "f":
            return _encode_list(value.astype("float64").tolist(), force_float=True)
        if kind in "SO" or kind == "U":
            return _encode_list(value.tolist(), force_float=False)
        return json.dumps(value.tolist(), separators=(",", ":"))
    if isinstance(value, Mapping):
        raise TypeError(
            f"feature value: expected bytes, str, bool, int, float or a list of them, got a "
            f"mapping with keys {sorted(value)!r}"
        )
    if isinstance(value, Iterable):
        return _encode_list(list(value), force_float=None)
    raise TypeError(
        f"feature value: expected bytes, str, bool, int, float or a list of them, got "
        f"{type(value).__name__}"
    )


def _contains_float(items: list) -> bool:
    for v in items:
        if isinstance(v, list):
            if _contains_float(v):
                return True
        elif isinstance(v, numbers.Real) and not isinstance(v, numbers.Integral):
            return True
    return False


def _encode_list(items: list, force_float: bool | None) -> str:
    if force_float is None:
        force_float = _contains_float(items)
    parts = []
    for v in items:
        if isinstance(v, list):
            parts.append(_encode_list(v, force_float))
        elif force_float and isinstance(v, numbers.Real) and not isinstance(v, bool):
            parts.append(_float_text(float(v)))
        else:
            parts.append(encode_value(v))
    return "[" + ",".join(parts) + "]"


def encode_example(example: Any, blob_feature_key: str = DEFAULT_BLOB_FEATURE_KEY) -> str:
    """Encode one classify/regress example: a bytes-like value is a node blob and becomes
    ``{blob_feature_key: {"b64": ...}}``; a mapping becomes ``{feature: value, ...}``."""
    if isinstance(example, (bytes, bytearray, memoryview)):
        return "{" + json.dumps(blob_feature_key) + ":" + encode_value(example) + "}"
    if isinstance(example, Mapping):
        return (
            "{"
            + ",".join(json.dumps(str(k)) + ":" + encode_value(v) for k, v in example.items())
            + "}"
        )
    raise TypeError(
        f"examples: expected each example to be a blob (bytes) or a mapping of features, got "
        f"{type(example).__name__}"
    )


# ---------------------------------------------------------------------------------------- client
class ServingClient(ServingClientBase):
    """A client for one model on a TF Serving (or compatible) REST endpoint.

    ``version`` and ``label`` select ``/versions/N`` or ``/labels/L`` (at most one); neither means
    the latest version. ``timeout_s`` bounds every request (connect and read). ``retries`` is the
    number of extra attempts after a connection error (the connection could not be made) or a
    503/504 answer, waiting ``backoff_s`` before the first retry and doubling the wait each time
    (or what ``Retry-After`` says when the server sends it); nothing else is retried: not
    4xx/500, not a read timeout and not a connection dropped after the request was sent (the
    server may have done the work). A request whose body would exceed ``max_request_bytes`` is
    split into parts by item; results come back concatenated in order.
    Thread-safe for concurrent calls (one pooled session of ``pool_size`` connections).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        version: int | None = None,
        label: str | None = None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        retries: int = DEFAULT_RETRIES,
        backoff_s: float = DEFAULT_BACKOFF_S,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        classify_signature: str | None = CLASSIFY_SIGNATURE,
        blob_feature_key: str = DEFAULT_BLOB_FEATURE_KEY,
        pool_size: int = 8,
    ):
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url: expected an http:// or https:// URL, got {base_url!r}")
        if not model or "/" in model or ":" in model:
            raise ValueError(f"model: expected a model name without '/' or ':', got {model!r}")
        if label is not None and (
            not isinstance(label, str) or not label or any(c in label for c in "/:?#")
        ):
            raise ValueError(
                f"label: expected a version label without '/', ':', '?' or '#', "
                f"or None, got {label!r}"
            )
        self._set_common(
            model,
            version,
            label,
            timeout_s,
            retries,
            backoff_s,
            max_request_bytes,
            classify_signature,
            blob_feature_key,
        )
        self.base_url = base_url.rstrip("/")
        path = f"/v1/models/{model}"
        if version is not None:
            path += f"/versions/{version}"
        elif label is not None:
            path += f"/labels/{label}"
        self.model_url = self.base_url + path
        self.session = requests.Session()
        retry = _Retry(
            total=retries,
            connect=retries,
            read=0,
            status=retries,
            other=0,
            redirect=0,
            status_forcelist=_RETRY_STATUSES,
            allowed_methods=None,  # POST :classify/:predict are safe to repeat
            backoff_factor=backoff_s,
            raise_on_status=False,
            respect_retry_after_header=True,
        )
        adapter = HTTPAdapter(max_retries=retry, pool_connections=1, pool_maxsize=pool_size)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)

    # -- plumbing
    def close(self) -> None:
        """Close the pooled session."""
        self.session.close()

    def _request(self, method: str, url: str, body: str | None = None) -> Any:
        data = body.encode("utf-8") if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else None
        try:
            resp = self.session.request(
                method, url, data=data, headers=headers, timeout=self.timeout_s
            )
        except requests.exceptions.Timeout as exc:
            raise errors.ServingTimeoutError(
                f"no answer within timeout_s={self.timeout_s}: {exc}", url=url
            ) from exc
        except requests.exceptions.ConnectionError as exc:
            raise errors.ServingConnectionError(
                f"cannot reach the server after {self.retries} retries: {exc}", url=url
            ) from exc
        try:
            payload = resp.json()
        except ValueError:
            payload = None
        if not 200 <= resp.status_code < 300:
            if isinstance(payload, dict) and isinstance(payload.get("error"), str):
                message = payload["error"]
            else:
                message = resp.text[:2000] or resp.reason or ""
            raise errors.error_for_status(resp.status_code, message, url)
        if not isinstance(payload, dict):
            raise errors.InvalidResponseError(
                f"expected a JSON object, got {resp.text[:200]!r}", status=resp.status_code, url=url
            )
        return payload

    def _parts(self, head: str, items: list[str], tail: str) -> list[str]:
        """Bodies ``head + ",".join(part) + tail`` each within max_request_bytes."""
        fixed = len(head.encode()) + len(tail.encode())
        bodies: list[str] = []
        part: list[str] = []
        size = fixed
        for i, item in enumerate(items):
            n = len(item.encode()) + (1 if part else 0)
            if fixed + len(item.encode()) > self.max_request_bytes:
                raise errors.RequestTooLargeError(
                    f"item {i} alone makes a request of {fixed + len(item.encode())} bytes, above "
                    f"max_request_bytes={self.max_request_bytes}"
                )
            if part and size + n > self.max_request_bytes:
                bodies.append(head + ",".join(part) + tail)
                part, size, n = [], fixed, len(item.encode())
            part.append(item)
            size += n
        if part or not bodies:
            bodies.append(head + ",".join(part) + tail)
        if len(bodies) > 1:
            logger.debug("split a request of %d items into %d parts", len(items), len(bodies))
        return bodies

    def _head(self, signature_name: str | None, context: Mapping | None) -> str:
        head = "{"
        if signature_name:
            head += '"signature_name":' + json.dumps(signature_name) + ","
        if context is not None:
            head += '"context":' + encode_example(context, self.blob_feature_key) + ","
        return head

    # -- API
    def classify(
        self,
        examples: Sequence[Any],
        *,
        signature_name: str | None = ...,  # type: ignore[assignment] -- ...: the client's default
        context: Mapping[str, Any] | None = None,
    ) -> list[list[tuple[str, float]]]:
        """``:classify``: one result per example, each a list of ``(label, score)`` pairs in the
        order the model returns them. ``examples`` are blobs (bytes; sent as the
        ``blob_feature_key`` feature) or mappings of feature name to value. ``signature_name``
        defaults to the client's ``classify_signature``; ``None`` sends none (the server then
        uses ``serving_default``). Raises a :mod:`.errors` error on failure."""
        if signature_name is ...:
            signature_name = self.classify_signature
        results: list[list[tuple[str, float]]] = []
        for part in self._example_results("classify", examples, signature_name, context):
            results.extend([(str(lbl), float(score)) for lbl, score in row] for row in part)
        return results

    def regress(
        self,
        examples: Sequence[Any],
        *,
        signature_name: str | None = None,
        context: Mapping[str, Any] | None = None,
    ) -> list[float]:
        """``:regress``: one float per example (same example encoding as :meth:`classify`)."""
        out: list[float] = []
        for part in self._example_results("regress", examples, signature_name, context):
            out.extend(float(v) for v in part)
        return out

    def _example_results(
        self,
        verb: str,
        examples: Sequence[Any],
        signature_name: str | None,
        context: Mapping[str, Any] | None,
    ) -> Iterator[list[Any]]:
        """POSTs ``examples`` to ``:verb`` (in parts, see :meth:`_parts`) and yields each answer's
        ``results`` list in order; an answer without one is an ``InvalidResponseError``."""
        items = [encode_example(e, self.blob_feature_key) for e in examples]
        url = f"{self.model_url}:{verb}"
        for body in self._parts(self._head(signature_name, context) + '"examples":[', items, "]}"):
            payload = self._request("POST", url, body)
            part = payload.get("results")
            if not isinstance(part, list):
                raise errors.InvalidResponseError(
                    f"expected key 'results' holding a list, got keys {sorted(payload)}", url=url
                )
            yield part

    def predict(
        self,
        instances: Sequence[Any] | None = None,
        *,
        inputs: Any = None,
        signature_name: str | None = None,
    ) -> Any:
        """``:predict`` in row format (``instances``: a list, one item per batch row; returns the
        ``predictions`` list) or columnar format (``inputs``: a value or a mapping of input name to
        value; returns ``outputs``). Exactly one of them. Row requests split by row; columnar
        requests split only when every input is a list of the same length, and then each output
        is concatenated along its first dimension."""
        check_instances_or_inputs(instances, inputs)
        head = self._head(signature_name, None)
        url = self.model_url + ":predict"
        if instances is not None:
            items = [
                encode_value(x)
                if not isinstance(x, Mapping)
                else "{"
                + ",".join(json.dumps(str(k)) + ":" + encode_value(v) for k, v in x.items())
                + "}"
                for x in instances
            ]
            preds: list[Any] = []
            for body in self._parts(head + '"instances":[', items, "]}"):
                payload = self._request("POST", url, body)
                if "predictions" not in payload:
                    raise errors.InvalidResponseError(
                        f"expected key 'predictions', got keys {sorted(payload)}", url=url
                    )
                preds.extend(payload["predictions"])
            return preds
        if isinstance(inputs, Mapping):
            body = (
                head
                + '"inputs":{'
                + ",".join(json.dumps(str(k)) + ":" + encode_value(v) for k, v in inputs.items())
                + "}}"
            )
            lengths = {
                len(v)
                if isinstance(v, (list, tuple))
                or (hasattr(v, "shape") and getattr(v, "ndim", 0) > 0)
                else -1
                for v in inputs.values()
            }
            if (
                len(body.encode()) <= self.max_request_bytes
                or len(lengths) != 1
                or lengths == {-1}
                or next(iter(lengths)) < 2
            ):
                if len(body.encode()) > self.max_request_bytes:
                    raise errors.RequestTooLargeError(
                        f"a columnar request of {len(body.encode())} bytes cannot be split (inputs "
                        f"do not share a first dimension) and exceeds max_request_bytes="
                        f"{self.max_request_bytes}"
                    )
                return self._outputs(self._request("POST", url, body), url)
            n = next(iter(lengths))
            half = n // 2
            first = self.predict(
                inputs={k: v[:half] for k, v in inputs.items()}, signature_name=signature_name
            )
            second = self.predict(
                inputs={k: v[half:] for k, v in inputs.items()}, signature_name=signature_name
            )
            if isinstance(first, dict):
                return {k: list(first[k]) + list(second[k]) for k in first}
            return list(first) + list(second)
        body = head + '"inputs":' + encode_value(inputs) + "}"
        if len(body.encode()) > self.max_request_bytes:
            if isinstance(inputs, (list, tuple)) and len(inputs) > 1:
                half = len(inputs) // 2
                a = self.predict(inputs=list(inputs[:half]), signature_name=signature_name)
                b = self.predict(inputs=list(inputs[half:]), signature_name=signature_name)
                if isinstance(a, dict):
                    return {k: list(a[k]) + list(b[k]) for k in a}
                return list(a) + list(b)
            raise errors.RequestTooLargeError(
                f"a columnar request of {len(body.encode())} bytes exceeds max_request_bytes="
                f"{self.max_request_bytes}"
            )
        return self._outputs(self._request("POST", url, body), url)

    def embed(self, node_ids: Sequence[int], *, signature_name: str = EMBED_SIGNATURE) -> Any:
        """The embeddings of the nodes ``node_ids``, named by id (``:predict`` of
        ``signature_name`` with ``{"inputs": {"node_id": [...]}}``: a node bundle's ``embed``, a
        link bundle's ``embed_source`` / ``embed_target``) from a server started with
        ``--graph``: float32 ``[len(node_ids), D]``, in order."""
        import numpy as np

        ids = [int(i) for i in node_ids]
        answer = self.predict(inputs={EMBED_NODE_ID_INPUT: ids}, signature_name=signature_name)
        return np.asarray(answer, np.float32)

    @staticmethod
    def _outputs(payload: dict, url: str) -> Any:
        if "outputs" not in payload:
            raise errors.InvalidResponseError(
                f"expected key 'outputs', got keys {sorted(payload)}", url=url
            )
        return payload["outputs"]

    def status(self) -> dict:
        """``GET /v1/models/NAME[/versions/N|/labels/L]``: the model version status answer."""
        return self._request("GET", self.model_url)

    def metadata(self) -> dict:
        """``GET .../metadata``: the model spec and its signature defs as TF Serving reports
        them."""
        return self._request("GET", self.model_url + "/metadata")

    def bundle_config(self) -> BundleConfig:
        """The config a memgraph-tf bundle was exported with (fanouts, properties, options, blob
        feature key, class names, ...), read through its ``memgraph_tf_config`` predict signature,
        which works on stock TF Serving too. Validated: a config that breaks the bundle contract
        raises :class:`~memgraph_tf.errors.BundleError` naming the key. Never contains a
        graph URI or credentials."""
        return config_from_predict(
            self.predict(inputs={CONFIG_INPUT: 0}, signature_name=CONFIG_SIGNATURE)
        )

    def sampling_config(self) -> dict:
        """:meth:`bundle_config` as a plain JSON dict (``BundleConfig.to_dict()``)."""
        return self.bundle_config().to_dict()


def classify_nodes(
    source: Any,
    client: ServingClient,
    node_ids: Sequence[int],
    *,
    sampling: SamplingSpec | Mapping[str, Any] | None = None,
) -> list[tuple[int, str, float]]:
    """Classify graph nodes through a serving endpoint: ``node_ids`` -> each node's neighbourhood
    blob from ``source.sample_blobs_per_node(seeds, fanouts, properties, options)`` -> ``:classify``
    -> ``(node_id, label, score)`` per node, in input order, where ``label`` is the top class.

    ``sampling`` (a :class:`~memgraph_tf.serving.bundle.SamplingSpec`, or a mapping with keys
    ``fanouts``, ``properties``, ``options``) defaults to the settings stored in the bundle
    (:meth:`ServingClient.bundle_config`) as inference uses them
    (:func:`~memgraph_tf.serving.bundle.inference_sampling`: the bundle's seed, else
    :data:`~memgraph_tf.serving.bundle.DEFAULT_SEED`), so the blobs match what the model was
    trained on and a node gets the answer ``memgraph-tf serve`` and ``classify`` give it. Large
    id lists are split by the client's ``max_request_bytes``.

    Ids are integers (``numbers.Integral``) in the int64 range, else
    :class:`~memgraph_tf.errors.NodeIdError`; a bad ``sampling`` raises
    :class:`~memgraph_tf.errors.BundleError`; the graph's failures arrive as the
    :class:`~memgraph_tf.errors.NeighbourhoodError` subclasses of
    :mod:`memgraph_tf.serving.neighbourhoods` (a ConnectionError for an unreachable graph, a
    ValueError for missing nodes), the source's error as ``__cause__``.
    """
    ids = check_node_ids(list(node_ids))
    if not ids:
        return []
    if isinstance(sampling, SamplingSpec):
        spec = sampling
    elif sampling is not None:
        spec = SamplingSpec.from_mapping(sampling)
    else:
        spec = inference_sampling(client.bundle_config())
    blobs = fetch_blobs(source, ids, spec)
    results = client.classify(blobs)
    out = []
    for nid, pairs in zip(ids, results):
        if not pairs:
            raise errors.InvalidResponseError(f"node {nid}: the server returned no classes")
        label, score = max(pairs, key=lambda p: p[1])
        out.append((nid, label, score))
    return out
