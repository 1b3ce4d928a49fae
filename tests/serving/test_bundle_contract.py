"""The bundle contract (memgraph_tf/serving/bundle.py): the typed config read and written in one
place, the op-library record, version directory discovery, and export's typed errors."""

from __future__ import annotations

import json
import logging
import pathlib
import re

import pytest

from memgraph_tf.errors import BundleError, BundleExistsError, MemgraphTfError, ServingError
from memgraph_tf.serving import bundle, rest_api
from memgraph_tf.serving.bundle import BundleConfig, OpLibraryInfo, SamplingSpec

GOOD = {
    "format": "memgraph-tf-bundle",
    "format_version": 1,
    "model_name": "GraphSage",
    "version": 3,
    "use_op": False,
    "blob_feature_key": "blob",
    "class_names": ["alpha", "beta"],
    "fanouts": [3, 2],
    "feature_dim": 4,
    "properties": ["features"],
    "options": {"seed": 7, "low_degree": "pad", "edge_types": ["CITES"]},
    "sections": {
        "features_0": {"dtype": "float32", "shape": [1, 4]},
        "mask_1": {"dtype": "bool", "shape": [1, 3]},
    },
    "scores": "logits",
    "tensorflow_version": "2.21.0",
}


def with_(**changes):
    out = json.loads(json.dumps(GOOD))
    for k, v in changes.items():
        if v is ...:
            del out[k]
        else:
            out[k] = v
    return out


# ------------------------------------------------------------------------------------- config
def test_round_trip_through_json_and_dict():
    cfg = BundleConfig.from_dict(GOOD)
    assert cfg.to_dict() == GOOD
    text = cfg.to_json()
    assert json.loads(text) == GOOD
    assert text == json.dumps(GOOD, indent=2, sort_keys=True)  # deterministic, sorted keys
    again = BundleConfig.from_json(text)
    assert again == cfg and again.to_json() == text
    assert cfg.fanouts == (3, 2) and cfg.sections["mask_1"] == ("bool", (1, 3))
    assert cfg.sampling == SamplingSpec((3, 2), ("features",), GOOD["options"])


def test_config_detaches_from_the_callers_options():
    options = {"seed": 1, "edge_types": ["A"]}
    cfg = BundleConfig.from_dict(with_(options=options))
    options["edge_types"].append("B")
    options["seed"] = 2
    assert cfg.options == {"seed": 1, "edge_types": ["A"]}
    cfg.to_dict()["options"]["seed"] = 99
    assert cfg.options["seed"] == 1


@pytest.mark.parametrize(
    "data, key, message",
    [
        (with_(extra=1), "extra", r"extra: unknown bundle config key"),
        (with_(fanouts=...), "fanouts", r"fanouts: missing from the bundle config"),
        (
            with_(format="tf-model"),
            "format",
            r"format: expected 'memgraph-tf-bundle', got 'tf-model'",
        ),
        (
            with_(format_version=3),
            "format_version",
            r"format_version: expected an int from 1 to 2 "
            r"\(this memgraph-tf reads bundle formats up to 2\), got 3",
        ),
        (
            with_(format_version=None),
            "format_version",
            r"format_version: expected an int from 1 to 2 "
            r"\(this memgraph-tf reads bundle formats up to 2\), got None$",
        ),
        (with_(model_name="a/b"), "model_name", r"model_name: expected letters, digits"),
        (with_(version=True), "version", r"version: expected an int >= 1, got True"),
        (with_(version="1"), "version", r"version: expected an int >= 1, got '1'"),
        (with_(use_op=1), "use_op", r"use_op: expected true or false, got 1"),
        (with_(blob_feature_key=""), "blob_feature_key", r"blob_feature_key: expected a non-empty"),
        (with_(class_names=["a", "a"]), "class_names", r"class_names: expected unique strings"),
        (with_(class_names="ab"), "class_names", r"class_names: expected a non-empty list"),
        (
            with_(fanouts=[3, 0]),
            "fanouts",
            r"fanouts: expected a non-empty list of ints >= 1, got \[3, 0\]",
        ),
        (with_(fanouts="3,2"), "fanouts", r"fanouts: expected a non-empty list of ints >= 1"),
        (with_(feature_dim=4.0), "feature_dim", r"feature_dim: expected an int >= 1, got 4.0"),
        (with_(properties=[]), "properties", r"properties: expected a non-empty list"),
        (with_(options=["seed"]), "options", r"options: expected a JSON object"),
        (
            with_(options={"password": "x"}),
            "options",
            r"options: key 'password' looks like a connection setting or credential",
        ),
        (
            with_(options={"nested": {"bolt_uri": "bolt://h"}}),
            "options",
            r"options.nested: key 'bolt_uri' looks like a connection setting",
        ),
        (
            with_(sections={"f": {"dtype": "complex64", "shape": [1]}}),
            "sections",
            r"sections.f.dtype: expected one of "
            r"\['bool', 'float32', 'float64', 'int32', 'int64', 'string'\]",
        ),
        (
            with_(sections={"f": {"dtype": "float32", "shape": [1, -2]}}),
            "sections",
            r"sections.f.shape: expected a list of ints >= 0, or -1 for a length that varies",
        ),
        (
            with_(sections={"f": {"dtype": "float32"}}),
            "sections",
            r"sections.f: expected an object with exactly the keys dtype and shape",
        ),
        (with_(scores="raw"), "scores", r"scores: expected one of \['probabilities', 'logits'\]"),
        (
            with_(tensorflow_version=None),
            "tensorflow_version",
            r"tensorflow_version: expected a non-empty",
        ),
    ],
)
def test_bad_keys_and_types_raise_a_typed_error_naming_the_key(data, key, message):
    with pytest.raises(BundleError, match=message) as info:
        BundleConfig.from_dict(data)
    assert info.value.key == key
    assert isinstance(info.value, ValueError) and isinstance(info.value, MemgraphTfError)


