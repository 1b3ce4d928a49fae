"""Serving: SavedModel bundles for TF Serving, REST and gRPC clients, and a local
TF-Serving-compatible server.

- ``bundle.py`` is the bundle contract: asset and signature names, :class:`BundleConfig` (read and
  written there only), :class:`SamplingSpec`, op-library record, version directory discovery.
- :func:`export_bundle` (``export.py``) writes ``BASE/NAME/VERSION/`` with ``classify`` and
  ``serving_default`` signatures, class labels, a ``models.config``, and (op bundles) the op
  library.
- :func:`export_link_bundle` (``export_links.py``) writes a link predictor's bundle:
  classify (its ``serving_default``) and regress on one pair blob per example, plus
  ``embed_source`` / ``embed_target`` / ``score_embeddings`` for batch scoring.
- :class:`ServingClient`, :func:`classify_nodes` (``client.py``) talk TF Serving's REST API;
  :class:`GrpcServingClient` (``grpc_client.py``) is its twin over TF Serving's gRPC API.
- ``neighbourhoods.py``: node ids -> neighbourhood blobs from a graph source, shared by
  :func:`classify_nodes` and the server's ``node_id`` examples.
- ``errors.py`` is the typed error tree of this package and its one status table (code name,
  HTTP status, error class, retryable) that both servers answer from and both clients read.
- ``memgraph-tf serve``: ``server.py`` (HTTP) over ``rest_api.py`` (REST routing) over
  :class:`ModelServer` (``model_server.py``: versions, signatures, status, metadata), which loads
  versions with ``loading.py`` and batches with ``batching.py``; ``json_parse.py``
  (request bodies), ``json_examples.py`` / ``json_tensors.py`` (JSON <-> tf.Example /
  tensors) over ``json_values.py`` (TF Serving's JSON values and number printing), and
  ``json_output.py`` (the JSON output rules, shared with the gRPC client);
  ``node_examples.py`` (the ``node_id`` and ``source_id`` / ``target_id`` rules and
  ``max_examples``, for REST and gRPC);
  ``grpc_server.py`` (``--grpc-port``: PredictionService and ModelService over the same
  ModelServer, :func:`start_grpc_server`) with ``grpc_codec.py`` (TensorProto / tf.Example);
  ``input_specs.py`` (every Predict input checked before numpy or TensorFlow sees it, for REST
  and gRPC: the signature's dtype, and what TensorFlow's Python conversion cannot carry).

Attributes are imported lazily so that ``from memgraph_tf.serving import ServingClient`` does not
import TensorFlow (the gRPC modules do: tensorflow-serving-api's protos live in TensorFlow).
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "ServingClient": "client",
    "classify_nodes": "client",
    "export_bundle": "export",
    "export_link_bundle": "export_links",
    "BundleInfo": "export",
    "BundleConfig": "bundle",
    "SamplingSpec": "bundle",
    "ModelServer": "model_server",
    "start_server": "server",
    "GrpcServingClient": "grpc_client",
    "start_grpc_server": "grpc_server",
}

__all__ = sorted(_LAZY) + ["errors"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = importlib.import_module(f"{__name__}.{_LAZY[name]}")
        return getattr(module, name)
    if name == "errors":
        return importlib.import_module(f"{__name__}.errors")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
