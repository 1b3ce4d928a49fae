"""docker/ cannot run here (no Docker engine): these checks keep its files in step with the
repository -- every source the custom-op Dockerfile copies exists, the Bazel target lists exactly
the op's C++ sources, and the stock TF Serving service reads the models.config that export_bundle
writes, at the path export_bundle writes into it."""

from __future__ import annotations

import re

DOCKERFILE = "docker/tf-serving-custom-op/Dockerfile"
BUILD = "docker/tf-serving-custom-op/BUILD.memgraph_tf"
COMPOSE = "docker/compose.yaml"


def _copy_sources(text: str) -> list[list[str]]:
    """The source paths of each COPY instruction (continuation lines joined; no --from)."""
    joined = re.sub(r"\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        parts = line.split()
        if parts and parts[0] == "COPY" and not any(p.startswith("--from") for p in parts):
            out.append(parts[1:-1])
    return out


def test_custom_op_dockerfile_copies_existing_sources(repo_root):
    copies = _copy_sources((repo_root / DOCKERFILE).read_text())
    assert copies, "no COPY instruction found"
    for sources in copies:
        for src in sources:
            assert (repo_root / src).is_file(), f"{DOCKERFILE}: COPY source {src} does not exist"
    copied = {p.rsplit("/", 1)[-1] for sources in copies for p in sources}
    op_sources = {p.name for p in (repo_root / "memgraph_tf" / "cc").glob("*.cc")}
    op_sources |= {p.name for p in (repo_root / "memgraph_tf" / "cc").glob("*.h")}
    assert op_sources <= copied, f"op sources not copied: {sorted(op_sources - copied)}"


def test_bazel_target_lists_the_op_sources(repo_root):
    text = (repo_root / BUILD).read_text()
    srcs = set(re.findall(r'"([^"]+\.cc)"', text))
    hdrs = set(re.findall(r'"([^"]+\.h)"', text))
    cc = repo_root / "memgraph_tf" / "cc"
    assert srcs == {p.name for p in cc.glob("*.cc")}
    assert hdrs == {p.name for p in cc.glob("*.h")}
    assert "alwayslink = 1" in text  # custom_op.md: otherwise the linker drops the registration
    dockerfile = (repo_root / DOCKERFILE).read_text()
    assert "//tensorflow_serving/custom_ops/memgraph_tf:unpack_blob_ops" in dockerfile
    assert 'name = "unpack_blob_ops"' in text


def test_stock_tf_serving_service_reads_export_bundles_models_config(repo_root):
    import inspect

    from memgraph_tf.serving.export import export_bundle

    compose = (repo_root / COMPOSE).read_text()
    service = compose.split("\n  tf-serving:\n", 1)[1].split("\n\n", 1)[0]
    assert "image: tensorflow/serving:" in service
    assert '"--model_config_file=/models/models.config"' in service
    assert "- ./models:/models:ro" in service
    default = inspect.signature(export_bundle).parameters["serving_base_path"].default
    assert default == "/models"  # models.config's base_path /models/NAME is inside that mount