def test_not_json_and_not_an_object():
    with pytest.raises(BundleError, match=r"bundle config: expected JSON text"):
        BundleConfig.from_json("{not json")
    with pytest.raises(BundleError, match=r"bundle config: expected a JSON object, got list"):
        BundleConfig.from_json("[1, 2]")


def test_direct_construction_is_validated_too():
    kwargs = {k: v for k, v in BundleConfig.from_dict(GOOD).__dict__.items()}
    kwargs["fanouts"] = (3, True)
    with pytest.raises(
        BundleError, match=r"fanouts: expected a non-empty list of ints >= 1"
    ) as info:
        BundleConfig(**kwargs)
    assert info.value.key == "fanouts"


def test_read_bundle_config_from_a_version_dir(tmp_path):
    assert bundle.read_bundle_config(tmp_path) is None  # not our bundle: no config asset
    cfg = BundleConfig.from_dict(GOOD)
    (tmp_path / "assets").mkdir()
    labels, path = bundle.write_assets(tmp_path / "assets", cfg)
    assert labels.read_text().splitlines() == ["alpha", "beta"]
    assert path == tmp_path / "assets" / "memgraph_tf_bundle.json"
    assert bundle.read_bundle_config(tmp_path) == cfg
    path.write_text(json.dumps(with_(scores="raw")))
    with pytest.raises(
        BundleError, match=r"memgraph_tf_bundle.json: scores: expected one of"
    ) as info:
        bundle.read_bundle_config(tmp_path)
    assert info.value.key == "scores" and str(path) in str(info.value)


# ------------------------------------------------------------------------- step order
FOLLOWS = "(:User)-[:FOLLOWS]->(:User)"
BOUGHT = "(:User)-[:BOUGHT]->(:Product)"
UNSORTED = {FOLLOWS: [2], BOUGHT: [3]}  # (BOUGHT sorts first)
TYPED = {"seed_label": "User", "num_neighbors": UNSORTED, "properties": {"User": ["features"]}}


def typed_config(typed, format_version=bundle.BUNDLE_FORMAT_VERSION):
    empty = {"fanouts": [], "feature_dim": 0, "properties": []}
    return BundleConfig.from_dict({**with_(**empty, format_version=format_version), "typed": typed})


def test_a_typed_config_writes_the_models_step_order_the_sorted_one_through_its_json():
    """Steps given out of order are numbered in the patterns' sorted order (the model's order,
    :class:`TypedSamplingSpec`); the config writes them as a list of [pattern, fanouts] pairs in
    it, reads them back in it, and samples in it."""
    assert sorted(UNSORTED) != list(UNSORTED)
    cfg = typed_config(TYPED)
    text = cfg.to_json()
    assert json.loads(text)["typed"]["num_neighbors"] == [[BOUGHT, [3]], [FOLLOWS, [2]]]
    again = BundleConfig.from_json(text)
    assert list(again.typed["num_neighbors"]) == [BOUGHT, FOLLOWS]
    assert again == cfg and again.to_json() == text
    nn, _, _ = bundle.inference_sampling(again).typed_arguments()
    assert list(nn.items()) == [(BOUGHT, [3]), (FOLLOWS, [2])]


