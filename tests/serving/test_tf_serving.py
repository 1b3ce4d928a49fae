"""Against a real TensorFlow Serving (docker/compose.yaml), only when MEMGRAPH_TF_TEST_SERVING_URL
is set (e.g. http://127.0.0.1:8501). The served model (MEMGRAPH_TF_TEST_SERVING_MODEL, default
GraphSage) must be an op-free bundle from export_bundle; its blobs are built from its own config."""

from __future__ import annotations

import os

import numpy as np
import pytest

from memgraph_tf import errors
from memgraph_tf.serving.client import ServingClient

URL = os.environ.get("MEMGRAPH_TF_TEST_SERVING_URL")
MODEL = os.environ.get("MEMGRAPH_TF_TEST_SERVING_MODEL", "GraphSage")

pytestmark = [
    pytest.mark.serving,
    pytest.mark.skipif(
        not URL, reason="MEMGRAPH_TF_TEST_SERVING_URL is not set (no TF Serving here)"
    ),
]


@pytest.fixture(scope="module")
def client():
    with ServingClient(URL, MODEL) as c:
        yield c


def _blobs(cfg: dict, n: int) -> list[bytes]:
    from memgraph_tf import blob

    rng = np.random.default_rng(0)
    out = []
    for _ in range(n):
        sections = {}
        for name, spec in cfg["sections"].items():
            shape = spec["shape"]
            if spec["dtype"] == "bool":
                sections[name] = rng.random(shape) > 0.2
            else:
                sections[name] = rng.normal(size=shape).astype(spec["dtype"])
        out.append(blob.pack(sections))
    return out


def test_status_metadata_and_classify(client):
    status = client.status()["model_version_status"]
    assert any(s["state"] == "AVAILABLE" for s in status)
    sigs = client.metadata()["metadata"]["signature_def"]["signature_def"]
    assert list(sigs["classify"]["inputs"]) == ["inputs"]
    cfg = client.sampling_config()
    results = client.classify(_blobs(cfg, 3))
    assert len(results) == 3
    for row in results:
        assert [lbl for lbl, _ in row] == cfg["class_names"]
        assert abs(sum(s for _, s in row) - 1.0) < 1e-4
    rows = client.predict(_blobs(cfg, 2))
    assert len(rows) == 2 and len(rows[0]["scores"]) == len(cfg["class_names"])


def test_errors_from_real_tf_serving(client):
    with pytest.raises(errors.BadRequestError, match="'examples' value is an empty array"):
        client.classify([])
    with ServingClient(URL, MODEL + "_nope") as c:
        with pytest.raises(errors.NotFoundError, match="Servable not found for request"):
            c.classify([b"x"])
