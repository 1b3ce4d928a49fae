"""Requests the gRPC tests share. Imported by name: ``from tests.serving.grpc_kit import
node_id_request``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def node_id_request(model: str, node_ids: Iterable[int]) -> Any:
    """A ``ClassificationRequest`` for model ``model`` (its latest version) with one example per
    node id, each holding only the int64 feature ``node_id``."""
    from tensorflow_serving.apis import classification_pb2

    req = classification_pb2.ClassificationRequest()
    req.model_spec.name = model
    for i in node_ids:
        req.input.example_list.examples.add().features.feature["node_id"].int64_list.value.append(i)
    return req