def test_a_link_config_writes_each_roles_steps_in_sorted_order_through_its_json():
    link = {
        "source_label": "User",
        "target_label": "User",
        "num_neighbors": {"source": UNSORTED, "target": {FOLLOWS: [1], BOUGHT: [1]}},
        "properties": {"User": ["features"]},
    }
    empty = {"fanouts": [], "feature_dim": 0, "properties": [], "class_names": ["link", "no link"]}
    cfg = BundleConfig.from_dict({**with_(**empty, format_version=2), "link": link})
    written = json.loads(cfg.to_json())["link"]["num_neighbors"]
    assert written == {
        "source": [[BOUGHT, [3]], [FOLLOWS, [2]]],
        "target": [[BOUGHT, [1]], [FOLLOWS, [1]]],
    }
    sampling = bundle.inference_sampling(BundleConfig.from_json(cfg.to_json()))
    nn, _, _ = sampling.pair_arguments()
    assert [list(nn[role]) for role in ("source", "target")] == [[BOUGHT, FOLLOWS]] * 2
    assert list(sampling.role_arguments("target")[0]) == [BOUGHT, FOLLOWS]


def test_a_step_list_out_of_sorted_order_is_refused_naming_it():
    """A config listing its steps out of the patterns' sorted order was written for a model that
    numbered its steps otherwise than every sampler does: refused, not reordered."""
    with pytest.raises(
        BundleError,
        match=r"typed.num_neighbors: the steps .* are not in the "
        r"sorted order of their patterns",
    ) as info:
        typed_config({**TYPED, "num_neighbors": [[FOLLOWS, [2]], [BOUGHT, [3]]]})
    assert info.value.key == "typed"
    link = {
        "source_label": "User",
        "target_label": "User",
        "num_neighbors": {"source": [[BOUGHT, [1]]], "target": [[FOLLOWS, [1]], [BOUGHT, [1]]]},
        "properties": {"User": ["features"]},
    }
    with pytest.raises(BundleError, match=r"link.num_neighbors.target: the steps \[") as info:
        bundle.LinkSampling.from_mapping(link)
    assert info.value.key == "link"


def test_a_config_is_written_in_the_oldest_format_that_holds_it(sage_op_bundle):
    """Only typed and link configs hold step lists (format 2): a homogeneous config (an exported
    plain bundle's too) is written as format 1, which a release reading format 1 only reads; a
    typed or link config as format 2; a format the caller names is kept."""
    fields = {k: v for k, v in GOOD.items() if k not in ("format", "format_version")}
    plain = BundleConfig(**fields)
    assert plain.format_version == 1 and json.loads(plain.to_json())["format_version"] == 1
    assert BundleConfig(**fields, format_version=2).format_version == 2
    exported = bundle.read_bundle_config(sage_op_bundle.info.path)
    assert exported.typed is None and exported.link is None and exported.format_version == 1
    empty = {**fields, "fanouts": [], "feature_dim": 0, "properties": []}
    typed = BundleConfig(**empty, typed=TYPED)
    assert typed.format_version == bundle.STEP_LIST_FORMAT_VERSION == 2
    link = {
        "source_label": "User",
        "target_label": "User",
        "num_neighbors": {"source": UNSORTED, "target": UNSORTED},
        "properties": {"User": ["features"]},
    }
    linked = BundleConfig(**{**empty, "class_names": ["link", "no link"]}, link=link)
    assert json.loads(linked.to_json())["format_version"] == 2


def test_a_format_1_config_reads_its_sorted_object_and_writes_it_back_unchanged():
    """A bundle written before the step list (format 1) holds ``num_neighbors`` as an object,
    sorted by its JSON: it samples in that order and its text round-trips as it was."""
    old = {**TYPED, "num_neighbors": {BOUGHT: [3], FOLLOWS: [2]}}
    text = typed_config(old, format_version=1).to_json()
    assert json.loads(text)["typed"]["num_neighbors"] == {BOUGHT: [3], FOLLOWS: [2]}
    again = BundleConfig.from_json(text)
    assert again.format_version == 1 and again.to_json() == text
    nn, _, _ = bundle.inference_sampling(again).typed_arguments()
    assert list(nn) == [BOUGHT, FOLLOWS]


