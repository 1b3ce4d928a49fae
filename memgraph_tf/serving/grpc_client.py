"""A gRPC client for TensorFlow Serving (and ``memgraph-tf serve --grpc-port``): the twin of the
REST :class:`~memgraph_tf.serving.client.ServingClient`.

:class:`GrpcServingClient` has the REST client's methods with the same arguments and the same
return shapes -- ``classify`` -> ``[[(label, score), ...], ...]``, ``regress`` -> ``[float]``,
``predict`` -> the ``predictions`` / ``outputs`` value the REST API would answer, by the REST
server's own output rules (:mod:`.json_output`: bytes outputs named ``*_bytes`` or not UTF-8 as
``{"b64": ...}``; a dtype TF Serving's REST API cannot write, such as uint16, is the same
BadRequestError), ``status`` and ``metadata`` -> the REST JSON
documents, ``bundle_config`` / ``sampling_config`` -- and raises the same
:mod:`~memgraph_tf.errors` classes. It speaks ``tensorflow.serving.PredictionService`` and
``ModelService`` through the stubs generated in ``tensorflow-serving-api`` (``stub`` and
``model_stub`` are there for raw calls).

- Errors: a gRPC status becomes the error class and HTTP status of its row in the status table
  (:data:`memgraph_tf.errors.STATUS_TABLE`, the statuses TF Serving's REST front end
  gives the same code: INVALID_ARGUMENT / FAILED_PRECONDITION / OUT_OF_RANGE -> BadRequestError
  400, NOT_FOUND -> NotFoundError 404, UNIMPLEMENTED -> NotImplementedByServerError 501,
  UNAVAILABLE -> UnavailableError 503, DEADLINE_EXCEEDED -> DeadlineExceededError 504,
  RESOURCE_EXHAUSTED -> TooManyRequestsError 429 or, for a message above a size limit,
  RequestTooLargeError 413, INTERNAL / UNKNOWN / DATA_LOSS -> InternalServerError 500 ...).
  ``message`` is the server's status details; ``status`` the equivalent HTTP status; the
  instance's ``grpc_code`` the gRPC code's name (``"NOT_FOUND"``); ``url`` the target. No answer
  within the call's deadline is a ServingTimeoutError; a server that cannot be reached (UNAVAILABLE
  before any answer) a ServingConnectionError, once the retries are spent.
- Deadlines: every call has one, ``timeout_s`` (per client, or per call).
- Retries: every call here is side-effect-free, so the codes the status table marks retryable --
  UNAVAILABLE (connection refused, server or graph unavailable) and a DEADLINE_EXCEEDED the
  *server* answered -- are retried up to ``retries`` times,
  waiting ``backoff_s`` before the first retry and twice as long before each next one. The
  client's own deadline running out is not retried (as the REST client does not retry a read
  timeout). Nothing else is retried.
- A request whose serialized size would exceed ``max_request_bytes`` is split by example / row;
  results are concatenated in order. One item alone above the limit raises RequestTooLargeError
  without sending.
- Values: examples and ``context`` are blobs (bytes, sent as the ``blob_feature_key`` feature) or
  mappings of feature name to value, written by the REST client's JSON rules into ``tf.Example``s
  (:func:`memgraph_tf.serving.grpc_codec.fill_feature`); a feature is one flat list, so a nested
  list raises TypeError here (REST would answer 400). Predict inputs are cast to the signature's
  dtypes (read once through GetModelMetadata and cached), as the REST server converts JSON.

Importing this module imports TensorFlow (the protos of ``tensorflow-serving-api`` live in
TensorFlow's package).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import grpc
import numpy as np
from google.protobuf import json_format
from tensorflow_serving.apis import (
    classification_pb2,
    get_model_metadata_pb2,
    get_model_status_pb2,
    model_pb2,
    model_service_pb2_grpc,
    predict_pb2,
    prediction_service_pb2,
    prediction_service_pb2_grpc,
    regression_pb2,
)

from memgraph_tf import errors
from memgraph_tf.serving import grpc_codec, json_output
from memgraph_tf.serving.bundle import (
    CLASSIFY_SIGNATURE,
    CONFIG_INPUT,
    CONFIG_SIGNATURE,
    DEFAULT_BLOB_FEATURE_KEY,
    DEFAULT_SIGNATURE,
    EMBED_NODE_ID_INPUT,
    EMBED_SIGNATURE,
    EMBEDDINGS_OUTPUT,
    SIGNATURE_DEF_FIELD,
    BundleConfig,
)
from memgraph_tf.serving.client import (  # the REST client's defaults and argument rules
    DEFAULT_BACKOFF_S,
    DEFAULT_MAX_REQUEST_BYTES,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT_S,
    ServingClientBase,
    check_byte_limit,
    check_instances_or_inputs,
    check_timeout_s,
    config_from_predict,
)

logger = logging.getLogger(__name__)

DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024
#: gRPC code -> the HTTP status TF Serving's REST front end answers it with: a view of the status
#: table (:func:`.errors.http_status_for`), kept for callers of the older name.
HTTP_STATUS_FOR_GRPC: dict[grpc.StatusCode, int] = {
    grpc.StatusCode[row.code]: errors.http_status_for(row.code) for row in errors.STATUS_TABLE
}
# gRPC core's details when no connection could be made (not an answer from the server).
_NO_CONNECTION = re.compile(
    r"failed to connect|connection refused|DNS resolution failed|"
    r"connections to all backends failing|Socket closed|"
    r"Connection reset|name resolution",
    re.IGNORECASE,
)
# RESOURCE_EXHAUSTED for a request above a size limit (REST: 413), not for a busy server (429).
_TOO_LARGE = re.compile(r"message larger than max|max_examples", re.IGNORECASE)
# Bytes a repeated message field adds per element: tag + length varint (<= 5 bytes).
_PER_ITEM_BYTES = 6
_HEAD_BYTES = 1024
# How TF Serving's REST API prints status and metadata protos (http_rest_api_util.cc).
_JSON_OPTIONS = {"preserving_proto_field_name": True, "always_print_fields_with_no_presence": True}


def error_from_rpc(
    code: grpc.StatusCode,
    details: str,
    target: str | None = None,
    *,
    timed_out: bool = False,
    retries: int = 0,
) -> errors.ServingError:
    """The :mod:`.errors` instance for a failed call: see the module docstring. ``timed_out``
    marks the client's own deadline; the result's ``grpc_code`` is ``code.name``."""
    details = details or ""
    name = code.name
    if timed_out:
        return errors.ServingTimeoutError(
            f"no answer within the deadline: {details}", url=target, grpc_code=name
        )
    if name == "UNAVAILABLE" and _NO_CONNECTION.search(details):
        return errors.ServingConnectionError(
            f"cannot reach the server after {retries} retries: {details}",
            url=target,
            grpc_code=name,
        )
    if name == "RESOURCE_EXHAUSTED" and _TOO_LARGE.search(details):
        status = errors.REQUEST_TOO_LARGE_STATUS  # a size limit, as the REST server's 413
    else:
        status = errors.http_status_for(name)
    return errors.error_for_status(status, details, target, grpc_code=name)


class GrpcServingClient(ServingClientBase):
    """A gRPC client for one model of a TF Serving (or compatible) server at ``target``
    (``host:port``, or any gRPC target string). Thread-safe: one channel, shared by all calls.

    ``version`` / ``label`` select the version (at most one; neither: the newest).
    ``timeout_s`` is every call's deadline (each method also takes ``timeout_s`` for one call).
    ``retries`` / ``backoff_s``: see the module docstring. ``max_request_bytes`` splits requests;
    ``max_response_bytes`` bounds answers (gRPC's receive limit). ``credentials`` (a
    ``grpc.ChannelCredentials``) makes a TLS channel. ``channel_options`` are extra gRPC channel
    arguments. ``classify_signature`` / ``blob_feature_key`` as in ServingClient.
    """

    def __init__(
        self,
        target: str,
        model: str,
        version: int | None = None,
        label: str | None = None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        retries: int = DEFAULT_RETRIES,
        backoff_s: float = DEFAULT_BACKOFF_S,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        classify_signature: str | None = CLASSIFY_SIGNATURE,
        blob_feature_key: str = DEFAULT_BLOB_FEATURE_KEY,
        credentials: grpc.ChannelCredentials | None = None,
        channel_options: Sequence[tuple[str, Any]] = (),
    ):
        if not isinstance(target, str) or not target or target.startswith(("http://", "https://")):
            raise ValueError(
                f"target: expected a gRPC target such as 'host:8500' (no http:// "
                f"scheme: that is ServingClient's), got {target!r}"
            )
        if not isinstance(model, str) or not model:
            raise ValueError(f"model: expected a non-empty model name, got {model!r}")
        if label is not None and (not isinstance(label, str) or not label):
            raise ValueError(f"label: expected a non-empty str or None, got {label!r}")
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
        self.max_response_bytes = check_byte_limit("max_response_bytes", max_response_bytes)
        self.target = target
        options = [
            ("grpc.max_send_message_length", max_request_bytes + _HEAD_BYTES),
            ("grpc.max_receive_message_length", max_response_bytes),
            *channel_options,
        ]
        self.channel = (
            grpc.secure_channel(target, credentials, options)
            if credentials
            else grpc.insecure_channel(target, options)
        )
        self.stub = prediction_service_pb2_grpc.PredictionServiceStub(self.channel)
        self.model_stub = model_service_pb2_grpc.ModelServiceStub(self.channel)
        # Classify / Regress take requests written as bytes (see _example_calls).
        service = prediction_service_pb2.DESCRIPTOR.services_by_name["PredictionService"]
        self._example_methods = {
            name: self.channel.unary_unary(
                f"/{service.full_name}/{name}",
                request_serializer=None,
                response_deserializer=response.FromString,
            )
            for name, response in (
                ("Classify", classification_pb2.ClassificationResponse),
                ("Regress", regression_pb2.RegressionResponse),
            )
        }
        self._signatures: dict[str, Any] | None = None
        self._lock = threading.Lock()

    # -- plumbing
    def close(self) -> None:
        """Close the channel."""
        self.channel.close()

    def _spec(self, spec: Any, signature_name: str | None = None) -> None:
        spec.name = self.model
        if self.version is not None:
            spec.version.value = self.version
        elif self.label is not None:
            spec.version_label = self.label
        if signature_name:
            spec.signature_name = signature_name

    def _call(self, method: Any, request: Any, timeout_s: float | None) -> Any:
        """One unary call with the deadline, retries and error mapping of the module docstring."""
        deadline_s = self.timeout_s if timeout_s is None else check_timeout_s(timeout_s)
        wait_s = self.backoff_s
        attempt = 0
        while True:
            start = time.monotonic()
            try:
                return method(request, timeout=deadline_s)
            except grpc.RpcError as exc:
                code = exc.code() if callable(getattr(exc, "code", None)) else None
                details = exc.details() if callable(getattr(exc, "details", None)) else str(exc)
                code = code or grpc.StatusCode.UNKNOWN
                # Our own deadline ran out (not a DEADLINE_EXCEEDED the server chose to send).
                timed_out = (
                    code == grpc.StatusCode.DEADLINE_EXCEEDED
                    and time.monotonic() - start >= 0.95 * deadline_s
                )
                if errors.is_retryable(code.name) and not timed_out and attempt < self.retries:
                    attempt += 1
                    logger.debug(
                        "%s from %s: %s; retry %d/%d in %.3f s",
                        code.name,
                        self.target,
                        details,
                        attempt,
                        self.retries,
                        wait_s,
                    )
                    time.sleep(wait_s)
                    wait_s *= 2
                    continue
                raise error_from_rpc(
                    code, details, self.target, timed_out=timed_out, retries=attempt
                ) from None

    def _example(self, example: Any) -> Any:
        if isinstance(example, (bytes, bytearray, memoryview)):
            return grpc_codec.example_from_features({self.blob_feature_key: bytes(example)})
        if isinstance(example, Mapping):
            return grpc_codec.example_from_features(example)
        raise TypeError(
            f"examples: expected each example to be a blob (bytes) or a mapping of "
            f"features, got {type(example).__name__}"
        )

    def _parts(self, sizes: list[int], fixed: int) -> list[tuple[int, int]]:
        """``(start, stop)`` ranges of items whose request stays within max_request_bytes."""
        parts, start, size = [], 0, fixed
        for i, n in enumerate(sizes):
            n += _PER_ITEM_BYTES
            if fixed + n > self.max_request_bytes:
                raise errors.RequestTooLargeError(
                    f"item {i} alone makes a request of {fixed + n} bytes, above "
                    f"max_request_bytes={self.max_request_bytes}"
                )
            if i > start and size + n > self.max_request_bytes:
                parts.append((start, i))
                start, size = i, fixed
            size += n
        parts.append((start, len(sizes)))
        if len(parts) > 1:
            logger.debug("split a request of %d items into %d parts", len(sizes), len(parts))
        return parts

    def _example_bytes(self, example: Any) -> tuple[Any, Any]:
        """One example as the two parts of its serialized tf.Example (see
        :func:`~memgraph_tf.serving.grpc_codec.example_request`); a blob is not copied."""
        if isinstance(example, (bytes, bytearray, memoryview)):
            blob = example
            if isinstance(blob, memoryview):  # its bytes, whatever its format and strides
                blob = blob.cast("B") if blob.c_contiguous else bytes(blob)
            return grpc_codec.blob_example_prefix(len(blob), self.blob_feature_key), blob
        return self._example(example).SerializeToString(), b""

    def _example_calls(
        self,
        method: str,
        examples: Sequence[Any],
        signature_name: str | None,
        context: Mapping[str, Any] | None,
        timeout_s: float | None,
    ) -> list[Any]:
        """One ``method`` (Classify / Regress) call per part of ``examples`` that fits
        max_request_bytes (usually one). The request is written as bytes, byte for byte what
        the request message would serialize to, with each blob copied once (into the request);
        building it as a message and serializing that costs several times more (see
        :mod:`~memgraph_tf.serving.grpc_codec`)."""
        spec = model_pb2.ModelSpec()
        self._spec(spec, signature_name)
        spec_bytes = spec.SerializeToString()
        ctx = self._example(context).SerializeToString() if context is not None else None
        items = [self._example_bytes(e) for e in examples]
        fixed = _HEAD_BYTES + (len(ctx) if ctx is not None else 0)
        parts = self._parts([len(head) + len(body) for head, body in items], fixed)
        call = self._example_methods[method]
        return [
            self._call(
                call, grpc_codec.example_request(spec_bytes, items[start:stop], ctx), timeout_s
            )
            for start, stop in parts
        ]

    # -- API
    def classify(
        self,
        examples: Sequence[Any],
        *,
        signature_name: str | None = ...,  # type: ignore[assignment] -- ...: the client's default
        context: Mapping[str, Any] | None = None,
        timeout_s: float | None = None,
    ) -> list[list[tuple[str, float]]]:
        """Classify: one result per example, each a list of ``(label, score)`` pairs in the
        model's order (``""`` / ``0.0`` where the signature has no classes / scores output).
        ``signature_name`` defaults to the client's ``classify_signature``; ``None`` sends none
        (the server then uses ``serving_default``). ``context`` makes an
        ExampleListWithContext."""
        if signature_name is ...:
            signature_name = self.classify_signature
        out: list[list[tuple[str, float]]] = []
        for resp in self._example_calls("Classify", examples, signature_name, context, timeout_s):
            out.extend(
                [(c.label, float(c.score)) for c in row.classes]
                for row in resp.result.classifications
            )
        if len(out) != len(examples):
            raise errors.InvalidResponseError(
                f"expected {len(examples)} classifications, got {len(out)}", url=self.target
            )
        return out

    def regress(
        self,
        examples: Sequence[Any],
        *,
        signature_name: str | None = None,
        context: Mapping[str, Any] | None = None,
        timeout_s: float | None = None,
    ) -> list[float]:
        """Regress: one float per example (same example encoding as :meth:`classify`)."""
        out: list[float] = []
        for resp in self._example_calls("Regress", examples, signature_name, context, timeout_s):
            out.extend(float(r.value) for r in resp.result.regressions)
        if len(out) != len(examples):
            raise errors.InvalidResponseError(
                f"expected {len(examples)} regressions, got {len(out)}", url=self.target
            )
        return out

    def signature_defs(
        self, *, refresh: bool = False, timeout_s: float | None = None
    ) -> dict[str, Any]:
        """The served version's ``SignatureDef`` protos by name (GetModelMetadata), cached after
        the first call unless ``refresh``."""
        with self._lock:
            cached = self._signatures
        if cached is not None and not refresh:
            return cached
        _, sdm = self._metadata_response(timeout_s)
        sigs = dict(sdm.signature_def)
        with self._lock:
            self._signatures = sigs
        return sigs

    def predict(
        self,
        instances: Sequence[Any] | None = None,
        *,
        inputs: Any = None,
        signature_name: str | None = None,
        output_filter: Sequence[str] | None = None,
        timeout_s: float | None = None,
    ) -> Any:
        """Predict in row format (``instances``: one item per batch row, each a value or a
        mapping of input name to value; returns what REST's ``predictions`` holds) or columnar
        format (``inputs``: a value or a mapping of input name to value; returns REST's
        ``outputs``). Exactly one of them. ``output_filter`` names the outputs to return (gRPC
        only). Values are cast to the signature's dtypes where that keeps their kind. Requests
        above max_request_bytes are split in halves along the first dimension when every input
        shares it."""
        check_instances_or_inputs(instances, inputs)
        name = signature_name or DEFAULT_SIGNATURE
        sig = self.signature_defs(timeout_s=timeout_s).get(name)
        if instances is not None:
            instances = list(instances)
            if not instances:
                raise ValueError("instances: expected at least one row, got an empty list")
            if isinstance(instances[0], Mapping):
                keys = list(instances[0])
                for i, row in enumerate(instances):
                    if not isinstance(row, Mapping) or set(row) != set(keys):
                        raise ValueError(
                            f"instances[{i}]: expected a mapping with the keys "
                            f"{sorted(keys)}, like instances[0]"
                        )
                feeds = {k: [row[k] for row in instances] for k in keys}
            else:
                feeds = {self._only_input(sig): instances}
        elif isinstance(inputs, Mapping):
            feeds = dict(inputs)
        else:
            feeds = {self._only_input(sig): inputs}
        arrays = {}
        for k, v in feeds.items():
            want = int(sig.inputs[k].dtype) if sig is not None and k in sig.inputs else None
            try:
                arrays[k] = grpc_codec.as_array(v, want)
            except TypeError as exc:
                raise TypeError(f"input {k!r}: {exc}") from None
        out = self._predict_arrays(arrays, signature_name, output_filter, timeout_s)
        try:
            return json_output.arrange(out, instances is None, json_output.json_value)
        except errors.ServingFailure as exc:  # what the REST API would answer for these outputs
            raise errors.error_for_status(
                exc.status, exc.message, self.target, grpc_code=exc.grpc_code
            ) from None

    def embed(
        self,
        node_ids: Sequence[int],
        *,
        signature_name: str = EMBED_SIGNATURE,
        timeout_s: float | None = None,
    ) -> np.ndarray:
        """The embeddings of the nodes ``node_ids``, named by id (Predict of ``signature_name``
        with the int64 input ``node_id``), as the REST client's ``embed``: float32
        ``[len(node_ids), D]``, in order."""
        ids = np.asarray([int(i) for i in node_ids], np.int64)
        out = self._predict_arrays({EMBED_NODE_ID_INPUT: ids}, signature_name, None, timeout_s)
        return np.asarray(out[EMBEDDINGS_OUTPUT], np.float32)

    @staticmethod
    def _only_input(sig: Any) -> str:
        if sig is not None and len(sig.inputs) == 1:
            return next(iter(sig.inputs))
        # Unknown signature (the server will name the problem) or several inputs.
        if sig is not None:
            raise ValueError(
                f"inputs: the signature has inputs {sorted(sig.inputs)}; pass a "
                f"mapping of input name to value"
            )
        return ""

    def _predict_arrays(
        self,
        arrays: dict[str, np.ndarray],
        signature_name: str | None,
        output_filter: Sequence[str] | None,
        timeout_s: float | None,
    ) -> dict[str, np.ndarray]:
        req = predict_pb2.PredictRequest()
        self._spec(req.model_spec, signature_name)
        for k, arr in arrays.items():
            if k:
                grpc_codec.array_to_tensor(arr, req.inputs[k])
        req.output_filter.extend(output_filter or [])
        size = req.ByteSize()
        if size > self.max_request_bytes:
            lengths = {a.shape[0] if a.ndim else -1 for a in arrays.values()}
            n = next(iter(lengths))
            if len(lengths) != 1 or n < 2:
                raise errors.RequestTooLargeError(
                    f"a predict request of {size} bytes exceeds max_request_bytes="
                    f"{self.max_request_bytes} and cannot be split (its inputs do not share a "
                    f"first dimension of 2 or more)"
                )
            half = n // 2
            first = self._predict_arrays(
                {k: a[:half] for k, a in arrays.items()}, signature_name, output_filter, timeout_s
            )
            second = self._predict_arrays(
                {k: a[half:] for k, a in arrays.items()}, signature_name, output_filter, timeout_s
            )
            if any(v.ndim == 0 for v in first.values()):
                raise errors.RequestTooLargeError(
                    f"a predict request of {size} bytes exceeds max_request_bytes="
                    f"{self.max_request_bytes}, and its outputs have no first dimension to "
                    f"join split answers along"
                )
            return {k: np.concatenate([first[k], second[k]]) for k in first}
        resp = self._call(self.stub.Predict, req, timeout_s)
        try:
            return {
                k: grpc_codec.tensor_to_array(t, f"output '{k}'", self.max_response_bytes)
                for k, t in resp.outputs.items()
            }
        except errors.ServingFailure as exc:
            raise errors.InvalidResponseError(
                f"Predict answer: {exc.message}", url=self.target
            ) from None

    def _metadata_response(self, timeout_s: float | None) -> tuple[Any, Any]:
        """GetModelMetadata's answer and the ``SignatureDefMap`` unpacked from it (an answer
        without one is an InvalidResponseError)."""
        req = get_model_metadata_pb2.GetModelMetadataRequest()
        self._spec(req.model_spec)
        req.metadata_field.append(SIGNATURE_DEF_FIELD)
        resp = self._call(self.stub.GetModelMetadata, req, timeout_s)
        sdm = get_model_metadata_pb2.SignatureDefMap()
        if SIGNATURE_DEF_FIELD not in resp.metadata or not resp.metadata[
            SIGNATURE_DEF_FIELD
        ].Unpack(sdm):
            raise errors.InvalidResponseError(
                "GetModelMetadata: the answer holds no SignatureDefMap", url=self.target
            )
        return resp, sdm

    def status(self, *, timeout_s: float | None = None) -> dict:
        """GetModelStatus as REST's status document: ``{"model_version_status": [{"version":
        "1", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}, ...]}``."""
        req = get_model_status_pb2.GetModelStatusRequest()
        self._spec(req.model_spec)
        return json_format.MessageToDict(
            self._call(self.model_stub.GetModelStatus, req, timeout_s), **_JSON_OPTIONS
        )

    def metadata(self, *, timeout_s: float | None = None) -> dict:
        """GetModelMetadata as REST's metadata document: ``{"model_spec": ..., "metadata":
        {"signature_def": <the unpacked SignatureDefMap>}}`` in protobuf's JSON mapping with
        the proto field names and default-valued fields printed."""
        resp, sdm = self._metadata_response(timeout_s)
        return {
            "model_spec": json_format.MessageToDict(resp.model_spec, **_JSON_OPTIONS),
            "metadata": {SIGNATURE_DEF_FIELD: json_format.MessageToDict(sdm, **_JSON_OPTIONS)},
        }

    def bundle_config(self, *, timeout_s: float | None = None) -> BundleConfig:
        """The memgraph-tf bundle's config through its ``memgraph_tf_config`` predict signature
        (validated; a bad config raises BundleError naming the key), as ServingClient's."""
        return config_from_predict(
            self.predict(
                inputs={CONFIG_INPUT: 0}, signature_name=CONFIG_SIGNATURE, timeout_s=timeout_s
            )
        )

    def sampling_config(self, *, timeout_s: float | None = None) -> dict:
        """:meth:`bundle_config` as a plain JSON dict (``BundleConfig.to_dict()``)."""
        return self.bundle_config(timeout_s=timeout_s).to_dict()


__all__ = ["DEFAULT_TIMEOUT_S", "HTTP_STATUS_FOR_GRPC", "GrpcServingClient", "error_from_rpc"]
