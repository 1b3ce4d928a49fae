"""The gRPC front end of ``memgraph-tf serve``: TensorFlow Serving's ``PredictionService``
(Classify, Regress, Predict, GetModelMetadata) and ``ModelService`` (GetModelStatus) over the same
:class:`~memgraph_tf.serving.model_server.ModelServer` the REST server uses, so both answer from
the same loaded versions with the same results.

The servicers subclass the classes generated in ``tensorflow_serving.apis``
(``prediction_service_pb2_grpc.PredictionServiceServicer``,
``model_service_pb2_grpc.ModelServiceServicer``) and are registered through the generated
``add_*Servicer_to_server`` functions, with one change: a request whose bytes do not parse as
its message answers ``INVALID_ARGUMENT`` instead of gRPC Python's ``INTERNAL`` ("Exception
deserializing request!").

Semantics follow TF Serving (``servables/tensorflow/{classifier,regressor,predict_util,
get_model_metadata_impl}.cc``, ``util.cc``):

- ``model_spec``: ``name``, ``version`` or ``version_label`` (neither: the newest version) and
  ``signature_name`` (Classify on a memgraph-tf bundle defaults to its ``classify`` signature, as
  the REST server does; otherwise ``serving_default``). The answer's ``model_spec`` names the
  version and signature that ran.
- Classify / Regress take ``ExampleList`` or ``ExampleListWithContext`` (each example's serialized
  bytes appended to the context's, so the example's own features win); at most ``max_examples``
  examples. On a memgraph-tf bundle served with a graph source, an example holding the int64
  feature ``node_id`` (one value) is replaced by that node's neighbourhood blob, as REST's
  ``{"node_id": N}``; an example holding both ``node_id`` and the blob feature is refused.
- Predict takes ``TensorProto`` inputs, exactly the signature's, each of the signature's dtype and
  at most ``max_tensor_elements`` elements; ``output_filter`` selects outputs (unknown or repeated
  aliases refused). Outputs are written in the typed fields (``float_val``, ``int64_val``,
  ``string_val``, ...), as TF Serving's ``RunPredict`` does by default
  (:data:`.grpc_codec.PREDICT_OUTPUTS_AS_PROTO_FIELD`).
- Errors carry TF Serving's status codes and messages::

      INVALID_ARGUMENT     bad input, unknown version label, missing ModelSpec, unparseable bytes,
                           a tensor above max_tensor_elements, classify/regress signature not found
      FAILED_PRECONDITION  Predict's signature not found
      NOT_FOUND            unknown model or version
      UNIMPLEMENTED        MultiInference, HandleReloadConfigRequest, an unsupported dtype
      UNAVAILABLE          the graph source is unreachable (``node_id`` examples)
      RESOURCE_EXHAUSTED   more than max_examples examples (REST: 413), a message above the size
                           limits (gRPC itself), more than max_concurrent_rpcs calls at once
      INTERNAL             a server bug or a model output that breaks the API (never bad input)

  A model that fails answers with its TensorFlow error's own code. Every
  :class:`~memgraph_tf.errors.ServingFailure` carries its code (``grpc_code``, from the
  status table in :mod:`.errors`), which is what gRPC answers; REST answers the same failure
  with that code's HTTP status. ``node_id`` examples and ``max_examples`` follow
  :mod:`.node_examples`, as REST does.

:func:`start_grpc_server` serves from a thread pool of ``max_workers`` threads, bound to 127.0.0.1
unless told otherwise, with message size limits and an idle-connection timeout.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from concurrent import futures
from dataclasses import dataclass
from typing import Any

import grpc
from tensorflow_serving.apis import model_service_pb2_grpc, prediction_service_pb2_grpc

from memgraph_tf import errors
from memgraph_tf.errors import ServingFailure
from memgraph_tf.serving import (
    access_log,
    freshness,
    grpc_codec,
    input_specs,
    metrics,
    node_examples,
)
from memgraph_tf.serving.bundle import DEFAULT_SIGNATURE, SIGNATURE_DEF_FIELD
from memgraph_tf.serving.link_pairs import PairExamples
from memgraph_tf.serving.model_server import ModelServer, ModelVersion
from memgraph_tf.serving.node_examples import DEFAULT_MAX_EXAMPLES, NODE_ID_FEATURE
from memgraph_tf.serving.node_rows import NodeExamples

logger = logging.getLogger(__name__)

DEFAULT_GRPC_PORT = 8500
DEFAULT_MAX_WORKERS = 8
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_TENSOR_ELEMENTS = 16 * 1024 * 1024
DEFAULT_IDLE_TIMEOUT_S = 300.0


#: HTTP status -> the gRPC code a failure known only by that status is answered with: a view of
#: the status table (:func:`.errors.code_for_http`), kept for callers of the older name.
GRPC_CODE_FOR_HTTP: dict[int, grpc.StatusCode] = {
    row.http: grpc.StatusCode[errors.code_for_http(row.http)] for row in errors.STATUS_TABLE
}


def grpc_code_for(exc: ServingFailure) -> grpc.StatusCode:
    """The gRPC code a ServingFailure is answered with: its ``grpc_code`` (set from the status
    table, :mod:`.errors`, for every ServingFailure) as a ``grpc.StatusCode``."""
    return grpc.StatusCode[exc.grpc_code or errors.code_for_http(exc.status or 500)]


@dataclass(frozen=True)
class GrpcLimits:
    """Per-request limits: examples per Classify/Regress, elements per Predict input tensor."""

    max_examples: int = DEFAULT_MAX_EXAMPLES
    max_tensor_elements: int = DEFAULT_MAX_TENSOR_ELEMENTS

    def __post_init__(self) -> None:
        for name in ("max_examples", "max_tensor_elements"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: expected an int >= 1, got {value!r}")


# ------------------------------------------------------------------------- request decoding
class _Undecodable:
    """Stands in for a request whose bytes did not parse; the servicer answers INVALID_ARGUMENT."""

    def __init__(self, type_name: str, error: str):
        self.type_name = type_name
        self.error = error


def _safe_deserializer(deserialize: Any) -> Any:
    owner = getattr(deserialize, "__self__", None)
    type_name = getattr(getattr(owner, "DESCRIPTOR", None), "full_name", "the request message")

    def parse(data: bytes) -> Any:
        try:
            return deserialize(data)
        except Exception as exc:  # noqa: BLE001 -- DecodeError, bad UTF-8, recursion: answered
            return _Undecodable(type_name, f"{type(exc).__name__}: {exc}")

    return parse


def _safe_handler(handler: Any) -> Any:
    if handler is None or handler.request_streaming or handler.response_streaming:
        return handler
    return grpc.unary_unary_rpc_method_handler(
        handler.unary_unary,
        request_deserializer=_safe_deserializer(handler.request_deserializer),
        response_serializer=handler.response_serializer,
    )


class _SafeDecoding(grpc.GenericRpcHandler):
    """Wraps a generated generic handler so that undecodable requests reach the servicer."""

    def __init__(self, inner: Any):
        self.inner = inner

    def service(self, handler_call_details: Any) -> Any:
        return _safe_handler(self.inner.service(handler_call_details))


class _HandlerCapture:
    """Receives what a generated ``add_*Servicer_to_server`` registers, to wrap it first."""

    def __init__(self) -> None:
        self.generic: list[Any] = []
        self.registered: dict[str, dict[str, Any]] = {}

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        self.generic.extend(handlers)

    def add_registered_method_handlers(self, service_name: str, handlers: dict) -> None:
        self.registered[service_name] = dict(handlers)


def add_services(server: grpc.Server, *servicers: Any) -> None:
    """Register servicers with ``server`` through the generated ``add_*Servicer_to_server``
    functions (chosen by each servicer's generated base class), wrapping each method so that
    request bytes that do not parse reach the servicer as an undecodable request."""
    capture = _HandlerCapture()
    for servicer in servicers:
        if isinstance(servicer, prediction_service_pb2_grpc.PredictionServiceServicer):
            prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(servicer, capture)
        elif isinstance(servicer, model_service_pb2_grpc.ModelServiceServicer):
            model_service_pb2_grpc.add_ModelServiceServicer_to_server(servicer, capture)
        else:
            raise TypeError(
                f"servicer: expected a generated PredictionServiceServicer or "
                f"ModelServiceServicer subclass, got {type(servicer).__name__}"
            )
    for service_name, handlers in capture.registered.items():
        server.add_registered_method_handlers(
            service_name, {k: _safe_handler(h) for k, h in handlers.items()}
        )
    server.add_generic_rpc_handlers(tuple(_SafeDecoding(h) for h in capture.generic))


def _answer(
    method: str,
    work: Any,
    request: Any,
    context: grpc.ServicerContext,
    model_server: Any = None,
) -> Any:
    """Run ``work(request)`` and turn every failure into a gRPC status: ServingFailure -> its
    code and message; anything else -> INTERNAL with
    :data:`~memgraph_tf.errors.INTERNAL_ERROR_MESSAGE` (the exception and its traceback
    are logged, never sent). With ``model_server``'s metrics or access log on, the call is
    counted and timed (``entrypoint`` GRPC, ``API`` the method) and logged."""
    start = time.perf_counter()
    observed = model_server is not None and (
        getattr(model_server, "metrics", None) is not None
        or getattr(model_server, "access_log", False)
    )
    record = token = None
    if observed:
        record, token = metrics.begin("GRPC", method, f"gRPC {method}")
    code = grpc.StatusCode.OK
    context_token = metrics.set_grpc_context(context)
    fresh, fresh_token = freshness.begin()
    try:
        if isinstance(request, _Undecodable):
            code, message = (
                grpc.StatusCode.INVALID_ARGUMENT,
                (f"Could not parse the request as {request.type_name}: {request.error}"),
            )
        else:
            try:
                response = work(request)
                if fresh.metadata():  # a node_id answer: what it reflects (freshness.py)
                    context.set_trailing_metadata(fresh.metadata())
                logger.debug("%s answered in %.1f ms", method, 1e3 * (time.perf_counter() - start))
                return response
            except ServingFailure as exc:
                code, message = grpc_code_for(exc), exc.message
            except Exception:  # a server bug: still a status, never a dropped call; the cause
                logger.exception("internal error in %s", method)  # goes to the log only
                code, message = grpc.StatusCode.INTERNAL, errors.INTERNAL_ERROR_MESSAGE
    finally:
        freshness.end(fresh_token)
        metrics.reset_grpc_context(context_token)
        if observed:
            metrics.end(token)
            access_log.finish(model_server, record, code.name, code.name)
    logger.debug("%s -> %s: %s", method, code.name, message)
    context.abort(code, message)


# -------------------------------------------------------------------------------- servicers
class _Core:
    """Request handling shared by both servicers (one ModelServer, one set of limits)."""

    def __init__(self, model_server: ModelServer, limits: GrpcLimits):
        self.model_server = model_server
        self.limits = limits

    # -- model spec
    def resolve(self, request: Any) -> ModelVersion:
        if not request.HasField("model_spec"):
            raise ServingFailure.for_code("INVALID_ARGUMENT", "Missing ModelSpec")
        spec = request.model_spec
        which = spec.WhichOneof("version_choice")
        version = spec.version.value if which == "version" else None
        label = spec.version_label if which == "version_label" else None
        return self.model_server.resolve(spec.name, version, label)

    def response_spec(self, out_spec: Any, mv: ModelVersion, signature_name: str | None) -> None:
        out_spec.name = mv.model_name or self.model_server.model_name
        out_spec.version.value = mv.version
        if signature_name is not None:
            out_spec.signature_name = signature_name

    @staticmethod
    def example_signature(mv: ModelVersion, requested: str, method: str) -> str:
        """The signature a Classify/Regress request runs (TF Serving's InvalidArgument when it is
        missing). Classify on our bundles defaults to their classify signature, like REST."""
        name = ModelServer.example_signature(mv, requested, method)
        if name not in mv.signature_defs:
            raise ServingFailure.for_code(
                "INVALID_ARGUMENT", f"No signature was found with the name: {name}"
            )
        return name

    # -- examples
    def serialized_examples(self, request_input: Any, mv: ModelVersion) -> Sequence[bytes]:
        """The request's examples as serialized tf.Examples (context bytes first), node ids
        replaced by blobs; INVALID_ARGUMENT for no examples or more than max_examples."""
        kind = request_input.WhichOneof("kind")
        if kind is None:
            raise ServingFailure.for_code("INVALID_ARGUMENT", "Input is empty.")
        holder = getattr(request_input, kind)
        examples = holder.examples
        if len(examples) == 0:
            raise ServingFailure.for_code("INVALID_ARGUMENT", "Input is empty.")
        record = metrics.current()
        if record is not None:
            record.examples = len(examples)
        node_examples.check_example_count(len(examples), self.limits.max_examples, "examples")
        context, sampling = b"", mv.sampling
        if kind == "example_list_with_context" and holder.HasField("context"):
            context = holder.context.SerializeToString()
            sampling = node_examples.sampling_at(mv.bundle_config, mv.sampling, holder.context)
        serialized = self.with_node_blobs(examples, mv, sampling)
        if isinstance(serialized, (PairExamples, NodeExamples)):  # blobs read or built later
            return serialized.with_prefix(context)
        return [context + s for s in serialized] if context else serialized

    def with_node_blobs(
        self, examples: Any, mv: ModelVersion, sampling: Any = None
    ) -> Sequence[bytes]:
        """Each example serialized, the ``node_id`` rule applied with the ModelServer's graph
        source (:func:`.node_examples.proto_examples`: REST's checks, messages and codes),
        sampled with ``sampling`` (default: the version's; a request's context ``at``:
        :func:`.node_examples.sampling_at`)."""
        ms = self.model_server
        return node_examples.proto_examples(
            examples,
            mv.bundle_config,
            ms.neighbourhoods,
            sampling or mv.sampling,
            ms.later_fetcher(),
        )


def _rpc(name: str, work: str) -> Any:
    """The servicer method ``name``: :func:`_answer` around the servicer's method ``work``."""

    def method(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        return _answer(name, getattr(self, work), request, context, self.core.model_server)

    method.__name__ = method.__qualname__ = name
    return method


class _Servicer:
    """What both servicers share: the :class:`_Core` they answer from."""

    def __init__(self, core: _Core):
        self.core = core


class PredictionServicer(_Servicer, prediction_service_pb2_grpc.PredictionServiceServicer):
    """``tensorflow.serving.PredictionService`` over a ModelServer (see the module docstring)."""

    Classify = _rpc("Classify", "classify")
    Regress = _rpc("Regress", "regress")
    Predict = _rpc("Predict", "predict")
    GetModelMetadata = _rpc("GetModelMetadata", "metadata")
    MultiInference = _rpc("MultiInference", "multi_inference")

    # -- the work, on decoded requests
    def classify(self, request: Any) -> Any:
        """ClassificationRequest -> ClassificationResponse: one ``Classifications`` per example,
        one ``Class`` per column of the signature's classes/scores."""
        from tensorflow_serving.apis import classification_pb2

        core = self.core
        mv = core.resolve(request)
        name = core.example_signature(mv, request.model_spec.signature_name, "classify")
        serialized = core.serialized_examples(request.input, mv)
        classes, scores = core.model_server.run_classify(mv, serialized, name)
        resp = classification_pb2.ClassificationResponse()
        core.response_spec(resp.model_spec, mv, name)
        ref = classes if classes is not None else scores
        labels = (
            [[c.decode("utf-8", "replace") for c in row] for row in classes.tolist()]
            if classes is not None
            else None
        )
        values = scores.astype("float32").tolist() if scores is not None else None
        for r in range(ref.shape[0]):
            row = resp.result.classifications.add().classes
            for j in range(ref.shape[1]):
                cls = row.add()
                if labels is not None:
                    cls.label = labels[r][j]
                if values is not None:
                    cls.score = values[r][j]
        return resp

    def regress(self, request: Any) -> Any:
        """RegressionRequest -> RegressionResponse: one ``Regression`` value per example."""
        from tensorflow_serving.apis import regression_pb2

        core = self.core
        mv = core.resolve(request)
        name = core.example_signature(mv, request.model_spec.signature_name, "regress")
        serialized = core.serialized_examples(request.input, mv)
        values = core.model_server.run_regress(mv, serialized, name)
        resp = regression_pb2.RegressionResponse()
        core.response_spec(resp.model_spec, mv, name)
        for v in values.astype("float32").tolist():
            resp.result.regressions.add().value = v
        return resp

    def predict(self, request: Any) -> Any:
        """PredictRequest -> PredictResponse: the signature's outputs (or those in
        ``output_filter``) for the request's input tensors. On a signature that embeds nodes
        (:func:`memgraph_tf.serving.node_examples.embed_role`), one int64 vector ``node_id`` may
        stand for the ``blobs`` input (:meth:`ModelServer.node_id_feeds`)."""
        core = self.core
        mv = core.resolve(request)
        name = request.model_spec.signature_name or DEFAULT_SIGNATURE
        if name not in mv.signature_defs:
            raise ServingFailure.for_code(
                "FAILED_PRECONDITION", f'Serving signature key "{name}" not found.'
            )
        sig = mv.signature_defs[name]
        at_key = node_examples.AT_FEATURE
        sent = set(request.inputs)
        if sent in ({NODE_ID_FEATURE}, {NODE_ID_FEATURE, at_key}) and node_examples.embed_role(
            mv.bundle_config, name
        ):
            aliases = self._aliases(request, sig)
            limit = core.limits.max_tensor_elements
            ids = grpc_codec.tensor_to_array(
                request.inputs[NODE_ID_FEATURE], f"input '{NODE_ID_FEATURE}'", limit
            )
            at = None
            if at_key in sent:
                at = grpc_codec.tensor_to_array(request.inputs[at_key], f"input '{at_key}'", 1)
            arrays = core.model_server.node_id_feeds(mv, name, ids, at)
            return self._predict_response(mv, name, arrays, aliases)
        if set(request.inputs) != set(sig.inputs):
            sent, want = sorted(request.inputs), sorted(sig.inputs)
            raise ServingFailure.for_code(
                "INVALID_ARGUMENT",
                f"input size does not match signature: {len(sent)}!={len(want)} "
                f"len({{{','.join(sent)}}}) != len({{{','.join(want)}}}). Sent extra: "
                f"{{{','.join(k for k in sent if k not in sig.inputs)}}}. Missing but required: "
                f"{{{','.join(k for k in want if k not in request.inputs)}}}.",
            )
        aliases = self._aliases(request, sig)
        arrays = {}
        for key, tensor in request.inputs.items():
            info = sig.inputs[key]
            # the signature check shared with REST (input_specs): the dtype first, then the
            # shape once the proto's shape is read, before any value is
            input_specs.check_input(key, info, dtype=int(tensor.dtype), signature=name)
            arrays[key] = grpc_codec.tensor_to_array(
                tensor,
                f"input '{key}'",
                core.limits.max_tensor_elements,
                check=lambda dims, key=key, info=info: input_specs.check_input(
                    key, info, dims, signature=name
                ),
            )
        return self._predict_response(mv, name, arrays, aliases)

    @staticmethod
    def _aliases(request: Any, sig: Any) -> list[str]:
        """The request's ``output_filter``, each checked to be one output of ``sig``, once."""
        aliases = list(request.output_filter)
        seen: set[str] = set()
        for alias in aliases:
            if alias not in sig.outputs:
                raise ServingFailure.for_code(
                    "INVALID_ARGUMENT",
                    f"output tensor alias not found in signature: {alias} Outputs "
                    f"expected to be in the set {{{','.join(sorted(sig.outputs))}}}.",
                )
            if alias in seen:
                raise ServingFailure.for_code(
                    "INVALID_ARGUMENT", f"duplicate output tensor alias: {alias}"
                )
            seen.add(alias)
        return aliases

    def _predict_response(self, mv: Any, name: str, arrays: dict, aliases: list[str]) -> Any:
        """Runs signature ``name`` on ``arrays``: the PredictResponse of ``aliases`` (all
        outputs when empty)."""
        from tensorflow_serving.apis import predict_pb2

        core = self.core
        outputs = core.model_server.run_predict(mv, arrays, name)
        resp = predict_pb2.PredictResponse()
        core.response_spec(resp.model_spec, mv, name)
        for alias in aliases or sorted(outputs):
            try:
                grpc_codec.array_to_tensor(
                    outputs[alias],
                    resp.outputs[alias],
                    as_proto_field=grpc_codec.PREDICT_OUTPUTS_AS_PROTO_FIELD,
                )
            except TypeError as exc:
                raise ServingFailure.for_code("INTERNAL", f"output '{alias}': {exc}") from None
        return resp

    def metadata(self, request: Any) -> Any:
        """GetModelMetadataRequest -> GetModelMetadataResponse holding the version's
        ``SignatureDefMap`` under ``metadata["signature_def"]``."""
        core = self.core
        if not request.HasField("model_spec"):
            raise ServingFailure.for_code("INVALID_ARGUMENT", "Missing ModelSpec")
        if not request.metadata_field:
            raise ServingFailure.for_code(
                "INVALID_ARGUMENT",
                "GetModelMetadataRequest must specify at least one metadata_field",
            )
        for field in request.metadata_field:
            if field != SIGNATURE_DEF_FIELD:
                raise ServingFailure.for_code(
                    "INVALID_ARGUMENT", f"Metadata field {field} is not supported"
                )
        return core.model_server.metadata_response(core.resolve(request))

    @staticmethod
    def multi_inference(request: Any) -> Any:
        raise ServingFailure.for_code(
            "UNIMPLEMENTED",
            "MultiInference is not implemented by memgraph-tf serve: send Classify, "
            "Regress or Predict requests",
        )


class ModelStatusServicer(_Servicer, model_service_pb2_grpc.ModelServiceServicer):
    """``tensorflow.serving.ModelService``: GetModelStatus; HandleReloadConfigRequest answers
    UNIMPLEMENTED (restart the server to serve other models)."""

    GetModelStatus = _rpc("GetModelStatus", "status")
    HandleReloadConfigRequest = _rpc("HandleReloadConfigRequest", "reload_config")

    def status(self, request: Any) -> Any:
        """GetModelStatusRequest -> GetModelStatusResponse: every version (newest first), or the
        one the spec names; each AVAILABLE with an OK status."""
        if not request.HasField("model_spec"):
            raise ServingFailure.for_code("INVALID_ARGUMENT", "Missing ModelSpec")
        spec = request.model_spec
        which = spec.WhichOneof("version_choice")
        return self.core.model_server.status_response(
            spec.name,
            spec.version.value if which == "version" else None,
            spec.version_label if which == "version_label" else None,
        )

    @staticmethod
    def reload_config(request: Any) -> Any:
        raise ServingFailure.for_code(
            "UNIMPLEMENTED",
            "HandleReloadConfigRequest is not implemented by memgraph-tf serve: "
            "restart it to serve other models",
        )


def make_servicers(model_server: ModelServer, limits: GrpcLimits | None = None) -> tuple[Any, Any]:
    """``(PredictionServicer, ModelStatusServicer)`` sharing ``model_server`` and ``limits``."""
    core = _Core(model_server, limits or GrpcLimits())
    return PredictionServicer(core), ModelStatusServicer(core)


# ------------------------------------------------------------------------------------ server
class RunningGrpcServer:
    """A started gRPC server (see :func:`start_grpc_server`): ``port``, ``target``
    (``host:port`` for ``grpc.insecure_channel``), ``server`` and ``close()``."""

    def __init__(self, server: grpc.Server, host: str, port: int, limits: GrpcLimits):
        self.server = server
        self.host = host
        self.port = port
        self.limits = limits
        self.target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    def close(self, grace_s: float | None = 1.0) -> None:
        """Stop accepting calls, let running ones finish for ``grace_s``, then release the port."""
        self.server.stop(grace_s).wait()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the server stops (or ``timeout_s`` passes); True when it stopped."""
        return self.server.wait_for_termination(timeout_s)

    def __enter__(self) -> RunningGrpcServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _positive(name: str, value: Any, *, integer: bool = True) -> None:
    kinds = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not value > 0:
        raise ValueError(
            f"{name}: expected {'an int' if integer else 'a number'} > 0, got {value!r}"
        )


def start_grpc_server(
    model_server: ModelServer,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    max_workers: int = DEFAULT_MAX_WORKERS,
    max_receive_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    max_send_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    max_examples: int | None = None,
    max_tensor_elements: int = DEFAULT_MAX_TENSOR_ELEMENTS,
    max_concurrent_rpcs: int | None = None,
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
) -> RunningGrpcServer:
    """Serve PredictionService and ModelService for ``model_server`` on ``host:port`` (port 0
    picks a free one) from a pool of ``max_workers`` threads; returns once the port is bound.

    Limits: requests above ``max_receive_message_bytes`` and answers above
    ``max_send_message_bytes`` fail with RESOURCE_EXHAUSTED (gRPC's own check); Classify/Regress
    take at most ``max_examples`` examples (default: the ModelServer's ``max_examples`` when it
    has one, else :data:`DEFAULT_MAX_EXAMPLES`); Predict inputs at most ``max_tensor_elements``
    elements each; with ``max_concurrent_rpcs`` more calls at once answer RESOURCE_EXHAUSTED;
    connections idle for ``idle_timeout_s`` are closed. The port is bound exclusively
    (no SO_REUSEPORT), so a port in use raises OSError."""
    _positive("max_workers", max_workers)
    _positive("max_receive_message_bytes", max_receive_message_bytes)
    _positive("max_send_message_bytes", max_send_message_bytes)
    if max_concurrent_rpcs is not None:
        _positive("max_concurrent_rpcs", max_concurrent_rpcs)
    _positive("idle_timeout_s", idle_timeout_s, integer=False)
    if max_examples is None:
        max_examples = getattr(model_server, "max_examples", None) or DEFAULT_MAX_EXAMPLES
    limits = GrpcLimits(max_examples=max_examples, max_tensor_elements=max_tensor_elements)
    options = [
        ("grpc.max_receive_message_length", int(max_receive_message_bytes)),
        ("grpc.max_send_message_length", int(max_send_message_bytes)),
        ("grpc.max_connection_idle_ms", int(idle_timeout_s * 1000)),
        ("grpc.so_reuseport", 0),
    ]
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="memgraph-tf-grpc"),
        options=options,
        maximum_concurrent_rpcs=max_concurrent_rpcs,
    )
    add_services(server, *make_servicers(model_server, limits))
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        bound = server.add_insecure_port(address)
    except RuntimeError as exc:
        raise OSError(f"cannot bind the gRPC port {address}: {exc}") from None
    if not bound:
        raise OSError(f"cannot bind the gRPC port {address}")
    server.start()
    running = RunningGrpcServer(server, host, bound, limits)
    logger.info(
        "gRPC: serving model %r versions %s at %s (%d threads, max_examples=%d)",
        model_server.model_name,
        sorted(model_server.versions),
        running.target,
        max_workers,
        limits.max_examples,
    )
    return running


def start_from_args(model_server: ModelServer, args: Any) -> RunningGrpcServer | None:
    """Start gRPC for ``memgraph-tf serve`` over the ModelServer its REST server uses: None
    without ``--grpc-port``; else :func:`start_grpc_server` on ``--grpc-host`` (default
    ``--host``) and ``--grpc-port`` with ``--grpc-max-workers``, ``--grpc-max-message-bytes``
    (both directions), ``--max-examples`` and ``--idle-timeout-s`` when given. Raises OSError
    when the port cannot be bound, ValueError for a bad limit."""
    port = getattr(args, "grpc_port", None)
    if port is None:
        return None
    options: dict[str, Any] = {}
    if getattr(args, "grpc_max_workers", None) is not None:
        options["max_workers"] = args.grpc_max_workers
    if getattr(args, "grpc_max_message_bytes", None) is not None:
        options["max_receive_message_bytes"] = args.grpc_max_message_bytes
        options["max_send_message_bytes"] = args.grpc_max_message_bytes
    if getattr(args, "max_examples", None) is not None:
        options["max_examples"] = args.max_examples
    if getattr(args, "idle_timeout_s", None) is not None:
        options["idle_timeout_s"] = args.idle_timeout_s
    host = getattr(args, "grpc_host", None) or getattr(args, "host", None) or "127.0.0.1"
    return start_grpc_server(model_server, host, port, **options)


__all__ = [
    "DEFAULT_GRPC_PORT",
    "DEFAULT_IDLE_TIMEOUT_S",
    "DEFAULT_MAX_EXAMPLES",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_MAX_TENSOR_ELEMENTS",
    "DEFAULT_MAX_WORKERS",
    "GRPC_CODE_FOR_HTTP",
    "NODE_ID_FEATURE",
    "SIGNATURE_DEF_FIELD",
    "GrpcLimits",
    "ModelStatusServicer",
    "PredictionServicer",
    "RunningGrpcServer",
    "add_services",
    "grpc_code_for",
    "make_servicers",
    "start_from_args",
    "start_grpc_server",
]