@pytest.mark.parametrize(
    "steps, message",
    [
        ("(:User)-[:FOLLOWS]->(:User)", r"typed.num_neighbors: expected a list of \[edge pattern"),
        ([[FOLLOWS, [2]], [BOUGHT]], r"typed.num_neighbors\[1\]: expected an \[edge pattern, "),
        ([[FOLLOWS, [2]], [3, [1]]], r"typed.num_neighbors\[1\]: expected an .* got \[3, \[1\]\]"),
        (
            [[FOLLOWS, [2]], [FOLLOWS, [1]]],
            rf"typed.num_neighbors\[1\]: edge pattern '{re.escape(FOLLOWS)}' is listed twice",
        ),
        (
            [[FOLLOWS, 2]],
            rf"typed: num_neighbors\[{re.escape(repr(FOLLOWS))}\]: expected a list of fanouts",
        ),
    ],
)
def test_a_bad_step_list_is_named(steps, message):
    with pytest.raises(BundleError, match=message) as info:
        typed_config({**TYPED, "num_neighbors": steps})
    assert info.value.key == "typed"


# ----------------------------------------------------------------------------------- sampling
def test_sampling_spec_from_a_mapping():
    spec = SamplingSpec.from_mapping(GOOD)  # a whole config dict works: other keys are ignored
    assert spec == BundleConfig.from_dict(GOOD).sampling
    fanouts, properties, options = spec.arguments()
    assert (fanouts, properties, options) == ([3, 2], ["features"], GOOD["options"])
    options["seed"] = 0
    assert spec.options["seed"] == 7  # arguments() hands out copies
    assert SamplingSpec.from_mapping({"fanouts": [2], "properties": ["x"]}).options == {}
    with pytest.raises(
        BundleError,
        match=r"sampling: missing keys \['properties'\]; expected "
        r"fanouts and properties",
    ) as info:
        SamplingSpec.from_mapping({"fanouts": [2]})
    assert info.value.key == "properties"
    with pytest.raises(BundleError, match=r"options: key 'user' looks like a connection"):
        SamplingSpec.from_mapping({"fanouts": [2], "properties": ["x"], "options": {"user": "u"}})


# --------------------------------------------------------------------------------- op library
def test_op_library_info_round_trip_and_validation(tmp_path):
    info = OpLibraryInfo(
        library="libmemgraph_tf_ops.so",
        ops=bundle.OP_NAMES,
        tf_version="2.21.0",
        tf_git_version="v2.21.0-0-g0",
        cxx11_abi_flag=["-D_GLIBCXX_USE_CXX11_ABI=1"],
        sha256="ab" * 32,
    )
    path = bundle.write_op_library_info(tmp_path, info)
    assert path == tmp_path / "assets.extra" / "memgraph_tf" / "op_library.json"
    assert bundle.read_op_library_info(tmp_path) == info
    assert json.loads(path.read_text())["ops"] == ["MemgraphTf>UnpackBlob"]
    data = json.loads(path.read_text())
    for bad in ("../../evil.so", "sub/lib.so", ".."):
        path.write_text(json.dumps({**data, "library": bad}))
        with pytest.raises(BundleError, match=r"library: expected a bare file name") as err:
            bundle.read_op_library_info(tmp_path)
        assert err.value.key == "library"
    path.write_text(json.dumps({k: v for k, v in data.items() if k != "tf_version"}))
    with pytest.raises(BundleError, match=r"tf_version: missing from the op library info"):
        bundle.read_op_library_info(tmp_path)
    assert bundle.read_op_library_info(tmp_path / "nowhere") is None


# ----------------------------------------------------------------------------------- versions
def _version(base: pathlib.Path, name: str, pbtxt: bool = False) -> pathlib.Path:
    d = base / name
    d.mkdir()
    (d / ("saved_model.pbtxt" if pbtxt else "saved_model.pb")).write_bytes(b"")
    return d


def test_discover_versions_reads_any_all_digit_name(tmp_path):
    _version(tmp_path, "00000123")
    _version(tmp_path, "7", pbtxt=True)
    _version(tmp_path, "0")
    for name in (
        "abc",
        "12a",
        "v3",
        "-4",
        "1.5",
        "\u00b2",
        "\u0663",
        ".5-tmp",
        "99999999999999999999",
    ):  # non-digit, unicode digits, beyond int64: ignored
        _version(tmp_path, name)
    (tmp_path / "9").mkdir()  # no saved_model: not a version (yet)
    (tmp_path / "11").write_bytes(b"a file, not a directory")
    found = bundle.discover_versions(tmp_path)
    assert found == {0: tmp_path / "0", 7: tmp_path / "7", 123: tmp_path / "00000123"}
    assert list(found) == [0, 7, 123]


def test_duplicate_versions_the_last_name_wins_with_a_warning(tmp_path, caplog):
    _version(tmp_path, "001")
    _version(tmp_path, "1")
    with caplog.at_level(logging.WARNING, logger="memgraph_tf.serving.bundle"):
        found = bundle.discover_versions(tmp_path)
    assert found == {1: tmp_path / "1"}  # as TF Serving: children sorted by name, later wins
    assert "duplicate version directories: version 1" in caplog.text


@pytest.mark.parametrize(
    "name, version",
    [
        ("1", 1),
        ("00000123", 123),
        ("0", 0),
        (str(2**63 - 1), 2**63 - 1),
        (str(2**63), None),
        ("12 ", None),
        ("+1", None),
        ("", None),
    ],
)
def test_parse_version_dir(name, version):
    assert bundle.parse_version_dir(name) == version


def test_server_serves_a_zero_padded_version_dir_as_its_value(toy_base, tmp_path, toy):
    import shutil

    import numpy as np

    from memgraph_tf.serving.model_server import ModelServer

    base = tmp_path / "toy"
    shutil.copytree(toy_base / "1", base / "00000123")
    shutil.copytree(toy_base / "2", base / "2")
    ms = ModelServer(base, "toy")
    assert sorted(ms.versions) == [2, 123]
    assert ms.versions[123].path == base / "00000123"
    status, body = rest_api.handle(ms, "GET", "/v1/models/toy", b"")
    assert status == 200 and [s["version"] for s in body["model_version_status"]] == ["123", "2"]
    x = [[1.0, 2.0, 3.0]]
    body = json.dumps({"instances": x}).encode()
    status, body = rest_api.handle(ms, "POST", "/v1/models/toy/versions/123:predict", body)
    assert status == 200, body
    np.testing.assert_allclose(
        [p["logits"] for p in body["predictions"]], toy.in_process(1, np.array(x)), atol=1e-5
    )


# ------------------------------------------------------------------------------------- export
@pytest.fixture(scope="module")
def sage_model(sage):
    return sage.make()


@pytest.mark.parametrize(
    "name, version, kwargs, key, message",
    [
        ("a/b", 1, {}, "name", r"name: expected letters, digits"),
        ("m", 0, {}, "version", r"version: expected an int >= 1"),
        (
            "m",
            1,
            {"scores": "raw"},
            "scores",
            r"scores: expected 'auto', 'probabilities' or 'logits'",
        ),
        (
            "m",
            1,
            {"sample_options": {"auth": ["u", "p"]}},
            "sample_options",
            r"sample_options: key 'auth' looks like a connection setting or credential",
        ),
        (
            "m",
            1,
            {"sample_options": {"seed": object()}},
            "sample_options",
            r"sample_options.seed: expected JSON values",
        ),
        (
            "m",
            1,
            {"fanouts": [3, 0]},
            "fanouts",
            r"fanouts: expected a non-empty list of ints >= 1",
        ),
        ("m", 1, {"labels": {"stable": "1"}}, "labels", r"labels: expected \{label: version int\}"),
    ],
)
def test_export_raises_typed_errors_naming_the_parameter(
    tmp_path, sage_model, name, version, kwargs, key, message
):
    from memgraph_tf.serving.export import export_bundle

    with pytest.raises(BundleError, match=message) as info:
        export_bundle(sage_model, tmp_path, name, version, use_op=False, **kwargs)
    assert info.value.key == key
    assert isinstance(info.value, ValueError) and isinstance(info.value, ServingError)
    assert not any(tmp_path.iterdir())  # nothing written for a bad argument


def test_exported_config_asset_is_the_typed_config(sage, sage_bundle):
    """The session's shared op-free export (``sage_bundle``: sampling options
    ``{"seed": 7, "low_degree": "pad"}``), read back; exporting its version again is refused
    before anything is written."""
    from memgraph_tf.serving.export import export_bundle

    info = sage_bundle.info
    base = info.path.parent.parent
    before = sorted(p.relative_to(base) for p in base.rglob("*"))
    cfg = bundle.read_bundle_config(info.path)
    assert cfg is not None and cfg.to_dict() == info.config
    assert sage_bundle.options == {"seed": 7, "low_degree": "pad"}
    assert cfg.sampling == SamplingSpec(sage.fanouts, ("features",), sage_bundle.options)
    assert cfg.model_name == "sage" and cfg.version == 1
    assert cfg.class_names == tuple(sage.classes)
    assert (info.path / "assets" / "class_labels.txt").read_text().splitlines() == sage.classes
    with pytest.raises(BundleExistsError, match=r"version 1 of model 'sage' exists") as err:
        export_bundle(sage_bundle.model, base, "sage", 1, use_op=False)
    assert isinstance(err.value, FileExistsError) and isinstance(err.value, MemgraphTfError)
    assert sorted(p.relative_to(base) for p in base.rglob("*")) == before
